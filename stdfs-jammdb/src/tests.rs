//! jammdb on the kit, in the test profile: a few seeds run clean and a
//! seed's second run in this process gives the same trace. The sweeps'
//! figures are JAMMDB.md's; `make stdfs` replays `corpus/jammdb/`.

use stdfs_layer::kit::{run_seed, Kit, KitSettings};

use super::JammdbAdapter;

#[test]
fn seeds_run_clean_and_a_second_run_agrees() {
    assert!(stdfs_layer::real_root_is_absent(), "{} exists on the real disk", stdfs_layer::ROOT);
    let kit = Kit::new(JammdbAdapter, KitSettings::default());
    for seed in 0..4 {
        let first = run_seed(&kit, seed, false);
        assert!(first.failure.is_none(), "jammdb seed {seed}: {:?}", first.failure);
        assert!(first.counters.ops > 0, "jammdb seed {seed} ran no operation");
        let again = run_seed(&kit, seed, false);
        assert_eq!(first.trace_hash, again.trace_hash, "jammdb seed {seed}: two runs traced otherwise");
    }
    let orphans = stdfs_layer::orphan_refusals();
    assert!(orphans.is_empty(), "refused outside any one run: {orphans:?}");
}
