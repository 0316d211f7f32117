//! `sim explore … --only-io I --only-state J --report FILE.html`: one
//! explored crash state drawn like a random-mode run. The workload is
//! recorded once more with its whole trace kept (the same fault-free run
//! the explorer recorded: same hash, same I/O indices), the story is cut
//! where the power went (just before I/O `I`), and the crash shows what
//! crash state `J` of that instant kept of every pending change.

use std::path::Path;

use super::story::{AxisKind, AxisMark, Story};
use super::{Report, Verdict};
use crate::explore::{ExploreOptions, ExploreReport};
use crate::seam::Target;
use crate::trace::keeping_all_for_report;

/// Draw crash state `state` of crash index `io_index` of `seed`'s
/// `ops`-operation workload, with what `found` (the exploration just run)
/// says of it, and write the page to `path`.
pub fn write_explored<T: Target>(
    target: &T,
    (seed, ops): (u64, u64),
    (io_index, state): (u64, usize),
    options: &ExploreOptions,
    found: &ExploreReport,
    path: &Path,
) -> Result<(), String> {
    let workload = target.explore_workload(seed, ops);
    let recording = keeping_all_for_report(|| target.record(seed, &workload));
    let trace = recording.trace.as_ref().ok_or("the recording kept no trace")?;
    let label = |i: u64| usize::try_from(i).ok().and_then(|i| workload.get(i)).map(|op| op.to_string());
    let whole = Story::from_trace(trace, &label);
    let snapshot = recording.disk.before_io(io_index).ok_or(format!("no crash index {io_index} was recorded"))?;
    let states = snapshot.crash_states_for(&options.for_target(target).states());
    let crash_state = states.get(state).ok_or(format!("crash index {io_index} has no state {state}"))?;
    let picture = snapshot.picture(&snapshot.image(crash_state), io_index);
    let crash_slot = whole.marks.iter().find(|m| m.io_index == io_index).map_or(whole.slots, |m| m.slot);
    let mut story = whole.restricted(0, crash_slot);
    story.slots += 1;
    if let Some(last) = story.ops.last_mut() {
        last.end = story.slots;
    }
    let title = format!("POWER LOSS just before io#{io_index} (explored crash state {state})");
    story.axis.push(AxisMark { slot: crash_slot, kind: AxisKind::Crash, title });
    story.crashes.push((crash_slot, picture));
    let failure = found.failures.iter().find(|f| f.io_index == Some(io_index) && f.state == Some(state));
    let op_index = story.op_at(crash_slot).map_or(0, |op| op.index);
    let mut recovery =
        vec![format!("crash state {state} of crash index {io_index}: {}", snapshot.describe(crash_state))];
    if let Some(f) = failure {
        if let Some((then_io, then_state)) = f.then {
            recovery.push(format!("then its recovery crashed again at its crash index {then_io}, state {then_state}"));
        }
        if let Some(fault_io) = f.fault_io {
            recovery.push(format!("its recovery's I/O {fault_io} failed (EIO)"));
        }
    }
    let verdict = failure.map(|f| Verdict {
        seed,
        check: f.check.as_str().to_string(),
        op_index,
        op_line: Some(f.op.clone()),
        detail: f.detail.clone(),
        recent: Vec::new(),
        repro: f.repro.clone(),
    });
    let facts = vec![
        ("target".to_string(), target.name().to_string()),
        ("seed".to_string(), seed.to_string()),
        ("workload operations".to_string(), ops.to_string()),
        ("crash index".to_string(), format!("{io_index} (power lost just before this I/O)")),
        ("crash state".to_string(), format!("{state} of {}", states.len())),
        ("recording's trace hash".to_string(), format!("{:016x}", trace.hash())),
    ];
    let title = format!("{} seed {seed}: explored crash index {io_index}, state {state}", target.name());
    let report = Report { title, facts, story, failure: verdict, recovery };
    report.write(path).map_err(|e| format!("cannot write the report {}: {e}", path.display()))?;
    eprintln!("report written to {} (open it in a browser)", path.display());
    Ok(())
}
