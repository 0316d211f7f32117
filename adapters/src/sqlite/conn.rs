//! The few SQLite C calls the adapter makes, behind safe types: a
//! connection opened on its own VFS ([`Conn`]), statements ([`Stmt`]), and
//! errors with SQLite's extended result code ([`SqlError`]).
//!
//! Kept apart from the adapter so that every `unsafe` block is here or in
//! `vfs.rs`, each with its argument. The connection owns its VFS and
//! closes before unregistering it: a VFS must outlive every file SQLite
//! opened through it.

// The C calls behind safe types: each `unsafe` block here argues why it
// holds (the crate denies `unsafe_code` everywhere else).
#![allow(unsafe_code)]

use std::ffi::{c_int, CStr, CString};
use std::fmt;
use std::ptr;

use libsqlite3_sys as ffi;

use super::vfs::RegisteredVfs;

/// An SQLite error: the extended result code and SQLite's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    /// The extended result code (`SQLITE_IOERR_FSYNC`, ...).
    pub code: c_int,
    /// `sqlite3_errmsg`, or what the adapter found wrong.
    pub message: String,
}

impl SqlError {
    /// The primary result code (`SQLITE_IOERR`, ...).
    pub fn primary(&self) -> c_int {
        self.code & 0xff
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SQLite code {})", self.message, self.code)
    }
}

/// An open connection and the VFS it runs on.
pub struct Conn {
    db: *mut ffi::sqlite3,
    /// Dropped after the connection is closed (see `Drop`).
    vfs: Option<RegisteredVfs>,
}

// SAFETY: SQLite is built threadsafe (SQLITE_THREADSAFE=1, serialized), so
// a connection may move between threads; the kit uses it from one at a time.
unsafe impl Send for Conn {}

impl Conn {
    /// Open `path` on `vfs` (`create`: create the file if missing).
    pub fn open(path: &str, vfs: RegisteredVfs, create: bool) -> Result<Conn, SqlError> {
        let c_path = CString::new(path).map_err(|_| SqlError { code: ffi::SQLITE_MISUSE, message: path.into() })?;
        let mut flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX;
        if create {
            flags |= ffi::SQLITE_OPEN_CREATE;
        }
        let mut db = ptr::null_mut();
        // SAFETY: valid NUL-terminated strings; `db` receives a handle that
        // must be closed even when the open fails, which `Conn`'s drop does.
        let rc = unsafe { ffi::sqlite3_open_v2(c_path.as_ptr(), &mut db, flags, vfs.name().as_ptr()) };
        let conn = Conn { db, vfs: Some(vfs) };
        if rc != ffi::SQLITE_OK {
            return Err(conn.error(rc));
        }
        // SAFETY: an open handle.
        unsafe { ffi::sqlite3_extended_result_codes(db, 1) };
        Ok(conn)
    }

    /// The VFS this connection runs on.
    pub fn vfs(&self) -> &RegisteredVfs {
        self.vfs.as_ref().expect("present until dropped")
    }

    /// The error for result code `rc`, with SQLite's message.
    fn error(&self, rc: c_int) -> SqlError {
        if self.db.is_null() {
            return SqlError { code: rc, message: "out of memory".into() };
        }
        // SAFETY: an open (or failed-open) handle; the message is copied
        // before the next call on it.
        let (code, message) = unsafe {
            let code = ffi::sqlite3_extended_errcode(self.db);
            (code, CStr::from_ptr(ffi::sqlite3_errmsg(self.db)).to_string_lossy().into_owned())
        };
        SqlError { code: if code == ffi::SQLITE_OK { rc } else { code }, message }
    }

    /// Prepare one statement.
    pub fn prepare(&self, sql: &str) -> Result<Stmt<'_>, SqlError> {
        let c_sql = CString::new(sql).expect("no NUL in the adapter's SQL");
        let mut raw = ptr::null_mut();
        // SAFETY: an open handle and a NUL-terminated statement.
        let rc = unsafe { ffi::sqlite3_prepare_v2(self.db, c_sql.as_ptr(), -1, &mut raw, ptr::null_mut()) };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        Ok(Stmt { raw, conn: self })
    }

    /// Run `sql` (one statement) to completion: the first column of every
    /// row it returns, as text.
    pub fn query_text(&self, sql: &str) -> Result<Vec<String>, SqlError> {
        let mut stmt = self.prepare(sql)?;
        let mut rows = Vec::new();
        while stmt.step()? {
            rows.push(String::from_utf8_lossy(&stmt.column_blob(0)).into_owned());
        }
        Ok(rows)
    }

    /// Run `sql` (one statement) and ignore what it returns.
    pub fn exec(&self, sql: &str) -> Result<(), SqlError> {
        self.query_text(sql).map(drop)
    }

    /// Whether the connection is outside any transaction (autocommit).
    pub fn autocommit(&self) -> bool {
        // SAFETY: an open handle.
        unsafe { ffi::sqlite3_get_autocommit(self.db) != 0 }
    }
}

