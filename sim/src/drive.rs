//! The driver: the engine on a simulated disk, one planned operation at a
//! time, with the checker's bookkeeping done the one way it is done.
//!
//! Every mode of the simulator drives the store through this type: the
//! random mode (`run.rs`, which adds the fault schedule, periodic audits
//! and what to do with a poisoned store), exhaustive exploration's
//! recording run (`explore/record.rs`, which watches each operation begin
//! through an [`Observer`]) and its probe of each recovered crash state
//! (`explore/check.rs`). The durability bounds therefore come from one
//! piece of code: `acknowledged` after a write's reply, `call_succeeded`
//! after every successful store call, `uncertain` for a write whose fate a
//! crash or a poisoning left open, `all_durable` after a sync, a rewrite
//! or a clean close. Two drivers kept equal by a comment drifted; one
//! cannot.
//!
//! A step runs the operation and returns [`Stepped`]: it ran, or the power
//! went (at a planned crash point or the workload's own `CRASH`) and the
//! recovery was checked, and whether the store is poisoned now. A failed
//! check is a [`Failure`], typed by its [`Check`].

use std::path::Path;
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::store::{Command, Options, RecoveryReport, Reply, Store};
use engine::vfs::Vfs;
use engine::{Error, Phase};

use crate::checker::{diff, Checker};
use crate::config::{Config, Overrides};
use crate::disk::{CrashOutcome, CrashPoint, SimVfs};
use crate::failure::{Check, Failure};
use crate::outcome::SeedOutcome;
use crate::seeds;
use crate::trace::{hash_reply, Event};
use crate::workload::{Op, PlannedOp};

/// Where the store lives on the simulated disk.
pub const DB_DIR: &str = "/db";

/// How many times an open is tried with faults on before the last try
/// without them (an injected read error is transient, not a refusal).
const OPEN_ATTEMPTS_WITH_FAULTS: u64 = 3;

/// The result of a step that passed its checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stepped {
    /// The power went during the operation (a planned crash point, or the
    /// workload's `CRASH`) and the recovery passed its checks.
    pub power_lost: bool,
    /// The store is poisoned: it refuses writes until reopened.
    pub poisoned: bool,
}

/// When, within an operation, an [`Observer`] hears of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// Before the operation's first I/O (for `ADVANCE`, after the clock moved).
    Begins,
    /// A clean restart: the store closed cleanly and is about to reopen.
    Reopening,
}

/// Watches operations begin. Exploration's recording notes the checker at
/// each one, so that a crash at any later I/O index is judged as the
/// random mode would judge it there.
pub trait Observer {
    /// `planned` reaches `moment`; `in_flight` is the write under way, if
    /// any (a crash from the next I/O on leaves its fate open).
    fn op_begins(&mut self, driver: &Driver<'_>, planned: &PlannedOp, moment: Moment, in_flight: Option<&Command>);
}

/// An observer that watches nothing (the random mode).
pub struct Unobserved;

impl Observer for Unobserved {
    fn op_begins(&mut self, _: &Driver<'_>, _: &PlannedOp, _: Moment, _: Option<&Command>) {}
}

/// What a clean restart must reproduce beyond the logical content: where
/// the rows live. Replay rebuilds memory from the log, so after a clean
/// close the same rows are cold, in the same number of segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    cold_rows: usize,
    segments: usize,
}

impl Layout {
    fn of(store: &Store) -> Layout {
        Layout { cold_rows: store.cold_count(), segments: store.segment_count() }
    }
}

type Step<T = ()> = Result<T, Failure>;

/// The store, its clock and disk, and the checker, for one run.
pub struct Driver<'a> {
    config: &'a Config,
    overrides: Overrides,
    /// The simulated disk, for control (faults, crashes, trace).
    vfs: Arc<SimVfs>,
    /// What the engine is given: the disk itself, or a test's wrapper.
    engine_vfs: Arc<dyn Vfs>,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    checker: Checker,
    /// Counters of the run (crashes, restarts, gaps, accepted refusals).
    outcome: SeedOutcome,
    /// The operation under way.
    op_index: u64,
    /// The crash point armed for the current operation.
    planned_crash: Option<CrashPoint>,
    /// A store call failed since the last open. Its memory may then hold
    /// what its log does not (a row promoted for a write whose frame
    /// never landed), which no reader can see but a reopen undoes: the
    /// layout is compared across a clean restart only when this is false.
    call_failed_since_open: bool,
    /// List the directory after each recovery to count quarantine files
    /// (the random mode's loss report; exploration's recording skips it so
    /// its I/O indices are the workload's own).
    count_quarantine: bool,
}

