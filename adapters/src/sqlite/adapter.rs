//! SQLite's [`Adapter`]: what SQLite offers, in the kit's words. SQLITE.md
//! says what each (journal_mode, synchronous) promises and what was found.
//!
//! - Two tables: `t0` (`INTEGER PRIMARY KEY`: a rowid table, the kit's
//!   `u64` keys reinterpreted as `i64`) and `t1` (`BLOB PRIMARY KEY ...
//!   WITHOUT ROWID`), so both of SQLite's b-tree kinds are exercised.
//! - One commit level, `commit` (`BEGIN ... COMMIT`): SQLite's durability
//!   is the connection's, not the transaction's, so its promise comes from
//!   the seed's `journal_mode` and `synchronous` ([`promise_of`]).
//! - Maintenance: `VACUUM`, then in WAL mode `PRAGMA
//!   wal_checkpoint(TRUNCATE)`. Declared as *not* making anything durable:
//!   under `synchronous=OFF` neither syncs anything. It changes no content.
//! - A seed draws the journal mode, `synchronous`, the page size and the
//!   cache size (a small cache spills dirty pages mid-transaction); `--set`
//!   forces each (`journal_mode=`, `synchronous=`, `page_size=`,
//!   `cache_size=`). The VFS claims what os_unix claims on Linux by default
//!   (`SQLITE_IOCAP_POWERSAFE_OVERWRITE`, and `SQLITE_DEFAULT_SECTOR_SIZE`,
//!   4096 bytes, as the sector size); `powersafe=off` and `sector=disk`
//!   (the disk's own sector size, 512 or 4096) are the measured variants,
//!   and the findings of SQLITE.md pinned before this default name them
//!   in their `.ops` files. `claim=durable` declares every
//!   commit durable whatever SQLite documents, so that a sweep *counts* the
//!   seeds that lost an acknowledged commit (SQLITE.md's "commits lost").
//! - After every open, `PRAGMA integrity_check`: anything but `ok` is
//!   [`ErrorKind::Corrupt`].
//! - SQLite's hardware assumptions (atomiccommit.html, "Hardware
//!   Assumptions") exclude garbage in a torn sector ("linear" writes) and
//!   bit errors on reads: both off unless asked for.
//! - Readers beside the writer (`--clients N`, up to 3): each its own
//!   connection of the same simulated process, sharing the file locks and
//!   the wal-index (`shared.rs`), holding a read transaction
//!   (`readers.rs`). In WAL mode they read their snapshot while the writer
//!   commits and checkpoints; in the rollback modes a reader's `SHARED`
//!   lock makes the writer's commit wait (`SQLITE_BUSY`: the kit ends the
//!   readers and retries, [`Readers::writer_waits`]).
//!
//! # Determinism
//! SQLite's PRNG (journal nonces, WAL salts) is process-wide, and so is
//! the list of VFSes. Every call into SQLite holds one process-wide gate
//! and first reseeds the PRNG from the connection's seed and a call count,
//! so what a connection draws never depends on other threads. The gate
//! serialises SQLite across `--jobs`; the cost is small next to the disk.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use vfs::Vfs;

use simkit::{Rng, RngCore};

use super::conn::{reseed_prng, Conn, SqlError};
use super::readers::{pin_snapshot, readers_of};
use super::shared::Shared;
use super::vfs::{RegisteredVfs, VfsContext, VfsOptions, VfsPlant};
use libsqlite3_sys as ffi;
use simkit::{
    Adapter, DocumentedHazard, Env, ErrorKind, KeyKind, KitError, Level, Maintenance, Plant, Previous, Promise, Rows,
    Spec, TableSpec, Tolerances,
};

const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

