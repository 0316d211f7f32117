//! The std::fs quickstart's tests: seeds that run clean and replay bit for
//! bit, and every saved operation list under `corpus/` replayed, subfolders
//! too (`--shrink --save` writes under `corpus/<target>/`): a failure once
//! found must now pass. The layer serves this test binary because it names
//! the crate (the adapter's `Worker`); its root must not exist on the real
//! disk, or a call the layer cannot see would reach it.

use stdfs_layer::kit::{assert_saved_ops_hold, assert_seeds_pass_and_replay, Kit, KitSettings};

use quickstart_stdfs::SegStoreAdapter;

fn kit() -> Kit<SegStoreAdapter> {
    Kit::new(SegStoreAdapter, KitSettings::default())
}

#[test]
fn seeds_run_clean_and_replay() {
    assert!(stdfs_layer::real_root_is_absent(), "{} exists on the real disk", stdfs_layer::ROOT);
    assert_seeds_pass_and_replay(&kit(), 0..20);
    // A call the layer refused that no one run could answer for (a thread
    // serving no run) fails the sweep, as `stdfs_layer::main` does.
    let orphans = stdfs_layer::orphan_refusals();
    assert!(orphans.is_empty(), "refused outside any one run: {orphans:?}");
}

#[test]
fn every_saved_operation_list_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    assert!(assert_saved_ops_hold(kit, &dir).total() > 0, "no .ops file under {}", dir.display());
}
