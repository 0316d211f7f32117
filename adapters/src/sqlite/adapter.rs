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
//! This file is the kit's view of SQLite: the tables, the documented
//! hazards, the plants' names, the spec and one method per operation. The
//! seed's settings and their promises are `settings.rs`'s, an open
//! database and the gate every call holds (with why: determinism)
//! `db.rs`'s, and the SQL each operation runs `sql.rs`'s.

use simkit::{
    Adapter, DocumentedHazard, Env, KitError, Level, Maintain, Maintenance, OtherWrite, Plant, Previous, Promise,
    ReadTransactions, ReadersBeside, RngCore, Rows, Spec, Tolerances, WriteOutcome,
};

use std::sync::Arc;

use super::db::{open_db, ReaderPool, SqliteDb, DB_NAME, OS_UNIX_SECTOR_BYTES};
use super::readers::readers_of;
use super::settings::{promise_of, JournalMode, SqliteConfig, Synchronous};
use super::sql;
use super::vfs::{VfsOptions, VfsPlant};

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
        VfsPlant::ReservedOwnOnly,
        VfsPlant::SharedOverPending,
        VfsPlant::ShmUnlockReleasesAll,
        VfsPlant::ShmUnmapDiscardsShared,
    ];

    fn name(self) -> &'static str {
        match self {
            VfsPlant::NoSync => "sqlite-no-sync",
            VfsPlant::DeleteNoDirSync => "sqlite-delete-no-dirsync",
            VfsPlant::LateTruncate => "sqlite-late-truncate",
            VfsPlant::ShmExclusiveLies => "sqlite-shm-lock-lies",
            VfsPlant::LocksPerProcess => "sqlite-locks-per-process",
            VfsPlant::UnlockKeepsPending => "sqlite-unlock-keeps-pending",
            VfsPlant::ReservedOwnOnly => "sqlite-reserved-own-only",
            VfsPlant::SharedOverPending => "sqlite-shared-over-pending",
            VfsPlant::ShmUnlockReleasesAll => "sqlite-shm-unlock-releases-all",
            VfsPlant::ShmUnmapDiscardsShared => "sqlite-shm-unmap-discards-shared",
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
            VfsPlant::ReservedOwnOnly => {
                "the VFS's xCheckReservedLock answers for the calling handle only (a reader takes the writer's live \
                 journal for a hot one and is refused at RESERVED, where SQLite lets it begin; run with --clients)"
            }
            VfsPlant::SharedOverPending => {
                "the VFS's xLock grants SHARED while another connection holds PENDING (a reader begins while the \
                 writer waits for EXCLUSIVE; run with --clients and --interleave, whose busy handler waits)"
            }
            VfsPlant::ShmUnlockReleasesAll => {
                "the VFS's xShmLock unlock releases every wal-index slot the connection holds (the writer loses \
                 its write lock; run with --clients and --interleave, whose readers attempt writes)"
            }
            VfsPlant::ShmUnmapDiscardsShared => {
                "the VFS's xShmUnmap with its delete flag discards the wal-index regions other connections still \
                 map (unreachable: SQLite raises the flag only in the last connection, SQLITE.md)"
            }
        }
    }
}

/// SQLite as a kit target (the bundled amalgamation of `libsqlite3-sys`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SqliteAdapter;

impl Adapter for SqliteAdapter {
    type Db = SqliteDb;
    type Config = SqliteConfig;
    type Plant = VfsPlant;

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn configure(&self, rng: &mut dyn RngCore) -> SqliteConfig {
        SqliteConfig::drawn(rng)
    }

    fn configure_with(&self, rng: &mut dyn RngCore, options: &[(String, String)]) -> Result<SqliteConfig, String> {
        SqliteConfig::drawn_with(rng, options)
    }

    /// The drawn settings as `--set` spells them
    /// (`SqliteConfig::described`).
    fn describe_config(&self, config: &SqliteConfig) -> Vec<(String, String)> {
        config.described()
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
            tables: sql::TABLES,
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
        db.call(|conn| sql::get(conn, table, key))
    }

    fn scan(&self, db: &mut SqliteDb, table: usize) -> Result<Rows, KitError> {
        db.call(|conn| sql::scan(conn, table))
    }

    fn commit(&self, db: &mut SqliteDb, _level: usize) -> Result<(), KitError> {
        db.call(|conn| {
            sql::begin_if_needed(conn)?;
            conn.exec("COMMIT")
        })?;
        db.undo.clear();
        Ok(())
    }

    fn abort(&self, db: &mut SqliteDb) -> Result<(), KitError> {
        db.call(sql::rollback)?;
        db.undo.clear();
        Ok(())
    }

