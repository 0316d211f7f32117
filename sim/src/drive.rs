//! The driver: the engine on a simulated disk, one planned operation at a
//! time, with the checker's bookkeeping done the one way it is done.
//!
//! Every mode of the simulator drives the store through this type: the
//! random mode (`run.rs`, which adds the fault schedule, periodic audits
//! and what to do with a poisoned store), exhaustive exploration's
//! recording run (`target/segsim/record.rs`, which watches each operation
//! begin through an [`Observer`]) and its probe of each recovered crash
//! state (`target/segsim/recover.rs`). The durability bounds therefore come from one
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
//!
//! # Recovery's rule
//! Without damage, the store must open and hold the model after some
//! prefix `p` of the acknowledged writes, `D <= p <= A` (or `A` plus the
//! write in flight), with a clean audit. Damage no crash causes — media
//! corruption, a file lost, cut to zero or with junk before it, a stray
//! file — is announced by the disk, and then exactly these outcomes pass:
//!
//! - a refusal (`Corrupt`: at open, on a read, or as an audit finding),
//!   and an open that refuses must have changed no byte of the directory;
//! - the full state, `D <= p <= A`, as without damage;
//! - with point-in-time recovery, any prefix since the log's base (its
//!   last rewrite): the cut is the operator's choice;
//! - media damage to the log's newest durable bytes — which no later
//!   durable write vouched for, so no file format tells them from a torn
//!   write — may lose writes back to the last recovery, never before.
//!
//! A reported loss is never taken as the new truth. Every open after
//! damage, and every point-in-time open, also keeps what it must: a file
//! the store does not own is never removed, a point-in-time open removes no
//! file at all, and every byte it cuts from the log is in its quarantine
//! file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::manifest::MANIFEST_FILE;
use engine::store::{Command, Options, RecoveryReport, Reply, Store, AOF_FILE};
use engine::vfs::Vfs;
use engine::{Error, Phase};

use crate::checker::{diff, Checker, Floor, LogPosition};
use crate::config::{Config, Overrides};
use crate::disk::{CrashOutcome, CrashPoint, Damage, DamageKind, SimVfs};
use crate::failure::{Check, Failure};
use crate::outcome::SeedOutcome;
use crate::seeds;
use crate::trace::{hash_reply, reply_text, Event};
use crate::workload::{Op, PlannedOp};
use testkit::model;

/// Where the store lives on the simulated disk.
pub const DB_DIR: &str = "/db";

/// How many times an open is tried with faults on before the last try
/// without them (an injected read error is transient, not a refusal).
const OPEN_ATTEMPTS_WITH_FAULTS: u64 = 3;

/// The failure of an open that met an injected transient fault and
/// refused as corrupt: such a fault is no damage, so it may fail an open,
/// but only as what it is (the random mode's reopens and `sim explore
/// --faults` hold an open to this one rule).
pub fn transient_fault_called_corruption(error: &Error) -> String {
    format!("a transient fault during the open was reported as corruption: {error}")
}

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

/// A store reopened after a crash ([`Driver::reopen`]): the store, its
/// recovery report, the directory before the attempt that opened (when
/// watched), and whether any attempt met an injected fault.
struct Reopened {
    store: Store,
    report: RecoveryReport,
    before: Option<BTreeMap<String, Vec<u8>>>,
    /// What the directory held before the first attempt, if an earlier
    /// attempt failed (`None`: the first opened, and this is `before`).
    at_crash: Option<BTreeMap<String, Vec<u8>>>,
    faulted: bool,
}

/// What a clean restart must reproduce beyond the logical content: where
/// the rows live, and what the next eviction would seal. Replay rebuilds
/// memory from the log, so after a clean close the same rows are cold, in
/// the same number of segments, and every window's high-water mark is
/// where it was — even if a rewrite wrote the log anew and the rows that
/// raised the mark are gone.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Layout {
    cold_rows: usize,
    segments: usize,
    eviction_candidates: Vec<Vec<u8>>,
}

