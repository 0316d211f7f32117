//! What fjall promises, as the kit's [`Spec`], each declaration with
//! where fjall says it (fjall 3.1.13 as published on crates.io, which is
//! also what docs.rs renders: file and line of the crate's source).
//!
//! - **Levels are `PersistMode`s**, the write's durability
//!   (`WriteTransaction::durability`, `OwnedWriteBatch::durability`): the
//!   commit writes its batch to the journal and then calls
//!   `journal_writer.persist(mode)` before it returns (`src/batch/mod.rs`
//!   lines 113–131).
//!   - `sync-all` (`PersistMode::SyncAll`, "Flushes data + metadata using
//!     `fsync`", `src/journal/writer.rs` line 48) and `sync-data`
//!     (`PersistMode::SyncData`, "Flushes data using `fdatasync`. Use if you
//!     know that `fdatasync` is sufficient for your file system", line 43):
//!     [`Promise::Durable`]. The journal is preallocated and synced when it
//!     is made (`Writer::create_new`, lines 124–150) and its directory
//!     synced at a rotation (line 119), so `fdatasync` is sufficient here.
//!   - `buffer` (`PersistMode::Buffer`, "Flushes data to OS buffers. This
//!     allows the OS to write out data in case of an application crash.
//!     When this function returns, data is **not** guaranteed to be
//!     persisted in case of a power loss event or OS crash", lines 36–41;
//!     the default of every write: `src/tx/optimistic/mod.rs` line 81,
//!     `src/db.rs` line 190): [`Promise::Eventual`], surviving a process
//!     kill. Never half of a batch: "Persisting only affects durability,
//!     NOT consistency! Even without flushing data is crash-safe"
//!     (`src/db.rs` line 328); a batch is framed by a start marker and an
//!     end marker holding its checksum (`Writer::write_batch`, lines
//!     326–379), and recovery cuts an unterminated tail
//!     (`src/journal/batch_reader.rs` lines 52–60).
//!   - `none` (durability `None`: the batch stays in the journal's
//!     8 KiB `BufWriter` until a later persist or a full buffer,
//!     `Writer::persist` lines 203–234; `Builder::manual_journal_persist`:
//!     "If `false`, write batches or transactions automatically flush data
//!     to the operating system", `src/builder.rs` line 60, so with `None`
//!     they do not): [`Promise::Eventual`], *not* surviving a process kill
//!     (it may still be in the process's buffer). Not `Volatile`: a full
//!     buffer writes it out on its own.
//! - **A failed commit is in doubt** (the kit's default): fjall documents
//!   no rollback; its batch may have reached the journal before the
//!   persist failed (`src/batch/mod.rs` lines 115–131).
//! - **An empty commit syncs nothing**: a transaction that wrote nothing
//!   and an empty batch return before the journal (`src/tx/write_tx.rs`
//!   line 317, `src/batch/mod.rs` line 101), so
//!   `empty_commit_makes_durable` is `false`.
//! - **A clean close makes every commit durable**: "when dropped, the
//!   database will try to persist the journal *to disk* synchronously"
//!   (README "Durability", line 126; `Journal::drop`,
//!   `src/journal/mod.rs` lines 44–56, `PersistMode::SyncAll`). The
//!   adapter's close calls `persist(SyncAll)` itself first, so that its
//!   error is heard (the drop's is only logged).
//! - **Faults**: no damage detection is declared (fjall checksums its
//!   journal batches and lsm-tree its blocks, but promises no detection
//!   of damage to durable bytes); torn garbage is tolerated for unsynced
//!   bytes (the batch checksum, `batch_reader.rs` line 127), read bit
//!   flips not (a checksum mismatch of a block is an error, never a
//!   re-read).
//! - **Errors of the workers surface later**: a worker whose flush or
//!   compaction fails "crashed" and poisons the database
//!   (`src/worker_pool.rs` lines 105–108); later writes fail with
//!   `Error::Poisoned`: "A previous flush / commit operation failed …
//!   Future writes will not be accepted … it's best to let the application
//!   crash and try to recover" (`src/error.rs` lines 34–41). See
//!   [`POISONED`] and FJALL.md.

use fjall::PersistMode;
use stdfs_layer::kit::{KeyKind, Level, Promise, Spec, TableSpec, Tolerances};

/// `t0`: keyspace `t0` of `u64` keys (big-endian, so byte order is
/// numeric order); `t1`: keyspace `t1` of byte keys.
pub const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

/// The kit's levels, in order, with the `PersistMode` each commits with.
const LEVELS: [(&str, Option<PersistMode>); 4] = [
    ("sync-all", Some(PersistMode::SyncAll)),
    ("sync-data", Some(PersistMode::SyncData)),
    ("buffer", Some(PersistMode::Buffer)),
    ("none", None),
];

/// Where fjall documents that an earlier failure refuses later writes.
pub const POISONED: &str = "fjall src/error.rs lines 34-41 (Error::Poisoned: a previous flush / commit failed, future writes are not accepted); src/worker_pool.rs lines 105-108 (a worker's error poisons the database)";

/// The `PersistMode` of kit level `level`.
pub fn level_mode(level: usize) -> Option<PersistMode> {
    LEVELS.get(level).unwrap_or_else(|| panic!("fjall's spec declares {} levels, not {level}", LEVELS.len())).1
}

/// The spec of every configuration (the API, the worker count and the
/// memtable size change no promise).
pub fn spec() -> Spec {
    let none = Level { survives_process_kill: false, ..Level::new(LEVELS[3].0, Promise::Eventual) };
    let levels = vec![
        Level::new(LEVELS[0].0, Promise::Durable),
        Level::new(LEVELS[1].0, Promise::Durable),
        Level::new(LEVELS[2].0, Promise::Eventual),
        none,
    ];
    Spec {
        tables: TABLES,
        tolerates: Tolerances { torn_garbage: true, read_bitflips: false },
        empty_commit_makes_durable: false,
        poisoned_after_fault: Some(POISONED),
        ..Spec::new(levels)
    }
}
