//! The recording run: the seed's workload once, fault-free, on a disk that
//! snapshots itself before every I/O, with the checker's state noted at
//! every operation so that each crash index knows what a recovery there
//! is allowed to return.
//!
//! The run is the random mode's [`Driver`] on the one run loop, so the
//! durability bounds are the ones the random mode enforces, not a second
//! opinion; this file only watches it (an [`Observer`]). A crash during an operation is judged by
//! the checker as the operation began, with its write (if it is one) in
//! flight: nothing is acknowledged before the reply. A `CRASH` in the
//! workload is a strict power loss, a `RESTART` a clean close and reopen,
//! a `KILL` a process crash and reopen, so later crash indices fall inside
//! recoveries too. The store is audited after every operation (the random
//! mode does it every few): a broken invariant, or a segment seq used
//! twice (the driver's run-wide ledger learns each segment at an audit),
//! fails the recording itself.

use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::Command;

use super::VfsWrap;
use crate::canary::CanarySwitch;
use crate::checker::Checker;
use crate::config::{Config, Overrides};
use crate::drive::{Driver, Moment, Observer, SegsimLoop};
use crate::workload::{Op, PlannedOp, T0_MS};
use simulator::disk::{ArmedFault, DiskConfig, SimVfs};
use simulator::failure::{catch_panic, Check, Failure};
use simulator::harness::Settings;
use simulator::seam::{FaultedRun, RecordedContext, RecordedOperation, Recording};
use simulator::trace::Trace;

/// What a recovery at a crash index is held to: the checker as it stood,
/// with the write in flight (if any) marked uncertain, and the clock.
#[derive(Clone, Debug)]
pub struct RecoveryContext {
    /// The clock when the operation began: the recovery opens at it.
    pub now_ms: u64,
    /// The checker, its model and durability bounds.
    pub checker: Checker,
}

/// Run `workload` for `config`'s seed on a recording disk (see the module
/// doc), with `overrides`' canary planted and the engine seeing
/// `wrap(disk)`.
pub(super) fn record(
    config: &Config,
    disk_config: &DiskConfig,
    overrides: Overrides,
    wrap: VfsWrap,
    workload: &[PlannedOp],
) -> Recording<RecoveryContext> {
    let _canary = CanarySwitch::on(overrides.canary);
    let vfs = Arc::new(SimVfs::new(disk_config.clone(), Trace::for_recording()));
    vfs.start_recording();
    vfs.note_workload_faultable_ios();
    let clock = Arc::new(ManualClock::new(T0_MS));
    let mut contexts = Contexts::new("");
    let failure = {
        let mut driver = Driver::new(config, vfs.clone(), wrap(vfs.clone()), clock).with_settings(SETTINGS);
        let context = RecoveryContext { now_ms: driver.now_ms(), checker: driver.checker().clone() };
        contexts.contexts.push(RecordedContext { first_io_index: 0, what: "the initial open".to_string(), context });
        driver.observed_by(&mut contexts);
        run(driver.into_loop(&overrides), workload)
    };
    let failure = failure.map(|failure| (failure.check, failure.detail));
    let (faultable_ios, faultable_writes) = (vfs.faultable_ios(), vfs.faultable_writes());
    let trace = Some(vfs.take_trace()).filter(Trace::keeps_all);
    let disk = vfs.take_recording();
    let operations = contexts.operations_until(disk.io_indices().end - 1);
    Recording { disk, contexts: contexts.contexts, failure, faultable_ios, faultable_writes, trace, operations }
}

/// The recording's run without its snapshots, with the I/O at `fault.0`
/// failing as `fault.1` says (`sim explore --faults`): the run's failure,
/// and whether the fault fired.
pub(super) fn run_with_fault(
    config: &Config,
    disk_config: &DiskConfig,
    overrides: Overrides,
    wrap: VfsWrap,
    workload: &[PlannedOp],
    fault: (u64, ArmedFault),
) -> FaultedRun {
    let _canary = CanarySwitch::on(overrides.canary);
    let vfs = Arc::new(SimVfs::new(disk_config.clone(), Trace::new(false)));
    vfs.arm_workload_fault_at(fault.0, fault.1);
    let clock = Arc::new(ManualClock::new(T0_MS));
    let driver = Driver::new(config, vfs.clone(), wrap(vfs.clone()), clock).with_settings(SETTINGS);
    let failure = run(driver.into_loop(&overrides), workload);
    FaultedRun {
        failure: failure.map(|failure| (failure.check, failure.detail)),
        fired: vfs.armed_fault() == Some(true),
    }
}

