//! # sim — deterministic simulation testing for the segsim engine
//!
//! One seed determines a whole run: the swarm configuration
//! ([`config`]), the operation list ([`workload`]), every fault and every
//! crash on the simulated disk ([`disk`]). [`run`] drives the engine
//! through the list on that disk and checks every reply, every recovery
//! and periodic audits against the reference model under the durability
//! contract ([`checker`]). [`trace`] folds every event into a hash that
//! proves two runs identical; [`summary`] adds seeds up; [`shrink`]
//! minimizes a failing list. [`canary`] names the engine bug a run may
//! plant and [`hunt`] hunts every one of them (`sim canaries`). `main.rs`
//! is the command line.

pub mod bench;
pub mod canary;
pub mod checker;
pub mod config;
pub mod disk;
pub mod explore;
pub mod fuzzing;
pub mod hunt;
pub mod planted;
pub mod run;
pub mod shrink;
pub mod summary;
pub mod target;
pub mod trace;
pub mod workload;
