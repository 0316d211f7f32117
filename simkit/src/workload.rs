//! A kit seed's workload: its list of operations, generated up front so
//! the shrinker can delete some and re-run the rest (each keeps its
//! index, and with it its fault stream), printed one per line and parsed
//! back (`.ops` files).
//!
//! Operations are single steps, not whole transactions, so a shrunk list
//! can lose a single insert: a `PUT`, `DEL` or `GET` with no write
//! transaction open begins one (a `GET` or `SCAN` outside a transaction
//! reads the committed state), a `COMMIT` with none open commits an empty
//! one — still a commit at that level, which makes earlier volatile
//! commits durable if the level is durable. The maintenance operation and
//! `RESTART` abort the open write transaction first; `CRASH` loses it
//! with the power.
//!
//! With readers (`--clients N`, [`super::Readers`]), `READER r ...` lines
//! are a read-only transaction of client `r` beside the writer: `READER r
//! GET` and `READER r SCAN` begin one if reader `r` has none open (a crash
//! or a restart ended it, or a shrink took its `BEGIN`), `READER r BEGIN`
//! ends the open one first, `READER r END` with none open does nothing.
//!
//! Every token is printable ASCII without spaces: keys of a byte table are
//! `k<n>`, keys of a `u64` table decimal numbers spread over the whole
//! range, values lowercase letters and digits.

use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{KitConfig, OpKind};
use super::{KeyKind, Level, Maintenance, Spec, TableSpec};
use simulator::disk::CrashPoint;
use simulator::draw::{self, Weighted};
use simulator::op_line::{parse_head, write_head};

/// A table as an operation names it: its position and its spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRef {
    /// Its position in the adapter's tables.
    pub index: usize,
    /// Its name and key kind.
    pub spec: TableSpec,
}

/// One workload operation (see the module doc). Keys are the bytes the
/// engine gets ([`KeyKind::U64`]: 8 big-endian bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KitOp {
    /// [`Adapter::put`](super::Adapter::put): insert or overwrite in the
    /// write transaction.
    Put {
        /// The table written.
        table: TableRef,
        /// The key.
        key: Vec<u8>,
        /// The value it now holds.
        value: Vec<u8>,
    },
    /// [`Adapter::delete`](super::Adapter::delete): remove in the write
    /// transaction.
    Delete {
        /// The table written.
        table: TableRef,
        /// The key removed.
        key: Vec<u8>,
    },
    /// [`Adapter::get`](super::Adapter::get): one key, as the transaction
    /// or the committed state shows it.
    Get {
        /// The table read.
        table: TableRef,
        /// The key read.
        key: Vec<u8>,
    },
    /// [`Adapter::scan`](super::Adapter::scan): a whole table, read the
    /// same way.
    Scan {
        /// The table read.
        table: TableRef,
    },
    /// [`Adapter::commit`](super::Adapter::commit) at one of the spec's
    /// levels.
    Commit {
        /// The level's position in [`Spec::levels`].
        level: usize,
        /// The level's name (what it promises depends on the seed's
        /// configuration: the kit looks that up in the seed's spec).
        name: &'static str,
    },
    /// [`Adapter::abort`](super::Adapter::abort): the write transaction
    /// dropped.
    Abort,
    /// [`Maintain::maintain`](super::Maintain::maintain): the engine's
    /// maintenance operation.
    Maintain(Maintenance),
    /// Clean close and reopen.
    Restart,
    /// Power loss between operations.
    Crash,
    /// A step of a reader's read-only transaction, on its own connection.
    Reader {
        /// The reader: client `1..`, the writer being client 0.
        reader: usize,
        /// What it does.
        step: ReaderStep,
    },
}

/// What a reader does ([`KitOp::Reader`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReaderStep {
    /// Begin a read-only transaction (ending the reader's open one first).
    Begin,
    /// [`ReadTransactions::reader_get`](super::ReadTransactions::reader_get): one key.
    Get {
        /// The table read.
        table: TableRef,
        /// The key read.
        key: Vec<u8>,
    },
    /// [`ReadTransactions::reader_scan`](super::ReadTransactions::reader_scan): a table.
    Scan {
        /// The table read.
        table: TableRef,
    },
    /// End the read-only transaction, if one is open.
    End,
}

