//! Enumeration and dedupe: from the recording to the list of distinct disk
//! images to recover, each with the distinct contexts to judge it in.
//!
//! Consecutive crash indices often share one snapshot (reads change
//! nothing), and then they share their crash states and images too: those
//! are built and hashed once per snapshot, in parallel, and the merge then
//! walks every index in order, counting every state and keeping the first
//! index and state number at which each (image, recovery key) and each
//! (image, context) appears. First occurrences in index order are what
//! make the plan, and so the report, independent of the thread count.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::check::{CheckAt, CrashCheck};
use super::coverage::{CoverageTotals, IndexCoverage};
use super::parallel::map_in_order;
use super::ExploreOptions;
use crate::disk::{CrashState, DiskRecording, DiskSnapshot};
use crate::seam::RecordedContext;

/// One distinct (image, recovery key) to recover, as its first check's
/// state first produced it.
#[derive(Clone, Debug)]
pub struct Recovery {
    /// The snapshot the state was first enumerated from ...
    pub snapshot: Arc<DiskSnapshot>,
    /// ... and the state: together, the image.
    pub crash_state: CrashState,
    /// The image's hash ([`crate::disk::DiskImage::hash`]).
    pub hash: u64,
    /// The recovery key ([`CrashCheck::recovery_key`]).
    pub key: u64,
    /// Non-empty: the recovery's own first occurrence is its first check.
    pub checks: Vec<CheckAt>,
    /// How many enumerated states gave this image and key (at least 1).
    pub occurrences: u64,
}

/// What to recover and check, and the counts for the report.
#[derive(Debug, Default)]
pub struct Plan {
    /// In order of first occurrence.
    pub recoveries: Vec<Recovery>,
    /// Crash indices explored (fully or, if capped, in part).
    pub io_indices: u64,
    /// Crash states enumerated, duplicates included ...
    pub states: u64,
    /// ... and per crash index (those with none left out), for what the
    /// workload reached (`reach.rs`).
    pub states_at: BTreeMap<u64, u64>,
    /// Distinct (image, context) pairs.
    pub checks: u64,
    /// `max_states` stopped the enumeration early.
    pub capped: bool,
    /// With `only_state`: that state's description.
    pub examined: Option<String>,
    /// Per crash index, the model's states and the enumerated ones.
    pub coverage: CoverageTotals,
}

/// A run of consecutive crash indices that share one snapshot.
pub(super) struct Run {
    pub first_io_index: u64,
    pub len: u64,
    pub snapshot: Arc<DiskSnapshot>,
}

/// `indices` of `disk` (all inside it) as runs of consecutive indices that
/// share one snapshot, in index order.
pub(super) fn runs(disk: &DiskRecording, indices: Range<u64>) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for io_index in indices {
        let snapshot = disk.before_io(io_index).expect("inside the recording");
        match runs.last_mut() {
            Some(run) if Arc::ptr_eq(&run.snapshot, snapshot) => run.len += 1,
            _ => runs.push(Run { first_io_index: io_index, len: 1, snapshot: snapshot.clone() }),
        }
    }
    runs
}

/// The crash states of `run`'s snapshot and their images' hashes.
pub(super) fn hash_states(run: &Run, options: &ExploreOptions) -> (Vec<CrashState>, Vec<u64>) {
    let states = run.snapshot.crash_states_for(&options.states());
    let hashes = run.snapshot.image_hashes(&states);
    (states, hashes)
}

/// A run's crash states and their images' hashes, or `None` if the cap was
/// reached before the run was taken.
pub(super) type Hashed = Option<(Vec<CrashState>, Vec<u64>)>;

/// Build the plan of `disk`'s crash states, each judged in the context of
/// `contexts` (in order of `first_io_index`) its index falls in (see the
/// module doc). `Err` names a crash index or state number that does not
/// exist.
pub fn plan<X: CrashCheck>(
    target: &X,
    disk: &DiskRecording,
    contexts: &[RecordedContext<X::Context>],
    options: &ExploreOptions,
) -> Result<Plan, String> {
    let indices = chosen_indices("--only-io", "the recorded", options.only_io, disk.io_indices())?;
    let runs = runs(disk, indices);
    // States a target leaves out (torn sectors holding garbage, for one
    // that relies on atomic sector writes) keep their numbers: the
    // numbering is the disk's, whatever the target explores.
    let explored = |state: &CrashState| state.explored(target.torn_garbage());

    // Stop taking runs once the finished ones hold enough states: runs are
    // taken in order, so every run the merge needs was taken.
    let cap = options.max_states.unwrap_or(u64::MAX);
    let progress = options.progress.then_some("enumerating crash states (snapshots)");
    let hashed = hash_runs(&runs, |run| run, options, progress, (0, cap), options.only_state.is_some(), &explored);

    let mut plan = Plan::default();
    let mut seen = Seen::default();
    'runs: for (run, hashed) in runs.iter().zip(&hashed) {
        if plan.states >= cap {
            plan.capped = true;
            break;
        }
        let pair = states_of(hashed, run, options);
        let (states, hashes) = (&pair.0, &pair.1);
        let chosen =
            chosen_states("--only-state", "crash index", options.only_state, run.first_io_index, states.len())?;
        if let Some(state) = options.only_state {
            plan.examined = Some(run.snapshot.describe(&states[state]));
        }
        let coverage = run.snapshot.coverage(&options.states());
        let points = options.only_state.is_none().then(|| run.snapshot.points_in(states, explored));
        for io_index in run.first_io_index..run.first_io_index + run.len {
            let context = crate::seam::context_at(contexts, io_index);
            let key = target.recovery_key(&contexts[context].context);
            if plan.states >= cap {
                plan.capped = true;
                break 'runs;
            }
            plan.io_indices += 1;
            let before = plan.states;
            for state in chosen.clone() {
                if !explored(&states[state]) {
                    continue;
                }
                if plan.states >= cap {
                    plan.capped = true;
                    plan.coverage.add(IndexCoverage { io_index, coverage, enumerated: plan.states - before });
                    break 'runs;
                }
                plan.states += 1;
                *plan.states_at.entry(io_index).or_default() += 1;
                seen.add(&mut plan, run, &states[state], hashes[state], key, CheckAt { context, io_index, state });
            }
            // One state asked for (a repro): no claim either way.
            if let Some(enumerated) = points {
                plan.coverage.add(IndexCoverage { io_index, coverage, enumerated });
            }
        }
    }
    Ok(plan)
}

