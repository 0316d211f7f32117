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

use std::fmt;

use arbitrary::Arbitrary;
use engine::store::{Command, SetCondition, SetOptions, SetTtl};
use engine::Phase;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{Config, OpKind};
use simulator::disk::CrashPoint;
use simulator::draw::{self, Weighted};
use simulator::op_line::{parse_head, write_head};

/// The simulated clock's start: 2023-11-14, so TTLs look like real ones.
pub const T0_MS: u64 = 1_700_000_000_000;

/// The share of rewrites and FLUSHALLs without a crash of their own that
/// are aimed at one of manifest compaction's phases (see [`aim_at_compaction`]).
const COMPACTION_AIM_RATE: f64 = 0.25;

/// The share of `PEXPIREAT`s and `HPEXPIREAT`s drawn with their deadline
/// misspelled (see [`Op::Args`]).
const MISSPELLED_INTEGER_RATE: f64 = 0.08;

/// The share of `SET`s drawn with Redis's options (`NX`, `XX`, `GET`,
/// `PX`, `PXAT`, `KEEPTTL`; see [`Generator::set_options`]).
const SET_OPTIONS_RATE: f64 = 0.35;

/// The share of drawn commands turned into bad input, or into input at an
/// edge the engine declares (see [`Generator::bad_input`]): modest, so the
/// workload still mostly does real work.
const BAD_INPUT_RATE: f64 = 0.03;

/// A way to spell an integer that Rust's parser may take and Redis
/// refuses (`value is not an integer or out of range`): the workload's
/// [`Op::Args`] draw one, and the fuzz plan names one.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misspelling {
    /// `+n`.
    Plus,
    /// One leading zero: `0n`, `-0n`.
    Zero,
    /// Two leading zeros.
    ZeroZero,
    /// `-0`, whatever the number.
    MinusZero,
}

impl Misspelling {
    /// Every misspelling, in declaration order.
    pub const ALL: [Misspelling; 4] =
        [Misspelling::Plus, Misspelling::Zero, Misspelling::ZeroZero, Misspelling::MinusZero];

    /// `n` spelled this way.
    pub fn spell(self, n: i64) -> Vec<u8> {
        let sign = if n < 0 { "-" } else { "" };
        let digits = n.unsigned_abs();
        match self {
            Misspelling::Plus => format!("+{n}"),
            Misspelling::Zero => format!("{sign}0{digits}"),
            Misspelling::ZeroZero => format!("{sign}00{digits}"),
            Misspelling::MinusZero => "-0".to_string(),
        }
        .into_bytes()
    }

    /// The first misspelling, and a number, that [`Misspelling::spell`]
    /// to exactly `text`, if any does.
    pub fn read(text: &[u8]) -> Option<(Misspelling, i64)> {
        let text = std::str::from_utf8(text).ok()?;
        Self::ALL.into_iter().find_map(|how| {
            let n = match how {
                Misspelling::Plus => text.strip_prefix('+')?.parse().ok()?,
                Misspelling::Zero | Misspelling::ZeroZero => {
                    let (sign, rest) = text.strip_prefix('-').map_or(("", text), |rest| ("-", rest));
                    let zeros = if how == Misspelling::Zero { 1 } else { 2 };
                    format!("{sign}{}", rest.get(zeros..)?).parse().ok()?
                }
                Misspelling::MinusZero => 0,
            };
            (how.spell(n) == text.as_bytes()).then_some((how, n))
        })
    }
}

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
            Op::Cmd(Command::Set { .. }) => "set",
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

impl fmt::Display for PlannedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_head(f, self.index, self.crash)?;
        match &self.op {
            Op::Cmd(command) => {
                for arg in command.to_args() {
                    write!(f, " {}", Shown(&arg))?;
                }
                Ok(())
            }
            Op::Args(args) => {
                write!(f, " ARGS")?;
                for arg in args {
                    write!(f, " {}", Shown(arg))?;
                }
                Ok(())
            }
            Op::Evict => write!(f, " EVICT"),
            Op::Rewrite => write!(f, " REWRITE"),
            Op::Sync => write!(f, " SYNC"),
            Op::Advance(ms) => write!(f, " ADVANCE {ms}"),
            Op::Crash => write!(f, " CRASH"),
            Op::Restart => write!(f, " RESTART"),
            Op::SecondOpen => write!(f, " SECOND-OPEN"),
            Op::Kill => write!(f, " KILL"),
        }
    }
}

/// An argument as an operation line prints it: as it is, but for the two
/// the line could not hold — an empty one (`@empty`) and a long run of one
/// byte (`@repeat:<count>:<byte>`, an oversized value: 64 MiB do not make
/// a line). Drawn tokens never start with `@`.
struct Shown<'a>(&'a [u8]);

/// Runs at least this long print as `@repeat:...`.
const REPEAT_MIN_BYTES: usize = 64;

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => write!(f, "@empty"),
            [first, rest @ ..] if rest.len() + 1 >= REPEAT_MIN_BYTES && rest.iter().all(|b| b == first) => {
                write!(f, "@repeat:{}:{}", self.0.len(), char::from(*first))
            }
            bytes => write!(f, "{}", String::from_utf8_lossy(bytes)),
        }
    }
}

