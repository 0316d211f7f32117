//! The one run loop: every engine's seed runs through [`Loop`], generic over
//! a [`Workload`] — the operations, the model and the checks of one kind of
//! engine. The kit's transactional key-value workload (`kit/run.rs`) and the
//! segsim engine's commands, clock and tables (`drive/`) are its two
//! workloads; redb, SQLite, logkv and any user's adapter run through the
//! first.
//!
//! The loop owns what every engine's run shares, written once: the
//! operation's fault stream and crash point, a crash point reached taken as
//! a power loss or (by the seed's coin) a process kill followed by another
//! coin's power loss, the reaction to an operation that failed under an
//! injected fault (a reopen, after a power loss half the time), the open
//! attempts of a recovery (retried while a fault was injected, the last one
//! fault-free) and a power loss inside them, the persistence hazards at an
//! operation's end, the audit cadence and the final clean restart. Every
//! coin comes from `seeds.rs`.
//!
//! A workload owns what differs: how an operation runs and is checked, how
//! the engine opens, which refusals to open are allowed, what a recovery is
//! held to, what a clean restart must keep, and what an audit reads. It
//! tells the loop how an operation ended ([`Ended`]); the loop reacts.
//!
//! FoundationDB runs every workload on one simulator, the workload and its
//! check pluggable: this is that shape. One loop cannot drift from itself.

mod run_loop;

use std::fmt;
use std::sync::Arc;

pub use run_loop::Loop;

use crate::disk::{CrashOutcome, CrashPoint, Hazard, SimVfs};
use crate::failure::{Check, Failure};
use crate::outcome::SeedOutcome;

/// A step of a run: passed its checks, or the first failure.
pub type Step<T = ()> = Result<T, Failure>;

/// What every workload's hooks may use: the disk, the run's counters, the
/// operation under way.
pub struct Harness {
    /// The simulated disk, for control (faults, crashes, trace).
    pub vfs: Arc<SimVfs>,
    /// The run's counters.
    pub outcome: SeedOutcome,
    /// The operation under way (its index in the workload).
    pub op_index: u64,
    /// The command line that reruns this seed.
    pub repro: String,
}

impl Harness {
    /// A harness for `seed` on `vfs`.
    pub fn new(vfs: Arc<SimVfs>, seed: u64, repro: String) -> Self {
        Harness { vfs, outcome: SeedOutcome { seed, ..SeedOutcome::default() }, op_index: 0, repro }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.outcome.seed
    }

    /// A failure of `check` at the current operation, with the trace's
    /// last events and the seed's repro.
    pub fn fail(&self, check: Check, detail: impl Into<String>) -> Failure {
        Failure::in_run(&self.vfs, self.seed(), self.op_index, check, detail.into(), self.repro.clone())
    }

    /// Run `f` with faults off: an observation (reading the content after
    /// a recovery, an audit) is not part of the workload, and a fault in it
    /// would only test the observer.
    pub fn fault_free<T>(&self, f: impl FnOnce() -> T) -> T {
        self.vfs.set_faults_enabled(false);
        let result = f();
        self.vfs.set_faults_enabled(true);
        result
    }
}

/// Why the engine is reopened: what its recovery is held to.
#[derive(Clone, Debug)]
pub enum Reopening {
    /// After a power loss (or the remount a shut-down file system stands
    /// for), with what it left; a power loss inside the recovery adds its
    /// damage to the first's.
    PowerLoss(CrashOutcome),
    /// After a process kill: no power lost, the page cache kept.
    Kill,
    /// After a close, clean or after an error.
    Restart,
}

impl Reopening {
    /// Whether the power went (the page cache is gone).
    pub fn power_lost(&self) -> bool {
        matches!(self, Reopening::PowerLoss(_))
    }

    /// What the power loss left, if the power went.
    pub fn crash(&self) -> Option<&CrashOutcome> {
        match self {
            Reopening::PowerLoss(crash) => Some(crash),
            _ => None,
        }
    }
}

