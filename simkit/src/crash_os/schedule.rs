//! When `crash-os` kills each child: moments drawn from the seed's own
//! stream (`seeds::crash_os_kills`), so the same seed draws the same
//! schedule on every machine. What the child has done by a moment is the
//! machine's business: the schedule is reproducible, the run is not.
//!
//! Seven kills in eight are timed from the child's `ready` line, anywhere
//! in the first `max_kill_ms` of its workload; the eighth is timed from
//! the child's start, within the first eighth of that span, so some kills
//! land while the process starts or while the engine opens (and
//! recovers) — a recovery interrupted by a kill must be recoverable too.

use std::fmt;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use simulator::seeds;

/// One kill's moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct KillMoment {
    /// Counted from the child's `ready` line (else from its start).
    pub after_ready: bool,
    /// How long after that.
    pub delay: Duration,
}

impl fmt::Display for KillMoment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let from = if self.after_ready { "the engine opened" } else { "the child started" };
        write!(f, "{:.3} ms after {from}", self.delay.as_secs_f64() * 1000.0)
    }
}

/// The seed's kill moments, one per cycle.
pub(super) struct KillSchedule {
    rng: ChaCha8Rng,
    max_kill_us: u64,
}

impl KillSchedule {
    /// `seed`'s schedule, kills at most `max_kill_ms` in.
    pub fn new(seed: u64, max_kill_ms: u64) -> Self {
        assert!(max_kill_ms > 0, "crash-os refuses --max-kill-ms 0 before it gets here");
        KillSchedule { rng: ChaCha8Rng::seed_from_u64(seeds::crash_os_kills(seed)), max_kill_us: max_kill_ms * 1000 }
    }

    /// The next cycle's moment.
    pub fn next_moment(&mut self) -> KillMoment {
        let after_ready = !self.rng.gen_ratio(1, 8);
        let span_us = if after_ready { self.max_kill_us } else { (self.max_kill_us / 8).max(1) };
        KillMoment { after_ready, delay: Duration::from_micros(self.rng.gen_range(0..span_us)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_one_schedule_within_its_bounds() {
        let draw = |seed| {
            let mut schedule = KillSchedule::new(seed, 40);
            (0..200).map(|_| schedule.next_moment()).collect::<Vec<_>>()
        };
        let moments = draw(3);
        assert_eq!(moments, draw(3));
        assert_ne!(moments, draw(4));
        assert!(moments.iter().all(|m| m.delay < Duration::from_millis(if m.after_ready { 40 } else { 5 })));
        let early = moments.iter().filter(|m| !m.after_ready).count();
        assert!((10..50).contains(&early), "about one in eight from the start: {early} of 200");
    }
}
