//! Replaying an `.ops` file (`--replay`, the regression tests): parse it
//! under a target, run it, and draw its page when asked.

use std::path::Path;

use crate::seam::{Replayed, Target};
use crate::shrink::parse_ops_file;

/// Replay an `.ops` file's `text` under `target` (its settings read from
/// the file's header): the number of operations and the failure, if any.
/// With `report`, the run's page is written there (`crate::report`).
pub fn replay_as<T: Target>(target: T, text: &str, report: Option<&Path>) -> Result<Replayed, String> {
    let (target, seed, ops) = parse_ops_file(target, text)?;
    let outcome = crate::report::run_with_report(&target, seed, &ops, report)?;
    Ok((ops.len(), outcome.failure))
}

/// What a saved corpus held, once replayed by [`assert_saved_ops_hold`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SavedOps {
    /// Files that passed, as they must.
    pub passed: usize,
    /// Files that failed, as they must: each plants a bug (a `plant`
    /// setting) or says `# expect: fail` (a documented finding of the
    /// engine itself, kept to show it still reproduces).
    pub failed_as_expected: usize,
}

impl SavedOps {
    /// Every file replayed.
    pub fn total(&self) -> usize {
        self.passed + self.failed_as_expected
    }
}

/// The line that says a saved file must fail: a finding of the engine
/// itself, kept so that a change that hides it shows.
pub const EXPECT_FAIL: &str = "# expect: fail";
/// The line that says a saved file that plants a bug must pass all the
/// same (a plant its workload cannot reach, kept as a control).
pub const EXPECT_PASS: &str = "# expect: pass";

/// Replay every `.ops` file under `dir` — its subfolders too, where
/// `--shrink --save` puts a target's repros (`corpus/<target>/`) — under a
/// target `make` builds (each file's header sets its settings), and panic
/// naming the first that breaks its rule: a file that plants a bug (a
/// `plant` setting) or says `# expect: fail` must still fail (the harness
/// still catches the bug, the finding still reproduces); every other file
/// must pass (a bug once found stays fixed). A directory that does not
/// exist holds none.
pub fn assert_saved_ops_hold<T: Target>(make: impl Fn() -> T, dir: &Path) -> SavedOps {
    let mut held = SavedOps::default();
    for path in ops_files_under(dir) {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (ops, failure) = replay_as(make(), &text, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(ops > 0, "{}: no operation to replay", path.display());
        if must_fail(&text) {
            assert!(
                failure.is_some(),
                "{}: passed, but it plants a bug or says '{EXPECT_FAIL}': the harness no longer catches it (or the \
                 finding was fixed: then take the line out)",
                path.display()
            );
            held.failed_as_expected += 1;
        } else {
            assert!(failure.is_none(), "{}: {failure:?}", path.display());
            held.passed += 1;
        }
    }
    held
}

/// [`assert_saved_ops_hold`], for a corpus of repros that must all pass:
/// how many did. Panics on a file that must fail, too: it has no place in
/// such a corpus.
pub fn assert_saved_ops_pass<T: Target>(make: impl Fn() -> T, dir: &Path) -> usize {
    let held = assert_saved_ops_hold(make, dir);
    assert_eq!(held.failed_as_expected, 0, "{}: files that must fail, in a corpus that must pass", dir.display());
    held.passed
}

/// Whether a saved file must fail: it plants a bug (unless it says it
/// passes all the same), or says it must.
fn must_fail(text: &str) -> bool {
    let says = |directive: &str| text.lines().any(|line| line.trim() == directive);
    let plants = text.lines().any(|line| line.split_whitespace().next() == Some("plant"));
    says(EXPECT_FAIL) || (plants && !says(EXPECT_PASS))
}

/// Every `.ops` file under `dir`, subfolders included, sorted (the first
/// failure named is the same on every machine).
fn ops_files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "ops") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plant_must_fail_unless_it_says_otherwise() {
        assert!(must_fail("target logkv\nseed 0\nplant lazy-fsync\n0 PUT t0 k v\n"));
        assert!(!must_fail(&format!("{EXPECT_PASS}\ntarget logkv\nseed 0\nplant lazy-fsync\n")));
        assert!(must_fail(&format!("{EXPECT_FAIL}\nseed 1\n")));
        assert!(!must_fail("seed 1\n0 SET a 1\n"));
    }
}
