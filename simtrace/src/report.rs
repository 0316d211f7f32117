//! What `sim trace explore` prints: the counts and rates, then each
//! failing state with where the crash fell among the recorded operations,
//! which unsynced operations it kept and lost, what had been printed, what
//! the checker said and the command that checks that state alone — as
//! text, and the same as one JSON object.

use serde_json::{json, Value};

use super::explore::{Distinct, Explored, Verdict};
use super::recording::{Op, Recording};
use super::replay::{Replayed, ROOT};
use simulator::explore::DEFAULT_COMPLETE_UP_TO;

/// The run's facts the report names beside the results.
#[derive(Debug)]
pub struct Context<'a> {
    /// The recording's file, as given.
    pub file: &'a str,
    /// The recording.
    pub recording: &'a Recording,
    /// Its replay.
    pub replayed: &'a Replayed,
    /// The file-system profile's name.
    pub profile: &'a str,
    /// The checker command.
    pub check: &'a str,
    /// Whether it ran as a server judging many states (`--check-server`).
    pub server: bool,
    /// Checker jobs.
    pub jobs: usize,
    /// `sh -c :`'s mean wall time, measured on this machine now.
    pub floor_seconds: f64,
    /// Where the states were written out (`--scratch`).
    pub scratch: &'a str,
    /// The disk's sector size (`--sector-bytes`).
    pub sector_bytes: u64,
    /// Whether states with a torn sector holding garbage were explored.
    pub torn_garbage: bool,
    /// `--complete-up-to` (`u64::MAX`: `--exhaustive`).
    pub complete_up_to: u64,
}

fn failing(explored: &Explored) -> impl Iterator<Item = (&Distinct, &Verdict)> {
    explored.distinct.iter().zip(&explored.verdicts).filter(|(_, verdict)| !verdict.passed)
}

/// States a checker server faulted on (`check_server.rs`).
fn faults(explored: &Explored) -> usize {
    explored.verdicts.iter().filter(|verdict| verdict.fault.is_some()).count()
}

fn rate(explored: &Explored) -> f64 {
    explored.distinct.len() as f64 / explored.check_seconds.max(1e-9)
}

fn mean_check(explored: &Explored) -> f64 {
    let total: f64 = explored.verdicts.iter().map(|v| v.seconds).sum();
    total / explored.verdicts.len().max(1) as f64
}

/// Where the crash fell: after which operation, before which. The power
/// is lost just before I/O `io_index`, so every operation before the one
/// that owns that I/O has run (a `close` or a print makes no I/O of its
/// own, so it is "after" too).
fn place(context: &Context<'_>, io_index: u64) -> String {
    let ops = &context.recording.ops;
    let next = context.replayed.op_of(io_index);
    let ran = next.unwrap_or(ops.len());
    let after = (0..ran).rev().find(|&at| !matches!(ops[at], Op::Print { .. }));
    let after = after.map_or("the start".to_string(), |a| format!("recorded op #{} `{}`", a + 1, ops[a].summary()));
    match next {
        Some(b) => format!("after {after}, before recorded op #{} `{}`", b + 1, ops[b].summary()),
        None => format!("after {after}: the end of the run"),
    }
}

/// The recorded operations whose data the crash could lose (written, not
/// yet fsynced): what the disk's description of the state keeps or loses.
fn unsynced(context: &Context<'_>, io_index: u64) -> Vec<String> {
    let ops = &context.recording.ops;
    context
        .replayed
        .unsynced_before(io_index)
        .into_iter()
        .map(|at| format!("#{} `{}`", at + 1, ops[at].summary()))
        .collect()
}

/// `sim trace explore`'s sector size unless `--sector-bytes` says another.
pub const DEFAULT_SECTOR_BYTES: u64 = 4096;

fn repro(context: &Context<'_>, state: &Distinct) -> String {
    let sector = match context.sector_bytes {
        DEFAULT_SECTOR_BYTES => String::new(),
        bytes => format!(" --sector-bytes {bytes}"),
    };
    // Past families 1 to 4, a state's number depends on the bound.
    let complete = match context.complete_up_to {
        DEFAULT_COMPLETE_UP_TO => String::new(),
        u64::MAX => " --exhaustive".to_string(),
        bound => format!(" --complete-up-to {bound}"),
    };
    format!(
        "sim trace explore {} --check '{}'{} --fs {}{sector}{}{complete} --only-io {} --only-state {}",
        context.file,
        context.check.replace('\'', "'\\''"),
        if context.server { " --check-server" } else { "" },
        context.profile,
        if context.torn_garbage { " --torn-garbage" } else { "" },
        state.io_index,
        state.state
    )
}

