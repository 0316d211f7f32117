//! Fuzzing: the structure-aware `store_ops` target, the registry of every
//! fuzz target by name, the stable replay of the committed corpus, and the
//! generator of that corpus.
//!
//! The cargo-fuzz package in `fuzz/` is one line per target around the
//! functions named in [`TARGETS`]: three engine parsers in
//! `engine::fuzzing` and [`store_ops`] here. Because they are plain
//! library functions, `cargo test` on stable replays every committed input
//! through the same bodies ([`replay`]), and `make corpus` rewrites the
//! seed inputs from what the engine itself writes ([`corpus`]).

pub mod corpus;
mod encode;
pub mod plan;
pub mod replay;

use crate::run::run_ops;
use crate::segsim::SegsimTarget;
use plan::FuzzPlan;
use simulator::shrink::ops_file;

/// One fuzz target: its name (the cargo-fuzz binary, the directory
/// `corpus/<name>/`, the prefix of its crashers in `corpus/regressions/`)
/// and the function it runs on each input. The function panics on a
/// finding and returns on anything else.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The target's name.
    pub name: &'static str,
    /// Its body.
    pub run: fn(&[u8]),
}

/// Every fuzz target, in the order the docs list them.
pub const TARGETS: [Target; 4] = [
    Target { name: "aof_recover", run: testkit::fuzzing::aof_recover },
    Target { name: "seg_read", run: testkit::fuzzing::seg_read },
    Target { name: "manifest_open", run: testkit::fuzzing::manifest_open },
    Target { name: "store_ops", run: store_ops },
];

/// The target called `name`, if any.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.into_iter().find(|target| target.name == name)
}

/// Decode the bytes into a [`FuzzPlan`] and run it through the simulator
/// with every check `sim` makes (replies, durability after each crash,
/// audits, a clean restart at the end). A failed check panics with its
/// detail and the plan as an `.ops` list, which `sim --replay` re-runs and
/// `sim --shrink` can minimize.
pub fn store_ops(data: &[u8]) {
    let plan = FuzzPlan::from_bytes(data);
    let (config, overrides, ops) = plan.to_run();
    let outcome = run_ops(&config, overrides, &ops, false);
    let Some(failure) = outcome.failure else { return };
    let list = ops_file(&SegsimTarget::new(overrides), config.seed, &ops, "found by the store_ops fuzz target");
    panic!(
        "store_ops: check '{}' failed at op {}: {}\nlast events:\n  {}\nas an .ops list (save it and run \
         `sim --replay FILE`):\n{list}",
        failure.check,
        failure.op_index,
        failure.detail,
        failure.recent.join("\n  "),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Op;
    use arbitrary::{Arbitrary, Unstructured};
    use plan::FuzzStep;
    use proptest::prelude::*;

    #[test]
    fn targets_are_found_by_name() {
        for expected in TARGETS {
            assert_eq!(target(expected.name).map(|t| t.name), Some(expected.name));
        }
        assert!(target("nope").is_none());
    }

    #[test]
    fn empty_and_short_inputs_are_plans_that_pass() {
        store_ops(&[]);
        store_ops(&[7]);
        store_ops(&[0xff; 40]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random bytes decode to short plans (each list goes on with odds
        /// of one half per element), so the steps are decoded one by one.
        #[test]
        fn random_plans_pass_every_check(
            seed in any::<u64>(),
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 1..80),
        ) {
            let steps = chunks
                .iter()
                .map(|chunk| FuzzStep::arbitrary(&mut Unstructured::new(chunk)).expect("missing bytes read as zeros"))
                .collect();
            let plan = FuzzPlan { seed, fsync: None, crash_mode: None, steps };
            store_ops(&plan.to_bytes());
        }
    }

    #[test]
    fn a_plan_runs_after_the_seeds_window_declarations() {
        let plan = FuzzPlan::from_bytes(&[0xff; 64]);
        assert!(!plan.steps.is_empty());
        let (config, overrides, ops) = plan.to_run();
        assert_eq!(ops.len(), config.tables.len() + plan.steps.len());
        assert_eq!(overrides.ops, Some(ops.len() as u64));
        for (index, op) in ops.iter().enumerate() {
            assert_eq!(op.index, index as u64);
            assert_eq!(matches!(op.op, Op::Cmd(engine::store::Command::Window { .. })), index < config.tables.len());
        }
    }
}