/// What SQLite does that the disk flags as a persistence hazard, by
/// design of `os_unix.c` (SQLITE.md, "Persistence hazards"):
///
/// - `unixSync` fsyncs the directory at a new journal's or WAL's first
///   sync and ignores that fsync's error (finding 5): the file is then
///   relied on under a name that may not be durable.
/// - `unixOpen` gives only a journal it *creates* the `UNIXFILE_DIRSYNC`
///   flag: a hot journal a dead process left, its name maybe never made
///   durable (the process died before that first sync), is opened, synced
///   and rolled back without a directory fsync.
///
/// Declared by file, so a hazard of another cause in these files would
/// pass as one of these: the report counts them all.
const HAZARDS: &[DocumentedHazard] = &[
    DocumentedHazard {
        file_suffix: "-journal",
        documented: "os_unix.c: unixSync ignores a failed directory fsync; unixOpen sets UNIXFILE_DIRSYNC only for a \
                     journal it creates, not a hot journal it rolls back",
    },
    DocumentedHazard {
        file_suffix: "-wal",
        documented: "os_unix.c: unixSync ignores a failed directory fsync at the WAL's first sync",
    },
];

impl Plant for VfsPlant {
    const ALL: &'static [VfsPlant] = &[
        VfsPlant::NoSync,
        VfsPlant::DeleteNoDirSync,
        VfsPlant::LateTruncate,
        VfsPlant::ShmExclusiveLies,
        VfsPlant::LocksPerProcess,
        VfsPlant::UnlockKeepsPending,
    ];

    fn name(self) -> &'static str {
        match self {
            VfsPlant::NoSync => "sqlite-no-sync",
            VfsPlant::DeleteNoDirSync => "sqlite-delete-no-dirsync",
            VfsPlant::LateTruncate => "sqlite-late-truncate",
            VfsPlant::ShmExclusiveLies => "sqlite-shm-lock-lies",
            VfsPlant::LocksPerProcess => "sqlite-locks-per-process",
            VfsPlant::UnlockKeepsPending => "sqlite-unlock-keeps-pending",
        }
    }

    fn what(self) -> &'static str {
        match self {
            VfsPlant::NoSync => "the VFS's xSync returns SQLITE_OK and syncs nothing",
            VfsPlant::DeleteNoDirSync => "the VFS's xDelete ignores syncDir (no directory fsync)",
            VfsPlant::LateTruncate => {
                "the VFS's xTruncate reaches the file only after the next xSync (that sync does not cover it)"
            }
            VfsPlant::ShmExclusiveLies => {
                "the VFS's xShmLock grants an exclusive wal-index lock over readers' shared ones (a checkpoint \
                 overwrites pages a reader's snapshot still reads; run with --clients)"
            }
            VfsPlant::LocksPerProcess => {
                "the VFS's xLock takes POSIX advisory locks as they are, which never conflict within one process \
                 (a rollback-journal writer commits over readers' SHARED locks; run with --clients)"
            }
            VfsPlant::UnlockKeepsPending => {
                "the VFS's xUnlock keeps the PENDING lock the writer took on the way to EXCLUSIVE (every reader's \
                 begin is refused as busy after the writer's first commit; run with --clients)"
            }
        }
    }
}

/// The database file, in the kit's directory.
const DB_NAME: &str = "data.sqlite";

/// `PRAGMA journal_mode` (the rollback modes and WAL; MEMORY and OFF keep
/// no journal on disk and promise nothing at a crash).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalMode {
    /// A rollback journal, deleted at each commit (SQLite's default).
    Delete,
    /// A rollback journal, truncated to zero at each commit.
    Truncate,
    /// A rollback journal, kept and its header zeroed at each commit.
    Persist,
    /// A write-ahead log, checkpointed into the database now and then.
    Wal,
}

/// `PRAGMA synchronous`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// No fsync at all: a crash can lose or corrupt committed data.
    Off,
    /// Fsync at the critical moments only: in WAL mode a crash can lose
    /// the last commits, but not corrupt the database.
    Normal,
    /// Fsync before each commit completes (SQLite's default).
    Full,
    /// As `Full`, and the directory fsynced after a rollback journal is
    /// deleted.
    Extra,
}

impl JournalMode {
    const ALL: [JournalMode; 4] = [JournalMode::Delete, JournalMode::Truncate, JournalMode::Persist, JournalMode::Wal];

    /// The pragma's word.
    pub fn name(self) -> &'static str {
        match self {
            JournalMode::Delete => "delete",
            JournalMode::Truncate => "truncate",
            JournalMode::Persist => "persist",
            JournalMode::Wal => "wal",
        }
    }
}

