//! `sim explore` for any [`Target`]: record one fault-free run, crash it at
//! every I/O index, recover every crash state the disk model allows there,
//! and judge each — the method of `crate::explore` (see its module doc),
//! with everything target-specific behind the trait: the recording and
//! its contexts, what a recovery depends on besides the image, the
//! recovery itself and the verdict.
//!
//! The order of work is fixed, so the report is a function of the seed
//! and the options: runs of indices sharing a snapshot are enumerated
//! (and their images hashed) once; the merge walks every index in order,
//! keeping the first index and state number at which each (image,
//! recovery key) — one recovery — and each (image, context) — one check —
//! appears; recoveries are spread over threads and their failures merged
//! back in crash-index order. `--jobs` changes only the timings.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::{Recording, Target};
use crate::disk::{CrashState, DiskSnapshot};
use crate::explore::parallel::map_in_order;
use crate::explore::{ExploreFailure, ExploreOptions, DEFAULT_MAX_DIR_SUBSETS, MAX_FAILURES_KEPT};
use crate::failure::Check;

/// The outcome of exploring one seed of a target. Everything but the
/// timings is a function of the target's settings, the seed and the
/// options.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetExploreReport {
    /// The target's name.
    pub target: &'static str,
    /// The seed.
    pub seed: u64,
    /// Workload operations drawn.
    pub ops: u64,
    /// The disk's sector size.
    pub sector_bytes: u64,
    /// I/O operations in the recording run.
    pub recorded_ios: u64,
    /// Crash indices explored.
    pub io_indices: u64,
    /// Crash states enumerated, byte-identical ones included.
    pub states: u64,
    /// Distinct (image, recovery key) pairs recovered.
    pub distinct_states: u64,
    /// Distinct (image, context) pairs judged.
    pub checks: u64,
    /// `--max-states` stopped the enumeration early.
    pub capped: bool,
    /// With `--only-state`: that state's description.
    pub examined: Option<String>,
    /// States that failed (first occurrence of each image in each context).
    pub failures_total: u64,
    /// The first [`MAX_FAILURES_KEPT`] of them, in crash-index order.
    pub failures: Vec<ExploreFailure>,
    /// Wall-clock seconds, all phases.
    pub elapsed_sec: f64,
    /// Wall-clock seconds of the recording, the enumeration and the checks.
    pub phase_sec: [f64; 3],
}

impl TargetExploreReport {
    fn add_failures(&mut self, failures: Vec<ExploreFailure>) {
        self.failures_total += failures.len() as u64;
        let room = MAX_FAILURES_KEPT.saturating_sub(self.failures.len());
        self.failures.extend(failures.into_iter().take(room));
    }

    /// The same report with every timing zeroed, for comparisons.
    pub fn without_timings(&self) -> Self {
        TargetExploreReport { elapsed_sec: 0.0, phase_sec: [0.0; 3], ..self.clone() }
    }

    /// Crash states per second of wall-clock time, all phases counted.
    pub fn states_per_sec(&self) -> f64 {
        self.states as f64 / self.elapsed_sec.max(1e-9)
    }

