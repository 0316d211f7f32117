//! The segsim engine as a workload of the one run loop (`harness`): its
//! commands, clock, TTLs, windowed tables and eviction, the checker's
//! bookkeeping done the one way it is done, and segsim's own checks (the
//! layout across a clean restart, the seq ledger, audits, read-only
//! inspection, point-in-time recovery) as the workload's hooks.
//!
//! Every mode drives the store through this type on a [`Loop`]: the random
//! mode (`run.rs`), exhaustive exploration's recording run
//! (`systems/segsim/record.rs`, which watches each operation begin through
//! an [`Observer`]) and its probe of each recovered crash state
//! (`systems/segsim/recover.rs`). The durability bounds therefore come from
//! one piece of code: `acknowledged` after a write's reply,
//! `call_succeeded` after every successful store call, `uncertain` for a
//! write whose fate a crash or a poisoning left open, `all_durable` after a
//! sync, a rewrite or a clean close.
//!
//! - `ops.rs`: running one operation and checking its reply;
//! - `recovery.rs`: reopening after a crash, and recovery's rule (below);
//! - `ledger.rs`: the seq ledger, the damage floor, the directory checks.
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

mod ledger;
mod ops;
mod recovery;
pub(crate) mod reply_hash;
pub(crate) mod reply_text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::store::{Command, Options, RecoveryReport, Store, AOF_FILE};
use engine::vfs::Vfs;
use engine::{Error, Phase};

use crate::checker::Checker;
use crate::config::{Config, Overrides};
use crate::workload::{Op, PlannedOp};
use simulator::disk::{CrashPoint, SimVfs};
use simulator::failure::Check;
use simulator::harness::{Ended, Harness, Loop, OpenFailed, Reopening, Settings, Step, Workload};
use testkit::transcript::Transcript;

/// Where the store lives on the simulated disk.
pub const DB_DIR: &str = "/db";

/// The failure of an open that met an injected transient fault and
/// refused as corrupt: such a fault is no damage, so it may fail an open,
/// but only as what it is (the random mode's reopens and `sim explore
/// --faults` hold an open to this one rule).
pub fn transient_fault_called_corruption(error: &Error) -> String {
    format!("a transient fault during the open was reported as corruption: {error}")
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

/// A run of the segsim engine on the one loop.
pub type SegsimLoop<'a> = Loop<Driver<'a>>;

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

/// A recovery under way: what the attempts to open have seen.
#[derive(Default)]
struct Reopen {
    /// What the read-only inspection before the recovery saw, if it ran
    /// and opened.
    inspected: Option<Transcript>,
    /// Open attempts made so far.
    attempts: u64,
    /// Any attempt met an injected fault.
    faulted: bool,
    /// The directory before the latest attempt, when watched.
    before: Option<BTreeMap<String, Vec<u8>>>,
    /// What the directory held before the first attempt, if an earlier
    /// attempt failed (`None`: the first opened, and this is `before`).
    at_crash: Option<BTreeMap<String, Vec<u8>>>,
    /// The latest attempt's error, if it failed.
    error: Option<Error>,
    /// The report of the attempt that opened.
    report: Option<RecoveryReport>,
}

/// The store, its clock and disk, and the checker, for one run.
pub struct Driver<'a> {
    config: &'a Config,
    settings: Settings,
    /// The simulated disk, for control (faults, crashes, trace): the
    /// loop's disk.
    vfs: Arc<SimVfs>,
    /// What the engine is given: the disk itself, or a test's wrapper.
    engine_vfs: Arc<dyn Vfs>,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    checker: Checker,
    /// Watches each operation begin (exploration's recording).
    observer: Option<&'a mut dyn Observer>,
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
    /// The disk's names counter ([`SimVfs::names_changes`]) and the
    /// `record` of the last walk of the seq ledger that passed: with no
    /// name changed since, a walk that records no more finds the same.
    seqs_checked: Option<(u64, bool)>,
    /// The last open skipped its sweep (point-in-time): unregistered
    /// segment files may stay, and the audit does not hold the directory
    /// to the manifest, so it vouches for no file's registration.
    sweep_skipped: bool,
    /// A store call failed since the last open. Its memory may then hold
    /// what its log does not (a row promoted for a write whose frame
    /// never landed), which no reader can see but a reopen undoes: the
    /// layout is compared across a clean restart only when this is false.
    call_failed_since_open: bool,
    /// The layout before the clean close under way, when it is compared.
    layout_before_close: Option<Layout>,
    /// The recovery under way.
    reopen: Reopen,
    /// `DB_DIR/AOF_FILE`, joined once: [`Driver::log_position`] looks
    /// it up after every acknowledged write.
    log_path: PathBuf,
}

