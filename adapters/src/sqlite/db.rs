//! An open SQLite database: the writer's connection and its readers',
//! each on its own registered VFS, opened by one `Connector` per
//! simulated process (so that they share its file locks and wal-indexes,
//! `shared.rs`), every call through the process-wide gate, SQLite's errors
//! turned into the kit's kinds, and a panic in a VFS callback raised again
//! on the Rust side. Apart from the adapter (`adapter.rs`) because this is
//! how any call reaches SQLite, whatever the kit asked for.
//!
//! # Determinism
//! SQLite's PRNG (journal nonces, WAL salts) is process-wide, and so is
//! the list of VFSes. Every call into SQLite holds one process-wide gate
//! and first reseeds the PRNG from the connection's seed and a call count,
//! so what a connection draws never depends on other threads. The gate
//! serialises SQLite across `--jobs`; the cost is small next to the disk.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use libsqlite3_sys as ffi;
use simkit::{ErrorKind, KitError, OtherWrite, WriteOutcome};
use vfs::Vfs;

use super::conn::{reseed_prng, Conn, SqlError, TxnProbe};
use super::readers::pin_snapshot;
use super::settings::{JournalMode, SqliteConfig};
use super::shared::Shared;
use super::sql::{self, configure_connection, create_tables, integrity_check};
use super::vfs::{RegisteredVfs, VfsContext, VfsOptions};

/// How to open another connection of the same simulated process: the
/// writer's `SqliteDb` keeps it, so that readers open theirs on demand.
pub(super) struct Connector {
    vfs: Arc<dyn Vfs>,
    pub(super) path: PathBuf,
    options: VfsOptions,
    pub(super) config: SqliteConfig,
    /// The process's file locks and wal-indexes.
    pub(super) shared: Arc<Shared>,
}

impl Connector {
    /// Open a connection on its own VFS (see `open_conn`), its PRNG stream
    /// apart from every other open's of the run: the seed it was given.
    fn connect(&self, create: bool) -> Result<(Conn, u64), KitError> {
        let open_index = self.config.opens.0.fetch_add(1, Ordering::Relaxed);
        let prng_seed = simulator::seeds::mix64(self.config.prng_seed ^ open_index.wrapping_mul(0xA24B_AED4_963E_E407));
        let context = Arc::new(VfsContext::new(self.vfs.clone(), self.options, prng_seed, self.shared.clone()));
        let _gate = gate(prng_seed, 0);
        let vfs = RegisteredVfs::register(context.clone());
        let opened = Conn::open(&self.path.to_string_lossy(), vfs, create);
        raise_panic(&context);
        Ok((opened.map_err(kit_error)?, prng_seed))
    }
}

/// An open SQLite connection (the writer's), and its readers'.
pub struct SqliteDb {
    conn: Option<Conn>,
    /// The readers' connections, shared with the kit when it steps them
    /// from inside the writer's I/O (`--interleave`, `ReadersBeside`).
    pub(super) readers: Arc<ReaderPool>,
    pub(super) connector: Arc<Connector>,
    /// Per key the open write transaction touched, its value before (as
    /// SQLite answered the first put or delete): the kit reads committed
    /// content between operations, and SQLite shows one connection only
    /// its own transaction's view. Only SQLite's answers go in here.
    pub(super) undo: BTreeMap<(usize, Vec<u8>), Option<Vec<u8>>>,
    /// Bumped by every call, the readers' too: the PRNG's reseed.
    calls: Arc<AtomicU64>,
    prng_seed: u64,
    /// The writer waits when busy (`wait_when_busy`).
    waits_when_busy: bool,
}

/// `PRAGMA wal_checkpoint`'s modes, by the kit's index
/// (`ReadTransactions::checkpoint`).
pub(super) const CHECKPOINT_MODES: [&str; 4] = ["PASSIVE", "FULL", "RESTART", "TRUNCATE"];

/// How long the writer's busy handler waits, in simulated milliseconds,
/// before its statement answers `SQLITE_BUSY` (`wait_when_busy`).
const BUSY_TIMEOUT_MS: u32 = 100;

/// Each reader's connection, opened at its first read transaction and
/// kept (a connection pool's), closed before the writer's.
pub(super) struct ReaderPool {
    conns: Mutex<BTreeMap<usize, Conn>>,
    /// The connections the seed's settings ran on (`configure`).
    configured: Mutex<BTreeSet<usize>>,
    /// The writer's transaction state, while its connection is open.
    writer: Mutex<Option<TxnProbe>>,
    connector: Arc<Connector>,
    calls: Arc<AtomicU64>,
    prng_seed: u64,
}

