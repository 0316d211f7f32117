//! What the recorded workload reached of what the target declares it is
//! there to reach ([`Target::explore_declared`]: the phases its engine
//! marks, its maintenance or admin operations), and how much of the
//! exploration fell there.
//!
//! Exploration crashes one workload, so what that workload never did is
//! never explored: a seed that never compacts explores no crash inside a
//! compaction, and says nothing unless told to. The report lists each
//! declared phase and operation with how often the recording reached it,
//! at how many crash indices and in how many crash states (depth 1) the
//! exploration crashed there, and warns of each one it never reached,
//! saying what to change. A warning is not a failure: the exit status is
//! the verdict's alone.
//!
//! A phase is reached each time the engine marks it; the crash index there
//! is the I/O that follows the mark (where a crash point `@mark=NAME`
//! loses the power). An operation is reached each time it runs; its crash
//! indices are its I/Os' (power lost just before each).
//!
//! [`Target::explore_declared`]: crate::seam::Target::explore_declared

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::seam::{Declared, DeclaredKind, Recording};

/// One declared phase or operation, and what the exploration reached of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reached {
    /// A phase or an operation.
    pub kind: DeclaredKind,
    /// Its name, as the engine marks it or an operation line prints it.
    pub name: String,
    /// Whether the seed's workload can draw it at all ([`Declared`]).
    pub drawable: bool,
    /// Times the recording reached it: marks of the phase, runs of the
    /// operation.
    pub times: u64,
    /// Distinct crash indices there that this exploration explored (fewer
    /// than reached with `--only-io` or a cap).
    pub crash_indices: u64,
    /// Crash states enumerated at those indices (depth 1).
    pub crash_states: u64,
}

/// What the exploration reached of each of `declared`, in its order:
/// `recording`'s marks and operations, with `states_at` the crash states
/// enumerated per crash index.
pub(super) fn reached<C>(
    declared: Vec<Declared>,
    recording: &Recording<C>,
    states_at: &BTreeMap<u64, u64>,
) -> Vec<Reached> {
    declared
        .into_iter()
        .map(|Declared { kind, name, drawable }| {
            let (times, indices) = match kind {
                DeclaredKind::Phase => phase_indices(recording, &name),
                DeclaredKind::Operation => operation_indices(recording, &name),
            };
            let explored: Vec<u64> = indices.iter().filter_map(|io| states_at.get(io).copied()).collect();
            let (crash_indices, crash_states) = (explored.len() as u64, explored.iter().sum());
            Reached { kind, name, drawable, times, crash_indices, crash_states }
        })
        .collect()
}

/// How often the engine marked phase `name` while recording, and the
/// crash indices at those marks.
fn phase_indices<C>(recording: &Recording<C>, name: &str) -> (u64, BTreeSet<u64>) {
    let marks: Vec<u64> = recording.disk.marks.iter().filter(|m| m.name == name).map(|m| m.io_index).collect();
    (marks.len() as u64, marks.into_iter().collect())
}

/// How often operation `name` ran while recording, and the crash indices
/// inside its runs.
fn operation_indices<C>(recording: &Recording<C>, name: &str) -> (u64, BTreeSet<u64>) {
    let runs: Vec<_> = recording.operations.iter().filter(|op| op.name == name).collect();
    let indices = runs.iter().flat_map(|op| op.io_indices.clone()).collect();
    (runs.len() as u64, indices)
}

