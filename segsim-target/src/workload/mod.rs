//! The workload: a seed's list of operations, generated up front.
//!
//! Generating the whole list before running it (rather than choosing as we
//! go) is what makes shrinking possible: the shrinker deletes operations
//! and re-runs the rest, and each operation keeps its original index, from
//! which its fault stream is derived — so deleting one operation does not
//! reshuffle the faults of the others.
//!
//! Every token is printable ASCII without spaces, so an operation prints as
//! one line and parses back (`corpus/regressions/` holds such lines).
//!
//! This file owns what an operation is ([`Op`], [`PlannedOp`]) and the
//! entry points that make a seed's list; the rest is one concept a file:
//! `generator.rs` draws the list (keys, fields, commands, crash points,
//! crashes aimed at compaction), `edges.rs` the edges Redis defines and
//! the bad input the store must refuse, `misspelling.rs` integers spelled
//! as Redis refuses them (the fuzz plan names them too), `motifs.rs`
//! exploration's motifs, `line.rs` an operation's printed line and its
//! parse, and `oversized.rs` a write over the frame limit made only while
//! it runs.

use engine::store::Command;

use crate::config::Config;
use simulator::disk::CrashPoint;

mod edges;
mod generator;
mod line;
mod misspelling;
mod motifs;
mod oversized;

pub use misspelling::{misspelled, Misspelling};
pub use oversized::with_oversized_command;

/// The simulated clock's start: 2023-11-14, so TTLs look like real ones.
pub const T0_MS: u64 = 1_700_000_000_000;

/// One workload operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A store command (reads are checked against the model as they run).
    Cmd(Command),
    /// `store.evict()`.
    Evict,
    /// `store.rewrite()`.
    Rewrite,
    /// `store.sync()`.
    Sync,
    /// Advance the clock, then `store.tick()`.
    Advance(u64),
    /// Power loss between operations.
    Crash,
    /// Clean close and reopen.
    Restart,
    /// The process dies: memory is lost, the page cache (every write the
    /// process made, synced or not) survives, nothing is fsynced. The
    /// store is reopened. Half the time the generator follows it with an
    /// `ADVANCE` and a `CRASH`: a power loss then takes what the reopen
    /// replayed but did not make durable.
    Kill,
    /// A command given as its raw arguments: bad input — an integer
    /// spelled as Redis does not spell integers (`+5`, `007`, `-0`), the
    /// wrong number of arguments, `SET` options that do not read, a
    /// `WINDOW` that declares nothing — which the store must refuse as the
    /// model predicts (`testkit::model::refusal_of`) and change nothing;
    /// or, where the model reads it, the command it parses to (an empty
    /// key or field).
    Args(Vec<Vec<u8>>),
    /// While the store is open, a second opener tries the same directory
    /// (to write on even indices, read-only on odd ones): it must be
    /// refused as locked, and change nothing.
    SecondOpen,
    /// `SET key <value>`, its value `byte` repeated `value_bytes` times,
    /// over the log's frame limit: the store must refuse it and change
    /// nothing. Held as this recipe, made into the command only while it
    /// runs (see `oversized.rs`: 64 MiB a write is too much to hold).
    OversizedSet {
        /// The key.
        key: Vec<u8>,
        /// The value's length.
        value_bytes: usize,
        /// The value's one byte.
        byte: u8,
    },
}

/// An operation at its place in the list, maybe with a crash inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedOp {
    /// Its index in the generated list (kept through shrinking).
    pub index: u64,
    /// What to do.
    pub op: Op,
    /// Where to cut the power while doing it.
    pub crash: Option<CrashPoint>,
}

impl Op {
    /// A short tag for traces and counters.
    pub fn tag(&self) -> &'static str {
        match self {
            Op::Cmd(Command::Set { .. }) | Op::OversizedSet { .. } => "set",
            Op::Cmd(Command::SetWith { .. }) => "set_with",
            Op::Cmd(Command::Get { .. }) => "get",
            Op::Cmd(Command::Del { .. }) => "del",
            Op::Cmd(Command::HSet { .. }) => "hset",
            Op::Cmd(Command::HGet { .. }) => "hget",
            Op::Cmd(Command::HDel { .. }) => "hdel",
            Op::Cmd(Command::HGetAll { .. }) => "hgetall",
            Op::Cmd(Command::PExpireAt { .. }) => "pexpireat",
            Op::Cmd(Command::Persist { .. }) => "persist",
            Op::Cmd(Command::HPExpireAt { .. }) => "hpexpireat",
            Op::Cmd(Command::FlushAll) => "flushall",
            Op::Cmd(Command::Window { .. }) => "window",
            Op::Cmd(Command::Exists { .. }) => "exists",
            Op::Cmd(Command::PTtl { .. }) => "pttl",
            Op::Cmd(Command::HMGet { .. }) => "hmget",
            Op::Cmd(Command::HLen { .. }) => "hlen",
            Op::Cmd(Command::HExists { .. }) => "hexists",
            Op::Cmd(Command::HIncrBy { .. }) => "hincrby",
            Op::Cmd(Command::HSetNx { .. }) => "hsetnx",
            Op::Args(_) => "args",
            Op::Evict => "evict",
            Op::Rewrite => "rewrite",
            Op::Sync => "sync",
            Op::Advance(_) => "advance",
            Op::Crash => "crash",
            Op::Restart => "restart",
            Op::SecondOpen => "second_open",
            Op::Kill => "kill",
        }
    }
}

/// The operation list of `config`'s seed: window declarations, then
/// `config.ops` drawn operations.
pub fn generate(config: &Config) -> Vec<PlannedOp> {
    generator::generate_ops(config, false, true)
}

/// The operation list `sim explore` records for `config`'s seed: as
/// [`generate`] draws it, except that at each slot, with a small chance, a
/// *motif* comes instead of one drawn operation. The motifs are the
/// sequences that bugs past the first crash need and that a hundred drawn
/// operations rarely build:
///
/// - a *cold cycle* (most of them): rows evicted, then changed while cold
///   (promoted, deleted, given a TTL), maybe the row that slid the window
///   deleted, a rewrite, maybe a crash, kill or restart, and another
///   eviction — for eviction, retirement, TTLs and window marks across a
///   rewrite, and seq bookkeeping (and seeds whose window span outruns
///   the workload, which never evict otherwise);
/// - a *kill cycle*: unsynced writes, a process crash, time passing, a
///   write — for a recovery that must make what it replayed durable.
///
/// The whole list counts `config.ops` drawn operations (a motif cut short
/// at the end), plus the two the random mode adds after half its `KILL`s
/// (time passing, a power loss).
///
/// Only exploration draws this way: [`generate`] makes no draw for it, so
/// the random mode's lists, and every trace hash, are what they were.
pub fn generate_for_explore(config: &Config) -> Vec<PlannedOp> {
    generator::generate_ops(config, true, true)
}

/// The `WINDOW` declaration of each of `config`'s tables, at indices 0,
/// 1, ...: how every operation list starts (generated, or a fuzz plan's).
pub fn window_declarations(config: &Config) -> Vec<PlannedOp> {
    let mut ops = Vec::with_capacity(config.tables.len());
    for table in &config.tables {
        let command = Command::Window {
            table: table.name.clone().into_bytes(),
            column: table.column.clone().into_bytes(),
            span: table.span,
        };
        ops.push(PlannedOp { index: ops.len() as u64, op: Op::Cmd(command), crash: None });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    #[test]
    fn the_same_seed_generates_the_same_ops() {
        let config = Config::from_seed(9, Overrides::default());
        assert_eq!(generate(&config), generate(&config));
    }
}
