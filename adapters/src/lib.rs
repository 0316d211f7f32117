//! # adapters — databases nobody here wrote, on the simulated disk
//!
//! [`redb`] and [`sqlite`] (each behind the cargo feature of its name, on
//! by default) are tested through the target kit ([`simkit`]) like any
//! other transactional key-value engine: each is one `Adapter`, its `Spec`
//! and its planted bugs. The `sim` binary registers them (`--target redb`,
//! `--target sqlite`); REDB.md and SQLITE.md say what each is held to and
//! what was found.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
// Safe Rust everywhere but the SQLite target's FFI (`sqlite/conn.rs`,
// `vfs.rs`, `vfs/file.rs`, `vfs/locking.rs`, and `shared.rs`'s wal-index
// memory), which allow it file by file and argue each block.
#![deny(unsafe_code)]

#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "sqlite")]
pub mod sqlite;

#[cfg(feature = "redb")]
use self::redb::RedbAdapter;
#[cfg(feature = "sqlite")]
use self::sqlite::SqliteAdapter;
use simkit::{Adapter, Kit, KitSettings};

/// redb as the `sim` binary runs it (`--target redb`).
#[cfg(feature = "redb")]
pub fn redb_target(settings: KitSettings) -> Kit<RedbAdapter> {
    built_in(RedbAdapter, settings)
}

/// SQLite as the `sim` binary runs it (`--target sqlite`).
#[cfg(feature = "sqlite")]
pub fn sqlite_target(settings: KitSettings) -> Kit<SqliteAdapter> {
    built_in(SqliteAdapter, settings)
}

/// `adapter` as a target of the `sim` binary: its repro lines name
/// `cargo run --release -p sim -- --target NAME`.
pub fn built_in<A: Adapter>(adapter: A, mut settings: KitSettings) -> Kit<A> {
    settings.program = "cargo run --release -p sim --".to_string();
    settings.target_flag = format!(" --target {}", adapter.name());
    Kit::new(adapter, settings)
}
