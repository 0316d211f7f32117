//! [`FuzzPlan`]: the structure-aware input of the `store_ops` target, and
//! its mapping onto the simulator's operation list.
//!
//! The fuzzer mutates bytes; `arbitrary` decodes them into a plan whose
//! every value is already meaningful: keys from a small space, so that
//! operations collide; window-column values that are numbers most of the
//! time; crashes aimed at the engine's phase marks or a few I/O operations
//! in. A mutation then changes *which* operation runs, not whether the
//! input parses, and the fuzzer's coverage feedback steers the operation
//! mix rather than the tokenizer.
//!
//! A plan's seed decides what a simulator seed decides (the swarm
//! configuration: fsync policy, crash mode, fault probabilities, tables,
//! spans) and every fault stream; the plan decides the operations. Every
//! value prints as a token of an `.ops` line (`sim --replay` reads it), so
//! a failing plan prints as a list a person can replay and shrink.

use arbitrary::{Arbitrary, Unstructured};
use engine::aof::FsyncPolicy;
use engine::store::Command;

use crate::config::{Config, Overrides};
use crate::workload::{misspelled, window_declarations, Misspelling, Op, PlannedOp, T0_MS};
use engine::Phase;
use simulator::disk::{CrashMode, CrashPoint};

/// The most steps a plan runs; the rest of a longer input is ignored, so
/// one input costs at most a few milliseconds.
pub const MAX_STEPS: usize = 256;

/// The longest value token, in bytes.
pub const MAX_TOKEN_BYTES: usize = 64;

/// The characters a value token is made of (the workload generator's).
pub const TOKEN_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// One `store_ops` input, decoded.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct FuzzPlan {
    /// The simulator seed whose configuration and fault streams apply.
    pub seed: u64,
    /// Overrides the seed's fsync policy.
    pub fsync: Option<FuzzFsync>,
    /// Overrides the seed's crash mode.
    pub crash_mode: Option<FuzzCrashMode>,
    /// The operations, after the seed's window declarations.
    pub steps: Vec<FuzzStep>,
}

/// An fsync policy.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum FuzzFsync {
    Always,
    EverySec,
    No,
}

/// A crash mode.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum FuzzCrashMode {
    Strict,
    Prefix,
    Reorder,
}

/// One operation and, maybe, a power loss inside it.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct FuzzStep {
    /// What to do.
    pub op: FuzzOp,
    /// Where to cut the power while doing it.
    pub crash: Option<FuzzCrash>,
}

/// Where a power loss lands inside an operation.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuzzCrash {
    /// At the engine's [`Phase`] whose code is `n` modulo the number of
    /// phases (no crash if the operation never reaches it). Codes are
    /// fixed (`Phase::code`), so a plan that names a phase by its code
    /// keeps its meaning; a byte at or above the number of phases wraps,
    /// and names another phase once phases are added (14 since manifest
    /// compaction, 11 before: the committed corpus holds codes below 11
    /// only).
    AtMark(u8),
    /// At the n-th I/O operation of the operation.
    AfterIos(u8),
}

/// The phase a plan's `AtMark(code)` aims at: every byte names one.
pub fn phase_of_code(code: u8) -> Phase {
    let count = Phase::ALL.len() as u8;
    Phase::from_code(code % count).expect("phase codes are 0..count")
}

/// One workload operation, with every argument drawn from a small space.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum FuzzOp {
    Set {
        key: Key,
        value: Token,
    },
    Get {
        key: Key,
    },
    /// No keys deletes one: `DEL` needs at least one.
    Del {
        first: Key,
        more: Vec<Key>,
    },
    /// `ts` sets the window column to a number; `pairs` may set it to a
    /// token. No field at all writes `f0`.
    HSet {
        key: Key,
        ts: Option<i16>,
        pairs: Vec<(Field, Token)>,
    },
    HGet {
        key: Key,
        field: Field,
    },
    HDel {
        key: Key,
        first: Field,
        more: Vec<Field>,
    },
    HGetAll {
        key: Key,
    },
    /// Expire at `at`; with a misspelling, the arguments spell the
    /// deadline so (and the store must refuse them).
    PExpireAt {
        key: Key,
        at: Deadline,
        spelling: Option<Misspelling>,
    },
    Persist {
        key: Key,
    },
    HPExpireAt {
        key: Key,
        at: Deadline,
        spelling: Option<Misspelling>,
        first: Field,
        more: Vec<Field>,
    },
    FlushAll,
    Evict,
    Rewrite,
    Sync,
    Advance {
        ms: u16,
    },
    Crash,
    Restart,
    SecondOpen,
    Kill,
    /// No keys asks about one: `EXISTS` needs at least one.
    Exists {
        first: Key,
        more: Vec<Key>,
    },
    PTtl {
        key: Key,
    },
    HMGet {
        key: Key,
        first: Field,
        more: Vec<Field>,
    },
    HLen {
        key: Key,
    },
    HExists {
        key: Key,
        field: Field,
    },
    /// With a misspelling, the arguments spell the increment so.
    HIncrBy {
        key: Key,
        field: Field,
        by: i64,
        spelling: Option<Misspelling>,
    },
    HSetNx {
        key: Key,
        field: Field,
        value: Token,
    },
}

