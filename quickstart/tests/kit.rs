//! The quickstart's tests: seeds that run clean and replay bit for bit,
//! and every saved operation list under `corpus/` replayed, subfolders
//! too (`--shrink --save` writes under `corpus/<target>/`): a failure once
//! found must now pass; a repro of a planted bug (`plant` in its header)
//! must still fail, so the harness still catches it.

use simkit::{assert_saved_ops_hold, assert_seeds_pass_and_replay, Kit, KitSettings};

use quickstart::QuickstartAdapter;

fn kit() -> Kit<QuickstartAdapter> {
    Kit::new(QuickstartAdapter, KitSettings::default())
}

#[test]
fn seeds_run_clean_and_replay() {
    assert_seeds_pass_and_replay(&kit(), 0..20);
}

#[test]
fn every_saved_operation_list_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    assert!(assert_saved_ops_hold(kit, &dir).total() > 0, "no .ops file under {}", dir.display());
}