impl KitOp {
    /// A short tag for traces and counters.
    pub fn tag(&self) -> &'static str {
        match self {
            KitOp::Put { .. } => "put",
            KitOp::Delete { .. } => "delete",
            KitOp::Get { .. } => "get",
            KitOp::Scan { .. } => "scan",
            KitOp::Commit { name, .. } => name,
            KitOp::Abort => "abort",
            KitOp::Maintain(m) => m.name,
            KitOp::Restart => "restart",
            KitOp::Crash => "crash",
            KitOp::Reader { step: ReaderStep::Begin, .. } => "reader-begin",
            KitOp::Reader { step: ReaderStep::Get { .. }, .. } => "reader-get",
            KitOp::Reader { step: ReaderStep::Scan { .. }, .. } => "reader-scan",
            KitOp::Reader { step: ReaderStep::End, .. } => "reader-end",
        }
    }

    /// Whether the engine may write while it runs: a put, a delete, a
    /// commit or maintenance (an engine that promises nothing may write
    /// unsynced then, before any commit returns).
    pub fn may_write(&self) -> bool {
        matches!(self, KitOp::Put { .. } | KitOp::Delete { .. } | KitOp::Commit { .. } | KitOp::Maintain(_))
    }
}

/// An operation at its place in the list, maybe with a crash inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedKitOp {
    /// Its index in the generated list (kept through shrinking).
    pub index: u64,
    /// What to do.
    pub op: KitOp,
    /// Where to cut the power while doing it (only `AfterIos`).
    pub crash: Option<CrashPoint>,
}

/// A key as op lines print it.
pub fn show_key(kind: KeyKind, key: &[u8]) -> String {
    match (kind, <[u8; 8]>::try_from(key)) {
        (KeyKind::U64, Ok(bytes)) => u64::from_be_bytes(bytes).to_string(),
        _ => String::from_utf8_lossy(key).into_owned(),
    }
}

impl fmt::Display for PlannedKitOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_head(f, self.index, self.crash)?;
        let key = |t: &TableRef, k: &[u8]| show_key(t.spec.keys, k);
        match &self.op {
            KitOp::Put { table, key: k, value } => {
                write!(f, " PUT {} {} {}", table.spec.name, key(table, k), String::from_utf8_lossy(value))
            }
            KitOp::Delete { table, key: k } => write!(f, " DEL {} {}", table.spec.name, key(table, k)),
            KitOp::Get { table, key: k } => write!(f, " GET {} {}", table.spec.name, key(table, k)),
            KitOp::Scan { table } => write!(f, " SCAN {}", table.spec.name),
            KitOp::Commit { name, .. } => write!(f, " COMMIT {name}"),
            KitOp::Abort => write!(f, " ABORT"),
            KitOp::Maintain(m) => write!(f, " {}", m.name.to_uppercase()),
            KitOp::Restart => write!(f, " RESTART"),
            KitOp::Crash => write!(f, " CRASH"),
            KitOp::Reader { reader, step } => {
                write!(f, " READER {reader}")?;
                match step {
                    ReaderStep::Begin => write!(f, " BEGIN"),
                    ReaderStep::Get { table, key: k } => write!(f, " GET {} {}", table.spec.name, key(table, k)),
                    ReaderStep::Scan { table } => write!(f, " SCAN {}", table.spec.name),
                    ReaderStep::End => write!(f, " END"),
                }
            }
        }
    }
}

/// Parses lines for one spec's tables, levels, maintenance and phases.
pub(super) struct Grammar<'a> {
    pub tables: &'a [TableSpec],
    pub levels: &'a [Level],
    pub maintenance: Option<Maintenance>,
    pub phases: &'a [&'static str],
    /// The most readers the engine allows (0: none, one client).
    pub readers: usize,
}

