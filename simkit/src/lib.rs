//! # The target kit: test your own transactional key-value engine
//!
//! Everything the simulator does for the engines in this repository —
//! the swarm-drawn workload, the reference model with its committed and
//! durable history, the durability oracle, the random mode with power
//! losses and I/O faults on the simulated disk, shrinking, `.ops` replay,
//! exhaustive crash exploration (`explore`, depth 2 and `--faults`
//! included), `--check-determinism`, JSON summaries and `merge` — for any
//! engine that looks like a transactional, ordered key-value store, at
//! the cost of one [`Adapter`].
//!
//! The adapter is small on purpose: a client — open the engine over the
//! simulated disk (any [`Vfs`]), one method per operation with its own
//! reply type, read what is committed, close — and one [`Spec`] saying
//! what the engine, so configured, promises (each durability [`Level`]).
//! The kit owns the loop: it reseeds the disk's faults before every operation (so
//! shrinking keeps the faults of the operations it keeps), catches
//! panics, loses the power, reopens, holds what came back to the model,
//! and records runs for the explorer. An adapter never sees a crash: to
//! it, the engine is simply opened again.
//!
//! ```no_run
//! use std::process::ExitCode;
//! # use simkit::*;
//! # #[derive(Clone)]
//! # struct MyAdapter;
//! # impl Adapter for MyAdapter {
//! #     type Db = ();
//! #     type Config = ();
//! #     type Plant = NoPlant;
//! #     fn name(&self) -> &'static str { "mine" }
//! #     fn configure(&self, _: &mut dyn RngCore) {}
//! #     fn spec(&self, _: &()) -> Spec { Spec::new(vec![Level::new("sync", Promise::Durable)]) }
//! #     fn open(&self, _: &Env<'_, Self>) -> Result<(), KitError> { Ok(()) }
//! #     fn put(&self, _: &mut (), _: usize, _: &[u8], _: &[u8]) -> Result<Previous, KitError> { Ok(Previous::NotSaid) }
//! #     fn delete(&self, _: &mut (), _: usize, _: &[u8]) -> Result<Previous, KitError> { Ok(Previous::NotSaid) }
//! #     fn get(&self, _: &mut (), _: usize, _: &[u8]) -> Result<Option<Vec<u8>>, KitError> { Ok(None) }
//! #     fn scan(&self, _: &mut (), _: usize) -> Result<Rows, KitError> { Ok(Rows::new()) }
//! #     fn commit(&self, _: &mut (), _: usize) -> Result<(), KitError> { Ok(()) }
//! #     fn abort(&self, _: &mut ()) -> Result<(), KitError> { Ok(()) }
//! #     fn read_committed(&self, _: &mut (), _: usize) -> Result<Rows, KitError> { Ok(Rows::new()) }
//! #     fn close(&self, _: ()) -> Result<(), KitError> { Ok(()) }
//! # }
//! fn main() -> ExitCode {
//!     // `--seed N`, `--seeds A..B`, `--shrink`, `--replay F`, `explore ...`,
//!     // `--json`, `merge ...`: the simulator's whole command line.
//!     simkit::main(MyAdapter)
//! }
//! ```
//!
//! `sim/examples/logkv/` is a whole engine (`store.rs`) and its adapter (`main.rs`), and
//! `TESTING-YOUR-ENGINE.md` walks through writing one; `adapters/src/redb/`
//! is redb's.
//!
//! # The contract the kit checks
//! Tables of byte keys to byte values ([`TableSpec`]); one write
//! transaction at a time, begun implicitly by the first operation that
//! needs it; reads see the open write transaction's own writes, and the
//! committed state when none is open; with `--clients N`, readers beside
//! the writer (an engine whose [`Spec::readers`] says it has them) each
//! see the one state committed when they began. After a power loss (or a reopen
//! after an I/O error) the content must be a state the declared promises
//! allow (see [`Promise`]): never a mix of two commits, never a state no
//! commit had. A refusal to open is accepted only after damage the disk
//! announced, and only as [`ErrorKind::Corrupt`]; an error with no fault
//! injected is a failure; a panic is a failure.
//!
//! [`Vfs`]: vfs::Vfs

mod adapter;
#[cfg(test)]
mod capability_tests;
pub(crate) mod client;
mod config;
pub mod crash_os;
mod damage;
#[cfg(test)]
mod determinism_tests;
mod explore;
mod interleave;
#[cfg(test)]
mod kill_rule_tests;
mod model;
mod pause_vfs;
mod reader_ops;
mod readers;
mod reply_text;
mod run;
mod second_writer;
pub(crate) mod spec;
mod target;
#[cfg(test)]
mod test_engine;
mod workload;

/// The random numbers [`Adapter::configure`] draws with: `rand` as the
/// kit uses it, so an adapter needs no `rand` dependency of its own (and
/// none at the kit's exact version).
pub use rand;
pub use rand::{Rng, RngCore};
/// The file-system seam an engine under test talks to (`Env::vfs`): the
/// `vfs` crate, re-exported so that an adapter needs no dependency of its
/// own on it. Its contract — an fsync that failed
/// dropped the dirty data (fsyncgate), re-read before trusting a bad
/// checksum — is in [`vfs::Vfs`]'s docs.
pub use vfs;

pub mod cli;

pub use crate::cli::main;
pub use adapter::{
    Adapter, Env, ErrorKind, KitError, Maintain, OtherWrite, Previous, ReadTransactions, ReadersBeside, RecordSpan,
    Rows, WriteOutcome,
};
pub use config::{Harsh, KitConfig};
pub use pause_vfs::BUSY_WAIT;
pub use simulator::cli::replay::{assert_saved_ops_hold, assert_saved_ops_pass, SavedOps, EXPECT_FAIL, EXPECT_PASS};
/// What an adapter raises (`std::panic::panic_any`) when the environment
/// its engine runs on refused a call: the run fails with check `refused`.
pub use simulator::failure::{carry_panic_place, EnvironmentRefused};
/// What a test of a kit target calls: every seed of a range passes, and
/// each runs again bit for bit; the trait a kit target implements, for
/// calling its run, shrink and replay directly.
pub use simulator::seam::{assert_seeds_pass_and_replay, run_seed, Target};
pub use spec::{
    DocumentedHazard, KeyKind, Level, Maintenance, NoPlant, Plant, Promise, Readers, Spec, TableSpec, Tolerances,
    ONE_TABLE,
};
pub use target::{Kit, KitSettings};
pub use workload::{KitOp, PlannedKitOp};
