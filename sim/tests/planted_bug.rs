//! The checker must be able to fail. Plant a bug under the engine — a Vfs
//! whose file fsync silently does nothing — and the simulator must report a
//! failure, with a repro command, within a few hundred seeds.

use engine::aof::FsyncPolicy;
use sim::config::{Config, Overrides};
use sim::planted::skip_fsync;
use sim::run::run_ops_with;
use sim::shrink::shrink;
use sim::target::segsim::SegsimTarget;
use sim::target::Target;
use sim::workload::generate;

#[test]
fn a_vfs_that_skips_fsync_is_caught_with_a_repro() {
    let overrides = Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() };
    let mut caught = None;
    for seed in 0..300 {
        let config = Config::from_seed(seed, overrides);
        let ops = generate(&config);
        let outcome = run_ops_with(&config, overrides, &ops, false, &skip_fsync);
        if let Some(failure) = outcome.failure {
            caught = Some((seed, failure));
            break;
        }
    }
    let (seed, failure) = caught.expect("300 seeds never noticed that fsync does nothing");
    assert!(failure.repro.contains(&format!("--seed {seed}")), "{}", failure.repro);
    assert!(failure.repro.contains("--fsync always"), "{}", failure.repro);
    assert!(!failure.detail.is_empty());
    eprintln!("caught at seed {seed}: check '{}'", failure.check);

    // The shrinker keeps the failure while cutting the list down.
    let planted = SegsimTarget { wrap: skip_fsync, ..SegsimTarget::new(overrides) };
    let ops = planted.generate(seed);
    let (minimal, runs) = shrink(&planted, seed, ops.clone(), failure.check);
    assert!(minimal.len() < ops.len() / 4, "shrunk only from {} to {} ops", ops.len(), minimal.len());
    let again = planted.run(seed, &minimal, false);
    assert_eq!(again.failure.map(|f| f.check), Some(failure.check));
    eprintln!("shrunk {} ops to {} in {runs} runs", ops.len(), minimal.len());
}

#[test]
fn the_same_seeds_pass_on_the_honest_disk() {
    let overrides = Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() };
    for seed in 0..20 {
        let outcome = sim::run::run_seed(seed, overrides, false);
        assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
    }
}
