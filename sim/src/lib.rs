//! # sim — deterministic simulation testing for storage engines
//!
//! **What other programs use** (the public API, documented and kept
//! stable): [`kit`], the target kit — test any transactional key-value
//! engine through one `Adapter`, with `kit::main` as a whole command line
//! for your own binary; [`disk`], the simulated disk (`SimVfs`, its fault
//! model, crash modes and crash states); [`seam`], the `Target` trait
//! every system under test implements; [`systems`], the built-in targets
//! (segsim, and redb and SQLite on the kit);
//! [`explore`], exhaustive crash exploration of any target; [`cli`],
//! the command line every target shares; [`outcome`], [`summary`],
//! [`failure`] and [`trace`], what runs report.
//!
//! Everything else is the built-in `sim` binary's and this repository's
//! tests': hidden from the docs (`#[doc(hidden)]`, reachable only so the
//! integration tests, benches and the fuzz crate can use them) or
//! `pub(crate)`.
//!
//! How one seed runs: the swarm configuration (`config`), the operation
//! list (`workload`), every fault and every crash on the simulated disk
//! ([`disk`]), each through a stream named in `seeds`. For the segsim
//! engine, `drive` runs one operation at a time with the checker's
//! bookkeeping (`checker`: the reference model and the durability
//! contract) and `run` is the random mode; for a kit engine, `kit`'s own
//! loop does the same. `shrink` minimizes a failing list of any target and
//! keeps it as an `.ops` file; `hunt` hunts every planted engine bug
//! (`canary`); `fuzzing` holds the `store_ops` fuzz target and the corpus;
//! `bench` the figures. `draw` holds the random draws every target's
//! configuration and workload make the same way; `op_line` the head
//! (index, crash point) every operation line starts with; `planted` bugs
//! planted under the engine; `output` how commands end. `main.rs` calls
//! [`cli`].

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
// Safe Rust everywhere but the SQLite target's FFI (`systems/sqlite/conn.rs`,
// `vfs.rs`, `vfs/locking.rs`, and `shared.rs`'s wal-index memory), which
// allow it file by file and argue each block.
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
