//! The SQLite target: the amalgamation bundled by `libsqlite3-sys`, run on
//! the simulated disk through the target kit (`simkit`). SQLITE.md
//! says what SQLite documents for each (journal_mode, synchronous), what
//! the runs measured, and where the two disagree.
//!
//! What is SQLite's own is small: `vfs.rs` (with `vfs/`), a
//! `sqlite3_vfs` in Rust that routes every file operation through the
//! kit's [`::vfs::Vfs`] and carries the planted bugs; `conn.rs`, the few C
//! calls behind safe types; and `adapter.rs`, what SQLite offers in the
//! kit's words, with the seed's settings (`settings.rs`), an open
//! database behind the process-wide gate (`db.rs`) and the SQL it runs
//! (`sql.rs`). The rest — workload, model, oracle, runs, shrinking,
//! exploration — is the kit's.
//!
//! Determinism: SQLite keeps process-wide state that a seed could
//! otherwise see — its PRNG (serialised and reseeded per call: see
//! `db.rs`) and, in the bundled build, one page-cache group shared by
//! every connection (`SQLITE_ENABLE_MEMORY_MANAGEMENT`, undefined by
//! `.cargo/config.toml` so that each connection caches alone).

mod adapter;
mod conn;
mod db;
mod readers;
mod settings;
mod shared;
mod sql;
mod vfs;

pub use adapter::SqliteAdapter;
pub use db::SqliteDb;
pub use settings::{promise_of, JournalMode, SqliteConfig, Synchronous};
pub use vfs::{RegisteredVfs, VfsContext, VfsOptions, VfsPlant};

#[cfg(test)]
mod tests;
