//! Shrinking a failing seed to a short operation list (delta debugging,
//! Zeller's ddmin), and the text file such a list is saved in.
//!
//! Each operation keeps its original index, and its faults come from a
//! stream keyed by that index, so a sub-list replays the same faults for
//! the operations it keeps. A candidate counts as failing when it fails
//! the same check as the original.

use crate::config::{Config, Overrides};
use crate::disk::CrashMode;
use std::sync::Arc;

use crate::failure::{Check, Failure};
use crate::run::{run_ops, run_ops_with};
use crate::workload::PlannedOp;
use engine::aof::FsyncPolicy;
use engine::vfs::Vfs;

/// A saved operation list: the seed (its configuration), the overrides,
/// and the operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpList {
    /// The seed whose configuration (faults, crash mode, ...) applies.
    pub seed: u64,
    /// Overrides in force when it was found.
    pub overrides: Overrides,
    /// The operations, in order.
    pub ops: Vec<PlannedOp>,
}

impl OpList {
    /// The file format: `#` comments, `seed N`, optional `fsync X`,
    /// `crash-mode Y` and `point-in-time`, then one operation per line.
    pub fn to_text(&self, comment: &str) -> String {
        let mut out = String::new();
        for line in comment.lines() {
            out.push_str(&format!("# {line}\n"));
        }
        out.push_str(&format!("seed {}\n", self.seed));
        if let Some(fsync) = self.overrides.fsync {
            out.push_str(&format!("fsync {}\n", fsync.name()));
        }
        if let Some(mode) = self.overrides.crash_mode {
            out.push_str(&format!("crash-mode {}\n", mode.name()));
        }
        if self.overrides.point_in_time {
            out.push_str("point-in-time\n");
        }
        for op in &self.ops {
            out.push_str(&format!("{op}\n"));
        }
        out
    }

    /// Parse the file format; errors name the line.
    pub fn parse(text: &str) -> Result<OpList, String> {
        let mut seed = None;
        let mut overrides = Overrides::default();
        let mut ops = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            let at = |e: String| format!("line {}: {e}", number + 1);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(value) = line.strip_prefix("seed ") {
                seed = Some(value.trim().parse().map_err(|_| at(format!("bad seed {value:?}")))?);
            } else if let Some(value) = line.strip_prefix("fsync ") {
                overrides.fsync =
                    Some(FsyncPolicy::parse(value.trim()).ok_or_else(|| at(format!("bad fsync {value:?}")))?);
            } else if line == "point-in-time" {
                overrides.point_in_time = true;
            } else if let Some(value) = line.strip_prefix("crash-mode ") {
                overrides.crash_mode =
                    Some(CrashMode::parse(value.trim()).ok_or_else(|| at(format!("bad crash mode {value:?}")))?);
            } else {
                ops.push(PlannedOp::parse(line).map_err(at)?);
            }
        }
        let seed = seed.ok_or("no `seed N` line")?;
        overrides.ops = Some(ops.len() as u64);
        Ok(OpList { seed, overrides, ops })
    }

    /// Run the list; the failure, if any.
    pub fn run(&self) -> Option<Failure> {
        let config = Config::from_seed(self.seed, self.overrides);
        run_ops(&config, self.overrides, &self.ops, false).failure
    }
}

/// Shrink `ops` to a shorter list that still fails `check`; `runs` counts
/// the candidate runs. Deterministic: same input, same result.
pub fn shrink(config: &Config, overrides: Overrides, ops: Vec<PlannedOp>, check: Check) -> (Vec<PlannedOp>, u64) {
    shrink_with(config, overrides, ops, check, &|disk| disk)
}

/// [`shrink`] with the engine seeing `wrap(disk)` (see
/// [`crate::run::run_ops_with`]).
pub fn shrink_with(
    config: &Config,
    overrides: Overrides,
    ops: Vec<PlannedOp>,
    check: Check,
    wrap: &dyn Fn(Arc<dyn Vfs>) -> Arc<dyn Vfs>,
) -> (Vec<PlannedOp>, u64) {
    let mut runs = 0u64;
    let mut fails = |candidate: &[PlannedOp]| {
        runs += 1;
        run_ops_with(config, overrides, candidate, false, wrap).failure.is_some_and(|f| f.check == check)
    };
    let mut current = ops;
    let mut chunks = 2usize;
    while current.len() >= 2 {
        let chunk_len = current.len().div_ceil(chunks);
        let mut reduced = false;
        let mut start = 0;
        while start < current.len() {
            let end = (start + chunk_len).min(current.len());
            let mut candidate = current[..start].to_vec();
            candidate.extend_from_slice(&current[end..]);
            if !candidate.is_empty() && fails(&candidate) {
                current = candidate;
                reduced = true;
                chunks = (chunks - 1).max(2);
                break;
            }
            start = end;
        }
        if !reduced {
            if chunks >= current.len() {
                break;
            }
            chunks = (chunks * 2).min(current.len());
        }
    }
    (current, runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Op;

    #[test]
    fn op_lists_round_trip_through_text() {
        let list = OpList {
            seed: 7,
            overrides: Overrides {
                ops: Some(2),
                fsync: Some(FsyncPolicy::No),
                crash_mode: Some(CrashMode::Reorder),
                point_in_time: true,
                canary: None,
            },
            ops: vec![
                PlannedOp { index: 0, op: Op::Evict, crash: None },
                PlannedOp { index: 5, op: Op::Advance(12), crash: None },
            ],
        };
        assert_eq!(OpList::parse(&list.to_text("found by a test\nsecond line")).unwrap(), list);
        assert!(OpList::parse("0 EVICT").unwrap_err().contains("seed"));
        assert!(OpList::parse("seed 1\nfrob").unwrap_err().starts_with("line 2"));
    }
}
