//! redb's [`Adapter`]: what redb offers, in the kit's words. The kit does
//! the rest (workload, model, oracle, runs, exploration); REDB.md says
//! what was found.
//!
//! - Two tables: `t0` with `u64` keys, `t1` with byte-string keys, so both
//!   of redb's key encodings are exercised.
//! - Four commit levels: `Durability::Immediate` in 1-phase commit, in
//!   2-phase commit and with quick-repair (all durable), and
//!   `Durability::None` — which redb documents "will not be persisted to
//!   disk unless followed by a commit with `Durability::Immediate`": it
//!   lives in an in-memory slot, so it is [`Promise::Volatile`], and the
//!   oracle fails a `None` commit that survives a power loss on its own.
//! - `compact()` as the maintenance operation (its first commit publishes
//!   everything acknowledged).
//! - A seed draws the page cache size and whether redb checks integrity
//!   at every open; only then does it promise to report an altered file
//!   rather than trust it, so only then does the disk damage durable bytes.
//! - redb relies on its header sector being written atomically and on
//!   reads returning right bytes or an error, so torn garbage and read bit
//!   flips are off unless asked for (`--torn-garbage`, `--read-bitflips`).
//!
//! The database file is created, and its name made durable, by the
//! application's setup (`create`): redb's `FileBackend` does not sync the
//! directory either, and a file whose name a power loss can take is not a
//! database to test.

use std::path::PathBuf;

use engine::vfs::OpenMode;
use rand::{Rng, RngCore};
use redb::{Builder, Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction};

use super::backend::{Plant as Planted, VfsBackend};
use crate::kit::{
    Adapter, Env, ErrorKind, KeyKind, KitError, Level, Maintenance, Op, Plant, Promise, Reply, Rows, TableSpec,
};

/// Table `t0`: `u64` keys.
const T0: TableDefinition<u64, &[u8]> = TableDefinition::new("t0");
/// Table `t1`: byte-string keys.
const T1: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t1");

const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

const LEVELS: &[Level] = &[
    Level { name: "immediate", promise: Promise::Durable },
    Level { name: "immediate-2pc", promise: Promise::Durable },
    Level { name: "immediate-quick-repair", promise: Promise::Durable },
    Level { name: "none", promise: Promise::Volatile },
];

const PLANTS: &[Plant] = &[
    Plant { name: "redb-no-sync", what: "sync_data returns Ok and syncs nothing" },
    Plant { name: "redb-late-write", what: "the last write before each sync lands after it" },
];

/// A seed's redb settings.
#[derive(Clone, Debug)]
pub struct RedbConfig {
    /// `Builder::set_cache_size`: small caches make redb write pages out
    /// mid-transaction and read them back.
    pub cache_bytes: usize,
    /// `Builder::set_check_integrity_on_open`: verify every checksum at
    /// every open.
    pub check_integrity_on_open: bool,
}

/// redb (crates.io `redb` 4) as a kit target.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedbAdapter;

/// An open redb: the database and the open write transaction.
pub struct RedbDb {
    txn: Option<WriteTransaction>,
    /// Always `Some` until dropped or closed.
    db: Option<Database>,
}

/// redb's `WriteTransaction` and `Database` may each panic in `Drop` when
/// the backend under them fails (a planted bug does that); dropping both
/// in one unwind would abort the whole sweep. So each is dropped on its
/// own, its panic caught, and the first re-raised — unless this drop is
/// itself part of an unwind, which already carries the failure.
impl Drop for RedbDb {
    fn drop(&mut self) {
        use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
        let txn = self.txn.take();
        let first = catch_unwind(AssertUnwindSafe(|| drop(txn)));
        let db = self.db.take();
        let second = catch_unwind(AssertUnwindSafe(|| drop(db)));
        if let Err(panic) = first.and(second) {
            if !std::thread::panicking() {
                resume_unwind(panic);
            }
        }
    }
}

/// How the kit is to take a redb error: `Corrupted`, or the `InvalidData`
/// I/O error redb reports for a header it does not recognise, is redb's
/// verdict on the bytes (the simulated disk never returns `InvalidData`).
fn kit_error(error: impl Into<redb::Error>) -> KitError {
    let error = error.into();
    let kind = match &error {
        redb::Error::Corrupted(_) => ErrorKind::Corrupt,
        redb::Error::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => ErrorKind::Corrupt,
        redb::Error::Io(_) => ErrorKind::Io,
        _ => ErrorKind::Other,
    };
    KitError::new(kind, error)
}

