//! `sim explore`: exhaustive crash exploration of one short workload, for
//! any [`Target`].
//!
//! The random mode crashes a run now and then and lets the crash mode draw
//! what survives: it samples. This mode enumerates, the way ALICE and
//! CrashMonkey do for file systems, but in memory: it crashes one workload
//! at *every* I/O index and, at each, recovers *every* crash state the
//! disk model allows there (as `disk/crash_states.rs` enumerates them),
//! checking each by the same rule as the random mode. Everything that
//! depends on the system under test is behind the trait: the recording and
//! its contexts, what a recovery depends on besides the image, the
//! recovery itself and the verdict (`target/segsim/` and `target/redb/`).
//!
//! # How
//! 1. **Record** ([`Target::record`]). The seed's workload — its
//!    configuration and operation list as the random mode draws them,
//!    `--ops K` long (default 100), with the planned crash points dropped
//!    (every point is explored) and, for segsim, a bias toward the
//!    sequences that bugs past the first crash need
//!    (`workload::generate_for_explore`: evict → change a cold row →
//!    rewrite → crash or kill; unsynced writes → kill → time → write) —
//!    runs once on a fault-free simulated disk that keeps a snapshot of
//!    itself before every I/O operation (`SimVfs::start_recording`). The
//!    target keeps its checker alongside, exactly as its random mode does,
//!    and notes at every operation what a recovery from there on is held
//!    to (segsim: what was acknowledged, what is known durable, which
//!    write was in flight, the clock). `--fsync` forces segsim's policy.
//! 2. **Enumerate** (`plan.rs`). Crash index `i` means the power went just
//!    before I/O `i` ran (the last index: after every I/O). For each, the
//!    snapshot's crash states are enumerated and each turned into a disk
//!    image and hashed. Two dedupes follow: recovery depends only on the
//!    image and the target's recovery key (segsim: the clock), so each
//!    distinct (image, key) is recovered once; the verdict depends also on
//!    what the checker allowed at that moment, so each distinct (image,
//!    context) is checked once. Every enumerated state therefore gets a
//!    verdict, most of them through a byte-identical twin (runs of reads
//!    share one snapshot).
//! 3. **Recover and judge** ([`Target::recover`], [`Target::judge`]).
//!    Each distinct image becomes a fresh disk the target opens; what came
//!    back must be a state the random mode's rule allows in each context,
//!    and then the probe — the next steps the random mode would take,
//!    where bugs such as appending after an uncut torn tail show — must
//!    pass.
//! 4. **Crash the recoveries** (`--depth 2`, `depth2.rs`). Each distinct
//!    recovered state that passed is recovered once more on a recording
//!    disk ([`ExploreDepth2::record_recovery`]) and crashed at every I/O
//!    index of its recovery and probe; those crash states are enumerated, deduped
//!    with everything before them, recovered and judged — inside the
//!    recovery in the first crash's own contexts, after it in the
//!    recovered system's.
//! 5. **Fail the recoveries' I/Os** (`--faults`, `faults.rs`). Each
//!    distinct recovered state that passed is recovered once more per
//!    I/O index of its recovery and probe, with the I/O (of any kind: a read, write, fsync or map, or an open, rename, unlink, set_len, directory listing or sync_dir)
//!    there failing — EIO, and for a write also a short write and ENOSPC
//!    ([`ExploreFaults::recover_with_fault`]) — and judged in
//!    the image's own contexts: a transient error may fail the open, never
//!    as corruption, and the next open must succeed; a poisoned store
//!    loses the power and must bring back what it acknowledged. The
//!    recorded workload is rerun the same way, once per I/O of its own
//!    ([`ExploreFaults::run_with_fault`]), every check of the run applying.
//! 6. **Damage the durable images** (`--damage`, `damage.rs`). Each
//!    distinct durable image of the recording (what a power loss leaves
//!    keeping nothing unsynced) is damaged at every record the target
//!    names ([`ExploreDamage::damage_sites`]; segsim: each frame of the log and
//!    the manifest, each segment record — a bit flipped, a length past
//!    the end, the other log's record in its place), one at a time, and
//!    where writes are in flight at a crash index, damaged as they would
//!    leave it landed elsewhere ([`ExploreDamage::in_flight_damage_sites`]),
//!    each then opened the default way and at a point in time
//!    ([`ExploreDamage::recover_damaged`]): by the random mode's rule after
//!    announced damage, a refusal changes nothing, a cut is allowed only
//!    where no later durable write could have vouched for the bytes (or
//!    at a point in time, quarantined), and nothing is swept.
//! 7. **Report** (`report.rs`): indices, states enumerated, distinct
//!    states recovered, checks, states per second — for depth 2
//!    separately — and per failure the crash index, the state's number
//!    and description, the check, the diff, and the command (`--only-io I
//!    --only-state J`, at depth 2 `--then-io K --then-state L`, with
//!    faults `--fault-io K`) that recovers exactly that state again.
//!
//! # Determinism
//! The recording is one deterministic run; the enumeration order is fixed;
//! recovery of an image is a pure function of its bytes and its key. So
//! `--jobs N` only spreads snapshots (phase 2) and distinct images (phase
//! 3) over threads (`parallel.rs`), and the results are merged in index
//! order: the report is the same for every `N`, timings aside. Depth 2
//! merges the same way, parent by parent. `--max-states` and
//! `--max-depth2-states` cut each enumeration at a fixed point of its
//! order; `--faults` runs in the order of the recoveries, then I/O index,
//! and `--max-fault-runs` cuts that.
//!
//! # What it costs
//! At 100 operations (seeds 0..10, one job, a quiet 2-core Xeon) a seed has
//! 800 to 5,000 depth-1 crash states, checked at 12,000 to 57,000 states/s
//! in under 0.2 s, and 14,000 to 140,000 depth-2 states at 34,000 to 93,000
//! states/s, 0.2 to 2.7 s. Depth 2 keeps what every distinct state
//! recovered (a later second crash may land on the same disk in a new
//! context): 40 to 140 MB at 100 operations, about 1.2 GB for seed 10 at
//! 400 — bound it with `--max-depth2-states`.
//!
//! # What it does not cover
//! At most two crashes per state: at depth 1 the recovered system takes
//! one probe, not a workload (the random mode crashes again and again),
//! and crashes *during* a recovery are explored only inside the
//! workload's own `CRASH`, `RESTART` and `KILL`; depth 2 adds one crash
//! at every I/O of each recovery and its probe, never a third. I/O faults
//! only with `--faults`: one per recovery or per run of the recorded
//! workload, on any I/O (EIO; a write also short or out of space), never
//! two, never together with a second crash, and in the workload only
//! where the random mode draws faults. Damage only with `--damage`, and only
//! where the target names its records (segsim): one damaged record per
//! durable image, never together with a torn tail or a second crash;
//! lost or truncated files, junk before a log and stray files stay the
//! random mode's. The
//! enumeration varies the directories, one file, or two files at whole
//! operations, never more at once (see `disk/crash_states.rs`), and the
//! recording disk is `strict` (the workload's own crashes keep exactly
//! what was synced). The workload is
//! one seed's, biased but not searched: a sequence neither the swarm nor
//! the motifs draw is not explored.
//!
//! [`ExploreDepth2::record_recovery`]: crate::seam::ExploreDepth2::record_recovery
//! [`ExploreFaults::recover_with_fault`]: crate::seam::ExploreFaults::recover_with_fault
//! [`ExploreFaults::run_with_fault`]: crate::seam::ExploreFaults::run_with_fault
//! [`ExploreDamage::damage_sites`]: crate::seam::ExploreDamage::damage_sites
//! [`ExploreDamage::in_flight_damage_sites`]: crate::seam::ExploreDamage::in_flight_damage_sites
//! [`ExploreDamage::recover_damaged`]: crate::seam::ExploreDamage::recover_damaged

