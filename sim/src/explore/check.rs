//! Recovering each distinct crash image and judging it: the store must
//! open, its logical dump must be one the checker allows in each context
//! the image appeared in, and its audit must be clean — in that order, as
//! in the random mode's recovery, so a failure is named by the same check.
//!
//! Then the probe: the recovered store must also go on working. The
//! random mode drives a recovered store on, and some bugs only show then —
//! an append after a torn tail that was never cut, a sweep that dropped a
//! segment the log still names. Exploration checks one crash per state, so
//! it asks for the next steps explicitly, through the same [`Driver`] the
//! random mode runs, its checker based on the recovered content: one more
//! write, an eviction, a clean restart (the recovered content plus that
//! write must come back, with the same rows cold in as many segments, and
//! a clean audit) and a strict power loss (a clean close left nothing
//! unsynced, so again exactly that).
//!
//! A recovery is a pure function of the image's bytes and the clock: a
//! fresh disk, a fresh clock, a fresh store. Images are spread over
//! threads and the failures merged back in crash-index order.

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Command, LogicalEntry};

use super::parallel::map_in_order;
use super::plan::{Plan, Recovery};
use super::record::Recording;
use super::report::ExploreFailure;
use super::{repro_command, ExploreOptions, VfsWrap};
use crate::canary::{Canary, CanarySwitch};
use crate::config::{Config, Overrides};
use crate::disk::{DiskConfig, DiskImage, SimVfs};
use crate::drive::{Driver, Unobserved};
use crate::failure::{catch_panic, Check};
use crate::trace::Trace;
use crate::workload::{Op, PlannedOp};

/// What came back from one image, or the check it failed before the
/// checker could look (`open`, `dump`, `panic`) and why.
type Outcome = Result<Recovered, (Check, String)>;

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

/// The probe's operations take indices far past any workload's.
const PROBE_FIRST_INDEX: u64 = 1 << 40;

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
    let vfs = Arc::new(SimVfs::from_image(disk_config.clone(), image, Trace::new(false)));
    let clock = Arc::new(ManualClock::new(now_ms));
    let overrides = Overrides { canary, ..Overrides::default() };
    let mut driver = Driver::new(config, overrides, vfs.clone(), wrap(vfs), clock);
    let recovered = catch_panic(|| {
        driver.open().map_err(|e| (Check::Open, format!("the store refused to open after a crash: {e}")))?;
        let store = driver.store();
        let dump =
            store.logical_dump().map_err(|e| (Check::Dump, format!("logical_dump failed after recovery: {e}")))?;
        let violations = store.audit().into_iter().map(|v| v.0).collect();
        driver.checker_mut().rebase(dump.clone());
        let probe = probe(&mut driver);
        Ok(Recovered { dump, violations, probe })
    });
    recovered.unwrap_or_else(|message| Err((Check::Panic, message)))
}

/// The probe (see the module doc), through the driver whose checker holds
/// the recovered content: one write, an eviction, a clean restart (content
/// and layout must come back), a power loss (everything was durable).
fn probe(driver: &mut Driver<'_>) -> Result<(), String> {
    let write = Command::Set { key: PROBE_KEY.to_vec(), value: b"1".to_vec() };
    let steps = [Op::Cmd(write), Op::Evict, Op::Restart, Op::Crash];
    for (offset, op) in steps.into_iter().enumerate() {
        let planned = PlannedOp { index: PROBE_FIRST_INDEX + offset as u64, op, crash: None };
        let stepped = driver.step(&planned, &mut Unobserved).map_err(|failure| {
            format!(
                "after one write, an eviction, a clean restart and a power loss: `{planned}`: check '{}': {}",
                failure.check, failure.detail
            )
        })?;
        if stepped.poisoned {
            return Err(format!("`{planned}` poisoned the recovered store on a fault-free disk"));
        }
    }
    Ok(())
}

/// What every recovery of one exploration is checked against: the
/// recording's contexts, the seed's configuration, the disk, the options
/// and the wrapper the engine sees the disk through.
pub(super) struct Checking<'a> {
    pub recording: &'a Recording,
    pub config: &'a Config,
    pub disk_config: &'a DiskConfig,
    pub options: &'a ExploreOptions,
    pub wrap: &'a VfsWrap,
}

/// Recover `recovery`'s image and check it in each of its contexts; the
/// failures, each at its first occurrence.
fn check_one(recovery: &Recovery, with: &Checking<'_>) -> Vec<ExploreFailure> {
    let Checking { recording, config, disk_config, options, wrap } = *with;
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
                    Err(mismatch) => Err((Check::Durability, mismatch.detail)),
                    Ok(_) if !recovered.violations.is_empty() => {
                        Err((Check::Audit, format!("after recovery: {:?}", recovered.violations)))
                    }
                    Ok(_) => recovered.probe.clone().map_err(|detail| (Check::Probe, detail)),
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
            check,
            detail,
            repro: repro_command(config.seed, config.ops, options, Some(at.io_index), Some(at.state)),
        });
    }
    failures
}

/// Every recovery of `plan`, on `options.jobs` threads; the failures in
/// crash-index order, then state order.
pub(super) fn check_all(plan: &Plan, with: &Checking<'_>) -> Vec<ExploreFailure> {
    let progress = with.options.progress.then_some("recovering distinct crash states");
    let per_recovery =
        map_in_order(&plan.recoveries, with.options.jobs, progress, |recovery| check_one(recovery, with));
    let mut failures: Vec<ExploreFailure> = per_recovery.into_iter().flatten().collect();
    failures.sort_by_key(|failure| (failure.io_index, failure.state));
    failures
}
