//! fjall on the kit, in the test profile: a few seeds run clean, and a
//! seed's second run in this process gives the same trace hash (FJALL.md
//! finding 5: tempfile's names, once seeded by std's thread ids, a
//! process-wide counter, are seeded from the run by the layer now), and
//! with the layer's `fastrand-unseeded` plant it does not: the check that
//! compares them can fail. `make stdfs` replays `corpus/fjall/`. The
//! sweeps' figures are FJALL.md's.

use stdfs_layer::kit::{run_seed, Kit, KitSettings};

use super::FjallAdapter;

fn kit() -> Kit<FjallAdapter> {
    Kit::new(FjallAdapter, KitSettings::default())
}

#[test]
fn seeds_run_clean_and_a_second_run_agrees() {
    assert!(stdfs_layer::real_root_is_absent(), "{} exists on the real disk", stdfs_layer::ROOT);
    let kit = kit();
    for seed in 0..4 {
        let first = run_seed(&kit, seed, false);
        assert!(first.failure.is_none(), "fjall seed {seed}: {:?}", first.failure);
        assert!(first.counters.ops > 0, "fjall seed {seed} ran no operation");
        let again = run_seed(&kit, seed, false);
        assert!(again.failure.is_none(), "fjall seed {seed}, again: {:?}", again.failure);
        assert_eq!(first.counters, again.counters, "fjall seed {seed}: two runs counted otherwise");
        assert_eq!(first.trace_hash, again.trace_hash, "fjall seed {seed}: two runs in one process differ");
    }
    let orphans = stdfs_layer::orphan_refusals();
    assert!(orphans.is_empty(), "refused outside any one run: {orphans:?}");
}

/// Without the layer seeding `fastrand` per thread, a seed's second run
/// in the process names its temp files otherwise (std's thread ids moved
/// on): the trace hashes differ, which `--check-determinism` reports.
#[test]
fn unseeded_temp_names_make_two_runs_differ() {
    let kit = Kit::new(FjallAdapter, KitSettings { plant: Some("fastrand-unseeded"), ..KitSettings::default() });
    let (first, again) = (run_seed(&kit, 1, false), run_seed(&kit, 1, false));
    assert!(first.failure.is_none() && again.failure.is_none(), "{:?} {:?}", first.failure, again.failure);
    assert_ne!(first.trace_hash, again.trace_hash, "the plant changed nothing: the check could not fail");
}
