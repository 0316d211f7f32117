//! Running one seed of a kit target: the engine on the simulated disk,
//! driven by the workload, every reply checked against the model as it
//! runs and every recovery held to the model's durability rule
//! (`model.rs`). The same loop serves every adapter; it is also the
//! recording run of `sim explore` (with `contexts` noted).
//!
//! One thread, every random choice from the seed: the workload, each
//! operation's fault stream (keyed by the seed and the operation's index,
//! so shrinking keeps the faults of the operations it keeps), each
//! crash's choice of surviving writes. The failure model:
//!
//! - An engine may latch its first I/O error (redb answers `PreviousIo`
//!   from then on); a failed commit may or may not have landed. So any
//!   error while a fault was injected ends the operation with a reopen —
//!   half the time after a power loss, half the time after a plain process
//!   restart (the page cache survives) — and the commit that failed is in
//!   doubt. An error with no fault injected is a failure.
//! - Dropping an engine's handles may write (redb's `Drop` commits). At a
//!   power loss nothing may reach the disk any more, so the handles are
//!   dropped with the crash point reached: every I/O they attempt fails,
//!   as it would with the power off.
//! - A crash point reached inside an operation is, one time in four (the
//!   seed's coin, as in segsim's random mode), a process kill instead: the
//!   handles are dropped the same way, the page cache keeps what was
//!   written before the point, the engine reopens, and by a second coin
//!   the power goes too.
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

use engine::vfs::Vfs;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::client::{call, Reply};
use super::config::KitConfig;
use super::model::{diff, show_value, Accepted, Model, Pending, State};
use super::workload::{KitOp, PlannedKitOp};
use super::{Adapter, Env, KitError, Promise};
use crate::disk::{CrashOutcome, CrashPoint, SimVfs};
use crate::failure::{catch_failure, Check, Failure};
use crate::outcome::SeedOutcome;
use crate::seam::{RecordedContext, RecordedOperation};
use crate::seeds;
use crate::trace::{hash_debug, Event, Trace};

/// The engine's directory on the simulated disk.
pub const DB_DIR: &str = "/db";

/// Open attempts with faults on before the last one without them (an
/// injected read error is transient, not a refusal).
const OPEN_ATTEMPTS_WITH_FAULTS: u64 = 3;

/// Power losses inside one operation's recovery, at most.
const MAX_CRASHES_IN_RECOVERY: u64 = 3;

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
pub(super) fn env<'a, A: Adapter>(
    vfs: &Arc<SimVfs>,
    config: &'a KitConfig<A::Config>,
    plant: Option<A::Plant>,
) -> Env<'a, A> {
    let vfs: Arc<dyn Vfs> = vfs.clone();
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

type Step = Result<(), Failure>;

/// Why the engine is reopened: what its recovery is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reopening {
    /// After a power loss (or the remount a shut-down file system stands
    /// for); `damaged`: it left damage the engine promises to detect.
    PowerLoss { damaged: bool },
    /// After a process kill: no power lost, the page cache kept, so the
    /// kill's stricter rule holds first.
    Kill,
    /// After a close, clean or after an error.
    Restart,
}

/// One seed's run (see the module doc).
pub(super) struct Runner<'a, A: Adapter> {
    pub adapter: &'a A,
    pub config: &'a KitConfig<A::Config>,
    pub plant: Option<A::Plant>,
    /// The command line that reruns this seed.
    pub repro: String,
    pub vfs: Arc<SimVfs>,
    pub db: Option<A::Db>,
    pub model: Model,
    pub outcome: SeedOutcome,
    pub op_index: u64,
    /// While recording for `sim explore`: the model at every operation
    /// (what a recovery there is held to, with what the operation may
    /// publish pending).
    pub contexts: Option<Vec<RecordedContext<Model>>>,
    /// While recording: every maintenance operation run, with its crash
    /// indices (what `sim explore` says its workload reached).
    pub operations: Vec<RecordedOperation>,
}

impl<'a, A: Adapter> Runner<'a, A> {
    pub fn new(
        adapter: &'a A,
        config: &'a KitConfig<A::Config>,
        plant: Option<A::Plant>,
        repro: String,
        vfs: Arc<SimVfs>,
    ) -> Self {
        Runner {
            adapter,
            config,
            plant,
            repro,
            vfs,
            db: None,
            model: Model::new(config.spec.tables.len()),
            outcome: SeedOutcome { seed: config.seed, ..SeedOutcome::default() },
            op_index: 0,
            contexts: None,
            operations: Vec::new(),
        }
    }

