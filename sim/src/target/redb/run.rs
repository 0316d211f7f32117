//! Running one seed of the redb target: redb on the simulated disk, driven
//! by the workload, every read checked against the model as it runs and
//! every recovery held to the model's durability rule (`model.rs`).
//!
//! The shape is the segsim runner's (`crate::run`): one thread, every
//! random choice from the seed — the workload, each operation's fault
//! stream (keyed by the seed and the operation's index, so shrinking keeps
//! the faults of the operations it keeps), each crash's choice of
//! surviving writes. What differs is redb's failure model:
//!
//! - redb latches the first I/O error of its backend and answers
//!   `PreviousIo` from then on; a failed commit "must not be assumed
//!   rolled back", and the database must be closed and reopened. So any
//!   error while a fault was injected ends the operation with a reopen —
//!   half the time after a power loss, half the time after a plain process
//!   restart (the page cache survives) — and the commit that failed is in
//!   doubt. An error with no fault injected is a failure.
//! - Dropping a `Database` closes it, which writes (it commits pending
//!   `Durability::None` transactions). At a power loss nothing may reach
//!   the disk any more, so the handles are dropped with the crash point
//!   reached: every I/O they attempt fails, as it would with the power off.
//! - The harness observes redb's content (after a recovery, and every few
//!   operations) with faults switched off: an observation is not part of
//!   the workload, and a fault in it would only test the observer. The
//!   workload's own `GET` and `SCAN` run with faults on.
//!
//! The file is created, and its directory entry made durable, once at the
//! start, fault-free: creating the file is the embedding application's
//! job (redb's `FileBackend` does not sync the directory either), and a
//! file whose name a power loss can take is not a database to test.

use std::path::Path;
use std::sync::Arc;