impl<'a> Driver<'a> {
    /// A driver for `config`'s seed on `vfs`, the engine seeing
    /// `engine_vfs` (the disk, or a test's wrapper of it), time from
    /// `clock`. No store is open yet: see [`Driver::open_empty`].
    pub fn new(
        config: &'a Config,
        overrides: Overrides,
        vfs: Arc<SimVfs>,
        engine_vfs: Arc<dyn Vfs>,
        clock: Arc<ManualClock>,
    ) -> Self {
        Driver {
            config,
            overrides,
            vfs,
            engine_vfs,
            clock,
            store: None,
            checker: Checker::new(config.fsync),
            outcome: SeedOutcome { seed: config.seed, ..SeedOutcome::default() },
            op_index: 0,
            planned_crash: None,
            call_failed_since_open: false,
            count_quarantine: true,
        }
    }

    /// Skip the quarantine count after recoveries (see the field).
    pub fn without_quarantine_count(mut self) -> Self {
        self.count_quarantine = false;
        self
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.config.seed
    }

    /// The checker as it stands.
    pub fn checker(&self) -> &Checker {
        &self.checker
    }

    /// The checker, to reset its base (a probe starts from recovered content).
    pub fn checker_mut(&mut self) -> &mut Checker {
        &mut self.checker
    }

    /// The simulated disk.
    pub fn vfs(&self) -> &SimVfs {
        &self.vfs
    }

    /// The clock.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The open store.
    pub fn store(&self) -> &Store {
        self.store.as_ref().expect("a store is open between operations")
    }

    fn store_mut(&mut self) -> &mut Store {
        self.store.as_mut().expect("a store is open between operations")
    }

    /// The run's counters so far.
    pub fn outcome_mut(&mut self) -> &mut SeedOutcome {
        &mut self.outcome
    }

    /// The run's counters, the driver done.
    pub fn into_outcome(self) -> SeedOutcome {
        self.outcome
    }

    /// A failure of `check` at the current operation, with the trace's
    /// last events and the seed's repro.
    pub fn fail(&self, check: Check, detail: impl Into<String>) -> Failure {
        let recent = self.vfs.with_trace(|t| t.recent().iter().map(|e| t.describe(e)).collect());
        Failure {
            seed: self.config.seed,
            op_index: self.op_index,
            check,
            detail: detail.into(),
            recent,
            repro: Config::repro(self.config.seed, &self.overrides, ""),
        }
    }

    fn open_store(&self) -> engine::Result<(Store, RecoveryReport)> {
        Store::open(
            self.engine_vfs.clone(),
            self.clock.clone(),
            Path::new(DB_DIR),
            Options { fsync: self.config.fsync, ..Options::default() },
        )
    }

    /// Open the store on the disk as it is, with faults off (the run's
    /// first open, or exploration's recovery of a crash image).
    pub fn open(&mut self) -> engine::Result<()> {
        self.vfs.begin_op(seeds::initial_open(self.config.seed));
        self.vfs.set_faults_enabled(false);
        let opened = self.open_store();
        self.vfs.set_faults_enabled(true);
        let (store, _) = opened?;
        self.store = Some(store);
        self.call_failed_since_open = false;
        Ok(())
    }

    /// [`Driver::open`] on an empty directory: a refusal is a failure.
    pub fn open_empty(&mut self) -> Step {
        self.open().map_err(|e| self.fail(Check::Open, format!("an empty directory did not open: {e}")))
    }

