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

/// Replay every `.ops` file directly in `dir` under a target `make`
/// builds (each file's header sets its settings), and panic naming the
/// first that does not parse or fails: the regression test of a saved
/// corpus (`--shrink --save` writes under `corpus/<target>/`). Returns how
/// many files passed; a directory that does not exist holds none.
pub fn assert_saved_ops_pass<T: Target>(make: impl Fn() -> T, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut paths: Vec<_> = entries.map(|entry| entry.expect("a directory entry").path()).collect();
    paths.retain(|path| path.extension().is_some_and(|e| e == "ops"));
    // Sorted: the first failure named is the same on every machine.
    paths.sort();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (ops, failure) = replay_as(make(), &text, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(ops > 0, "{}: no operation to replay", path.display());
        assert!(failure.is_none(), "{}: {failure:?}", path.display());
    }
    paths.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems::segsim::SegsimTarget;

    #[test]
    fn the_saved_segsim_regressions_pass_and_a_missing_corpus_holds_none() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions");
        assert!(assert_saved_ops_pass(SegsimTarget::default, &dir) >= 2);
        assert_eq!(assert_saved_ops_pass(SegsimTarget::default, Path::new("/nonexistent/corpus")), 0);
    }

    #[test]
    #[should_panic(expected = "garbled.ops")]
    fn a_file_that_does_not_parse_fails_naming_it() {
        let dir = std::env::temp_dir().join(format!("sim-saved-ops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("garbled.ops"), "seed 1\n0 NOT-AN-OP\n").unwrap();
        assert_saved_ops_pass(SegsimTarget::default, &dir);
    }
}