/// An argument of an operation line, as [`Shown`] printed it.
fn read_arg(word: &str) -> Result<Vec<u8>, String> {
    if word == "@empty" {
        return Ok(Vec::new());
    }
    let Some(run) = word.strip_prefix("@repeat:") else { return Ok(word.as_bytes().to_vec()) };
    let (count, byte) = run.split_once(':').ok_or(format!("bad repeat {word:?}"))?;
    let count: usize = count.parse().map_err(|_| format!("bad repeat count {word:?}"))?;
    let &[byte] = byte.as_bytes() else { return Err(format!("bad repeat byte {word:?}")) };
    // An oversized write is a little over the frame limit: never more.
    if count > 2 * engine::frame::MAX_FRAME_PAYLOAD_BYTES {
        return Err(format!("repeat too long {word:?}"));
    }
    Ok(vec![byte; count])
}

impl PlannedOp {
    /// Parse a line printed by `Display`.
    pub fn parse(line: &str) -> Result<PlannedOp, String> {
        let (index, crash, rest) = parse_head(line, &Phase::NAMES)?;
        let op = match rest.as_slice() {
            ["EVICT"] => Op::Evict,
            ["REWRITE"] => Op::Rewrite,
            ["SYNC"] => Op::Sync,
            ["CRASH"] => Op::Crash,
            ["RESTART"] => Op::Restart,
            ["SECOND-OPEN"] => Op::SecondOpen,
            ["KILL"] => Op::Kill,
            ["ADVANCE", ms] => Op::Advance(ms.parse().map_err(|_| format!("bad advance {ms:?}"))?),
            ["ARGS", args @ ..] if !args.is_empty() => {
                Op::Args(args.iter().map(|a| read_arg(a)).collect::<Result<_, _>>()?)
            }
            args => {
                let args: Vec<Vec<u8>> = args.iter().map(|a| read_arg(a)).collect::<Result<_, _>>()?;
                Op::Cmd(Command::parse(&args).map_err(|e| format!("{line:?}: {e}"))?)
            }
        };
        Ok(PlannedOp { index, op, crash })
    }
}

/// The arguments of `command` (a `PEXPIREAT`, `HPEXPIREAT` or `HINCRBY`;
/// `None` for any other) with its integer argument spelled `how`.
pub fn misspelled(command: &Command, how: Misspelling) -> Option<Vec<Vec<u8>>> {
    let (at, n) = match command {
        Command::PExpireAt { at_ms, .. } | Command::HPExpireAt { at_ms, .. } => (2, *at_ms),
        Command::HIncrBy { by, .. } => (3, *by),
        _ => return None,
    };
    let mut args = command.to_args();
    args[at] = how.spell(n);
    Some(args)
}

/// `SET key <value>` whose log record is one byte over the frame limit
/// the engine declares (`engine::frame::MAX_FRAME_PAYLOAD_BYTES`): the
/// store must refuse it and change nothing.
fn oversized_set(key: Vec<u8>) -> Command {
    let limit_bytes = engine::frame::MAX_FRAME_PAYLOAD_BYTES;
    // The record: the count, then each argument's length and bytes.
    let other_bytes = 4 + (4 + 3) + (4 + key.len()) + 4;
    Command::Set { key, value: vec![b'x'; limit_bytes + 1 - other_bytes] }
}

/// Builds a seed's operation list.
struct Generator<'a> {
    config: &'a Config,
    rng: ChaCha8Rng,
    now_ms: u64,
    /// The highest window-column value a cold cycle wrote (explore only):
    /// the next one slides the window past it.
    cycle_ts: i64,
    kinds: Weighted<'a, OpKind>,
    /// Whether the input edges of issue 32 are drawn: `SET`'s options, a
    /// deadline one after the clock, commands turned into bad input. The
    /// random mode's lists draw them; exploration's keep the draws they
    /// had before, so CI's explore seeds keep the catches they are pinned
    /// to (and exploration spends its crash states on real work).
    input_edges: bool,
}

impl<'a> Generator<'a> {
    /// A printable value of 1..=max_len bytes (see [`draw::token`]).
    fn token(&mut self, max_len: usize) -> Vec<u8> {
        draw::token(&mut self.rng, max_len)
    }

    fn table_row(&mut self) -> Vec<u8> {
        let table = self.rng.gen_range(0..self.config.tables.len());
        let id = self.rng.gen_range(0..self.config.key_space);
        named(self.config.tables[table].name.as_bytes(), b":", u64::from(id))
    }

