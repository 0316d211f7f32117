//! The generator: a seed's operation list drawn from the workload stream
//! (`seeds::workload`), one operation of a drawn kind at a time — keys
//! from the configured tables and key space, fields, values, deadlines —
//! each maybe with a crash point inside it, and crashes aimed at manifest
//! compaction from a stream of their own. The draws at Redis's edges are
//! `edges.rs`'s, exploration's motifs `motifs.rs`'s. Every draw's order is
//! part of every trace hash: a change here moves seeds.

use engine::store::Command;
use engine::Phase;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{window_declarations, Op, PlannedOp, T0_MS};
use crate::config::{Config, OpKind};
use simulator::disk::CrashPoint;
use simulator::draw::{self, Weighted};

/// `sim explore`'s bias (see [`super::generate_for_explore`]): at each
/// slot, the chance that a motif (`motifs.rs`) begins there instead of
/// one drawn operation.
const MOTIF_CHANCE: f64 = 0.08;

/// The share of rewrites and FLUSHALLs without a crash of their own that
/// are aimed at one of manifest compaction's phases (see [`aim_at_compaction`]).
const COMPACTION_AIM_RATE: f64 = 0.25;

/// The share of `SET`s drawn with Redis's options (`NX`, `XX`, `GET`,
/// `PX`, `PXAT`, `KEEPTTL`; see [`Generator::set_options`]).
const SET_OPTIONS_RATE: f64 = 0.35;

/// The share of drawn commands turned into bad input, or into input at an
/// edge the engine declares (see [`Generator::bad_input`]): modest, so the
/// workload still mostly does real work.
const BAD_INPUT_RATE: f64 = 0.03;

/// Builds a seed's operation list.
pub(super) struct Generator<'a> {
    pub(super) config: &'a Config,
    pub(super) rng: ChaCha8Rng,
    pub(super) now_ms: u64,
    /// The highest window-column value a cold cycle wrote (explore only):
    /// the next one slides the window past it.
    pub(super) cycle_ts: i64,
    pub(super) kinds: Weighted<'a, OpKind>,
    /// Whether the input edges of issue 32 are drawn: `SET`'s options, a
    /// deadline one after the clock, commands turned into bad input. The
    /// random mode's lists draw them; exploration's keep the draws they
    /// had before, so CI's explore seeds keep the catches they are pinned
    /// to (and exploration spends its crash states on real work).
    pub(super) input_edges: bool,
}

impl<'a> Generator<'a> {
    /// A printable value of 1..=max_len bytes (see [`draw::token`]).
    pub(super) fn token(&mut self, max_len: usize) -> Vec<u8> {
        draw::token(&mut self.rng, max_len)
    }

    fn table_row(&mut self) -> Vec<u8> {
        let table = self.rng.gen_range(0..self.config.tables.len());
        let id = self.rng.gen_range(0..self.config.key_space);
        named(self.config.tables[table].name.as_bytes(), b":", u64::from(id))
    }

    pub(super) fn hash_key(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.8) {
            self.table_row()
        } else {
            named(b"h", b"", u64::from(self.rng.gen_range(0..self.config.key_space)))
        }
    }

    pub(super) fn any_key(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..4) {
            0 => named(b"k", b"", u64::from(self.rng.gen_range(0..self.config.key_space))),
            _ => self.hash_key(),
        }
    }

    pub(super) fn field(&mut self) -> Vec<u8> {
        if self.rng.gen_bool(0.3) {
            b"ts".to_vec()
        } else {
            self.numbered_field()
        }
    }

    /// `f0`..`f3`, one draw. Drawn as an `i32`, the type the draw had
    /// when it was formatted: `gen_range` rejects by the type's width,
    /// and another type would change the stream.
    pub(super) fn numbered_field(&mut self) -> Vec<u8> {
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

/// `prefix`, `separator` and `n` in decimal, as `format!` would spell
/// them: keys are made for every generated operation, and the formatting
/// machinery cost more than the rest of drawing one.
pub(super) fn named(prefix: &[u8], separator: &[u8], n: u64) -> Vec<u8> {
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

/// [`generate`](super::generate), with exploration's motifs or without, and with or
/// without crashes aimed at compaction.
pub(super) fn generate_ops(config: &Config, motifs: bool, aim_compaction: bool) -> Vec<PlannedOp> {
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
    use crate::workload::generate;

    #[test]
    fn names_are_spelled_as_format_spells_them() {
        for n in [0, 7, 10, 99, 12_345, u64::from(u32::MAX), u64::MAX] {
            assert_eq!(named(b"t", b":", n), format!("t:{n}").into_bytes());
            assert_eq!(named(b"h", b"", n), format!("h{n}").into_bytes());
        }
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
}
