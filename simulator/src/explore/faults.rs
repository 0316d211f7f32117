//! Faults in exploration (`sim explore --faults`): a recovery whose own
//! I/O fails, and the recorded workload with one of its I/Os failing.
//!
//! Exploration's crash states come from a fault-free recording, and a
//! recovery runs on a fault-free disk: so the mistakes an engine makes
//! only when a read, a write or an fsync of its recovery fails — a log
//! that failed to read taken for an empty one, an fsync error retried and
//! ignored, a failed append acknowledged — were left to the random mode's
//! dice. Here every distinct recovered state that passed its checks is
//! recovered again once per I/O index of its recovery and probe, with the
//! I/O at that index failing ([`ExploreFaults::recover_with_fault`]): with EIO,
//! whatever its kind (a read, write, fsync, map, open, rename, unlink,
//! set_len, listing or sync_dir), and a write also after a short write
//! (its longest strict sector-aligned prefix written) and with ENOSPC
//! (nothing written). Only those indices are run: a fault-free run of each
//! recovery first notes where a fault can fire (every I/O but the
//! harness's observations), and since a recovery is deterministic, each
//! faulted run's fault then fires (the report counts the ones that did,
//! as a check).
//!
//! The recorded workload itself is faulted the same way
//! ([`explore_in_workload`], [`ExploreFaults::run_with_fault`]): it runs once per
//! I/O of its recording where the random mode's faults could fire (not
//! where the harness turned them off), each way, that I/O failing, and
//! every check of the run applies — a failed write never acknowledged, a
//! poisoned store killed, reopened and then powered off with each recovery
//! checked, no persistence hazard left behind, a clean restart at the end
//! bringing back exactly the model. The mistakes that live in the
//! workload's own paths (seal, rewrite, compaction) after a failed
//! rename or directory fsync are found there.
//!
//! What a faulted recovery is held to: what the plain one is, in the very
//! contexts the image was judged in, and more — the fault is transient,
//! so the store may fail the open it hit (not as corruption), but the
//! next open must succeed and bring back exactly the content the same
//! image's recovery without the fault did ([`ExploreFaults::same_recovery`]; the
//! contexts alone would let a lax fsync policy excuse writes a read error
//! dropped). A store the fault poisoned is killed (the page cache
//! survives), reopened, then loses the power — the random mode's two
//! reopens of a poisoned store, one after the other — and each recovery
//! must bring back what it acknowledged.
//!
//! The runs are taken in the order of the plan's recoveries, then I/O
//! index, and merged in that order, so the report is the same for every
//! `--jobs`; `--max-fault-runs` cuts that order at a fixed point.
//!
//! [`ExploreFaults::recover_with_fault`]: crate::seam::ExploreFaults::recover_with_fault
//! [`ExploreFaults::run_with_fault`]: crate::seam::ExploreFaults::run_with_fault
//! [`ExploreFaults::same_recovery`]: crate::seam::ExploreFaults::same_recovery

use std::collections::BTreeMap;
use std::time::Instant;

use super::check::CheckAt;
use super::parallel::map_in_order;
use super::plan::{Plan, Recovery};
use super::report::{self, ExploreFailure, FaultsReport, WorkloadFaults};
use super::ExploreOptions;
use crate::disk::ArmedFault;
use crate::failure::Check;
use crate::seam::{FaultedRecovery, Recording, Target};

