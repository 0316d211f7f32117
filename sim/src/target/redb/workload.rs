//! The redb target's workload: a seed's list of operations, generated up
//! front so the shrinker can delete some and re-run the rest (each keeps
//! its index, and with it its fault stream).
//!
//! Operations are single steps, not whole transactions, so a shrunk list
//! can lose a single insert: a `PUT`, `DEL` or `GET` with no write
//! transaction open begins one (a `GET` outside a transaction reads in a
//! read transaction instead), a `COMMIT` with none open commits an empty
//! one — which is still a durable commit, and makes earlier
//! `Durability::None` commits durable. `COMPACT` and `RESTART` abort the
//! open write transaction first; `CRASH` loses it with the power.
//!
//! Two tables: `t0` with `u64` keys, `t1` with byte-string keys, both with
//! byte-string values. Every token is printable ASCII without spaces, so
//! an operation prints as one line and parses back (`.ops` files).

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{OpKind, RedbConfig};
use crate::disk::CrashPoint;
use crate::draw::{self, Weighted};
use crate::op_line::{parse_head, write_head};

/// One of the two tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// `t0`: `u64` keys.
    Numbers,
    /// `t1`: byte-string keys.
    Bytes,
}

impl Table {
    /// Both tables, in model order.
    pub const ALL: [Table; 2] = [Table::Numbers, Table::Bytes];

    /// The table's name in redb and in op lines.
    pub fn name(self) -> &'static str {
        match self {
            Table::Numbers => "t0",
            Table::Bytes => "t1",
        }
    }

    /// The model's index of the table.
    pub fn index(self) -> usize {
        self as usize
    }

    fn parse(word: &str) -> Result<Table, String> {
        Table::ALL.into_iter().find(|t| t.name() == word).ok_or_else(|| format!("unknown table {word:?}"))
    }
}

/// A key: a number in `t0`, bytes in `t1`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// A `t0` key.
    Number(u64),
    /// A `t1` key.
    Bytes(Vec<u8>),
}

impl Key {
    /// The model's bytes for the key: big-endian for numbers, so that the
    /// model's byte order is redb's numeric order.
    pub fn model_bytes(&self) -> Vec<u8> {
        match self {
            Key::Number(n) => n.to_be_bytes().to_vec(),
            Key::Bytes(b) => b.clone(),
        }
    }

    fn parse(table: Table, word: &str) -> Result<Key, String> {
        match table {
            Table::Numbers => word.parse().map(Key::Number).map_err(|_| format!("bad t0 key {word:?}")),
            Table::Bytes => Ok(Key::Bytes(word.as_bytes().to_vec())),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Number(n) => write!(f, "{n}"),
            Key::Bytes(b) => write!(f, "{}", String::from_utf8_lossy(b)),
        }
    }
}

/// How a commit is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitMode {
    /// `Durability::Immediate` (else `Durability::None`).
    pub durable: bool,
    /// `set_two_phase_commit(true)`.
    pub two_phase: bool,
    /// `set_quick_repair(true)` (redb then commits in two phases anyway).
    pub quick_repair: bool,
}

/// One workload operation (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedbOp {
    /// Insert or overwrite in the write transaction.
    Put { table: Table, key: Key, value: Vec<u8> },
    /// Remove in the write transaction.
    Remove { table: Table, key: Key },
    /// Read one key: in the write transaction if one is open, else in a
    /// read transaction.
    Get { table: Table, key: Key },
    /// Read a whole table, the same way.
    Scan { table: Table },
    /// Commit the write transaction.
    Commit(CommitMode),
    /// Abort the write transaction (nothing if none is open).
    Abort,
    /// `Database::compact()`.
    Compact,
    /// Clean close (`Database::close`) and reopen.
    Restart,
    /// Power loss between operations.
    Crash,
}