pub mod check;
mod check_all;
pub mod coverage;
mod damage;
mod damage_reach;
mod depth2;
#[doc(hidden)]
pub mod faults;
mod merged;
pub(crate) mod parallel;
mod plan;
mod reach;
mod report;

use std::time::Instant;

use crate::disk::ArmedFault;
use crate::seam::{Recording, Target};

pub use check::{AtSeed, CheckAt, CrashCheck};
pub use check_all::{check_all, Checked};
pub use damage_reach::DamageReach;
pub use merged::{is_explore_report, ExploreTotals, MergedFailure};
pub use plan::{plan, Plan, Recovery};
pub use reach::Reached;
pub use report::{
    DamageReport, Depth2Report, ExploreFailure, ExploreReport, FaultsReport, PhaseSeconds, WorkloadFaults,
    MAX_FAILURES_KEPT,
};

/// Workload operations by default: long enough for a few of the
/// workload's motifs (evict, change a cold row, rewrite; kill, time,
/// write), short enough to explore every index at depth 2 in seconds.
pub const DEFAULT_OPS: u64 = 100;

/// Directory-change subsets per crash index by default, when there are
/// too many to take them all.
pub const DEFAULT_MAX_DIR_SUBSETS: usize = 16;

/// How to explore (the command-line flags, see `cli.rs`); what to explore
/// — the target and its settings — is the [`Target`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExploreOptions {
    /// Bound on directory-change subsets per crash index (at least 1).
    pub max_dir_subsets: usize,
    /// Stop enumerating after this many crash states (in index order).
    pub max_states: Option<u64>,
    /// Worker threads (at least 1); the report does not depend on it.
    pub jobs: usize,
    /// Explore only this crash index.
    pub only_io: Option<u64>,
    /// With `only_io`: only this crash state of that index.
    pub only_state: Option<usize>,
    /// 1: crash once per state; 2: also crash each distinct recovered
    /// state's recovery and probe at every I/O index (`depth2.rs`).
    pub depth: u8,
    /// At depth 2: stop enumerating second crashes after this many states
    /// (in the order of the depth-1 recoveries, then index, then state).
    pub max_depth2_states: Option<u64>,
    /// At depth 2, with `only_io` and `only_state`: crash that state's
    /// recovery only at this index.
    pub then_io: Option<u64>,
    /// With `then_io`: only this crash state of that index.
    pub then_state: Option<usize>,
    /// Also recover every distinct state that passed once per I/O index
    /// of its recovery and probe, with that I/O failing (`faults.rs`).
    pub faults: bool,
    /// With `faults`: stop after this many faulted recoveries.
    pub max_fault_runs: Option<u64>,
    /// With `faults` (and `only_io`, `only_state`): fail only this I/O
    /// index of the recovery.
    pub fault_io: Option<u64>,
    /// With `faults`: run only the workload with its I/O at this index
    /// failing (no recovery is faulted).
    pub workload_fault_io: Option<u64>,
    /// With `faults`: fail only this way (EIO; a write also short, or out
    /// of space).
    pub fault_kind: Option<ArmedFault>,
    /// Print progress on stderr about once a second.
    pub progress: bool,
    /// Also damage every record of every durable image of the recording,
    /// recovering each the default way and at a point in time
    /// (`damage.rs`).
    pub damage: bool,
    /// With `damage`: stop after this many damaged recoveries.
    pub max_damage_states: Option<u64>,
    /// With `damage` and `only_io`: damage only this site of that index's
    /// durable image.
    pub damage_site: Option<usize>,
    /// Also enumerate one file's writes reordered (crash-state family 4);
    /// set from [`Target::explores_reorderings`], not a flag.
    pub reordered: bool,
    /// Explore the states where a torn sector holds garbage; set from
    /// [`Target::torn_garbage`], not a flag.
    pub garbage: bool,
    /// Enumerate every state the model allows at a crash index where it
    /// allows at most this many (crash-state family 6); `u64::MAX`:
    /// everywhere (`--exhaustive`).
    pub complete_up_to: u64,
}

