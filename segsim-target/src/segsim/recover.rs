//! Recovering one crash image and judging it: the store must open, its
//! logical dump must be one the checker allows in each context the image
//! appeared in, and its audit must be clean — in that order, as in the
//! random mode's recovery, so a failure is named by the same check.
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
//! fresh disk, a fresh clock, a fresh store. The explorer calls it on its
//! worker threads, so the canary is switched on here, per recovery, on
//! whichever thread runs it.

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Command, LogicalEntry};

use super::record::{Contexts, RecoveryContext};
use super::VfsWrap;
use crate::canary::CanarySwitch;
use crate::config::{Config, Overrides};
use crate::drive::{transient_fault_called_corruption, Driver, Observer, SegsimLoop, Unobserved};
use crate::workload::{Op, PlannedOp};
use simulator::disk::{ArmedFault, DiskConfig, DiskImage, SimVfs};
use simulator::failure::{catch_panic, Check};
use simulator::seam::{FaultedRecovery, RecordedContext, RecoveryRecording};
use simulator::trace::Trace;
use testkit::transcript::Transcript;

/// What came back from one image, or the check it failed before the
/// checker could look (`open`, `dump`, `panic`) and why.
pub type Outcome = Result<Recovered, (Check, String)>;

/// A store's logical content, key by key (`Store::logical_dump`).
type Dump = BTreeMap<Vec<u8>, LogicalEntry>;

/// A recovered store's logical content, its audit, and how the probe went.
#[derive(Debug)]
pub struct Recovered {
    dump: Dump,
    violations: Vec<String>,
    /// `Err` says what went wrong after the recovery (see the module doc).
    probe: Result<(), String>,
}

/// The key the probe writes. No workload draws it: theirs are `k<n>`,
/// `h<n>` and `<table>:<n>`.
const PROBE_KEY: &[u8] = b"explore-probe";

/// The probe's operations take indices far past any workload's.
const PROBE_FIRST_INDEX: u64 = 1 << 40;

/// One crash image to recover: the seed's configuration, the target's
/// settings (`overrides`' canary planted, the engine seeing `wrap(disk)`),
/// the clock, and a fresh disk holding the image. A recovery is a pure
/// function of these.
pub(super) struct Recovery {
    config: Config,
    overrides: Overrides,
    wrap: VfsWrap,
    vfs: Arc<SimVfs>,
    now_ms: u64,
}

impl Recovery {
    pub(super) fn new(
        config: Config,
        disk_config: &DiskConfig,
        overrides: Overrides,
        wrap: VfsWrap,
        image: &DiskImage,
        now_ms: u64,
    ) -> Recovery {
        let vfs = Arc::new(SimVfs::from_image(disk_config.clone(), image, Trace::new(false)));
        Recovery { config, overrides, wrap, vfs, now_ms }
    }

    /// Open the store: its dump, its audit and the probe's verdict. Never
    /// panics: a panic in the engine is the `panic` check failing.
    pub(super) fn run(self) -> Outcome {
        self.run_observed(&mut Unobserved, None)
    }

    /// [`Recovery::run`] with the I/O at index
    /// `fault.0` failing once as `fault.1` says — `sim explore --faults` —
    /// or, with `None`, plainly, noting the I/O indices where a fault
    /// could fire.
    pub(super) fn run_with_fault(self, fault: Option<(u64, ArmedFault)>) -> FaultedRecovery<Outcome> {
        match fault {
            Some((io_index, kind)) => self.vfs.arm_fault_at(io_index, kind),
            None => self.vfs.note_faultable_ios(),
        }
        let recovered = self.run_observed(&mut Unobserved, None);
        let fired = self.vfs.armed_fault() == Some(true);
        let (faultable_ios, faultable_writes) = (self.vfs.faultable_ios(), self.vfs.faultable_writes());
        FaultedRecovery { recovered, fired, faultable_ios, faultable_writes }
    }

    /// [`Recovery::run`] on a disk that keeps a snapshot before every I/O,
    /// for `sim explore --depth 2`: the crash indices of the open are
    /// judged in the image's own contexts; from the moment the open
    /// returned, by the checker of the recovered store — its content is
    /// then all that may come back, plus the probe's write once
    /// acknowledged — as each probe step begins (the recording's own
    /// observer, [`Contexts`]).
    pub(super) fn record(self) -> RecoveryRecording<RecoveryContext> {
        self.vfs.start_recording();
        let mut contexts = Contexts::new("probe: ");
        let mut recovered_at_io = None;
        // The verdict is the plain recovery's (the same bytes, the same
        // clock): only the snapshots are wanted here.
        let _ = self.run_observed(&mut contexts, Some(&mut recovered_at_io));
        let disk = self.vfs.take_recording();
        // A recovery that never returned (a refused open, a panic) is all
        // recovery: every index is judged in the image's contexts.
        assert!(recovered_at_io.is_some() || contexts.contexts.is_empty(), "no probe without a recovery");
        let recovered_at_io = recovered_at_io.unwrap_or(disk.io_indices().end);
        assert!(contexts.contexts.iter().all(|c| c.first_io_index >= recovered_at_io), "contexts follow the recovery");
        RecoveryRecording { disk, recovered_at_io, contexts: contexts.contexts }
    }