    fn hash_key(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.8) {
            self.table_row()
        } else {
            named(b"h", b"", u64::from(self.rng.gen_range(0..self.config.key_space)))
        }
    }

    fn any_key(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..4) {
            0 => named(b"k", b"", u64::from(self.rng.gen_range(0..self.config.key_space))),
            _ => self.hash_key(),
        }
    }

    fn field(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.3) {
            b"ts".to_vec()
        } else {
            self.numbered_field()
        }
    }

    /// `f0`..`f3`, one draw. Drawn as an `i32`, the type the draw had
    /// when it was formatted: `gen_range` rejects by the type's width,
    /// and another type would change the stream.
    fn numbered_field(&mut self) -> Vec<u8> {
        let n: i32 = self.rng.gen_range(0..4);
        vec![b'f', b"0123"[n as usize]]
    }

    fn fields(&mut self) -> Vec<Vec<u8>> {
        (0..self.rng.gen_range(1..=3)).map(|_| self.field()).collect()
    }

    /// A window-column value that climbs with the op index, so windows
    /// slide and rows fall out of them.
    fn ts_value(&mut self, index: u64) -> Vec<u8> {
        let ts = (index / 4) as i64 + self.rng.gen_range(-8..8);
        let sign: &[u8] = if ts < 0 { b"-" } else { b"" };
        named(sign, b"", ts.unsigned_abs())
    }

    /// A deadline: some already past, most a few simulated seconds ahead,
    /// and the edges Redis defines drawn on purpose — exactly the clock
    /// (already due: the key or fields are deleted, Redis's
    /// `checkAlreadyExpired`), just before it, just after it (kept: alive
    /// through that millisecond, gone once the clock passes it), and
    /// negative ones (past: deleted).
    fn at_ms(&mut self) -> i64 {
        let now = i64::try_from(self.now_ms).unwrap_or(i64::MAX);
        let negative = 3 + i32::from(self.input_edges);
        match self.rng.gen_range(0..20) {
            0 | 1 => now,
            2 => now - 1,
            3 if self.input_edges => now + 1,
            roll if roll == negative => -self.rng.gen_range(1..1_000),
            _ => now.saturating_add(self.rng.gen_range(-2_000..15_000)),
        }
    }

    /// `command` as bad input, or at an edge the engine declares: the
    /// wrong number of arguments (any command), an empty key or field,
    /// `HINCRBY` on a plain key (a string, mostly: WRONGTYPE), a `WINDOW`
    /// that declares nothing, `SET` options that do not read, a key either
    /// side of the longest kept inline (22 bytes), a hash either side of
    /// the most fields packed in one buffer (32), and, rarely, a write one
    /// byte over the log's frame limit (64 MiB). What the store must answer
    /// is the model's to say: a refusal that changes nothing, or (an empty
    /// key, the edges) the command's ordinary meaning.
    fn bad_input(&mut self, command: Command) -> Op {
        let mut args = command.to_args();
        let plain_key = || named(b"k", b"", 0);
        match self.rng.gen_range(0..20) {
            0..=5 if args.len() > 1 && self.rng.gen_bool(0.5) => {
                args.truncate(self.rng.gen_range(1..args.len()));
                Op::Args(args)
            }
            6 | 7 if args.len() > 1 => {
                args[1].clear();
                Op::Args(args)
            }
            8 if args.len() > 2 && args[0].starts_with(b"H") => {
                args[2].clear();
                Op::Args(args)
            }
            9 => {
                let key = named(b"k", b"", u64::from(self.rng.gen_range(0..self.config.key_space)));
                Op::Cmd(Command::HIncrBy { key, field: self.field(), by: 1 })
            }
            10 | 11 => Op::Args(self.nonsense_window()),
            12 => Op::Args(self.unreadable_set()),
            13 if args.len() > 1 => {
                // `k` and 21 or 22 digits: 22 bytes is the longest key kept inline.
                let width = self.rng.gen_range(21..=22);
                args[1] = format!("k{:0>width$}", self.rng.gen_range(0..self.config.key_space)).into_bytes();
                Op::Args(args)
            }
            14 => {
                let key = named(b"h", b"", u64::from(self.rng.gen_range(0..self.config.key_space)));
                let count = self.rng.gen_range(32..=33);
                let pairs = (0..count).map(|i| (format!("w{i}").into_bytes(), self.token(8))).collect();
                Op::Cmd(Command::HSet { key, pairs })
            }
            15 if self.rng.gen_bool(0.02) => Op::Cmd(oversized_set(plain_key())),
            _ => {
                args.push(b"extra".to_vec());
                Op::Args(args)
            }
        }
    }

    /// `WINDOW` as nothing declares a table: a negative span, an empty
    /// table, a span that is no integer, too few or too many arguments.
    fn nonsense_window(&mut self) -> Vec<Vec<u8>> {
        let table = self.config.tables[0].name.clone();
        let span = self.rng.gen_range(1..100).to_string();
        let words: Vec<&str> = match self.rng.gen_range(0..5) {
            0 => vec!["WINDOW", &table, "ts", "-5"],
            1 => vec!["WINDOW", "", "ts", &span],
            2 => vec!["WINDOW", &table, "ts", "wide"],
            3 => vec!["WINDOW", &table],
            _ => vec!["WINDOW", &table, "ts", &span, "extra"],
        };
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    /// `SET` with options that do not read: conflicting, incomplete, not
    /// above zero, misspelled, unknown.
    fn unreadable_set(&mut self) -> Vec<Vec<u8>> {
        let options: &[&str] = match self.rng.gen_range(0..6) {
            0 => &["NX", "XX"],
            1 => &["EX"],
            2 => &["EX", "0"],
            3 => &["PX", "5", "EX", "5"],
            4 => &["PXAT", "+5"],
            _ => &["SOON"],
        };
        let mut args = vec![b"SET".to_vec(), named(b"k", b"", 0), b"v".to_vec()];
        args.extend(options.iter().map(|o| o.as_bytes().to_vec()));
        args
    }

    /// `SET`'s options: a condition a quarter of the time each (`NX`,
    /// `XX`), `GET` a third of the time, and a TTL — none, `KEEPTTL`, a
    /// relative one (now and then one whose deadline overflows, which
    /// Redis refuses), or an absolute one drawn as `PEXPIREAT`'s are (the
    /// clock and either side of it on purpose; above zero, as the option
    /// requires). Never none of them: that is a plain `SET`.
    fn set_options(&mut self) -> SetOptions {
        let condition = match self.rng.gen_range(0..4) {
            0 => Some(SetCondition::Nx),
            1 => Some(SetCondition::Xx),
            _ => None,
        };
        let get = self.rng.gen_bool(0.3);
        let ttl = match self.rng.gen_range(0..12) {
            0..=2 => None,
            3 | 4 => Some(SetTtl::Keep),
            5 => Some(SetTtl::AfterMs(1_000 * self.rng.gen_range(1..15))),
            6 => Some(SetTtl::AfterMs(if self.rng.gen_bool(0.1) { i64::MAX } else { self.rng.gen_range(1..15_000) })),
            _ => Some(SetTtl::AtMs(self.at_ms().max(1))),
        };
        let options = SetOptions { condition, ttl, get };
        if options == SetOptions::default() {
            return SetOptions { get: true, ..options };
        }
        options
    }

    /// `command` (a `PEXPIREAT`, `HPEXPIREAT` or `HINCRBY`), or now and
    /// then its arguments with the integer spelled as Redis refuses to
    /// read it: signed with `+`, zero-padded, or `-0`.
    fn maybe_misspelled(&mut self, command: Command) -> Op {
        if !self.rng.gen_bool(MISSPELLED_INTEGER_RATE) {
            return Op::Cmd(command);
        }
        let how = Misspelling::ALL[self.rng.gen_range(0..Misspelling::ALL.len())];
        misspelled(&command, how).map_or(Op::Cmd(command), Op::Args)
    }

    /// The operation of `kind` at `index`: a command, now and then turned
    /// into bad input ([`Generator::bad_input`]), or an admin call.
    fn op(&mut self, index: u64, kind: OpKind) -> Op {
        match self.drawn_op(index, kind) {
            Op::Cmd(command) if self.input_edges && self.rng.gen_bool(BAD_INPUT_RATE) => self.bad_input(command),
            op => op,
        }
    }

    fn drawn_op(&mut self, index: u64, kind: OpKind) -> Op {
        let max_value = self.config.max_value_bytes;
        match kind {
            OpKind::Set => {
                let key = if self.rng.gen_bool(0.9) { self.any_key() } else { self.table_row() };
                let value = self.token(max_value);
                if !self.input_edges || !self.rng.gen_bool(SET_OPTIONS_RATE) {
                    return Op::Cmd(Command::Set { key, value });
                }
                Op::Cmd(Command::SetWith { key, value, options: self.set_options() })
            }
            OpKind::Get => Op::Cmd(Command::Get { key: self.any_key() }),
            OpKind::Del => {
                let keys = (0..self.rng.gen_range(1..=3)).map(|_| self.any_key()).collect();
                Op::Cmd(Command::Del { keys })
            }
            OpKind::HSet => {
                let key = self.hash_key();
                let mut pairs = Vec::with_capacity(4);
                if self.rng.gen_bool(0.8) {
                    pairs.push((b"ts".to_vec(), self.ts_value(index)));
                }
                for _ in 0..self.rng.gen_range(usize::from(pairs.is_empty())..=3) {
                    let field = self.numbered_field();
                    pairs.push((field, self.token(max_value)));
                }
                Op::Cmd(Command::HSet { key, pairs })
            }
            OpKind::HGet => Op::Cmd(Command::HGet { key: self.hash_key(), field: self.field() }),
            OpKind::HDel => Op::Cmd(Command::HDel { key: self.hash_key(), fields: self.fields() }),
            OpKind::HGetAll => Op::Cmd(Command::HGetAll { key: self.hash_key() }),
            OpKind::PExpireAt => {
                let command = Command::PExpireAt { key: self.any_key(), at_ms: self.at_ms() };
                self.maybe_misspelled(command)
            }
            OpKind::Persist => Op::Cmd(Command::Persist { key: self.any_key() }),
            OpKind::HPExpireAt => {
                let command = Command::HPExpireAt { key: self.hash_key(), at_ms: self.at_ms(), fields: self.fields() };
                self.maybe_misspelled(command)
            }
            OpKind::FlushAll => Op::Cmd(Command::FlushAll),
            OpKind::Evict => Op::Evict,
            OpKind::Rewrite => Op::Rewrite,
            OpKind::Sync => Op::Sync,
            OpKind::Advance => {
                let ms = self.rng.gen_range(1..2_500);
                self.now_ms += ms;
                Op::Advance(ms)
            }
            OpKind::Crash => Op::Crash,
            OpKind::Restart => Op::Restart,
            OpKind::SecondOpen => Op::SecondOpen,
            OpKind::Kill => Op::Kill,
            _ => self.hash_op(index, kind),
        }
    }

    /// The commands issue 22 added: reads of any key or of hashes (table
    /// rows mostly, so cold ones), `HINCRBY` (small steps, the window
    /// column now and then, and the i64 edges that overflow) and `HSETNX`.
    fn hash_op(&mut self, index: u64, kind: OpKind) -> Op {
        let command = match kind {
            OpKind::Exists => {
                Command::Exists { keys: (0..self.rng.gen_range(1..=3)).map(|_| self.any_key()).collect() }
            }
            OpKind::PTtl => Command::PTtl { key: self.any_key() },
            OpKind::HMGet => Command::HMGet { key: self.hash_key(), fields: self.fields() },
            OpKind::HLen => Command::HLen { key: self.hash_key() },
            OpKind::HExists => Command::HExists { key: self.hash_key(), field: self.field() },
            OpKind::HIncrBy => {
                let (key, field) = (self.hash_key(), self.field());
                // The extremes (overflow) only off the window column, whose
                // mark would otherwise pin every row out of its window.
                let by = match self.rng.gen_range(0..20) {
                    0 if field != b"ts" => i64::MAX,
                    1 if field != b"ts" => i64::MIN,
                    _ => self.rng.gen_range(-10..=10),
                };
                return self.maybe_misspelled(Command::HIncrBy { key, field, by });
            }
            OpKind::HSetNx => {
                let key = self.hash_key();
                let field = self.numbered_field();
                Command::HSetNx { key, field, value: self.token(self.config.max_value_bytes) }
            }
            other => unreachable!("op() draws {other:?} itself (op {index})"),
        };
        Op::Cmd(command)
    }

    /// Maybe aim a crash inside `op`: at a phase it passes, or a few I/O
    /// operations in.
    fn crash_point(&mut self, op: &Op) -> Option<CrashPoint> {
        if !self.rng.gen_bool(self.config.inner_crash_rate) {
            return None;
        }
        let marks: &[Phase] = match op {
            Op::Evict => &Phase::EVICT,
            Op::Rewrite => &Phase::REWRITE,
            Op::Cmd(Command::FlushAll) => &Phase::FLUSHALL,
            _ => &[],
        };
        if !marks.is_empty() && self.rng.gen_bool(0.6) {
            return Some(CrashPoint::AtMark(marks[self.rng.gen_range(0..marks.len())].as_str()));
        }
        let reach = if marks.is_empty() { 4 } else { 24 };
        Some(CrashPoint::AfterIos(self.rng.gen_range(0..reach)))
    }
}

