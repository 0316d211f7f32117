//! # simtrace — `sim trace`: crash-test any program, in any language, out of process.
//! Record one run's file-system calls under a directory with the system's
//! `strace` (`record.rs`), then replay them onto the simulated disk and
//! judge every crash state the disk model allows with the user's own
//! checker command (`explore.rs`) — ALICE's method on this repository's
//! disk model, file-system profiles and explorer.
//!
//! - `strace.rs`: strace's log split into calls (interrupted calls joined);
//! - `paths.rs`, `fds.rs`: path resolution, and the processes, descriptor
//!   tables and open file descriptions the recorder follows;
//! - `recorder.rs`: what each call means for the directory, or a refusal
//!   naming it;
//! - `recording.rs`: the recording's file format and codec;
//! - `record.rs`: running the program under strace;
//! - `replay.rs`: a recording onto [`SimVfs`](simulator::disk::SimVfs), with a
//!   snapshot per I/O;
//! - `explore.rs`: the crash states, deduplicated, written out and checked
//!   in parallel (`check_server.rs`: by checker servers that judge many
//!   states each); `report.rs`: the text and JSON reports.
//!
//! - `cli.rs`: the command line, `sim trace record` and `sim trace explore`
//!   ([`cli::cli`]).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]

pub mod check_server;
pub mod cli;
pub mod explore;
pub mod fds;
pub mod paths;
pub mod record;
pub mod recorder;
pub mod recording;
pub mod replay;
pub mod report;
pub mod strace;

pub use recording::{FormatError, Op, Recording};