impl<'a> Grammar<'a> {
    /// The operation lines `spec`'s engine reads (its names do not depend
    /// on the configuration: [`Spec::check_shape`]).
    pub fn of(spec: &'a Spec) -> Grammar<'a> {
        Grammar {
            tables: spec.tables,
            levels: &spec.levels,
            maintenance: spec.maintenance,
            phases: spec.phases,
            readers: spec.max_readers(),
        }
    }

    fn table(&self, word: &str) -> Result<TableRef, String> {
        let index = self.tables.iter().position(|t| t.name == word).ok_or_else(|| format!("unknown table {word:?}"))?;
        Ok(TableRef { index, spec: self.tables[index] })
    }

    fn key(table: TableRef, word: &str) -> Result<Vec<u8>, String> {
        match table.spec.keys {
            KeyKind::Bytes => Ok(word.as_bytes().to_vec()),
            KeyKind::U64 => word
                .parse::<u64>()
                .map(|n| n.to_be_bytes().to_vec())
                .map_err(|_| format!("bad key {word:?} for table {} (a u64)", table.spec.name)),
        }
    }

    /// `READER r STEP...`'s operation: `r` a client number from 1.
    fn reader(&self, reader: &str, step: &[&str]) -> Result<KitOp, String> {
        let reader = match reader.parse::<usize>() {
            Ok(r) if (1..=self.readers).contains(&r) => r,
            _ if self.readers == 0 => {
                return Err("a reader's step, but this target declares no readers (Spec::readers)".to_string())
            }
            _ => {
                let max = self.readers;
                return Err(format!(
                    "bad reader {reader:?}: this target's readers are clients 1 to {max} (0 is the writer)"
                ));
            }
        };
        let step = match step {
            ["BEGIN"] => ReaderStep::Begin,
            ["GET", t, k] => {
                let table = self.table(t)?;
                ReaderStep::Get { table, key: Grammar::key(table, k)? }
            }
            ["SCAN", t] => ReaderStep::Scan { table: self.table(t)? },
            ["END"] => ReaderStep::End,
            _ => {
                return Err(format!(
                    "not a reader's step: {:?} (BEGIN, GET TABLE KEY, SCAN TABLE, END)",
                    step.join(" ")
                ))
            }
        };
        Ok(KitOp::Reader { reader, step })
    }

    /// Parse a line printed by `Display`; errors say what is wrong.
    pub fn parse(&self, line: &str) -> Result<PlannedKitOp, String> {
        let (index, crash, rest) = parse_head(line, self.phases)?;
        let op = match rest.as_slice() {
            ["PUT", t, k, v] => {
                let table = self.table(t)?;
                KitOp::Put { table, key: Grammar::key(table, k)?, value: v.as_bytes().to_vec() }
            }
            ["DEL", t, k] => {
                let table = self.table(t)?;
                KitOp::Delete { table, key: Grammar::key(table, k)? }
            }
            ["GET", t, k] => {
                let table = self.table(t)?;
                KitOp::Get { table, key: Grammar::key(table, k)? }
            }
            ["SCAN", t] => KitOp::Scan { table: self.table(t)? },
            ["COMMIT", name] => {
                let level = self.levels.iter().position(|l| l.name == *name).ok_or_else(|| {
                    let names: Vec<&str> = self.levels.iter().map(|l| l.name).collect();
                    format!("unknown commit level {name:?} (the levels: {})", names.join(", "))
                })?;
                KitOp::Commit { level, name: self.levels[level].name }
            }
            ["ABORT"] => KitOp::Abort,
            ["RESTART"] => KitOp::Restart,
            ["CRASH"] => KitOp::Crash,
            ["READER", reader, step @ ..] => self.reader(reader, step)?,
            [word] if self.maintenance.is_some_and(|m| m.name.to_uppercase() == *word) => {
                KitOp::Maintain(self.maintenance.expect("checked above"))
            }
            _ => return Err(format!("not an operation of this target: {line:?}")),
        };
        Ok(PlannedKitOp { index, op, crash })
    }
}

/// Builds a seed's operation list.
struct Generator<'a, C> {
    config: &'a KitConfig<C>,
    tables: &'a [TableSpec],
    levels: &'a [Level],
    maintenance: Option<Maintenance>,
    phases: &'a [&'static str],
    rng: ChaCha8Rng,
}