impl<'a> Driver<'a> {
    /// A driver for `config`'s seed on `vfs`, the engine seeing
    /// `engine_vfs` (the disk, or a test's wrapper of it), time from
    /// `clock`. No store is open yet: the loop's start opens it.
    pub fn new(config: &'a Config, vfs: Arc<SimVfs>, engine_vfs: Arc<dyn Vfs>, clock: Arc<ManualClock>) -> Self {
        let settings = Settings { audit_every: config.audit_every, p_crash_in_recovery: 0.0, crash_in_creation: None };
        Driver {
            config,
            settings,
            vfs,
            engine_vfs,
            clock,
            store: None,
            checker: Checker::new(config.fsync),
            observer: None,
            planned_crash: None,
            call_failed_since_open: false,
            segment_seqs: BTreeMap::new(),
            seqs_checked: None,
            sweep_skipped: false,
            layout_before_close: None,
            reopen: Reopen::default(),
            log_path: Path::new(DB_DIR).join(AOF_FILE),
        }
    }

    /// The driver on the one loop, its failures reproduced with
    /// `overrides`' flags.
    pub fn into_loop(self, overrides: &Overrides) -> SegsimLoop<'a> {
        let repro = Config::repro(self.config.seed, overrides, "");
        Loop::new(Harness::new(self.vfs.clone(), self.config.seed, repro), self)
    }

    /// With the loop's settings `settings` (a crash in the creation, the
    /// audit cadence).
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// Watched by `observer` as each operation begins.
    pub fn observed_by(&mut self, observer: &'a mut dyn Observer) {
        self.observer = Some(observer);
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

    /// Tell the observer, if any, that `planned` reaches `moment`.
    fn observe(&mut self, planned: &PlannedOp, moment: Moment, in_flight: Option<&Command>) {
        if let Some(observer) = self.observer.take() {
            observer.op_begins(self, planned, moment, in_flight);
            self.observer = Some(observer);
        }
    }

    fn open_store(&self) -> engine::Result<(Store, RecoveryReport)> {
        let options = Options { fsync: self.config.fsync, point_in_time: self.config.point_in_time };
        Store::open(self.engine_vfs.clone(), self.clock.clone(), Path::new(DB_DIR), options)
    }

    /// Open the store on the disk as it is, with faults off (exploration's
    /// recovery of a crash image).
    pub fn open(&mut self) -> engine::Result<()> {
        self.vfs.begin_op(simulator::seeds::initial_open(self.config.seed));
        self.vfs.set_faults_enabled(false);
        let opened = self.open_store();
        self.vfs.set_faults_enabled(true);
        let (store, _) = opened?;
        self.store = Some(store);
        self.call_failed_since_open = false;
        Ok(())
    }

    /// Declare the workload's windowed tables on a fresh store (their
    /// declarations are the first operations; a wipe needs them again).
    fn declare_windows(&mut self, h: &Harness) -> Step {
        for table in &self.config.tables {
            let command = Command::Window {
                table: table.name.clone().into_bytes(),
                column: table.column.clone().into_bytes(),
                span: table.span,
            };
            let result = h.fault_free(|| self.store_mut().execute(&command));
            if let Err(e) = result {
                return Err(h.fail(Check::Open, format!("a fault-free WINDOW failed on a fresh store: {e}")));
            }
        }
        Ok(())
    }
}

