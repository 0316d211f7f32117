//! The quickstart's tests: seeds that run clean and replay bit for bit,
//! and every saved operation list under `corpus/` replayed (a failure once
//! found, kept with `--shrink --save`, must now pass).

use sim::cli::replay::replay_as;
use sim::kit::{Kit, KitSettings};
use sim::seam::assert_seeds_pass_and_replay;

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
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus/") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "ops") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("an .ops file");
        let (ops, failure) = replay_as(kit(), &text, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(ops > 0 && failure.is_none(), "{}: {failure:?}", path.display());
        replayed += 1;
    }
    assert!(replayed > 0, "no .ops file under {}", dir.display());
}