/// Explore `--faults` over the recoveries of `plan` that passed (`failed`
/// is by plan recovery): the counts, and the failures in merge order.
/// `Err` names a `--fault-io` that is no I/O of the
/// recovery.
pub(super) fn explore<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    recording: &Recording<T::Context>,
    plan: &Plan,
    failed: &[bool],
    options: &ExploreOptions,
) -> Result<(FaultsReport, Vec<ExploreFailure>), String> {
    let started = Instant::now();
    let faulting = target.faults().expect("checked by the caller");
    assert_eq!(failed.len(), plan.recoveries.len());
    let passed: Vec<usize> = (0..plan.recoveries.len()).filter(|&recovery| !failed[recovery]).collect();
    let image = |recovery: usize| {
        let recovery = &plan.recoveries[recovery];
        recovery.snapshot.image(&recovery.crash_state)
    };

    // Each recovery run once fault-free, noting the I/O indices where a
    // fault can fire (its reads, writes and fsyncs): the indices to fail.
    let progress = options.progress.then_some("faults: finding the recoveries' reads, writes and fsyncs");
    let plain = map_in_order(&passed, options.jobs, progress, |&recovery| {
        faulting.recover_with_fault(seed, &image(recovery), plan.recoveries[recovery].key, None)
    });
    let (runs, capped) = plan_runs(&plain, options);

    if let (Some(fault_io), true, Some(first)) = (options.fault_io, runs.is_empty(), plain.first()) {
        return Err(format!(
            "--fault-io {fault_io}: that recovery's reads, writes and fsyncs are at I/O indices {:?}",
            first.faultable_ios
        ));
    }
    // A recovery's runs are consecutive: each worker takes all of one
    // recovery's, building its image once for all of them (a recovery
    // fails one I/O of ~100 in turn), and the merge keeps run order.
    let progress = options.progress.then_some("faults: recoveries, each with one I/O failing in turn");
    let per_recovery: Vec<&[(usize, u64, ArmedFault)]> = runs.chunk_by(|a, b| a.0 == b.0).collect();
    let verdicts = map_in_order(&per_recovery, options.jobs, progress, |runs_of_one| {
        let pos = runs_of_one[0].0;
        let (recovery, image) = (&plan.recoveries[passed[pos]], image(passed[pos]));
        let verdict = |&(_, io_index, kind): &(usize, u64, ArmedFault)| {
            let faulted = faulting.recover_with_fault(seed, &image, recovery.key, Some((io_index, kind)));
            faulted.fired.then(|| failed_checks(target, recording, recovery, &faulted.recovered, &plain[pos].recovered))
        };
        runs_of_one.iter().map(verdict).collect::<Vec<_>>()
    });
    let verdicts: Vec<_> = verdicts.into_iter().flatten().collect();
    debug_assert_eq!(verdicts.len(), runs.len(), "one verdict per run, in run order");

    let mut failures = Vec::new();
    for (&(_, fault_io, kind), verdict) in runs.iter().zip(&verdicts) {
        let Some(failed_checks) = verdict else { continue };
        for (at, (check, detail)) in failed_checks {
            let failed = (*check, detail.clone());
            failures.push(recovery_failure(target, seed, ops, recording, options, at, (fault_io, kind), failed));
        }
    }
    let report = FaultsReport {
        recoveries: passed.len() as u64,
        runs: runs.len() as u64,
        runs_by_kind: runs_by_kind(&runs),
        injected: verdicts.iter().filter(|verdict| verdict.is_some()).count() as u64,
        capped,
        elapsed_sec: started.elapsed().as_secs_f64(),
        workload: WorkloadFaults::default(),
    };
    Ok((report, failures))
}

/// The checks a recovery with a fault that fired failed: its content
/// first (held to the `plain` recovery's, reported at the state's first
/// check), then every context the image was judged in.
fn failed_checks<T: Target>(
    target: &T,
    recording: &Recording<T::Context>,
    recovery: &Recovery,
    faulted: &T::Recovered,
    plain: &T::Recovered,
) -> Vec<(CheckAt, (Check, String))> {
    let same = target.faults().expect("checked by the caller").same_recovery(faulted, plain).err();
    let same = same.and_then(|verdict| recovery.checks.first().map(|at| (*at, verdict)));
    let judged = recovery.checks.iter().map(|at| {
        let context = &recording.contexts[at.context].context;
        target.judge(faulted, context).err().map(|verdict| (*at, verdict))
    });
    same.into_iter().chain(judged.flatten()).collect()
}

/// How many runs fail their I/O each way (`eio`, `short-write`, `enospc`).
fn runs_by_kind(runs: &[(usize, u64, ArmedFault)]) -> BTreeMap<&'static str, u64> {
    let mut by_kind = BTreeMap::new();
    for &(_, _, kind) in runs {
        *by_kind.entry(kind.name()).or_insert(0) += 1;
    }
    by_kind
}

/// The failure `(check, detail)` of the recovery of the crash state `at`
/// with the I/O `fault.0` of it failing as `fault.1` says, and its repro.
#[allow(clippy::too_many_arguments)]
fn recovery_failure<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    recording: &Recording<T::Context>,
    options: &ExploreOptions,
    at: &CheckAt,
    (fault_io, kind): (u64, ArmedFault),
    (check, detail): (Check, String),
) -> ExploreFailure {
    let snapshot = recording.disk.before_io(at.io_index).expect("a recorded index");
    let state = &snapshot.crash_states_for(&options.states())[at.state];
    let (io, state_number) = (Some(at.io_index), Some(at.state));
    let repro = report::repro(target, seed, ops, options, io, state_number, None);
    ExploreFailure {
        io_index: io,
        state: state_number,
        then: None,
        fault_io: Some(fault_io),
        fault_kind: Some(kind),
        damage_site: None,
        op: format!("{}; then its recovery, I/O {fault_io} failing", recording.contexts[at.context].what),
        description: format!(
            "{}; then I/O {fault_io} of its recovery or probe failed ({})",
            snapshot.describe(state),
            fault_words(kind)
        ),
        check,
        detail,
        repro: format!("{repro} --fault-io {fault_io}{}", fault_kind_flag(kind)),
    }
}