/// `n` and the noun for it: `1 time`, `3 times`.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Reached {
    /// `kind name`, as the report says it.
    fn label(&self) -> String {
        format!("{} {}", self.kind.name(), self.name)
    }

    /// The report's line for it.
    pub(super) fn text(&self) -> String {
        let (did, never, at) = match self.kind {
            DeclaredKind::Phase => ("marked", "never marked", "at it"),
            DeclaredKind::Operation => ("ran", "never ran", "inside it"),
        };
        if self.times == 0 {
            return format!("    {}: {never}\n", self.label());
        }
        format!(
            "    {}: {did} {}; {} {at} explored, {}\n",
            self.label(),
            counted(self.times, "time", "times"),
            counted(self.crash_indices, "crash index", "crash indices"),
            counted(self.crash_states, "crash state", "crash states"),
        )
    }

    /// The warning for one never reached, or reached with no I/O to
    /// crash at, in a workload of `ops` operations; `None` if the
    /// exploration crashed there. `whole`: every crash index of the
    /// recording was explored (no `--only-io`, no cap), so an operation
    /// reached with no crash index explored did no I/O.
    pub fn warning(&self, ops: u64, whole: bool) -> Option<String> {
        let label = self.label();
        let (never, at) = match self.kind {
            DeclaredKind::Phase => ("was never marked", "at it"),
            DeclaredKind::Operation => ("never ran", "inside it"),
        };
        if self.times == 0 && !self.drawable {
            return Some(format!(
                "WARNING: {label} {never}: this seed's workload does not draw it (its swarm switched it off), so no \
                 crash {at} was explored; try another seed"
            ));
        }
        if self.times == 0 {
            return Some(format!(
                "WARNING: {label} {never} in {ops} ops, so no crash {at} was explored; try more --ops or another seed"
            ));
        }
        if whole && self.crash_indices == 0 && self.kind == DeclaredKind::Operation {
            return Some(format!(
                "WARNING: {label} ran {} but did no I/O, so no crash {at} was explored; try more --ops (more to \
                 do before it) or another seed",
                counted(self.times, "time", "times")
            ));
        }
        None
    }

    /// One entry of the machine report's `reached` array.
    pub(super) fn to_json(&self) -> Value {
        json!({
            "kind": self.kind.name(),
            "name": self.name,
            "drawable": self.drawable,
            "times": self.times,
            "crash_indices": self.crash_indices,
            "crash_states": self.crash_states,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{DiskRecording, RecordedMark};
    use crate::seam::RecordedOperation;

    /// A recording of nothing but `marks` and `operations`.
    fn recording(marks: Vec<RecordedMark>, operations: Vec<RecordedOperation>) -> Recording<()> {
        let disk = DiskRecording { first_io_index: 0, snapshots: Vec::new(), marks };
        Recording {
            disk,
            contexts: Vec::new(),
            failure: None,
            faultable_ios: Vec::new(),
            faultable_writes: Vec::new(),
            trace: None,
            operations,
        }
    }

    fn declared(kind: DeclaredKind, name: &str, drawable: bool) -> Declared {
        Declared { kind, name: name.to_string(), drawable }
    }

    /// Phases count their marks and the states at the index after each;
    /// operations their runs and the states at their I/Os; an index
    /// explored twice counts once.
    #[test]
    fn marks_and_runs_count_the_states_explored_there() {
        let synced = |io_index| RecordedMark { io_index, name: "synced" };
        let compact = |io_indices| RecordedOperation { name: "COMPACT".into(), io_indices };
        let recording = recording(vec![synced(3), synced(7), synced(7)], vec![compact(4..6), compact(5..5)]);
        let states_at: BTreeMap<u64, u64> = [(3, 2), (4, 1), (5, 10), (7, 5)].into();
        let declared = vec![
            declared(DeclaredKind::Phase, "synced", true),
            declared(DeclaredKind::Phase, "appended", true),
            declared(DeclaredKind::Operation, "COMPACT", true),
        ];
        let reached = reached(declared, &recording, &states_at);
        let figures: Vec<(u64, u64, u64)> =
            reached.iter().map(|r| (r.times, r.crash_indices, r.crash_states)).collect();
        assert_eq!(figures, [(3, 2, 7), (0, 0, 0), (2, 2, 11)]);
        assert_eq!(
            reached[0].text(),
            "    phase synced: marked 3 times; 2 crash indices at it explored, 7 crash states\n"
        );
        assert_eq!(reached[1].text(), "    phase appended: never marked\n");
        assert_eq!(reached[0].warning(10, true), None);
        let warning = reached[1].warning(10, true).expect("never marked");
        assert!(warning.contains("phase appended was never marked in 10 ops") && warning.contains("more --ops"));
    }

    /// An operation the swarm switched off asks for another seed; one
    /// that ran without I/O warns only where every index was explored.
    #[test]
    fn the_warning_says_what_to_change() {
        let off = Reached {
            kind: DeclaredKind::Operation,
            name: "COMPACT".into(),
            drawable: false,
            times: 0,
            crash_indices: 0,
            crash_states: 0,
        };
        let warning = off.warning(100, true).expect("never ran");
        assert!(warning.contains("swarm switched it off") && warning.ends_with("try another seed"), "{warning}");
        let idle = Reached { drawable: true, times: 2, ..off };
        assert!(idle.warning(100, true).expect("no I/O").contains("ran 2 times but did no I/O"));
        assert_eq!(idle.warning(100, false), None, "--only-io or a cap left its indices out");
    }
}