fn files(state: &Distinct) -> Vec<(String, usize)> {
    let root = std::path::Path::new(ROOT);
    state
        .image
        .files()
        .into_iter()
        .map(|(path, bytes)| (path.strip_prefix(root).unwrap_or(&path).display().to_string(), bytes.len()))
        .collect()
}

fn files_text(state: &Distinct) -> String {
    let files = files(state);
    if files.is_empty() {
        return "none".to_string();
    }
    files.iter().map(|(path, len)| format!("{path} ({len} B)")).collect::<Vec<_>>().join(", ")
}

/// The text report.
pub fn text(context: &Context<'_>, explored: &Explored) -> String {
    let failures = failing(explored).count();
    let mut out = format!(
        "trace explore {} under {}{} ({} recorded operations): {}\n  crash indices {}, crash states {}, distinct {} \
         (each checked once), failing {}\n  plan {:.2} s; checks {:.2} s over {} jobs: {:.1} states/s; checker \
         mean {:.1} ms, process-start floor (sh -c :) {:.1} ms; states written in {}\n",
        context.file,
        context.profile,
        if context.torn_garbage { ", torn sectors may hold garbage" } else { "" },
        context.recording.ops.len(),
        explored.coverage.line(context.complete_up_to),
        explored.crash_indices,
        explored.states,
        explored.distinct.len(),
        failures,
        explored.plan_seconds,
        explored.check_seconds,
        context.jobs,
        rate(explored),
        mean_check(explored) * 1e3,
        context.floor_seconds * 1e3,
        context.scratch,
    );
    out.push_str(&explored.coverage.sampled_text());
    let faults = faults(explored);
    if faults > 0 {
        // A state the server faulted on has no verdict: it fails, but it
        // says nothing about the program.
        out.push_str(&format!(
            "  CHECKER SERVER FAULTS: {faults} of the failing states got no verdict (the server died, answered \
             outside the protocol or never answered: `CHECKER SERVER FAULT` below); fix the checker and rerun\n"
        ));
    }
    if failures > 1 && failures == explored.distinct.len() {
        // Every state failing usually means the checker itself is broken
        // (a wrong path, a missing tool): say so before the list.
        out.push_str("  every state failed: is the checker right? Each one's output is below.\n");
    }
    for (state, verdict) in failing(explored) {
        let unsynced = unsynced(context, state.io_index);
        let unsynced = if unsynced.is_empty() { "none".to_string() } else { unsynced.join(", ") };
        let said = verdict.output_tail.trim();
        out.push_str(&format!(
            "\nFAIL crash index {}, state {} (and {} identical states)\n  {}\n  the crash: {}\n  recorded writes \
             not yet fsynced: {unsynced}\n  printed before the crash: {:?}\n  files: {}\n  checker: {}{}\n  repro: {}\n",
            state.io_index,
            state.state,
            state.duplicates,
            place(context, state.io_index),
            state.description,
            String::from_utf8_lossy(&state.printed),
            files_text(state),
            verdict.ended,
            if said.is_empty() { String::new() } else { format!(": {said}") },
            repro(context, state),
        ));
    }
    out
}

/// The JSON report.
pub fn json(context: &Context<'_>, explored: &Explored) -> Value {
    let failures: Vec<Value> = failing(explored)
        .map(|(state, verdict)| {
            json!({
                "io_index": state.io_index,
                "state": state.state,
                "duplicates": state.duplicates,
                "place": place(context, state.io_index),
                "crash": state.description,
                "unsynced_writes": unsynced(context, state.io_index),
                "printed": String::from_utf8_lossy(&state.printed),
                "files": files(state).into_iter().map(|(path, len)| json!({"path": path, "bytes": len})).collect::<Vec<_>>(),
                "checker": verdict.ended,
                "checker_output": verdict.output_tail,
                "checker_server_fault": verdict.fault.as_ref().map(|fault| fault.to_string()),
                "repro": repro(context, state),
            })
        })
        .collect();
    json!({
        "recording": context.file,
        "fs": context.profile,
        "operations": context.recording.ops.len(),
        "crash_indices": explored.crash_indices,
        "crash_states": explored.states,
        "distinct_states": explored.distinct.len(),
        "failing_states": failures.len(),
        "checker_server_faults": faults(explored),
        "plan_seconds": explored.plan_seconds,
        "check_seconds": explored.check_seconds,
        "jobs": context.jobs,
        "check_server": context.server,
        "states_per_second": rate(explored),
        "checker_mean_seconds": mean_check(explored),
        "floor_seconds": context.floor_seconds,
        "scratch": context.scratch,
        "sector_bytes": context.sector_bytes,
        "torn_garbage": context.torn_garbage,
        "complete_up_to": context.complete_up_to,
        "coverage": explored.coverage.to_json(),
        "failures": failures,
    })
}
