//! fjall on the kit, in the test profile: a few seeds run clean, and a
//! seed's second run in this process differs in its temp file names only
//! (FJALL.md finding 5: tempfile's names are seeded by std's thread ids,
//! a process-wide counter), so its verdict and operation count are
//! compared, not its trace hash. `make stdfs` compares trace hashes
//! across processes, and replays `corpus/fjall/`. The sweeps' figures are
//! FJALL.md's.

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
    }
    let orphans = stdfs_layer::orphan_refusals();
    assert!(orphans.is_empty(), "refused outside any one run: {orphans:?}");
}