    /// Declare the workload's windowed tables on a fresh store (their
    /// declarations are the first operations; a wipe needs them again).
    fn declare_windows(&mut self) -> Step {
        for table in &self.config.tables {
            let command = Command::Window {
                table: table.name.clone().into_bytes(),
                column: table.column.clone().into_bytes(),
                span: table.span,
            };
            self.vfs.set_faults_enabled(false);
            let result = self.store_mut().execute(&command);
            self.vfs.set_faults_enabled(true);
            if let Err(e) = result {
                return Err(self.fail(Check::Open, format!("a fault-free WINDOW failed on a fresh store: {e}")));
            }
        }
        Ok(())
    }

    /// Run one planned operation (see the module doc).
    pub fn step(&mut self, planned: &PlannedOp, observer: &mut dyn Observer) -> Step<Stepped> {
        self.op_index = planned.index;
        self.vfs.begin_op(seeds::faults(self.config.seed, planned.index));
        self.vfs.arm_crash(planned.crash);
        self.planned_crash = planned.crash;
        let index = planned.index;
        let tag = planned.op.tag();
        self.vfs.with_trace(|t| t.push(Event::Op { index, tag }));
        let was_poisoned = self.store().poisoned().is_some();
        let result = match &planned.op {
            Op::Cmd(command) => self.run_command(command, planned, observer),
            Op::Evict => {
                observer.op_begins(self, planned, Moment::Begins, None);
                let result = self.store_mut().evict().map(|_| ());
                self.admin_result(&planned.op, was_poisoned, result)
            }
            Op::Rewrite | Op::Sync => {
                observer.op_begins(self, planned, Moment::Begins, None);
                let result = match planned.op {
                    Op::Rewrite => self.store_mut().rewrite(),
                    _ => self.store_mut().sync(),
                };
                if result.is_ok() && !self.vfs.crash_point_reached() {
                    self.checker.all_durable();
                }
                self.admin_result(&planned.op, was_poisoned, result)
            }
            Op::Advance(ms) => {
                // The clock moves first: a crash inside the tick happens at
                // the new time.
                self.clock.advance(*ms);
                observer.op_begins(self, planned, Moment::Begins, None);
                let result = self.store_mut().tick();
                self.admin_result(&planned.op, was_poisoned, result)
            }
            Op::Crash => {
                observer.op_begins(self, planned, Moment::Begins, None);
                self.power_loss(&planned.op).map(|()| true)
            }
            Op::Restart => self.restart(planned, observer),
        };
        self.vfs.arm_crash(None);
        let power_lost = result?;
        Ok(Stepped { power_lost, poisoned: self.store().poisoned().is_some() })
    }

    /// A store command, its reply checked against the model's. `Ok(true)`:
    /// the power went during it (and the recovery passed).
    fn run_command(&mut self, command: &Command, planned: &PlannedOp, observer: &mut dyn Observer) -> Step<bool> {
        observer.op_begins(self, planned, Moment::Begins, command.is_write().then_some(command));
        let now_ms = self.now_ms();
        let was_poisoned = self.store().poisoned().is_some();
        let result = self.store_mut().execute(command);
        let reply_hash = match &result {
            Ok(reply) => hash_reply(reply),
            Err(_) => 0,
        };
        let index = self.op_index;
        self.vfs.with_trace(|t| t.push(Event::Reply { index, hash: reply_hash }));
        if self.vfs.crash_point_reached() {
            if command.is_write() {
                self.checker.uncertain(command, now_ms);
            }
            return self.power_loss(&planned.op).map(|()| true);
        }
        if !command.is_write() {
            let want = self.checker.read(command, now_ms);
            return match (&result, want) {
                (Ok(got), want) => self.check_reply(command, got, want),
                (Err(_), Err(_)) => Ok(()),
                (Err(_), Ok(_)) if self.vfs.faults_injected_this_op() => Ok(()),
                (Err(e), Ok(want)) => Err(self
                    .fail(Check::Reply, format!("{command:?}: the store failed ({e}), the model answered {want:?}"))),
            }
            .map(|()| false);
        }
        match result {
            Ok(got) => {
                let want = self.checker.acknowledged(command, now_ms);
                self.check_reply(command, &got, want)?;
                self.checker.call_succeeded(now_ms);
            }
            Err(Error::Invalid(why)) => {
                if !self.checker.model_would_refuse(command, now_ms) {
                    return Err(self.fail(Check::Reply, format!("{command:?}: the store refused a valid write: {why}")));
                }
            }
            Err(e) => {
                self.call_failed_since_open = true;
                if !was_poisoned && self.store().poisoned().is_some() {
                    // Poisoned by this write: its frame may be on disk.
                    self.checker.uncertain(command, now_ms);
                } else if !was_poisoned && !self.vfs.faults_injected_this_op() {
                    return Err(self.fail(Check::Reply, format!("{command:?}: failed with no fault injected: {e}")));
                }
            }
        }
        Ok(false)
    }