/// Crash states per crash index up to which the explorers enumerate the
/// model's whole state set by default (`--complete-up-to`).
pub const DEFAULT_COMPLETE_UP_TO: u64 = 1024;

impl ExploreOptions {
    /// These options with what `target` decides of them (family 4, torn
    /// garbage) filled in: every enumeration of one exploration uses them.
    pub fn for_target<T: Target>(&self, target: &T) -> ExploreOptions {
        ExploreOptions { reordered: target.explores_reorderings(), garbage: target.torn_garbage(), ..self.clone() }
    }

    /// How to enumerate a snapshot's crash states.
    pub fn states(&self) -> crate::disk::StateOptions {
        crate::disk::StateOptions {
            max_dir_subsets: self.max_dir_subsets,
            reordered: self.reordered,
            garbage: self.garbage,
            complete_up_to: self.complete_up_to,
        }
    }
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            max_dir_subsets: DEFAULT_MAX_DIR_SUBSETS,
            max_states: None,
            jobs: 1,
            only_io: None,
            only_state: None,
            depth: 1,
            max_depth2_states: None,
            then_io: None,
            then_state: None,
            faults: false,
            max_fault_runs: None,
            fault_io: None,
            fault_kind: None,
            workload_fault_io: None,
            progress: false,
            damage: false,
            max_damage_states: None,
            damage_site: None,
            reordered: false,
            garbage: false,
            complete_up_to: DEFAULT_COMPLETE_UP_TO,
        }
    }
}