impl Workload for Driver<'_> {
    type Op = PlannedOp;

    fn settings(&self) -> Settings {
        self.settings
    }

    fn planned(op: &PlannedOp) -> (u64, Option<CrashPoint>) {
        (op.index, op.crash)
    }

    fn tag(op: &PlannedOp) -> &'static str {
        op.op.tag()
    }

    fn final_restart(index: u64) -> PlannedOp {
        PlannedOp { index, op: Op::Restart, crash: None }
    }

    /// The run's first open, with faults off (a crash point may be armed:
    /// whatever the creation left must then reopen as an empty store).
    fn create(&mut self, h: &mut Harness) -> Step {
        let opened = h.fault_free(|| self.open_store());
        if h.vfs.crash_point_reached() {
            return Ok(());
        }
        let (store, _) = opened.map_err(|e| h.fail(Check::Open, format!("an empty directory did not open: {e}")))?;
        self.store = Some(store);
        self.call_failed_since_open = false;
        Ok(())
    }

    fn execute(&mut self, h: &mut Harness, planned: &PlannedOp) -> Step<Ended> {
        self.planned_crash = planned.crash;
        let was_poisoned = self.store().poisoned().is_some();
        let ended = self.run_op(h, planned)?;
        if ended != Ended::Done {
            return Ok(ended);
        }
        let Some(why) = self.store().poisoned() else { return Ok(Ended::Done) };
        // Poisoned: it refuses writes until reopened. Only an injected
        // fault may do that, as any other error.
        if !was_poisoned && !h.vfs.faults_injected_this_op() {
            let why = why.to_string();
            return Err(h.fail(Check::Poisoned, format!("the store poisoned itself with no fault injected: {why}")));
        }
        Ok(Ended::Failed)
    }

    fn gap(&self, h: &Harness, planned: &PlannedOp) -> &'static str {
        // A crash aimed at a mark happens at that mark, whatever the
        // engine went on to do in memory before it noticed.
        let at_mark = match self.planned_crash {
            Some(CrashPoint::AtMark(name)) if h.vfs.crash_point_reached() => Some(name),
            _ => h.vfs.last_mark(),
        };
        let at_mark = at_mark.map(|name| Phase::parse(name).expect("segsim marks only its own phases"));
        crash_gap(&planned.op, at_mark)
    }

    /// Every operation ends with the seq ledger consulted.
    fn op_ended(&mut self, h: &mut Harness, _: &PlannedOp, _: u64) -> Step {
        self.check_seqs(h, false)
    }

    fn is_open(&self) -> bool {
        self.store.is_some()
    }

    fn drop_engine(&mut self, _: &mut Harness) {
        self.store = None;
    }

    fn before_reopen(&mut self, h: &mut Harness, _: &Reopening) -> Step {
        self.reopen = Reopen::default();
        self.reopen.inspected = self.inspect_read_only(h)?;
        Ok(())
    }

    fn try_open(&mut self, h: &mut Harness, reopening: &Reopening) -> Step<bool> {
        Ok(self.try_reopen(h, reopening))
    }

    fn open_failed(&mut self, h: &mut Harness, reopening: &Reopening, injected: bool, last: bool) -> Step<OpenFailed> {
        self.reopen_failed(h, reopening, injected, last)
    }

    fn accept_refusal(&mut self, h: &mut Harness) -> Step {
        self.start_over(h)
    }

    fn judge_recovered(&mut self, h: &mut Harness, reopening: &Reopening) -> Step {
        self.judge_reopened(h, reopening)
    }

    /// Closed cleanly and reopened — not remounted — with no call failed
    /// before the close: the same rows cold, in as many segments.
    fn restarted(&mut self, h: &mut Harness, reopening: &Reopening) -> Step {
        let Some(before) = self.layout_before_close.take() else { return Ok(()) };
        if reopening.power_lost() {
            return Ok(());
        }
        let after = Layout::of(self.store());
        if after == before {
            return Ok(());
        }
        Err(h.fail(
            Check::Layout,
            format!("a clean restart changed where rows live: before close {before:?}, after reopen {after:?}"),
        ))
    }

    fn audit(&mut self, h: &mut Harness) -> Step {
        self.audit_content(h)
    }

    fn settled(&self, planned: &PlannedOp) {
        debug_assert!(self.layout_before_close.is_none(), "{planned}: a clean restart compared its layout");
    }
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
