//! The recording run: the seed's workload once, fault-free, on a disk that
//! snapshots itself before every I/O, with the checker's state noted at
//! every operation so that each crash index knows what a recovery there
//! is allowed to return.
//!
//! The bookkeeping mirrors the random mode's driver (`run.rs`) call for
//! call — `acknowledged` after a write's reply, `call_succeeded` after
//! every successful store call, `all_durable` after a sync, a rewrite or a
//! clean close — because the durability bounds must be the ones the random
//! mode enforces, not a second opinion. A crash during an operation is
//! judged by the checker as the operation began, with its write (if it is
//! one) in flight: nothing is acknowledged before the reply.

use std::path::Path;
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::store::{Command, Options, Reply, Store};
use engine::Error;

use super::report::ExploreFailure;
use super::VfsWrap;
use crate::canary::Canary;
use crate::canary::CanarySwitch;
use crate::checker::{diff, Checker};
use crate::config::Config;
use crate::disk::{DiskConfig, DiskRecording, SimVfs};
use crate::run::DB_DIR;
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
    let mut driver = Driver {
        config,
        vfs: vfs.clone(),
        engine_vfs: wrap(vfs.clone()),
        clock: Arc::new(ManualClock::new(T0_MS)),
        store: None,
        checker: Checker::new(config.fsync),
        contexts: Vec::new(),
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| driver.run(workload)));
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err((check, detail))) => Some((check, detail)),
        Err(panic) => Some(("panic", super::check::panic_message(panic.as_ref()))),
    };
    let what = driver.contexts.last().map_or("the initial open".to_string(), |c| c.what.clone());
    let contexts = std::mem::take(&mut driver.contexts);
    drop(driver);
    let failure = failure.map(|(check, detail)| ExploreFailure {
        io_index: None,
        state: None,
        op: what,
        description: "the recording run itself, before any explored crash".to_string(),
        check: check.to_string(),
        detail,
        repro: String::new(),
    });
    Recording { disk: vfs.take_recording(), contexts, failure }
}

type Step = Result<(), (&'static str, String)>;

struct Driver<'a> {
    config: &'a Config,
    vfs: Arc<SimVfs>,
    engine_vfs: Arc<dyn engine::vfs::Vfs>,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    checker: Checker,
    contexts: Vec<Context>,
}

