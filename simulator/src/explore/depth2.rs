//! Depth 2 (`sim explore --depth 2`): the power fails again while a crash
//! state is being recovered, or while the recovered system takes its
//! probe.
//!
//! A recovery writes: it cuts torn tails, quarantines them, makes what it
//! replayed durable, sweeps orphans, and the probe then writes, evicts,
//! restarts and loses power once more. Each of those writes is a point
//! where a second power loss leaves a disk that no single crash of the
//! workload leaves. So for every distinct recovered state of depth 1 that
//! passed its checks (a *parent*), the target records its recovery again
//! on a disk that keeps a snapshot before every I/O
//! ([`ExploreDepth2::record_recovery`]), and the explorer does with that
//! recording what it did with the workload's: every crash index, every
//! crash state there, each image hashed.
//!
//! What a second crash is held to:
//! - inside the recovery itself (before the open returned), to the very
//!   contexts the parent's image was judged in: nothing was returned to
//!   anyone yet, so the second recovery must bring back a state the
//!   original crash allows;
//! - after the open returned, to the context the target noted there
//!   (segsim: the recovered content is now the durable base, plus the
//!   probe's write once acknowledged).
//!
//! Then the probe must pass, as at depth 1. Dedupe is global: an image
//! recovered once under a recovery key — at depth 1 or at depth 2, from
//! any parent — is not recovered again, and an (image, context) pair
//! judged once is not judged again, so a second crash before the recovery
//! has written anything costs nothing.
//!
//! Parents are taken in plan order, in batches (recorded, enumerated,
//! recovered and judged together, then dropped, which bounds the memory
//! the recordings hold); the merge of each batch walks parents, then crash
//! indices, then states in order, exactly like depth 1's, so the report
//! is the same for every `--jobs`. `--max-depth2-states` cuts the
//! enumeration at a fixed point of that order.
//!
//! [`ExploreDepth2::record_recovery`]: crate::seam::ExploreDepth2::record_recovery

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use super::check::CheckAt;
use super::coverage::IndexCoverage;
use super::parallel::map_in_order;
use super::plan::{runs, Plan, Run};
use super::report::{self, Depth2Report, ExploreFailure};
use super::ExploreOptions;
use crate::disk::{CrashState, DiskSnapshot};
use crate::seam::{Recording, RecoveryRecording, Target};

/// Parents recorded per batch: enough to keep every thread busy, few
/// enough that their recordings' snapshots stay small.
const PARENTS_PER_BATCH: usize = 64;

/// What depth 1 leaves for depth 2: the workload's recording, its plan,
/// what each of the plan's recoveries returned, and which of them failed
/// a check (those are reported already and not explored deeper).
pub(super) struct Parents<'a, T: Target> {
    pub recording: &'a Recording<T::Context>,
    pub plan: &'a Plan,
    /// By plan recovery.
    pub outcomes: Vec<T::Recovered>,
    /// By plan recovery.
    pub failed: Vec<bool>,
}

/// A context a state is judged in, named across both depths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ContextId {
    /// One of the workload recording's contexts.
    Recorded(usize),
    /// One of the contexts of the recovery recording of the plan's
    /// recovery `parent`.
    Probe { parent: usize, context: usize },
}

/// A depth-2 image no earlier state recovered under its key.
struct NewRecovery {
    snapshot: Arc<DiskSnapshot>,
    crash_state: CrashState,
    key: u64,
}

/// One (image, context) pair to judge, where it first appeared.
struct Check2 {
    /// Into the outcomes: depth 1's recoveries first, then depth 2's.
    slot: usize,
    context: ContextId,
    /// The parent's crash index and state, judged in this context (a
    /// second crash inside the recovery) or where it first appeared (in
    /// the probe): the first half of the repro.
    parent_at: CheckAt,
    /// The parent's recording, in the batch.
    batch_pos: usize,
    then_io: u64,
    then_state: usize,
}