/// How an operation ended, for the loop to react to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It ran, and its reply passed the workload's checks.
    Done,
    /// It reached its planned crash point: a power loss, or by the seed's
    /// coin a process kill.
    CrashPoint,
    /// The workload's own power loss (`CRASH`).
    PowerLoss,
    /// The workload's own process kill (`KILL`).
    Kill,
    /// It failed under an injected fault and the engine must be reopened
    /// (it latched the error, or poisoned itself).
    Failed,
    /// A clean close returned `Ok`: reopen, and hold the engine to
    /// [`Workload::restarted`].
    Closed,
}

/// Whether a failed open is tried again or its refusal accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFailed {
    /// A transient fault: try again (the last attempt runs fault-free).
    Retry,
    /// A refusal the rule allows (damage, or nothing promised): accepted.
    Refused,
}

/// What the loop needs from the workload's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Audit the engine's content every this many operations.
    pub audit_every: u64,
    /// The chance of a power loss inside a recovery's first open attempt.
    pub p_crash_in_recovery: f64,
    /// A crash point inside the engine's creation, after this many I/Os.
    pub crash_in_creation: Option<u64>,
}

/// One kind of engine's operations, model and checks (see the module doc).
pub trait Workload {
    /// A planned operation.
    type Op: fmt::Display;

    /// The loop's settings for this run.
    fn settings(&self) -> Settings;
    /// `op`'s index in the workload and its planned crash point.
    fn planned(op: &Self::Op) -> (u64, Option<CrashPoint>);
    /// The operation tag the trace records for `op`.
    fn tag(op: &Self::Op) -> &'static str;
    /// The run's last operation: a clean restart with index `index`.
    fn final_restart(index: u64) -> Self::Op;

    /// Create the engine and open it, fault-free; a crash point may be
    /// armed ([`Settings::crash_in_creation`]).
    fn create(&mut self, h: &mut Harness) -> Step;
    /// Run `op` (its fault stream begun, its crash point armed) and check
    /// its reply.
    fn execute(&mut self, h: &mut Harness, op: &Self::Op) -> Step<Ended>;
    /// The crash gap a crash point inside `op` counts in.
    fn gap(&self, h: &Harness, op: &Self::Op) -> &'static str;
    /// `op` is over, its recovery too if it crashed; it began at I/O
    /// `first_io_index`.
    fn op_ended(&mut self, h: &mut Harness, op: &Self::Op, first_io_index: u64) -> Step;
    /// Whether the engine is open (between operations it must be).
    fn is_open(&self) -> bool;
    /// Drop the engine's handles (the loop has armed a crash point first
    /// where nothing may reach the disk any more).
    fn drop_engine(&mut self, h: &mut Harness);
    /// The engine is about to be reopened after an error under a fault.
    fn before_error_reopen(&mut self, _h: &mut Harness) {}

    /// Before a recovery's first open attempt (a read-only inspection).
    fn before_reopen(&mut self, _h: &mut Harness, _reopening: &Reopening) -> Step {
        Ok(())
    }
    /// One open attempt (the attempt's fault stream begun): whether it
    /// opened. A failed attempt keeps its error for [`Workload::open_failed`].
    fn try_open(&mut self, h: &mut Harness, reopening: &Reopening) -> Step<bool>;
    /// The open attempt failed (`injected`: under a fault; `last`: it was
    /// the fault-free one): retry, accept the refusal, or fail.
    fn open_failed(&mut self, h: &mut Harness, reopening: &Reopening, injected: bool, last: bool) -> Step<OpenFailed>;
    /// A refusal to open was accepted: start over on a fresh engine.
    fn accept_refusal(&mut self, h: &mut Harness) -> Step;
    /// The engine reopened: hold what came back to the model.
    fn judge_recovered(&mut self, h: &mut Harness, reopening: &Reopening) -> Step;
    /// A clean restart reopened the engine (`reopening`: a remount, if the
    /// file system had shut itself down): what must hold after it.
    fn restarted(&mut self, h: &mut Harness, reopening: &Reopening) -> Step;
    /// The engine's content against the model (and its own audit).
    fn audit(&mut self, h: &mut Harness) -> Step;
    /// Whether the engine documents leaving `hazard` behind.
    fn documents(&self, _hazard: &Hazard) -> bool {
        false
    }
    /// The model's invariants between operations hold (debug builds).
    fn settled(&self, _op: &Self::Op) {}
}