    /// The human report (the shape of `sim explore`'s).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "sim explore --target {}: seed {} ({} ops, {}-byte sectors): {} I/Os recorded\n",
            self.target, self.seed, self.ops, self.sector_bytes, self.recorded_ios
        );
        out.push_str(&format!(
            "  {} crash indices, {} crash states, {} distinct recovered, {} checks{}\n",
            self.io_indices,
            self.states,
            self.distinct_states,
            self.checks,
            if self.capped { " (capped by --max-states)" } else { "" }
        ));
        out.push_str(&format!(
            "  {:.2} s: {:.0} states/s (record {:.2} s, enumerate {:.2} s, check {:.2} s)\n",
            self.elapsed_sec,
            self.states_per_sec(),
            self.phase_sec[0],
            self.phase_sec[1],
            self.phase_sec[2]
        ));
        if let Some(examined) = &self.examined {
            out.push_str(&format!("  state examined: {examined}\n"));
        }
        if self.failures_total == 0 {
            out.push_str("  no failure\n");
            return out;
        }
        out.push_str(&format!("  {} FAILURES", self.failures_total));
        if self.failures_total > self.failures.len() as u64 {
            out.push_str(&format!(" (the first {} shown)", self.failures.len()));
        }
        out.push('\n');
        let mut shown_in_full = Vec::new();
        for (n, failure) in self.failures.iter().enumerate() {
            let at = match (failure.io_index, failure.state) {
                (Some(io), Some(state)) => format!("crash index {io}, state {state}"),
                _ => "recording".to_string(),
            };
            if !shown_in_full.contains(&failure.check) {
                shown_in_full.push(failure.check);
                out.push_str(&format!(
                    "  [{at}] check '{}' during `{}`\n    state: {}\n    {}\n    repro: {}\n",
                    failure.check,
                    failure.op,
                    failure.description,
                    failure.detail.trim_end().replace('\n', "\n    "),
                    failure.repro
                ));
            } else if n < 10 {
                out.push_str(&format!("  [{at}] check '{}': {}\n", failure.check, failure.description));
            }
        }
        out
    }

    /// The machine report (the keys of `sim explore --json`, plus `target`).
    pub fn to_json(&self) -> serde_json::Value {
        let failures: Vec<serde_json::Value> = self
            .failures
            .iter()
            .map(|f| {
                json!({
                    "io_index": f.io_index,
                    "state": f.state,
                    "op": f.op,
                    "description": f.description,
                    "check": f.check.as_str(),
                    "detail": f.detail,
                    "repro": f.repro,
                })
            })
            .collect();
        json!({
            "target": self.target,
            "seed": self.seed,
            "ops": self.ops,
            "sector_bytes": self.sector_bytes,
            "recorded_ios": self.recorded_ios,
            "io_indices": self.io_indices,
            "states": self.states,
            "distinct_states": self.distinct_states,
            "checks": self.checks,
            "capped": self.capped,
            "examined": self.examined,
            "states_per_sec": self.states_per_sec(),
            "elapsed_sec": self.elapsed_sec,
            "phase_sec": {"record": self.phase_sec[0], "enumerate": self.phase_sec[1], "check": self.phase_sec[2]},
            "failures_total": self.failures_total,
            "failures": failures,
        })
    }
}

/// The command that explores exactly `(io_index, state)` again (or, with
/// neither, the whole seed).
fn repro<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    options: &ExploreOptions,
    io_index: Option<u64>,
    state: Option<usize>,
) -> String {
    let mut command =
        format!("cargo run --release -p sim -- explore --target {} --seed {seed} --ops {ops}", target.name());
    for (key, value) in target.settings() {
        // A switch is `key on` in an `.ops` file and a bare flag here.
        match value.as_str() {
            "on" => command.push_str(&format!(" --{key}")),
            _ => command.push_str(&format!(" --{key} {value}")),
        }
    }
    if options.max_dir_subsets != DEFAULT_MAX_DIR_SUBSETS {
        command.push_str(&format!(" --max-dir-subsets {}", options.max_dir_subsets));
    }
    if let Some(io_index) = io_index {
        command.push_str(&format!(" --only-io {io_index}"));
    }
    if let Some(state) = state {
        command.push_str(&format!(" --only-state {state}"));
    }
    command
}

/// One check of a recovered image: in context `context`, where crash
/// index `io_index`'s state number `state` first gave this image.
#[derive(Clone, Debug)]
struct CheckAt {
    context: usize,
    io_index: u64,
    state: usize,
}

/// One distinct (image, recovery key) to recover.
struct Recovery {
    snapshot: Arc<DiskSnapshot>,
    crash_state: CrashState,
    key: u64,
    checks: Vec<CheckAt>,
}

/// A run of consecutive crash indices sharing one snapshot.
struct Run {
    first_io_index: u64,
    len: u64,
    snapshot: Arc<DiskSnapshot>,
}

