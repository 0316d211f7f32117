//! # testkit — what tests the engine, kept out of the engine
//!
//! The engine's public surface is what a user of the store needs. What
//! exists only to *check* it lives here, in its own crate, so no arrow can
//! point from the store to its own oracle:
//!
//! - [`model`]: the reference model — the store's logical behaviour as a
//!   plain map, sharing no logic with the store — with the undo and
//!   comparison machinery the simulator's checker runs on;
//! - [`fuzzing`]: the bodies of the cargo-fuzz targets over the log, the
//!   segment and the manifest parsers, as plain functions that stable
//!   `cargo test` replays over the committed corpus;
//! - [`transcript`]: a logical content written down flat, for comparing
//!   two walks of a store without a map of every key.
//!
//! `sim`, `fuzz` and the engine's own integration tests depend on it; the
//! engine never does (only as a dev-dependency, for `engine/tests/`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fuzzing;
pub mod model;
pub mod transcript;
