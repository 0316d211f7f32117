//! The layer's scheduler proved on `tlog` (issue 48): the honest engine
//! passes, a seed's threads interleave alike in every run (the same
//! trace hash), and each planted thread bug is caught by the random mode
//! and by exploration. Few seeds and short workloads, so the tests stay
//! fast in the test profile; STDFS.md ("Threads") has the sweeps'
//! figures.

use sim::explore::{explore, ExploreOptions, ExploreReport};
use sim::failure::{Check, Failure};
use sim::seam::run_seed;
use simkit::{Kit, KitSettings};

use super::TlogAdapter;

fn tlog(plant: Option<&'static str>) -> Kit<TlogAdapter> {
    Kit::new(TlogAdapter, KitSettings { plant, ..KitSettings::default() })
}

/// The first of seeds `0..seeds` that fails, and how.
fn first_caught(kit: &Kit<TlogAdapter>, seeds: u64) -> Option<(u64, Failure)> {
    (0..seeds).find_map(|seed| run_seed(kit, seed, false).failure.map(|failure| (seed, failure)))
}

fn explored(kit: &Kit<TlogAdapter>, seed: u64, ops: u64) -> ExploreReport {
    explore(kit, seed, ops, &ExploreOptions::default()).expect("explored")
}

#[test]
fn tlog_passes_clean_and_each_seed_interleaves_alike() {
    let kit = tlog(None);
    let caught = first_caught(&kit, 40).map(|(seed, failure)| (seed, failure.detail));
    assert_eq!(caught, None, "tlog must pass clean, or a plant's failure proves nothing");
    for seed in 0..10 {
        let (first, again) = (run_seed(&kit, seed, false), run_seed(&kit, seed, false));
        assert_eq!(first.trace_hash, again.trace_hash, "seed {seed}: two runs, two interleavings");
    }
    let report = explored(&kit, 1, 100);
    assert!(report.counts.states > 100, "explored {} crash states", report.counts.states);
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
}

#[test]
fn an_acknowledgement_before_the_flushers_fsync_is_caught() {
    let kit = tlog(Some("ack-before-fsync"));
    let (seed, failure) = first_caught(&kit, 10).expect("10 seeds never noticed the early acknowledgement");
    assert_eq!(failure.check, Check::Durability, "seed {seed}: {}", failure.detail);
    assert!(failure.detail.contains("a durable commit was lost"), "{}", failure.detail);
    assert!(failure.repro.contains("--plant ack-before-fsync"), "{}", failure.repro);
    // Twenty operations: no power loss in the recording; the crash states
    // between the acknowledgement and the flusher's fsync lose the commit.
    let report = explored(&kit, 1, 20);
    let at_states = report.failures.iter().filter(|f| f.io_index.is_some());
    assert!(at_states.clone().count() > 0, "{}", report.to_text());
    assert!(at_states.into_iter().all(|f| f.check == Check::Durability), "{}", report.to_text());
}

#[test]
fn a_compaction_that_renames_while_the_flusher_appends_is_caught() {
    let kit = tlog(Some("compact-rename-race"));
    let (seed, failure) = first_caught(&kit, 20).expect("20 seeds never lost the appends of a racing compaction");
    assert_eq!(failure.check, Check::Durability, "seed {seed}: {}", failure.detail);
    // Seed 5's recording itself: a reopen after the race misses a durable
    // commit the flusher appended to the replaced file.
    let report = explored(&kit, 5, 100);
    let recording = report.failures.iter().find(|f| f.io_index.is_none()).expect("the recording fails");
    assert_eq!(recording.check, Check::Durability, "{}", report.to_text());
}

#[test]
fn a_sync_flag_raised_outside_the_lock_is_caught_as_a_deadlock() {
    let kit = tlog(Some("unsynced-flag"));
    let (seed, failure) = first_caught(&kit, 10).expect("10 seeds never lost the flusher's wakeup");
    assert_eq!(failure.check, Check::Panic, "seed {seed}: {}", failure.detail);
    assert!(failure.detail.starts_with("deadlock: every thread of the engine is blocked"), "{}", failure.detail);
    let report = explored(&kit, 1, 100);
    assert!(report.failures.iter().any(|f| f.detail.starts_with("deadlock:")), "{}", report.to_text());
}

/// A sweep of `seeds` under `plant`: the seeds that failed with a panic
/// whose message starts with `words`, and the number of seeds run.
fn failed_with(plant: &'static str, seeds: u64, words: &str) -> (usize, u64) {
    let kit = tlog(Some(plant));
    let caught = (0..seeds)
        .filter(|&seed| {
            let failure = run_seed(&kit, seed, false).failure;
            failure.is_some_and(|f| f.check == Check::Panic && f.detail.starts_with(words))
        })
        .count();
    (caught, seeds)
}

#[test]
fn a_wait_the_scheduler_cannot_model_ends_each_run_loudly_and_the_sweep_goes_on() {
    let (caught, seeds) = failed_with("eventfd-wait", 10, "unknown blocking call: t1 called poll on 1 descriptor(s)");
    assert_eq!(caught as u64, seeds, "every run's flusher polls its eventfd");
    // The spin watch's budget is lowered to 2 s under this plant: three
    // seeds, each ended by it (the spinning flusher stopped, the sweep on).
    let (caught, _) = failed_with("spin-wait", 3, "spinning thread: t1 held the baton");
    assert_eq!(caught, 3);
}