/// Explore depth 2 over `parents` (see the module doc): the counts, and
/// the failures in merge order. `Err` names a `--then-io` or
/// `--then-state` that does not exist.
pub(super) fn explore<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    parents: Parents<'_, T>,
    options: &ExploreOptions,
) -> Result<(Depth2Report, Vec<ExploreFailure>), String> {
    let started = Instant::now();
    let recorder = target.depth2().expect("checked by the caller");
    let Parents { recording, plan, outcomes, failed } = parents;
    assert_eq!(outcomes.len(), plan.recoveries.len());
    assert_eq!(failed.len(), plan.recoveries.len());
    let mut depth2 = Depth2::new(plan, outcomes, options.max_depth2_states.unwrap_or(u64::MAX));
    let passed: Vec<usize> = (0..plan.recoveries.len()).filter(|&parent| !failed[parent]).collect();
    for batch in passed.chunks(PARENTS_PER_BATCH) {
        // A batch recorded once the cap is reached would enumerate nothing.
        if depth2.at_cap() {
            break;
        }
        let record_started = Instant::now();
        let progress = options.progress.then_some("depth 2: recording recoveries");
        let recordings: Vec<RecoveryRecording<T::Context>> = map_in_order(batch, options.jobs, progress, |&parent| {
            let recovery = &plan.recoveries[parent];
            recorder.record_recovery(seed, &recovery.snapshot.image(&recovery.crash_state), recovery.key)
        });
        depth2.report.recoveries_recorded += batch.len() as u64;
        depth2.report.counts.phase_sec.record += record_started.elapsed().as_secs_f64();
        let parents = Batch { recording, plan, parents: batch, recordings: &recordings };
        let (new_recoveries, checks) = depth2.enumerate(target, &parents, options)?;
        depth2.check(target, (seed, ops), &parents, new_recoveries, checks, options);
    }
    depth2.report.counts.elapsed_sec = started.elapsed().as_secs_f64();
    Ok((depth2.report, depth2.failures))
}

/// One batch of parents: the plan's recoveries `parents`, each recorded
/// again (`recordings`, in the same order), and the workload recording
/// they came from.
struct Batch<'a, T: Target> {
    recording: &'a Recording<T::Context>,
    plan: &'a Plan,
    parents: &'a [usize],
    recordings: &'a [RecoveryRecording<T::Context>],
}

/// What depth 2 carries from batch to batch: the report so far; every
/// (image hash, key) recovered at either depth, by its slot in
/// `outcomes`, and every (image hash, context) judged, so that no state is
/// recovered or judged twice; the failures; the cap.
struct Depth2<R> {
    report: Depth2Report,
    slots: BTreeMap<(u64, u64), usize>,
    checked: BTreeSet<(u64, ContextId)>,
    /// By slot: depth 1's recoveries first, then depth 2's.
    outcomes: Vec<R>,
    failures: Vec<ExploreFailure>,
    cap: u64,
}

/// One crash index inside a parent's recording, and what a state there
/// is judged in (see [`Depth2::enumerate_index`]).
struct Index<'a> {
    batch_pos: usize,
    then_io: u64,
    contexts: Vec<(ContextId, &'a CheckAt)>,
    key: u64,
}

impl<R: Send + Sync> Depth2<R> {
    /// Depth 1's recoveries and checks, so that depth 2 repeats none.
    fn new(plan: &Plan, outcomes: Vec<R>, cap: u64) -> Self {
        let slots = plan.recoveries.iter().enumerate().map(|(slot, r)| ((r.hash, r.key), slot)).collect();
        let checked = plan
            .recoveries
            .iter()
            .flat_map(|r| r.checks.iter().map(move |at| (r.hash, ContextId::Recorded(at.context))))
            .collect();
        Depth2 { report: Depth2Report::default(), slots, checked, outcomes, failures: Vec::new(), cap }
    }

    /// Whether the cap is reached: if so, it says so in the report.
    fn at_cap(&mut self) -> bool {
        let at_cap = self.report.counts.capped || self.report.counts.states >= self.cap;
        self.report.counts.capped |= at_cap;
        at_cap
    }

