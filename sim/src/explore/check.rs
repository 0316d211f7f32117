//! Recovering each distinct crash image and judging it: the store must
//! open, its logical dump must be one the checker allows in each context
//! the image appeared in, and its audit must be clean — in that order, as
//! in the random mode's recovery, so a failure is named by the same check.
//!
//! Then the probe: the recovered store must also go on working. The
//! random mode drives a recovered store on, and some bugs only show then —
//! an append after a torn tail that was never cut, a sweep that dropped a
//! segment the log still names. Exploration checks one crash per state, so
//! it asks for the next step explicitly: one more write, an eviction, a
//! clean close, a strict power loss (a clean close leaves nothing
//! unsynced) and a reopen must give back the recovered content plus that
//! write, with the same rows cold in as many segments, and a clean audit.
//!
//! A recovery is a pure function of the image's bytes and the clock: a
//! fresh disk, a fresh clock, a fresh store. Images are spread over
//! threads and the failures merged back in crash-index order.

use std::any::Any;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Command, LogicalEntry, Options, Store};
use testkit::model::Model;

use super::parallel::map_in_order;
use super::plan::{Plan, Recovery};
use super::record::Recording;
use super::report::ExploreFailure;
use super::{repro_command, ExploreOptions, VfsWrap};
use crate::canary::Canary;
use crate::canary::CanarySwitch;
use crate::checker::diff;
use crate::config::Config;
use crate::disk::{DiskConfig, DiskImage, SimVfs};
use crate::run::DB_DIR;
use crate::trace::Trace;

/// What came back from one image, or the check it failed before the
/// checker could look (`open`, `dump`, `panic`) and why.
type Outcome = Result<Recovered, (&'static str, String)>;

/// A recovered store's logical content, its audit, and how the probe went.
struct Recovered {
    dump: BTreeMap<Vec<u8>, LogicalEntry>,
    violations: Vec<String>,
    /// `Err` says what went wrong after the recovery (see the module doc).
    probe: Result<(), String>,
}

/// The key the probe writes. No workload draws it: theirs are `k<n>`,
/// `h<n>` and `<table>:<n>`.
const PROBE_KEY: &[u8] = b"explore-probe";

/// A panic's message, for a report.
pub(super) fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic with no message".to_string())
}

/// Open the store on `image` at `now_ms`: its dump, its audit and the
/// probe's verdict. Never panics: a panic in the engine is the `panic`
/// check failing.
fn recover(
    image: &DiskImage,
    disk_config: &DiskConfig,
    config: &Config,
    now_ms: u64,
    canary: Option<Canary>,
    wrap: &VfsWrap,
) -> Outcome {
    let _canary = CanarySwitch::on(canary);
    let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let vfs = Arc::new(SimVfs::from_image(disk_config.clone(), image, Trace::new(false)));
        let clock = Arc::new(ManualClock::new(now_ms));
        let open = || Store::open(wrap(vfs.clone()), clock.clone(), Path::new(DB_DIR), Options { fsync: config.fsync });
        let (store, _) = open().map_err(|e| ("open", format!("the store refused to open after a crash: {e}")))?;
        let dump = store.logical_dump().map_err(|e| ("dump", format!("logical_dump failed after recovery: {e}")))?;
        let violations = store.audit().into_iter().map(|v| v.0).collect();
        let probe = probe(store, &dump, now_ms, || {
            vfs.power_loss(0);
            open()
        });
        Ok(Recovered { dump, violations, probe })
    }));
    attempt.unwrap_or_else(|panic| Err(("panic", panic_message(panic.as_ref()))))
}

