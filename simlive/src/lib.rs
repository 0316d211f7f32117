//! # simlive — `sim live`: faults and crashes injected into a running program.
//!
//! `sim trace` replays what a program did when nothing went wrong; `sim
//! live` runs the program itself on the seed's simulated disk, so a failed
//! `fsync`, a short write or a full disk reaches it as it runs and its own
//! reaction (retry, report, acknowledge anyway) is what the crash then
//! judges (LIVE.md, issue 50). The program's file calls under one
//! directory are served by the stdfs layer preloaded into it
//! (`stdfs-preload`, `LD_PRELOAD`); the layer's disk calls cross a Unix
//! socket to this process, which holds the one disk every process of the
//! run shares.
//!
//! - `protocol.rs`: the wire (one frame per disk call and per answer);
//! - `serve.rs`: the disk served to the program's processes; the crash
//!   point reached, every process left unanswered;
//! - `faults.rs`: `--faults`, `--fault-at`, `--capacity` into the disk's
//!   configuration;
//! - `run.rs`: one run (start, crash or exit, kill, power loss, the state
//!   written out, the checker);
//! - `check.rs`: the checker of a run's crash state, a process per state
//!   or a server kept up across a sweep (`--check-server`);
//! - `sweep.rs`: seeds, two runs each (to the end; cut at a drawn index);
//! - `shrink.rs`: a failure to the fewest faults and the earliest crash;
//! - `cli.rs`: `sim live run` and `sim live sweep`.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod check;
pub mod cli;
pub mod faults;
pub mod protocol;
pub mod run;
pub mod serve;
pub mod shrink;
pub mod sweep;
