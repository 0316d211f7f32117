//! [`Loop`]: one seed's run of any [`Workload`] (see the module doc of
//! `harness`). The failure model it enforces, the same for every engine:
//!
//! - An operation that failed under an injected fault ([`Ended::Failed`])
//!   ends with a reopen — half the time after a power loss, half the time
//!   after a plain process restart (the page cache survives). An error with
//!   no fault injected is the workload's to fail.
//! - At a power loss nothing may reach the disk any more, so the engine's
//!   handles are dropped with a crash point reached: every I/O they attempt
//!   (redb's `Drop` commits) fails, as it would with the power off.
//! - A crash point reached inside an operation is, by the seed's coin, a
//!   process kill instead: the handles are dropped the same way, the page
//!   cache keeps what was written before the point, the engine reopens and
//!   is judged, and by a second coin the power goes too: the recovery must
//!   not have built on bytes the dead process never made durable.
//! - A recovery's open attempts run with faults on, each from its own
//!   stream, while a fault explains the failure; the last runs fault-free.
//!   An open may write (repair), so a power loss may strike inside the
//!   first attempt (by a coin of the operation's stream), up to
//!   [`MAX_CRASHES_IN_RECOVERY`] deep: one more crash to survive.
//! - Every persistence hazard the disk flags at an operation's end fails
//!   the run unless the workload documents it.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Ended, Harness, OpenFailed, Reopening, Step, Workload};
use crate::disk::{CrashOutcome, CrashPoint};
use crate::failure::{catch_failure, Check, Failure};
use crate::outcome::SeedOutcome;
use crate::seeds;
use crate::trace::Event;

/// Open attempts with faults on before the last one without them (an
/// injected read error is transient, not a refusal).
pub const OPEN_ATTEMPTS_WITH_FAULTS: u64 = 3;

/// Power losses inside one operation's recovery, at most.
pub const MAX_CRASHES_IN_RECOVERY: u64 = 3;

/// One seed's run: the harness (disk, counters) and the workload.
pub struct Loop<W: Workload> {
    /// The disk, the counters, the operation under way.
    pub h: Harness,
    /// The engine, its model and checks.
    pub w: W,
}

impl<W: Workload> Loop<W> {
    /// A run of `w` on `h`'s disk.
    pub fn new(h: Harness, w: W) -> Self {
        Loop { h, w }
    }

    /// Create the engine and open it (a crash point inside the creation,
    /// if the settings arm one, is recovered like any other).
    pub fn start(&mut self) -> Step {
        debug_assert!(!self.w.is_open(), "the engine is created once, at the start");
        let crash = self.w.settings().crash_in_creation;
        self.h.vfs.begin_op(seeds::initial_open(self.h.seed()));
        self.h.vfs.arm_crash(crash.map(CrashPoint::AfterIos));
        self.w.create(&mut self.h)?;
        if self.h.vfs.crash_point_reached() {
            self.crash_point("create")?;
        }
        self.h.vfs.arm_crash(None);
        self.hazards()
    }

    /// Create the engine, run `ops`, then a clean restart that must bring
    /// back exactly the model.
    pub fn run(&mut self, ops: &[W::Op]) -> Step {
        self.start()?;
        self.drive(ops)
    }

    /// One seed's whole run, the one entry point every target's random
    /// mode takes: [`Loop::run`] with a panic caught as this seed's failure
    /// (never the end of a sweep); then the engine's handles dropped, a
    /// panic there a failure too (a drop may write: redb's commits, so it
    /// comes before the disk gives up its trace); then the outcome, with
    /// the disk's fault counts, trace hash and, with `keep_trace`, trace.
    pub fn run_to_outcome(mut self, ops: &[W::Op], keep_trace: bool) -> SeedOutcome {
        let failure = match catch_failure(|| self.run(ops)) {
            Ok(Ok(())) => None,
            Ok(Err(failure)) => Some(failure),
            Err((check, message)) => Some(self.h.fail(check, message)),
        };
        let vfs = self.h.vfs.clone();
        let mut outcome = std::mem::take(&mut self.h.outcome);
        let closing = catch_failure(move || drop(self));
        outcome.failure = failure.or_else(|| {
            closing.err().map(|(check, message)| Failure {
                seed: outcome.seed,
                op_index: u64::MAX,
                check,
                detail: format!("dropping the database at the end of the run: {message}"),
                recent: Vec::new(),
                repro: String::new(),
                drew: None,
            })
        });
        outcome.take_disk(&vfs, keep_trace);
        let passed = outcome.failure.is_none();
        assert!(!passed || outcome.counters.reopens_add_up(), "a reopen without one cause: {outcome:?}");
        outcome
    }