/// `sim explore`'s bias (see [`generate_for_explore`]): at each slot, the
/// chance that a motif begins there instead of one drawn operation.
const MOTIF_CHANCE: f64 = 0.08;

/// Of the motifs, the share of kill cycles (the rest are cold cycles).
const KILL_CYCLE_SHARE: f64 = 0.3;

impl Generator<'_> {
    /// One of exploration's motifs (see [`generate_for_explore`]).
    fn motif(&mut self, index: u64) -> Vec<Op> {
        if self.rng.gen_bool(KILL_CYCLE_SHARE) {
            self.kill_cycle()
        } else {
            self.cold_cycle(index)
        }
    }

    /// A kill cycle: writes the policy has not synced yet, a process
    /// crash (its page cache survives, and the reopen replays it), time
    /// passing — under `everysec` the writes are then due on disk, which
    /// only the reopen can have seen to — and a write, whose I/O is where
    /// exploration cuts the power.
    fn kill_cycle(&mut self) -> Vec<Op> {
        let mut ops = Vec::new();
        for _ in 0..self.rng.gen_range(1..=2) {
            let key = self.hash_key();
            let field = self.numbered_field();
            ops.push(Op::Cmd(Command::HSet { key, pairs: vec![(field, self.token(24))] }));
        }
        ops.push(Op::Kill);
        let ms = self.rng.gen_range(1_000..2_500);
        self.now_ms += ms;
        ops.push(Op::Advance(ms));
        let key = self.any_key();
        ops.push(Op::Cmd(Command::Set { key, value: self.token(24) }));
        ops
    }

    /// A cold cycle (see [`generate_for_explore`]) on one table: rows
    /// written, the window slid past them, an eviction, writes to the rows
    /// it sealed (promotions, deletes, TTLs), maybe the sliding row
    /// deleted, a rewrite, maybe a restart of some kind, and a second
    /// eviction (a new seal, whose seq must not be one the rewrite just
    /// retired).
    fn cold_cycle(&mut self, index: u64) -> Vec<Op> {
        let table = self.rng.gen_range(0..self.config.tables.len());
        let name = self.config.tables[table].name.clone();
        let span = self.config.tables[table].span;
        let row = |id: u32| format!("{name}:{id}").into_bytes();
        // Rows at the highest value yet, then one row far enough above it
        // that they all fall out of the window.
        let base = ((index / 4) as i64 + 8).max(self.cycle_ts);
        let slide = base + span + 1;
        self.cycle_ts = slide;
        let ids: Vec<u32> =
            (0..self.rng.gen_range(1..=3)).map(|_| self.rng.gen_range(0..self.config.key_space)).collect();
        let mut ops = Vec::new();
        for &id in &ids {
            let field = self.numbered_field();
            let pairs = vec![(b"ts".to_vec(), base.to_string().into_bytes()), (field, self.token(24))];
            ops.push(Op::Cmd(Command::HSet { key: row(id), pairs }));
        }
        let slider = self.rng.gen_range(0..self.config.key_space);
        ops.push(Op::Cmd(Command::HSet {
            key: row(slider),
            pairs: vec![(b"ts".to_vec(), slide.to_string().into_bytes())],
        }));
        ops.push(Op::Evict);
        // Change the cold rows: each one, or (half the time) every one, so
        // that the segment may end up holding no live row at all.
        let every = self.rng.gen_bool(0.5);
        for &id in &ids {
            if !every && self.rng.gen_bool(0.5) {
                continue;
            }
            let key = row(id);
            let ahead_ms = i64::try_from(self.now_ms).unwrap_or(i64::MAX) + self.rng.gen_range(5_000..60_000);
            ops.push(Op::Cmd(match self.rng.gen_range(0..5) {
                0 => Command::Del { keys: vec![key] },
                1 => Command::PExpireAt { key, at_ms: ahead_ms },
                2 => Command::HPExpireAt { key, at_ms: ahead_ms, fields: vec![b"ts".to_vec()] },
                _ => Command::HSet { key, pairs: vec![(b"f0".to_vec(), self.token(24))] },
            }));
        }
        // Half the time the row that slid the window is gone before the
        // rewrite: the window's mark then lives only in the log's record of
        // it, and a restart must still evict what it evicted before.
        if self.rng.gen_bool(0.5) {
            ops.push(Op::Cmd(Command::Del { keys: vec![row(slider)] }));
        }
        ops.push(Op::Rewrite);
        match self.rng.gen_range(0..5) {
            0 => ops.push(Op::Crash),
            1 => ops.push(Op::Kill),
            2 => ops.push(Op::Restart),
            _ => {}
        }
        ops.push(Op::Evict);
        ops
    }
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
    generate_ops(config, true, true)
}

