//! The recording run: the seed's workload once, fault-free, on a disk that
//! snapshots itself before every I/O, with the checker's state noted at
//! every operation so that each crash index knows what a recovery there
//! is allowed to return.
//!
//! The run is the random mode's [`Driver`], so the durability bounds are
//! the ones the random mode enforces, not a second opinion; this file only
//! watches it (an [`Observer`]). A crash during an operation is judged by
//! the checker as the operation began, with its write (if it is one) in
//! flight: nothing is acknowledged before the reply.

use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::Command;

use super::report::ExploreFailure;
use super::VfsWrap;
use crate::canary::{Canary, CanarySwitch};
use crate::checker::Checker;
use crate::config::{Config, Overrides};
use crate::disk::{DiskConfig, DiskRecording, SimVfs};
use crate::drive::{Driver, Moment, Observer};
use crate::failure::{catch_panic, Check, Failure};
use crate::trace::Trace;
use crate::workload::{Op, PlannedOp, T0_MS};

/// What a recovery at a crash index is held to: the checker as it stood,
/// with the write in flight (if any) marked uncertain, and the clock.
#[derive(Clone, Debug)]
pub(super) struct Context {
    /// The first crash index it applies to; it applies until the next
    /// context's.
    pub first_io_index: u64,
    /// The workload operation under way, as its line prints.
    pub what: String,
    pub now_ms: u64,
    pub checker: Checker,
}

/// The recorded run.
pub(super) struct Recording {
    pub disk: DiskRecording,
    /// In order of `first_io_index` (non-decreasing); the first starts at 0.
    pub contexts: Vec<Context>,
    /// The recording itself failed a check: nothing is explored.
    pub failure: Option<ExploreFailure>,
}

impl Recording {
    /// The context of crash index `io_index`: the last one begun at or
    /// before it. Operations that do no I/O begin a context no index
    /// falls in, which is right: power cannot fail between two I/Os twice.
    pub fn context_at(&self, io_index: u64) -> usize {
        let after = self.contexts.partition_point(|context| context.first_io_index <= io_index);
        assert!(after > 0, "the first context starts at the first I/O");
        after - 1
    }
}

/// Run `workload` for `config`'s seed on a recording disk (see the module doc).
pub(super) fn record(
    config: &Config,
    disk_config: &DiskConfig,
    workload: &[PlannedOp],
    canary: Option<Canary>,
    wrap: &VfsWrap,
) -> Recording {
    let _canary = CanarySwitch::on(canary);
    let vfs = Arc::new(SimVfs::new(disk_config.clone(), Trace::new(false)));
    vfs.start_recording();
    let clock = Arc::new(ManualClock::new(T0_MS));
    let overrides = Overrides { canary, ..Overrides::default() };
    let mut driver = Driver::new(config, overrides, vfs.clone(), wrap(vfs.clone()), clock);
    let mut contexts = Contexts(Vec::new());
    let failure = match catch_panic(|| run(&mut driver, &mut contexts, workload)) {
        Ok(result) => result.err(),
        Err(message) => Some(driver.fail(Check::Panic, message)),
    };
    drop(driver);
    let contexts = contexts.0;
    let what = contexts.last().map_or("the initial open".to_string(), |c| c.what.clone());
    let failure = failure.map(|failure| ExploreFailure {
        io_index: None,
        state: None,
        op: what,
        description: "the recording run itself, before any explored crash".to_string(),
        check: failure.check,
        detail: failure.detail,
        repro: String::new(),
    });
    Recording { disk: vfs.take_recording(), contexts, failure }
}

/// The recording's observer: from each operation's first I/O on, a crash
/// is judged by the checker as it stood then, with the write in flight
/// (if any) uncertain.
struct Contexts(Vec<Context>);

impl Observer for Contexts {
    fn op_begins(&mut self, driver: &Driver<'_>, planned: &PlannedOp, moment: Moment, in_flight: Option<&Command>) {
        let now_ms = driver.now_ms();
        let mut checker = driver.checker().clone();
        if let Some(command) = in_flight {
            checker.uncertain(command, now_ms);
        }
        let what = match moment {
            Moment::Begins => planned.to_string(),
            Moment::Reopening => format!("{planned} (reopening)"),
        };
        self.0.push(Context { first_io_index: driver.vfs().io_count(), what, now_ms, checker });
    }
}

fn run(driver: &mut Driver<'_>, contexts: &mut Contexts, workload: &[PlannedOp]) -> Result<(), Failure> {
    contexts.0.push(Context {
        first_io_index: 0,
        what: "the initial open".to_string(),
        now_ms: driver.now_ms(),
        checker: driver.checker().clone(),
    });
    driver.open_empty()?;
    // The end, as in the random mode: a clean restart must bring back
    // exactly the model. Its I/Os are crash indices like any other.
    let end = PlannedOp { index: workload.last().map_or(0, |p| p.index + 1), op: Op::Restart, crash: None };
    for planned in workload.iter().chain([&end]) {
        let stepped = driver.step(planned, contexts)?;
        if stepped.poisoned {
            let why = driver.store().poisoned().unwrap_or_default().to_string();
            return Err(driver.fail(Check::Poisoned, format!("the store poisoned itself on a fault-free disk: {why}")));
        }
    }
    driver.audit()
}
