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
//! I/O at that index failing ([`Target::recover_with_fault`]): with EIO,
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
//! ([`explore_in_workload`], [`Target::run_with_fault`]): it runs once per
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
//! image's recovery without the fault did ([`Target::same_recovery`]; the
//! contexts alone would let a lax fsync policy excuse writes a read error
//! dropped). A store the fault poisoned is killed (the page cache
//! survives), reopened, then loses the power — the random mode's two
//! reopens of a poisoned store, one after the other — and each recovery
//! must bring back what it acknowledged.
//!
//! The runs are taken in the order of the plan's recoveries, then I/O
//! index, and merged in that order, so the report is the same for every
//! `--jobs`; `--max-fault-runs` cuts that order at a fixed point.

use std::collections::BTreeMap;
use std::time::Instant;

use super::parallel::map_in_order;
use super::plan::{CheckAt, Plan, Recovery};
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
        target.recover_with_fault(seed, &image(recovery), plan.recoveries[recovery].key, None)
    });
    let (runs, capped) = plan_runs(&plain, options);

    if let (Some(fault_io), true, Some(first)) = (options.fault_io, runs.is_empty(), plain.first()) {
        return Err(format!(
            "--fault-io {fault_io}: that recovery's reads, writes and fsyncs are at I/O indices {:?}",
            first.faultable_ios
        ));
    }
    let progress = options.progress.then_some("faults: recovering with one I/O failing");
    let verdicts = map_in_order(&runs, options.jobs, progress, |&(pos, io_index, kind)| {
        let recovery = &plan.recoveries[passed[pos]];
        let faulted = target.recover_with_fault(seed, &image(passed[pos]), recovery.key, Some((io_index, kind)));
        faulted.fired.then(|| failed_checks(target, recording, recovery, &faulted.recovered, &plain[pos].recovered))
    });

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
    let same = target.same_recovery(faulted, plain).err();
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
/// [`Target::run_with_fault`]): the counts, and the failures in order.
pub(super) fn explore_in_workload<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    workload: &[T::Op],
    recording: &Recording<T::Context>,
    options: &ExploreOptions,
) -> Result<(WorkloadFaults, Vec<ExploreFailure>), String> {
    let started = Instant::now();
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
    let results = map_in_order(&runs, options.jobs, progress, |&fault| target.run_with_fault(seed, workload, fault));
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
pub(super) fn fault_kind_flag(kind: ArmedFault) -> String {
    match kind {
        ArmedFault::Eio => String::new(),
        kind => format!(" --fault-kind {}", kind.name()),
    }
}

#[cfg(test)]
mod tests {
    use engine::aof::FsyncPolicy;

    use super::super::{explore, ExploreOptions};
    use crate::config::Overrides;
    use crate::failure::Check;
    #[cfg(feature = "redb")]
    use crate::kit::KitSettings;
    use crate::planted::swallowed_fsync_error;
    #[cfg(feature = "redb")]
    use crate::systems::redb_target;
    use crate::systems::segsim::SegsimTarget;

    fn faults() -> ExploreOptions {
        ExploreOptions { faults: true, ..ExploreOptions::default() }
    }

    fn segsim(fsync: FsyncPolicy) -> SegsimTarget {
        SegsimTarget::new(Overrides { fsync: Some(fsync), ..Overrides::default() })
    }

    /// Every recovery of seed 8's and seed 10's short workloads, each
    /// I/O of it failing in turn: the engine survives
    /// all, and the report is the same for any number of jobs.
    #[test]
    fn the_engine_survives_one_failing_io_in_every_recovery() {
        for (seed, fsync) in [(8, FsyncPolicy::Always), (10, FsyncPolicy::EverySec)] {
            let report = explore(&segsim(fsync), seed, 20, &faults()).unwrap();
            assert_eq!(report.failures_total, 0, "seed {seed}:\n{}", report.to_text());
            let counts = report.faults.clone().expect("--faults reports");
            assert_eq!(counts.recoveries, report.counts.distinct_states, "every recovery passed at depth 1");
            assert!(counts.injected > counts.recoveries && counts.runs == counts.injected, "{counts:?}");
            assert!(!counts.capped);
            let two = explore(&segsim(fsync), seed, 20, &ExploreOptions { jobs: 2, ..faults() }).unwrap();
            assert_eq!(two.without_timings(), report.without_timings());
        }
    }

    /// A disk layer that forgets failed fsyncs is the honest disk until
    /// an fsync fails: invisible to plain exploration, caught with
    /// `--faults`, and the failure's repro fails exactly that I/O again.
    #[test]
    fn a_swallowed_fsync_error_is_caught_only_with_faults_and_its_repro_repeats_it() {
        let planted = SegsimTarget { wrap: swallowed_fsync_error, ..segsim(FsyncPolicy::Always) };
        let seed = 8;
        assert_eq!(explore(&planted, seed, 10, &ExploreOptions::default()).unwrap().failures_total, 0);
        let report = explore(&planted, seed, 10, &faults()).unwrap();
        assert!(report.failures_total > 0, "{}", report.to_text());
        let first = report.failures[0].clone();
        assert!(matches!(first.check, Check::Probe | Check::Durability), "{first:?}");
        let (Some(io), Some(state), Some(fault_io)) = (first.io_index, first.state, first.fault_io) else {
            unreachable!("a faulted recovery's failure")
        };
        let kind = first.fault_kind.expect("a faulted recovery's failure");
        let flag = super::fault_kind_flag(kind);
        assert!(first.repro.ends_with(&format!("--only-io {io} --only-state {state} --fault-io {fault_io}{flag}")));
        let only = ExploreOptions {
            only_io: Some(io),
            only_state: Some(state),
            fault_io: Some(fault_io),
            fault_kind: Some(kind),
            ..faults()
        };
        let again = explore(&planted, seed, 10, &only).unwrap();
        let counts = again.faults.clone().expect("--faults reports");
        assert_eq!((counts.runs, counts.injected), (1, 1));
        assert_eq!(again.failures, vec![first]);
        let not_an_io = ExploreOptions { fault_io: Some(1 << 40), ..only };
        assert!(explore(&planted, seed, 10, &not_an_io).unwrap_err().contains("--fault-io"));
        let capped = explore(&planted, seed, 10, &ExploreOptions { max_fault_runs: Some(3), ..faults() }).unwrap();
        assert!(capped.faults.is_some_and(|f| f.capped && f.runs == 3));
    }

    /// Every kit target injects recovery faults and workload faults (the
    /// kit supplies both): redb survives one failing I/O in each recovery
    /// and in each run of its workload.
    #[cfg(feature = "redb")]
    #[test]
    fn a_kit_target_survives_one_failing_io_in_every_recovery() {
        let report = explore(&redb_target(KitSettings::default()), 1, 12, &faults()).unwrap();
        assert_eq!(report.failures_total, 0, "{}", report.to_text());
        let counts = report.faults.clone().expect("--faults reports");
        assert!(counts.injected > 0 && counts.runs == counts.injected, "{counts:?}");
        assert!(counts.workload.runs > 0 && counts.workload.injected == counts.workload.runs, "{counts:?}");
    }

    /// `--faults` in the recorded workload itself: every I/O of seed 0's
    /// and seed 8's short workloads fails in a run of its own (a write
    /// also short, then out of space), the armed fault fires in each, and
    /// the engine survives every one; so does every recovery faulted each
    /// way.
    #[test]
    fn the_engine_survives_one_failing_io_of_its_own_workload_each_way() {
        for (seed, fsync) in [(0, FsyncPolicy::EverySec), (8, FsyncPolicy::Always)] {
            let report = explore(&segsim(fsync), seed, 20, &faults()).unwrap();
            assert_eq!(report.failures_total, 0, "seed {seed}:\n{}", report.to_text());
            let counts = report.faults.expect("--faults reports");
            assert!(counts.workload.runs > 20 && counts.workload.injected == counts.workload.runs, "{counts:?}");
            let by_kind = |kind: &str| counts.runs_by_kind.get(kind).copied().unwrap_or(0);
            assert!(by_kind("short-write") > 0 && by_kind("short-write") == by_kind("enospc"), "{counts:?}");
            assert!(by_kind("eio") > by_kind("enospc"), "every I/O fails with EIO, only writes the other ways");
        }
    }

    /// With the `canaries` feature: a failed directory fsync or a failed
    /// rename ignored lives in seal and rewrite. The recorded workload
    /// runs both, so faulting its own I/Os catches each canary, and the
    /// first failure's repro fails that I/O again. A recovery's probe
    /// evicts (and so seals) too, so `--faults` may also catch the
    /// ignored directory fsync there — only in the probe, never in a
    /// recovery that does not seal.
    #[cfg(feature = "canaries")]
    #[test]
    fn an_ignored_directory_fsync_or_rename_error_is_caught_by_workload_faults() {
        use super::explore_in_workload;
        use crate::canary::Canary;
        use crate::failure::Check;
        use crate::seam::Target;
        for name in ["dir-sync-error-ignored", "rename-error-ignored"] {
            let canary = Some(Canary::parse(name).expect("a canary of the engine"));
            let planted = SegsimTarget::new(Overrides { canary, ..Overrides::default() });
            let workload = planted.explore_workload(0, 100);
            let recording = planted.record(0, &workload);
            let (counts, in_workload) =
                explore_in_workload(&planted, 0, 100, &workload, &recording, &faults()).unwrap();
            assert!(counts.runs > 0 && counts.injected == counts.runs, "{name}: {counts:?}");
            let first = in_workload.first().unwrap_or_else(|| panic!("{name}: no workload fault caught it"));
            assert!(in_workload.iter().all(|f| f.io_index.is_none() && f.fault_io.is_some()), "{name}");
            let (fault_io, kind) = (first.fault_io.expect("checked"), first.fault_kind.expect("a fault's"));
            assert!(first.repro.contains(&format!("--workload-fault-io {fault_io}")), "{}", first.repro);
            let only = ExploreOptions { workload_fault_io: Some(fault_io), fault_kind: Some(kind), ..faults() };
            let again = explore(&planted, 0, 100, &only).unwrap();
            assert_eq!(again.failures, vec![first.clone()], "{name}");
            let all = explore(&planted, 0, 100, &faults()).unwrap();
            let mut in_recovery = all.failures.iter().filter(|f| f.io_index.is_some());
            assert!(in_recovery.all(|f| f.check == Check::Probe), "{name}: {}", all.to_text());
        }
    }
}