impl RedbOp {
    /// A short tag for traces and counters.
    pub fn tag(&self) -> &'static str {
        match self {
            RedbOp::Put { .. } => "put",
            RedbOp::Remove { .. } => "remove",
            RedbOp::Get { .. } => "get",
            RedbOp::Scan { .. } => "scan",
            RedbOp::Commit(mode) if mode.durable => "commit",
            RedbOp::Commit(_) => "commit_none",
            RedbOp::Abort => "abort",
            RedbOp::Compact => "compact",
            RedbOp::Restart => "restart",
            RedbOp::Crash => "crash",
        }
    }
}

/// An operation at its place in the list, maybe with a crash inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRedbOp {
    /// Its index in the generated list (kept through shrinking).
    pub index: u64,
    /// What to do.
    pub op: RedbOp,
    /// Where to cut the power while doing it (only `AfterIos`: redb names
    /// no phases).
    pub crash: Option<CrashPoint>,
}

impl fmt::Display for PlannedRedbOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_head(f, self.index, self.crash)?;
        match &self.op {
            RedbOp::Put { table, key, value } => {
                write!(f, " PUT {} {key} {}", table.name(), String::from_utf8_lossy(value))
            }
            RedbOp::Remove { table, key } => write!(f, " DEL {} {key}", table.name()),
            RedbOp::Get { table, key } => write!(f, " GET {} {key}", table.name()),
            RedbOp::Scan { table } => write!(f, " SCAN {}", table.name()),
            RedbOp::Commit(mode) => {
                write!(f, " COMMIT {}", if mode.durable { "immediate" } else { "none" })?;
                if mode.two_phase {
                    write!(f, " 2pc")?;
                }
                if mode.quick_repair {
                    write!(f, " quick-repair")?;
                }
                Ok(())
            }
            RedbOp::Abort => write!(f, " ABORT"),
            RedbOp::Compact => write!(f, " COMPACT"),
            RedbOp::Restart => write!(f, " RESTART"),
            RedbOp::Crash => write!(f, " CRASH"),
        }
    }
}

impl PlannedRedbOp {
    /// Parse a line printed by `Display`; errors say what is wrong.
    pub fn parse(line: &str) -> Result<PlannedRedbOp, String> {
        // redb names no phases: a crash point is never a mark.
        let (index, crash, rest) = parse_head(line, false)?;
        let op = match rest.as_slice() {
            ["PUT", table, key, value] => {
                let table = Table::parse(table)?;
                RedbOp::Put { table, key: Key::parse(table, key)?, value: value.as_bytes().to_vec() }
            }
            ["DEL", table, key] => {
                let table = Table::parse(table)?;
                RedbOp::Remove { table, key: Key::parse(table, key)? }
            }
            ["GET", table, key] => {
                let table = Table::parse(table)?;
                RedbOp::Get { table, key: Key::parse(table, key)? }
            }
            ["SCAN", table] => RedbOp::Scan { table: Table::parse(table)? },
            ["COMMIT", durability, flags @ ..] => {
                let durable = match *durability {
                    "immediate" => true,
                    "none" => false,
                    other => return Err(format!("bad durability {other:?} (immediate or none)")),
                };
                let mut mode = CommitMode { durable, two_phase: false, quick_repair: false };
                for flag in flags {
                    match *flag {
                        "2pc" => mode.two_phase = true,
                        "quick-repair" => mode.quick_repair = true,
                        other => return Err(format!("bad commit flag {other:?}")),
                    }
                }
                RedbOp::Commit(mode)
            }
            ["ABORT"] => RedbOp::Abort,
            ["COMPACT"] => RedbOp::Compact,
            ["RESTART"] => RedbOp::Restart,
            ["CRASH"] => RedbOp::Crash,
            _ => return Err(format!("not a redb operation: {line:?}")),
        };
        Ok(PlannedRedbOp { index, op, crash })
    }
}

const WORKLOAD_SALT: u64 = 0x5245_4442_574f_524b;

/// Builds a seed's operation list.
struct Generator<'a> {
    config: &'a RedbConfig,
    rng: ChaCha8Rng,
    kinds: Weighted<'a, OpKind>,
}