    fn check_reply(&self, command: &Command, got: &Reply, want: engine::Result<Reply>) -> Step {
        match want {
            Ok(want) if want == *got => Ok(()),
            Ok(want) => {
                Err(self.fail(Check::Reply, format!("{command:?}\n    expected {want:?}\n    got      {got:?}")))
            }
            Err(e) => {
                Err(self.fail(Check::Reply, format!("{command:?}: the store answered {got:?}, the model refused: {e}")))
            }
        }
    }

    /// An admin call's result: a power loss at its crash point is
    /// recovered; an error is fine only when a fault was injected or the
    /// store was already poisoned. `Ok(true)`: the power went.
    fn admin_result(&mut self, op: &Op, was_poisoned: bool, result: engine::Result<()>) -> Step<bool> {
        if self.vfs.crash_point_reached() {
            return self.power_loss(op).map(|()| true);
        }
        match result {
            Ok(()) => {
                let now_ms = self.now_ms();
                self.checker.call_succeeded(now_ms);
                Ok(false)
            }
            Err(_) if was_poisoned || self.vfs.faults_injected_this_op() => {
                self.call_failed_since_open = true;
                Ok(false)
            }
            Err(e) => {
                let what = match op {
                    Op::Advance(_) => "tick",
                    _ => op.tag(),
                };
                Err(self.fail(Check::Admin, format!("{what} failed with no fault injected: {e}")))
            }
        }
    }