impl Drop for SqliteDb {
    /// Readers first: the last connection to close a WAL database
    /// checkpoints it and deletes the WAL, and that is the writer's job.
    fn drop(&mut self) {
        *self.readers.writer.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let readers = std::mem::take(&mut *self.readers.conns()).into_values();
        for conn in readers.chain(self.conn.take()) {
            // Closing writes (a WAL checkpoint): through the gate, like every call.
            let context = conn.vfs().context().clone();
            let _gate = gate(self.prng_seed, u64::MAX);
            drop(conn);
            raise_panic(&context);
        }
    }
}

/// The process-wide gate every call into SQLite holds (see the module doc).
static GATE: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`GATE`]: a reader's call the kit makes
    /// from inside the writer's I/O (`--interleave`) runs under the
    /// writer's hold, on the same thread.
    static GATE_HELD: Cell<bool> = const { Cell::new(false) };
}

/// A hold of the gate: the lock itself, or nothing for a call nested in
/// one this thread already holds.
struct Gate {
    _guard: Option<MutexGuard<'static, ()>>,
    nested: bool,
}

impl Drop for Gate {
    fn drop(&mut self) {
        if !self.nested {
            GATE_HELD.with(|held| held.set(false));
        }
    }
}

/// Take the gate (unless this thread holds it) and reseed SQLite's PRNG
/// for call `call` of a connection.
fn gate(prng_seed: u64, call: u64) -> Gate {
    let nested = GATE_HELD.with(|held| held.replace(true));
    let guard = (!nested).then(|| GATE.lock().unwrap_or_else(PoisonError::into_inner));
    reseed_prng(simulator::seeds::mix64(prng_seed ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as u32);
    Gate { _guard: guard, nested }
}

/// A panic a VFS callback caught (and turned into an I/O error for
/// SQLite), raised again here so the kit fails the seed.
fn raise_panic(context: &VfsContext) {
    if let Some(message) = context.take_panic() {
        panic!("panic in a SQLite VFS callback: {message}");
    }
}

/// How the kit is to take an SQLite error.
fn kit_error(error: SqlError) -> KitError {
    let kind = match error.primary() {
        ffi::SQLITE_CORRUPT | ffi::SQLITE_NOTADB => ErrorKind::Corrupt,
        ffi::SQLITE_IOERR | ffi::SQLITE_FULL | ffi::SQLITE_CANTOPEN => ErrorKind::Io,
        ffi::SQLITE_BUSY => ErrorKind::Busy,
        _ => ErrorKind::Other,
    };
    KitError::new(kind, error)
}

impl ReaderPool {
    fn conns(&self) -> MutexGuard<'_, BTreeMap<usize, Conn>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Begin reader `reader`'s read transaction (`readers.rs`), its
    /// connection opened first if it has none. Refused with `SQLITE_BUSY`
    /// (the writer holds `PENDING` or `EXCLUSIVE`), nothing stays open.
    pub(super) fn begin_read(&self, reader: usize) -> Result<(), KitError> {
        self.ensure_conn(reader)?;
        self.call(reader, pin_snapshot)
    }

    /// Reader `reader`'s connection, opened if it has none.
    fn ensure_conn(&self, reader: usize) -> Result<(), KitError> {
        if !self.conns().contains_key(&reader) {
            let (conn, _) = self.connector.connect(false)?;
            self.conns().insert(reader, conn);
            self.configure(reader)?;
        }
        Ok(())
    }

    /// Run the seed's settings on reader `reader`'s connection (open).
    /// Refused as busy, the connection stays open unconfigured: a reader
    /// reads the same either way, and a connection that writes or
    /// checkpoints is configured first (`ensure_configured`).
    fn configure(&self, reader: usize) -> Result<(), KitError> {
        let config = self.connector.config.clone();
        self.call(reader, |conn| configure_connection(conn, &config))?;
        self.configured().insert(reader);
        Ok(())
    }

    fn configured(&self) -> MutexGuard<'_, BTreeSet<usize>> {
        self.configured.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reader `reader`'s connection, open and with the seed's settings
    /// (its journal mode and `synchronous` decide what its commits and
    /// checkpoints write and sync).
    fn ensure_configured(&self, reader: usize) -> Result<(), KitError> {
        self.ensure_conn(reader)?;
        let configured = self.configured().contains(&reader);
        if configured {
            return Ok(());
        }
        // Settings are refused inside a transaction: a reader's ends first.
        self.call(reader, sql::rollback)?;
        self.configure(reader)
    }

    /// Reader `reader` tries to write: `BEGIN IMMEDIATE` (its read
    /// transaction ended first), rolled back at once when granted.
    /// `Ok(false)`: refused as busy.
    pub(super) fn try_write(&self, reader: usize) -> Result<bool, KitError> {
        self.ensure_conn(reader)?;
        self.call(reader, |conn| {
            if !conn.autocommit() {
                conn.exec("ROLLBACK")?;
            }
            match conn.exec("BEGIN IMMEDIATE") {
                Ok(()) => conn.exec("ROLLBACK").map(|()| true),
                Err(e) if e.primary() == ffi::SQLITE_BUSY => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    /// Reader `reader` writes as a second writer: `BEGIN IMMEDIATE` (its
    /// read transaction ended first), `write`, `COMMIT`. Refused as busy
    /// at the begin, or later (a commit waiting for a reader's `SHARED`
    /// lock), it rolls back and gives up.
    /// A connection opened afresh whose settings are refused as busy
    /// (`PRAGMA journal_mode` reads the database, which a writer's
    /// `PENDING` or `EXCLUSIVE` lock refuses) is refused at its begin too.
    pub(super) fn write_commit(&self, reader: usize, write: &OtherWrite) -> Result<WriteOutcome, KitError> {
        match self.ensure_configured(reader) {
            Err(e) if e.kind == ErrorKind::Busy => return Ok(WriteOutcome::RefusedAtBegin),
            other => other?,
        }
        self.call(reader, |conn| {
            sql::rollback(conn)?;
            match conn.exec("BEGIN IMMEDIATE") {
                Err(e) if e.primary() == ffi::SQLITE_BUSY => return Ok(WriteOutcome::RefusedAtBegin),
                other => other?,
            }
            let written = sql::write(conn, write.table, &write.key, Some(&write.value)).map(drop);
            match written.and_then(|()| conn.exec("COMMIT")) {
                Ok(()) => Ok(WriteOutcome::Committed),
                Err(e) => {
                    sql::rollback(conn)?;
                    match e.primary() {
                        ffi::SQLITE_BUSY => Ok(WriteOutcome::RefusedAtCommit),
                        _ => Err(e),
                    }
                }
            }
        })
    }

    /// Reader `reader` checkpoints the WAL (its read transaction ended
    /// first): `PRAGMA wal_checkpoint(MODE)`, `mode` indexing
    /// [`CHECKPOINT_MODES`]. A checkpoint another connection blocks
    /// answers a row saying so (`busy` 1), not an error; in a rollback
    /// mode it does nothing.
    pub(super) fn checkpoint(&self, reader: usize, mode: usize) -> Result<(), KitError> {
        if self.connector.config.journal_mode != JournalMode::Wal {
            // Nothing to checkpoint; the read transaction ends all the same.
            let open = self.conns().contains_key(&reader);
            return if open { self.call(reader, sql::rollback) } else { Ok(()) };
        }
        self.ensure_configured(reader)?;
        self.call(reader, |conn| {
            sql::rollback(conn)?;
            conn.exec(&format!("PRAGMA wal_checkpoint({})", CHECKPOINT_MODES[mode]))
        })
    }

    /// Close reader `reader`'s connection, if it has one, as a pool does
    /// while the others stay open: its read transaction ends with it. In
    /// WAL mode a connection that then gets `EXCLUSIVE` (no other holds a
    /// lock) checkpoints, deletes the WAL and unmaps the wal-index with
    /// its delete flag (`sqlite3WalClose`), the others still mapping it.
    pub(super) fn close(&self, reader: usize) -> Result<(), KitError> {
        let Some(conn) = self.conns().remove(&reader) else { return Ok(()) };
        self.configured().remove(&reader);
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let context = conn.vfs().context().clone();
        let _gate = gate(self.prng_seed, call);
        drop(conn);
        raise_panic(&context);
        Ok(())
    }

    /// Whether the writer's connection is in a write transaction, by
    /// SQLite's own account (`TxnProbe`).
    pub(super) fn writer_writing(&self) -> bool {
        let probe = *self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        probe.is_some_and(TxnProbe::writing)
    }

    /// Run `body` on reader `reader`'s connection (open) through the gate.
    pub(super) fn call<T>(
        &self,
        reader: usize,
        body: impl FnOnce(&Conn) -> Result<T, SqlError>,
    ) -> Result<T, KitError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let _gate = gate(self.prng_seed, call);
        let conns = self.conns();
        let conn = conns.get(&reader).expect("a reader's connection is opened before it is used");
        let result = body(conn);
        raise_panic(conn.vfs().context());
        result.map_err(kit_error)
    }

    /// The strongest `xLock` level any connection holds on the database
    /// file, by SQLite's name: the writer's, when asked as a reader's
    /// begin was refused (the refused reader released its own, and the
    /// others hold at most `SHARED`).
    /// In WAL mode the WAL's write lock (wal-index slot 0), held by any
    /// connection, is reported first, as `WAL_WRITE`.
    pub(super) fn writer_lock(&self) -> &'static str {
        let shared = &self.connector.shared;
        if self.connector.config.journal_mode == JournalMode::Wal && shared.shm_slot_exclusive(&self.connector.path, 0)
        {
            return "WAL_WRITE";
        }
        let level = shared.strongest_lock(&self.connector.path);
        match level {
            ffi::SQLITE_LOCK_NONE => "NONE",
            ffi::SQLITE_LOCK_SHARED => "SHARED",
            ffi::SQLITE_LOCK_RESERVED => "RESERVED",
            ffi::SQLITE_LOCK_PENDING => "PENDING",
            _ => "EXCLUSIVE",
        }
    }
}

impl SqliteDb {
    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("open until dropped or closed")
    }

    /// Run `body` on the writer's connection through the gate.
    pub(super) fn call<T>(&mut self, body: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, KitError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let _gate = gate(self.prng_seed, call);
        let conn = self.conn();
        let result = body(conn);
        raise_panic(conn.vfs().context());
        result.map_err(kit_error)
    }

    /// From now on the writer waits when refused as busy, as an
    /// application's busy handler does (`PRAGMA busy_timeout`: SQLite's
    /// default handler sleeps 1, 2, 5, ... ms through `xSleep` until
    /// [`BUSY_TIMEOUT_MS`]), and each sleep is a point where the kit may
    /// step a reader (`VfsContext::pause_on_sleep`). Only for a run whose
    /// readers step inside the writer's calls (`--interleave`): with one
    /// thread and no such steps nobody could clear meanwhile.
    pub(super) fn wait_when_busy(&mut self) {
        if self.waits_when_busy {
            return;
        }
        self.waits_when_busy = true;
        self.conn().vfs().context().pause_on_sleep();
        // A pragma that answers a row and touches no file.
        let set = self.call(|conn| conn.exec(&format!("PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")));
        debug_assert!(set.is_ok(), "busy_timeout is set without I/O: {set:?}");
    }

    /// A put (`value`) or a delete (`None`): the value it replaced, the
    /// key's value before the write transaction noted (see
    /// `SqliteDb::undo`).
    pub(super) fn write(
        &mut self,
        table: usize,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>, KitError> {
        let old = self.call(|conn| sql::write(conn, table, key, value))?;
        self.undo.entry((table, key.to_vec())).or_insert_with(|| old.clone());
        Ok(old)
    }
}

/// The database file, in the kit's directory.
pub(super) const DB_NAME: &str = "data.sqlite";

/// `SQLITE_DEFAULT_SECTOR_SIZE`: what os_unix's `xSectorSize` reports on
/// Linux (it asks the device only for F2FS atomic writes).
pub(super) const OS_UNIX_SECTOR_BYTES: u32 = 4096;

/// Open the writer's connection to the database at `path` on `vfs`, its
/// own VFS registered for it with `options`, in a fresh simulated process
/// (no locks, no wal-index).
pub(super) fn open_db(
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    options: VfsOptions,
    config: &SqliteConfig,
    create: bool,
) -> Result<SqliteDb, KitError> {
    let connector = Arc::new(Connector { vfs, path, options, config: config.clone(), shared: Arc::default() });
    let (conn, prng_seed) = connector.connect(create)?;
    let calls = Arc::new(AtomicU64::new(0));
    let conns = Mutex::default();
    let writer = Mutex::new(Some(conn.txn_probe()));
    let readers = Arc::new(ReaderPool {
        conns,
        configured: Mutex::default(),
        writer,
        connector: connector.clone(),
        calls: calls.clone(),
        prng_seed,
    });
    let mut db = SqliteDb {
        conn: Some(conn),
        readers,
        connector,
        undo: BTreeMap::new(),
        calls,
        prng_seed,
        waits_when_busy: false,
    };
    db.call(|conn| {
        if create {
            conn.exec(&format!("PRAGMA page_size={}", config.page_bytes))?;
        }
        configure_connection(conn, config)?;
        integrity_check(conn)?;
        create_tables(conn)
    })?;
    Ok(db)
}
