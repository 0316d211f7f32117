//! The redb target: crates.io `redb` 4, a database nobody here wrote, run
//! on the simulated disk through the target kit (`simkit`). REDB.md
//! says what is tested, what redb promises, and what was found.
//!
//! What is redb's own is small: `backend.rs`, redb's `StorageBackend` over
//! one simulated file with the planted bugs, and `adapter.rs`, what redb
//! offers in the kit's words (tables, commit levels and their promises,
//! compaction, the swarm's redb knobs). Everything else — workload, model,
//! oracle, runs, shrinking, exploration — is the kit's.

mod adapter;
mod backend;

pub use adapter::{RedbAdapter, RedbConfig, RedbDb};
pub use backend::{Plant, VfsBackend};

#[cfg(test)]
mod tests;
