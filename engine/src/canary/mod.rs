//! Canaries: bugs planted in the engine on purpose, to prove that the
//! simulator can fail.
//!
//! A checker that never fails proves nothing until it has been seen to
//! fail on the very bugs it exists to find. Each `Canary` is one such bug —
//! a skipped fsync, a reordered phase, a forgotten count — planted at the
//! exact spot where a real engineer could have written it. The simulator
//! switches one on for a run (`sim --canary NAME`, or `sim canaries` for
//! all of them) and must then report a failure.
//!
//! # Discipline
//! - Each site is one guard expression, `if canary!(Name) { ... }` or a
//!   `&& !canary!(Name)` in a condition, beside the correct code, and its
//!   body is a line or two, so the engine's own files read as the correct
//!   protocol with a few marked detours. (Planted code longer than that
//!   would live in a `planted.rs` here, named for what it does wrong; no
//!   canary needs one today.)
//! - No canary lives under `vfs/`: the seam is the simulator's ground
//!   truth, and a bug planted there would be a bug in the disk, not in the
//!   engine.
//! - Only the engine reads the switch (`switch.rs`, which exists only in a
//!   build with the `canaries` cargo feature). Without the feature,
//!   `canary!(Name)` is the constant `false` (see `lib.rs`): no canary
//!   state exists, and every planted branch is dead code the compiler
//!   drops.

#[cfg(feature = "canaries")]
mod switch;

#[cfg(feature = "canaries")]
pub(crate) use switch::is_on;
#[cfg(feature = "canaries")]
pub use switch::{set, Canary};
