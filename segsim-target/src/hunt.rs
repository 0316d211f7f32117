//! `sim canaries`: hunt every planted bug until the simulator catches it,
//! and the table that proves the harness can fail.
//!
//! A hunt plants one canary ([`crate::canary`]) and runs fresh seeds, 0,
//! 1, 2, ..., each exactly as a normal run would (same configuration, same
//! workload, same faults: only the engine knows a bug is planted), until
//! the first seed whose run fails or the budget of wall-clock seconds runs
//! out. One hunt runs on one thread, so its seconds are seconds of one
//! core; `jobs` hunts run side by side. Seeds to the first failure do not
//! depend on the machine: the same build always catches a canary at the
//! same seed, given the budget to get there.
//!
//! A catch counts only if it is the canary's: the catching seed is run
//! once more with no canary, and must pass. If it fails too, the hunt has
//! found a real engine bug (or a harness bug), not proof of power, and the
//! canary is not counted as caught.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::canary::Canary;
use crate::config::Overrides;
use crate::run::run_seed;
use simulator::failure::Check;

/// The first failure a hunt found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catch {
    /// The failing seed.
    pub seed: u64,
    /// The check that failed (`durability`, `audit`, `open`, ...).
    pub check: Check,
    /// The first line of the failure's detail, for the table.
    pub headline: String,
    /// The command line that reproduces it.
    pub repro: String,
    /// The same seed passes with no canary: the failure is the planted
    /// bug's.
    pub passes_without: bool,
}

impl Catch {
    /// Whether this catch proves the harness caught the canary.
    pub fn counts(&self) -> bool {
        self.passes_without
    }
}

/// One canary's hunt.
#[derive(Clone, Debug)]
pub struct Hunt {
    /// The canary.
    pub canary: Canary,
    /// Seeds run, the catching one included.
    pub seeds: u64,
    /// Wall-clock seconds the hunt took (one core).
    pub seconds: f64,
    /// The first failure, or `None` if the canary survived the budget.
    pub catch: Option<Catch>,
}

impl Hunt {
    /// Whether the canary was caught, by a seed that passes without it.
    pub fn caught(&self) -> bool {
        self.catch.as_ref().is_some_and(Catch::counts)
    }
}

/// Hunt `canary` over seeds `first_seed`, `first_seed + 1`, ... with
/// `base`'s other overrides, until a seed fails or `budget` has passed
/// (at least one seed always runs).
pub fn hunt(canary: Canary, base: Overrides, first_seed: u64, budget: Duration) -> Hunt {
    let overrides = Overrides { canary: Some(canary), ..base };
    let clean = Overrides { canary: None, ..base };
    let started = Instant::now();
    let mut seeds = 0u64;
    loop {
        let seed = first_seed.wrapping_add(seeds);
        let outcome = run_seed(seed, overrides, false);
        seeds += 1;
        if let Some(failure) = outcome.failure {
            let seconds = started.elapsed().as_secs_f64();
            let passes_without = run_seed(seed, clean, false).failure.is_none();
            let headline = failure.detail.lines().next().unwrap_or_default().trim().to_string();
            let catch = Catch { seed, check: failure.check, headline, repro: failure.repro, passes_without };
            return Hunt { canary, seeds, seconds, catch: Some(catch) };
        }
        if started.elapsed() >= budget {
            return Hunt { canary, seeds, seconds: started.elapsed().as_secs_f64(), catch: None };
        }
    }
}