/// Manifest compaction's crash gaps (`Phase::MANIFEST_COMPACT`) get crashes
/// of their own: a rewrite or FLUSHALL (compaction runs at the end of a
/// rewrite, when the manifest is due) that drew no crash is aimed, a
/// quarter of the time, at one of compaction's marks, drawn from a stream
/// of its own (`seeds::compaction_aim`). Compaction is rare (a few times a
/// run at most, in under a third of seeds), so the swarm's own inner-crash
/// rate, a few percent, would almost never land in it, and its marks are
/// in no list `crash_point` draws from.
///
/// This moves no seed that never compacts in an aimed operation: the
/// workload stream is not drawn from, so every operation list is what it
/// was, and a crash aimed at a mark the operation never passes never
/// happens (the armed point is not traced). What moves is a seed whose
/// aimed rewrite compacts — and those seeds moved anyway with compaction's
/// own I/O.
fn aim_at_compaction(seed: u64, index: u64, op: &Op) -> Option<CrashPoint> {
    if !matches!(op, Op::Rewrite | Op::Cmd(Command::FlushAll)) {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(simulator::seeds::compaction_aim(seed, index));
    if !rng.gen_bool(COMPACTION_AIM_RATE) {
        return None;
    }
    let phases = &Phase::MANIFEST_COMPACT;
    Some(CrashPoint::AtMark(phases[rng.gen_range(0..phases.len())].as_str()))
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

/// `prefix`, `separator` and `n` in decimal, as `format!` would spell
/// them: keys are made for every generated operation, and the formatting
/// machinery cost more than the rest of drawing one.
fn named(prefix: &[u8], separator: &[u8], n: u64) -> Vec<u8> {
    // u64::MAX has 20 digits.
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut name = Vec::with_capacity(prefix.len() + separator.len() + digits.len() - start);
    name.extend_from_slice(prefix);
    name.extend_from_slice(separator);
    name.extend_from_slice(&digits[start..]);
    name
}

/// The operation list of `config`'s seed: window declarations, then
/// `config.ops` drawn operations.
pub fn generate(config: &Config) -> Vec<PlannedOp> {
    generate_ops(config, false, true)
}

/// [`generate`], with exploration's motifs or without, and with or
/// without crashes aimed at compaction.
fn generate_ops(config: &Config, motifs: bool, aim_compaction: bool) -> Vec<PlannedOp> {
    let mut generator = Generator {
        config,
        rng: ChaCha8Rng::seed_from_u64(simulator::seeds::workload(config.seed)),
        now_ms: T0_MS,
        cycle_ts: i64::MIN,
        kinds: Weighted::new(&config.weights),
        input_edges: !motifs,
    };
    let mut ops = window_declarations(config);
    ops.reserve(config.ops as usize);
    let mut drawn = 0;
    while drawn < config.ops {
        let index = ops.len() as u64;
        // No draw at all without motifs: the random mode's stream is the
        // one it always was.
        if motifs && generator.rng.gen_bool(MOTIF_CHANCE) {
            let cycle = generator.motif(index);
            let room = (config.ops - drawn) as usize;
            for op in cycle.into_iter().take(room) {
                ops.push(PlannedOp { index: ops.len() as u64, op, crash: None });
                drawn += 1;
            }
            continue;
        }
        drawn += 1;
        let kind = generator.kinds.pick(&mut generator.rng);
        let op = generator.op(index, kind);
        let mut crash = generator.crash_point(&op);
        if aim_compaction && crash.is_none() {
            crash = aim_at_compaction(config.seed, index, &op);
        }
        let killed = op == Op::Kill;
        ops.push(PlannedOp { index, op, crash });
        if killed && generator.rng.gen_bool(0.5) {
            // Kill, time passes, power loss: what the reopen replayed from
            // the dead process's page cache must have been made durable.
            let ms = generator.rng.gen_range(1..2_500);
            generator.now_ms += ms;
            ops.push(PlannedOp { index: index + 1, op: Op::Advance(ms), crash: None });
            ops.push(PlannedOp { index: index + 2, op: Op::Crash, crash: None });
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    #[test]
    fn every_op_prints_and_parses_back() {
        for seed in 0..32 {
            let config = Config::from_seed(seed, Overrides::default());
            for planned in generate(&config) {
                let line = planned.to_string();
                assert_eq!(PlannedOp::parse(&line).unwrap(), planned, "{line}");
            }
        }
    }

    #[test]
    fn workloads_draw_the_edges_redis_defines() {
        let (mut at_clock, mut around_clock, mut negative, mut misspelled) = (0, [0, 0], 0, 0);
        for seed in 0..64 {
            let config = Config::from_seed(seed, Overrides::default());
            let mut now_ms = T0_MS;
            for planned in generate(&config) {
                match &planned.op {
                    Op::Advance(ms) => now_ms += ms,
                    Op::Cmd(Command::PExpireAt { at_ms, .. } | Command::HPExpireAt { at_ms, .. }) => {
                        at_clock += usize::from(*at_ms == now_ms as i64);
                        around_clock[0] += usize::from(*at_ms == now_ms as i64 - 1);
                        around_clock[1] += usize::from(*at_ms == now_ms as i64 + 1);
                        negative += usize::from(*at_ms < 0);
                    }
                    Op::Args(args) => {
                        let readable = testkit::model::refusal_of(args).is_none();
                        assert!(readable == Command::parse(args).is_ok(), "{planned}");
                        misspelled += usize::from(testkit::model::refuses_integer_in(args));
                    }
                    _ => {}
                }
            }
        }
        assert!(
            at_clock > 0 && around_clock.iter().all(|&n| n > 0) && negative > 0 && misspelled > 0,
            "{at_clock} {around_clock:?} {negative} {misspelled}"
        );
    }

    /// Every kind of bad input, and each edge, is drawn somewhere in a
    /// few hundred seeds, and every operation (an oversized one by its
    /// `@repeat` form, an empty argument by `@empty`) prints as a line
    /// that parses back to it.
    #[test]
    fn workloads_draw_bad_input_of_every_kind() {
        use testkit::model::{refusal_of, ArgsRefusal};
        let mut refusals = std::collections::BTreeSet::new();
        let (mut empty, mut wrong_type, mut wide, mut long_key) = (0, 0, 0, 0);
        for seed in 0..300 {
            let config = Config::from_seed(seed, Overrides::default());
            for planned in generate(&config) {
                match &planned.op {
                    Op::Args(args) => {
                        refusals.extend(refusal_of(args).map(|r| format!("{r:?}")));
                        empty += usize::from(args.iter().any(Vec::is_empty));
                        long_key += usize::from(args.get(1).is_some_and(|key| key.len() >= 22));
                    }
                    Op::Cmd(Command::HIncrBy { key, .. }) => wrong_type += usize::from(key.starts_with(b"k")),
                    Op::Cmd(Command::HSet { pairs, .. }) => wide += usize::from(pairs.len() >= 32),
                    _ => {}
                }
                assert_eq!(PlannedOp::parse(&planned.to_string()).as_ref(), Ok(&planned));
            }
        }
        for kind in [
            ArgsRefusal::WrongArity,
            ArgsRefusal::NotAnInteger,
            ArgsRefusal::SyntaxError,
            ArgsRefusal::InvalidExpire,
            ArgsRefusal::NegativeSpan,
            ArgsRefusal::EmptyTable,
        ] {
            assert!(refusals.contains(&format!("{kind:?}")), "{kind:?} never drawn: {refusals:?}");
        }
        assert!(empty > 0 && wrong_type > 0 && wide > 0 && long_key > 0, "{empty} {wrong_type} {wide} {long_key}");
        let oversized = Op::Cmd(oversized_set(b"k0".to_vec()));
        let planned = PlannedOp { index: 7, op: oversized, crash: None };
        assert!(planned.to_string().len() < 100, "an oversized value prints short");
        assert_eq!(PlannedOp::parse(&planned.to_string()), Ok(planned));
    }

    #[test]
    fn every_misspelling_reads_back_and_redis_refuses_it() {
        for n in [0, 5, -5, 1_700_000_000_000, -1, i64::MAX, i64::MIN, i64::MIN + 1] {
            for how in Misspelling::ALL {
                let text = how.spell(n);
                let (read, m) = Misspelling::read(&text).unwrap();
                assert_eq!(read.spell(m), text);
                assert_eq!(testkit::model::redis_integer(&text), None, "{}", String::from_utf8_lossy(&text));
            }
        }
    }

    /// Exploration's list: the motifs are there, the list still counts
    /// `ops` operations past the window declarations (plus the random
    /// mode's own kill follow-ups), indices run in order, every line
    /// parses back.
    #[test]
    fn explore_lists_carry_motifs_and_count_their_ops() {
        let (mut cold_cycles, mut kill_cycles) = (0, 0);
        for seed in 0..32 {
            let config = Config::from_seed(seed, Overrides { ops: Some(100), ..Overrides::default() });
            let explored = generate_for_explore(&config);
            let windows = config.tables.len();
            let follow_ups = explored.windows(3).filter(|w| w[0].op == Op::Kill && w[2].op == Op::Crash).count();
            assert!(explored.len() >= windows + 100 && explored.len() <= windows + 100 + 2 * follow_ups, "seed {seed}");
            assert!(explored.iter().enumerate().all(|(i, planned)| planned.index == i as u64), "seed {seed}");
            for planned in &explored {
                assert_eq!(PlannedOp::parse(&planned.to_string()).unwrap(), *planned);
            }
            let ops: Vec<&Op> = explored.iter().map(|planned| &planned.op).collect();
            // A cold cycle: evict, then a rewrite within a few ops, then evict.
            cold_cycles += ops
                .windows(12)
                .filter(|w| w[0] == &Op::Evict && w[1..].contains(&&Op::Rewrite) && w[1..].contains(&&Op::Evict))
                .count();
            kill_cycles += ops.windows(2).filter(|w| w[0] == &Op::Kill && matches!(w[1], Op::Advance(1_000..))).count();
        }
        assert!(cold_cycles >= 32 && kill_cycles >= 8, "{cold_cycles} cold cycles, {kill_cycles} kill cycles");
    }

    #[test]
    fn names_are_spelled_as_format_spells_them() {
        for n in [0, 7, 10, 99, 12_345, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(named(b"t", b":", n), format!("t:{n}").into_bytes());
            assert_eq!(named(b"h", b"", n), format!("h{n}").into_bytes());
        }
    }

    #[test]
    fn the_same_seed_generates_the_same_ops() {
        let config = Config::from_seed(9, Overrides::default());
        assert_eq!(generate(&config), generate(&config));
    }

    #[test]
    fn compaction_is_aimed_at_from_a_stream_of_its_own() {
        let (mut aimed, mut rewrites) = (0, 0);
        for seed in 0..64 {
            let config = Config::from_seed(seed, Overrides::default());
            let ops = generate(&config);
            for planned in &ops {
                if let Some(CrashPoint::AtMark(phase)) = planned.crash {
                    if Phase::parse(phase).is_some_and(|phase| Phase::MANIFEST_COMPACT.contains(&phase)) {
                        assert!(matches!(planned.op, Op::Rewrite | Op::Cmd(Command::FlushAll)), "{planned}");
                        aimed += 1;
                    }
                }
                rewrites += u64::from(matches!(planned.op, Op::Rewrite | Op::Cmd(Command::FlushAll)));
            }
            // Without the aim the list is exactly what the workload stream
            // alone makes: the same operations, the same crash points
            // elsewhere.
            let stripped: Vec<PlannedOp> = ops
                .iter()
                .map(|planned| match planned.crash {
                    Some(CrashPoint::AtMark(name))
                        if Phase::parse(name).is_some_and(|p| Phase::MANIFEST_COMPACT.contains(&p)) =>
                    {
                        PlannedOp { crash: None, ..planned.clone() }
                    }
                    _ => planned.clone(),
                })
                .collect();
            assert_eq!(stripped, generate_ops(&config, false, false), "seed {seed}");
        }
        assert!(aimed > 0 && aimed < rewrites, "{aimed} of {rewrites} rewrites aimed");
    }

    #[test]
    fn bad_lines_are_refused_with_a_reason() {
        for line in ["", "x SET a b", "1 @mark=nowhere EVICT", "1 ADVANCE soon", "1 FROB"] {
            assert!(PlannedOp::parse(line).is_err(), "{line}");
        }
    }
}