    /// Clean close and reopen: if the close succeeds every acknowledged
    /// write is durable, and the reopened store must hold exactly them —
    /// with the same rows cold, in as many segments (see [`Layout`]).
    fn restart(&mut self, planned: &PlannedOp, observer: &mut dyn Observer) -> Step<bool> {
        observer.op_begins(self, planned, Moment::Begins, None);
        let store = self.store.take().expect("a store is open");
        let was_poisoned = store.poisoned().is_some();
        let before = (!self.call_failed_since_open && !was_poisoned).then(|| Layout::of(&store));
        let closed = store.close();
        if self.vfs.crash_point_reached() {
            return self.power_loss(&planned.op).map(|()| true);
        }
        match &closed {
            Ok(()) => self.checker.all_durable(),
            Err(_) if was_poisoned || self.vfs.faults_injected_this_op() => {}
            Err(e) => return Err(self.fail(Check::Admin, format!("close failed with no fault injected: {e}"))),
        }
        observer.op_begins(self, planned, Moment::Reopening, None);
        self.vfs.process_restart();
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: closed.is_ok() }));
        self.recover(None)?;
        if let (Some(before), Ok(())) = (before, closed) {
            let after = Layout::of(self.store());
            if after != before {
                return Err(self.fail(
                    Check::Layout,
                    format!("a clean restart changed where rows live: before close {before:?}, after reopen {after:?}"),
                ));
            }
        }
        Ok(false)
    }

    /// Cut the power during `op` and check the recovery.
    pub fn power_loss(&mut self, op: &Op) -> Step {
        self.store = None;
        // A crash aimed at a mark happens at that mark, whatever the
        // engine went on to do in memory before it noticed.
        let at_mark = match self.planned_crash {
            Some(CrashPoint::AtMark(phase)) if self.vfs.crash_point_reached() => Some(phase),
            _ => self.vfs.last_mark(),
        };
        *self.outcome.crash_gaps.entry(crash_gap(op, at_mark)).or_default() += 1;
        self.outcome.crashes += 1;
        let crash = self.vfs.power_loss(seeds::crash(self.config.seed, self.op_index));
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        self.recover(Some(&crash))
    }

    /// The process dies (memory lost, page cache kept) and the store is
    /// reopened and checked.
    pub fn process_crash(&mut self) -> Step {
        self.store = None;
        self.vfs.process_restart();
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        self.recover(None)
    }

    /// Reopen after a power loss (`crash`) or a restart, and check what
    /// came back: the durability rule, then the audit.
    fn recover(&mut self, crash: Option<&CrashOutcome>) -> Step {
        self.outcome.restarts += 1;
        let media_corrupted = crash.is_some_and(|c| !c.media_corrupted.is_empty());
        let quarantined_before = self.quarantine_files();
        let mut opened = None;
        for attempt in 0..=OPEN_ATTEMPTS_WITH_FAULTS {
            self.vfs.begin_op(seeds::open_attempt(self.config.seed, self.op_index, attempt));
            self.vfs.set_faults_enabled(attempt < OPEN_ATTEMPTS_WITH_FAULTS);
            let result = self.open_store();
            let injected = self.vfs.faults_injected_this_op();
            self.vfs.set_faults_enabled(true);
            match result {
                Ok(ok) => {
                    opened = Some(ok);
                    break;
                }
                Err(_) if injected && attempt < OPEN_ATTEMPTS_WITH_FAULTS => continue,
                Err(Error::Corrupt { .. }) if media_corrupted => return self.accept_refusal(),
                Err(e) => {
                    return Err(self.fail(Check::Open, format!("the store refused to open after a crash: {e}")));
                }
            }
        }
        let (store, report) = opened.expect("the loop either opened or returned");
        self.store = Some(store);
        self.call_failed_since_open = false;
        let now_ms = self.now_ms();
        if media_corrupted {
            self.recover_after_media_corruption(&report, now_ms, crash.is_some(), quarantined_before)?;
        } else {
            // Read as the store walks its content (no dump), then the
            // quarantine count — in that order, as the trace records it.
            let store = self.store.as_ref().expect("opened above");
            let verdict = match self.checker.recovered_store(store, now_ms, crash.is_some()) {
                Ok(verdict) => verdict,
                Err(e) => return Err(self.fail(Check::Dump, format!("logical_dump failed after recovery: {e}"))),
            };
            // Without media corruption a loss report excuses nothing, but
            // asking lists the directory, a traced I/O: it stays, after
            // the read as before, so every seed's trace stays what it was.
            self.loss_reported(&report, quarantined_before);
            if let Err(mismatch) = verdict {
                return Err(self.fail(Check::Durability, mismatch.detail));
            }
        }
        let violations = self.store().audit();
        if !violations.is_empty() {
            if media_corrupted {
                return self.accept_refusal();
            }
            return Err(self.fail(Check::Audit, format!("after recovery: {violations:?}")));
        }
        Ok(())
    }

    /// [`Driver::recover`]'s check of the content when media corruption
    /// was injected: a refusal to read it is accepted, and a loss the
    /// store reported becomes the new truth.
    fn recover_after_media_corruption(
        &mut self,
        report: &RecoveryReport,
        now_ms: u64,
        power_lost: bool,
        quarantined_before: usize,
    ) -> Step {
        let dump = match self.store().logical_dump() {
            Ok(dump) => dump,
            Err(Error::Corrupt { .. }) => return self.accept_refusal(),
            Err(e) => return Err(self.fail(Check::Dump, format!("logical_dump failed after recovery: {e}"))),
        };
        if self.loss_reported(report, quarantined_before) {
            // Durable bytes were damaged and recovery said it cut data:
            // loss is expected and was not silent. Go on from what came
            // back (its audit below must still be clean).
            self.outcome.refusals_accepted += 1;
            self.checker.rebase(dump);
        } else if let Err(mismatch) = self.checker.recovered(&dump, now_ms, power_lost) {
            return Err(self.fail(
                Check::Durability,
                format!("{} (media corruption was injected, but not reported)", mismatch.detail),
            ));
        }
        Ok(())
    }

    /// Whether the open reported a loss: bytes cut from the log or the
    /// manifest. A failed open attempt may already have cut the log; the
    /// quarantine file it left is its durable report of the loss (counting
    /// them lists the directory: one traced I/O).
    fn loss_reported(&self, report: &RecoveryReport, quarantined_before: usize) -> bool {
        report.aof.dropped_bytes > 0 || report.manifest_torn_bytes > 0 || self.quarantine_files() > quarantined_before
    }

    /// How many AOF quarantine files the store directory holds.
    fn quarantine_files(&self) -> usize {
        if !self.count_quarantine {
            return 0;
        }
        let names = self.vfs.list_dir(Path::new(DB_DIR)).unwrap_or_default();
        names.iter().filter(|n| n.contains(".quarantine.")).count()
    }

    /// Media corruption made the store refuse, as it must: start over on
    /// an empty directory (the refusal itself was the check).
    fn accept_refusal(&mut self) -> Step {
        self.outcome.refusals_accepted += 1;
        self.store = None;
        self.vfs.set_faults_enabled(false);
        let dir = Path::new(DB_DIR);
        let names = self.vfs.list_dir(dir).unwrap_or_default();
        for name in names {
            // Best effort: an unlink that fails leaves a file the fresh
            // open below will refuse or sweep, and that is checked.
            let _ = self.vfs.unlink(&dir.join(name));
        }
        let _ = self.vfs.sync_dir(dir);
        let opened = self.open_store();
        self.vfs.set_faults_enabled(true);
        match opened {
            Ok((store, _)) => self.store = Some(store),
            Err(e) => return Err(self.fail(Check::Open, format!("an empty directory did not open: {e}"))),
        }
        self.call_failed_since_open = false;
        self.checker.reset_empty();
        self.declare_windows()
    }

    /// The audit, then the content compared with the model as the store
    /// walks it (a dump, every value copied, is built only for a report).
    pub fn audit(&mut self) -> Step {
        let violations = self.store().audit();
        if !violations.is_empty() {
            return Err(self.fail(Check::Audit, format!("{violations:?}")));
        }
        let now_ms = self.now_ms();
        let store = self.store();
        let mut in_order = self.checker.shows_in_order(now_ms);
        let visited = store.logical_visit(|key, entry| in_order.next(key, entry));
        match visited {
            Ok(()) if in_order.finish() => Ok(()),
            Ok(()) => match store.logical_dump() {
                Ok(dump) => Err(self.fail(Check::Content, diff(&self.checker.expected(now_ms), &dump))),
                Err(e) => Err(self.fail(Check::Content, format!("logical_dump failed: {e}"))),
            },
            Err(e) => Err(self.fail(Check::Content, format!("logical_dump failed: {e}"))),
        }
    }
}

/// Where a crash landed, for the gap counters.
fn crash_gap(op: &Op, last_mark: Option<Phase>) -> &'static str {
    match op {
        Op::Crash => "boundary",
        Op::Evict => match last_mark {
            None | Some(Phase::SealBuilt) | Some(Phase::SealDirSynced) => "seal",
            Some(Phase::SealRegistered) => "frame",
            Some(Phase::FrameLogged) => "commit",
            _ => "evict_done",
        },
        Op::Rewrite => "rewrite",
        Op::Cmd(Command::FlushAll) => "flushall",
        Op::Restart => "restart",
        _ => "in_op",
    }
}
