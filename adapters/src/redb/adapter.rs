//! redb's [`Adapter`]: what redb offers, in the kit's words (REDB.md says
//! why each choice, and what was found):
//!
//! - tables `t0` (`u64` keys) and `t1` (byte keys): both key encodings;
//! - commit levels `immediate` in 1-phase, 2-phase and quick-repair
//!   commits (durable), and `none`: redb documents `Durability::None`
//!   commits as not persisted until a later durable one, so it is
//!   [`Promise::Volatile`];
//! - `compact()` as maintenance (its first commit publishes everything);
//! - readers beside the writer (`--clients N`): each a `ReadTransaction`,
//!   which redb documents as a snapshot of what was committed before it
//!   began; every reader ends before `compact()`, which refuses to run
//!   while one is live; with `--interleave` a reader also steps inside the
//!   writer's operations, at their fsyncs only (`RedbBeside`);
//! - per seed, the page cache size and whether every open checks
//!   integrity: only then does redb promise to report altered bytes, so
//!   only then does the disk damage durable ones;
//! - no torn garbage and no read bit flips unless asked: redb relies on an
//!   atomic header sector and on reads being right or an error.
//!
//! The application's setup (`create`) makes the file and both tables in
//! one durable commit, fault-free: redb's `FileBackend` does not sync the
//! directory either, so creating the file is the application's job.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use redb::{
    Builder, Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};
use simkit::{Rng, RngCore};
use vfs::OpenMode;

use super::backend::{Plant as Planted, VfsBackend};
use simkit::{
    Adapter, Env, ErrorKind, KeyKind, KitError, Level, Maintain, Maintenance, Plant, Previous, Promise,
    ReadTransactions, Readers, ReadersBeside, Rows, Spec, TableSpec, Tolerances,
};

const T0: TableDefinition<u64, &[u8]> = TableDefinition::new("t0");
const T1: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t1");

const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

const LEVELS: &[Level] = &[
    Level::new("immediate", Promise::Durable),
    Level::new("immediate-2pc", Promise::Durable),
    Level::new("immediate-quick-repair", Promise::Durable),
    Level::new("none", Promise::Volatile),
];

impl Plant for Planted {
    const ALL: &'static [Planted] = &[Planted::NoSync, Planted::LateWrite, Planted::ReaderUnpinned];

    fn name(self) -> &'static str {
        match self {
            Planted::NoSync => "redb-no-sync",
            Planted::LateWrite => "redb-late-write",
            Planted::ReaderUnpinned => "redb-reader-unpinned",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Planted::NoSync => "sync_data returns Ok and syncs nothing",
            Planted::LateWrite => "the last write before each sync lands after it",
            Planted::ReaderUnpinned => {
                "(in the adapter) each read of a reader takes a read transaction of its own: read committed, not its snapshot (needs --clients)"
            }
        }
    }
}

/// Run `$body` on table `$table` of the kit's numbering, with `$def` its
/// definition and `$k` the kit's key bytes as that table's key type.
macro_rules! on_table {
    ($table:expr, $key:expr, |$def:ident, $k:ident| $body:expr) => {
        match $table {
            0 => {
                let ($def, $k) = (T0, u64::from_be_bytes($key.try_into().expect("the kit's u64 keys are 8 bytes")));
                $body
            }
            _ => {
                let ($def, $k) = (T1, $key);
                $body
            }
        }
    };
}

/// A seed's redb settings.
#[derive(Clone, Debug)]
pub struct RedbConfig {
    /// `Builder::set_cache_size`: small caches write pages out mid-transaction.
    pub cache_bytes: usize,
    /// `Builder::set_check_integrity_on_open`.
    pub check_integrity_on_open: bool,
}

/// redb (crates.io `redb` 4) as a kit target.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedbAdapter;

/// An open redb, its open write transaction and its readers' read
/// transactions.
pub struct RedbDb {
    txn: Option<WriteTransaction>,
    /// The readers, shared with `RedbBeside` while the writer's
    /// operation runs.
    readers: Arc<ReaderTxns>,
    /// `Some` until dropped or closed; shared with `RedbBeside` only
    /// inside the writer's operation (so `compact` and `close` find it
    /// alone).
    db: Option<Arc<Database>>,
}

/// The readers' read transactions, by client number.
pub struct ReaderTxns {
    open: Mutex<BTreeMap<usize, ReadTransaction>>,
    /// `--plant redb-reader-unpinned`.
    unpinned: bool,
}