/// Explore `target`'s seed `seed` with a workload of `ops` operations (see
/// the module doc). `Err` is a usage error found once the workload is
/// recorded: a crash index or state number that does not exist.
pub fn explore<T: Target>(target: &T, seed: u64, ops: u64, options: &ExploreOptions) -> Result<ExploreReport, String> {
    let started = Instant::now();
    let workload = target.explore_workload(seed, ops);
    let options = &options.for_target(target);
    explore_workload(target, seed, ops, &workload, options, started)
}

/// [`explore`] with the workload given (`ops` is what the report says was
/// asked for); timings count from `started`.
#[doc(hidden)]
pub fn explore_workload<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    workload: &[T::Op],
    options: &ExploreOptions,
    started: Instant,
) -> Result<ExploreReport, String> {
    assert_checked(options);
    check_capabilities(target, options)?;
    let mut report = ExploreReport::new(target, seed, ops);
    report.complete_up_to = options.complete_up_to;
    let recording = target.record(seed, workload);
    report.recorded_ios = (recording.disk.snapshots.len() as u64).saturating_sub(1);
    report.counts.phase_sec.record = started.elapsed().as_secs_f64();
    if let Some(failure) = recording_failure(target, seed, ops, &recording, options) {
        report.add_failures(vec![failure]);
        report.counts.elapsed_sec = started.elapsed().as_secs_f64();
        return Ok(report);
    }

    let enumerate_started = Instant::now();
    let plan = plan::plan(&AtSeed { target, seed }, &recording.disk, &recording.contexts, options)?;
    report.counts.phase_sec.enumerate = enumerate_started.elapsed().as_secs_f64();
    count_plan(&mut report.counts, &plan);
    note_reached(&mut report, target.explore_declared(seed), &recording, &plan, options);

    let check_started = Instant::now();
    let checked = check_depth1(target, seed, ops, &recording, &plan, options);
    report.counts.phase_sec.check = check_started.elapsed().as_secs_f64();
    let (failures, outcomes): (Vec<Vec<ExploreFailure>>, Vec<Option<T::Recovered>>) =
        checked.into_iter().map(|checked| (checked.failures, checked.recovered)).unzip();
    let failed: Vec<bool> = failures.iter().map(|f| !f.is_empty()).collect();
    let mut failures: Vec<ExploreFailure> = failures.into_iter().flatten().collect();
    failures.sort_by_key(|failure| (failure.io_index, failure.state));
    report.add_failures(failures);
    report.counts.elapsed_sec = started.elapsed().as_secs_f64();

    if options.damage {
        let (damage, failures) = damage::explore(target, seed, ops, &recording, options)?;
        report.warnings.extend(damage_reach::warnings(&damage.reach, ops));
        report.damage = Some(damage);
        report.add_failures(failures);
    }
    if options.faults {
        let (faults, failures) = explore_faults(target, seed, ops, workload, &recording, &plan, &failed, options)?;
        report.faults = Some(faults);
        report.add_failures(failures);
    }
    if options.depth == 2 {
        let outcomes = outcomes.into_iter().map(|outcome| outcome.expect("kept at depth 2")).collect();
        let parents = depth2::Parents { recording: &recording, plan: &plan, outcomes, failed };
        let (depth2, failures) = depth2::explore(target, seed, ops, parents, options)?;
        report.depth2 = Some(depth2);
        report.add_failures(failures);
    }
    Ok(report)
}

/// The options' combinations the command line refuses: a caller that
/// passes one is a bug, not a user's mistake.
fn assert_checked(options: &ExploreOptions) {
    assert!(options.jobs >= 1 && options.max_dir_subsets >= 1, "checked by the caller");
    assert!(matches!(options.depth, 1 | 2), "checked by the caller");
    assert!(options.then_io.is_none() || (options.depth == 2 && options.only_state.is_some()), "checked by the caller");
    assert!(options.fault_io.is_none() || options.faults, "checked by the caller");
    assert!(options.damage_site.is_none() || (options.damage && options.only_io.is_some()), "checked by the caller");
}

/// What `options` ask of `target` that it cannot do: `--damage`,
/// `--faults` or `--depth 2` of a target without that capability.
fn check_capabilities<T: Target>(target: &T, options: &ExploreOptions) -> Result<(), String> {
    let name = target.name();
    if options.damage && target.damage().is_none() {
        return Err(format!("--damage: the {name} target does not describe its files' records"));
    }
    if options.faults && target.faults().is_none() {
        return Err(format!("--faults: the {name} target does not recover with an I/O failing"));
    }
    if options.depth == 2 && target.depth2().is_none() {
        return Err(format!("--depth 2: the {name} target does not record its recoveries"));
    }
    Ok(())
}