/// The context of crash index `io_index`: the last one begun at or before it.
fn context_at<C>(recording: &Recording<C>, io_index: u64) -> usize {
    let after = recording.contexts.partition_point(|c| c.first_io_index <= io_index);
    after.saturating_sub(1)
}

/// What to recover and check, and the counts for the report.
struct Plan {
    recoveries: Vec<Recovery>,
    io_indices: u64,
    states: u64,
    checks: u64,
    capped: bool,
    examined: Option<String>,
}

fn plan<T: Target>(target: &T, recording: &Recording<T::Context>, options: &ExploreOptions) -> Result<Plan, String> {
    let indices = recording.disk.io_indices();
    let indices = match options.only_io {
        Some(io) if !indices.contains(&io) => {
            return Err(format!(
                "--only-io {io}: the recorded crash indices are {}..={}",
                indices.start,
                indices.end.saturating_sub(1)
            ));
        }
        Some(io) => io..io + 1,
        None => indices,
    };
    let mut runs: Vec<Run> = Vec::new();
    for io_index in indices {
        let snapshot = recording.disk.before_io(io_index).expect("inside the recording");
        match runs.last_mut() {
            Some(run) if Arc::ptr_eq(&run.snapshot, snapshot) => run.len += 1,
            _ => runs.push(Run { first_io_index: io_index, len: 1, snapshot: snapshot.clone() }),
        }
    }
    let enumerated = AtomicU64::new(0);
    let cap = options.max_states.unwrap_or(u64::MAX);
    let progress = options.progress.then_some("enumerating crash states (snapshots)");
    let hashed: Vec<Option<(Vec<CrashState>, Vec<u64>)>> = map_in_order(&runs, options.jobs, progress, |run| {
        if enumerated.load(Ordering::Relaxed) >= cap {
            return None;
        }
        let states = run.snapshot.crash_states(options.max_dir_subsets);
        let hashes = states.iter().map(|state| run.snapshot.image(state).hash()).collect();
        let per_index = if options.only_state.is_some() {
            1
        } else {
            states.iter().filter(|s| target.torn_garbage() || !s.has_garbage()).count() as u64
        };
        enumerated.fetch_add(per_index * run.len, Ordering::Relaxed);
        Some((states, hashes))
    });

    let mut plan = Plan { recoveries: Vec::new(), io_indices: 0, states: 0, checks: 0, capped: false, examined: None };
    let mut recovery_of: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    let mut checked: BTreeSet<(u64, usize)> = BTreeSet::new();
    'runs: for (run, hashed) in runs.iter().zip(&hashed) {
        if plan.states >= cap {
            plan.capped = true;
            break;
        }
        let (states, hashes) = hashed.as_ref().expect("a run before the cap was enumerated");
        let chosen = match options.only_state {
            Some(state) if state >= states.len() => {
                return Err(format!(
                    "--only-state {state}: crash index {} has {} crash states (0..={})",
                    run.first_io_index,
                    states.len(),
                    states.len().saturating_sub(1)
                ));
            }
            Some(state) => state..state + 1,
            None => 0..states.len(),
        };
        if let Some(state) = options.only_state {
            plan.examined = Some(run.snapshot.describe(&states[state]));
        }
        for io_index in run.first_io_index..run.first_io_index + run.len {
            let context = context_at(recording, io_index);
            let key = target.recovery_key(&recording.contexts[context].context);
            if plan.states >= cap {
                plan.capped = true;
                break 'runs;
            }
            plan.io_indices += 1;
            for state in chosen.clone() {
                if !target.torn_garbage() && states[state].has_garbage() {
                    continue;
                }
                if plan.states >= cap {
                    plan.capped = true;
                    break 'runs;
                }
                plan.states += 1;
                let hash = hashes[state];
                let next = plan.recoveries.len();
                let recovery = *recovery_of.entry((hash, key)).or_insert(next);
                if recovery == next {
                    plan.recoveries.push(Recovery {
                        snapshot: run.snapshot.clone(),
                        crash_state: states[state].clone(),
                        key,
                        checks: Vec::new(),
                    });
                }
                if checked.insert((hash, context)) {
                    plan.checks += 1;
                    plan.recoveries[recovery].checks.push(CheckAt { context, io_index, state });
                }
            }
        }
    }
    Ok(plan)
}

