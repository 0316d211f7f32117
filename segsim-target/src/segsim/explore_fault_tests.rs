//! Exploration with faults end to end (`simulator::explore::faults`), on
//! the segsim target (a kit target's: `adapters`' redb tests): the engine survives one failing
//! I/O in every recovery and in its own workload; a swallowed fsync error
//! is caught only with faults, and its repro repeats it.

use engine::aof::FsyncPolicy;

use crate::config::Overrides;
use crate::planted::swallowed_fsync_error;
use crate::segsim::SegsimTarget;
use simulator::explore::faults::fault_kind_flag;
use simulator::explore::{explore, ExploreOptions};
use simulator::failure::Check;

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
    let flag = fault_kind_flag(kind);
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
    use crate::canary::Canary;
    use simulator::explore::faults::explore_in_workload;
    use simulator::failure::Check;
    use simulator::seam::Target;
    for name in ["dir-sync-error-ignored", "rename-error-ignored"] {
        let canary = Some(Canary::parse(name).expect("a canary of the engine"));
        let planted = SegsimTarget::new(Overrides { canary, ..Overrides::default() });
        let workload = planted.explore_workload(0, 100);
        let recording = planted.record(0, &workload);
        let (counts, in_workload) = explore_in_workload(&planted, 0, 100, &workload, &recording, &faults()).unwrap();
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
