//! The simulator's rule for a process kill, proven both ways on a tiny
//! engine written for the kit's tests (`test_engine.rs`): its `sync` commits rewrite a file aside
//! and rename it in (durable), its `lazy` commits stay in its memory until
//! the next `sync` commit or close (`Eventual`: a power loss may take
//! them, in order). Declared as a level whose commits survive a kill —
//! [`Level::new`]'s default for `Eventual` — the engine is wrong, and the
//! kill rule must catch it; declared honestly, it must pass.

use super::test_engine::Buffered;
use super::workload::TableRef;
use super::{Kit, KitOp, KitSettings, PlannedKitOp, ONE_TABLE};
use simulator::disk::CrashPoint;
use simulator::seam::{run_seed, Target};
use simulator::seeds;

/// A lazy commit, then a clean restart killed at its first I/O: the
/// engine's memory (the lazy commit) is gone, its file holds the state
/// before it. Run for the first few seeds whose coin makes that crash
/// point a kill; the failures' details.
fn killed_after_a_lazy_commit(declares_lazy_survives_kill: bool) -> Vec<String> {
    let kit = Kit::new(Buffered { declares_lazy_survives_kill, ..Buffered::HONEST }, KitSettings::default());
    let table = TableRef { index: 0, spec: ONE_TABLE[0] };
    let put = KitOp::Put { table, key: b"k1".to_vec(), value: b"v1".to_vec() };
    let ops = |restart_at: u64| {
        let planned = |index, op, crash| PlannedKitOp { index, op, crash };
        vec![
            planned(restart_at - 2, put.clone(), None),
            planned(restart_at - 1, KitOp::Commit { level: 1, name: "lazy" }, None),
            planned(restart_at, KitOp::Restart, Some(CrashPoint::AfterIos(0))),
        ]
    };
    let killed = (0..40).flat_map(|seed| (2..40).map(move |index| (seed, index)));
    let killed = killed.filter(|&(seed, index)| seeds::kill_in_op(seed, index)).take(20);
    let outcomes = killed.map(|(seed, index)| kit.run(seed, &ops(index), false));
    outcomes
        .filter_map(|outcome| outcome.failure)
        .map(|failure| format!("{}: {}", failure.check, failure.detail))
        .collect()
}

#[test]
fn a_lazy_commit_held_in_memory_is_caught_at_a_kill_unless_declared() {
    let honest = killed_after_a_lazy_commit(false);
    assert!(honest.is_empty(), "declared honestly, the engine passes: {honest:?}");
    let wrong = killed_after_a_lazy_commit(true);
    assert!(!wrong.is_empty(), "a lazy commit a kill took must fail the kill rule");
    assert!(wrong.iter().all(|detail| detail.contains("after a process kill")), "{wrong:?}");
}

#[test]
fn a_sweep_of_the_honest_declaration_passes() {
    let kit = Kit::new(Buffered::HONEST, KitSettings::default());
    for seed in 0..200 {
        let outcome = run_seed(&kit, seed, false);
        assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
    }
}
