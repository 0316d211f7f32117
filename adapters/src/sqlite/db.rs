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

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use libsqlite3_sys as ffi;
use simkit::{ErrorKind, KitError};
use vfs::Vfs;

use super::conn::{reseed_prng, Conn, SqlError};
use super::readers::pin_snapshot;
use super::settings::SqliteConfig;
use super::shared::Shared;
use super::sql::{self, configure_connection, create_tables, integrity_check};
use super::vfs::{RegisteredVfs, VfsContext, VfsOptions};

/// How to open another connection of the same simulated process: the
/// writer's `SqliteDb` keeps it, so that readers open theirs on demand.
pub(super) struct Connector {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    options: VfsOptions,
    pub(super) config: SqliteConfig,
    /// The process's file locks and wal-indexes.
    shared: Arc<Shared>,
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
    /// Each reader's connection, opened at its first read transaction and
    /// kept (a connection pool's), closed before the writer's.
    readers: BTreeMap<usize, Conn>,
    pub(super) connector: Connector,
    /// Per key the open write transaction touched, its value before (as
    /// SQLite answered the first put or delete): the kit reads committed
    /// content between operations, and SQLite shows one connection only
    /// its own transaction's view. Only SQLite's answers go in here.
    pub(super) undo: BTreeMap<(usize, Vec<u8>), Option<Vec<u8>>>,
    /// Bumped by every call: the PRNG's reseed.
    calls: u64,
    prng_seed: u64,
}

impl Drop for SqliteDb {
    /// Readers first: the last connection to close a WAL database
    /// checkpoints it and deletes the WAL, and that is the writer's job.
    fn drop(&mut self) {
        let readers = std::mem::take(&mut self.readers).into_values();
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

/// Take the gate and reseed SQLite's PRNG for call `call` of a connection.
fn gate(prng_seed: u64, call: u64) -> std::sync::MutexGuard<'static, ()> {
    let guard = GATE.lock().unwrap_or_else(PoisonError::into_inner);
    reseed_prng(simulator::seeds::mix64(prng_seed ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15)) as u32);
    guard
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

impl SqliteDb {
    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("open until dropped or closed")
    }

    /// Run `body` on the writer's connection through the gate.
    pub(super) fn call<T>(&mut self, body: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, KitError> {
        self.calls += 1;
        let _gate = gate(self.prng_seed, self.calls);
        let conn = self.conn();
        let result = body(conn);
        raise_panic(conn.vfs().context());
        result.map_err(kit_error)
    }

    /// Begin reader `reader`'s read transaction (`readers.rs`), its
    /// connection opened first if it has none. Refused with `SQLITE_BUSY`
    /// (the writer holds `PENDING` or `EXCLUSIVE`), nothing stays open.
    pub(super) fn begin_read(&mut self, reader: usize) -> Result<(), KitError> {
        if !self.readers.contains_key(&reader) {
            let (conn, _) = self.connector.connect(false)?;
            self.readers.insert(reader, conn);
            let config = self.connector.config.clone();
            self.call_reader(reader, |conn| configure_connection(conn, &config))?;
        }
        self.call_reader(reader, pin_snapshot)
    }

    /// Run `body` on reader `reader`'s connection (open) through the gate.
    pub(super) fn call_reader<T>(
        &mut self,
        reader: usize,
        body: impl FnOnce(&Conn) -> Result<T, SqlError>,
    ) -> Result<T, KitError> {
        self.calls += 1;
        let _gate = gate(self.prng_seed, self.calls);
        let conn = self.readers.get(&reader).expect("a reader's connection is opened before it is used");
        let result = body(conn);
        raise_panic(conn.vfs().context());
        result.map_err(kit_error)
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
    let connector = Connector { vfs, path, options, config: config.clone(), shared: Arc::default() };
    let (conn, prng_seed) = connector.connect(create)?;
    let mut db =
        SqliteDb { conn: Some(conn), readers: BTreeMap::new(), connector, undo: BTreeMap::new(), calls: 0, prng_seed };
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