    /// The table as SQLite shows it, with the keys the open write
    /// transaction touched put back as SQLite answered them before it
    /// touched them (see `SqliteDb::undo`).
    fn read_committed(&self, db: &mut SqliteDb, table: usize) -> Result<Rows, KitError> {
        let mut rows = db.call(|conn| sql::scan(conn, table))?;
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

    fn close(&self, mut db: SqliteDb) -> Result<(), KitError> {
        db.call(sql::rollback)?;
        drop(db);
        Ok(())
    }

    fn maintenance(&self) -> Option<&dyn Maintain<SqliteDb>> {
        Some(self)
    }

    fn readers(&self) -> Option<&dyn ReadTransactions<SqliteDb>> {
        Some(self)
    }
}

impl Maintain<SqliteDb> for SqliteAdapter {
    fn maintain(&self, db: &mut SqliteDb) -> Result<(), KitError> {
        let journal_mode = db.connector.config.journal_mode;
        db.call(|conn| sql::maintain(conn, journal_mode))
    }
}

impl ReadTransactions<SqliteDb> for SqliteAdapter {
    fn begin_read(&self, db: &mut SqliteDb, reader: usize) -> Result<(), KitError> {
        db.readers.begin_read(reader)
    }

    fn reader_get(
        &self,
        db: &mut SqliteDb,
        reader: usize,
        table: usize,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, KitError> {
        db.readers.reader_get(reader, table, key)
    }

    fn reader_scan(&self, db: &mut SqliteDb, reader: usize, table: usize) -> Result<Rows, KitError> {
        db.readers.reader_scan(reader, table)
    }

    fn end_read(&self, db: &mut SqliteDb, reader: usize) -> Result<(), KitError> {
        db.readers.end_read(reader)
    }

    /// The strongest `xLock` level on the database file, as the process's
    /// lock table (`shared.rs`) holds it.
    fn writer_lock(&self, db: &mut SqliteDb) -> Option<&'static str> {
        Some(db.readers.writer_lock())
    }

    /// The readers' connections (`db::ReaderPool`): each is a connection
    /// of its own, sharing with the writer's only the file locks and the
    /// wal-index, which the VFS takes only inside each call.
    /// The writer's connection then waits when refused as busy, with the
    /// busy handler an application sets (`busy_timeout`): each of its
    /// `xSleep`s is a point where the kit may step a reader (`db.rs`).
    fn beside(&self, db: &mut SqliteDb) -> Option<Arc<dyn ReadersBeside>> {
        db.wait_when_busy();
        Some(db.readers.clone())
    }

    /// A reader's connection as a second writer (`db::ReaderPool::write_commit`).
    fn write_commit(
        &self,
        db: &mut SqliteDb,
        writer: usize,
        write: &OtherWrite,
    ) -> Option<Result<WriteOutcome, KitError>> {
        Some(db.readers.write_commit(writer, write))
    }

    /// `PRAGMA wal_checkpoint` on a reader's connection (`db::ReaderPool::checkpoint`).
    fn checkpoint(&self, db: &mut SqliteDb, client: usize, mode: usize) -> Option<Result<(), KitError>> {
        Some(db.readers.checkpoint(client, mode))
    }

    /// A reader's connection closed, the others open (`db::ReaderPool::close`).
    fn close_client(&self, db: &mut SqliteDb, client: usize) -> Option<Result<(), KitError>> {
        Some(db.readers.close(client))
    }
}

impl ReadersBeside for ReaderPool {
    fn begin_read(&self, reader: usize) -> Result<(), KitError> {
        ReaderPool::begin_read(self, reader)
    }

    fn reader_get(&self, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        self.call(reader, |conn| sql::get(conn, table, key))
    }

    fn reader_scan(&self, reader: usize, table: usize) -> Result<Rows, KitError> {
        self.call(reader, |conn| sql::scan(conn, table))
    }

    fn end_read(&self, reader: usize) -> Result<(), KitError> {
        self.call(reader, sql::rollback)
    }

    fn writer_lock(&self) -> Option<&'static str> {
        Some(ReaderPool::writer_lock(self))
    }

    /// `BEGIN IMMEDIATE` on the reader's connection (its read transaction
    /// ended first), rolled back at once if granted.
    fn try_write(&self, reader: usize) -> Option<Result<bool, KitError>> {
        Some(ReaderPool::try_write(self, reader))
    }

    /// As between the writer's operations, inside one.
    fn write_commit(&self, writer: usize, write: &OtherWrite) -> Option<Result<WriteOutcome, KitError>> {
        Some(ReaderPool::write_commit(self, writer, write))
    }

    fn checkpoint(&self, client: usize, mode: usize) -> Option<Result<(), KitError>> {
        Some(ReaderPool::checkpoint(self, client, mode))
    }

    fn close_client(&self, client: usize) -> Option<Result<(), KitError>> {
        Some(ReaderPool::close(self, client))
    }

    /// `sqlite3_txn_state` of the writer's connection.
    fn writer_writing(&self) -> Option<bool> {
        Some(ReaderPool::writer_writing(self))
    }
}

/// Open the writer's connection on `env`'s disk (`db::open_db`), its VFS
/// told the sector size and the durability settings the seed drew.
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
    open_db(env.vfs.clone(), env.dir.join(DB_NAME), options, config, create)
}
