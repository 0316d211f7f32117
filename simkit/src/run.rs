//! A kit target's workload on the one run loop (`harness`): the engine on
//! the simulated disk, driven by the kit's transactional key-value
//! workload, every reply checked against the model as it runs and every
//! recovery held to the model's durability rule (`model.rs`). The same
//! workload serves every adapter; it is also the recording run of `sim
//! explore` (with `contexts` noted).
//!
//! The loop (`harness/run_loop.rs`) owns the failure model every engine
//! shares: crash points taken as power losses or process kills, the reopen
//! after an error under an injected fault, open attempts and power losses
//! inside a recovery, hazards, the audit cadence. What is the kit's:
//!
//! - An engine may latch its first I/O error (redb answers `PreviousIo`
//!   from then on); a failed commit may or may not have landed. So any
//!   error while a fault was injected ends the operation with a reopen
//!   ([`Ended::Failed`]), and the commit that failed is in doubt. An error
//!   with no fault injected is a failure.
//! - Dropping an engine's handles may write (redb's `Drop` commits): after
//!   an error the model lets everything acknowledged come back.
//! - A process kill's recovery is held to the kill's rule first
//!   (`Model::allows_after_kill`): the page cache kept every byte, but
//!   for what a failed fsync dropped (`Model::page_cache_dropped`).
//! - Every persistence hazard the disk flags at an operation's end fails
//!   the run unless the adapter declares it (`Spec::hazards`).
//! - The kit observes the engine's content (after a recovery, and every
//!   few operations) with faults switched off: an observation is not part
//!   of the workload, and a fault in it would only test the observer. The
//!   workload's own `GET` and `SCAN` run with faults on.
//!
//! The engine's directory exists, durably, before the first open, and the
//! adapter's `create` (the application's setup) runs fault-free.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use vfs::Vfs;

use super::adapter::{maintenance_of, OtherWrite};
use super::client::{call, Reply};
use super::config::KitConfig;
use super::model::{diff, Accepted, Model, Pending, State};
use super::pause_vfs::{PausePoint, PausingVfs};
use super::readers::OpenReaders;
use super::workload::{KitOp, PlannedKitOp};
use super::{Adapter, Env, KitError, Promise};
use simulator::disk::{CrashPoint, Hazard, SimVfs};
use simulator::failure::{Check, Failure};
use simulator::harness::{Ended, Harness, Loop, OpenFailed, Reopening, Settings, Step, Workload};
use simulator::outcome::SeedOutcome;
use simulator::seam::{RecordedContext, RecordedOperation};
use simulator::trace::{hash_debug, Event, Trace};

mod reply_check;

/// The engine's directory on the simulated disk.
pub const DB_DIR: &str = "/db";

/// The committed content, table by table.
pub(super) fn read_all<A: Adapter>(
    adapter: &A,
    config: &KitConfig<A::Config>,
    db: &mut A::Db,
) -> Result<State, KitError> {
    let mut state = State::empty(config.spec.tables.len());
    for (table, rows) in state.tables.iter_mut().enumerate() {
        *rows = adapter.read_committed(db, table)?;
    }
    Ok(state)
}

/// The environment of one open on `vfs`.
/// With `pause` (`--interleave`), the engine sees the disk through the
/// run's pause points (`pause_vfs.rs`).
pub(super) fn env<'a, A: Adapter>(
    vfs: &Arc<SimVfs>,
    config: &'a KitConfig<A::Config>,
    plant: Option<A::Plant>,
    pause: Option<&Arc<PausePoint>>,
) -> Env<'a, A> {
    let vfs: Arc<dyn Vfs> = match pause {
        Some(pause) => Arc::new(PausingVfs { disk: vfs.clone(), pause: pause.clone() }),
        None => vfs.clone(),
    };
    Env { vfs, dir: Path::new(DB_DIR), config: &config.engine, plant, sector_bytes: config.disk.sector_bytes }
}