/// `--faults` in the recorded workload itself: the workload run once per
/// I/O of its recording (EIO; a write also short, then out of space), that
/// I/O failing, every check of the run applying (the target's
/// [`ExploreFaults::run_with_fault`](crate::seam::ExploreFaults::run_with_fault)):
/// the counts, and the failures in order.
pub fn explore_in_workload<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    workload: &[T::Op],
    recording: &Recording<T::Context>,
    options: &ExploreOptions,
) -> Result<(WorkloadFaults, Vec<ExploreFailure>), String> {
    let started = Instant::now();
    let Some(faulting) = target.faults() else {
        return Err(format!("--faults: the {} target does not run with an I/O failing", target.name()));
    };
    let writes = &recording.faultable_writes;
    let mut runs = Vec::new();
    for &io_index in &recording.faultable_ios {
        if options.workload_fault_io.is_some_and(|only| only != io_index) {
            continue;
        }
        let write = writes.binary_search(&io_index).is_ok();
        let kinds = ArmedFault::ALL.into_iter().filter(|kind| write || !kind.writes_only());
        runs.extend(
            kinds.filter(|kind| options.fault_kind.is_none_or(|only| only == *kind)).map(|kind| (io_index, kind)),
        );
    }
    if let (Some(only), true) = (options.workload_fault_io, runs.is_empty()) {
        return Err(format!("--workload-fault-io {only}: no I/O of the recorded workload fails there that way"));
    }
    let capped = options.max_fault_runs.is_some_and(|max| runs.len() as u64 > max);
    runs.truncate(usize::try_from(options.max_fault_runs.unwrap_or(u64::MAX)).unwrap_or(usize::MAX));
    let progress = options.progress.then_some("faults: the workload with one of its I/Os failing");
    let results = map_in_order(&runs, options.jobs, progress, |&fault| faulting.run_with_fault(seed, workload, fault));
    let mut failures = Vec::new();
    for (&(io_index, kind), run) in runs.iter().zip(&results) {
        let Some((check, detail)) = &run.failure else { continue };
        let what = &recording.contexts[recording.context_at(io_index)].what;
        failures.push(ExploreFailure {
            io_index: None,
            state: None,
            then: None,
            fault_io: Some(io_index),
            fault_kind: Some(kind),
            damage_site: None,
            op: what.clone(),
            description: format!("the recorded workload, its own I/O {io_index} failing ({})", fault_words(kind)),
            check: *check,
            detail: detail.clone(),
            repro: target.explore_repro(
                seed,
                ops,
                &format!(" --workload-fault-io {io_index}{}", fault_kind_flag(kind)),
            ),
        });
    }
    let counts = WorkloadFaults {
        runs: runs.len() as u64,
        injected: results.iter().filter(|run| run.fired).count() as u64,
        capped,
        elapsed_sec: started.elapsed().as_secs_f64(),
    };
    Ok((counts, failures))
}

/// Every faulted run in merge order — per recovery, per I/O index, EIO
/// and then, for a write, a short write and ENOSPC — filtered by
/// `--fault-io` and `--fault-kind`, cut at `--max-fault-runs`; and whether
/// the cut took any.
fn plan_runs<R>(plain: &[FaultedRecovery<R>], options: &ExploreOptions) -> (Vec<(usize, u64, ArmedFault)>, bool) {
    let cap = options.max_fault_runs.unwrap_or(u64::MAX);
    let mut runs = Vec::new();
    for (pos, plain) in plain.iter().enumerate() {
        for &io_index in &plain.faultable_ios {
            if options.fault_io.is_some_and(|only| only != io_index) {
                continue;
            }
            let write = plain.faultable_writes.binary_search(&io_index).is_ok();
            for kind in ArmedFault::ALL.into_iter().filter(|kind| write || !kind.writes_only()) {
                if options.fault_kind.is_some_and(|only| only != kind) {
                    continue;
                }
                if runs.len() as u64 >= cap {
                    return (runs, true);
                }
                runs.push((pos, io_index, kind));
            }
        }
    }
    (runs, false)
}

/// How the armed fault failed its I/O, for a failure's description.
pub(super) fn fault_words(kind: ArmedFault) -> &'static str {
    match kind {
        ArmedFault::Eio => "EIO",
        ArmedFault::ShortWrite => "EIO after a short write",
        ArmedFault::NoSpace => "ENOSPC",
    }
}

/// The repro's `--fault-kind`, empty for the default (EIO).
pub fn fault_kind_flag(kind: ArmedFault) -> String {
    match kind {
        ArmedFault::Eio => String::new(),
        kind => format!(" --fault-kind {}", kind.name()),
    }
}