    /// The recovery, the probe watched by `observer`. With
    /// `recovered_at_io`, also note there the first I/O index after the
    /// open returned, and tell the observer of the recovered store as a
    /// context of its own (from that index to the probe's first step).
    fn run_observed(&self, observer: &mut dyn ContextObserver, recovered_at_io: Option<&mut Option<u64>>) -> Outcome {
        let _canary = CanarySwitch::on(self.overrides.canary);
        let clock = Arc::new(ManualClock::new(self.now_ms));
        let vfs = self.vfs.clone();
        let mut run = Driver::new(&self.config, vfs.clone(), (self.wrap)(vfs), clock).into_loop(&self.overrides);
        let recovered = catch_panic(|| {
            // Every crash image is inspected read-only first: no byte may
            // change, and the recovery must then hold what it saw (unless
            // an armed fault changed what the recovery found).
            let seen = run.w.inspect_now(&mut run.h).map_err(|f| (f.check, f.detail))?;
            open(&mut run.w)?;
            let compared = self.compared(&run, seen)?;
            let opened_at_io = run.w.vfs().io_count();
            let dump = match compared {
                Some(seen) => seen,
                None => run
                    .w
                    .store()
                    .logical_dump()
                    .map_err(|e| (Check::Dump, format!("logical_dump failed after recovery: {e}")))?,
            };
            let violations = run.w.audit_fault_free().into_iter().map(|v| v.0).collect();
            run.w.checker_mut().rebase(dump.clone());
            if let Some(at) = recovered_at_io {
                *at = Some(opened_at_io);
                let context = RecoveryContext { now_ms: run.w.now_ms(), checker: run.w.checker().clone() };
                observer.note(opened_at_io, "the recovered store (dump, audit)", context);
            }
            run.w.observed_by(observer.as_observer());
            let probe = probe(&mut run);
            Ok(Recovered { dump, violations, probe })
        });
        recovered.unwrap_or_else(|message| Err((Check::Panic, message)))
    }
}

impl Recovery {
    /// What the read-only inspection `seen` found, held to what the
    /// opened store holds (unless an armed fault changed what the open
    /// found). Returned, as a dump, when that comparison ran and passed: it
    /// wrote the store down at the same clock the dump would and found it
    /// equal byte for byte, so `seen` reads back into the recovered dump.
    /// `None`: nothing compared, and the caller dumps the store itself.
    fn compared(&self, run: &SegsimLoop<'_>, seen: Option<Transcript>) -> Result<Option<Dump>, (Check, String)> {
        let Some(seen) = seen.filter(|_| run.w.vfs().armed_fault() != Some(true)) else { return Ok(None) };
        run.w.compare_inspection(&run.h, &seen, false).map_err(|f| (f.check, f.detail))?;
        // Point-in-time recovery may cut what the inspection saw: there
        // the comparison vouches for nothing.
        if self.config.point_in_time {
            return Ok(None);
        }
        let seen = seen.to_dump();
        debug_assert_eq!(run.w.store().logical_dump().ok().as_ref(), Some(&seen), "compared byte for byte");
        Ok(Some(seen))
    }
}