/// A `t0` key: the kit hands `u64` keys over as 8 big-endian bytes.
fn number(key: &[u8]) -> u64 {
    u64::from_be_bytes(key.try_into().expect("the kit hands a u64 table 8-byte keys"))
}

/// One table's rows, keys as the kit holds them.
fn rows<K: redb::Key + 'static>(
    table: &impl ReadableTable<K, &'static [u8]>,
    key_bytes: impl for<'k> Fn(K::SelfType<'k>) -> Vec<u8>,
) -> Result<Rows, redb::Error> {
    let mut out = Rows::new();
    for entry in table.iter()? {
        let (key, value) = entry?;
        out.insert(key_bytes(key.value()), value.value().to_vec());
    }
    Ok(out)
}

fn t0_rows(table: &impl ReadableTable<u64, &'static [u8]>) -> Result<Rows, redb::Error> {
    rows(table, |k| k.to_be_bytes().to_vec())
}

fn t1_rows(table: &impl ReadableTable<&'static [u8], &'static [u8]>) -> Result<Rows, redb::Error> {
    rows(table, |k: &[u8]| k.to_vec())
}

fn db_file(env: &Env<'_, RedbConfig>) -> PathBuf {
    env.dir.join("data.redb")
}

fn open_db(env: &Env<'_, RedbConfig>) -> Result<Database, KitError> {
    let path = db_file(env);
    let file = env.vfs.open(&path, OpenMode::Write)?;
    let plant = env.plant.map(|name| match name {
        "redb-no-sync" => Planted::NoSync,
        _ => Planted::LateWrite,
    });
    let backend = VfsBackend::new(file, &path.to_string_lossy(), plant);
    let mut builder = Builder::new();
    builder.set_cache_size(env.config.cache_bytes).set_check_integrity_on_open(env.config.check_integrity_on_open);
    builder.create_with_backend(backend).map_err(kit_error)
}

impl RedbDb {
    fn db(&self) -> &Database {
        self.db.as_ref().expect("open until dropped or closed")
    }

    fn txn(&mut self) -> Result<&WriteTransaction, redb::Error> {
        if self.txn.is_none() {
            self.txn = Some(self.db().begin_write()?);
        }
        Ok(self.txn.as_ref().expect("begun above"))
    }

    fn write(&mut self, op: Op<'_>) -> Result<Option<Vec<u8>>, redb::Error> {
        let txn = self.txn()?;
        let old = match op {
            Op::Put { table: 0, key, value } => {
                txn.open_table(T0)?.insert(number(key), value)?.map(|v| v.value().to_vec())
            }
            Op::Put { key, value, .. } => txn.open_table(T1)?.insert(key, value)?.map(|v| v.value().to_vec()),
            Op::Delete { table: 0, key } => txn.open_table(T0)?.remove(number(key))?.map(|v| v.value().to_vec()),
            Op::Delete { key, .. } => txn.open_table(T1)?.remove(key)?.map(|v| v.value().to_vec()),
            _ => unreachable!("only puts and deletes write"),
        };
        Ok(old)
    }

    /// A get or a scan: in the write transaction if one is open, else in
    /// a read transaction.
    fn read(&self, op: Op<'_>) -> Result<Reply, redb::Error> {
        let get = |v: Option<redb::AccessGuard<'_, &[u8]>>| Reply::Value(v.map(|v| v.value().to_vec()));
        Ok(match (&self.txn, op) {
            (Some(t), Op::Get { table: 0, key }) => get(t.open_table(T0)?.get(number(key))?),
            (Some(t), Op::Get { key, .. }) => get(t.open_table(T1)?.get(key)?),
            (Some(t), Op::Scan { table: 0 }) => Reply::Rows(t0_rows(&t.open_table(T0)?)?),
            (Some(t), Op::Scan { .. }) => Reply::Rows(t1_rows(&t.open_table(T1)?)?),
            (None, Op::Get { table: 0, key }) => get(self.db().begin_read()?.open_table(T0)?.get(number(key))?),
            (None, Op::Get { key, .. }) => get(self.db().begin_read()?.open_table(T1)?.get(key)?),
            (None, Op::Scan { table: 0 }) => Reply::Rows(t0_rows(&self.db().begin_read()?.open_table(T0)?)?),
            (None, Op::Scan { .. }) => Reply::Rows(t1_rows(&self.db().begin_read()?.open_table(T1)?)?),
            _ => unreachable!("only gets and scans read"),
        })
    }

