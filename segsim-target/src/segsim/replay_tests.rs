//! Saved `.ops` files replayed under the segsim target
//! (`simulator::cli::replay`): the corpus passes, a garbled or nested file
//! is named, a finding that must fail and passes is reported.

use std::path::Path;

use crate::segsim::SegsimTarget;
use simulator::cli::replay::{assert_saved_ops_hold, assert_saved_ops_pass, SavedOps, EXPECT_FAIL};

#[test]
fn the_saved_segsim_regressions_pass_and_a_missing_corpus_holds_none() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions");
    assert!(assert_saved_ops_pass(SegsimTarget::default, &dir) >= 2);
    assert_eq!(assert_saved_ops_pass(SegsimTarget::default, Path::new("/nonexistent/corpus")), 0);
}

/// A scratch corpus of `files` (name, text) for one test.
fn corpus(test: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sim-saved-ops-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The shrunk segsim failure of the first long soak, replayed: it
/// passes on this build, so as a finding that "must fail" it is
/// reported.
fn fixed_regression() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions/seed-1007537-seq-reuse.ops");
    std::fs::read_to_string(path).unwrap()
}

#[test]
#[should_panic(expected = "garbled.ops")]
fn a_file_that_does_not_parse_fails_naming_it() {
    let dir = corpus("garbled", &[("garbled.ops", "seed 1\n0 NOT-AN-OP\n")]);
    assert_saved_ops_pass(SegsimTarget::default, &dir);
}

/// `--shrink --save` writes under `corpus/<target>/`: a file there is
/// replayed like one at the top.
#[test]
#[should_panic(expected = "deep.ops")]
fn a_file_in_a_subfolder_is_replayed_too() {
    let dir = corpus("subfolder", &[("target/deep.ops", "seed 1\n0 NOT-AN-OP\n")]);
    assert_saved_ops_pass(SegsimTarget::default, &dir);
}

#[test]
#[should_panic(expected = "no longer catches it")]
fn a_finding_that_must_fail_and_passes_is_reported() {
    let text = format!("{EXPECT_FAIL}\n{}", fixed_regression());
    let dir = corpus("expect-fail", &[("finding.ops", &text)]);
    assert_saved_ops_hold(SegsimTarget::default, &dir);
}

#[test]
fn files_that_pass_are_counted() {
    let dir = corpus("count", &[("a.ops", &fixed_regression()), ("sub/b.ops", &fixed_regression())]);
    assert_eq!(assert_saved_ops_hold(SegsimTarget::default, &dir), SavedOps { passed: 2, failed_as_expected: 0 });
}