/// A deadline: near the clock, or negative (in the past whatever the
/// clock, which Redis reads as a delete).
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// The clock plus `n` ms (negative: already past; zero: the clock,
    /// already due: the key or fields are deleted, as Redis does).
    In(i16),
    /// `-(n + 1)`.
    Negative(u16),
}

impl Deadline {
    /// The absolute deadline at a clock standing at `now_ms`.
    pub fn at_ms(self, now_ms: u64) -> i64 {
        match self {
            Deadline::In(n) => i64::try_from(now_ms).unwrap_or(i64::MAX).saturating_add(i64::from(n)),
            Deadline::Negative(n) => -1 - i64::from(n),
        }
    }

    /// The deadline that is `at_ms` at a clock standing at `now_ms`, if a
    /// plan can say it.
    pub fn of(at_ms: i64, now_ms: u64) -> Option<Deadline> {
        if at_ms < 0 {
            return u16::try_from(-1 - at_ms).ok().map(Deadline::Negative);
        }
        i16::try_from(i128::from(at_ms) - i128::from(now_ms)).ok().map(Deadline::In)
    }
}

/// A key: a windowed table's row, a plain hash, or a plain key (a string,
/// usually), with its id taken modulo the seed's key space.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    /// Which kind of key.
    pub space: KeySpace,
    /// Which one of them.
    pub id: u8,
}

/// The three key spaces of the workload generator.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySpace {
    /// `t<n>:<id>`: a row of the seed's table `n` (modulo their count).
    Row(u8),
    /// `h<id>`: a hash outside every window.
    Hash,
    /// `k<id>`: any key, usually a string.
    Plain,
}

/// A hash field: the window column, or one of a few others.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `ts`, the window column of every table.
    Ts,
    /// `f<n % 4>`.
    F(u8),
}

/// A value: each byte picks a character of [`TOKEN_ALPHABET`].
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Token(pub Vec<u8>);

impl FuzzPlan {
    /// Decode a fuzz input. Never fails: bytes that run out read as zeros
    /// and end every list, so any input is some plan.
    pub fn from_bytes(data: &[u8]) -> FuzzPlan {
        let mut bytes = Unstructured::new(data);
        let mut plan = FuzzPlan::arbitrary(&mut bytes).expect("arbitrary reads missing bytes as zeros");
        plan.steps.truncate(MAX_STEPS);
        plan
    }

    /// The overrides the plan pins: its fsync policy and crash mode, and
    /// the operation count of the whole list (the `--ops` its repro pins).
    pub fn overrides(&self, ops: usize) -> Overrides {
        Overrides {
            ops: Some(ops as u64),
            fsync: self.fsync.map(FuzzFsync::policy),
            crash_mode: self.crash_mode.map(FuzzCrashMode::mode),
            ..Overrides::default()
        }
    }

    /// The configuration, overrides and operation list to run: the seed's
    /// window declarations (as every generated list starts), then one
    /// operation per step, each at its index.
    pub fn to_run(&self) -> (Config, Overrides, Vec<PlannedOp>) {
        let declarations = Config::from_seed(self.seed, Overrides::default()).tables.len();
        let overrides = self.overrides(declarations + self.steps.len());
        let config = Config::from_seed(self.seed, overrides);
        let mut ops = window_declarations(&config);
        ops.reserve(self.steps.len());
        let mut now_ms = T0_MS;
        for step in &self.steps {
            let op = step.op.to_op(&config, &mut now_ms);
            let crash = step.crash.map(FuzzCrash::point);
            ops.push(PlannedOp { index: ops.len() as u64, op, crash });
        }
        (config, overrides, ops)
    }
}

impl FuzzFsync {
    /// The engine's policy.
    pub fn policy(self) -> FsyncPolicy {
        match self {
            FuzzFsync::Always => FsyncPolicy::Always,
            FuzzFsync::EverySec => FsyncPolicy::EverySec,
            FuzzFsync::No => FsyncPolicy::No,
        }
    }
}

impl FuzzCrashMode {
    /// The disk's mode.
    pub fn mode(self) -> CrashMode {
        match self {
            FuzzCrashMode::Strict => CrashMode::Strict,
            FuzzCrashMode::Prefix => CrashMode::Prefix,
            FuzzCrashMode::Reorder => CrashMode::Reorder,
        }
    }
}

impl FuzzCrash {
    /// The disk's crash point.
    pub fn point(self) -> CrashPoint {
        match self {
            FuzzCrash::AtMark(code) => CrashPoint::AtMark(phase_of_code(code).as_str()),
            FuzzCrash::AfterIos(n) => CrashPoint::AfterIos(u64::from(n)),
        }
    }
}

