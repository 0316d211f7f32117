//! # engine — a key-value store with a row-segment cold tier
//!
//! Hot rows live in memory and in an append-only log (the AOF). The
//! out-of-window rows of a windowed table are sealed into immutable,
//! checksummed segment files and leave only a stub in memory. Every byte
//! of I/O goes through the [`vfs::Vfs`] seam and every reading of time
//! through [`clock::Clock`], so the `sim` crate can run the engine on a
//! simulated disk that crashes, tears and corrupts, and check that it
//! recovers. See `ARCHITECTURE.md` at the repository root for the map.

#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

/// Whether the planted bug `Name` (a `canary::Canary`) is switched on for
/// this thread (engine-internal: the simulator may switch a canary on, never
/// read it). Each planted bug is an `if canary!(Name) { ... }` beside
/// the correct code; see `canary/mod.rs`.
#[cfg(feature = "canaries")]
macro_rules! canary {
    ($name:ident) => {
        $crate::canary::is_on($crate::canary::Canary::$name)
    };
}

/// Without the `canaries` feature no bug is planted: the constant `false`,
/// so every planted branch is dead code the compiler drops.
#[cfg(not(feature = "canaries"))]
macro_rules! canary {
    ($name:ident) => {
        false
    };
}

// What a user of the store needs is public: `store` (with the fsync
// policy it is opened with, `store::FsyncPolicy`), `vfs`, `clock`, `error`
// and `phase`. The layers the store is built from — the log, the segment
// files, the manifest, the frame and the byte decoder — are the crate's
// own: public only with the `testing` feature, which `testkit`, `sim` and
// the fuzz targets turn on to build logs, segments and manifests byte by
// byte and to read them back. Without it, what only they call is unused
// here: each such item carries its own `dead_code` (or, for a re-export,
// `unused_imports`) allowance, gated on the feature being off, so code
// that nothing calls at all still warns.
#[cfg(feature = "testing")]
pub mod aof;
#[cfg(not(feature = "testing"))]
pub(crate) mod aof;
#[cfg(feature = "canaries")]
pub mod canary;
#[cfg(not(feature = "canaries"))]
mod canary;
/// The time seam, from the `vfs` crate (see its `clock` module).
pub use vfs::clock;
#[cfg(feature = "testing")]
pub mod codec;
#[cfg(not(feature = "testing"))]
pub(crate) mod codec;
pub mod error;
#[cfg(feature = "testing")]
pub mod frame;
#[cfg(not(feature = "testing"))]
pub(crate) mod frame;
#[cfg(feature = "testing")]
pub mod manifest;
#[cfg(not(feature = "testing"))]
pub(crate) mod manifest;
pub mod phase;
#[cfg(feature = "testing")]
pub mod seg;
#[cfg(not(feature = "testing"))]
pub(crate) mod seg;
pub mod store;
/// The file-system seam: the `vfs` crate, re-exported so a store user
/// names one crate.
pub use vfs;

pub use error::{Error, IoOp, Result};
pub use phase::Phase;
