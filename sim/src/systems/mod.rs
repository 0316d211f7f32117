//! Systems under test: the targets built into the `sim` binary. The
//! segsim store ([`segsim`]) is the default; [`redb`] and [`sqlite`] are
//! databases nobody here wrote (each behind the cargo feature of its name,
//! on by default), tested through the target kit like any other
//! transactional key-value engine: their adapters are the `adapters`
//! crate's, re-exported here. Each
//! implements the seam (`crate::seam::Target`); the command line's
//! registry (`crate::cli`) names them. (The folder is not called
//! `target`: that is cargo's build directory, and tools that skip it
//! skip this.)

pub use segsim_target::segsim;

// The kit targets built in, from the `adapters` crate, under the names
// this crate's code has always used.
pub use adapters::built_in;
#[cfg(feature = "redb")]
pub use adapters::{redb, redb_target};
#[cfg(feature = "sqlite")]
pub use adapters::{sqlite, sqlite_target};

pub use segsim_target::SEGSIM;
