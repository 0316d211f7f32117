//! # simulator — the deterministic simulator every target shares
//!
//! One seed, one run, bit for bit: this crate owns what does not depend on
//! which system is under test. [`disk`] is the simulated disk (`SimVfs`,
//! behind the [`vfs`] seam), its fault model, crash modes, file-system
//! profiles and crash states; [`seam`] the `Target` trait every system
//! under test implements; [`harness`] the one run loop that drives a
//! target's operations, faults, crashes and restarts; [`explore`]
//! exhaustive crash exploration of any target; [`shrink`] the minimizer of
//! a failing operation list; [`trace`] the event stream and its hash;
//! [`outcome`] and [`failure`] what a run reports, [`counters`] what it
//! counts; [`report`] the HTML
//! page of a failure; [`summary`] the totals of many seeds; [`cli`] the
//! command line every target shares, as blocks a binary assembles. `seeds` names every random stream a run draws from,
//! `draw` the draws every target's configuration makes the same way,
//! `disk_swarm` the one table a seed's simulated disk is drawn from,
//! `op_line` the head every saved operation line starts with, `output`
//! how a command ends; [`written_state`] a crash state written out as a
//! real directory for a checker outside the process, and [`check_server`]
//! the checker that stays up to judge many of them (`sim trace`, `sim live`).
//!
//! The systems under test live elsewhere: the segsim engine's target, the
//! kit (`simkit`) a stranger's engine is tested with, and the adapters for
//! redb and SQLite. None of them is a dependency of this crate.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]

pub mod check_process;
pub mod check_server;
pub mod cli;
pub mod counters;
pub mod disk;
pub mod disk_swarm;
pub mod draw;
pub mod explore;
pub mod failure;
pub mod harness;
pub mod op_line;
pub mod outcome;
pub mod output;
pub mod report;
pub mod seam;
pub mod seeds;
pub mod shrink;
pub mod summary;
pub mod trace;
pub mod written_state;

pub use vfs;
