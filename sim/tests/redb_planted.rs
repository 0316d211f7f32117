//! The redb target's checks must be able to fail. Plant a bug under redb —
//! a backend whose `sync_data` does nothing, or one that issues the last
//! write before each sync after it — and the random mode must report a
//! failure with a repro within a few seeds, the shrinker must keep it while
//! cutting the list down, and the same seeds must pass on the honest disk.

use sim::shrink::shrink;
use sim::target::redb::{Plant, RedbTarget};
use sim::target::{run_seed, Target};

/// Seeds tried before giving up on catching a plant.
const SEEDS: u64 = 50;

fn first_caught(target: &RedbTarget) -> Option<(u64, sim::failure::Failure)> {
    (0..SEEDS).find_map(|seed| run_seed(target, seed, false).failure.map(|failure| (seed, failure)))
}

#[test]
fn a_backend_that_skips_sync_data_is_caught_and_shrunk() {
    let planted = RedbTarget { plant: Some(Plant::NoSync), ..RedbTarget::default() };
    let (seed, failure) = first_caught(&planted).expect("50 seeds never noticed that sync_data does nothing");
    assert_eq!(failure.check, sim::failure::Check::Durability, "{}", failure.detail);
    assert!(failure.repro.contains(&format!("--seed {seed}")) && failure.repro.contains("--plant redb-no-sync"));
    eprintln!("redb-no-sync caught at seed {seed}: {}", failure.detail.lines().next().unwrap_or(""));

    let ops = planted.generate(seed);
    let (minimal, runs) = shrink(&planted, seed, ops.clone(), failure.check);
    assert!(minimal.len() < ops.len() / 4, "shrunk only from {} to {} ops", ops.len(), minimal.len());
    let again = planted.run(seed, &minimal, false);
    assert_eq!(again.failure.map(|f| f.check), Some(failure.check));
    eprintln!("shrunk {} ops to {} in {runs} runs", ops.len(), minimal.len());
}

#[test]
fn a_backend_that_writes_after_the_sync_is_caught() {
    let planted = RedbTarget { plant: Some(Plant::LateWrite), ..RedbTarget::default() };
    let (seed, failure) = first_caught(&planted).expect("50 seeds never noticed writes landing after the sync");
    assert_eq!(failure.check, sim::failure::Check::Durability, "{}", failure.detail);
    eprintln!("redb-late-write caught at seed {seed}");
}

#[test]
fn the_same_seeds_pass_on_the_honest_disk() {
    let honest = RedbTarget::default();
    for seed in 0..20 {
        let outcome = run_seed(&honest, seed, false);
        assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
    }
}