impl Synchronous {
    const ALL: [Synchronous; 4] = [Synchronous::Off, Synchronous::Normal, Synchronous::Full, Synchronous::Extra];

    /// The pragma's word.
    pub fn name(self) -> &'static str {
        match self {
            Synchronous::Off => "off",
            Synchronous::Normal => "normal",
            Synchronous::Full => "full",
            Synchronous::Extra => "extra",
        }
    }
}

/// Opens so far in one run: each connection's PRNG stream starts apart,
/// as a long-running process's would continue. Shared by the clones of
/// one run's configuration; not part of what the configuration says.
#[derive(Clone, Default)]
pub struct OpenCount(Arc<AtomicU64>);

impl std::fmt::Debug for OpenCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenCount")
    }
}

/// A seed's SQLite settings.
#[derive(Clone, Debug)]
pub struct SqliteConfig {
    /// `PRAGMA journal_mode`: with `synchronous`, it decides what a
    /// commit promises.
    pub journal_mode: JournalMode,
    /// `PRAGMA synchronous`.
    pub synchronous: Synchronous,
    /// `PRAGMA page_size`, set when the database is created.
    pub page_bytes: u32,
    /// `PRAGMA cache_size`, in pages.
    pub cache_pages: u32,
    /// The VFS claims `SQLITE_IOCAP_POWERSAFE_OVERWRITE`, as os_unix does
    /// by default (`--set powersafe=off` claims nothing).
    pub powersafe: bool,
    /// `xSectorSize` reports the disk's own sector size (`--set
    /// sector=disk`) instead of os_unix's 4096 (`sector=4096`, the default).
    pub sector_from_disk: bool,
    /// Every commit declared durable (`--set claim=durable`; SQLITE.md).
    pub claim_durable: bool,
    /// Every `xSync` an `fdatasync`, as SQLite built with `HAVE_FDATASYNC`
    /// (distributions' builds) does (`--set fdatasync=on`); off, the
    /// bundled build's `fsync` (vfs.rs).
    pub fdatasync: bool,
    /// Seeds each connection's PRNG stream.
    pub prng_seed: u64,
    /// Opens so far in this run, so each connection's PRNG stream starts
    /// apart.
    pub opens: OpenCount,
}

/// What a commit promises under `journal_mode` and `synchronous`, per
/// SQLite's documentation (pragma.html#pragma_synchronous, wal.html,
/// atomiccommit.html; the reasoning is SQLITE.md's):
///
/// - `OFF`: nothing ("the database might become corrupted" at a power loss).
/// - WAL with `FULL`/`EXTRA`: durable ("the WAL file is synchronized after
///   each transaction commit"). WAL with `NORMAL`: consistent, not durable
///   ("might roll back following a power loss").
/// - `DELETE` with `FULL`: consistent, not durable. The commit is the
///   journal's unlink, and only `EXTRA` syncs the directory after it
///   ("EXTRA provides additional durability if the commit is followed
///   closely by a power loss"). `DELETE` with `EXTRA`: durable.
/// - `TRUNCATE`/`PERSIST` with `FULL`/`EXTRA`: durable: the pager syncs the
///   journal after truncating it or zeroing its header (`fullSync`).
/// - rollback modes with `NORMAL`: nothing. The docs: "a very small
///   (though non-zero) chance that a power failure at just the wrong time
///   could corrupt the database". The final journal sync is skipped, and
///   SQLITE.md has a four-operation repro of that corruption on our disk
///   (TRUNCATE: a lost truncate revives the old journal under the next
///   transaction's torn records, which its sampled checksum accepts).
pub fn promise_of(journal_mode: JournalMode, synchronous: Synchronous) -> Promise {
    use JournalMode::*;
    use Synchronous::*;
    match (journal_mode, synchronous) {
        (_, Off) | (Delete | Truncate | Persist, Normal) => Promise::Nothing,
        (Wal, Full | Extra) | (Delete, Extra) | (Truncate | Persist, Full | Extra) => Promise::Durable,
        (Wal, Normal) | (Delete, Full) => Promise::Eventual,
    }
}