impl<C> Generator<'_, C> {
    fn table(&mut self) -> TableRef {
        let index = self.rng.gen_range(0..self.tables.len());
        TableRef { index, spec: self.tables[index] }
    }

    fn key(&mut self, table: TableRef) -> Vec<u8> {
        let n = self.rng.gen_range(0..self.config.key_space);
        match table.spec.keys {
            // Spread over the key range, so pages split far apart too.
            KeyKind::U64 => (u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8).to_be_bytes().to_vec(),
            KeyKind::Bytes => format!("k{n}").into_bytes(),
        }
    }

    fn op(&mut self, kind: OpKind, levels: &Weighted<'_, usize>) -> KitOp {
        match kind {
            OpKind::Put => {
                let table = self.table();
                let key = self.key(table);
                // Mostly small values; the large ones spill over pages.
                let max = if self.rng.gen_bool(0.8) { 24 } else { self.config.max_value_bytes };
                KitOp::Put { table, key, value: draw::token(&mut self.rng, max) }
            }
            OpKind::Delete => {
                let table = self.table();
                KitOp::Delete { table, key: self.key(table) }
            }
            OpKind::Get => {
                let table = self.table();
                KitOp::Get { table, key: self.key(table) }
            }
            OpKind::Scan => KitOp::Scan { table: self.table() },
            OpKind::Commit => {
                let level = levels.pick(&mut self.rng);
                KitOp::Commit { level, name: self.levels[level].name }
            }
            OpKind::Abort => KitOp::Abort,
            OpKind::Maintain => KitOp::Maintain(self.maintenance.expect("weighted only if the engine has one")),
            OpKind::Restart => KitOp::Restart,
            OpKind::Crash => KitOp::Crash,
            OpKind::ReaderBegin | OpKind::ReaderGet | OpKind::ReaderScan | OpKind::ReaderEnd => self.reader_op(kind),
        }
    }

    /// A reader's step: the reader drawn among the seed's clients.
    fn reader_op(&mut self, kind: OpKind) -> KitOp {
        debug_assert!(self.config.clients > 1, "readers are drawn only beside the writer");
        let reader = self.rng.gen_range(1..self.config.clients);
        let step = match kind {
            OpKind::ReaderBegin => ReaderStep::Begin,
            OpKind::ReaderGet => {
                let table = self.table();
                ReaderStep::Get { table, key: self.key(table) }
            }
            OpKind::ReaderScan => ReaderStep::Scan { table: self.table() },
            OpKind::ReaderEnd => ReaderStep::End,
            _ => unreachable!("{kind:?} is not a reader's step"),
        };
        KitOp::Reader { reader, step }
    }

    /// Maybe aim a crash inside `op`: half the time at one of the
    /// system's named phases, if it declares any, else a few I/O
    /// operations in (commits, maintenance and closes issue dozens; the
    /// rest a few). A system without phases draws nothing for them, so
    /// declaring none keeps its seeds' streams.
    fn crash_point(&mut self, op: &KitOp) -> Option<CrashPoint> {
        if !self.rng.gen_bool(self.config.inner_crash_rate) {
            return None;
        }
        if !self.phases.is_empty() && self.rng.gen_bool(0.5) {
            return Some(CrashPoint::AtMark(self.phases[self.rng.gen_range(0..self.phases.len())]));
        }
        let reach = match op {
            KitOp::Commit { .. } | KitOp::Maintain(_) | KitOp::Restart => 40,
            _ => 6,
        };
        Some(CrashPoint::AfterIos(self.rng.gen_range(0..reach)))
    }
}

/// The operation list of `config`'s seed: `config.ops` drawn operations
/// for the engine its spec describes.
pub(super) fn generate<C>(config: &KitConfig<C>) -> Vec<PlannedKitOp> {
    let mut generator = Generator {
        config,
        tables: config.spec.tables,
        levels: &config.spec.levels,
        maintenance: config.spec.maintenance,
        phases: config.spec.phases,
        rng: ChaCha8Rng::seed_from_u64(simulator::seeds::kit_workload(config.seed)),
    };
    let kinds = Weighted::new(&config.weights);
    let levels = Weighted::new(&config.level_weights);
    let mut ops = Vec::with_capacity(config.ops as usize);
    for index in 0..config.ops {
        let kind = kinds.pick(&mut generator.rng);
        let op = generator.op(kind, &levels);
        let crash = generator.crash_point(&op);
        ops.push(PlannedKitOp { index, op, crash });
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Promise;

    /// A reader's lines print and parse back; a bad one says what is wrong.
    #[test]
    fn reader_lines_read_back_and_bad_ones_say_why() {
        use crate::Readers;
        let one_client = Spec::new(vec![Level::new("sync", Promise::Durable)]);
        let refused = Grammar::of(&one_client).parse("3 READER 1 BEGIN").unwrap_err();
        assert!(refused.contains("declares no readers"), "{refused}");
        let readers = Some(Readers {
            max: 3,
            across_maintenance: true,
            writer_waits: false,
            refused_at: &[],
            second_writer_refused_at: &[],
            documented: "here",
        });
        let spec = Spec { readers, ..one_client };
        let grammar = Grammar::of(&spec);
        for line in ["3 READER 1 BEGIN", "4 READER 2 GET t0 k7", "5 READER 1 SCAN t0", "6 READER 3 END"] {
            let planned = grammar.parse(line).unwrap();
            assert!(matches!(planned.op, KitOp::Reader { .. }), "{line}");
            assert_eq!(planned.to_string(), line);
        }
        assert!(grammar.parse("1 READER 0 BEGIN").unwrap_err().contains("0 is the writer"));
        assert!(grammar.parse("1 READER 4 BEGIN").unwrap_err().contains("clients 1 to 3"));
        assert!(grammar.parse("1 READER x BEGIN").unwrap_err().contains("bad reader"));
        assert!(grammar.parse("1 READER 1 PUT t0 k v").unwrap_err().contains("not a reader's step"));
        assert!(grammar.parse("1 READER 1 GET t9 k").unwrap_err().contains("unknown table"));
    }
}