/// Hunt each of `canaries` from seed 0 with `budget` each, `jobs` hunts at
/// a time; `done` hears of each hunt as it ends. Results come back in the
/// order of `canaries`.
// Without the feature `Canary` has no values, so the compiler sees that
// nothing after a hunt is reachable.
#[cfg_attr(not(feature = "canaries"), allow(unused_variables))]
pub fn hunt_all(
    canaries: &[Canary],
    base: Overrides,
    budget: Duration,
    jobs: usize,
    done: &(dyn Fn(&Hunt) + Sync),
) -> Vec<Hunt> {
    assert!(jobs > 0, "at least one worker");
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Hunt>>> = Mutex::new(vec![None; canaries.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(canaries.len()) {
            scope.spawn(|| loop {
                let position = next.fetch_add(1, Ordering::Relaxed);
                let Some(&canary) = canaries.get(position) else { break };
                let result = hunt(canary, base, 0, budget);
                done(&result);
                results.lock().unwrap_or_else(|e| e.into_inner())[position] = Some(result);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.into_iter().map(|hunt| hunt.expect("every position was hunted")).collect()
}

/// The median of the hunts' seconds, a survivor counting as its whole
/// hunt; 0 for no hunt.
pub fn median_seconds(hunts: &[Hunt]) -> f64 {
    let mut seconds: Vec<f64> = hunts.iter().map(|h| h.seconds).collect();
    seconds.sort_by(f64::total_cmp);
    match seconds.len() {
        0 => 0.0,
        n if n % 2 == 1 => seconds[n / 2],
        n => (seconds[n / 2 - 1] + seconds[n / 2]) / 2.0,
    }
}

/// The table for a person: one row per canary, a verdict line, and the
/// repro command of each catch.
pub fn table(hunts: &[Hunt], budget: Duration) -> String {
    let name_width = hunts.iter().map(|h| h.canary.name().len()).max().unwrap_or(6).max(6);
    let mut out = format!(
        "{:<name_width$}  caught  {:>6}  {:>7}  {:<10}  what the engine does wrong\n",
        "canary", "seeds", "seconds", "check"
    );
    for hunt in hunts {
        let (caught, check) = match &hunt.catch {
            Some(catch) if catch.counts() => ("yes", catch.check.as_str()),
            // The seed fails without the canary too: see the repro below.
            Some(catch) => ("ENGINE", catch.check.as_str()),
            None => ("NO", "-"),
        };
        out.push_str(&format!(
            "{:<name_width$}  {caught:<6}  {:>6}  {:>7.2}  {check:<10}  {}\n",
            hunt.canary.name(),
            hunt.seeds,
            hunt.seconds,
            hunt.canary.description()
        ));
    }
    let caught = hunts.iter().filter(|h| h.caught()).count();
    let slowest = hunts.iter().map(|h| h.seconds).fold(0.0, f64::max);
    out.push_str(&format!(
        "{} canaries: {caught} caught, {} survived; median {:.2} s, slowest {slowest:.2} s (budget {} s each)\n",
        hunts.len(),
        hunts.len() - caught,
        median_seconds(hunts),
        budget.as_secs_f64()
    ));
    for hunt in hunts {
        if let Some(catch) = &hunt.catch {
            let unclean = if catch.counts() { "" } else { " [FAILS WITHOUT THE CANARY TOO: an engine or harness bug]" };
            out.push_str(&format!("  {}: {}{unclean}\n      {}\n", hunt.canary.name(), catch.headline, catch.repro));
        }
    }
    out
}

/// The same as one JSON object.
pub fn to_json(hunts: &[Hunt], budget: Duration) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = hunts
        .iter()
        .map(|hunt| {
            serde_json::json!({
                "name": hunt.canary.name(),
                "description": hunt.canary.description(),
                "caught": hunt.caught(),
                "passes_without_canary": hunt.catch.as_ref().map(|c| c.passes_without),
                "seeds": hunt.seeds,
                "seconds": hunt.seconds,
                "seed": hunt.catch.as_ref().map(|c| c.seed),
                "check": hunt.catch.as_ref().map(|c| c.check.as_str()),
                "headline": hunt.catch.as_ref().map(|c| c.headline.clone()),
                "repro": hunt.catch.as_ref().map(|c| c.repro.clone()),
            })
        })
        .collect();
    let caught = hunts.iter().filter(|h| h.caught()).count();
    serde_json::json!({
        "budget_sec": budget.as_secs_f64(),
        "canaries": rows,
        "caught": caught,
        "survived": hunts.len() - caught,
        "median_sec": median_seconds(hunts),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_counts_every_hunt() {
        assert_eq!(median_seconds(&[]), 0.0);
        #[cfg(feature = "canaries")]
        {
            let at = |seconds: f64| Hunt { canary: Canary::ALL[0], seeds: 1, seconds, catch: None };
            assert_eq!(median_seconds(&[at(3.0), at(1.0), at(2.0)]), 2.0);
            assert_eq!(median_seconds(&[at(4.0), at(1.0), at(2.0), at(60.0)]), 3.0);
        }
    }
}