    /// A failure of `check` at the current operation, with the trace's
    /// last events and the seed's repro.
    pub fn fail(&self, check: Check, detail: impl Into<String>) -> Failure {
        Failure::in_run(&self.vfs, self.config.seed, self.op_index, check, detail.into(), self.repro.clone())
    }

    fn db(&mut self) -> &mut A::Db {
        self.db.as_mut().expect("a database is open between operations")
    }

    /// While recording: recoveries from here on are judged by the model as
    /// it is now. `what` is formatted only then: the random mode records
    /// nothing, and pays nothing.
    fn note_context(&mut self, what: &dyn fmt::Display) {
        if let Some(contexts) = &mut self.contexts {
            let what = what.to_string();
            contexts.push(RecordedContext { first_io_index: self.vfs.io_count(), what, context: self.model.clone() });
        }
    }

    /// Run `f` with faults off (an observation, see the module doc).
    fn fault_free<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.vfs.set_faults_enabled(false);
        let result = f(self);
        self.vfs.set_faults_enabled(true);
        result
    }

    /// The committed content, read fault-free (an observation).
    fn observe(&mut self) -> Result<State, KitError> {
        self.fault_free(|r| {
            let (adapter, config) = (r.adapter, r.config);
            read_all(adapter, config, r.db())
        })
    }

    /// The first open, on an empty disk, fault-free.
    pub fn start(&mut self) -> Step {
        self.vfs.begin_op(seeds::initial_open(self.config.seed));
        self.create_db(false)?;
        self.model = Model::new(self.config.spec.tables.len());
        Ok(())
    }

    /// Create a fresh database, fault-free, and open it (with `replace`,
    /// on an emptied directory). A failure here is a failure to open.
    fn create_db(&mut self, replace: bool) -> Step {
        let created = self.fault_free(|r| {
            let env = env::<A>(&r.vfs, r.config, r.plant);
            create(r.adapter, &env, replace)?;
            r.adapter.open(&env)
        });
        match created {
            Ok(db) => self.db = Some(db),
            Err(e) => return Err(self.fail(Check::Open, format!("a fresh database could not be created: {e}"))),
        }
        Ok(())
    }

    /// Power is lost: drop every handle with every I/O failing (see the
    /// module doc), then build the next disk. `depth` counts power losses
    /// inside the recovery from an earlier one.
    fn lose_power(&mut self, depth: u64) -> CrashOutcome {
        self.vfs.arm_crash(Some(CrashPoint::AfterIos(0)));
        self.db = None;
        self.outcome.lose_power(&self.vfs, seeds::kit_crash(self.config.seed, self.op_index) ^ depth)
    }

    fn power_loss(&mut self, gap: &'static str) -> Step {
        *self.outcome.crash_gaps.entry(gap).or_default() += 1;
        let crash = self.lose_power(0);
        self.recover_from(Reopening::PowerLoss { damaged: self.damaged(&crash) }, 0)
    }

    /// The crash point inside an operation is a process kill, by the
    /// seed's coin (as segsim's random mode does): the engine's memory is
    /// gone — its handles dropped with the point reached, so nothing more
    /// is written — while the page cache keeps what it wrote before the
    /// point. Reopen and judge; then, by a second coin, lose the power too:
    /// the recovery must not have built on bytes the dead process never
    /// made durable without making them durable itself.
    fn kill_in_op(&mut self, gap: &'static str) -> Step {
        *self.outcome.crash_gaps.entry("kill_in_op").or_default() += 1;
        self.outcome.kills += 1;
        self.db = None;
        let reopening = self.restart_process(false, Reopening::Kill);
        self.recover_from(reopening, 0)?;
        if seeds::power_after_kill(self.config.seed, self.op_index) {
            return self.power_loss(gap);
        }
        Ok(())
    }

    /// The process restarts ([`SeedOutcome::restart_process`]) for
    /// `cause`: the reopening it is, or a power loss's where the restart
    /// was a remount.
    fn restart_process(&mut self, clean: bool, cause: Reopening) -> Reopening {
        match self.outcome.restart_process(&self.vfs, clean) {
            Some(crash) => Reopening::PowerLoss { damaged: self.damaged(&crash) },
            None => cause,
        }
    }

    /// Whether `crash` damaged bytes the engine promises to detect damage to.
    fn damaged(&self, crash: &CrashOutcome) -> bool {
        self.config.spec.detects_damage && !crash.media_corrupted.is_empty()
    }

    /// The engine failed under an injected fault: close and reopen, half
    /// the time after a power loss. Otherwise the handles are dropped,
    /// which may be a close that writes (redb's commits pending volatile
    /// transactions), so everything acknowledged may come back too.
    fn restart_after_error(&mut self) -> Step {
        if seeds::poisoned_by_power_loss(self.config.seed, self.op_index) {
            return self.power_loss("after_error");
        }
        self.model.set_pending(Pending::PublishAll);
        self.db = None;
        self.outcome.error_reopens += 1;
        let reopening = self.restart_process(false, Reopening::Restart);
        self.recover_from(reopening, 0)
    }

    /// Where power fails inside the recovery numbered `depth` of this
    /// operation, if it does. From the operation's crash stream, so
    /// shrinking keeps it.
    fn crash_in_recovery(&self, depth: u64) -> Option<CrashPoint> {
        if depth >= MAX_CRASHES_IN_RECOVERY || self.config.p_crash_in_recovery == 0.0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seeds::kit_crash_in_recovery(self.config.seed, self.op_index, depth));
        rng.gen_bool(self.config.p_crash_in_recovery).then(|| CrashPoint::AfterIos(rng.gen_range(0..32)))
    }

    /// Reopen (`reopening` says after what), `depth` power losses into
    /// this operation's recovery, and hold what came back to the model. An
    /// engine's open may write (repair), so a power loss there is one more
    /// crash to survive, judged by the same rule.
    fn recover_from(&mut self, reopening: Reopening, depth: u64) -> Step {
        let damaged = reopening == Reopening::PowerLoss { damaged: true };
        self.outcome.restarts += 1;
        for attempt in 0..=OPEN_ATTEMPTS_WITH_FAULTS {
            self.vfs.begin_op(seeds::open_attempt_at_depth(self.config.seed, self.op_index, attempt, depth));
            self.vfs.set_faults_enabled(attempt < OPEN_ATTEMPTS_WITH_FAULTS);
            if attempt == 0 {
                self.vfs.arm_crash(self.crash_in_recovery(depth));
            }
            let opened = self.adapter.open(&env::<A>(&self.vfs, self.config, self.plant));
            let injected = self.vfs.faults_injected_this_op();
            self.vfs.set_faults_enabled(true);
            if self.vfs.crash_point_reached() {
                *self.outcome.crash_gaps.entry("recovery").or_default() += 1;
                self.db = opened.ok();
                let crash = self.lose_power(depth + 1);
                let damaged = damaged || self.damaged(&crash);
                return self.recover_from(Reopening::PowerLoss { damaged }, depth + 1);
            }
            self.vfs.arm_crash(None);
            match opened {
                Ok(db) => {
                    self.db = Some(db);
                    self.vfs.with_trace(|t| t.note(|| "recovery: the engine opened".to_string()));
                    break;
                }
                Err(_) if injected && attempt < OPEN_ATTEMPTS_WITH_FAULTS => continue,
                Err(e) if self.refusal_allowed(damaged, &e) => {
                    self.vfs.with_trace(|t| t.note(|| format!("recovery: the engine refused to open (allowed): {e}")));
                    return self.accept_refusal();
                }
                Err(e) => {
                    let media = if damaged { " (damage was announced)" } else { "" };
                    return Err(self.fail(Check::Open, format!("the engine refused to open after a crash{media}: {e}")));
                }
            }
        }
        self.judge_recovered(reopening)
    }

    /// Read what a reopen brought back, fault-free, and judge it.
    fn judge_recovered(&mut self, reopening: Reopening) -> Step {
        let damaged = reopening == Reopening::PowerLoss { damaged: true };
        let power_lost = matches!(reopening, Reopening::PowerLoss { .. });
        let read = self.observe();
        let state = match read {
            Ok(state) => state,
            Err(e) if self.refusal_allowed(damaged, &e) => return self.accept_refusal(),
            Err(e) => {
                return Err(self.fail(Check::Open, format!("the engine opened but reading its content failed: {e}")))
            }
        };
        if reopening == Reopening::Kill {
            // The page cache kept every byte the dead process wrote.
            self.model.allows_after_kill(&state).map_err(|detail| self.fail(Check::Durability, detail))?;
        }
        let verdict = self.model.recovered(&state, damaged, power_lost);
        if damaged {
            let outcome = match verdict {
                Ok(Accepted::SilentRollback) => "silent-rollback",
                Ok(Accepted::DamageRollback) => "rolled-back",
                _ => "as-allowed",
            };
            *self.outcome.after_damage.entry(outcome).or_default() += 1;
        }
        match verdict {
            Ok(Accepted::SilentRollback) => self.outcome.silent_rollbacks += 1,
            Ok(Accepted::DamageRollback) => self.outcome.refusals_accepted += 1,
            Ok(Accepted::Unpromised) => self.outcome.unpromised += 1,
            Ok(Accepted::CameBack) => self.outcome.came_back += 1,
            Ok(_) => {}
            Err(detail) => return Err(self.fail(Check::Durability, detail)),
        }
        Ok(())
    }

    /// Whether the engine may refuse to open with `error`: it says the
    /// bytes are damaged, and damage was announced or a commit promised
    /// nothing.
    fn refusal_allowed(&self, damaged: bool, error: &KitError) -> bool {
        error.kind == super::ErrorKind::Corrupt && (damaged || self.model.unpromised())
    }

    /// Damage (or a level that promised nothing) made the engine refuse,
    /// as it may: start over on a new database (the refusal itself was the
    /// check).
    fn accept_refusal(&mut self) -> Step {
        if !self.model.unpromised() {
            *self.outcome.after_damage.entry("refused").or_default() += 1;
        }
        if self.model.unpromised() {
            self.outcome.unpromised += 1;
        } else {
            self.outcome.refusals_accepted += 1;
        }
        self.db = None;
        self.create_db(true)?;
        self.model = Model::new(self.config.spec.tables.len());
        Ok(())
    }

    /// The end of an operation's engine call: a crash, a fault (reopen) or
    /// an error with no fault (a failure). `Some` carries an `Ok` result
    /// for the caller to check.
    fn conclude<T>(&mut self, planned: &PlannedKitOp, result: Result<T, KitError>) -> Result<Option<T>, Failure> {
        if self.vfs.crash_point_reached() {
            match seeds::kill_in_op(self.config.seed, self.op_index) {
                true => self.kill_in_op(planned.op.tag())?,
                false => self.power_loss(planned.op.tag())?,
            }
            return Ok(None);
        }
        match result {
            Ok(value) => Ok(Some(value)),
            Err(_) if self.vfs.faults_injected_this_op() => {
                self.restart_after_error()?;
                Ok(None)
            }
            Err(e) => {
                let admin = matches!(planned.op, KitOp::Maintain(_) | KitOp::Restart);
                let check = if admin { Check::Admin } else { Check::Reply };
                Err(self.fail(check, format!("{planned}: failed with no fault injected: {e}")))
            }
        }
    }

    fn trace_reply(&self, hash: u64) {
        let index = self.op_index;
        self.vfs.with_trace(|t| t.push(Event::Reply { index, hash }));
    }

    fn step(&mut self, planned: &PlannedKitOp) -> Step {
        self.op_index = planned.index;
        self.vfs.begin_op(seeds::faults(self.config.seed, planned.index));
        self.vfs.arm_crash(planned.crash);
        let index = planned.index;
        let tag = planned.op.tag();
        self.vfs.with_trace(|t| t.push(Event::Op { index, tag }));
        // Each handler notes the recording's context once what the
        // operation may publish is marked pending.
        let first_io_index = self.vfs.io_count();
        let result = match &planned.op {
            KitOp::Restart => self.restart(planned),
            KitOp::Crash => {
                self.note_context(planned);
                self.model.abort();
                self.power_loss("boundary")
            }
            KitOp::Maintain(m) if m.makes_durable => self.maintain(planned),
            _ => self.engine_op(planned),
        };
        self.vfs.arm_crash(None);
        self.note_operation(planned, first_io_index);
        result
    }

    /// While recording: a maintenance operation that began at I/O
    /// `first_io_index` is over (see [`Runner::operations`]).
    fn note_operation(&mut self, planned: &PlannedKitOp, first_io_index: u64) {
        let KitOp::Maintain(maintenance) = &planned.op else { return };
        if self.contexts.is_some() {
            let io_indices = first_io_index..self.vfs.io_count();
            self.operations.push(RecordedOperation { name: maintenance.name.to_uppercase(), io_indices });
        }
    }

    /// One of the engine's own operations, its reply checked.
    fn engine_op(&mut self, planned: &PlannedKitOp) -> Step {
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
        self.note_context(planned);
        let adapter = self.adapter;
        let result = call(adapter, self.db(), &planned.op);
        self.trace_reply(result.as_ref().map_or(0, hash_debug));
        self.vfs.with_trace(|t| t.note_reply(|| crate::trace::reply_text::kit_reply(&result)));
        if let KitOp::Commit { level, .. } = &planned.op {
            self.commit_concluded(*level, result.is_ok());
        }
        match self.conclude(planned, result)? {
            Some(reply) => self.check_reply(&planned.op, planned, reply),
            None => Ok(()),
        }
    }

    /// A commit at `level` returned `Ok` (`acknowledged`), or an error, or a
    /// crash point cut it short: tell the model, and count a commit left in
    /// doubt (a volatile one promised nothing to doubt).
    fn commit_concluded(&mut self, level: usize, acknowledged: bool) {
        if acknowledged {
            // Whatever happens next (a crash point after the reply too),
            // the user was told.
            let (promise, survives_kill) = self.config.acknowledged(level, !self.model.in_transaction());
            self.model.commit_with(promise, survives_kill);
            return;
        }
        // Only an error the engine returned is documented as a rollback; a
        // commit a crash cut short never returned at all.
        let documented_rollback =
            self.config.spec.levels[level].failed_commit_rolls_back && !self.vfs.crash_point_reached();
        if documented_rollback {
            self.model.commit_rolled_back();
        } else if self.config.promise(level) != Promise::Volatile {
            self.outcome.in_doubt += 1;
        }
    }

    /// Hold `reply` to the model, and apply the operation to it. `line`
    /// (the operation's line) is formatted only into a failure.
    fn check_reply(&mut self, op: &KitOp, line: &dyn fmt::Display, reply: Reply) -> Step {
        let (what, want) = match op {
            KitOp::Put { table, key, value } => ("the value it replaced", self.model.put(table.index, key, value)),
            KitOp::Delete { table, key } => ("the value it removed", self.model.remove(table.index, key)),
            KitOp::Get { table, key } => ("the value read", self.model.get(table.index, key).cloned()),
            KitOp::Scan { table } => return self.check_scan(table.index, line, reply),
            KitOp::Abort => {
                self.model.abort();
                return self.expect_done(line, reply);
            }
            _ => return self.expect_done(line, reply),
        };
        match reply {
            Reply::Done if !matches!(op, KitOp::Get { .. }) => Ok(()),
            Reply::Value(got) if got == want => Ok(()),
            Reply::Value(got) => Err(self.fail(
                Check::Reply,
                format!(
                    "{line}: {what}\n    expected {}\n    got      {}",
                    show_value(want.as_ref()),
                    show_value(got.as_ref())
                ),
            )),
            other => Err(self.fail(Check::Reply, format!("{line}: the adapter answered {other:?}, not a value"))),
        }
    }

    fn check_scan(&mut self, table: usize, line: &dyn fmt::Display, reply: Reply) -> Step {
        let Reply::Rows(got) = reply else {
            return Err(self.fail(Check::Reply, format!("{line}: the adapter answered {reply:?}, not rows")));
        };
        let want = &self.model.visible().tables[table];
        if got == *want {
            return Ok(());
        }
        let where_ = if self.model.in_transaction() { "in the write transaction" } else { "committed" };
        let mut expected = State::empty(self.config.spec.tables.len());
        expected.tables[table] = want.clone();
        let mut seen = State::empty(self.config.spec.tables.len());
        seen.tables[table] = got;
        Err(self.fail(
            Check::Reply,
            format!("{line}: the table read differs from the model ({where_}):\n{}", diff(&expected, &seen)),
        ))
    }

    fn expect_done(&self, line: &dyn fmt::Display, reply: Reply) -> Step {
        match reply {
            Reply::Done => Ok(()),
            other => Err(self.fail(Check::Reply, format!("{line}: the adapter answered {other:?}, expected nothing"))),
        }
    }

    /// A maintenance operation that aborts the write transaction and, if
    /// it returns `Ok`, has made everything committed durable.
    fn maintain(&mut self, planned: &PlannedKitOp) -> Step {
        self.model.abort();
        self.model.set_pending(Pending::PublishAll);
        self.note_context(planned);
        let adapter = self.adapter;
        let db = self.db();
        let result = adapter.abort(db).and_then(|()| adapter.maintain(db));
        if result.is_ok() {
            self.model.all_durable();
        }
        self.trace_reply(u64::from(result.is_ok()));
        self.conclude(planned, result)?;
        self.model.clear_pending();
        Ok(())
    }

    /// Clean close and reopen: if the close returns `Ok`, the reopened
    /// database must hold exactly what was committed.
    fn restart(&mut self, planned: &PlannedKitOp) -> Step {
        self.model.abort();
        self.model.set_pending(Pending::PublishAll);
        self.note_context(planned);
        let db = self.db.take().expect("a database is open between operations");
        let result = self.adapter.close(db);
        if result.is_ok() && self.config.spec.close_makes_durable {
            self.model.all_durable();
        }
        self.trace_reply(u64::from(result.is_ok()));
        if self.conclude(planned, result)?.is_none() {
            return Ok(());
        }
        self.note_context(&format_args!("{planned} (reopening)"));
        self.outcome.clean_restarts += 1;
        let reopening = self.restart_process(true, Reopening::Restart);
        self.recover_from(reopening, 0)?;
        // Closed cleanly and reopened: nothing may be missing or extra.
        self.audit()
    }

    /// The committed content must be the model's, whole.
    pub fn audit(&mut self) -> Step {
        let read = self.observe();
        match read {
            Ok(got) if got == *self.model.committed() => Ok(()),
            Ok(got) => Err(self.fail(
                Check::Content,
                format!("the committed content differs from the model:\n{}", diff(self.model.committed(), &got)),
            )),
            Err(e) => Err(self.fail(Check::Content, format!("reading the committed content failed, fault-free: {e}"))),
        }
    }

    /// The operation ended: every persistence hazard the disk flagged in
    /// it (`disk/hazards.rs`) is one the engine documents — counted — or
    /// the run fails.
    fn hazards(&mut self) -> Step {
        let documented = self.config.spec.hazards;
        for hazard in self.vfs.end_op_hazards() {
            if documented.iter().any(|d| d.covers(&hazard)) {
                self.outcome.hazards += 1;
                continue;
            }
            let why = format!(
                "persistence hazard the engine does not document: {} (if its documentation says it does this, \
                 declare it in Spec::hazards)",
                hazard.describe()
            );
            return Err(self.fail(Check::Hazard, why));
        }
        Ok(())
    }

    /// Create the database, run `ops`, then a clean restart that must
    /// bring back exactly the model.
    pub fn run(&mut self, ops: &[PlannedKitOp]) -> Step {
        self.start()?;
        self.drive(ops)
    }

    /// [`Runner::run`] once the database exists.
    pub fn drive(&mut self, ops: &[PlannedKitOp]) -> Step {
        for planned in ops {
            self.step(planned)?;
            debug_assert!(self.db.is_some(), "a database is open between operations");
            debug_assert!(self.model.nothing_pending(), "{planned}: its end settled what it might publish");
            self.hazards()?;
            self.outcome.ops += 1;
            if (planned.index + 1) % self.config.audit_every == 0 {
                self.audit()?;
            }
        }
        let end = PlannedKitOp { index: ops.last().map_or(0, |p| p.index + 1), op: KitOp::Restart, crash: None };
        self.step(&end)?;
        self.audit()
    }
}