/// Make the engine's directory (empty, with `replace`) and run the
/// adapter's setup, fault-free.
pub(super) fn create<A: Adapter>(adapter: &A, env: &Env<'_, A>, replace: bool) -> Result<(), KitError> {
    env.vfs.create_dir_all(env.dir)?;
    if replace {
        for name in env.vfs.list_dir(env.dir)? {
            env.vfs.unlink(&env.dir.join(name))?;
        }
    }
    adapter.create(env)?;
    env.vfs.sync_dir(env.dir)?;
    Ok(())
}

/// A kit target's seed on the one run loop (`harness`): the loop owns the
/// crashes, kills, reopens and audit cadence; [`KvRun`] the engine.
pub(super) type Runner<'a, A> = Loop<KvRun<'a, A>>;

/// A run of `adapter` for `config`'s seed on `vfs`, its failures reproduced
/// by `repro`.
pub(super) fn runner<'a, A: Adapter>(
    adapter: &'a A,
    config: &'a KitConfig<A::Config>,
    plant: Option<A::Plant>,
    repro: String,
    vfs: Arc<SimVfs>,
) -> Runner<'a, A> {
    let interleaves = config.interleave && config.clients > 1;
    let pause = interleaves.then(|| PausePoint::new(vfs.clone()));
    let h = Harness::new(vfs, config.seed, repro);
    let w = KvRun {
        pause,
        adapter,
        config,
        plant,
        db: None,
        model: Model::new(config.spec.tables.len()),
        contexts: None,
        operations: Vec::new(),
        open_error: None,
        readers: OpenReaders::default(),
        fault_unheard: false,
        dirty_drops_seen: 0,
        deferred_writes: Vec::new(),
    };
    Loop::new(h, w)
}

/// The transactional key-value workload: the adapter's engine, the model
/// every reply and recovery is held to (see the module doc).
pub(super) struct KvRun<'a, A: Adapter> {
    pub adapter: &'a A,
    pub config: &'a KitConfig<A::Config>,
    pub plant: Option<A::Plant>,
    pub db: Option<A::Db>,
    pub model: Model,
    /// While recording for `sim explore`: the model at every operation
    /// (what a recovery there is held to, with what the operation may
    /// publish pending).
    pub contexts: Option<Vec<RecordedContext<Model>>>,
    /// While recording: every maintenance operation run, with its crash
    /// indices (what `sim explore` says its workload reached).
    pub operations: Vec<RecordedOperation>,
    /// The error of the last failed open attempt.
    open_error: Option<KitError>,
    /// The readers open beside the writer, with what each must see.
    pub(super) readers: OpenReaders,
    /// With `--interleave` (and readers): where a reader's step can run
    /// inside the writer's operation (`pause_vfs.rs`, `interleave.rs`).
    pub(super) pause: Option<Arc<PausePoint>>,
    /// Whether, since the database was opened, a fault was injected in an
    /// operation that returned `Ok`: a failure no caller heard, which may
    /// have poisoned the engine (`Spec::poisoned_after_fault`).
    fault_unheard: bool,
    /// The disk's count of fsyncs that dropped dirty pages, when the model
    /// last heard of them ([`KvRun::note_dropped_pages`]).
    dirty_drops_seen: u64,
    /// A second writer's commits inside the writer's commit, waiting for
    /// it to be concluded (`second_writer.rs`).
    pub(super) deferred_writes: Vec<OtherWrite>,
}