    fn commit(&mut self, level: usize) -> Result<(), redb::Error> {
        self.txn()?;
        let mut txn = self.txn.take().expect("begun above");
        txn.set_durability(if LEVELS[level].promise == Promise::Volatile {
            Durability::None
        } else {
            Durability::Immediate
        })?;
        txn.set_two_phase_commit(level == 1);
        txn.set_quick_repair(level == 2);
        txn.commit()?;
        Ok(())
    }
}

impl Adapter for RedbAdapter {
    type Db = RedbDb;
    type Config = RedbConfig;

    fn name(&self) -> &'static str {
        "redb"
    }

    fn levels(&self) -> &'static [Level] {
        LEVELS
    }

    fn tables(&self) -> &'static [TableSpec] {
        TABLES
    }

    fn configure(&self, rng: &mut dyn RngCore) -> RedbConfig {
        let cache_bytes = [16 << 10, 64 << 10, 256 << 10, 1 << 30][rng.gen_range(0..4)];
        RedbConfig { cache_bytes, check_integrity_on_open: rng.gen_bool(0.5) }
    }

    fn detects_damage(&self, config: &RedbConfig) -> bool {
        config.check_integrity_on_open
    }

    fn tolerates(&self) -> (bool, bool) {
        (false, false)
    }

    fn maintenance(&self) -> Option<Maintenance> {
        Some(Maintenance { name: "compact", makes_durable: true })
    }

    fn plants(&self) -> &'static [Plant] {
        PLANTS
    }

    /// Create the file (its name made durable by the kit) and both tables
    /// in one durable commit, so every later read finds them.
    fn create(&self, env: &Env<'_, RedbConfig>) -> Result<(), KitError> {
        drop(env.vfs.open(&db_file(env), OpenMode::Create)?);
        env.vfs.sync_dir(env.dir)?;
        let db = open_db(env)?;
        let txn = db.begin_write().map_err(kit_error)?;
        txn.open_table(T0).map_err(kit_error)?;
        txn.open_table(T1).map_err(kit_error)?;
        txn.commit().map_err(kit_error)?;
        db.close().map_err(kit_error)
    }

    fn open(&self, env: &Env<'_, RedbConfig>) -> Result<RedbDb, KitError> {
        Ok(RedbDb { txn: None, db: Some(open_db(env)?) })
    }

    fn apply(&self, db: &mut RedbDb, op: Op<'_>) -> Result<Reply, KitError> {
        match op {
            Op::Put { .. } | Op::Delete { .. } => db.write(op).map(Reply::Value),
            Op::Get { .. } | Op::Scan { .. } => db.read(op),
            Op::Commit { level } => db.commit(level).map(|()| Reply::Done),
            Op::Abort => {
                db.txn.take().map_or(Ok(()), |txn| txn.abort().map_err(redb::Error::from)).map(|()| Reply::Done)
            }
            Op::Maintain => db.db.as_mut().expect("open").compact().map(|_| Reply::Done).map_err(redb::Error::from),
        }
        .map_err(kit_error)
    }

    /// A table that does not exist is empty: a rollback after damage may
    /// return to the file's first commit, before the tables were created.
    fn read_committed(&self, db: &mut RedbDb, table: usize) -> Result<Rows, KitError> {
        let txn = db.db().begin_read().map_err(kit_error)?;
        let read = match table {
            0 => txn.open_table(T0).map(|t| t0_rows(&t)),
            _ => txn.open_table(T1).map(|t| t1_rows(&t)),
        };
        match read {
            Ok(rows) => rows.map_err(kit_error),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Rows::new()),
            Err(e) => Err(kit_error(e)),
        }
    }

    fn close(&self, mut db: RedbDb) -> Result<(), KitError> {
        if let Some(txn) = db.txn.take() {
            txn.abort().map_err(kit_error)?;
        }
        db.db.take().expect("open until closed").close().map_err(kit_error)
    }
}