/// What the plan holds already: each recovery by its image's hash and the
/// target's recovery key, each check by the image's hash and the context.
#[derive(Default)]
struct Seen {
    recovery_of: BTreeMap<(u64, u64), usize>,
    checked: BTreeSet<(u64, usize)>,
}

impl Seen {
    /// One explored crash state of `run` (counted by the caller): a new
    /// recovery if its image and key are new, a new check of it if its
    /// image was not yet judged in the context of `at`.
    fn add(&mut self, plan: &mut Plan, run: &Run, crash_state: &CrashState, hash: u64, key: u64, at: CheckAt) {
        let next = plan.recoveries.len();
        let recovery = *self.recovery_of.entry((hash, key)).or_insert(next);
        if recovery == next {
            plan.recoveries.push(Recovery {
                snapshot: run.snapshot.clone(),
                crash_state: crash_state.clone(),
                hash,
                key,
                checks: Vec::new(),
                occurrences: 0,
            });
        }
        plan.recoveries[recovery].occurrences += 1;
        debug_assert_eq!(plan.recoveries[recovery].hash, hash, "one recovery per image");
        if self.checked.insert((hash, at.context)) {
            plan.checks += 1;
            plan.recoveries[recovery].checks.push(at);
        }
        // A context's key is one, so a new (image, key) is a new (image, context).
        debug_assert!(!plan.recoveries[recovery].checks.is_empty(), "a recovery's first occurrence is its first check");
        debug_assert!(plan.checks <= plan.states, "a check per state at most");
    }
}

/// The crash indices to explore: all of `indices`, or the one a `flag`
/// (`--only-io`, `--then-io`) names, refused with the range there is when
/// `indices` lacks it.
pub(super) fn chosen_indices(
    flag: &str,
    whose: &str,
    only: Option<u64>,
    indices: Range<u64>,
) -> Result<Range<u64>, String> {
    match only {
        Some(io) if !indices.contains(&io) => {
            Err(format!("{flag} {io}: {whose} crash indices are {}..={}", indices.start, indices.end.saturating_sub(1)))
        }
        Some(io) => Ok(io..io + 1),
        None => Ok(indices),
    }
}

/// Each run's crash states and their hashes, in order, on `options.jobs`
/// workers — until the runs finished hold `cap` states (counting from
/// `already`): runs are taken in order, so every run the merge needs was
/// taken, and the ones after are `None`. Counted as the merge will count:
/// one state per index when a single state was asked for, else the
/// `explored` ones.
pub(super) fn hash_runs<R: Sync>(
    runs: &[R],
    run_of: impl Fn(&R) -> &Run + Sync,
    options: &ExploreOptions,
    progress: Option<&'static str>,
    (already, cap): (u64, u64),
    one_state: bool,
    explored: &(impl Fn(&CrashState) -> bool + Sync),
) -> Vec<Hashed> {
    let enumerated = AtomicU64::new(already);
    map_in_order(runs, options.jobs, progress, |item| {
        if enumerated.load(Ordering::Relaxed) >= cap {
            return None;
        }
        let run = run_of(item);
        let (states, hashes) = hash_states(run, options);
        let per_index = if one_state { 1 } else { states.iter().filter(|s| explored(s)).count() as u64 };
        enumerated.fetch_add(per_index * run.len, Ordering::Relaxed);
        Some((states, hashes))
    })
}

/// `run`'s states and their hashes: as [`hash_runs`] enumerated them, or
/// enumerated here when it skipped the run. With several jobs it can skip
/// a run the in-order check loop still needs: its cap is a count shared by
/// every worker, and later runs, taken by another worker first, may reach
/// it before this one was taken. (The report does not depend on `--jobs`:
/// the loop decides by the states of the runs before, in order.)
pub(super) fn states_of<'h>(
    hashed: &'h Hashed,
    run: &Run,
    options: &ExploreOptions,
) -> std::borrow::Cow<'h, (Vec<CrashState>, Vec<u64>)> {
    match hashed {
        Some(pair) => std::borrow::Cow::Borrowed(pair),
        None => std::borrow::Cow::Owned(hash_states(run, options)),
    }
}

/// The states of one crash index to recover: all of them, or the one a
/// `flag` (`--only-state`, `--then-state`) names, refused with the range
/// there is when the index has no such state.
pub(super) fn chosen_states(
    flag: &str,
    index_kind: &str,
    only: Option<usize>,
    io_index: u64,
    count: usize,
) -> Result<Range<usize>, String> {
    match only {
        Some(state) if state >= count => Err(format!(
            "{flag} {state}: {index_kind} {io_index} has {count} crash states (0..={})",
            count.saturating_sub(1)
        )),
        Some(state) => Ok(state..state + 1),
        None => Ok(0..count),
    }
}