    /// Enumerate the crash states of the batch's recordings, every index
    /// of every run, deduped with everything before: the images to
    /// recover and the (image, context) pairs to judge, in merge order.
    fn enumerate<T: Target<Recovered = R>>(
        &mut self,
        target: &T,
        batch: &Batch<'_, T>,
        options: &ExploreOptions,
    ) -> Result<(Vec<NewRecovery>, Vec<Check2>), String> {
        let enumerate_started = Instant::now();
        let explored = |state: &CrashState| state.explored(target.torn_garbage());
        let batch_runs = Self::batch_runs(batch, options)?;
        // As in `plan.rs`: stop taking runs once finished ones (all
        // before the one being taken) hold enough states.
        let hashed = super::plan::hash_runs(
            &batch_runs,
            |(_, run)| run,
            options,
            None,
            (self.report.counts.states, self.cap),
            options.then_state.is_some(),
            &explored,
        );
        let (mut new_recoveries, mut checks) = (Vec::new(), Vec::new());
        'runs: for ((batch_pos, run), hashed) in batch_runs.iter().zip(&hashed) {
            if self.at_cap() {
                break;
            }
            let pair = super::plan::states_of(hashed, run, options);
            let (states, hashes) = (&pair.0, &pair.1);
            let chosen = super::plan::chosen_states(
                "--then-state",
                "recovery crash index",
                options.then_state,
                run.first_io_index,
                states.len(),
            )?;
            if let Some(state) = options.then_state {
                self.report.counts.examined = Some(run.snapshot.describe(&states[state]));
            }
            let coverage = run.snapshot.coverage(&options.states());
            let points = options.then_state.is_none().then(|| run.snapshot.points_in(states, explored));
            for then_io in run.first_io_index..run.first_io_index + run.len {
                if self.at_cap() {
                    break 'runs;
                }
                self.report.counts.io_indices += 1;
                let index = Self::index(target, batch, *batch_pos, then_io);
                let states_here = chosen.clone().filter(|&state| explored(&states[state]));
                let before = self.report.counts.states;
                for state in states_here {
                    if self.at_cap() {
                        break;
                    }
                    let state = (state, &states[state], hashes[state]);
                    self.enumerate_state(run, &index, state, &mut new_recoveries, &mut checks);
                }
                // One state asked for (a repro): no claim either way.
                if let Some(points) = points {
                    let enumerated = if self.at_cap() { self.report.counts.states - before } else { points };
                    self.report.counts.coverage.add(IndexCoverage { io_index: then_io, coverage, enumerated });
                }
                if self.at_cap() {
                    break 'runs;
                }
            }
        }
        self.report.counts.distinct_states += new_recoveries.len() as u64;
        self.report.counts.checks += checks.len() as u64;
        self.report.counts.phase_sec.enumerate += enumerate_started.elapsed().as_secs_f64();
        Ok((new_recoveries, checks))
    }

    /// Every run of every recording of the batch (or `--then-io`'s index
    /// alone), with the recording's position.
    fn batch_runs<T: Target<Recovered = R>>(
        batch: &Batch<'_, T>,
        options: &ExploreOptions,
    ) -> Result<Vec<(usize, Run)>, String> {
        let mut batch_runs = Vec::new();
        for (batch_pos, recorded) in batch.recordings.iter().enumerate() {
            let indices = super::plan::chosen_indices(
                "--then-io",
                "the recovery's",
                options.then_io,
                recorded.disk.io_indices(),
            )?;
            batch_runs.extend(runs(&recorded.disk, indices).into_iter().map(|run| (batch_pos, run)));
        }
        Ok(batch_runs)
    }

    /// Crash index `then_io` of the recording at `batch_pos`: inside the
    /// recovery, every context the parent's image was judged in, each
    /// with where it was; after it, the one noted there (its parent named
    /// by its first place), and the recovery key it implies.
    fn index<'a, T: Target<Recovered = R>>(
        target: &T,
        batch: &Batch<'a, T>,
        batch_pos: usize,
        then_io: u64,
    ) -> Index<'a> {
        let parent = batch.parents[batch_pos];
        let recovery = &batch.plan.recoveries[parent];
        let recorded = &batch.recordings[batch_pos];
        let (contexts, key) = match recorded.context_at(then_io) {
            None => {
                let contexts = recovery.checks.iter().map(|at| (ContextId::Recorded(at.context), at));
                (contexts.collect(), recovery.key)
            }
            Some(context) => {
                let id = ContextId::Probe { parent, context };
                (vec![(id, &recovery.checks[0])], target.recovery_key(&recorded.contexts[context].context))
            }
        };
        Index { batch_pos, then_io, contexts, key }
    }

    /// One crash state at `index`, numbered `state.0`, its image hashed
    /// `state.2`: counted, recovered if no earlier state was under the
    /// same key, and judged in each of the index's contexts not yet
    /// judged for that image.
    fn enumerate_state(
        &mut self,
        run: &Run,
        index: &Index<'_>,
        (state, crash_state, hash): (usize, &CrashState, u64),
        new_recoveries: &mut Vec<NewRecovery>,
        checks: &mut Vec<Check2>,
    ) {
        self.report.counts.states += 1;
        let next = self.outcomes.len() + new_recoveries.len();
        let slot = *self.slots.entry((hash, index.key)).or_insert(next);
        if slot == next {
            let crash_state = crash_state.clone();
            new_recoveries.push(NewRecovery { snapshot: run.snapshot.clone(), crash_state, key: index.key });
        }
        for (context, parent_at) in &index.contexts {
            if self.checked.insert((hash, *context)) {
                checks.push(Check2 {
                    slot,
                    context: *context,
                    parent_at: **parent_at,
                    batch_pos: index.batch_pos,
                    then_io: index.then_io,
                    then_state: state,
                });
            }
        }
    }

    /// Recover the batch's new images and judge every new pair; a pair
    /// that fails is a failure with its repro.
    fn check<T: Target<Recovered = R>>(
        &mut self,
        target: &T,
        (seed, ops): (u64, u64),
        batch: &Batch<'_, T>,
        new_recoveries: Vec<NewRecovery>,
        checks: Vec<Check2>,
        options: &ExploreOptions,
    ) {
        let check_started = Instant::now();
        let progress = options.progress.then_some("depth 2: recovering distinct crash states");
        let recovered = map_in_order(&new_recoveries, options.jobs, progress, |new| {
            target.recover(seed, &new.snapshot.image(&new.crash_state), new.key)
        });
        self.outcomes.extend(recovered);
        let context_of = |check: &Check2| match check.context {
            ContextId::Recorded(context) => &batch.recording.contexts[context].context,
            ContextId::Probe { context, .. } => &batch.recordings[check.batch_pos].contexts[context].context,
        };
        let outcomes = &self.outcomes;
        let verdicts = map_in_order(&checks, options.jobs, None, |check| {
            target.judge(&outcomes[check.slot], context_of(check)).err()
        });
        for (check, verdict) in checks.iter().zip(verdicts) {
            let Some(verdict) = verdict else { continue };
            self.failures.push(failure(target, (seed, ops), batch, check, verdict, options));
        }
        self.report.counts.phase_sec.check += check_started.elapsed().as_secs_f64();
    }
}