/// Whether a connection is in a write transaction, asked from inside
/// another call on it (`TxnProbe::writing`): the writer's state as SQLite
/// itself keeps it, for the kit's steps inside the writer's I/O.
#[derive(Clone, Copy)]
pub struct TxnProbe(*mut ffi::sqlite3);

// SAFETY: the probe only reads a connection's transaction state, from the
// thread that runs the connection (a step nested in its own call), and the
// pool that holds it forgets it before the connection closes
// (`SqliteDb`'s drop).
unsafe impl Send for TxnProbe {}
// SAFETY: as `Send`.
unsafe impl Sync for TxnProbe {}

impl TxnProbe {
    /// `sqlite3_txn_state` of the main database is `SQLITE_TXN_WRITE`.
    pub fn writing(self) -> bool {
        // SAFETY: an open handle (see the `Send` argument); a null schema
        // name asks for the most advanced state of any schema.
        unsafe { ffi::sqlite3_txn_state(self.0, ptr::null()) == ffi::SQLITE_TXN_WRITE }
    }
}

impl Conn {
    /// A probe of this connection's transaction state (`TxnProbe`).
    pub fn txn_probe(&self) -> TxnProbe {
        TxnProbe(self.db)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: every `Stmt` borrows the connection, so all are finalized
        // by now; `sqlite3_close` on a null handle is a no-op.
        let rc = unsafe { ffi::sqlite3_close(self.db) };
        if rc != ffi::SQLITE_OK {
            // Still open: its files still point into the VFS, which must
            // then outlive it. Leak both rather than free what C holds.
            std::mem::forget(self.vfs.take());
        }
    }
}

/// A prepared statement, finalized when dropped.
pub struct Stmt<'c> {
    raw: *mut ffi::sqlite3_stmt,
    conn: &'c Conn,
}

impl Stmt<'_> {
    /// Bind `value` to parameter `index` (1-based) as a blob.
    pub fn bind_blob(&mut self, index: c_int, value: &[u8]) -> Result<(), SqlError> {
        // SAFETY: SQLITE_TRANSIENT makes SQLite copy the bytes at once.
        let rc = unsafe {
            ffi::sqlite3_bind_blob(
                self.raw,
                index,
                value.as_ptr().cast(),
                value.len() as c_int,
                ffi::SQLITE_TRANSIENT(),
            )
        };
        self.check(rc)
    }

    /// Bind `value` to parameter `index` (1-based) as an integer.
    pub fn bind_i64(&mut self, index: c_int, value: i64) -> Result<(), SqlError> {
        // SAFETY: a live statement.
        let rc = unsafe { ffi::sqlite3_bind_int64(self.raw, index, value) };
        self.check(rc)
    }

    fn check(&self, rc: c_int) -> Result<(), SqlError> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(self.conn.error(rc))
        }
    }

    /// Step once: `true` if a row is ready, `false` when done.
    pub fn step(&mut self) -> Result<bool, SqlError> {
        // SAFETY: a live statement.
        match unsafe { ffi::sqlite3_step(self.raw) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            rc => Err(self.conn.error(rc)),
        }
    }

    /// Column `index` (0-based) of the current row, as bytes.
    pub fn column_blob(&self, index: c_int) -> Vec<u8> {
        // SAFETY: a row is ready (after `step` returned `true`); the
        // pointer is valid for `bytes` bytes until the next step, and the
        // bytes are copied at once. Blob first, then bytes, as documented.
        unsafe {
            let data = ffi::sqlite3_column_blob(self.raw, index) as *const u8;
            let len = ffi::sqlite3_column_bytes(self.raw, index).max(0) as usize;
            if data.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(data, len).to_vec()
            }
        }
    }

    /// Column `index` (0-based) of the current row, as an integer.
    pub fn column_i64(&self, index: c_int) -> i64 {
        // SAFETY: a row is ready.
        unsafe { ffi::sqlite3_column_int64(self.raw, index) }
    }
}

impl Drop for Stmt<'_> {
    fn drop(&mut self) {
        // SAFETY: finalized once, here.
        unsafe { ffi::sqlite3_finalize(self.raw) };
    }
}

/// Reseed SQLite's process-wide PRNG (journal nonces, WAL salts) with
/// `seed` (never 0, which would read the default VFS's randomness).
pub fn reseed_prng(seed: u32) {
    let seed = seed.max(1) as c_int;
    // SAFETY: a documented test control taking an int and a connection
    // (null: use the int).
    unsafe { ffi::sqlite3_test_control(ffi::SQLITE_TESTCTRL_PRNG_SEED, seed, ptr::null_mut::<ffi::sqlite3>()) };
}
