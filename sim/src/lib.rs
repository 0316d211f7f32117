//! # sim — the `sim` binary, and every product under one name
//!
//! This crate is the binary that registers every target
//! (`cargo run -p sim -- --seed N`; `main.rs` calls [`cli`]): the segsim
//! engine (the default, `segsim-target`), redb and SQLite (`adapters`, on
//! the kit), with `sim explore`, `sim trace` (`simtrace`), `sim canaries`,
//! `sim merge`, `sim crash-os` and `sim bench`. [`systems`] names the
//! built-in targets.
//!
//! Its library re-exports the workspace's crates under the names this
//! repository's tests, benches, examples and the fuzz crate have always
//! used: the simulator's modules (`sim::disk`, `sim::explore`,
//! `sim::seam`, ... from `simulator`), the kit (`sim::kit`, `simkit`),
//! `sim trace`'s (`sim::syscalls`, `simtrace`) and the segsim target's
//! (`sim::config`, `sim::run`, `sim::canary`, ... from `segsim-target`).
//! Code outside this repository depends on the crate it needs instead: a
//! kit user on `simkit` alone (ARCHITECTURE.md, "Crates").

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
// Safe Rust everywhere (the SQLite FFI is the `adapters` crate's).
#![deny(unsafe_code)]

pub mod cli;
pub mod systems;

// The segsim target, under the names this crate's code and its users
// have always used (`sim::config`, `sim::run`, ...).
pub use segsim_target::{bench, canary, config, fuzzing, hunt, planted, run};

// The target kit, under the name this crate's code has always used.
pub use simkit as kit;
// `sim trace`'s recorder, replayer and explorer.
pub use simtrace as syscalls;

// The simulator every target shares, under the names this crate's code
// and its users have always used (`sim::disk`, `sim::explore`, ...).
pub use simulator::{
    disk, draw, explore, failure, harness, op_line, outcome, output, report, seam, seeds, shrink, summary, trace,
};
