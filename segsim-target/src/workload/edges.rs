//! The edges Redis defines and the bad input the store must refuse, drawn
//! on purpose: deadlines at the clock and either side of it, `SET`'s
//! options, misspelled integers, the wrong arity, empty keys and fields,
//! keys and hashes either side of the engine's inline and packed limits, a
//! write one byte over the frame limit. What the store must answer is the
//! model's to say (`testkit::model::refusal_of`); these draws only make
//! sure every such case comes up. Apart from the generator's ordinary
//! draws so that what a seed probes at the edges reads in one place.

use engine::store::{Command, SetCondition, SetOptions, SetTtl};
use rand::Rng;

use super::generator::{named, Generator};
use super::{misspelled, Misspelling, Op};

/// The share of `PEXPIREAT`s and `HPEXPIREAT`s drawn with their deadline
/// misspelled (see [`Op::Args`]).
const MISSPELLED_INTEGER_RATE: f64 = 0.08;

/// `SET key <value>` whose log record is one byte over the frame limit
/// the engine declares (`engine::frame::MAX_FRAME_PAYLOAD_BYTES`): the
/// store must refuse it and change nothing. Its value, zeros, is made only
/// when it runs, and never touched (`oversized.rs`).
fn oversized_set(key: Vec<u8>) -> Op {
    let value_bytes = super::oversized::one_over_value_bytes(key.len());
    Op::OversizedSet { key, value_bytes, byte: super::oversized::DRAWN_BYTE }
}

impl Generator<'_> {
    /// A deadline: some already past, most a few simulated seconds ahead,
    /// and the edges Redis defines drawn on purpose — exactly the clock
    /// (already due: the key or fields are deleted, Redis's
    /// `checkAlreadyExpired`), just before it, just after it (kept: alive
    /// through that millisecond, gone once the clock passes it), and
    /// negative ones (past: deleted).
    pub(super) fn at_ms(&mut self) -> i64 {
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
    pub(super) fn bad_input(&mut self, command: Command) -> Op {
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
            15 if self.rng.gen_bool(0.02) => oversized_set(plain_key()),
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
    pub(super) fn set_options(&mut self) -> SetOptions {
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
    pub(super) fn maybe_misspelled(&mut self, command: Command) -> Op {
        if !self.rng.gen_bool(MISSPELLED_INTEGER_RATE) {
            return Op::Cmd(command);
        }
        let how = Misspelling::ALL[self.rng.gen_range(0..Misspelling::ALL.len())];
        misspelled(&command, how).map_or(Op::Cmd(command), Op::Args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Overrides};
    use crate::workload::{generate, PlannedOp, T0_MS};

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
        let oversized = oversized_set(b"k0".to_vec());
        let planned = PlannedOp { index: 7, op: oversized, crash: None };
        assert!(planned.to_string().len() < 100, "an oversized value prints short");
        assert_eq!(PlannedOp::parse(&planned.to_string()), Ok(planned));
    }

    /// Oversized writes are rare (one in ~30k drawn operations): a sweep's
    /// worth of seeds draws some, each as the recipe the run makes it
    /// from, printing as a line that parses back to it.
    #[test]
    fn a_sweep_draws_oversized_sets() {
        let mut seeds = Vec::new();
        for seed in 0..1000 {
            let config = Config::from_seed(seed, Overrides::default());
            for planned in generate(&config) {
                if let Op::OversizedSet { key, value_bytes, byte } = &planned.op {
                    assert_eq!((key.as_slice(), *byte), (&b"k0"[..], super::super::oversized::DRAWN_BYTE));
                    assert!(super::super::oversized::is_oversized(key.len(), *value_bytes));
                    assert_eq!(PlannedOp::parse(&planned.to_string()).as_ref(), Ok(&planned));
                    seeds.push(seed);
                }
            }
        }
        eprintln!("seeds drawing an oversized SET: {seeds:?}");
        assert!(!seeds.is_empty());
    }
}