impl Generator<'_> {
    fn table(&mut self) -> Table {
        Table::ALL[self.rng.gen_range(0..Table::ALL.len())]
    }

    fn key(&mut self, table: Table) -> Key {
        let n = self.rng.gen_range(0..self.config.key_space);
        match table {
            // Spread over the key range, so pages split far apart too.
            Table::Numbers => Key::Number(u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8),
            Table::Bytes => Key::Bytes(format!("k{n}").into_bytes()),
        }
    }

    fn commit_mode(&mut self) -> CommitMode {
        CommitMode {
            durable: !self.rng.gen_bool(self.config.p_durability_none),
            two_phase: self.rng.gen_bool(self.config.p_two_phase),
            quick_repair: self.rng.gen_bool(self.config.p_quick_repair),
        }
    }

    fn op(&mut self, kind: OpKind) -> RedbOp {
        match kind {
            OpKind::Put => {
                let table = self.table();
                let key = self.key(table);
                // Mostly small values; the large ones spill over pages.
                let max = if self.rng.gen_bool(0.8) { 24 } else { self.config.max_value_bytes };
                RedbOp::Put { table, key, value: draw::token(&mut self.rng, max) }
            }
            OpKind::Remove => {
                let table = self.table();
                RedbOp::Remove { table, key: self.key(table) }
            }
            OpKind::Get => {
                let table = self.table();
                RedbOp::Get { table, key: self.key(table) }
            }
            OpKind::Scan => RedbOp::Scan { table: self.table() },
            OpKind::Commit => RedbOp::Commit(self.commit_mode()),
            OpKind::Abort => RedbOp::Abort,
            OpKind::Compact => RedbOp::Compact,
            OpKind::Restart => RedbOp::Restart,
            OpKind::Crash => RedbOp::Crash,
        }
    }

    /// Maybe aim a crash a few I/O operations into `op` (commits,
    /// compactions and closes issue dozens; the rest a few).
    fn crash_point(&mut self, op: &RedbOp) -> Option<CrashPoint> {
        if !self.rng.gen_bool(self.config.inner_crash_rate) {
            return None;
        }
        let reach = match op {
            RedbOp::Commit(_) | RedbOp::Compact | RedbOp::Restart => 40,
            _ => 6,
        };
        Some(CrashPoint::AfterIos(self.rng.gen_range(0..reach)))
    }
}

/// The operation list of `config`'s seed: `config.ops` drawn operations.
pub fn generate(config: &RedbConfig) -> Vec<PlannedRedbOp> {
    let mut generator = Generator {
        config,
        rng: ChaCha8Rng::seed_from_u64(config.seed ^ WORKLOAD_SALT),
        kinds: Weighted::new(&config.weights),
    };
    let mut ops = Vec::with_capacity(config.ops as usize);
    for index in 0..config.ops {
        let kind = generator.kinds.pick(&mut generator.rng);
        let op = generator.op(kind);
        let crash = generator.crash_point(&op);
        ops.push(PlannedRedbOp { index, op, crash });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_prints_and_parses_back() {
        for seed in 0..32 {
            let config = RedbConfig::from_seed(seed, None, None, Default::default());
            for planned in generate(&config) {
                let line = planned.to_string();
                assert_eq!(PlannedRedbOp::parse(&line).unwrap(), planned, "{line}");
            }
        }
        assert!(PlannedRedbOp::parse("3 PUT t9 1 x").unwrap_err().contains("t9"));
        assert!(PlannedRedbOp::parse("3 @mark=x CRASH").unwrap_err().contains("marks"));
        assert!(PlannedRedbOp::parse("3 COMMIT later").is_err());
    }

    #[test]
    fn a_seed_always_draws_the_same_list() {
        let config = RedbConfig::from_seed(9, None, None, Default::default());
        assert_eq!(generate(&config), generate(&config));
        assert_eq!(generate(&config).len() as u64, config.ops);
    }
}
