//! # sim — deterministic simulation testing for the segsim engine
//!
//! One seed determines a whole run: the swarm configuration
//! ([`config`]), the operation list ([`workload`]), every fault and every
//! crash on the simulated disk ([`disk`]), each through a stream named in
//! [`seeds`]. [`drive`] runs the engine through one operation at a time on
//! that disk with the checker's bookkeeping ([`checker`]: the reference
//! model and the durability contract); every mode drives through it:
//!
//! - [`run`], the random mode: the driver plus the fault schedule, audits
//!   and the policy for a poisoned store; [`outcome`] is what a seed
//!   produced and [`summary`] adds seeds up;
//! - [`systems`], what the simulator tests behind one trait: the segsim
//!   store (the default, the driver and the modes above), redb or SQLite;
//! - [`kit`], the target kit: any transactional key-value engine through
//!   one `Adapter` (redb and SQLite are two), with [`command`], the command line a
//!   user's own binary gets from `kit::main`;
//! - [`explore`], exhaustive crash exploration of any target: one run
//!   recorded, then every crash state of every I/O index recovered;
//! - [`shrink`], which minimizes a failing list of any target and keeps
//!   it as an `.ops` file; [`hunt`], which hunts
//!   every planted engine bug ([`canary`]); [`fuzzing`], the `store_ops`
//!   fuzz target and the corpus; [`bench`](mod@bench), the figures.
//!
//! [`draw`] holds the random draws both targets' configurations and
//! workloads make the same way; [`op_line`] the head (index, crash point)
//! both targets' operation lines start with.
//!
//! [`failure`] names the checks a run can fail; [`trace`] folds every event
//! into a hash that proves two runs identical; [`planted`] holds bugs
//! planted under the engine; [`output`] is how commands end. `main.rs` is
//! the command line.

pub mod bench;
pub mod canary;
pub mod checker;
pub mod command;
pub mod config;
pub mod disk;
pub mod draw;
pub mod drive;
pub mod explore;
pub mod failure;
pub mod fuzzing;
pub mod hunt;
pub mod kit;
pub mod op_line;
pub mod outcome;
pub mod output;
pub mod planted;
pub mod run;
pub mod seeds;
pub mod shrink;
pub mod summary;
pub mod systems;
pub mod trace;
pub mod workload;