/// SQLite as a kit target (the bundled amalgamation of `libsqlite3-sys`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SqliteAdapter;

/// How to open another connection of the same simulated process: the
/// writer's `SqliteDb` keeps it, so that readers open theirs on demand.
struct Connector {
    vfs: Arc<dyn Vfs>,
    path: PathBuf,
    options: VfsOptions,
    config: SqliteConfig,
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
    connector: Connector,
    /// Per key the open write transaction touched, its value before (as
    /// SQLite answered the first put or delete): the kit reads committed
    /// content between operations, and SQLite shows one connection only
    /// its own transaction's view. Only SQLite's answers go in here.
    undo: BTreeMap<(usize, Vec<u8>), Option<Vec<u8>>>,
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

/// A `t0` key: the kit's 8 big-endian bytes, as SQLite's signed rowid.
fn rowid(key: &[u8]) -> i64 {
    u64::from_be_bytes(key.try_into().expect("the kit hands a u64 table 8-byte keys")) as i64
}

fn bind_key(stmt: &mut super::conn::Stmt<'_>, table: usize, key: &[u8]) -> Result<(), SqlError> {
    if table == 0 {
        stmt.bind_i64(1, rowid(key))
    } else {
        stmt.bind_blob(1, key)
    }
}

fn table_name(table: usize) -> &'static str {
    TABLES[table].name
}

impl SqliteDb {
    fn conn(&self) -> &Conn {
        self.conn.as_ref().expect("open until dropped or closed")
    }