/// Open the crash image. With a fault armed (`sim explore --faults`) that
/// failed this open, as a transient I/O error may, the error must not
/// call itself corruption, and a second open, the fault spent, must
/// succeed on whatever the first one left behind.
fn open(driver: &mut Driver<'_>) -> Result<(), (Check, String)> {
    let first = match driver.open() {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    if driver.vfs().armed_fault() != Some(true) {
        return Err((Check::Open, format!("the store refused to open after a crash: {first}")));
    }
    if matches!(first, engine::Error::Corrupt { .. }) {
        return Err((Check::Open, transient_fault_called_corruption(&first)));
    }
    driver.open().map_err(|e| {
        (Check::Open, format!("after an open failed on an injected I/O error ({first}), the next open failed: {e}"))
    })
}

/// An [`Observer`] of the probe that can also be told of a context
/// directly (the recovered store, before the probe's first step).
trait ContextObserver {
    fn note(&mut self, first_io_index: u64, what: &str, context: RecoveryContext);
    fn as_observer(&mut self) -> &mut dyn Observer;
}

impl ContextObserver for Unobserved {
    fn note(&mut self, _: u64, _: &str, _: RecoveryContext) {}
    fn as_observer(&mut self) -> &mut dyn Observer {
        self
    }
}

impl ContextObserver for Contexts {
    fn note(&mut self, first_io_index: u64, what: &str, context: RecoveryContext) {
        self.contexts.push(RecordedContext { first_io_index, what: format!("{}{what}", self.prefix), context });
    }
    fn as_observer(&mut self) -> &mut dyn Observer {
        self
    }
}

/// The probe (see the module doc), through the driver whose checker holds
/// the recovered content: one write, an eviction, a clean restart (content
/// and layout must come back), a power loss (everything was durable).
fn probe(run: &mut SegsimLoop<'_>) -> Result<(), String> {
    let write = Command::Set { key: PROBE_KEY.to_vec(), value: b"1".to_vec() };
    let steps = [Op::Cmd(write), Op::Evict, Op::Restart, Op::Crash];
    for (offset, op) in steps.into_iter().enumerate() {
        let planned = PlannedOp { index: PROBE_FIRST_INDEX + offset as u64, op, crash: None };
        // A store an injected fault poisoned is reopened as the random mode
        // reopens it (after a process restart or a power loss, by the
        // seed's coin), the recovery checked; a poisoning with no fault
        // injected is a failure (check `poisoned`).
        run.step(&planned).map_err(|failure| {
            format!(
                "after one write, an eviction, a clean restart and a power loss: `{planned}`: check '{}': {}",
                failure.check, failure.detail
            )
        })?;
    }
    Ok(())
}

/// Whether a recovery that met an injected fault (`faulted`) brought back
/// the content the same image's plain recovery (`plain`) did, when both
/// opened: the fault was transient, so it may have failed an open, but
/// what a recovery finds on the disk cannot have changed.
pub(super) fn same_recovery(faulted: &Outcome, plain: &Outcome) -> Result<(), (Check, String)> {
    let (Ok(faulted), Ok(plain)) = (faulted, plain) else { return Ok(()) };
    if faulted.dump == plain.dump {
        return Ok(());
    }
    Err((
        Check::Durability,
        format!(
            "a transient I/O error in the recovery changed what it brought back (against the same image recovered \
             with no fault):\n{}",
            crate::checker::diff(&plain.dump, &faulted.dump)
        ),
    ))
}

/// The verdict on `recovered` in `context`: the random mode's rule — the
/// very code `Checker::recovered` runs before it resets the model — then
/// the audit, then the probe.
pub(super) fn judge(recovered: &Outcome, context: &RecoveryContext) -> Result<(), (Check, String)> {
    let recovered = recovered.as_ref().map_err(|(check, detail)| (*check, detail.clone()))?;
    if let Err(mismatch) = context.checker.allows(&recovered.dump, context.now_ms) {
        return Err((Check::Durability, mismatch.detail));
    }
    if !recovered.violations.is_empty() {
        return Err((Check::Audit, format!("after recovery: {:?}", recovered.violations)));
    }
    recovered.probe.clone().map_err(|detail| (Check::Probe, detail))
}

#[cfg(test)]
mod tests {
    use engine::store::LogicalValue;

    use super::*;

    fn recovered(keys: &[&str]) -> Outcome {
        let entry = || LogicalEntry { value: LogicalValue::Str(b"v".to_vec()), expire_at_ms: None };
        let dump = keys.iter().map(|key| (key.as_bytes().to_vec(), entry())).collect();
        Ok(Recovered { dump, violations: Vec::new(), probe: Ok(()) })
    }

    /// A faulted recovery that opened must bring back the plain one's
    /// content exactly, even a content the crash's contexts would allow;
    /// one that did not open is left to the judgement of its contexts.
    #[test]
    fn a_fault_may_fail_an_open_but_never_change_what_it_recovers() {
        assert_eq!(same_recovery(&recovered(&["a", "b"]), &recovered(&["a", "b"])), Ok(()));
        let (check, detail) = same_recovery(&recovered(&["a"]), &recovered(&["a", "b"])).unwrap_err();
        assert_eq!(check, Check::Durability);
        assert!(detail.contains("transient I/O error") && detail.contains("\"b\""), "{detail}");
        let refused: Outcome = Err((Check::Open, "refused".to_string()));
        assert_eq!(same_recovery(&refused, &recovered(&["a"])), Ok(()));
    }
}
