//! # segsim-target — the segsim engine as a target of the simulator
//!
//! Everything only the segsim engine's simulation uses, in one crate: the
//! swarm configuration (`config`), the operation list (`workload`), the
//! driver that runs one operation at a time with the checker's bookkeeping
//! (`drive`), the checker itself (`checker`: the reference model and the
//! durability contract), the random mode's run (`run`), the `Target`
//! implementation the explorer and shrinker use ([`segsim`]), the planted
//! engine bugs and their hunt (`canary`, `hunt`, `planted`), the
//! `store_ops` fuzz target and its corpus (`fuzzing`) and the figures
//! (`bench`). The simulator itself (the disk, the run loop, the explorer,
//! the shrinker) is the `simulator` crate's; the `sim` binary registers
//! this target as its default.
//!
//! Public for the `sim` binary, its tests and benches, and the fuzz crate;
//! what only they use is hidden from the docs.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod canary;
pub(crate) mod checker;
#[doc(hidden)]
pub mod config;
pub(crate) mod drive;
#[doc(hidden)]
pub mod fuzzing;
#[doc(hidden)]
pub mod hunt;
#[doc(hidden)]
pub mod planted;
#[doc(hidden)]
pub mod run;
pub mod segsim;
pub(crate) mod workload;

/// The segsim target's name, the default `--target`.
pub const SEGSIM: &str = "segsim";