    /// Run `body` on the writer's connection through the gate.
    fn call<T>(&mut self, body: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, KitError> {
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
    fn begin_read(&mut self, reader: usize) -> Result<(), KitError> {
        if !self.readers.contains_key(&reader) {
            let (conn, _) = self.connector.connect(false)?;
            self.readers.insert(reader, conn);
            let config = self.connector.config.clone();
            self.call_reader(reader, |conn| configure_connection(conn, &config))?;
        }
        self.call_reader(reader, pin_snapshot)
    }

    /// Run `body` on reader `reader`'s connection (open) through the gate.
    fn call_reader<T>(
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
    fn write(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>, KitError> {
        let old = self.call(|conn| write(conn, table, key, value))?;
        self.undo.entry((table, key.to_vec())).or_insert_with(|| old.clone());
        Ok(old)
    }
}

/// One key's value in `table`, as the connection sees it now.
fn get(conn: &Conn, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, SqlError> {
    let mut stmt = conn.prepare(&format!("SELECT v FROM {} WHERE k = ?1", table_name(table)))?;
    bind_key(&mut stmt, table, key)?;
    Ok(if stmt.step()? { Some(stmt.column_blob(0)) } else { None })
}

/// A whole table, as the connection sees it now. A table that does not
/// exist is empty (the kit's rule: a level that promises nothing may lose
/// even the schema).
fn scan(conn: &Conn, table: usize) -> Result<Rows, SqlError> {
    let mut stmt = match conn.prepare(&format!("SELECT k, v FROM {}", table_name(table))) {
        Err(e) if e.message.starts_with("no such table") => return Ok(Rows::new()),
        other => other?,
    };
    let mut rows = Rows::new();
    while stmt.step()? {
        let key = if table == 0 { (stmt.column_i64(0) as u64).to_be_bytes().to_vec() } else { stmt.column_blob(0) };
        rows.insert(key, stmt.column_blob(1));
    }
    Ok(rows)
}

fn rollback(conn: &Conn) -> Result<(), SqlError> {
    if conn.autocommit() {
        return Ok(());
    }
    conn.exec("ROLLBACK")
}

fn begin_if_needed(conn: &Conn) -> Result<(), SqlError> {
    if conn.autocommit() {
        conn.exec("BEGIN")?;
    }
    Ok(())
}

/// A put (`value`) or a delete (`None`) in the write transaction: the
/// value it replaced.
fn write(conn: &Conn, table: usize, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>, SqlError> {
    begin_if_needed(conn)?;
    let old = get(conn, table, key)?;
    let name = table_name(table);
    let mut stmt = match value {
        Some(value) => {
            let mut stmt = conn.prepare(&format!("INSERT OR REPLACE INTO {name} (k, v) VALUES (?1, ?2)"))?;
            stmt.bind_blob(2, value)?;
            stmt
        }
        None => conn.prepare(&format!("DELETE FROM {name} WHERE k = ?1"))?,
    };
    bind_key(&mut stmt, table, key)?;
    stmt.step()?;
    Ok(old)
}

/// `VACUUM`, then in WAL mode a truncating checkpoint; skipped with a
/// write transaction open (VACUUM refuses one, and the kit asks a
/// maintenance that does not make things durable to change nothing).
fn maintain(conn: &Conn, journal_mode: JournalMode) -> Result<(), SqlError> {
    if !conn.autocommit() {
        return Ok(());
    }
    conn.exec("VACUUM")?;
    if journal_mode == JournalMode::Wal {
        conn.exec("PRAGMA wal_checkpoint(TRUNCATE)")?;
    }
    Ok(())
}

/// The connection's settings (a reader's too). WAL runs in the normal
/// locking mode, its wal-index in the VFS's shared memory (`shared.rs`).
fn configure_connection(conn: &Conn, config: &SqliteConfig) -> Result<(), SqlError> {
    let mode = conn.query_text(&format!("PRAGMA journal_mode={}", config.journal_mode.name()))?;
    if mode.first().map(String::as_str) != Some(config.journal_mode.name()) {
        return Err(SqlError {
            code: ffi::SQLITE_ERROR,
            message: format!("journal_mode={} answered {mode:?}", config.journal_mode.name()),
        });
    }
    conn.exec(&format!("PRAGMA synchronous={}", config.synchronous.name()))?;
    conn.exec(&format!("PRAGMA cache_size={}", config.cache_pages))?;
    Ok(())
}

/// Both tables, created if missing: at the setup, and after a power loss
/// under a level that promises nothing took the schema with it (a missing
/// table is an empty one; this changes no content). Writes nothing when
/// both exist.
fn create_tables(conn: &Conn) -> Result<(), SqlError> {
    conn.exec("CREATE TABLE IF NOT EXISTS t0 (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")?;
    conn.exec("CREATE TABLE IF NOT EXISTS t1 (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
}

/// `PRAGMA integrity_check` must answer `ok`, or the database is corrupt.
fn integrity_check(conn: &Conn) -> Result<(), SqlError> {
    let answer = conn.query_text("PRAGMA integrity_check")?;
    if answer == ["ok"] {
        return Ok(());
    }
    Err(SqlError { code: ffi::SQLITE_CORRUPT, message: format!("integrity_check: {}", answer.join("; ")) })
}

/// `SQLITE_DEFAULT_SECTOR_SIZE`: what os_unix's `xSectorSize` reports on
/// Linux (it asks the device only for F2FS atomic writes).
const OS_UNIX_SECTOR_BYTES: u32 = 4096;

/// Open the writer's connection on `env`'s disk, its own VFS registered
/// for it, in a fresh simulated process (no locks, no wal-index).
fn open_conn(env: &Env<'_, SqliteAdapter>, create: bool) -> Result<SqliteDb, KitError> {
    let config = env.config;
    let options = VfsOptions {
        sector_bytes: if config.sector_from_disk {
            u32::try_from(env.sector_bytes).expect("the disk's sector size fits a u32")
        } else {
            OS_UNIX_SECTOR_BYTES
        },
        powersafe: config.powersafe,
        fdatasync: config.fdatasync,
        plant: env.plant,
    };
    let connector = Connector {
        vfs: env.vfs.clone(),
        path: env.dir.join(DB_NAME),
        options,
        config: config.clone(),
        shared: Arc::default(),
    };
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

/// `--set` option `key` parsed from `value` by `parse`, or why not.
fn option<T>(key: &str, value: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, String> {
    parse(value).ok_or_else(|| format!("--set {key}={value}: not a value sqlite's {key} takes"))
}

fn on_off(value: &str) -> Option<bool> {
    match value {
        "on" | "true" | "1" => Some(true),
        "off" | "false" | "0" => Some(false),
        _ => None,
    }
}

impl Adapter for SqliteAdapter {
    type Db = SqliteDb;
    type Config = SqliteConfig;
    type Plant = VfsPlant;

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn configure(&self, rng: &mut dyn RngCore) -> SqliteConfig {
        SqliteConfig {
            journal_mode: JournalMode::ALL[rng.gen_range(0..4)],
            synchronous: Synchronous::ALL[rng.gen_range(0..4)],
            page_bytes: [512, 1024, 4096, 8192][rng.gen_range(0..4)],
            cache_pages: [8, 16, 100, 2000][rng.gen_range(0..4)],
            powersafe: true,
            sector_from_disk: false,
            claim_durable: false,
            fdatasync: false,
            prng_seed: rng.next_u64(),
            opens: OpenCount::default(),
        }
    }

    fn configure_with(&self, rng: &mut dyn RngCore, options: &[(String, String)]) -> Result<SqliteConfig, String> {
        let mut config = self.configure(rng);
        for (key, value) in options {
            match key.as_str() {
                "journal_mode" => {
                    config.journal_mode = option(key, value, |v| JournalMode::ALL.into_iter().find(|m| m.name() == v))?
                }
                "synchronous" => {
                    config.synchronous = option(key, value, |v| Synchronous::ALL.into_iter().find(|s| s.name() == v))?
                }
                "page_size" => {
                    config.page_bytes = option(key, value, |v| {
                        v.parse().ok().filter(|p: &u32| p.is_power_of_two() && (512..=65536).contains(p))
                    })?
                }
                "cache_size" => config.cache_pages = option(key, value, |v| v.parse().ok().filter(|c| *c > 0))?,
                "powersafe" => config.powersafe = option(key, value, on_off)?,
                "sector" => {
                    config.sector_from_disk = option(key, value, |v| match v {
                        "disk" => Some(true),
                        "4096" => Some(false),
                        _ => None,
                    })?
                }
                "claim" => config.claim_durable = option(key, value, |v| (v == "durable").then_some(true))?,
                "fdatasync" => config.fdatasync = option(key, value, on_off)?,
                _ => {
                    return Err(format!(
                        "sqlite takes --set journal_mode=, synchronous=, page_size=, cache_size=, powersafe=, \
                         sector=disk|4096, claim=durable, fdatasync= (got {key:?})"
                    ))
                }
            }
        }
        Ok(config)
    }

    /// The drawn settings as `--set` spells them (the PRNG seed and the
    /// open count are the run's, not settings).
    fn describe_config(&self, config: &SqliteConfig) -> Vec<(String, String)> {
        let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
        let mut pairs = vec![
            ("journal_mode", config.journal_mode.name().to_string()),
            ("synchronous", config.synchronous.name().to_string()),
            ("page_size", config.page_bytes.to_string()),
            ("cache_size", config.cache_pages.to_string()),
            ("powersafe", on_off(config.powersafe)),
            ("sector", if config.sector_from_disk { "disk" } else { "4096" }.to_string()),
        ];
        if config.claim_durable {
            pairs.push(("claim", "durable".to_string()));
        }
        pairs.into_iter().map(|(key, value)| (key.to_string(), value)).collect()
    }

    /// One commit level, whose promise [`promise_of`] reads from the
    /// seed's journal mode and synchronous level. Closing is not durable:
    /// it syncs nothing in the rollback modes, and the last commit's
    /// journal unlink (DELETE) or truncation (TRUNCATE, PERSIST under
    /// NORMAL) may still be undone by a power loss after it. An empty
    /// commit is not durable either: the adapter's `BEGIN` is deferred,
    /// which "means that the transaction does not actually start until
    /// the database is first accessed" (`lang_transaction.html`), so a
    /// transaction that never wrote never became a write transaction, its
    /// `COMMIT` opens no journal and syncs nothing, and it promises
    /// nothing about what an earlier commit left unsynced (a failed
    /// DELETE-mode commit whose journal unlink a process restart's reopen
    /// no longer sees, but a power loss brings back: SQLITE.md). Nor is a
    /// commit whose writes changed no page (a delete of an absent key):
    /// "If no database changes have been made, return early"
    /// (`sqlite3PagerCommitPhaseOne`), so it too syncs nothing (the kit's
    /// `Model::changes_nothing`; SQLITE.md, seed 3049099).
    fn spec(&self, config: &SqliteConfig) -> Spec {
        let promise =
            if config.claim_durable { Promise::Durable } else { promise_of(config.journal_mode, config.synchronous) };
        Spec {
            tables: TABLES,
            maintenance: Some(Maintenance { name: "vacuum", makes_durable: false }),
            hazards: HAZARDS,
            tolerates: Tolerances { torn_garbage: false, read_bitflips: false },
            close_makes_durable: false,
            empty_commit_makes_durable: false,
            readers: Some(readers_of(config.journal_mode == JournalMode::Wal)),
            ..Spec::new(vec![Level::new("commit", promise)])
        }
    }

    /// Create the file and both tables (see `open_conn`), then close (in WAL
    /// mode a clean close checkpoints), with `synchronous=EXTRA` whatever
    /// the seed draws: the application's setup is durable before the
    /// workload starts (the kit then syncs the directory).
    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let setup = SqliteConfig { synchronous: Synchronous::Extra, ..env.config.clone() };
        let env = Env { vfs: env.vfs.clone(), config: &setup, ..*env };
        self.close(open_conn(&env, true)?)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<SqliteDb, KitError> {
        open_conn(env, false)
    }

    fn put(&self, db: &mut SqliteDb, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        db.write(table, key, Some(value)).map(Previous::Was)
    }

    fn delete(&self, db: &mut SqliteDb, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        db.write(table, key, None).map(Previous::Was)
    }

    fn get(&self, db: &mut SqliteDb, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        db.call(|conn| get(conn, table, key))
    }

    fn scan(&self, db: &mut SqliteDb, table: usize) -> Result<Rows, KitError> {
        db.call(|conn| scan(conn, table))
    }

    fn commit(&self, db: &mut SqliteDb, _level: usize) -> Result<(), KitError> {
        db.call(|conn| {
            begin_if_needed(conn)?;
            conn.exec("COMMIT")
        })?;
        db.undo.clear();
        Ok(())
    }

    fn abort(&self, db: &mut SqliteDb) -> Result<(), KitError> {
        db.call(rollback)?;
        db.undo.clear();
        Ok(())
    }

    fn maintain(&self, db: &mut SqliteDb) -> Result<(), KitError> {
        let journal_mode = db.connector.config.journal_mode;
        db.call(|conn| maintain(conn, journal_mode))
    }

    /// The table as SQLite shows it, with the keys the open write
    /// transaction touched put back as SQLite answered them before it
    /// touched them (see `SqliteDb::undo`).
    fn read_committed(&self, db: &mut SqliteDb, table: usize) -> Result<Rows, KitError> {
        let mut rows = db.call(|conn| scan(conn, table))?;
        for ((t, key), before) in &db.undo {
            if *t != table {
                continue;
            }
            match before {
                Some(value) => rows.insert(key.clone(), value.clone()),
                None => rows.remove(key),
            };
        }
        Ok(rows)
    }

    fn begin_read(&self, db: &mut SqliteDb, reader: usize) -> Result<(), KitError> {
        db.begin_read(reader)
    }

    fn reader_get(
        &self,
        db: &mut SqliteDb,
        reader: usize,
        table: usize,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, KitError> {
        db.call_reader(reader, |conn| get(conn, table, key))
    }

    fn reader_scan(&self, db: &mut SqliteDb, reader: usize, table: usize) -> Result<Rows, KitError> {
        db.call_reader(reader, |conn| scan(conn, table))
    }

    fn end_read(&self, db: &mut SqliteDb, reader: usize) -> Result<(), KitError> {
        db.call_reader(reader, rollback)
    }

    fn close(&self, mut db: SqliteDb) -> Result<(), KitError> {
        db.call(rollback)?;
        drop(db);
        Ok(())
    }
}