/// The readers as the kit steps them inside the writer's operation
/// (`--interleave`), only where the backend announces a pause point:
/// before each `sync_data` takes the backend's lock. redb 4.6's
/// `TransactionalMemory::commit` holds the header lock across each header
/// write, which a reader's `begin_read` takes shared
/// (`register_read_transaction`), so a step at a write would wait on its
/// own thread; across the flushes (`PagedCachedFile::flush`:
/// `flush_write_buffer` returns its locks before `sync_data`) redb holds
/// none that `begin_read` or a read takes — the writer's system-table lock
/// is the write transaction's own (REDB.md).
pub struct RedbBeside {
    db: Arc<Database>,
    readers: Arc<ReaderTxns>,
}

/// redb's `WriteTransaction` and `Database` may each panic in `Drop` when
/// the backend under them fails (a plant does that); dropping both in one
/// unwind would abort the sweep. So each is dropped on its own, its panic
/// caught, and the first re-raised unless this drop is part of an unwind.
impl Drop for RedbDb {
    fn drop(&mut self) {
        use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
        let readers = std::mem::take(&mut *self.readers.open());
        let (txn, db) = (self.txn.take(), self.db.take());
        let first = catch_unwind(AssertUnwindSafe(|| drop(txn)));
        let readers = catch_unwind(AssertUnwindSafe(|| drop(readers)));
        let second = catch_unwind(AssertUnwindSafe(|| drop(db)));
        if let Err(panic) = first.and(readers).and(second) {
            if !std::thread::panicking() {
                resume_unwind(panic);
            }
        }
    }
}

/// `Corrupted`, or the `InvalidData` I/O error redb gives for a header it
/// does not recognise, is redb's verdict on the bytes (the simulated disk
/// never returns `InvalidData`).
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