impl Driver<'_> {
    fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("a store is open between operations")
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    /// From the next I/O on, a crash is judged by the checker as it is now,
    /// with `in_flight` (a write under way) uncertain.
    fn begin_context(&mut self, what: String, in_flight: Option<&Command>) {
        let now_ms = self.now();
        let mut checker = self.checker.clone();
        if let Some(command) = in_flight {
            checker.uncertain(command, now_ms);
        }
        self.contexts.push(Context { first_io_index: self.vfs.io_count(), what, now_ms, checker });
    }

    fn open(&mut self) -> Step {
        let opened = Store::open(
            self.engine_vfs.clone(),
            self.clock.clone(),
            Path::new(DB_DIR),
            Options { fsync: self.config.fsync },
        );
        match opened {
            Ok((store, _)) => {
                self.store = Some(store);
                Ok(())
            }
            Err(e) => Err(("open", format!("the store did not open on a fault-free disk: {e}"))),
        }
    }

    /// Reopen and hold what came back to the checker, as the random mode
    /// does after a crash (`power_lost`) or a clean restart.
    fn reopen_and_check(&mut self, power_lost: bool) -> Step {
        self.open()?;
        let now_ms = self.now();
        let dump = self.store().logical_dump().map_err(|e| ("dump", format!("after recovery: {e}")))?;
        if let Err(mismatch) = self.checker.recovered(&dump, now_ms, power_lost) {
            return Err(("durability", mismatch.detail));
        }
        let violations = self.store().audit();
        if !violations.is_empty() {
            return Err(("audit", format!("after recovery: {violations:?}")));
        }
        Ok(())
    }

    fn check_reply(command: &Command, got: &Reply, want: engine::Result<Reply>) -> Step {
        match want {
            Ok(want) if want == *got => Ok(()),
            Ok(want) => Err(("reply", format!("{command:?}\n    expected {want:?}\n    got      {got:?}"))),
            Err(e) => Err(("reply", format!("{command:?}: the store answered {got:?}, the model refused: {e}"))),
        }
    }

    fn run_command(&mut self, command: &Command, what: String) -> Step {
        self.begin_context(what, command.is_write().then_some(command));
        let now_ms = self.now();
        let result = self.store().execute(command);
        if !command.is_write() {
            let want = self.checker.read(command, now_ms);
            return match (&result, want) {
                (Ok(got), want) => Self::check_reply(command, got, want),
                (Err(_), Err(_)) => Ok(()),
                (Err(e), Ok(want)) => {
                    Err(("reply", format!("{command:?}: the store failed ({e}), the model answered {want:?}")))
                }
            };
        }
        match result {
            Ok(got) => {
                let want = self.checker.acknowledged(command, now_ms);
                Self::check_reply(command, &got, want)?;
                self.checker.call_succeeded(now_ms);
                Ok(())
            }
            Err(Error::Invalid(_)) if self.checker.model_would_refuse(command, now_ms) => Ok(()),
            Err(e) => Err(("reply", format!("{command:?}: failed on a fault-free disk: {e}"))),
        }
    }

    fn admin(&mut self, what: &str, result: engine::Result<()>) -> Step {
        match result {
            Ok(()) => {
                let now_ms = self.now();
                self.checker.call_succeeded(now_ms);
                Ok(())
            }
            Err(e) => Err(("admin", format!("{what} failed on a fault-free disk: {e}"))),
        }
    }

    fn step(&mut self, planned: &PlannedOp) -> Step {
        let what = planned.to_string();
        match &planned.op {
            Op::Cmd(command) => self.run_command(command, what)?,
            Op::Evict => {
                self.begin_context(what, None);
                let result = self.store().evict().map(|_| ());
                self.admin("evict", result)?;
            }
            Op::Rewrite | Op::Sync => {
                self.begin_context(what, None);
                let result = if planned.op == Op::Rewrite { self.store().rewrite() } else { self.store().sync() };
                if result.is_ok() {
                    self.checker.all_durable();
                }
                self.admin(planned.op.tag(), result)?;
            }
            Op::Advance(ms) => {
                // The clock moves first: a crash inside the tick happens at
                // the new time.
                self.clock.advance(*ms);
                self.begin_context(what, None);
                let result = self.store().tick();
                self.admin("tick", result)?;
            }
            Op::Crash => {
                self.begin_context(what, None);
                self.store = None;
                self.vfs.power_loss(0);
                self.reopen_and_check(true)?;
            }
            Op::Restart => {
                self.begin_context(what.clone(), None);
                let store = self.store.take().expect("a store is open");
                if let Err(e) = store.close() {
                    return Err(("admin", format!("close failed on a fault-free disk: {e}")));
                }
                self.checker.all_durable();
                // Closed cleanly: from here on everything is durable.
                self.begin_context(format!("{what} (reopening)"), None);
                self.vfs.process_restart();
                self.reopen_and_check(false)?;
            }
        }
        if let Some(why) = self.store().poisoned() {
            return Err(("poisoned", format!("the store poisoned itself on a fault-free disk: {why}")));
        }
        Ok(())
    }

    fn run(&mut self, workload: &[PlannedOp]) -> Step {
        self.begin_context("the initial open".to_string(), None);
        self.open()?;
        for planned in workload {
            self.step(planned)?;
        }
        // The end, as in the random mode: a clean restart must bring back
        // exactly the model. Its I/Os are crash indices like any other.
        let end = PlannedOp { index: workload.last().map_or(0, |p| p.index + 1), op: Op::Restart, crash: None };
        self.step(&end)?;
        let now_ms = self.now();
        let violations = self.store().audit();
        if !violations.is_empty() {
            return Err(("audit", format!("{violations:?}")));
        }
        let dump = self.store().logical_dump().map_err(|e| ("content", format!("logical_dump failed: {e}")))?;
        if !self.checker.matches(&dump, now_ms) {
            return Err(("content", diff(&self.checker.expected(now_ms), &dump)));
        }
        Ok(())
    }
}