/// The probe (see the module doc) on a just recovered `store` whose
/// content is `dump`; `reopen` cuts the power and opens the store again.
fn probe(
    mut store: Store,
    dump: &BTreeMap<Vec<u8>, LogicalEntry>,
    now_ms: u64,
    reopen: impl FnOnce() -> engine::Result<(Store, engine::store::RecoveryReport)>,
) -> Result<(), String> {
    let write = Command::Set { key: PROBE_KEY.to_vec(), value: b"1".to_vec() };
    store.execute(&write).map_err(|e| format!("the recovered store refused a write: {e}"))?;
    store.evict().map_err(|e| format!("the recovered store failed to evict: {e}"))?;
    let layout_before = (store.cold_count(), store.segment_count());
    store.close().map_err(|e| format!("the recovered store failed to close: {e}"))?;
    let (store, _) =
        reopen().map_err(|e| format!("after one write, a clean close and power loss: open refused: {e}"))?;
    let layout_after = (store.cold_count(), store.segment_count());
    if layout_after != layout_before {
        return Err(format!(
            "a clean close and reopen changed where rows live: (cold rows, segments) {layout_before:?} before, \
             {layout_after:?} after"
        ));
    }
    let again = store.logical_dump().map_err(|e| format!("logical_dump failed on reopening: {e}"))?;
    let mut expected = Model::from_dump(dump.clone());
    expected.execute(&write, now_ms).map_err(|e| format!("the model refused the probe write: {e}"))?;
    if !expected.same_as(&again, now_ms) {
        return Err(format!(
            "after one write, a clean close and power loss, the store does not hold the recovered content plus \
             that write:\n{}",
            diff(&expected.dump(now_ms), &again)
        ));
    }
    let violations = store.audit();
    if !violations.is_empty() {
        return Err(format!("after one write, a clean close and power loss: audit: {violations:?}"));
    }
    Ok(())
}

/// Recover `recovery`'s image and check it in each of its contexts; the
/// failures, each at its first occurrence.
fn check_one(
    recovery: &Recovery,
    recording: &Recording,
    config: &Config,
    disk_config: &DiskConfig,
    options: &ExploreOptions,
    wrap: &VfsWrap,
) -> Vec<ExploreFailure> {
    let image = recovery.snapshot.image(&recovery.crash_state);
    let recovered = recover(&image, disk_config, config, recovery.now_ms, options.canary, wrap);
    let mut failures = Vec::new();
    for at in &recovery.checks {
        let context = &recording.contexts[at.context];
        let verdict = match &recovered {
            Err((check, detail)) => Err((*check, detail.clone())),
            Ok(recovered) => {
                // The same rule, the same code, as the random mode.
                match context.checker.allows(&recovered.dump, context.now_ms) {
                    Err(mismatch) => Err(("durability", mismatch.detail)),
                    Ok(_) if !recovered.violations.is_empty() => {
                        Err(("audit", format!("after recovery: {:?}", recovered.violations)))
                    }
                    Ok(_) => recovered.probe.clone().map_err(|detail| ("probe", detail)),
                }
            }
        };
        let Err((check, detail)) = verdict else { continue };
        let snapshot = recording.disk.before_io(at.io_index).expect("a recorded index");
        let state = &snapshot.crash_states(options.max_dir_subsets)[at.state];
        failures.push(ExploreFailure {
            io_index: Some(at.io_index),
            state: Some(at.state),
            op: context.what.clone(),
            description: snapshot.describe(state),
            check: check.to_string(),
            detail,
            repro: repro_command(config.seed, config.ops, options, Some(at.io_index), Some(at.state)),
        });
    }
    failures
}

/// Every recovery of `plan`, on `options.jobs` threads; the failures in
/// crash-index order, then state order.
pub(super) fn check_all(
    plan: &Plan,
    recording: &Recording,
    config: &Config,
    disk_config: &DiskConfig,
    options: &ExploreOptions,
    wrap: &VfsWrap,
) -> Vec<ExploreFailure> {
    let progress = options.progress.then_some("recovering distinct crash states");
    let per_recovery = map_in_order(&plan.recoveries, options.jobs, progress, |recovery| {
        check_one(recovery, recording, config, disk_config, options, wrap)
    });
    let mut failures: Vec<ExploreFailure> = per_recovery.into_iter().flatten().collect();
    failures.sort_by_key(|failure| (failure.io_index, failure.state));
    failures
}
