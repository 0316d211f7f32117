//! fjall on the kit, in the test profile: a few seeds run clean and replay
//! bit for bit (the same trace hash: the scheduler's interleaving is the
//! seed's), and every `.ops` file under `corpus/fjall/` replays as
//! FJALL.md says. The sweeps' figures are FJALL.md's.

use stdfs_layer::kit::{assert_seeds_pass_and_replay, Kit, KitSettings};

use super::FjallAdapter;

fn kit() -> Kit<FjallAdapter> {
    Kit::new(FjallAdapter, KitSettings::default())
}

#[test]
fn seeds_run_clean_and_replay() {
    assert!(stdfs_layer::real_root_is_absent(), "{} exists on the real disk", stdfs_layer::ROOT);
    assert_seeds_pass_and_replay(&kit(), 0..4);
    let orphans = stdfs_layer::orphan_refusals();
    assert!(orphans.is_empty(), "refused outside any one run: {orphans:?}");
}
