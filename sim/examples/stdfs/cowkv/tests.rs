//! The layer's planted mistakes ([`stdfs_layer::LayerPlant`]) are caught
//! under `cowkv`, which passes clean without them: by the random mode and
//! by exploration, each at a crash state and not only by the explore
//! recording's own checks. Few seeds and short workloads, so the tests
//! stay fast in the test profile; STDFS.md has the sweeps' figures.

use sim::explore::{explore, ExploreOptions, ExploreReport};
use sim::failure::{Check, Failure};
use sim::seam::run_seed;
use simkit::{Kit, KitSettings};

use super::CowKvAdapter;

fn cowkv(plant: Option<&'static str>) -> Kit<CowKvAdapter> {
    Kit::new(CowKvAdapter, KitSettings { plant, ..KitSettings::default() })
}

/// The first of seeds `0..seeds` that fails, and how.
fn first_caught(kit: &Kit<CowKvAdapter>, seeds: u64) -> Option<(u64, Failure)> {
    (0..seeds).find_map(|seed| run_seed(kit, seed, false).failure.map(|failure| (seed, failure)))
}

fn explored(kit: &Kit<CowKvAdapter>, seed: u64, ops: u64) -> ExploreReport {
    explore(kit, seed, ops, &ExploreOptions::default()).expect("explored")
}

/// The checks of the failures `report` found at its crash states (the
/// recording's own failure, if any, left out).
fn crash_state_checks(report: &ExploreReport) -> Vec<Check> {
    report.failures.iter().filter(|f| f.io_index.is_some()).map(|f| f.check).collect()
}

#[test]
fn cowkv_passes_clean_without_a_plant() {
    let kit = cowkv(None);
    let caught = first_caught(&kit, 40).map(|(seed, failure)| (seed, failure.detail));
    assert_eq!(caught, None, "cowkv must pass clean, or a plant's failure proves nothing");
    let report = explored(&kit, 1, 100);
    assert!(report.counts.states > 100, "explored {} crash states", report.counts.states);
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
}

#[test]
fn an_fsync_that_skips_temp_files_is_caught_by_the_random_mode_and_explore() {
    let kit = cowkv(Some("tmp-fsync-noop"));
    let (seed, failure) = first_caught(&kit, 10).expect("10 seeds never noticed the temp file's fsync does nothing");
    // The renamed snapshot's bytes were never synced: after a power loss
    // `data` names an empty or partial file, which the engine refuses.
    assert_eq!(failure.check, Check::Open, "seed {seed}: {}", failure.detail);
    assert!(failure.repro.contains("--plant tmp-fsync-noop"), "{}", failure.repro);
    // Three operations: one commit, and every crash state of it explored.
    let report = explored(&kit, 1, 3);
    assert!(crash_state_checks(&report).contains(&Check::Open), "{}", report.to_text());
}

#[test]
fn a_directory_fsync_that_misses_the_rename_is_caught_by_the_random_mode_and_explore() {
    let kit = cowkv(Some("dir-fsync-parent"));
    let (seed, failure) = first_caught(&kit, 10).expect("10 seeds never noticed the rename is never durable");
    // The disk's hazard check: a commit acknowledged while the snapshot's
    // new name (the rename) is not durable.
    assert_eq!(failure.check, Check::Hazard, "seed {seed}: {}", failure.detail);
    assert!(failure.detail.contains("/db/data (earlier /db/data.tmp)"), "{}", failure.detail);
    // Two operations (a commit, a restart): no hazard is checked before
    // the crash states, where the probe's power loss loses the commit.
    let report = explored(&kit, 1, 2);
    assert!(report.failures.iter().all(|f| f.io_index.is_some()), "{}", report.to_text());
    let lost =
        report.failures.iter().any(|f| f.check == Check::Probe && f.detail.contains("a durable commit was lost"));
    assert!(lost, "{}", report.to_text());
}