/// Run `ops` for `config`'s seed on a fresh simulated disk (see the module
/// doc). Never panics: a panic in the engine or the adapter is a failure.
pub(super) fn run_ops<A: Adapter>(
    adapter: &A,
    config: &KitConfig<A::Config>,
    plant: Option<A::Plant>,
    repro: String,
    ops: &[PlannedKitOp],
    keep_trace: bool,
) -> SeedOutcome {
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::new(keep_trace)));
    let mut runner = Runner::new(adapter, config, plant, repro, vfs.clone());
    let failure = match catch_failure(|| runner.run(ops)) {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err((check, message)) => Some(runner.fail(check, message)),
    };
    let mut outcome = std::mem::take(&mut runner.outcome);
    // Drop the engine's handles before reading the trace (a close may write).
    let closing = catch_failure(move || drop(runner));
    outcome.failure = failure.or_else(|| {
        closing.err().map(|(check, message)| Failure {
            seed: config.seed,
            op_index: u64::MAX,
            check,
            detail: format!("dropping the database at the end of the run: {message}"),
            recent: Vec::new(),
            repro: String::new(),
        })
    });
    outcome.take_disk(&vfs, keep_trace);
    assert!(outcome.failure.is_some() || outcome.reopens_add_up(), "a reopen without one cause: {outcome:?}");
    outcome
}