impl<A: Adapter> KvRun<'_, A> {
    /// If a failed fsync dropped dirty pages since the model last heard,
    /// tell it: what only the page cache held so far is no longer what a
    /// process kill must keep (`Model::page_cache_dropped`).
    fn note_dropped_pages(&mut self, h: &Harness) {
        let drops = h.vfs.dirty_drops();
        debug_assert!(drops >= self.dirty_drops_seen, "the disk's count only grows");
        if drops != self.dirty_drops_seen {
            self.dirty_drops_seen = drops;
            self.model.page_cache_dropped();
        }
    }

    pub(super) fn db(&mut self) -> &mut A::Db {
        self.db.as_mut().expect("a database is open between operations")
    }

    /// While recording: recoveries from here on are judged by the model as
    /// it is now. `what` is formatted only then: the random mode records
    /// nothing, and pays nothing.
    pub(super) fn note_context(&mut self, h: &Harness, what: &dyn fmt::Display) {
        if let Some(contexts) = &mut self.contexts {
            let what = what.to_string();
            contexts.push(RecordedContext { first_io_index: h.vfs.io_count(), what, context: self.model.clone() });
        }
    }

    /// The committed content, read fault-free (an observation).
    /// Refused as busy while readers are open, by an engine whose writer
    /// waits for them, the readers end and it is read again (see
    /// `writer_call`).
    fn observe(&mut self, h: &mut Harness) -> Result<State, KitError> {
        let (adapter, config) = (self.adapter, self.config);
        match h.fault_free(|| read_all(adapter, config, self.db())) {
            Err(e) if self.writer_waits_for_readers(&e) => {
                h.outcome.counters.busy_waits += 1;
                h.fault_free(|| {
                    self.end_readers()?;
                    read_all(adapter, config, self.db())
                })
            }
            other => other,
        }
    }

    /// Create a fresh database, fault-free, and open it (with `replace`,
    /// on an emptied directory). A failure here is a failure to open.
    fn create_db(&mut self, h: &Harness, replace: bool) -> Step {
        let created = h.fault_free(|| {
            let env = env::<A>(&h.vfs, self.config, self.plant, self.pause.as_ref());
            create(self.adapter, &env, replace)?;
            self.adapter.open(&env)
        });
        debug_assert!(self.readers.is_empty(), "no reader outlives the database it read");
        match created {
            Ok(db) => {
                self.db = Some(db);
                self.fault_unheard = false;
            }
            Err(e) => return Err(h.fail(Check::Open, format!("a fresh database could not be created: {e}"))),
        }
        Ok(())
    }

    /// Whether `reopening` follows damage the engine promises to detect.
    fn damaged(&self, reopening: &Reopening) -> bool {
        self.config.spec.detects_damage && reopening.crash().is_some_and(|crash| !crash.media_corrupted.is_empty())
    }

    /// Whether the engine may refuse to open with `error`: it says the
    /// bytes are damaged, and damage was announced or a commit promised
    /// nothing.
    fn refusal_allowed(&self, damaged: bool, error: &KitError) -> bool {
        error.kind == super::ErrorKind::Corrupt && (damaged || self.model.unpromised())
    }

    /// Count what a recovery after announced damage came to.
    fn count_after_damage(h: &mut Harness, verdict: &Result<Accepted, String>) {
        let outcome = match verdict {
            Ok(Accepted::SilentRollback) => "silent-rollback",
            Ok(Accepted::DamageRollback) => "rolled-back",
            _ => "as-allowed",
        };
        h.outcome.counters.count_after_damage(outcome);
    }

    /// The end of an operation's engine call: a crash point, a fault
    /// (reopen) or an error with no fault (a failure). `Ok(Ok(value))`
    /// carries an `Ok` result for the caller to check.
    pub(super) fn conclude<T>(
        h: &Harness,
        planned: &PlannedKitOp,
        result: Result<T, KitError>,
    ) -> Result<Result<T, Ended>, Failure> {
        if h.vfs.crash_point_reached() {
            return Ok(Err(Ended::CrashPoint));
        }
        match result {
            Ok(value) => Ok(Ok(value)),
            Err(_) if h.vfs.faults_injected_this_op() => Ok(Err(Ended::Failed)),
            Err(e) => {
                let admin = matches!(planned.op, KitOp::Maintain(_) | KitOp::Restart);
                let check = if admin { Check::Admin } else { Check::Reply };
                Err(h.fail(check, format!("{planned}: failed with no fault injected: {e}")))
            }
        }
    }

    pub(super) fn trace_reply(h: &Harness, hash: u64) {
        let index = h.op_index;
        h.vfs.with_trace(|t| t.push(Event::Reply { index, hash }));
    }

    /// One of the engine's own operations, its reply checked.
    fn engine_op(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Step<Ended> {
        self.note_dropped_pages(h);
        if planned.op.may_write() && self.config.spec.promises_nothing() {
            // An engine that promises nothing at every level may write
            // unsynced before any commit returns (SQLite with
            // synchronous=OFF spills uncommitted pages into the database
            // without a synced journal): a power loss from here on may
            // leave anything, whether or not a commit was acknowledged.
            self.model.unpromise();
        }
        if let KitOp::Commit { level, .. } = &planned.op {
            if self.config.promise(*level) != Promise::Volatile {
                self.model.set_pending(Pending::Commit(self.model.commit_target()));
            }
        }
        self.note_context(h, planned);
        let result = match &planned.op {
            KitOp::Maintain(_) => self.maintain_call(h, planned)?,
            _ => self.writer_call(h, planned)?,
        };
        Self::trace_reply(h, result.as_ref().map_or(0, hash_debug));
        h.vfs.with_trace(|t| t.note_reply(|| super::reply_text::kit_reply(&result)));
        if result.is_ok() && h.vfs.faults_injected_this_op() {
            self.readers.writer_survived_fault();
            self.fault_unheard = true;
        }
        // Before the commit joins the history: a durable commit acknowledged
        // after its own fsync dropped pages then ends the drop's excuse (the
        // durable point moves past it) instead of being excused by it.
        self.note_dropped_pages(h);
        if let KitOp::Commit { level, .. } = &planned.op {
            self.commit_concluded(h, *level, result.is_ok());
        }
        self.settle_deferred_writes(h, result.is_ok());
        if self.poison_accepted(h, &result) {
            h.outcome.counters.poisoned += 1;
            return Ok(Ended::Failed);
        }
        match Self::conclude(h, planned, result)? {
            Ok(reply) => self.check_reply(h, &planned.op, planned, reply).map(|()| Ended::Done),
            Err(ended) => Ok(ended),
        }
    }

    /// Whether `result` is the engine's refusal, as its spec documents, for
    /// a fault met since the open that no caller heard
    /// ([`super::Spec::poisoned_after_fault`]): the end of this instance,
    /// as a failure with its fault would be (the kit reopens).
    fn poison_accepted<T>(&self, h: &Harness, result: &Result<T, KitError>) -> bool {
        let poisoned = matches!(result, Err(e) if e.kind == super::ErrorKind::Poisoned);
        poisoned
            && self.fault_unheard
            && self.config.spec.poisoned_after_fault.is_some()
            && !h.vfs.crash_point_reached()
            && !h.vfs.faults_injected_this_op()
    }

    /// The writer's operation on the engine, a reader's step inside it if
    /// one is drawn (`interleave.rs`). Refused as busy while readers are
    /// open, by an engine whose writer waits for its readers
    /// ([`super::Readers::writer_waits`]), it is retried once after every
    /// reader ends — what an application's busy handler does. Any other
    /// `Busy` stays an error (a failure, with no fault injected).
    fn writer_call(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Result<Result<Reply, KitError>, Failure> {
        let adapter = self.adapter;
        self.arm_pause(planned);
        let first = call(adapter, self.db(), &planned.op);
        self.absorb_pauses(h, planned)?;
        Ok(match first {
            Err(e) if self.writer_waits_for_readers(&e) => {
                h.outcome.counters.busy_waits += 1;
                self.end_readers().and_then(|()| call(adapter, self.db(), &planned.op))
            }
            other => other,
        })
    }

    /// The engine's maintenance that changes no content: the readers end
    /// first unless they stay open across it, and only then may one step
    /// inside it (a WAL checkpoint between its copy and its truncate).
    fn maintain_call(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Result<Result<Reply, KitError>, Failure> {
        if let Err(e) = self.readers_before_maintenance() {
            return Ok(Err(e));
        }
        let across = self.config.spec.readers.is_some_and(|readers| readers.across_maintenance);
        if across {
            self.arm_pause(planned);
        }
        let result = call(self.adapter, self.db(), &planned.op);
        self.absorb_pauses(h, planned)?;
        Ok(result)
    }

    /// A commit at `level` returned `Ok` (`acknowledged`), or an error, or a
    /// crash point cut it short: tell the model, and count a commit left in
    /// doubt (a volatile one promised nothing to doubt).
    fn commit_concluded(&mut self, h: &mut Harness, level: usize, acknowledged: bool) {
        if acknowledged {
            // A commit that changed nothing is empty to an engine that
            // writes only what changed: it settles no doubt about the
            // writer's lock (SQLite's deferred `BEGIN` takes no lock for an
            // empty one and its `COMMIT` touches no file, so a hot journal a
            // failed `ROLLBACK` left is still there: `readers.rs`), and it
            // may have synced nothing (`Spec::empty_commit_makes_durable`).
            let empty = self.model.changes_nothing();
            if !empty {
                self.readers.writer_acknowledged();
            }
            // Whatever happens next (a crash point after the reply too),
            // the user was told.
            let (promise, survives_kill) = self.config.acknowledged(level, empty);
            let before = self.model.committed_shared();
            self.model.commit_with(promise, survives_kill);
            if !Arc::ptr_eq(&before, &self.model.committed_shared()) {
                self.readers.writer_committed(h.op_index);
            }
            return;
        }
        // Only an error the engine returned is documented as a rollback; a
        // commit a crash cut short never returned at all.
        let documented_rollback =
            self.config.spec.levels[level].failed_commit_rolls_back && !h.vfs.crash_point_reached();
        if documented_rollback {
            self.model.commit_rolled_back();
        } else if self.config.promise(level) != Promise::Volatile {
            h.outcome.counters.in_doubt += 1;
        }
    }

    /// A maintenance operation that aborts the write transaction and, if
    /// it returns `Ok`, has made everything committed durable.
    fn maintain(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Step<Ended> {
        self.model.abort();
        self.model.set_pending(Pending::PublishAll);
        self.note_context(h, planned);
        let result = self.readers_before_maintenance().and_then(|()| {
            let adapter = self.adapter;
            let db = self.db();
            adapter.abort(db).and_then(|()| maintenance_of(adapter).maintain(db))
        });
        if result.is_ok() {
            self.model.all_durable();
        }
        Self::trace_reply(h, u64::from(result.is_ok()));
        let ended = Self::conclude(h, planned, result)?.err().unwrap_or(Ended::Done);
        if ended == Ended::Done {
            self.model.clear_pending();
        }
        Ok(ended)
    }

    /// Clean close: if it returns `Ok` (and the engine says a close makes
    /// everything durable), the reopened database must hold exactly what
    /// was committed ([`Workload::restarted`]).
    fn close(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Step<Ended> {
        self.model.abort();
        self.model.set_pending(Pending::PublishAll);
        self.note_context(h, planned);
        let result = self.end_readers().and_then(|()| {
            let db = self.db.take().expect("a database is open between operations");
            self.adapter.close(db)
        });
        if result.is_ok() && self.config.spec.close_makes_durable {
            self.model.all_durable();
        }
        Self::trace_reply(h, u64::from(result.is_ok()));
        if let Err(ended) = Self::conclude(h, planned, result)? {
            return Ok(ended);
        }
        self.note_context(h, &format_args!("{planned} (reopening)"));
        Ok(Ended::Closed)
    }
}

impl<A: Adapter> Workload for KvRun<'_, A> {
    type Op = PlannedKitOp;

    fn settings(&self) -> Settings {
        Settings {
            audit_every: self.config.audit_every,
            p_crash_in_recovery: self.config.p_crash_in_recovery,
            crash_in_creation: None,
        }
    }

    fn planned(op: &PlannedKitOp) -> (u64, Option<CrashPoint>) {
        (op.index, op.crash)
    }

    fn tag(op: &PlannedKitOp) -> &'static str {
        op.op.tag()
    }

    fn final_restart(index: u64) -> PlannedKitOp {
        PlannedKitOp { index, op: KitOp::Restart, crash: None }
    }

    /// The first open, on an empty disk, fault-free.
    fn create(&mut self, h: &mut Harness) -> Step {
        self.create_db(h, false)?;
        self.model = Model::new(self.config.spec.tables.len());
        Ok(())
    }

    fn execute(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Step<Ended> {
        // Each handler notes the recording's context once what the
        // operation may publish is marked pending.
        match &planned.op {
            KitOp::Restart => self.close(h, planned),
            KitOp::Crash => {
                self.note_context(h, planned);
                self.model.abort();
                Ok(Ended::PowerLoss)
            }
            KitOp::Maintain(m) if m.makes_durable => self.maintain(h, planned),
            KitOp::Reader { reader, step } => self.reader_op(h, planned, *reader, step),
            _ => match self.second_writer_between(h, planned)? {
                Some(ended) => Ok(ended),
                None => self.engine_op(h, planned),
            },
        }
    }

    fn gap(&self, _h: &Harness, planned: &PlannedKitOp) -> &'static str {
        match planned.op {
            KitOp::Crash => "boundary",
            _ => planned.op.tag(),
        }
    }

    /// While recording: a maintenance operation that began at I/O
    /// `first_io_index` is over (see [`KvRun::operations`]).
    fn op_ended(&mut self, h: &mut Harness, planned: &PlannedKitOp, first_io_index: u64) -> Step {
        if let (KitOp::Maintain(maintenance), Some(_)) = (&planned.op, &self.contexts) {
            let io_indices = first_io_index..h.vfs.io_count();
            self.operations.push(RecordedOperation { name: maintenance.name.to_uppercase(), io_indices });
        }
        Ok(())
    }

    fn is_open(&self) -> bool {
        self.db.is_some()
    }

    fn drop_engine(&mut self, _h: &mut Harness) {
        self.readers.clear();
        self.db = None;
    }

    /// The handles are dropped, which may be a close that writes (redb's
    /// commits pending volatile transactions), so everything acknowledged
    /// may come back too.
    fn before_error_reopen(&mut self, _h: &mut Harness) {
        self.model.set_pending(Pending::PublishAll);
    }

    fn try_open(&mut self, h: &mut Harness, _reopening: &Reopening) -> Step<bool> {
        debug_assert!(self.db.is_none(), "an open attempt finds the handles dropped");
        match self.adapter.open(&env::<A>(&h.vfs, self.config, self.plant, self.pause.as_ref())) {
            Ok(db) => {
                debug_assert!(self.readers.is_empty(), "no reader outlives the database it read");
                self.db = Some(db);
                self.fault_unheard = false;
                Ok(true)
            }
            Err(e) => {
                self.open_error = Some(e);
                Ok(false)
            }
        }
    }

    fn open_failed(&mut self, h: &mut Harness, reopening: &Reopening, injected: bool, last: bool) -> Step<OpenFailed> {
        let damaged = self.damaged(reopening);
        let e = self.open_error.take().expect("a failed open attempt keeps its error");
        if injected && !last {
            return Ok(OpenFailed::Retry);
        }
        if self.refusal_allowed(damaged, &e) {
            h.vfs.with_trace(|t| t.note(|| format!("recovery: the engine refused to open (allowed): {e}")));
            return Ok(OpenFailed::Refused);
        }
        let media = if damaged { " (damage was announced)" } else { "" };
        Err(h.fail(Check::Open, format!("the engine refused to open after a crash{media}: {e}")))
    }

    /// Damage (or a level that promised nothing) made the engine refuse,
    /// as it may: start over on a new database (the refusal itself was the
    /// check).
    fn accept_refusal(&mut self, h: &mut Harness) -> Step {
        if self.model.unpromised() {
            h.outcome.counters.unpromised += 1;
        } else {
            h.outcome.counters.count_after_damage("refused");
            h.outcome.counters.refusals_accepted += 1;
        }
        self.db = None;
        self.create_db(h, true)?;
        self.model = Model::new(self.config.spec.tables.len());
        Ok(())
    }

    /// Read what a reopen brought back, fault-free, and judge it.
    fn judge_recovered(&mut self, h: &mut Harness, reopening: &Reopening) -> Step {
        let damaged = self.damaged(reopening);
        let state = match self.observe(h) {
            Ok(state) => state,
            Err(e) if self.refusal_allowed(damaged, &e) => return self.accept_refusal(h),
            Err(e) => return Err(h.fail(Check::Open, format!("the engine opened but reading its content failed: {e}"))),
        };
        // An fsync that failed in a reader's step or in the recovery may
        // have dropped what only the page cache held.
        self.note_dropped_pages(h);
        if matches!(reopening, Reopening::Kill) {
            // The page cache kept every byte the dead process wrote, but
            // for what a failed fsync dropped since.
            self.model.allows_after_kill(&state).map_err(|detail| h.fail(Check::Durability, detail))?;
        }
        let verdict = self.model.recovered(&state, damaged, reopening.power_lost());
        if damaged {
            Self::count_after_damage(h, &verdict);
        }
        match verdict {
            Ok(Accepted::SilentRollback) => h.outcome.counters.silent_rollbacks += 1,
            Ok(Accepted::DamageRollback) => h.outcome.counters.refusals_accepted += 1,
            Ok(Accepted::Unpromised) => h.outcome.counters.unpromised += 1,
            Ok(Accepted::CameBack) => h.outcome.counters.came_back += 1,
            Ok(_) => {}
            Err(detail) => return Err(h.fail(Check::Durability, detail)),
        }
        Ok(())
    }

    /// Closed cleanly and reopened: nothing may be missing or extra.
    fn restarted(&mut self, h: &mut Harness, _reopening: &Reopening) -> Step {
        self.audit(h)
    }

    /// The committed content must be the model's, whole.
    fn audit(&mut self, h: &mut Harness) -> Step {
        match self.observe(h) {
            Ok(got) if got == *self.model.committed() => Ok(()),
            Ok(got) => Err(h.fail(
                Check::Content,
                format!("the committed content differs from the model:\n{}", diff(self.model.committed(), &got)),
            )),
            Err(e) => Err(h.fail(Check::Content, format!("reading the committed content failed, fault-free: {e}"))),
        }
    }

    /// Every hazard the adapter declares (`Spec::hazards`) is documented.
    fn documents(&self, hazard: &Hazard) -> bool {
        self.config.spec.hazards.iter().any(|d| d.covers(hazard))
    }

    fn settled(&self, planned: &PlannedKitOp) {
        debug_assert!(self.model.nothing_pending(), "{planned}: its end settled what it might publish");
    }
}

/// Run `ops` for `config`'s seed on a fresh simulated disk (see the module
/// doc), through the loop's one entry point (`Loop::run_to_outcome`):
/// never panics, a panic in the engine or the adapter is a failure.
pub(super) fn run_ops<A: Adapter>(
    adapter: &A,
    config: &KitConfig<A::Config>,
    plant: Option<A::Plant>,
    repro: String,
    ops: &[PlannedKitOp],
    keep_trace: bool,
) -> SeedOutcome {
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::new(keep_trace)));
    runner(adapter, config, plant, repro, vfs).run_to_outcome(ops, keep_trace)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use vfs::{OpenMode, Vfs};

    use super::*;
    use crate::test_engine::Buffered;
    use crate::{DocumentedHazard, Kit, KitSettings};

    /// The test engine, documenting its `-journal` files' hazard (as
    /// SQLite documents its journals').
    const JOURNALED: Buffered = Buffered {
        hazards: &[DocumentedHazard { file_suffix: "-journal", documented: "the test's own" }],
        ..Buffered::HONEST
    };

    /// A file fsynced under a name that is not durable yet, then the
    /// database's own (durably named) file fsynced, relying on it: the
    /// hazard the disk flags.
    fn make_hazard(vfs: &SimVfs, name: &str) {
        let dir = Path::new("/db");
        let database = vfs.list_dir(dir).unwrap().into_iter().next().expect("the database's file");
        let mut unnamed = vfs.open(&dir.join(name), OpenMode::Create).unwrap();
        unnamed.write_at(0, b"bytes").unwrap();
        unnamed.sync().unwrap();
        vfs.open(&dir.join(database), OpenMode::Write).unwrap().sync().unwrap();
    }

    /// [`make_hazard`]'s file moved before the database's fsync relies on
    /// it: renamed to `then` (`replace`: another new file renamed over its
    /// name instead, so nothing names it). The hazard is found under its
    /// new name or its number alone.
    fn make_hazard_then_move(vfs: &SimVfs, name: &str, then: &str, replace: bool) {
        let dir = Path::new("/db");
        let database = vfs.list_dir(dir).unwrap().into_iter().next().expect("the database's file");
        let mut unnamed = vfs.open(&dir.join(name), OpenMode::Create).unwrap();
        unnamed.write_at(0, b"bytes").unwrap();
        unnamed.sync().unwrap();
        if replace {
            drop(vfs.open(&dir.join(then), OpenMode::Create).unwrap());
            vfs.rename(&dir.join(then), &dir.join(name)).unwrap();
        } else {
            vfs.rename(&dir.join(name), &dir.join(then)).unwrap();
        }
        vfs.open(&dir.join(database), OpenMode::Write).unwrap().sync().unwrap();
    }

    /// A declaration by suffix covers a file that bore the name when it
    /// was fsynced, renamed away or replaced before it was relied on; a
    /// file that never bore a declared name still fails the run.
    #[test]
    fn a_documented_hazard_covers_its_file_by_identity() {
        let kit = Kit::new(JOURNALED, KitSettings::default());
        let config = kit.config(1, None);
        // No fault may strike the test's own I/O.
        let disk = simulator::disk::DiskConfig::fault_free(config.disk.crash_mode, config.disk.sector_bytes);
        for replace in [false, true] {
            let vfs = Arc::new(SimVfs::new(disk.clone(), simulator::trace::Trace::new(false)));
            let mut runner = super::runner(&kit.adapter, &config, None, String::new(), vfs.clone());
            runner.start().unwrap();
            vfs.begin_op(9);
            make_hazard_then_move(&vfs, "fresh-journal", "fresh-old", replace);
            let result = runner.hazards();
            assert!(result.is_ok(), "replace {replace}: {:?}", result.err().map(|f| f.detail));
            assert!(runner.h.outcome.counters.hazards >= 1, "replace {replace}: counted");

            vfs.begin_op(10);
            make_hazard_then_move(&vfs, "fresh-shm", "fresh-old2", replace);
            let failure = runner.hazards().unwrap_err();
            assert_eq!(failure.check, Check::Hazard);
            assert!(failure.detail.contains("(earlier /db/fresh-shm"), "replace {replace}: {}", failure.detail);
        }
    }

    /// A kit run counts its process kills (a crash point inside an
    /// operation taken as a kill), and every reopen of a passing run has
    /// one cause (`run_ops` asserts it).
    #[test]
    fn a_kit_run_counts_its_process_kills() {
        use simulator::seam::Target;
        let kit = Kit::new(Buffered::HONEST, KitSettings::default());
        let mut kills = 0;
        for seed in 0..30 {
            let outcome = kit.run(seed, &kit.generate(seed), false);
            assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
            assert_eq!(outcome.counters.kills, outcome.counters.crash_gaps.get("kill_in_op").copied().unwrap_or(0));
            kills += outcome.counters.kills;
        }
        assert!(kills > 0, "no process kill in 30 seeds");
    }

    /// An engine that declares no hazard fails the run on one; an engine
    /// that documents it (as SQLite does its journals) has it counted.
    #[test]
    fn a_hazard_fails_the_run_unless_the_engine_documents_it() {
        let kit = Kit::new(Buffered::HONEST, KitSettings::default());
        let config = kit.config(1, None);
        let vfs = Arc::new(SimVfs::new(config.disk.clone(), simulator::trace::Trace::new(false)));
        let mut runner = super::runner(&kit.adapter, &config, None, String::new(), vfs.clone());
        runner.start().unwrap();
        make_hazard(&vfs, "data-journal");
        let failure = runner.hazards().unwrap_err();
        assert_eq!(failure.check, Check::Hazard);
        assert!(failure.detail.contains("data-journal") && failure.detail.contains("Spec::hazards"));

        let kit = Kit::new(JOURNALED, KitSettings::default());
        let config = kit.config(1, None);
        let vfs = Arc::new(SimVfs::new(config.disk.clone(), simulator::trace::Trace::new(false)));
        let mut runner = super::runner(&kit.adapter, &config, None, String::new(), vfs.clone());
        runner.start().unwrap();
        make_hazard(&vfs, "fresh-journal");
        assert!(runner.hazards().is_ok());
        assert_eq!(runner.h.outcome.counters.hazards, 1);
        make_hazard(&vfs, "fresh-shm");
        assert_eq!(runner.hazards().unwrap_err().check, Check::Hazard, "only the files it documents");
    }
}
