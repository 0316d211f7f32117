//! Faults in exploration (`sim explore --faults`): a recovery whose own
//! I/O fails.
//!
//! Exploration's crash states come from a fault-free recording, and a
//! recovery runs on a fault-free disk: so the mistakes an engine makes
//! only when a read, a write or an fsync of its recovery fails — a log
//! that failed to read taken for an empty one, an fsync error retried and
//! ignored, a failed append acknowledged — were left to the random mode's
//! dice. Here every distinct recovered state that passed its checks is
//! recovered again once per I/O index of its recovery and probe, with the
//! I/O at that index failing with EIO (any kind: a read, write, fsync, map, open, rename, unlink, set_len, listing or sync_dir)
//! ([`Target::recover_with_fault`]). Only those indices are run: a
//! fault-free run of each recovery first notes where a fault can fire
//! (its reads, writes, fsyncs and maps, not its renames, lengths or
//! directory syncs), and since a recovery is deterministic, each faulted run's fault
//! then fires (the report counts the ones that did, as a check).
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

use std::time::Instant;

use super::parallel::map_in_order;
use super::plan::Plan;
use super::report::{self, ExploreFailure, FaultsReport};
use super::ExploreOptions;
use crate::systems::{Recording, Target};

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
    let cap = options.max_fault_runs.unwrap_or(u64::MAX);
    let mut runs: Vec<(usize, u64)> = Vec::new();
    let mut capped = false;
    'recoveries: for (pos, plain) in plain.iter().enumerate() {
        for &io_index in &plain.faultable_ios {
            if options.fault_io.is_some_and(|only| only != io_index) {
                continue;
            }
            if runs.len() as u64 >= cap {
                capped = true;
                break 'recoveries;
            }
            runs.push((pos, io_index));
        }
    }

    if let (Some(fault_io), true, Some(first)) = (options.fault_io, runs.is_empty(), plain.first()) {
        return Err(format!(
            "--fault-io {fault_io}: that recovery's reads, writes and fsyncs are at I/O indices {:?}",
            first.faultable_ios
        ));
    }
    let progress = options.progress.then_some("faults: recovering with one I/O failing");
    let verdicts = map_in_order(&runs, options.jobs, progress, |&(pos, io_index)| {
        let recovery = &plan.recoveries[passed[pos]];
        let faulted = target.recover_with_fault(seed, &image(passed[pos]), recovery.key, Some(io_index));
        if !faulted.fired {
            return None;
        }
        // The content first (held to the plain recovery's, reported at the
        // state's first check), then every context the image was judged in.
        let same = target.same_recovery(&faulted.recovered, &plain[pos].recovered).err();
        let same = same.and_then(|verdict| recovery.checks.first().map(|at| (*at, verdict)));
        let judged = recovery.checks.iter().map(|at| {
            let context = &recording.contexts[at.context].context;
            target.judge(&faulted.recovered, context).err().map(|verdict| (*at, verdict))
        });
        Some(same.into_iter().chain(judged.flatten()).collect::<Vec<_>>())
    });

    let mut failures = Vec::new();
    for (&(_, fault_io), verdict) in runs.iter().zip(&verdicts) {
        let Some(failed_checks) = verdict else { continue };
        for (at, (check, detail)) in failed_checks {
            let snapshot = recording.disk.before_io(at.io_index).expect("a recorded index");
            let state = &snapshot.crash_states_with(options.max_dir_subsets, options.reordered)[at.state];
            let (io, state_number) = (Some(at.io_index), Some(at.state));
            let repro = report::repro(target, seed, ops, options, io, state_number, None);
            failures.push(ExploreFailure {
                io_index: io,
                state: state_number,
                then: None,
                fault_io: Some(fault_io),
                damage_site: None,
                op: format!("{}; then its recovery, I/O {fault_io} failing", recording.contexts[at.context].what),
                description: format!(
                    "{}; then I/O {fault_io} of its recovery or probe failed (EIO)",
                    snapshot.describe(state)
                ),
                check: *check,
                detail: detail.clone(),
                repro: format!("{repro} --fault-io {fault_io}"),
            });
        }
    }
    let report = FaultsReport {
        recoveries: passed.len() as u64,
        runs: runs.len() as u64,
        injected: verdicts.iter().filter(|verdict| verdict.is_some()).count() as u64,
        capped,
        elapsed_sec: started.elapsed().as_secs_f64(),
    };
    Ok((report, failures))
}

#[cfg(test)]
mod tests {
    use engine::aof::FsyncPolicy;

    use super::super::{explore, ExploreOptions};
    use crate::config::Overrides;
    use crate::failure::Check;
    use crate::kit::KitSettings;
    use crate::planted::swallowed_fsync_error;
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
        assert!(first.repro.ends_with(&format!("--only-io {io} --only-state {state} --fault-io {fault_io}")));
        let only = ExploreOptions { only_io: Some(io), only_state: Some(state), fault_io: Some(fault_io), ..faults() };
        let again = explore(&planted, seed, 10, &only).unwrap();
        let counts = again.faults.clone().expect("--faults reports");
        assert_eq!((counts.runs, counts.injected), (1, 1));
        assert_eq!(again.failures, vec![first]);
        let not_an_io = ExploreOptions { fault_io: Some(1 << 40), ..only };
        assert!(explore(&planted, seed, 10, &not_an_io).unwrap_err().contains("--fault-io"));
        let capped = explore(&planted, seed, 10, &ExploreOptions { max_fault_runs: Some(3), ..faults() }).unwrap();
        assert!(capped.faults.is_some_and(|f| f.capped && f.runs == 3));
    }

    /// Every kit target injects recovery faults (the kit supplies it):
    /// redb's recoveries survive one failing I/O each.
    #[test]
    fn a_kit_target_survives_one_failing_io_in_every_recovery() {
        let report = explore(&redb_target(KitSettings::default()), 1, 12, &faults()).unwrap();
        assert_eq!(report.failures_total, 0, "{}", report.to_text());
        let counts = report.faults.clone().expect("--faults reports");
        assert!(counts.injected > 0 && counts.runs == counts.injected, "{counts:?}");
    }
}
