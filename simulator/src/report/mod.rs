//! `--report FILE.html`: one run drawn as a picture, for a person to
//! open in a browser — the operations in time, one lane per file (followed
//! through renames) and per directory with every write, truncate, fsync,
//! rename and unlink, the faults and power losses; at the crash, what the
//! disk kept of each file's unsynced changes; the recovery; the checker's
//! verdict with the diff and the repro.
//!
//! The picture is drawn from what the run already records: the trace's
//! events and, for a trace that keeps every event, its side record
//! (`crate::trace::Detail`), which is never hashed — so asking for a
//! report changes no trace hash (`tests/report.rs` checks it).
//!
//! - `story.rs`: the events laid out in slots, lanes and marks;
//! - `svg.rs`: the timeline drawn;
//! - `page.rs` (with `page.css`, `page.js`): the page around it;
//! - `explore.rs`: the page of one explored crash state;
//! - `escape.rs`: every text put into the page is escaped there.

mod escape;
mod explore;
mod page;
mod story;
mod svg;

use std::collections::BTreeMap;
use std::path::Path;

pub use escape::esc;
pub use explore::write_explored;
pub use story::Story;

use crate::failure::Failure;
use crate::outcome::SeedOutcome;
use crate::trace::CrashPicture;

/// The slots in view by default, `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The first slot shown.
    pub start: u64,
    /// One past the last slot shown.
    pub end: u64,
}

/// How many operations before the failing one the default view shows.
const OPS_BEFORE_FAILURE: u64 = 12;
/// Runs with at most this many slots are shown whole.
const WHOLE_UP_TO_SLOTS: u64 = 240;

/// A failed check, as the report shows it (the text report's words).
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The seed that failed.
    pub seed: u64,
    /// The failed check's name (`Check::as_str`).
    pub check: String,
    /// The index of the operation during which it failed.
    pub op_index: u64,
    /// The failing operation's line, if known.
    pub op_line: Option<String>,
    /// What exactly failed, for a person (diffs included).
    pub detail: String,
    /// The last trace events before the failure, oldest first.
    pub recent: Vec<String>,
    /// The command line that reproduces the failure.
    pub repro: String,
}

impl Verdict {
    /// From a run's failure, `label` giving an operation's line.
    pub fn of(failure: &Failure, label: &dyn Fn(u64) -> Option<String>) -> Verdict {
        Verdict {
            seed: failure.seed,
            check: failure.check.as_str().to_string(),
            op_index: failure.op_index,
            op_line: label(failure.op_index),
            detail: failure.detail.clone(),
            recent: failure.recent.clone(),
            repro: failure.repro.clone(),
        }
    }
}

/// Everything one page shows.
#[derive(Clone, Debug)]
pub struct Report {
    /// The page's heading (and its HTML title).
    pub title: String,
    /// `key: value` lines under the title (target, seed, counts, hash).
    pub facts: Vec<(String, String)>,
    /// The run laid out on its time axis: the picture's lanes and marks.
    pub story: Story,
    /// The failed check, if the run failed.
    pub failure: Option<Verdict>,
    /// Recovery lines besides the story's notes (an explored recovery's).
    pub recovery: Vec<String>,
}

impl Report {
    /// The report of one random-mode run that kept its whole trace.
    /// `label` gives an operation's line by its index.
    pub fn of_run(target: &str, outcome: &SeedOutcome, label: &dyn Fn(u64) -> Option<String>) -> Report {
        let trace = outcome.trace.as_ref().expect("a report's run keeps its trace");
        let story = Story::from_trace(trace, label);
        let faults: Vec<String> = outcome.counters.faults.iter().map(|(k, n)| format!("{}={n}", k.name())).collect();
        let facts = vec![
            ("target".to_string(), target.to_string()),
            ("seed".to_string(), outcome.seed.to_string()),
            ("operations".to_string(), outcome.counters.ops.to_string()),
            ("power losses".to_string(), outcome.counters.crashes.to_string()),
            (
                "restarts".to_string(),
                format!(
                    "{} ({} after power losses, {} process kills, {} clean restarts, {} reopens after an error)",
                    outcome.counters.restarts,
                    outcome.counters.crashes,
                    outcome.counters.kills,
                    outcome.counters.clean_restarts,
                    outcome.counters.error_reopens
                ),
            ),
            ("faults injected".to_string(), if faults.is_empty() { "none".to_string() } else { faults.join(" ") }),
            ("trace hash".to_string(), format!("{:016x}", outcome.trace_hash)),
        ];
        Report {
            title: format!("{target} seed {}", outcome.seed),
            facts,
            story,
            failure: outcome.failure.as_ref().map(|f| Verdict::of(f, label)),
            recovery: Vec::new(),
        }
    }

