//! SQLite's readers beside the writer (`--clients N`): what SQLite
//! promises a read transaction on another connection, and how a reader
//! opens its connection and pins its snapshot.
//!
//! Each reader is a connection of its own in the writer's simulated
//! process (the adapter's `Connector` opens it, `SqliteDb::begin_read`),
//! sharing the file locks and the wal-index (`shared.rs`), opened at its
//! first read transaction and kept until the database is dropped. A read transaction is `BEGIN` and a first read:
//! a deferred `BEGIN` takes no snapshot until the database is read
//! (`lang_transaction.html`), so `begin_read` reads the schema at once,
//! and the reader's view is the state committed at that moment.

use super::conn::{Conn, SqlError};
use simkit::Readers;

/// How many readers the kit may open beside the writer.
const MAX_READERS: usize = 3;

/// What SQLite promises readers, in WAL mode (`wal`) or a rollback mode.
///
/// - WAL (`wal.html`, "Concurrency"): "readers do not block writers and a
///   writer does not block readers"; a read transaction sees the database
///   as of its first read ("the end mark"), across the writer's commits
///   and checkpoints (a checkpoint "must stop when it reaches a page in
///   the WAL that is past the end mark of any current reader"). Readers
///   stay open across `VACUUM` and `wal_checkpoint(TRUNCATE)`, which then
///   reports itself blocked instead of resetting the WAL.
/// - The rollback journals (`lockingv3.html`): a reader holds `SHARED`
///   from its first read to its end, and the writer's `COMMIT` needs
///   `EXCLUSIVE`, which waits for every `SHARED` lock: `SQLITE_BUSY`, and
///   "the transaction remains active and the COMMIT can be retried later
///   after the reader has had a chance to clear" (`lang_transaction.html`).
///   A writer that spilled its cache holds `EXCLUSIVE` until it commits,
///   and a reader cannot begin meanwhile; a reader is refused only while
///   another connection holds `PENDING` or `EXCLUSIVE` ("no new SHARED
///   locks will be granted"), never at `RESERVED` (`refused_at`). `VACUUM` needs `EXCLUSIVE` too:
///   readers end before it.
/// - A second writer (`BEGIN IMMEDIATE`, `lang_transaction.html`): refused
///   (`SQLITE_BUSY`) while another connection holds `RESERVED` or above
///   (`lockingv3.html`: "only a single RESERVED lock may be active at one
///   time"), or in WAL mode the WAL's write lock (wal-index slot 0, which
///   the adapter reports as `WAL_WRITE`: `wal.html`, "there can only be
///   one writer at a time"); its `COMMIT` in a rollback mode waits for
///   every `SHARED` lock as the writer's does.
pub fn readers_of(wal: bool) -> Readers {
    Readers {
        max: MAX_READERS,
        across_maintenance: wal,
        writer_waits: !wal,
        refused_at: if wal { &[] } else { &["PENDING", "EXCLUSIVE"] },
        second_writer_refused_at: if wal {
            &["WAL_WRITE", "PENDING", "EXCLUSIVE"]
        } else {
            &["RESERVED", "PENDING", "EXCLUSIVE"]
        },
        documented: if wal {
            "wal.html ('readers do not block writers and a writer does not block readers'; a reader sees the \
             database as of its end mark, which a checkpoint never passes)"
        } else {
            "lockingv3.html (a reader's SHARED lock; the writer's EXCLUSIVE waits for every SHARED lock) and \
             lang_transaction.html (a COMMIT refused with SQLITE_BUSY stays active and may be retried)"
        },
    }
}

/// `BEGIN` and a first read: the snapshot is taken here. If the read is
/// refused (`SQLITE_BUSY`), the transaction is rolled back so that nothing
/// stays open.
pub fn pin_snapshot(conn: &Conn) -> Result<(), SqlError> {
    debug_assert!(conn.autocommit(), "a reader begins only with no transaction open");
    conn.exec("BEGIN")?;
    match conn.exec("SELECT count(*) FROM sqlite_schema") {
        Ok(()) => Ok(()),
        Err(e) => {
            if !conn.autocommit() {
                conn.exec("ROLLBACK")?;
            }
            Err(e)
        }
    }
}
