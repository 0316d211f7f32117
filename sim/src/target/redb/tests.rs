//! The redb target end to end: seeds run clean and deterministically, the
//! planted bugs are caught, op lists shrink and replay, explore runs.

use super::*;
use crate::target::{ops_file, parse_ops_file, run_seed};

#[test]
fn a_few_seeds_pass_and_replay_bit_for_bit() {
    let target = RedbTarget { ops: Some(60), ..RedbTarget::default() };
    for seed in 0..6 {
        let a = run_seed(&target, seed, false);
        assert!(a.failure.is_none(), "seed {seed}: {:?}", a.failure);
        assert!(a.ops > 0);
        let b = run_seed(&target, seed, false);
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}");
    }
}

#[test]
fn ops_files_round_trip() {
    let target = RedbTarget {
        ops: Some(30),
        crash_mode: Some(CrashMode::Prefix),
        plant: Some(Plant::NoSync),
        harsh: HarshDisk { torn_garbage: true, read_bitflips: true },
    };
    let ops = target.generate(3);
    let text = ops_file(&target, 3, &ops, "a test");
    let (back, seed, parsed) = parse_ops_file(RedbTarget::default(), &text).unwrap();
    assert_eq!(
        RedbTarget { ops: target.ops, ..back },
        target,
        "every setting but the op count, which the list itself gives"
    );
    assert_eq!(seed, 3);
    assert_eq!(parsed, ops);
}

#[test]
fn explore_runs_clean_and_catches_a_plant() {
    use crate::explore::ExploreOptions;
    use crate::target::explore::explore;
    let options = ExploreOptions { jobs: 2, ..ExploreOptions::default() };
    let honest = RedbTarget::default();
    let report = explore(&honest, 1, 12, &options).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    assert!(report.states > report.distinct_states && report.distinct_states > 0, "{}", report.to_text());
    let again = explore(&honest, 1, 12, &ExploreOptions { jobs: 1, ..options.clone() }).unwrap();
    assert_eq!(again.without_timings(), report.without_timings(), "the report does not depend on --jobs");

    let planted = RedbTarget { plant: Some(Plant::NoSync), ..RedbTarget::default() };
    let report = explore(&planted, 1, 12, &options).unwrap();
    assert!(report.failures_total > 0, "{}", report.to_text());
    let first = &report.failures[0];
    assert!(first.repro.contains("--target redb") && first.repro.contains("--plant redb-no-sync"), "{}", first.repro);
}

#[test]
fn torn_garbage_states_are_explored_only_when_asked() {
    use crate::explore::ExploreOptions;
    use crate::target::explore::explore;
    let options = ExploreOptions::default();
    let mild = explore(&RedbTarget::default(), 1, 12, &options).unwrap();
    let harsh = RedbTarget { harsh: HarshDisk { torn_garbage: true, read_bitflips: false }, ..RedbTarget::default() };
    let harsh = explore(&harsh, 1, 12, &options).unwrap();
    assert!(harsh.states > mild.states, "{} vs {}", harsh.states, mild.states);
}