#[cfg(all(test, feature = "redb", feature = "sqlite"))]
mod tests {
    use std::path::Path;

    use engine::vfs::{OpenMode, Vfs};

    use super::*;
    use crate::kit::KitSettings;
    use crate::systems::{redb_target, sqlite_target};

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
        let sqlite = sqlite_target(KitSettings::default());
        let config = sqlite.config(1, None);
        for replace in [false, true] {
            let vfs = Arc::new(SimVfs::new(config.disk.clone(), crate::trace::Trace::new(false)));
            let mut runner = Runner::new(&sqlite.adapter, &config, None, String::new(), vfs.clone());
            runner.start().unwrap();
            vfs.begin_op(9);
            make_hazard_then_move(&vfs, "fresh.sqlite-journal", "fresh.sqlite-old", replace);
            let result = runner.hazards();
            assert!(result.is_ok(), "replace {replace}: {:?}", result.err().map(|f| f.detail));
            assert!(runner.outcome.hazards >= 1, "replace {replace}: counted");

            vfs.begin_op(10);
            make_hazard_then_move(&vfs, "fresh.sqlite-shm", "fresh.sqlite-old2", replace);
            let failure = runner.hazards().unwrap_err();
            assert_eq!(failure.check, Check::Hazard);
            assert!(failure.detail.contains("(earlier /db/fresh.sqlite-shm"), "replace {replace}: {}", failure.detail);
        }
    }

    /// A kit run counts its process kills (a crash point inside an
    /// operation taken as a kill), and every reopen of a passing run has
    /// one cause (`run_ops` asserts it).
    #[test]
    fn a_kit_run_counts_its_process_kills() {
        use crate::seam::Target;
        let redb = redb_target(KitSettings::default());
        let mut kills = 0;
        for seed in 0..30 {
            let outcome = redb.run(seed, &redb.generate(seed), false);
            assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
            assert_eq!(outcome.kills, outcome.crash_gaps.get("kill_in_op").copied().unwrap_or(0));
            kills += outcome.kills;
        }
        assert!(kills > 0, "no process kill in 30 seeds");
    }

    /// An engine that declares no hazard (redb) fails the run on one; an
    /// engine that documents it (SQLite's journals) has it counted.
    #[test]
    fn a_hazard_fails_the_run_unless_the_engine_documents_it() {
        let redb = redb_target(KitSettings::default());
        let config = redb.config(1, None);
        let vfs = Arc::new(SimVfs::new(config.disk.clone(), crate::trace::Trace::new(false)));
        let mut runner = Runner::new(&redb.adapter, &config, None, String::new(), vfs.clone());
        runner.start().unwrap();
        make_hazard(&vfs, "data.redb-journal");
        let failure = runner.hazards().unwrap_err();
        assert_eq!(failure.check, Check::Hazard);
        assert!(failure.detail.contains("data.redb-journal") && failure.detail.contains("Spec::hazards"));

        let sqlite = sqlite_target(KitSettings::default());
        let config = sqlite.config(1, None);
        let vfs = Arc::new(SimVfs::new(config.disk.clone(), crate::trace::Trace::new(false)));
        let mut runner = Runner::new(&sqlite.adapter, &config, None, String::new(), vfs.clone());
        runner.start().unwrap();
        make_hazard(&vfs, "fresh.sqlite-journal");
        assert!(runner.hazards().is_ok());
        assert_eq!(runner.outcome.hazards, 1);
        make_hazard(&vfs, "fresh.sqlite-shm");
        assert_eq!(runner.hazards().unwrap_err().check, Check::Hazard, "only the files it documents");
    }
}