    /// The power loss the page explains: the last one at or before the
    /// failing operation's end (else the run's last).
    pub fn crash_in_focus(&self) -> Option<(u64, &CrashPicture)> {
        let limit = self.failure_end().unwrap_or(u64::MAX);
        let crashes = &self.story.crashes;
        let pick = crashes.iter().rev().find(|(slot, _)| *slot < limit).or(crashes.last());
        pick.map(|(slot, picture)| (*slot, picture))
    }

    /// One past the failing operation's last slot.
    fn failure_end(&self) -> Option<u64> {
        let failure = self.failure.as_ref()?;
        let op = self.story.ops.iter().find(|op| op.index == failure.op_index)?;
        Some(op.end)
    }

    /// The default view: a short run whole; else from a few operations
    /// before the failure (or the crash in focus, if earlier and near) to
    /// the failing operation's end — the run's end without a failure.
    pub fn window(&self) -> Window {
        let all = Window { start: 0, end: self.story.slots };
        if self.story.slots <= WHOLE_UP_TO_SLOTS {
            return all;
        }
        let end = self.failure_end().unwrap_or(self.story.slots).max(1);
        let failing = self.story.op_at(end - 1).map_or(0, |op| op.index);
        let first = failing.saturating_sub(OPS_BEFORE_FAILURE);
        let mut start = self.story.ops.iter().find(|op| op.index >= first).map_or(0, |op| op.start);
        if let Some((slot, _)) = self.crash_in_focus() {
            if slot < start && start - slot < 4 * WHOLE_UP_TO_SLOTS {
                start = slot;
            }
        }
        let start = start.min(end.saturating_sub(WHOLE_UP_TO_SLOTS / 2));
        Window { start, end: (end + 2).min(self.story.slots) }
    }

    /// The page (see the module doc).
    pub fn to_html(&self) -> String {
        page::render(self, self.window())
    }

    /// Write the page to `path`.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_html())
    }
}

/// Run `ops` of `seed` on `target`; with `report`, keep the whole trace
/// and write the run's page there (the hash is the same either way).
pub fn run_with_report<T: crate::seam::Target>(
    target: &T,
    seed: u64,
    ops: &[T::Op],
    report: Option<&Path>,
) -> Result<SeedOutcome, String> {
    let outcome = target.run(seed, ops, report.is_some());
    if let Some(path) = report {
        let labels = labels_by_index(ops);
        let label = |index: u64| labels.get(&index).cloned();
        Report::of_run(target.name(), &outcome, &label)
            .write(path)
            .map_err(|e| format!("cannot write the report {}: {e}", path.display()))?;
        eprintln!("report written to {} (open it in a browser)", path.display());
    }
    Ok(outcome)
}

/// Each operation's printed line by the index it starts with (the head
/// every target's op line begins with, `op_line.rs`): a shrunk or saved
/// list numbers its operations sparsely, so the trace's op index is no
/// position in `ops`.
fn labels_by_index(ops: &[impl std::fmt::Display]) -> BTreeMap<u64, String> {
    let mut labels = BTreeMap::new();
    for op in ops {
        let line = op.to_string();
        if let Some(index) = line.split_whitespace().next().and_then(|word| word.parse::<u64>().ok()) {
            labels.insert(index, line);
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::story::OpSpan;
    use super::*;

    /// Shrinking keeps operations' own numbers: op 45 of a shrunk list is
    /// labelled with op 45's line, not with the list's 46th entry (there
    /// is none) or its second.
    #[test]
    fn a_sparse_list_is_labelled_by_each_operation_s_own_number() {
        let ops = ["44 PUT t1 k5 v", "45 COMMIT none", "49 @ios=3 COMPACT"];
        let labels = labels_by_index(&ops);
        assert_eq!(labels.get(&45).map(String::as_str), Some("45 COMMIT none"));
        assert_eq!(labels.get(&49).map(String::as_str), Some("49 @ios=3 COMPACT"));
        assert_eq!(labels.get(&1), None, "no op numbered 1: the trace's tag is shown instead");
    }

    #[test]
    fn every_text_put_in_the_page_is_escaped() {
        let evil = "<script>alert('x')</script>\"&";
        let mut story = Story { slots: 2, ..Story::default() };
        story.ops.push(OpSpan { index: 0, label: evil.to_string(), start: 0, end: 2, reply: Some(evil.to_string()) });
        story.notes.push((1, evil.to_string()));
        let verdict = Verdict {
            seed: 1,
            check: evil.to_string(),
            op_index: 0,
            op_line: Some(evil.to_string()),
            detail: format!("key {evil}: expected {evil}, got (absent)"),
            recent: vec![evil.to_string()],
            repro: evil.to_string(),
        };
        let report = Report {
            title: evil.to_string(),
            facts: vec![(evil.to_string(), evil.to_string())],
            story,
            failure: Some(verdict),
            recovery: vec![evil.to_string()],
        };
        let html = report.to_html();
        assert!(!html.contains("<script>alert"), "raw markup from data");
        assert!(!html.contains("'x'"), "a raw quote from data");
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;"));
        assert_eq!(html.matches("<script>").count(), 2, "exactly the error trap and the page's script");
    }
}
