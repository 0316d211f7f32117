//! `crash-os`'s workload: the kit's own workload for the seed, made
//! endless, with the operations that have no meaning on a real disk left
//! out.
//!
//! The seed's swarm configuration (`KitConfig`: key space, value sizes,
//! which operation kinds and commit levels, how often) stays for the whole
//! run; the operations come in chunks of `config.ops`. Chunk 0 is exactly
//! the workload `--seed S` runs on the simulated disk; chunk `k` is the
//! same generator's draw for `seeds::crash_os_chunk(S, k)`, renumbered to
//! follow on. Parent and child compute the same list from the seed, so the
//! child needs only the index to start at, and a run can go on for any
//! number of cycles without holding more than one chunk.
//!
//! On the real disk: a `CRASH` (a power loss) is skipped — the kill is the
//! crash here, and no process can cut a real machine's power; a `RESTART`
//! is what it says, a clean close and reopen in the child; the crash
//! points the simulator aims inside operations are dropped. A reader's
//! step (`--clients`) runs as on the simulated disk.

use super::super::config::KitConfig;
use super::super::workload::{generate, KitOp, PlannedKitOp};
use simulator::seeds;

/// The seed's workload, endless (see the module doc).
pub(super) struct Endless<'a, C> {
    config: &'a KitConfig<C>,
    /// The chunk drawn last: its number and its operations.
    chunk: Option<(u64, Vec<PlannedKitOp>)>,
}

impl<'a, C: Clone> Endless<'a, C> {
    /// The workload of `config`'s seed, in chunks of `config.ops`.
    pub fn new(config: &'a KitConfig<C>) -> Self {
        assert!(config.ops > 0, "crash-os refuses --ops 0 before it gets here");
        Endless { config, chunk: None }
    }

    /// The first operation at or after `index` that runs on the real disk
    /// (a `CRASH` is skipped; see the module doc).
    pub fn next_at(&mut self, index: u64) -> PlannedKitOp {
        // Every swarm keeps puts and commits on, so a chunk is never all
        // crashes and this ends within one chunk.
        let mut at = index;
        loop {
            let planned = self.at(at);
            if planned.op != KitOp::Crash {
                return planned.clone();
            }
            at += 1;
        }
    }

    /// The operation at `index`, as the kit's generator drew it.
    fn at(&mut self, index: u64) -> &PlannedKitOp {
        let chunk_ops = self.config.ops;
        let number = index / chunk_ops;
        if self.chunk.as_ref().map(|(held, _)| *held) != Some(number) {
            self.chunk = Some((number, self.draw(number)));
        }
        let (_, ops) = self.chunk.as_ref().expect("drawn above");
        let planned = &ops[(index % chunk_ops) as usize];
        debug_assert_eq!(planned.index, index, "a chunk is renumbered to follow on");
        planned
    }

    /// Chunk `number`: the seed's own workload first, then the draws of
    /// the derived seeds, renumbered, with no crash points.
    fn draw(&self, number: u64) -> Vec<PlannedKitOp> {
        let mut config = self.config.clone();
        if number > 0 {
            config.seed = seeds::crash_os_chunk(self.config.seed, number);
        }
        let mut ops = generate(&config);
        assert_eq!(ops.len() as u64, self.config.ops, "the generator draws config.ops operations");
        for planned in &mut ops {
            planned.index += number * self.config.ops;
            planned.crash = None;
        }
        ops
    }
}

#[cfg(test)]
mod tests {
    use simulator::seam::Target;

    use super::*;
    use crate::test_engine::Buffered;
    use crate::{Kit, KitSettings};

    /// Chunk 0 is the seed's own workload (what `--seed S` runs on the
    /// simulated disk), less its crashes; the next chunk follows on with
    /// operations of its own.
    #[test]
    fn the_first_chunk_is_the_seeds_workload_and_the_rest_follow_on() {
        let kit = Kit::new(Buffered::HONEST, KitSettings::default());
        let config = kit.config(5, None);
        let mut endless = Endless::new(&config);
        let own: Vec<PlannedKitOp> = kit.generate(5).into_iter().filter(|p| p.op != KitOp::Crash).collect();
        let mut index = 0;
        for planned in &own {
            let got = endless.next_at(index);
            assert_eq!((got.index, &got.op, got.crash), (planned.index, &planned.op, None));
            index = got.index + 1;
        }
        let next = endless.next_at(config.ops);
        assert!(next.index >= config.ops && next.index < 2 * config.ops);
        let second: Vec<KitOp> = (0..20).map(|i| endless.next_at(config.ops + i).op).collect();
        let first: Vec<KitOp> = (0..20).map(|i| endless.next_at(i).op).collect();
        assert_ne!(first, second, "chunk 1 is drawn from a seed of its own");
        assert_eq!(endless.next_at(3), endless.next_at(3), "going back redraws the same chunk");
    }
}