use engine::vfs::{OpenMode, Vfs};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use redb::{Builder, Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

use super::backend::{Plant, VfsBackend};
use super::config::RedbConfig;
use super::model::{diff, show_value, Accepted, Model, Pending, State, TableContent};
use super::workload::{CommitMode, Key, PlannedRedbOp, RedbOp, Table};
use crate::disk::{CrashOutcome, CrashPoint, SimVfs};
use crate::failure::{catch_panic, Check, Failure};
use crate::outcome::SeedOutcome;
use crate::seeds::faults as fault_seed;
use crate::target::RecordedContext;
use crate::trace::{hash_debug, Event, Trace};

/// The database's directory on the simulated disk.
pub const DB_DIR: &str = "/redb";
/// The database file.
pub const DB_FILE: &str = "/redb/data.redb";

/// Table `t0`: `u64` keys.
const T0: TableDefinition<u64, &[u8]> = TableDefinition::new("t0");
/// Table `t1`: byte-string keys.
const T1: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t1");

/// Open attempts with faults on before the last one without them (an
/// injected read error is transient, not a refusal).
const OPEN_ATTEMPTS_WITH_FAULTS: u64 = 3;

/// Power losses inside one operation's recovery, at most (each recovery
/// may be cut again, a few times, then it runs to the end).
const MAX_CRASHES_IN_RECOVERY: u64 = 3;

/// The crash stream of operation `index` (apart from its fault stream).
pub(super) fn crash_seed(seed: u64, index: u64) -> u64 {
    fault_seed(seed, index) ^ 0x5245_4442_c4a5_0000
}

/// Whether `error` is redb saying the file is corrupted: `Corrupted`, or
/// the `InvalidData` I/O error redb reports for a header it does not
/// recognise ("Not a redb database: magic number mismatch"). The simulated
/// disk never returns `InvalidData` itself, so that kind can only be redb's
/// verdict on the bytes.
fn is_corruption(error: &redb::Error) -> bool {
    match error {
        redb::Error::Corrupted(_) => true,
        redb::Error::Io(e) => e.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// A value as the model holds it.
fn owned(value: &[u8]) -> Arc<[u8]> {
    Arc::from(value)
}

/// One table's whole content, keys as the model holds them.
fn table_content<K: redb::Key + 'static>(
    table: &impl ReadableTable<K, &'static [u8]>,
    model_key: impl for<'k> Fn(K::SelfType<'k>) -> Vec<u8>,
) -> Result<TableContent, redb::Error> {
    let mut content = TableContent::new();
    for entry in table.iter()? {
        let (key, value) = entry?;
        content.insert(model_key(key.value()), owned(value.value()));
    }
    Ok(content)
}

/// `t0`'s keys as the model holds them (big-endian, so byte order is
/// numeric order).
fn t0_key(key: u64) -> Vec<u8> {
    key.to_be_bytes().to_vec()
}

/// `t1`'s keys as the model holds them.
fn t1_key(key: &[u8]) -> Vec<u8> {
    key.to_vec()
}

/// The committed content, through a read transaction. A table that does
/// not exist is empty (a rollback after media corruption may return to
/// the file's first commit, before the tables were created).
pub(super) fn read_committed(db: &Database) -> Result<State, redb::Error> {
    let txn = db.begin_read()?;
    let mut state = State::default();
    match txn.open_table(T0) {
        Ok(t0) => state.tables[0] = table_content(&t0, t0_key)?,
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    match txn.open_table(T1) {
        Ok(t1) => state.tables[1] = table_content(&t1, t1_key)?,
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(state)
}

/// `Builder` for `config`: its page cache size and integrity check.
pub(super) fn builder(config: &RedbConfig) -> Builder {
    let mut builder = Builder::new();
    builder.set_cache_size(config.cache_bytes).set_check_integrity_on_open(config.check_integrity_on_open);
    builder
}

/// Open (or, on an empty file, create) the database in [`DB_FILE`] on `vfs`.
pub(super) fn open_db(vfs: &SimVfs, config: &RedbConfig, plant: Option<Plant>) -> Result<Database, redb::Error> {
    let file = vfs.open(Path::new(DB_FILE), OpenMode::Write)?;
    let backend = VfsBackend::new(file, DB_FILE, plant);
    Ok(builder(config).create_with_backend(backend)?)
}

/// Create the database file and make its name durable (fault-free: the
/// application's part, see the module doc).
pub(super) fn create_file(vfs: &SimVfs) -> std::io::Result<()> {
    vfs.create_dir_all(Path::new(DB_DIR))?;
    drop(vfs.open(Path::new(DB_FILE), OpenMode::Create)?);
    vfs.sync_dir(Path::new(DB_DIR))
}

/// Create both tables in one durable commit, so every later read finds them.
pub(super) fn create_tables(db: &Database) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    txn.open_table(T0)?;
    txn.open_table(T1)?;
    txn.commit()?;
    Ok(())
}

/// Insert `key` (its variant names the table) in `txn`; the value replaced.
fn txn_put(txn: &WriteTransaction, key: &Key, value: &[u8]) -> Result<Option<Vec<u8>>, redb::Error> {
    Ok(match key {
        Key::Number(n) => txn.open_table(T0)?.insert(*n, value)?.map(|old| old.value().to_vec()),
        Key::Bytes(k) => txn.open_table(T1)?.insert(k.as_slice(), value)?.map(|old| old.value().to_vec()),
    })
}

/// Remove from `table` in `txn`; the value removed.
fn txn_remove(txn: &WriteTransaction, key: &Key) -> Result<Option<Vec<u8>>, redb::Error> {
    Ok(match key {
        Key::Number(n) => txn.open_table(T0)?.remove(*n)?.map(|old| old.value().to_vec()),
        Key::Bytes(k) => txn.open_table(T1)?.remove(k.as_slice())?.map(|old| old.value().to_vec()),
    })
}

/// Read `key` in the write transaction.
fn txn_get(txn: &WriteTransaction, key: &Key) -> Result<Option<Vec<u8>>, redb::Error> {
    Ok(match key {
        Key::Number(n) => txn.open_table(T0)?.get(*n)?.map(|v| v.value().to_vec()),
        Key::Bytes(k) => txn.open_table(T1)?.get(k.as_slice())?.map(|v| v.value().to_vec()),
    })
}

/// Read `key` in a read transaction.
fn read_get(db: &Database, key: &Key) -> Result<Option<Vec<u8>>, redb::Error> {
    let txn = db.begin_read()?;
    Ok(match key {
        Key::Number(n) => txn.open_table(T0)?.get(*n)?.map(|v| v.value().to_vec()),
        Key::Bytes(k) => txn.open_table(T1)?.get(k.as_slice())?.map(|v| v.value().to_vec()),
    })
}

/// Read one table whole, in the write transaction if given, else in a
/// read transaction.
fn scan(db: &Database, txn: Option<&WriteTransaction>, table: Table) -> Result<State, redb::Error> {
    let mut state = State::default();
    state.tables[table.index()] = match (txn, table) {
        (Some(txn), Table::Numbers) => table_content(&txn.open_table(T0)?, t0_key)?,
        (Some(txn), Table::Bytes) => table_content(&txn.open_table(T1)?, t1_key)?,
        (None, Table::Numbers) => table_content(&db.begin_read()?.open_table(T0)?, t0_key)?,
        (None, Table::Bytes) => table_content(&db.begin_read()?.open_table(T1)?, t1_key)?,
    };
    Ok(state)
}

/// Commit `txn` as `mode` says.
fn commit(mut txn: WriteTransaction, mode: CommitMode) -> Result<(), redb::Error> {
    txn.set_durability(if mode.durable { Durability::Immediate } else { Durability::None })?;
    txn.set_two_phase_commit(mode.two_phase);
    txn.set_quick_repair(mode.quick_repair);
    txn.commit()?;
    Ok(())
}

type Step = Result<(), Failure>;

/// One seed's run (see the module doc).
pub(super) struct Runner<'a> {
    pub config: &'a RedbConfig,
    pub plant: Option<Plant>,
    /// The command line that reruns this seed.
    pub repro: String,
    pub vfs: Arc<SimVfs>,
    pub db: Option<Database>,
    pub txn: Option<WriteTransaction>,
    pub model: Model,
    pub outcome: SeedOutcome,
    pub op_index: u64,
    /// While recording for `sim explore`: the model at every operation
    /// (what a recovery there is held to, with what the operation may
    /// publish pending).
    pub contexts: Option<Vec<RecordedContext<Model>>>,
}

impl<'a> Runner<'a> {
    pub fn new(config: &'a RedbConfig, plant: Option<Plant>, repro: String, vfs: Arc<SimVfs>) -> Self {
        Runner {
            config,
            plant,
            repro,
            vfs,
            db: None,
            txn: None,
            model: Model::new(),
            outcome: SeedOutcome { seed: config.seed, ..SeedOutcome::default() },
            op_index: 0,
            contexts: None,
        }
    }

    /// A failure of `check` at the current operation, with the trace's
    /// last events and the seed's repro.
    pub fn fail(&self, check: Check, detail: impl Into<String>) -> Failure {
        Failure::in_run(&self.vfs, self.config.seed, self.op_index, check, detail.into(), self.repro.clone())
    }

    fn db(&self) -> &Database {
        self.db.as_ref().expect("a database is open between operations")
    }

    /// While recording: recoveries from here on are judged by the model as
    /// it is now.
    fn note_context(&mut self, what: String) {
        if let Some(contexts) = &mut self.contexts {
            contexts.push(RecordedContext { first_io_index: self.vfs.io_count(), what, context: self.model.clone() });
        }
    }

    /// Run `f` with faults off (an observation, see the module doc).
    fn fault_free<T>(&self, f: impl FnOnce() -> T) -> T {
        self.vfs.set_faults_enabled(false);
        let result = f();
        self.vfs.set_faults_enabled(true);
        result
    }

    /// The first open, on an empty disk, fault-free.
    pub fn start(&mut self) -> Step {
        self.vfs.begin_op(fault_seed(self.config.seed, u64::MAX));
        self.create_db(false)?;
        self.model = Model::new();
        Ok(())
    }

    /// Create a fresh database with both tables, fault-free, and open it;
    /// with `replace`, the database file there is unlinked first. A
    /// failure here is a failure to open.
    fn create_db(&mut self, replace: bool) -> Step {
        let vfs = self.vfs.clone();
        let created = self.fault_free(|| -> Result<Database, redb::Error> {
            if replace {
                vfs.unlink(Path::new(DB_FILE))?;
            }
            create_file(&vfs)?;
            let db = open_db(&vfs, self.config, self.plant)?;
            create_tables(&db)?;
            Ok(db)
        });
        match created {
            Ok(db) => self.db = Some(db),
            Err(e) => return Err(self.fail(Check::Open, format!("a fresh database could not be created: {e}"))),
        }
        Ok(())
    }

    /// Power is lost: drop every handle with every I/O failing (see the
    /// module doc), then build the next disk. `depth` counts power losses
    /// inside the recovery from an earlier one (each draws its own choice
    /// of surviving writes).
    fn lose_power(&mut self, depth: u64) -> CrashOutcome {
        self.vfs.arm_crash(Some(CrashPoint::AfterIos(0)));
        self.txn = None;
        self.db = None;
        self.outcome.crashes += 1;
        let crash = self.vfs.power_loss(crash_seed(self.config.seed, self.op_index) ^ depth);
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        crash
    }

    fn power_loss(&mut self, gap: &'static str) -> Step {
        *self.outcome.crash_gaps.entry(gap).or_default() += 1;
        let crash = self.lose_power(0);
        self.recover(Some(&crash))
    }

    /// redb failed under an injected fault: close and reopen, half the time
    /// after a power loss (the page cache may be no better than the disk).
    /// Otherwise the database is dropped, which is a close: if redb did not
    /// latch the error (a corruption it read, say), the close commits the
    /// pending `Durability::None` transactions, so the acknowledged state
    /// may come back too.
    fn restart_after_error(&mut self) -> Step {
        if fault_seed(self.config.seed, self.op_index) & 1 == 0 {
            return self.power_loss("after_error");
        }
        self.model.set_pending(Pending::PublishAll);
        self.txn = None;
        self.db = None;
        self.vfs.process_restart();
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        self.recover(None)
    }

    /// Reopen after a power loss or a restart and hold what came back to
    /// the model.
    fn recover(&mut self, crash: Option<&CrashOutcome>) -> Step {
        let media_corrupted = crash.is_some_and(|c| !c.media_corrupted.is_empty());
        self.recover_from(media_corrupted, 0)
    }

    /// Where power fails inside the recovery numbered `depth` of this
    /// operation, if it does: after that many of the open's I/Os. Drawn
    /// from the operation's crash stream, so shrinking keeps it.
    fn crash_in_recovery(&self, depth: u64) -> Option<CrashPoint> {
        if depth >= MAX_CRASHES_IN_RECOVERY || self.config.p_crash_in_recovery == 0.0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(crash_seed(self.config.seed, self.op_index) ^ (0x7EC0 + depth));
        rng.gen_bool(self.config.p_crash_in_recovery).then(|| CrashPoint::AfterIos(rng.gen_range(0..32)))
    }

    /// [`Runner::recover`], `depth` power losses into it: redb's repair
    /// writes (it rewrites the header, commits the repaired state), so a
    /// power loss there is one more crash to survive, judged by the same
    /// rule (media corruption, once injected, stays in the file).
    fn recover_from(&mut self, media_corrupted: bool, depth: u64) -> Step {
        self.outcome.restarts += 1;
        for attempt in 0..=OPEN_ATTEMPTS_WITH_FAULTS {
            self.vfs.begin_op(fault_seed(self.config.seed, self.op_index) ^ (0xA77E_0000 + attempt + (depth << 8)));
            self.vfs.set_faults_enabled(attempt < OPEN_ATTEMPTS_WITH_FAULTS);
            if attempt == 0 {
                self.vfs.arm_crash(self.crash_in_recovery(depth));
            }
            let opened = open_db(&self.vfs, self.config, self.plant);
            let injected = self.vfs.faults_injected_this_op();
            self.vfs.set_faults_enabled(true);
            if self.vfs.crash_point_reached() {
                *self.outcome.crash_gaps.entry("recovery").or_default() += 1;
                self.db = opened.ok();
                let crash = self.lose_power(depth + 1);
                return self.recover_from(media_corrupted || !crash.media_corrupted.is_empty(), depth + 1);
            }
            self.vfs.arm_crash(None);
            match opened {
                Ok(db) => {
                    self.db = Some(db);
                    break;
                }
                Err(_) if injected && attempt < OPEN_ATTEMPTS_WITH_FAULTS => continue,
                Err(e) if media_corrupted && is_corruption(&e) => return self.accept_refusal(),
                Err(e) => {
                    let media = if media_corrupted { " (media corruption was injected)" } else { "" };
                    return Err(self.fail(Check::Open, format!("redb refused to open after a crash{media}: {e}")));
                }
            }
        }
        let read = self.fault_free(|| read_committed(self.db()));
        let state = match read {
            Ok(state) => state,
            Err(e) if media_corrupted && is_corruption(&e) => return self.accept_refusal(),
            Err(e) => {
                return Err(
                    self.fail(Check::Open, format!("redb opened but reading its content failed, fault-free: {e}"))
                )
            }
        };
        match self.model.recovered(&state, media_corrupted) {
            Ok(Accepted::MediaRollback) => {
                self.outcome.refusals_accepted += 1;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(detail) => Err(self.fail(Check::Durability, detail)),
        }
    }

    /// Media corruption made redb refuse, as it may: start over on a new
    /// file (the refusal itself was the check).
    fn accept_refusal(&mut self) -> Step {
        self.outcome.refusals_accepted += 1;
        self.db = None;
        self.create_db(true)?;
        self.model.reset_empty();
        Ok(())
    }

    /// The end of an operation's redb call: a crash, a fault (reopen) or
    /// an error with no fault (a failure). `Some` carries an `Ok` result
    /// for the caller to check.
    fn conclude<T>(&mut self, op: &RedbOp, result: Result<T, redb::Error>) -> Result<Option<T>, Failure> {
        if self.vfs.crash_point_reached() {
            self.power_loss(op.tag())?;
            return Ok(None);
        }
        match result {
            Ok(value) => Ok(Some(value)),
            Err(_) if self.vfs.faults_injected_this_op() => {
                self.restart_after_error()?;
                Ok(None)
            }
            Err(e) => {
                let check = if matches!(op, RedbOp::Compact | RedbOp::Restart) { Check::Admin } else { Check::Reply };
                Err(self.fail(check, format!("{}: failed with no fault injected: {e}", op_line(op))))
            }
        }
    }

    fn reply(&self, hash: u64) {
        let index = self.op_index;
        self.vfs.with_trace(|t| t.push(Event::Reply { index, hash }));
    }

    /// The open write transaction, begun if there is none.
    fn txn(&mut self) -> Result<&WriteTransaction, redb::Error> {
        if self.txn.is_none() {
            let txn = self.db().begin_write()?;
            self.txn = Some(txn);
            self.model.begin();
        }
        Ok(self.txn.as_ref().expect("begun above"))
    }

    fn check_value(&self, op: &RedbOp, what: &str, want: Option<&Arc<[u8]>>, got: &Option<Vec<u8>>) -> Step {
        if want.map(|v| &v[..]) == got.as_deref() {
            return Ok(());
        }
        let got = got.as_ref().map(|v| owned(v));
        Err(self.fail(
            Check::Reply,
            format!(
                "{}: {what}\n    expected {}\n    got      {}",
                op_line(op),
                show_value(want),
                show_value(got.as_ref())
            ),
        ))
    }

    /// Abort the open write transaction, if any, as part of `op` (the
    /// model forgets it whatever redb says; an error ends `op`).
    fn abort_open_txn(&mut self) -> Result<(), redb::Error> {
        self.model.abort();
        match self.txn.take() {
            Some(txn) => Ok(txn.abort()?),
            None => Ok(()),
        }
    }

    fn step(&mut self, planned: &PlannedRedbOp) -> Step {
        self.op_index = planned.index;
        self.vfs.begin_op(fault_seed(self.config.seed, planned.index));
        self.vfs.arm_crash(planned.crash);
        let index = planned.index;
        let tag = planned.op.tag();
        self.vfs.with_trace(|t| t.push(Event::Op { index, tag }));
        let result = self.run_op(planned);
        self.vfs.arm_crash(None);
        result
    }

    fn run_op(&mut self, planned: &PlannedRedbOp) -> Step {
        let op = &planned.op;
        match op {
            RedbOp::Put { table, key, value } => {
                self.note_context(planned.to_string());
                let result = self.txn().and_then(|txn| txn_put(txn, key, value));
                self.reply(result.as_ref().map_or(0, hash_debug));
                if let Some(old) = self.conclude(op, result)? {
                    let want = self.model.put(table.index(), key.model_bytes(), value);
                    self.check_value(op, "the value it replaced", want.as_ref(), &old)?;
                }
                Ok(())
            }
            RedbOp::Remove { table, key } => {
                self.note_context(planned.to_string());
                let result = self.txn().and_then(|txn| txn_remove(txn, key));
                self.reply(result.as_ref().map_or(0, hash_debug));
                if let Some(old) = self.conclude(op, result)? {
                    let want = self.model.remove(table.index(), &key.model_bytes());
                    self.check_value(op, "the value it removed", want.as_ref(), &old)?;
                }
                Ok(())
            }
            RedbOp::Get { table, key } => {
                self.note_context(planned.to_string());
                let result = match &self.txn {
                    Some(txn) => txn_get(txn, key),
                    None => read_get(self.db(), key),
                };
                self.reply(result.as_ref().map_or(0, hash_debug));
                if let Some(got) = self.conclude(op, result)? {
                    let want = self.model.get(table.index(), &key.model_bytes()).cloned();
                    self.check_value(op, "the value read", want.as_ref(), &got)?;
                }
                Ok(())
            }
            RedbOp::Scan { table } => {
                self.note_context(planned.to_string());
                let result = scan(self.db(), self.txn.as_ref(), *table);
                self.reply(result.as_ref().map_or(0, |s| hash_debug(&s.tables)));
                if let Some(got) = self.conclude(op, result)? {
                    let mut want = State::default();
                    want.tables[table.index()] = self.model.visible().tables[table.index()].clone();
                    if got != want {
                        let where_ = if self.model.in_transaction() { "in the write transaction" } else { "committed" };
                        return Err(self.fail(
                            Check::Reply,
                            format!(
                                "{}: the table read differs from the model ({where_}):\n{}",
                                op_line(op),
                                diff(&want, &got)
                            ),
                        ));
                    }
                }
                Ok(())
            }
            RedbOp::Commit(mode) => {
                if mode.durable {
                    self.model.set_pending(Pending::Commit(self.model.commit_target()));
                }
                self.note_context(planned.to_string());
                let result = self.txn().map(|_| ()).and_then(|()| {
                    let txn = self.txn.take().expect("begun above");
                    commit(txn, *mode)
                });
                if result.is_ok() {
                    // Acknowledged: whatever happens next, the user was told.
                    self.model.commit(mode.durable);
                }
                self.reply(u64::from(result.is_ok()));
                self.conclude(op, result)?;
                Ok(())
            }
            RedbOp::Abort => {
                self.note_context(planned.to_string());
                let result = self.abort_open_txn();
                self.reply(u64::from(result.is_ok()));
                self.conclude(op, result)?;
                Ok(())
            }
            RedbOp::Compact => {
                self.model.abort();
                self.model.set_pending(Pending::PublishAll);
                self.note_context(planned.to_string());
                let result = self.abort_open_txn().and_then(|()| {
                    let db = self.db.as_mut().expect("a database is open between operations");
                    Ok(db.compact().map(|_| ())?)
                });
                if result.is_ok() {
                    self.model.all_durable();
                }
                self.reply(u64::from(result.is_ok()));
                self.conclude(op, result)?;
                self.model.clear_pending();
                Ok(())
            }
            RedbOp::Restart => self.restart(planned),
            RedbOp::Crash => {
                self.note_context(planned.to_string());
                self.model.abort();
                self.power_loss("boundary")
            }
        }
    }

    /// Clean close and reopen: if the close returns `Ok`, everything
    /// committed is durable and the reopened database must hold exactly it.
    fn restart(&mut self, planned: &PlannedRedbOp) -> Step {
        let op = &planned.op;
        self.model.abort();
        self.model.set_pending(Pending::PublishAll);
        self.note_context(planned.to_string());
        let result = self.abort_open_txn().and_then(|()| {
            let db = self.db.take().expect("a database is open between operations");
            Ok(db.close()?)
        });
        if result.is_ok() {
            self.model.all_durable();
        }
        self.reply(u64::from(result.is_ok()));
        if self.conclude(op, result)?.is_none() {
            return Ok(());
        }
        self.note_context(format!("{planned} (reopening)"));
        self.vfs.process_restart();
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: true }));
        self.recover(None)?;
        // Closed cleanly and reopened: nothing may be missing or extra.
        self.audit()
    }

    /// The committed content must be the model's, whole.
    pub fn audit(&mut self) -> Step {
        let read = self.fault_free(|| read_committed(self.db()));
        match read {
            Ok(got) if got == *self.model.committed() => Ok(()),
            Ok(got) => Err(self.fail(
                Check::Content,
                format!("the committed content differs from the model:\n{}", diff(self.model.committed(), &got)),
            )),
            Err(e) => Err(self.fail(Check::Content, format!("reading the committed content failed, fault-free: {e}"))),
        }
    }

    /// Create the database, run `ops`, then a clean restart that must
    /// bring back exactly the model.
    pub fn run(&mut self, ops: &[PlannedRedbOp]) -> Step {
        self.start()?;
        self.drive(ops)
    }

    /// [`Runner::run`] once the database exists.
    pub fn drive(&mut self, ops: &[PlannedRedbOp]) -> Step {
        for planned in ops {
            self.step(planned)?;
            self.outcome.ops += 1;
            if (planned.index + 1) % self.config.audit_every == 0 {
                self.audit()?;
            }
        }
        let end = PlannedRedbOp { index: ops.last().map_or(0, |p| p.index + 1), op: RedbOp::Restart, crash: None };
        self.step(&end)?;
        self.audit()
    }
}

