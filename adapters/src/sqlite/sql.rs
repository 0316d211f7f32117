//! The SQL the adapter runs, one function a statement or two: a key's
//! value, a table's rows, a put or delete in the write transaction (its
//! `BEGIN` deferred), rollback, maintenance (`VACUUM`, a WAL checkpoint),
//! the connection's pragmas, the schema, `PRAGMA integrity_check`. Each
//! takes an open [`Conn`] and answers SQLite's own error; the gate, the
//! PRNG and the kit's error kinds are `db.rs`'s.

use libsqlite3_sys as ffi;
use simkit::{KeyKind, Rows, TableSpec};

use super::conn::{Conn, SqlError, Stmt};
use super::settings::{JournalMode, SqliteConfig};

/// The kit's tables as SQLite holds them (see the module doc).
pub(super) const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

/// A `t0` key: the kit's 8 big-endian bytes, as SQLite's signed rowid.
fn rowid(key: &[u8]) -> i64 {
    u64::from_be_bytes(key.try_into().expect("the kit hands a u64 table 8-byte keys")) as i64
}

fn bind_key(stmt: &mut Stmt<'_>, table: usize, key: &[u8]) -> Result<(), SqlError> {
    if table == 0 {
        stmt.bind_i64(1, rowid(key))
    } else {
        stmt.bind_blob(1, key)
    }
}

fn table_name(table: usize) -> &'static str {
    TABLES[table].name
}

/// One key's value in `table`, as the connection sees it now.
pub(super) fn get(conn: &Conn, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, SqlError> {
    let mut stmt = conn.prepare(&format!("SELECT v FROM {} WHERE k = ?1", table_name(table)))?;
    bind_key(&mut stmt, table, key)?;
    Ok(if stmt.step()? { Some(stmt.column_blob(0)) } else { None })
}

/// A whole table, as the connection sees it now. A table that does not
/// exist is empty (the kit's rule: a level that promises nothing may lose
/// even the schema).
pub(super) fn scan(conn: &Conn, table: usize) -> Result<Rows, SqlError> {
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

pub(super) fn rollback(conn: &Conn) -> Result<(), SqlError> {
    if conn.autocommit() {
        return Ok(());
    }
    conn.exec("ROLLBACK")
}

pub(super) fn begin_if_needed(conn: &Conn) -> Result<(), SqlError> {
    if conn.autocommit() {
        conn.exec("BEGIN")?;
    }
    Ok(())
}

/// A put (`value`) or a delete (`None`) in the write transaction: the
/// value it replaced.
pub(super) fn write(conn: &Conn, table: usize, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>, SqlError> {
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
pub(super) fn maintain(conn: &Conn, journal_mode: JournalMode) -> Result<(), SqlError> {
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
pub(super) fn configure_connection(conn: &Conn, config: &SqliteConfig) -> Result<(), SqlError> {
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
pub(super) fn create_tables(conn: &Conn) -> Result<(), SqlError> {
    conn.exec("CREATE TABLE IF NOT EXISTS t0 (k INTEGER PRIMARY KEY, v BLOB NOT NULL)")?;
    conn.exec("CREATE TABLE IF NOT EXISTS t1 (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
}

/// `PRAGMA integrity_check` must answer `ok`, or the database is corrupt.
pub(super) fn integrity_check(conn: &Conn) -> Result<(), SqlError> {
    let answer = conn.query_text("PRAGMA integrity_check")?;
    if answer == ["ok"] {
        return Ok(());
    }
    Err(SqlError { code: ffi::SQLITE_CORRUPT, message: format!("integrity_check: {}", answer.join("; ")) })
}