impl FuzzOp {
    /// The workload operation under `config`; `now_ms` is the simulated
    /// clock as of this operation (advanced by `Advance`, as the runner
    /// advances it), which TTLs are relative to.
    pub fn to_op(&self, config: &Config, now_ms: &mut u64) -> Op {
        let key = |key: &Key| key.name(config);
        let fields =
            |first: &Field, more: &[Field]| std::iter::once(first).chain(more).map(Field::name).collect::<Vec<_>>();
        let now = *now_ms;
        let spelled = |command: Command, spelling: &Option<Misspelling>| match spelling {
            Some(how) => misspelled(&command, *how).map_or(Op::Cmd(command), Op::Args),
            None => Op::Cmd(command),
        };
        let command = match self {
            FuzzOp::Set { key: k, value } => Command::Set { key: key(k), value: value.text() },
            FuzzOp::Get { key: k } => Command::Get { key: key(k) },
            FuzzOp::Del { first, more } => Command::Del { keys: std::iter::once(first).chain(more).map(key).collect() },
            FuzzOp::HSet { key: k, ts, pairs } => {
                let mut all: Vec<(Vec<u8>, Vec<u8>)> =
                    ts.iter().map(|ts| (b"ts".to_vec(), ts.to_string().into_bytes())).collect();
                all.extend(pairs.iter().map(|(field, value)| (field.name(), value.text())));
                if all.is_empty() {
                    all.push((Field::F(0).name(), Token(Vec::new()).text()));
                }
                Command::HSet { key: key(k), pairs: all }
            }
            FuzzOp::HGet { key: k, field } => Command::HGet { key: key(k), field: field.name() },
            FuzzOp::HDel { key: k, first, more } => Command::HDel { key: key(k), fields: fields(first, more) },
            FuzzOp::HGetAll { key: k } => Command::HGetAll { key: key(k) },
            FuzzOp::PExpireAt { key: k, at, spelling } => {
                return spelled(Command::PExpireAt { key: key(k), at_ms: at.at_ms(now) }, spelling);
            }
            FuzzOp::Persist { key: k } => Command::Persist { key: key(k) },
            FuzzOp::HPExpireAt { key: k, at, spelling, first, more } => {
                let command = Command::HPExpireAt { key: key(k), at_ms: at.at_ms(now), fields: fields(first, more) };
                return spelled(command, spelling);
            }
            FuzzOp::FlushAll => Command::FlushAll,
            FuzzOp::Exists { first, more } => {
                Command::Exists { keys: std::iter::once(first).chain(more).map(key).collect() }
            }
            FuzzOp::PTtl { key: k } => Command::PTtl { key: key(k) },
            FuzzOp::HMGet { key: k, first, more } => Command::HMGet { key: key(k), fields: fields(first, more) },
            FuzzOp::HLen { key: k } => Command::HLen { key: key(k) },
            FuzzOp::HExists { key: k, field } => Command::HExists { key: key(k), field: field.name() },
            FuzzOp::HIncrBy { key: k, field, by, spelling } => {
                return spelled(Command::HIncrBy { key: key(k), field: field.name(), by: *by }, spelling);
            }
            FuzzOp::HSetNx { key: k, field, value } => {
                Command::HSetNx { key: key(k), field: field.name(), value: value.text() }
            }
            FuzzOp::Evict => return Op::Evict,
            FuzzOp::Rewrite => return Op::Rewrite,
            FuzzOp::Sync => return Op::Sync,
            FuzzOp::Advance { ms } => {
                *now_ms = now_ms.saturating_add(u64::from(*ms));
                return Op::Advance(u64::from(*ms));
            }
            FuzzOp::Crash => return Op::Crash,
            FuzzOp::Restart => return Op::Restart,
            FuzzOp::SecondOpen => return Op::SecondOpen,
            FuzzOp::Kill => return Op::Kill,
        };
        Op::Cmd(command)
    }
}

impl Key {
    /// The key's bytes under `config` (its tables and key space).
    pub fn name(&self, config: &Config) -> Vec<u8> {
        let id = u32::from(self.id) % config.key_space.max(1);
        match self.space {
            KeySpace::Row(table) => {
                let table = &config.tables[usize::from(table) % config.tables.len()];
                format!("{}:{id}", table.name).into_bytes()
            }
            KeySpace::Hash => format!("h{id}").into_bytes(),
            KeySpace::Plain => format!("k{id}").into_bytes(),
        }
    }
}

impl Field {
    /// The field's bytes.
    pub fn name(&self) -> Vec<u8> {
        match self {
            Field::Ts => b"ts".to_vec(),
            Field::F(n) => format!("f{}", n % 4).into_bytes(),
        }
    }
}

impl Token {
    /// The value's bytes: never empty (an empty token would vanish from an
    /// `.ops` line), at most [`MAX_TOKEN_BYTES`].
    pub fn text(&self) -> Vec<u8> {
        if self.0.is_empty() {
            return b"0".to_vec();
        }
        self.0.iter().take(MAX_TOKEN_BYTES).map(|b| TOKEN_ALPHABET[usize::from(*b) % TOKEN_ALPHABET.len()]).collect()
    }
}
