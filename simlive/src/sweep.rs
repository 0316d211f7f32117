//! `sim live sweep`: per seed, runs of the program with the seed's
//! faults — one to its end, the power cut after it exits, and one cut at
//! an I/O index the seed draws among the first run's disk calls (or, with
//! `--every-index`, one cut at each of them) — each checked. A failure prints the repro line that replays that one run.
//!
//! The second run makes the same calls as the first up to its crash when
//! the program is deterministic under the seed (the same faults answer the
//! same calls); its trace hash up to the cut is not compared here (the
//! first run's goes on past it), so a nondeterministic program shows up as
//! a seed whose repro does not fail again, which the repro line lets
//! anyone see.

use crate::run::{run, RunOptions, RunOutcome};
use crate::serve::entropy_seed;

/// One checked run of a sweep.
pub struct SweepRow {
    pub seed: u64,
    pub options: RunOptions,
    pub outcome: Result<RunOutcome, String>,
}

/// The crash index seed `seed` draws among `io_count` calls (index 0,
/// the disk's own root made before the program starts, excluded).
pub fn drawn_crash_index(seed: u64, io_count: u64) -> u64 {
    1 + entropy_seed(seed, u64::MAX - 2) % io_count.saturating_sub(1).max(1)
}

/// Run every seed of `seeds`, reporting each run as it ends: to the end,
/// then cut at the seed's drawn index, or (`every_index`) at each index
/// of the first run's calls in turn (one crash state each, the seed's).
pub fn sweep(
    base: &RunOptions,
    seeds: std::ops::Range<u64>,
    every_index: bool,
    mut report: impl FnMut(&SweepRow),
) -> Vec<SweepRow> {
    let mut rows = Vec::new();
    for seed in seeds {
        let end = RunOptions { seed, crash_at: None, ..base.clone() };
        let first = SweepRow { seed, outcome: run(&end), options: end };
        report(&first);
        let io_count = first.outcome.as_ref().map_or(0, |o| o.io_count);
        rows.push(first);
        let cuts: Vec<u64> = match (io_count, every_index) {
            (0, _) => Vec::new(),
            (n, true) => (1..n).collect(), // index 0 is the disk's own root
            (n, false) => vec![drawn_crash_index(seed, n)],
        };
        for at in cuts {
            let cut = RunOptions { seed, crash_at: Some(at), ..base.clone() };
            let row = SweepRow { seed, outcome: run(&cut), options: cut };
            report(&row);
            rows.push(row);
        }
    }
    rows
}

/// Whether a row fails (a run that could not be made fails too).
pub fn row_failed(row: &SweepRow) -> bool {
    row.outcome.as_ref().map_or(true, RunOutcome::failed)
}
