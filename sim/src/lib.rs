//! # sim — deterministic simulation testing for the segsim engine
//!
//! The simulator (fault-injecting disk, seeded workload, reference model
//! and checker) is being built; see `ARCHITECTURE.md`. Today this crate
//! holds the command-line contract only.