/// A value read back, as the kit holds it.
fn value(guard: Option<redb::AccessGuard<'_, &[u8]>>) -> Option<Vec<u8>> {
    guard.map(|v| v.value().to_vec())
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

/// Table `t`'s rows through `$source` (a write or a read transaction).
macro_rules! table_rows {
    ($source:expr, $t:expr) => {
        match $t {
            0 => rows(&$source.open_table(T0)?, |k| k.to_be_bytes().to_vec()),
            _ => rows(&$source.open_table(T1)?, |k: &[u8]| k.to_vec()),
        }
    };
}

fn db_file(env: &Env<'_, RedbAdapter>) -> PathBuf {
    env.dir.join("data.redb")
}

fn open_db(env: &Env<'_, RedbAdapter>) -> Result<Database, KitError> {
    let path = db_file(env);
    let file = env.vfs.open(&path, OpenMode::Write)?;
    let backend = VfsBackend::new(file, &path.to_string_lossy(), env.plant).announcing_to(env.vfs.clone());
    let mut builder = Builder::new();
    builder.set_cache_size(env.config.cache_bytes).set_check_integrity_on_open(env.config.check_integrity_on_open);
    builder.create_with_backend(backend).map_err(kit_error)
}

impl RedbDb {
    fn db(&self) -> &Database {
        self.db.as_deref().expect("open until dropped or closed")
    }

    fn txn(&mut self) -> Result<&WriteTransaction, redb::Error> {
        if self.txn.is_none() {
            self.txn = Some(self.db().begin_write()?);
        }
        Ok(self.txn.as_ref().expect("begun above"))
    }

    /// Insert in the write transaction: the value replaced.
    fn put(&mut self, table: usize, key: &[u8], v: &[u8]) -> Result<Option<Vec<u8>>, redb::Error> {
        let txn = self.txn()?;
        Ok(on_table!(table, key, |def, k| value(txn.open_table(def)?.insert(k, v)?)))
    }

    /// Remove in the write transaction: the value removed.
    fn delete(&mut self, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, redb::Error> {
        let txn = self.txn()?;
        Ok(on_table!(table, key, |def, k| value(txn.open_table(def)?.remove(k)?)))
    }

    /// Read the write transaction if one is open, else a read transaction.
    fn get(&self, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, redb::Error> {
        Ok(match &self.txn {
            Some(t) => on_table!(table, key, |def, k| value(t.open_table(def)?.get(k)?)),
            None => {
                let t = self.db().begin_read()?;
                on_table!(table, key, |def, k| value(t.open_table(def)?.get(k)?))
            }
        })
    }

    /// A whole table, read as [`RedbDb::get`] reads.
    fn scan(&self, table: usize) -> Result<Rows, redb::Error> {
        match &self.txn {
            Some(t) => table_rows!(t, table),
            None => table_rows!(self.db().begin_read()?, table),
        }
    }

    fn commit(&mut self, level: usize) -> Result<(), redb::Error> {
        self.txn()?;
        let mut txn = self.txn.take().expect("begun above");
        let volatile = LEVELS[level].promise == Promise::Volatile;
        txn.set_durability(if volatile { Durability::None } else { Durability::Immediate })?;
        txn.set_two_phase_commit(level == 1);
        txn.set_quick_repair(level == 2);
        txn.commit()?;
        Ok(())
    }
}

impl ReaderTxns {
    fn open(&self) -> MutexGuard<'_, BTreeMap<usize, ReadTransaction>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Begin reader `reader`'s read transaction on `db`.
    fn begin(&self, db: &Database, reader: usize) -> Result<(), KitError> {
        let txn = db.begin_read().map_err(kit_error)?;
        let before = self.open().insert(reader, txn);
        debug_assert!(before.is_none(), "the kit begins a reader only when it has none open");
        Ok(())
    }

    /// `read` through reader `reader`'s transaction (under
    /// `redb-reader-unpinned`, through a fresh one on `db`).
    fn read_as<R>(
        &self,
        db: &Database,
        reader: usize,
        read: impl FnOnce(&ReadTransaction) -> Result<R, redb::Error>,
    ) -> Result<R, KitError> {
        if self.unpinned {
            return db.begin_read().map_err(redb::Error::from).and_then(|t| read(&t)).map_err(kit_error);
        }
        let open = self.open();
        read(open.get(&reader).expect("the kit reads only through an open reader")).map_err(kit_error)
    }

    /// Read one key in reader `reader`'s transaction.
    fn get(&self, db: &Database, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        self.read_as(db, reader, |t| Ok(on_table!(table, key, |def, k| value(t.open_table(def)?.get(k)?))))
    }

    /// A whole table, read in reader `reader`'s transaction.
    fn scan(&self, db: &Database, reader: usize, table: usize) -> Result<Rows, KitError> {
        self.read_as(db, reader, |t| table_rows!(t, table))
    }

    /// End reader `reader`'s read transaction.
    fn end(&self, reader: usize) -> Result<(), KitError> {
        let txn = self.open().remove(&reader).expect("the kit ends only an open reader");
        txn.close().map_err(kit_error)
    }
}

impl ReadersBeside for RedbBeside {
    fn begin_read(&self, reader: usize) -> Result<(), KitError> {
        self.readers.begin(&self.db, reader)
    }

    fn reader_get(&self, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        self.readers.get(&self.db, reader, table, key)
    }

    fn reader_scan(&self, reader: usize, table: usize) -> Result<Rows, KitError> {
        self.readers.scan(&self.db, reader, table)
    }

    fn end_read(&self, reader: usize) -> Result<(), KitError> {
        self.readers.end(reader)
    }

    /// redb has no lock a reader could be refused at.
    fn writer_lock(&self) -> Option<&'static str> {
        None
    }

    /// See `RedbBeside`.
    fn pauses_where_announced(&self) -> bool {
        true
    }
}

impl Adapter for RedbAdapter {
    type Db = RedbDb;
    type Config = RedbConfig;
    type Plant = Planted;

    fn name(&self) -> &'static str {
        "redb"
    }

    fn configure(&self, rng: &mut dyn RngCore) -> RedbConfig {
        let cache_bytes = [16 << 10, 64 << 10, 256 << 10, 1 << 30][rng.gen_range(0..4)];
        RedbConfig { cache_bytes, check_integrity_on_open: rng.gen_bool(0.5) }
    }

    fn describe_config(&self, config: &RedbConfig) -> Vec<(String, String)> {
        vec![
            ("cache_bytes".to_string(), config.cache_bytes.to_string()),
            ("check_integrity_on_open".to_string(), config.check_integrity_on_open.to_string()),
        ]
    }

    fn spec(&self, config: &RedbConfig) -> Spec {
        Spec {
            tables: TABLES,
            maintenance: Some(Maintenance { name: "compact", makes_durable: true }),
            tolerates: Tolerances { torn_garbage: false, read_bitflips: false },
            detects_damage: config.check_integrity_on_open,
            readers: Some(Readers {
                max: 4,
                across_maintenance: false,
                writer_waits: false,
                refused_at: &[],
                second_writer_refused_at: &[],
                documented: "redb docs/design.md ('a single writer and multiple concurrent readers ... MVCC'); \
                    ReadableDatabase::begin_read ('Captures a snapshot of the database, so that only data committed \
                    before calling this method is visible'); Database::compact returns TransactionInProgress while \
                    a read transaction is live",
            }),
            ..Spec::new(LEVELS.to_vec())
        }
    }

    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        drop(env.vfs.open(&db_file(env), OpenMode::Create)?);
        env.vfs.sync_dir(env.dir)?;
        let db = open_db(env)?;
        let txn = db.begin_write().map_err(kit_error)?;
        txn.open_table(T0).map_err(kit_error)?;
        txn.open_table(T1).map_err(kit_error)?;
        txn.commit().map_err(kit_error)?;
        db.close().map_err(kit_error)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<RedbDb, KitError> {
        let unpinned = env.plant == Some(Planted::ReaderUnpinned);
        let readers = Arc::new(ReaderTxns { open: Mutex::new(BTreeMap::new()), unpinned });
        Ok(RedbDb { txn: None, readers, db: Some(Arc::new(open_db(env)?)) })
    }

    fn put(&self, db: &mut RedbDb, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        db.put(table, key, value).map(Previous::Was).map_err(kit_error)
    }

    fn delete(&self, db: &mut RedbDb, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        db.delete(table, key).map(Previous::Was).map_err(kit_error)
    }

    fn get(&self, db: &mut RedbDb, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        db.get(table, key).map_err(kit_error)
    }

    fn scan(&self, db: &mut RedbDb, table: usize) -> Result<Rows, KitError> {
        db.scan(table).map_err(kit_error)
    }

    fn commit(&self, db: &mut RedbDb, level: usize) -> Result<(), KitError> {
        db.commit(level).map_err(kit_error)
    }

    fn abort(&self, db: &mut RedbDb) -> Result<(), KitError> {
        db.txn.take().map_or(Ok(()), |txn| txn.abort().map_err(kit_error))
    }

    /// A table that does not exist is empty: a rollback after damage may
    /// return to the file's first commit, before the tables were created.
    fn read_committed(&self, db: &mut RedbDb, table: usize) -> Result<Rows, KitError> {
        let read = || -> Result<Rows, redb::Error> { table_rows!(db.db().begin_read()?, table) };
        match read() {
            Err(redb::Error::TableDoesNotExist(_)) => Ok(Rows::new()),
            other => other.map_err(kit_error),
        }
    }

    fn close(&self, mut db: RedbDb) -> Result<(), KitError> {
        debug_assert!(db.readers.open().is_empty(), "the kit ends every reader before a clean close");
        if let Some(txn) = db.txn.take() {
            txn.abort().map_err(kit_error)?;
        }
        let shared = db.db.take().expect("open until closed");
        let alone =
            Arc::try_unwrap(shared).unwrap_or_else(|_| panic!("the readers' handle lives only inside an operation"));
        alone.close().map_err(kit_error)
    }

    fn maintenance(&self) -> Option<&dyn Maintain<RedbDb>> {
        Some(self)
    }

    fn readers(&self) -> Option<&dyn ReadTransactions<RedbDb>> {
        Some(self)
    }
}

impl Maintain<RedbDb> for RedbAdapter {
    fn maintain(&self, db: &mut RedbDb) -> Result<(), KitError> {
        let shared = db.db.as_mut().expect("open");
        let alone = Arc::get_mut(shared).expect("the readers' handle lives only inside an operation");
        alone.compact().map(drop).map_err(kit_error)
    }
}

impl ReadTransactions<RedbDb> for RedbAdapter {
    fn begin_read(&self, db: &mut RedbDb, reader: usize) -> Result<(), KitError> {
        db.readers.begin(db.db(), reader)
    }

    fn reader_get(
        &self,
        db: &mut RedbDb,
        reader: usize,
        table: usize,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, KitError> {
        db.readers.get(db.db(), reader, table, key)
    }

    fn reader_scan(&self, db: &mut RedbDb, reader: usize, table: usize) -> Result<Rows, KitError> {
        db.readers.scan(db.db(), reader, table)
    }

    fn end_read(&self, db: &mut RedbDb, reader: usize) -> Result<(), KitError> {
        db.readers.end(reader)
    }

    /// `RedbBeside`: the same readers, with the database shared for the
    /// writer's operation.
    fn beside(&self, db: &mut RedbDb) -> Option<Arc<dyn ReadersBeside>> {
        let shared = db.db.clone().expect("open between operations");
        Some(Arc::new(RedbBeside { db: shared, readers: db.readers.clone() }))
    }
}
