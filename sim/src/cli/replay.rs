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