/// The recording run's own failure, if it failed before any explored
/// crash: named by the operation it was in (or the setup).
fn recording_failure<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    recording: &Recording<T::Context>,
    options: &ExploreOptions,
) -> Option<ExploreFailure> {
    let (check, detail) = recording.failure.as_ref()?;
    let what = recording.contexts.last().map_or("the setup".to_string(), |c| c.what.clone());
    Some(ExploreFailure {
        io_index: None,
        state: None,
        op: what,
        description: "the recording run itself, before any explored crash".to_string(),
        check: *check,
        detail: detail.clone(),
        then: None,
        fault_io: None,
        damage_site: None,
        fault_kind: None,
        repro: report::repro(target, seed, ops, options, None, None, None),
    })
}

/// What the plan counted, into the report's counts.
fn count_plan(counts: &mut report::Counts, plan: &plan::Plan) {
    counts.io_indices = plan.io_indices;
    counts.states = plan.states;
    counts.distinct_states = plan.recoveries.len() as u64;
    counts.checks = plan.checks;
    counts.capped = plan.capped;
    counts.examined = plan.examined.clone();
    counts.coverage = plan.coverage.clone();
}

/// What the workload reached of `declared`, and the warnings, into the
/// report (`reach.rs`): judged on the whole recording unless `--only-io`
/// or a cap left crash indices out.
fn note_reached<C>(
    report: &mut ExploreReport,
    declared: Vec<crate::seam::Declared>,
    recording: &Recording<C>,
    plan: &plan::Plan,
    options: &ExploreOptions,
) {
    let whole = options.only_io.is_none() && !plan.capped;
    report.reached = reach::reached(declared, recording, &plan.states_at);
    report.warnings = report.reached.iter().filter_map(|reached| reached.warning(report.ops, whole)).collect();
}

/// `--faults`: the recoveries of `plan` that passed (`failed` is by plan
/// recovery), each I/O failing in turn, then the recorded workload's own
/// I/Os — the one a repro names (`--fault-io` a recovery's,
/// `--workload-fault-io` the workload's), or all.
#[allow(clippy::too_many_arguments)]
fn explore_faults<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    workload: &[T::Op],
    recording: &Recording<T::Context>,
    plan: &plan::Plan,
    failed: &[bool],
    options: &ExploreOptions,
) -> Result<(FaultsReport, Vec<ExploreFailure>), String> {
    let (mut report, mut failures) = (FaultsReport::default(), Vec::new());
    if options.workload_fault_io.is_none() {
        (report, failures) = faults::explore(target, seed, ops, recording, plan, failed, options)?;
    }
    if options.fault_io.is_none() && (options.only_io.is_none() || options.workload_fault_io.is_some()) {
        let (in_workload, more) = faults::explore_in_workload(target, seed, ops, workload, recording, options)?;
        report.workload = in_workload;
        failures.extend(more);
    }
    Ok((report, failures))
}

/// Recover every distinct image of `plan` on `options.jobs` threads and
/// judge each in its contexts ([`check_all::check_all`]): per recovery, in
/// plan order, its failures (each at its first occurrence) and what it
/// recovered (kept only for depth 2, which judges it again in new
/// contexts: a dump per distinct state adds up).
fn check_depth1<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    recording: &Recording<T::Context>,
    plan: &plan::Plan,
    options: &ExploreOptions,
) -> Vec<Checked<ExploreFailure, T::Recovered>> {
    let keep = options.depth == 2;
    check_all::check_all(&AtSeed { target, seed }, &recording.contexts, plan, options, keep, |at, context, verdict| {
        let (check, detail) = verdict;
        let snapshot = recording.disk.before_io(at.io_index).expect("a recorded index");
        let state = &snapshot.crash_states_for(&options.states())[at.state];
        ExploreFailure {
            io_index: Some(at.io_index),
            state: Some(at.state),
            op: context.what.clone(),
            description: snapshot.describe(state),
            check,
            detail,
            then: None,
            fault_io: None,
            damage_site: None,
            fault_kind: None,
            repro: report::repro(target, seed, ops, options, Some(at.io_index), Some(at.state), None),
        }
    })
}