impl Layout {
    fn of(store: &Store) -> Layout {
        Layout {
            cold_rows: store.cold_count(),
            segments: store.segment_count(),
            eviction_candidates: store.eviction_candidates(),
        }
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
    /// Every registered segment the run has seen, by seq: the file (name
    /// and inode) that bore the seq. A segment file counts as registered
    /// once a clean audit has seen it (the audit holds the directory to
    /// the manifest). Seqs are never reused: a later file with the same seq
    /// is a failure, however the store got there (a crash that brings back
    /// an unlinked file brings back the same inode). A file a crash left
    /// before its registration was durable is no use of its seq.
    segment_seqs: BTreeMap<u64, (String, u64)>,
    /// The last open skipped its sweep (point-in-time): unregistered
    /// segment files may stay, and the audit does not hold the directory
    /// to the manifest, so it vouches for no file's registration.
    sweep_skipped: bool,
    /// A store call failed since the last open. Its memory may then hold
    /// what its log does not (a row promoted for a write whose frame
    /// never landed), which no reader can see but a reopen undoes: the
    /// layout is compared across a clean restart only when this is false.
    call_failed_since_open: bool,
    /// `DB_DIR/AOF_FILE`, joined once: [`Driver::log_position`] looks
    /// it up after every acknowledged write.
    log_path: PathBuf,
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
            segment_seqs: BTreeMap::new(),
            sweep_skipped: false,
            log_path: Path::new(DB_DIR).join(AOF_FILE),
        }
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
        let repro = Config::repro(self.config.seed, &self.overrides, "");
        Failure::in_run(&self.vfs, self.config.seed, self.op_index, check, detail.into(), repro)
    }

    fn open_store(&self) -> engine::Result<(Store, RecoveryReport)> {
        let options = Options { fsync: self.config.fsync, point_in_time: self.config.point_in_time };
        Store::open(self.engine_vfs.clone(), self.clock.clone(), Path::new(DB_DIR), options)
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
        self.planned_crash = planned.crash;
        let (index, tag) = (planned.index, planned.op.tag());
        self.vfs.begin_op_armed(seeds::faults(self.config.seed, index), planned.crash, |t| {
            t.push(Event::Op { index, tag });
        });
        let was_poisoned = self.store().poisoned().is_some();
        let result = match &planned.op {
            Op::Cmd(command) => self.run_command(command, planned, observer),
            Op::Args(args) => self.run_args(args, planned, observer),
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
                    match planned.op {
                        // The log now starts from this state.
                        Op::Rewrite => self.checker.log_rewritten(),
                        _ => self.checker.all_durable(),
                    }
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
            Op::SecondOpen => {
                observer.op_begins(self, planned, Moment::Begins, None);
                self.second_open(planned)
            }
            Op::Kill => {
                observer.op_begins(self, planned, Moment::Begins, None);
                self.process_crash().map(|()| false)
            }
        };
        self.vfs.arm_crash(None);
        let power_lost = result?;
        self.check_seqs(false)?;
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
        let crashed = self.vfs.trace_then_crash_reached(|t| {
            t.push(Event::Reply { index, hash: reply_hash });
            t.note_reply(|| reply_text::store_reply(&result));
        });
        if crashed {
            if command.is_write() {
                self.checker.uncertain(command, now_ms);
                self.outcome.in_doubt += 1;
            }
            return self.power_loss(&planned.op).map(|()| true);
        }
        if !command.is_write() {
            let want = self.checker.read(command, now_ms);
            return match (&result, want) {
                (Ok(got), want) => self.check_reply(command, got, want),
                (Err(Error::Invalid(_)), Err(_)) => {
                    self.outcome.bad_inputs_refused += 1;
                    Ok(())
                }
                (Err(_), Err(_)) => Ok(()),
                (Err(_), Ok(_)) if self.vfs.faults_injected_this_op() => Ok(()),
                (Err(e), Ok(want)) => Err(self
                    .fail(Check::Reply, format!("{command:?}: the store failed ({e}), the model answered {want:?}"))),
            }
            .map(|()| false);
        }
        match result {
            Ok(got) => {
                let log_at = self.log_position();
                let want = self.checker.acknowledged_at(command, now_ms, log_at);
                self.check_reply(command, &got, want)?;
                self.checker.call_succeeded(now_ms);
            }
            Err(Error::Invalid(why)) => {
                if !self.checker.model_would_refuse(command, now_ms) {
                    return Err(self.fail(Check::Reply, format!("{command:?}: the store refused a valid write: {why}")));
                }
                self.outcome.bad_inputs_refused += 1;
            }
            Err(e) => {
                self.call_failed_since_open = true;
                if !was_poisoned && self.store().poisoned().is_some() {
                    // Poisoned by this write: its frame may be on disk.
                    self.checker.uncertain(command, now_ms);
                    self.outcome.in_doubt += 1;
                } else if !was_poisoned && !self.vfs.faults_injected_this_op() {
                    return Err(self.fail(Check::Reply, format!("{command:?}: failed with no fault injected: {e}")));
                }
            }
        }
        Ok(false)
    }

    /// A command given as raw arguments. One that Redis refuses before
    /// running anything (the model's own reading, `testkit::model::
    /// refusal_of`: wrong arity, a misspelled integer, `SET` options that
    /// do not read, a `WINDOW` that declares nothing) must be refused with
    /// those words and change nothing — not a byte of the log, not a byte
    /// of memory; any other is the command it parses to.
    fn run_args(&mut self, args: &[Vec<u8>], planned: &PlannedOp, observer: &mut dyn Observer) -> Step<bool> {
        let shown = || planned.to_string();
        let Some(refusal) = model::refusal_of(args) else {
            return match Command::parse(args) {
                Ok(command) => self.run_command(&command, planned, observer),
                Err(e) => Err(self.fail(Check::Reply, format!("{}: the store refused what Redis reads: {e}", shown()))),
            };
        };
        observer.op_begins(self, planned, Moment::Begins, None);
        let before = (self.log_position(), self.store().used_memory(), self.store().key_count());
        let result = self.store_mut().execute_args(args);
        let reply_hash = result.as_ref().map_or(0, hash_reply);
        let index = self.op_index;
        self.vfs.with_trace(|t| {
            t.push(Event::Reply { index, hash: reply_hash });
            t.note_reply(|| reply_text::store_reply(&result));
        });
        let after = (self.log_position(), self.store().used_memory(), self.store().key_count());
        match result {
            Err(Error::Invalid(why)) if why.contains(refusal.words()) && before == after => {
                self.outcome.bad_inputs_refused += 1;
                Ok(false)
            }
            other => Err(self.fail(
                Check::Reply,
                format!(
                    "{}: Redis refuses it ({}), the store answered {other:?}{}",
                    shown(),
                    refusal.words(),
                    if before == after { "" } else { " and changed its log or memory" }
                ),
            )),
        }
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
        self.outcome.clean_restarts += 1;
        let remount = self.outcome.restart_process(&self.vfs, closed.is_ok());
        self.recover(remount.as_ref())?;
        if let (Some(before), Ok(()), None) = (before, closed, remount) {
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

    /// A second opener tries the live store's directory — to write on even
    /// indices, read-only on odd ones — and must be refused as locked,
    /// having changed nothing: no byte on disk, not the first holder's lock.
    fn second_open(&mut self, planned: &PlannedOp) -> Step<bool> {
        let dir = Path::new(DB_DIR);
        let (changes, holders) = (self.vfs.changes(), self.vfs.lock_holders(dir));
        let read_only = planned.index % 2 == 1;
        let result = if read_only {
            Store::open_read_only(self.engine_vfs.clone(), self.clock.clone(), dir)
        } else {
            let options = Options { fsync: self.config.fsync, point_in_time: self.config.point_in_time };
            Store::open(self.engine_vfs.clone(), self.clock.clone(), dir, options)
        };
        if self.vfs.crash_point_reached() {
            drop(result);
            return self.power_loss(&planned.op).map(|()| true);
        }
        let how = if read_only { "a read-only" } else { "a writing" };
        match result {
            Err(Error::Locked { .. }) => {}
            Err(_) if self.vfs.faults_injected_this_op() => {}
            Err(e) => {
                return Err(self.fail(Check::Lock, format!("{how} second opener was refused, but not as locked: {e}")))
            }
            Ok(_) => return Err(self.fail(Check::Lock, format!("{how} second opener of a live store was let in"))),
        }
        if self.vfs.changes() != changes || self.vfs.lock_holders(dir) != holders {
            return Err(self.fail(Check::Lock, format!("{how} refused second opener changed the disk or the lock")));
        }
        Ok(false)
    }

    /// Cut the power during `op` and check the recovery — or, when `op`
    /// reached its planned crash point and the seed's coin says so, kill
    /// the process there instead (see [`Driver::kill_in_op`]).
    pub fn power_loss(&mut self, op: &Op) -> Step {
        if self.vfs.crash_point_reached() && seeds::kill_in_op(self.config.seed, self.op_index) {
            return self.kill_in_op(op);
        }
        self.store = None;
        // A crash aimed at a mark happens at that mark, whatever the
        // engine went on to do in memory before it noticed.
        let at_mark = match self.planned_crash {
            Some(CrashPoint::AtMark(phase)) if self.vfs.crash_point_reached() => Some(phase),
            _ => self.vfs.last_mark(),
        };
        *self.outcome.crash_gaps.entry(crash_gap(op, at_mark)).or_default() += 1;
        let crash = self.outcome.lose_power(&self.vfs, seeds::crash(self.config.seed, self.op_index));
        self.recover(Some(&crash))
    }

    /// The crash point inside `op` is a process kill: the store's memory is
    /// gone, the page cache keeps what `op` wrote before the point. Reopen
    /// and check; then, by a second coin, lose the power too — the
    /// recovery must not have built on bytes (or names) the dead process
    /// never made durable without making them durable itself.
    fn kill_in_op(&mut self, op: &Op) -> Step {
        *self.outcome.crash_gaps.entry("kill_in_op").or_default() += 1;
        self.process_crash()?;
        if seeds::power_after_kill(self.config.seed, self.op_index) {
            // The crash point was disarmed by the restart: a plain power loss.
            return self.power_loss(op);
        }
        Ok(())
    }

    /// The run's first open, crashing at `point` (a power loss, or a kill
    /// by the same coin as inside an operation): whatever the creation left
    /// must reopen as an empty store.
    pub fn create_crashing(&mut self, point: CrashPoint) -> Step {
        self.vfs.begin_op(seeds::initial_open(self.config.seed));
        self.vfs.set_faults_enabled(false);
        self.vfs.arm_crash(Some(point));
        let opened = self.open_store();
        self.vfs.set_faults_enabled(true);
        if !self.vfs.crash_point_reached() {
            self.vfs.arm_crash(None);
            let (store, _) =
                opened.map_err(|e| self.fail(Check::Open, format!("an empty directory did not open: {e}")))?;
            self.store = Some(store);
            self.call_failed_since_open = false;
            return Ok(());
        }
        drop(opened);
        *self.outcome.crash_gaps.entry("create").or_default() += 1;
        self.power_loss(&Op::Restart)
    }

    /// The process dies (memory lost, page cache kept) and the store is
    /// reopened and checked.
    pub fn process_crash(&mut self) -> Step {
        self.outcome.kills += 1;
        self.process_restart_and_recover()
    }

    /// A store an operation left poisoned is closed by a process restart
    /// (page cache kept) and reopened and checked: counted apart from
    /// kills (`error_reopens`), the same event in the trace.
    pub fn reopen_poisoned(&mut self) -> Step {
        self.outcome.error_reopens += 1;
        self.process_restart_and_recover()
    }

    fn process_restart_and_recover(&mut self) -> Step {
        self.store = None;
        let remount = self.outcome.restart_process(&self.vfs, false);
        self.recover(remount.as_ref())
    }

    /// A read-only inspection of the directory as the crash left it,
    /// before the recovery (a quarter of them, by the seed): it must change
    /// no byte. What it read is returned for [`Driver::compare_inspection`];
    /// `None` if it refused (it may: a directory the crash left without a
    /// store is nothing to inspect, and damage may refuse it).
    fn inspect_read_only(&mut self) -> Step<Option<BTreeMap<Vec<u8>, engine::store::LogicalEntry>>> {
        if !seeds::inspect_read_only(self.config.seed, self.op_index) {
            return Ok(None);
        }
        self.inspect_now()
    }

    /// The read-only inspection of [`Driver::inspect_read_only`], whatever
    /// the seed's coin says (exploration inspects every crash image).
    pub fn inspect_now(&mut self) -> Step<Option<BTreeMap<Vec<u8>, engine::store::LogicalEntry>>> {
        let dir = Path::new(DB_DIR);
        self.vfs.set_observing(true);
        let before = self.vfs.files(dir);
        let opened = Store::open_read_only(self.engine_vfs.clone(), self.clock.clone(), dir);
        let seen = opened.ok().and_then(|(store, _)| store.logical_dump().ok());
        self.vfs.set_observing(false);
        self.directory_unchanged(&before, Check::Inspect, "a read-only open")?;
        self.outcome.inspections += 1;
        Ok(seen)
    }

    /// The inspection saw what the recovery then opened, where both opened
    /// on an undamaged directory outside point-in-time mode (a torn tail
    /// the recovery cuts is one the inspection stopped at too).
    pub fn compare_inspection(&self, seen: &BTreeMap<Vec<u8>, engine::store::LogicalEntry>, damaged: bool) -> Step {
        if damaged || self.config.point_in_time {
            return Ok(());
        }
        // Compared as the store walks its content; the recovered dump is
        // built only for a report.
        let mut seen_entries = seen.iter();
        let mut same = true;
        let visited = self.store().logical_visit(|key, entry| {
            same = same && seen_entries.next().is_some_and(|(k, e)| k.as_slice() == key && e.view() == entry);
        });
        visited.map_err(|e| self.fail(Check::Dump, e.to_string()))?;
        if same && seen_entries.next().is_none() {
            return Ok(());
        }
        let recovered = self.store().logical_dump().map_err(|e| self.fail(Check::Dump, e.to_string()))?;
        Err(self.fail(
            Check::Inspect,
            format!(
                "the read-only inspection saw other content than the recovery:\n{}",
                crate::checker::diff(&recovered, seen)
            ),
        ))
    }

    /// Recover the disk as it is, after a power loss that left `damage`
    /// (`sim explore --damage` placed it), by the rule above; whether the
    /// store opened (else it refused the damage, changing nothing).
    pub fn recover_damaged(&mut self, damage: Vec<Damage>) -> Step<bool> {
        assert!(!damage.is_empty(), "an undamaged disk is exploration's plain recovery");
        let refusals = self.outcome.refusals_accepted;
        self.recover(Some(&CrashOutcome { damage, ..CrashOutcome::default() }))?;
        Ok(self.outcome.refusals_accepted == refusals)
    }

    /// Reopen after a power loss (`crash`) or a restart, and check what
    /// came back (see "Recovery's rule" in the module doc).
    fn recover(&mut self, crash: Option<&CrashOutcome>) -> Step {
        self.outcome.restarts += 1;
        let inspected = self.inspect_read_only()?;
        let damage: Vec<Damage> = crash.map_or_else(Vec::new, |c| c.damage.clone());
        let damaged = !damage.is_empty();
        let Some(Reopened { store, report, before, at_crash, faulted }) = self.reopen(&damage)? else {
            return self.accept_refusal();
        };
        self.vfs.with_trace(|t| t.note(|| format!("recovery report: {report:?}")));
        self.sweep_skipped = report.sweep_skipped;
        // Damage to the manifest's newest records, which nothing later
        // vouched for, may take a registration with it undetectably (a
        // torn tail to any format): its seq may then be handed out again.
        let manifest = Path::new(DB_DIR).join(MANIFEST_FILE);
        if damage.iter().any(|d| Path::new(&d.path) == manifest && !d.vouched) {
            self.segment_seqs.clear();
        }
        self.store = Some(store);
        self.call_failed_since_open = false;
        if let Some(before) = &before {
            self.check_nothing_destroyed(&report, before, &damage)?;
            self.check_replayed_before_damage(&report, before, at_crash.as_ref(), &damage)?;
        }
        // A fault in the recovery may change what it finds (a failed fsync
        // drops the dirty pages the inspection read): compared only without.
        if let (Some(seen), false) = (&inspected, faulted) {
            self.compare_inspection(seen, damaged)?;
        }
        self.judge_recovered(crash.is_some(), &damage)
    }

    /// Open the store after a crash that left `damage`, retrying an open
    /// a fault failed: it opened, or (`None`) it refused the damage having
    /// changed nothing, to be accepted; any other refusal is a failure.
    fn reopen(&mut self, damage: &[Damage]) -> Step<Option<Reopened>> {
        let damaged = !damage.is_empty();
        // What the directory held before each open attempt, when a refusal
        // must have changed nothing or a point-in-time open lost nothing.
        let watch = damaged || self.config.point_in_time;
        let mut faulted = false;
        let mut at_crash = None;
        for attempt in 0..=OPEN_ATTEMPTS_WITH_FAULTS {
            let before = watch.then(|| self.vfs.files(Path::new(DB_DIR)));
            self.vfs.begin_op(seeds::open_attempt(self.config.seed, self.op_index, attempt));
            self.vfs.set_faults_enabled(attempt < OPEN_ATTEMPTS_WITH_FAULTS);
            let result = self.open_store();
            let injected = self.vfs.faults_injected_this_op();
            faulted |= injected;
            self.vfs.set_faults_enabled(true);
            match result {
                Ok((store, report)) => return Ok(Some(Reopened { store, report, before, at_crash, faulted })),
                Err(e @ Error::Corrupt { .. }) if injected && !damaged => {
                    return Err(self.fail(Check::Open, transient_fault_called_corruption(&e)));
                }
                Err(_) if injected && attempt < OPEN_ATTEMPTS_WITH_FAULTS => {
                    if attempt == 0 {
                        at_crash = before;
                    }
                    continue;
                }
                Err(Error::Corrupt { .. }) if damaged => {
                    self.check_untouched(before.as_ref().expect("watched when damaged"))?;
                    return Ok(None);
                }
                Err(e) => {
                    let why = if damaged { format!(" (damage injected: {damage:?})") } else { String::new() };
                    return Err(self.fail(Check::Open, format!("the store refused to open after a crash: {e}{why}")));
                }
            }
        }
        unreachable!("the last attempt, with faults off, returns")
    }

    /// The reopened store's content against the checker (after a power
    /// loss: `power_lost`), down to the floor `damage` allows, then its
    /// audit and the seq ledger.
    fn judge_recovered(&mut self, power_lost: bool, damage: &[Damage]) -> Step {
        let damaged = !damage.is_empty();
        let floor = self.floor(damage);
        let now_ms = self.now_ms();
        let store = self.store.as_ref().expect("opened by recover");
        // Read as the store walks its content (no dump).
        match self.checker.recovered_store(store, now_ms, power_lost, floor) {
            Ok(Ok(_)) => self.outcome.came_back += u64::from(self.checker.take_came_back()),
            Ok(Err(mismatch)) => {
                let why =
                    if damaged { format!("\n    damage injected: {damage:?}, floor {floor:?}") } else { String::new() };
                return Err(self.fail(Check::Durability, format!("{}{why}", mismatch.detail)));
            }
            // Damaged bytes refused on read, as they must be.
            Err(Error::Corrupt { .. }) if damaged => return self.accept_refusal(),
            Err(e) => return Err(self.fail(Check::Dump, format!("logical_dump failed after recovery: {e}"))),
        }
        let violations = self.audit_fault_free();
        if !violations.is_empty() {
            if damaged {
                // The audit found the damage: a refusal to trust it.
                return self.accept_refusal();
            }
            return Err(self.fail(Check::Audit, format!("after recovery: {violations:?}")));
        }
        self.check_seqs(true)
    }

    /// Fail if a segment file now bears a seq the run-wide ledger knows
    /// from a different file; with `registered` (a clean audit just saw
    /// the directory), note every segment file in it in the ledger.
    fn check_seqs(&mut self, registered: bool) -> Step {
        let mut reused = None;
        let record = registered && !self.sweep_skipped;
        self.vfs.visit_entries(Path::new(DB_DIR), |name, inode| {
            let Some(seq) = segment_seq(name) else { return };
            match self.segment_seqs.get(&seq) {
                None if record => {
                    self.segment_seqs.insert(seq, (name.to_string(), inode));
                }
                Some((first_name, first_inode))
                    if reused.is_none() && (first_name.as_str(), *first_inode) != (name, inode) =>
                {
                    reused = Some(format!(
                        "segment seq {seq} was {first_name} (inode {first_inode}); now it is {name} (inode {inode})"
                    ));
                }
                _ => {}
            }
        });
        match reused {
            Some(why) => Err(self.fail(Check::SeqReuse, why)),
            None => Ok(()),
        }
    }

    /// How far back a recovery after `damage` may go (see [`Floor`]): to
    /// the damaged byte of the log, where a point-in-time recovery cuts,
    /// and so may the default one where the damage was unvouched (no later
    /// durable write could have recorded that the bytes were durable, so no
    /// file format tells the damage from a torn write). Everywhere else
    /// nothing may be lost.
    fn floor(&self, damage: &[Damage]) -> Floor {
        let log = Path::new(DB_DIR).join(AOF_FILE);
        let cut_there = |d: &&Damage| {
            Path::new(&d.path) == log
                && match d.kind {
                    DamageKind::Media | DamageKind::LostWrite | DamageKind::MisdirectedWrite => {
                        self.config.point_in_time || !d.vouched
                    }
                    DamageKind::JunkPrepended => self.config.point_in_time,
                    _ => false,
                }
        };
        // The earliest such damage: a silent write fault leaves two (its
        // place and where it landed), and the cut is at the first.
        let Some(damage) = damage.iter().filter(cut_there).min_by_key(|d| d.offset_bytes) else {
            return Floor::Durable;
        };
        match self.vfs.identity(&log) {
            Some((file, _)) => Floor::DamagedAt(LogPosition { file, len_bytes: damage.offset_bytes }),
            None => Floor::Durable,
        }
    }

    /// Where the log ends now: for each acknowledged write, so a damage
    /// floor knows which writes lie wholly before the damage.
    fn log_position(&self) -> Option<LogPosition> {
        let (file, len_bytes) = self.vfs.identity(&self.log_path)?;
        Some(LogPosition { file, len_bytes })
    }

    /// A refused open after damage changed nothing on disk.
    fn check_untouched(&self, before: &BTreeMap<String, Vec<u8>>) -> Step {
        self.directory_unchanged(before, Check::Untouched, "an open that refused damage")
    }

    /// Fail `check` unless the store's directory holds exactly `before`,
    /// naming the files `who` changed.
    fn directory_unchanged(&self, before: &BTreeMap<String, Vec<u8>>, check: Check, who: &str) -> Step {
        let after = self.vfs.files(Path::new(DB_DIR));
        if after == *before {
            return Ok(());
        }
        let changed: std::collections::BTreeSet<&String> =
            before.keys().chain(after.keys()).filter(|name| before.get(*name) != after.get(*name)).collect();
        Err(self.fail(check, format!("{who} changed the directory: {changed:?}")))
    }

    /// After an open that watched the directory: a file the store does not
    /// own (a stray) is never removed; a point-in-time open removes no file
    /// at all, and every byte it cut from the log is in its quarantine file.
    /// The manifest and the log are replayed as prefixes: whatever an open
    /// that took them kept, it read from their first byte up to a cut. No
    /// changed byte may lie inside that prefix — damage is refused or cut
    /// at, never replayed. This sees what the content cannot: a record
    /// misdirected onto the place of the record before it and accepted
    /// there (a checksum that forgot its place) replays a ledger no prefix
    /// of the manifest ever held, yet one the sweep may tidy into an
    /// honest-looking registry. A file an earlier, failed open attempt
    /// already rewrote (its cut at the damage, a mark after it) no longer
    /// holds what the damage left (`at_crash`, the directory before the
    /// first attempt, differs): the offsets no longer apply to it.
    fn check_replayed_before_damage(
        &self,
        report: &RecoveryReport,
        before: &BTreeMap<String, Vec<u8>>,
        at_crash: Option<&BTreeMap<String, Vec<u8>>>,
        damage: &[Damage],
    ) -> Step {
        let manifest_len = before.get(MANIFEST_FILE).map_or(0, |bytes| bytes.len() as u64);
        let prefixes = [
            (MANIFEST_FILE, manifest_len.saturating_sub(report.manifest_torn_bytes)),
            (AOF_FILE, report.aof.valid_len_bytes),
        ];
        for changed in damage.iter().filter(|d| d.kind.changes_bytes_in_place()) {
            let name = Path::new(&changed.path).file_name().map(|n| n.to_string_lossy().into_owned());
            let Some((file, replayed_bytes)) = prefixes.iter().find(|(file, _)| name.as_deref() == Some(*file)) else {
                continue;
            };
            if at_crash.is_some_and(|at_crash| at_crash.get(*file) != before.get(*file)) {
                continue;
            }
            if *replayed_bytes > changed.offset_bytes {
                return Err(self.fail(
                    Check::Durability,
                    format!(
                        "the open replayed {file} through byte {replayed_bytes}, past byte {} that damage changed \
                         ({:?}): damage must be refused or cut at, never replayed",
                        changed.offset_bytes, changed.kind
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_nothing_destroyed(
        &self,
        report: &RecoveryReport,
        before: &BTreeMap<String, Vec<u8>>,
        damage: &[Damage],
    ) -> Step {
        let after = self.vfs.files(Path::new(DB_DIR));
        for stray in damage.iter().filter(|d| d.kind == DamageKind::StrayFile) {
            let name = Path::new(&stray.path).file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|name| !after.contains_key(&name)) {
                return Err(
                    self.fail(Check::Destroyed, format!("the open removed {}, a file it does not own", stray.path))
                );
            }
        }
        if !self.config.point_in_time {
            return Ok(());
        }
        let gone: Vec<&String> = before.keys().filter(|name| !after.contains_key(*name)).collect();
        if !gone.is_empty() {
            return Err(self.fail(Check::Destroyed, format!("a point-in-time open removed {gone:?}")));
        }
        let cut_bytes = report.aof.dropped_bytes;
        if cut_bytes == 0 {
            return Ok(());
        }
        let log_before = before.get(AOF_FILE).map_or(&[][..], Vec::as_slice);
        let log_after = after.get(AOF_FILE).map_or(&[][..], Vec::as_slice);
        let valid_len = report.aof.valid_len_bytes as usize;
        let quarantined = report.aof.quarantine_file.as_ref().and_then(|name| after.get(name));
        let kept = valid_len <= log_before.len() && log_after.get(..valid_len) == log_before.get(..valid_len);
        let moved = quarantined.is_some_and(|q| log_before.get(valid_len..) == Some(q.as_slice()));
        if kept && moved {
            return Ok(());
        }
        Err(self.fail(
            Check::Destroyed,
            format!(
                "a point-in-time cut at byte {valid_len} lost bytes: the log's prefix kept: {kept}, the {cut_bytes} \
                 bytes after it in the quarantine file ({:?}): {moved}",
                report.aof.quarantine_file
            ),
        ))
    }

    /// Damage made the store refuse, as it may: start over on an empty
    /// directory (the refusal itself was the check).
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
        // A new store: its seqs start afresh.
        self.segment_seqs.clear();
        self.declare_windows()
    }

    /// The store's audit with faults off: an observation, not part of the
    /// workload (it lists the directory, and a failed listing would only
    /// test the observer).
    pub fn audit_fault_free(&mut self) -> Vec<engine::store::Violation> {
        self.vfs.set_observing(true);
        let violations = self.store().audit();
        self.vfs.set_observing(false);
        violations
    }

    /// The audit, then the content compared with the model as the store
    /// walks it (a dump, every value copied, is built only for a report).
    pub fn audit(&mut self) -> Step {
        let violations = self.audit_fault_free();
        if !violations.is_empty() {
            return Err(self.fail(Check::Audit, format!("{violations:?}")));
        }
        self.check_seqs(true)?;
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

/// The seq in a segment file's name (`row-<hex table>-<seq>.seg`).
fn segment_seq(name: &str) -> Option<u64> {
    let stem = name.strip_prefix("row-")?.strip_suffix(".seg")?;
    stem.rsplit_once('-')?.1.parse().ok()
}

/// Where a crash landed, for the gap counters.
fn crash_gap(op: &Op, last_mark: Option<Phase>) -> &'static str {
    // Compaction ends a rewrite (a FLUSHALL's too) or an open: wherever it
    // ran, a crash after one of its marks is in its gaps.
    if last_mark.is_some_and(|mark| Phase::MANIFEST_COMPACT.contains(&mark)) {
        return "compact";
    }
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
