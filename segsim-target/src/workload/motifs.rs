//! Exploration's motifs: the sequences that bugs past the first crash
//! need and that a hundred drawn operations rarely build (cold cycles,
//! kill cycles; see [`super::generate_for_explore`]). Drawn only when
//! exploring, from the same stream, so the random mode's lists never see
//! them.

use engine::store::Command;
use rand::Rng;

use super::generator::Generator;
use super::Op;

/// Of the motifs, the share of kill cycles (the rest are cold cycles).
const KILL_CYCLE_SHARE: f64 = 0.3;

impl Generator<'_> {
    /// One of exploration's motifs (see [`super::generate_for_explore`]).
    pub(super) fn motif(&mut self, index: u64) -> Vec<Op> {
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

    /// A cold cycle (see [`super::generate_for_explore`]) on one table:
    /// rows written, the window slid past them, an eviction, writes to the
    /// rows it sealed (promotions, deletes, TTLs), maybe the sliding row
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

#[cfg(test)]
mod tests {
    use crate::config::{Config, Overrides};
    use crate::workload::{generate_for_explore, Op, PlannedOp};

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
}
