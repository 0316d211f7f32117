//! Every target's checks must be able to fail. Plant a bug under the
//! system under test — under the segsim engine a Vfs whose file fsync
//! silently does nothing; under redb a backend whose `sync_data` does
//! nothing, or one that issues the last write before each sync after it —
//! and the random mode must report a failure with a repro within a few
//! seeds, the shrinker must keep it while cutting the list down, and the
//! same seeds must pass on the honest disk.

use engine::aof::FsyncPolicy;
use sim::config::Overrides;
use sim::failure::{Check, Failure};
use sim::kit::{Kit, KitSettings};
use sim::planted::skip_fsync;
use sim::seam::{run_seed, Target};
use sim::shrink::shrink;
use sim::systems::redb::RedbAdapter;
use sim::systems::redb_target;
use sim::systems::segsim::SegsimTarget;

/// The first of `seeds` seeds whose run fails, and its failure.
fn first_caught<T: Target>(target: &T, seeds: u64) -> Option<(u64, Failure)> {
    (0..seeds).find_map(|seed| run_seed(target, seed, false).failure.map(|failure| (seed, failure)))
}

/// `seed`'s list shrinks to under a quarter of its length, still failing
/// `check`.
fn shrinks<T: Target>(target: &T, seed: u64, check: Check) {
    let ops = target.generate(seed);
    let (minimal, runs) = shrink(target, seed, ops.clone(), check);
    assert!(minimal.len() < ops.len() / 4, "shrunk only from {} to {} ops", ops.len(), minimal.len());
    let again = target.run(seed, &minimal, false);
    assert_eq!(again.failure.map(|f| f.check), Some(check));
    eprintln!("{}: shrunk {} ops to {} in {runs} runs", target.name(), ops.len(), minimal.len());
}

/// The segsim store, every write fsynced.
fn always() -> SegsimTarget {
    SegsimTarget::new(Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() })
}

#[test]
fn a_vfs_that_skips_fsync_is_caught_with_a_repro_and_shrunk() {
    let planted = SegsimTarget { wrap: skip_fsync, ..always() };
    let (seed, failure) = first_caught(&planted, 300).expect("300 seeds never noticed that fsync does nothing");
    assert!(failure.repro.contains(&format!("--seed {seed}")), "{}", failure.repro);
    assert!(failure.repro.contains("--fsync always"), "{}", failure.repro);
    assert!(!failure.detail.is_empty());
    eprintln!("caught at seed {seed}: check '{}'", failure.check);
    shrinks(&planted, seed, failure.check);
}

/// redb with `plant` under it, which does `what`: caught within 50 seeds
/// as a lost durable commit. The planted target, the seed and the failure.
fn redb_caught(plant: &'static str, what: &str) -> (Kit<RedbAdapter>, u64, Failure) {
    let planted = redb_target(KitSettings { plant: Some(plant), ..KitSettings::default() });
    let (seed, failure) = first_caught(&planted, 50).unwrap_or_else(|| panic!("50 seeds never noticed {what}"));
    assert_eq!(failure.check, Check::Durability, "{}", failure.detail);
    eprintln!("{plant} caught at seed {seed}: {}", failure.detail.lines().next().unwrap_or(""));
    (planted, seed, failure)
}

#[test]
fn a_backend_that_skips_sync_data_is_caught_and_shrunk() {
    let (planted, seed, failure) = redb_caught("redb-no-sync", "that sync_data does nothing");
    assert!(failure.repro.contains(&format!("--seed {seed}")) && failure.repro.contains("--plant redb-no-sync"));
    shrinks(&planted, seed, failure.check);
}

#[test]
fn a_backend_that_writes_after_the_sync_is_caught() {
    redb_caught("redb-late-write", "writes landing after the sync");
}

#[test]
fn the_same_seeds_pass_on_the_honest_disk() {
    let honest = |(seed, failure): (u64, Failure)| (seed, failure.detail);
    assert_eq!(first_caught(&always(), 20).map(honest), None);
    assert_eq!(first_caught(&redb_target(KitSettings::default()), 20).map(honest), None);
}