    /// [`Loop::run`] once the engine exists: each operation, its hazards,
    /// an audit every [`Settings::audit_every`](super::Settings), the final
    /// clean restart and its audit.
    pub fn drive(&mut self, ops: &[W::Op]) -> Step {
        let audit_every = self.w.settings().audit_every;
        assert!(audit_every > 0, "an audit cadence of at least one operation");
        for op in ops {
            self.step(op)?;
            self.h.outcome.counters.ops += 1;
            let (index, _) = W::planned(op);
            if (index + 1) % audit_every == 0 {
                self.w.audit(&mut self.h)?;
            }
        }
        let end = W::final_restart(ops.last().map_or(0, |op| W::planned(op).0 + 1));
        self.step(&end)?;
        self.w.audit(&mut self.h)
    }

    /// Run one operation and react to how it ended; then its hazards.
    pub fn step(&mut self, op: &W::Op) -> Step {
        let (index, crash) = W::planned(op);
        self.h.op_index = index;
        let tag = W::tag(op);
        self.h.vfs.begin_op_armed(seeds::faults(self.h.seed(), index), crash, |t| t.push(Event::Op { index, tag }));
        let first_io_index = self.h.vfs.io_count();
        let result = match self.w.execute(&mut self.h, op) {
            Ok(Ended::Done) => Ok(()),
            Ok(Ended::CrashPoint) => {
                let gap = self.w.gap(&self.h, op);
                self.crash_point(gap)
            }
            Ok(Ended::PowerLoss) => {
                let gap = self.w.gap(&self.h, op);
                self.power_loss(gap)
            }
            Ok(Ended::Kill) => self.kill(),
            Ok(Ended::Failed) => self.restart_after_error(),
            Ok(Ended::Closed) => self.clean_restart(),
            Err(failure) => Err(failure),
        };
        self.h.vfs.arm_crash(None);
        result?;
        self.w.op_ended(&mut self.h, op, first_io_index)?;
        debug_assert!(self.w.is_open(), "{op}: the engine is open between operations");
        debug_assert!(self.h.outcome.counters.reopens_add_up(), "{op}: every reopen had one cause");
        self.w.settled(op);
        self.hazards()
    }

    /// A crash point was reached (counted in `gap`): a process kill by the
    /// seed's coin, else a power loss.
    pub fn crash_point(&mut self, gap: &'static str) -> Step {
        match seeds::kill_in_op(self.h.seed(), self.h.op_index) {
            true => self.kill_in_op(gap),
            false => self.power_loss(gap),
        }
    }

    /// Power is lost: drop every handle with every I/O failing, then build
    /// the next disk. `depth` counts power losses inside the recovery from
    /// an earlier one.
    fn lose_power(&mut self, depth: u64) -> CrashOutcome {
        self.h.vfs.arm_crash(Some(CrashPoint::AfterIos(0)));
        self.w.drop_engine(&mut self.h);
        let stream = seeds::crash(self.h.seed(), self.h.op_index, depth);
        self.h.outcome.lose_power(&self.h.vfs, stream)
    }

    /// A power loss (counted in `gap`), and the recovery from it.
    pub fn power_loss(&mut self, gap: &'static str) -> Step {
        self.h.outcome.counters.count_crash_gap(gap);
        let crash = self.lose_power(0);
        self.recover(Reopening::PowerLoss(crash), 0)
    }

    /// The crash point inside an operation is a process kill: the engine's
    /// memory is gone, the page cache keeps what it wrote before the point.
    /// Reopen and judge; then, by a second coin, lose the power too.
    fn kill_in_op(&mut self, gap: &'static str) -> Step {
        self.h.outcome.counters.count_crash_gap("kill_in_op");
        self.kill()?;
        if seeds::power_after_kill(self.h.seed(), self.h.op_index) {
            return self.power_loss(gap);
        }
        Ok(())
    }

    /// The process is killed (memory lost, page cache kept), the engine
    /// reopened and judged.
    pub fn kill(&mut self) -> Step {
        self.h.outcome.counters.kills += 1;
        self.w.drop_engine(&mut self.h);
        let reopening = self.restart_process(false, Reopening::Kill);
        self.recover(reopening, 0)
    }

    /// The process restarts ([`crate::outcome::SeedOutcome::restart_process`])
    /// for `cause`: the reopening it is, or a power loss's where the
    /// restart was a remount.
    fn restart_process(&mut self, clean: bool, cause: Reopening) -> Reopening {
        match self.h.outcome.restart_process(&self.h.vfs, clean) {
            Some(crash) => Reopening::PowerLoss(crash),
            None => cause,
        }
    }

