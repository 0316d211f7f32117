//! Systems under test: the targets built into the `sim` binary. The
//! segsim store ([`segsim`]) is the default; [`redb`] and [`sqlite`] are
//! databases nobody here wrote (each behind the cargo feature of its name,
//! on by default), tested through the target kit
//! (`crate::kit`) like any other transactional key-value engine. Each
//! implements the seam (`crate::seam::Target`); the command line's
//! registry (`crate::cli`) names them. (The folder is not called
//! `target`: that is cargo's build directory, and tools that skip it
//! skip this.)

#[cfg(feature = "redb")]
pub mod redb;
pub mod segsim;
#[cfg(feature = "sqlite")]
pub mod sqlite;

#[cfg(feature = "redb")]
use self::redb::RedbAdapter;
#[cfg(feature = "sqlite")]
use self::sqlite::SqliteAdapter;
use crate::kit::{Adapter, Kit, KitSettings};

/// The segsim target's name, the default `--target`.
pub const SEGSIM: &str = "segsim";

/// The redb target with `settings` (its program and flag filled in).
#[cfg(feature = "redb")]
pub fn redb_target(settings: KitSettings) -> Kit<RedbAdapter> {
    built_in(RedbAdapter, settings)
}

/// The SQLite target with `settings` (its program and flag filled in).
#[cfg(feature = "sqlite")]
pub fn sqlite_target(settings: KitSettings) -> Kit<SqliteAdapter> {
    built_in(SqliteAdapter, settings)
}

/// A kit target of this binary: its repros run `sim --target NAME`.
pub fn built_in<A: Adapter>(adapter: A, mut settings: KitSettings) -> Kit<A> {
    settings.program = "cargo run --release -p sim --".to_string();
    settings.target_flag = format!(" --target {}", adapter.name());
    Kit::new(adapter, settings)
}