/// Explore `target`'s seed `seed` with a workload of `ops` operations.
/// `Err` is a usage error found once the workload is recorded (a crash
/// index or state number that does not exist).
pub fn explore<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    options: &ExploreOptions,
) -> Result<TargetExploreReport, String> {
    assert!(options.jobs >= 1 && options.max_dir_subsets >= 1, "checked by the caller");
    let started = Instant::now();
    let workload = target.explore_workload(seed, ops);
    let mut report = TargetExploreReport {
        target: target.name(),
        seed,
        ops,
        sector_bytes: target.sector_bytes(seed),
        recorded_ios: 0,
        io_indices: 0,
        states: 0,
        distinct_states: 0,
        checks: 0,
        capped: false,
        examined: None,
        failures_total: 0,
        failures: Vec::new(),
        elapsed_sec: 0.0,
        phase_sec: [0.0; 3],
    };
    let recording = target.record(seed, &workload);
    report.recorded_ios = (recording.disk.snapshots.len() as u64).saturating_sub(1);
    report.phase_sec[0] = started.elapsed().as_secs_f64();
    if let Some((check, detail)) = &recording.failure {
        let what = recording.contexts.last().map_or("the setup".to_string(), |c| c.what.clone());
        report.add_failures(vec![ExploreFailure {
            io_index: None,
            state: None,
            op: what,
            description: "the recording run itself, before any explored crash".to_string(),
            check: Check::parse(check).unwrap_or_else(|| panic!("an unknown check {check:?}")),
            detail: detail.clone(),
            repro: repro(target, seed, ops, options, None, None),
        }]);
        report.elapsed_sec = started.elapsed().as_secs_f64();
        return Ok(report);
    }

    let enumerate_started = Instant::now();
    let plan = plan(target, &recording, options)?;
    report.phase_sec[1] = enumerate_started.elapsed().as_secs_f64();
    report.io_indices = plan.io_indices;
    report.states = plan.states;
    report.distinct_states = plan.recoveries.len() as u64;
    report.checks = plan.checks;
    report.capped = plan.capped;
    report.examined = plan.examined.clone();

    let check_started = Instant::now();
    let progress = options.progress.then_some("recovering distinct crash states");
    let per_recovery = map_in_order(&plan.recoveries, options.jobs, progress, |recovery| {
        let image = recovery.snapshot.image(&recovery.crash_state);
        let recovered = target.recover(seed, &image, recovery.key);
        let mut failures = Vec::new();
        for at in &recovery.checks {
            let context = &recording.contexts[at.context];
            let Err((check, detail)) = target.judge(&recovered, &context.context) else { continue };
            let snapshot = recording.disk.before_io(at.io_index).expect("a recorded index");
            let state = &snapshot.crash_states(options.max_dir_subsets)[at.state];
            failures.push(ExploreFailure {
                io_index: Some(at.io_index),
                state: Some(at.state),
                op: context.what.clone(),
                description: snapshot.describe(state),
                check: Check::parse(check).unwrap_or_else(|| panic!("an unknown check {check:?}")),
                detail,
                repro: repro(target, seed, ops, options, Some(at.io_index), Some(at.state)),
            });
        }
        failures
    });
    let mut failures: Vec<ExploreFailure> = per_recovery.into_iter().flatten().collect();
    failures.sort_by_key(|failure| (failure.io_index, failure.state));
    report.phase_sec[2] = check_started.elapsed().as_secs_f64();
    report.add_failures(failures);
    report.elapsed_sec = started.elapsed().as_secs_f64();
    Ok(report)
}