    /// The engine failed under an injected fault: reopen, after a power
    /// loss half the time. Otherwise the handles are dropped, which may be
    /// a close that writes.
    fn restart_after_error(&mut self) -> Step {
        if seeds::poisoned_by_power_loss(self.h.seed(), self.h.op_index) {
            return self.power_loss("after_error");
        }
        self.w.before_error_reopen(&mut self.h);
        self.w.drop_engine(&mut self.h);
        self.h.outcome.counters.error_reopens += 1;
        let reopening = self.restart_process(false, Reopening::Restart);
        self.recover(reopening, 0)
    }

    /// A clean close returned: the process restarts, the engine reopens,
    /// and the workload holds it to what a clean restart keeps.
    fn clean_restart(&mut self) -> Step {
        debug_assert!(!self.w.is_open(), "a clean close leaves no engine open");
        self.h.outcome.counters.clean_restarts += 1;
        let reopening = self.restart_process(true, Reopening::Restart);
        self.recover(reopening.clone(), 0)?;
        self.w.restarted(&mut self.h, &reopening)
    }

    /// Where power fails inside the recovery numbered `depth` of this
    /// operation, if it does. From the operation's crash stream, so
    /// shrinking keeps it.
    fn crash_in_recovery(&self, depth: u64) -> Option<CrashPoint> {
        let p = self.w.settings().p_crash_in_recovery;
        if depth >= MAX_CRASHES_IN_RECOVERY || p == 0.0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seeds::crash_in_recovery(self.h.seed(), self.h.op_index, depth));
        rng.gen_bool(p).then(|| CrashPoint::AfterIos(rng.gen_range(0..32)))
    }

    /// Reopen (`reopening` says after what), `depth` power losses into
    /// this operation's recovery, and hold what came back to the model.
    pub fn recover(&mut self, reopening: Reopening, depth: u64) -> Step {
        assert!(depth <= MAX_CRASHES_IN_RECOVERY, "at most {MAX_CRASHES_IN_RECOVERY} power losses in a recovery");
        debug_assert!(!self.w.is_open(), "a recovery reopens an engine whose handles were dropped");
        self.h.outcome.counters.restarts += 1;
        self.w.before_reopen(&mut self.h, &reopening)?;
        for attempt in 0..=OPEN_ATTEMPTS_WITH_FAULTS {
            let last = attempt == OPEN_ATTEMPTS_WITH_FAULTS;
            self.h.vfs.begin_op(seeds::open_attempt(self.h.seed(), self.h.op_index, attempt, depth));
            self.h.vfs.set_faults_enabled(!last);
            if attempt == 0 {
                self.h.vfs.arm_crash(self.crash_in_recovery(depth));
            }
            let opened = self.w.try_open(&mut self.h, &reopening);
            let injected = self.h.vfs.faults_injected_this_op();
            self.h.vfs.set_faults_enabled(true);
            if self.h.vfs.crash_point_reached() {
                return self.crash_in_open(reopening, depth);
            }
            self.h.vfs.arm_crash(None);
            if opened? {
                self.h.vfs.with_trace(|t| t.note(|| "recovery: the engine opened".to_string()));
                return self.w.judge_recovered(&mut self.h, &reopening);
            }
            match self.w.open_failed(&mut self.h, &reopening, injected, last)? {
                OpenFailed::Retry => continue,
                OpenFailed::Refused => return self.w.accept_refusal(&mut self.h),
            }
        }
        Err(self.h.fail(Check::Open, "the engine's last, fault-free open neither opened nor was refused"))
    }

    /// The power went inside a recovery's open: one more power loss, its
    /// damage added to what the recovery was already held to.
    fn crash_in_open(&mut self, reopening: Reopening, depth: u64) -> Step {
        self.h.outcome.counters.count_crash_gap("recovery");
        let mut crash = self.lose_power(depth + 1);
        if let Reopening::PowerLoss(earlier) = reopening {
            crash.media_corrupted.splice(0..0, earlier.media_corrupted);
            crash.damage.splice(0..0, earlier.damage);
        }
        self.recover(Reopening::PowerLoss(crash), depth + 1)
    }

    /// The operation ended: every persistence hazard the disk flagged in it
    /// (`disk/hazards.rs`) is one the workload documents — counted — or the
    /// run fails.
    pub fn hazards(&mut self) -> Step {
        for hazard in self.h.vfs.end_op_hazards() {
            if self.w.documents(&hazard) {
                self.h.outcome.counters.hazards += 1;
                continue;
            }
            let why = format!(
                "persistence hazard the engine does not document: {} (if its documentation says it does this, \
                 declare it in Spec::hazards)",
                hazard.describe()
            );
            return Err(self.h.fail(Check::Hazard, why));
        }
        Ok(())
    }
}