/// An operation's line without its index, for messages.
fn op_line(op: &RedbOp) -> String {
    let line = PlannedRedbOp { index: 0, op: op.clone(), crash: None }.to_string();
    line.trim_start_matches("0 ").to_string()
}

/// Run `ops` for `config`'s seed on a fresh simulated disk (see the module
/// doc). Never panics: a panic in redb or the harness is a failure.
pub fn run_ops(
    config: &RedbConfig,
    plant: Option<Plant>,
    repro: String,
    ops: &[PlannedRedbOp],
    keep_trace: bool,
) -> SeedOutcome {
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::new(keep_trace)));
    let mut runner = Runner::new(config, plant, repro, vfs.clone());
    let failure = match catch_panic(|| runner.run(ops)) {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err(message) => Some(runner.fail(Check::Panic, message)),
    };
    let mut outcome = std::mem::take(&mut runner.outcome);
    // Drop redb's handles before reading the trace (a close may write).
    let closing = catch_panic(move || drop(runner));
    outcome.failure = failure.or_else(|| {
        closing.err().map(|message| Failure {
            seed: config.seed,
            op_index: u64::MAX,
            check: Check::Panic,
            detail: format!("dropping the database at the end of the run: {message}"),
            recent: Vec::new(),
            repro: String::new(),
        })
    });
    outcome.take_disk(&vfs, keep_trace);
    outcome
}