/// The recording's observer: from each operation's first I/O on, a crash
/// is judged by the checker as it stood then, with the write in flight
/// (if any) uncertain. Also the observer of a recovery's probe recorded
/// for depth 2 (`recover.rs`), whose operations it names after `prefix`.
pub(super) struct Contexts {
    pub prefix: &'static str,
    pub contexts: Vec<RecordedContext<RecoveryContext>>,
    /// Every admin operation (`EVICT`, `REWRITE`, `SYNC`) that ended, with
    /// its crash indices (what `sim explore` says its workload reached) ...
    operations: Vec<RecordedOperation>,
    /// ... and the one under way, from its first crash index.
    admin: Option<(&'static str, u64)>,
}

/// The operations segsim's explore report accounts for
/// (`SegsimTarget::explore_declared`): the store's admin calls, by the
/// words their operation lines print.
pub(super) const ADMIN_OPS: [&str; 3] = ["EVICT", "REWRITE", "SYNC"];

impl Contexts {
    /// No context yet; operations named after `prefix`.
    pub fn new(prefix: &'static str) -> Self {
        Contexts { prefix, contexts: Vec::new(), operations: Vec::new(), admin: None }
    }

    /// The admin operation under way, if any, ended before I/O `io_index`.
    fn end_admin(&mut self, io_index: u64) {
        if let Some((name, first_io_index)) = self.admin.take() {
            self.operations.push(RecordedOperation { name: name.to_string(), io_indices: first_io_index..io_index });
        }
    }

    /// Every admin operation run, the last ending before I/O `io_index`.
    pub fn operations_until(&mut self, io_index: u64) -> Vec<RecordedOperation> {
        self.end_admin(io_index);
        std::mem::take(&mut self.operations)
    }
}

impl Observer for Contexts {
    fn op_begins(&mut self, driver: &Driver<'_>, planned: &PlannedOp, moment: Moment, in_flight: Option<&Command>) {
        let now_ms = driver.now_ms();
        let mut checker = driver.checker().clone();
        if let Some(command) = in_flight {
            checker.uncertain(command, now_ms);
        }
        let prefix = self.prefix;
        let what = match moment {
            Moment::Begins => format!("{prefix}{planned}"),
            Moment::Reopening => format!("{prefix}{planned} (reopening)"),
        };
        let context = RecoveryContext { now_ms, checker };
        let first_io_index = driver.vfs().io_count();
        self.contexts.push(RecordedContext { first_io_index, what, context });
        self.end_admin(first_io_index);
        let admin = match (&planned.op, moment) {
            (Op::Evict, Moment::Begins) => Some(ADMIN_OPS[0]),
            (Op::Rewrite, Moment::Begins) => Some(ADMIN_OPS[1]),
            (Op::Sync, Moment::Begins) => Some(ADMIN_OPS[2]),
            _ => None,
        };
        self.admin = admin.map(|name| (name, first_io_index));
    }
}

/// The recording's loop settings: no crash in the creation (the initial
/// open runs with faults off, as in the random mode, so a workload fault
/// never fires in it), an audit after every operation. The random mode
/// audits every few operations; one run can afford an audit after each. It
/// also registers every segment in the run-wide seq ledger as soon as it
/// exists, so a seq a rewrite retired and the next eviction hands out again
/// is seen (check `seq-reuse`). Its one I/O, a directory listing, changes
/// nothing.
const SETTINGS: Settings = Settings { audit_every: 1, p_crash_in_recovery: 0.0, crash_in_creation: None };

/// The run on the one loop: the initial open, `workload`, a clean restart
/// that must bring back exactly the model (its I/Os crash indices like any
/// other). With one I/O armed to fail (`sim explore --faults`), a store the
/// fault poisoned is reopened as the random mode reopens it, the recovery
/// checked, and the workload goes on; on a fault-free disk a poisoning is a
/// failure (check `poisoned`).
fn run(mut run: SegsimLoop<'_>, workload: &[PlannedOp]) -> Option<Failure> {
    match catch_panic(|| run.run(workload)) {
        Ok(result) => result.err(),
        Err(message) => Some(run.h.fail(Check::Panic, message)),
    }
}