/// The failure of `check` with `(failed_check, detail)`: where the first
/// crash and the second were, and the repro.
fn failure<T: Target>(
    target: &T,
    (seed, ops): (u64, u64),
    batch: &Batch<'_, T>,
    check: &Check2,
    (failed_check, detail): (crate::failure::Check, String),
    options: &ExploreOptions,
) -> ExploreFailure {
    let recorded = &batch.recordings[check.batch_pos];
    let parent_snapshot = batch.recording.disk.before_io(check.parent_at.io_index).expect("a recorded index");
    let parent_state = &parent_snapshot.crash_states_for(&options.states())[check.parent_at.state];
    let snapshot = recorded.disk.before_io(check.then_io).expect("a recorded index");
    let state = &snapshot.crash_states_for(&options.states())[check.then_state];
    let crashed_in = &batch.recording.contexts[check.parent_at.context].what;
    let op = match check.context {
        ContextId::Recorded(_) => format!("{crashed_in}; then its recovery"),
        ContextId::Probe { context, .. } => format!("{crashed_in}; then `{}`", recorded.contexts[context].what),
    };
    let then = Some((check.then_io, check.then_state));
    let (io, state_number) = (Some(check.parent_at.io_index), Some(check.parent_at.state));
    ExploreFailure {
        io_index: io,
        state: state_number,
        then,
        fault_io: None,
        fault_kind: None,
        damage_site: None,
        op,
        description: format!(
            "{}; then, in its recovery: {}",
            parent_snapshot.describe(parent_state),
            snapshot.describe(state)
        ),
        check: failed_check,
        detail,
        repro: report::repro(target, seed, ops, options, io, state_number, then),
    }
}
