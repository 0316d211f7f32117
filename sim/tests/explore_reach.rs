//! `sim explore` says what its workload reached of what the target
//! declares (`simulator/src/explore/reach.rs`): redb's one maintenance
//! operation, `COMPACT`. A seed whose workload compacts is reported with
//! the runs it made and the crash states explored inside them; a workload
//! too short to compact, and a seed whose swarm switched compaction off,
//! warn, saying what to change — and a warning is not a failure: the exit
//! status stays 0.

use std::process::Command;

use serde_json::Value;
use sim::explore::{explore, ExploreOptions};
use sim::kit::{KitOp, KitSettings};
use sim::seam::Target;
use sim::systems::redb_target;

/// The COMPACT operations of `seed`'s `ops`-operation explore workload,
/// counted from the workload itself (not from the report).
fn compactions(seed: u64, ops: u64) -> u64 {
    let redb = redb_target(KitSettings::default());
    redb.explore_workload(seed, ops).iter().filter(|planned| matches!(planned.op, KitOp::Maintain(_))).count() as u64
}

/// `sim explore --target redb ARGS`: exit code, stdout, stderr.
fn sim_explore(args: &[&str]) -> (Option<i32>, String, String) {
    let output =
        Command::new(env!("CARGO_BIN_EXE_sim")).args(["explore", "--target", "redb"]).args(args).output().expect("sim");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code(), text(&output.stdout), text(&output.stderr))
}

/// The first seed from 0 whose 40-operation workload compacts.
fn a_seed_that_compacts() -> u64 {
    (0..50).find(|seed| compactions(*seed, 40) > 0).expect("a seed of 50 compacts in 40 ops")
}

#[test]
fn a_workload_that_compacts_is_reported_with_what_was_explored_inside() {
    let seed = a_seed_that_compacts();
    let redb = redb_target(KitSettings::default());
    let report = explore(&redb, seed, 40, &ExploreOptions::default()).expect("explored");
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    assert_eq!(report.reached.len(), 1, "redb declares one operation and no phase: {:?}", report.reached);
    let compact = &report.reached[0];
    assert_eq!((compact.name.as_str(), compact.times), ("COMPACT", compactions(seed, 40)));
    assert!(compact.crash_indices > 0 && compact.crash_indices <= report.counts.io_indices, "{compact:?}");
    assert!(compact.crash_states >= compact.crash_indices && compact.crash_states <= report.counts.states);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let text = report.to_text();
    let times = if compact.times == 1 { "1 time".to_string() } else { format!("{} times", compact.times) };
    let line = format!("    operation COMPACT: ran {times}; {} crash ind", compact.crash_indices);
    assert!(text.contains(&line) && !text.contains("WARNING"), "{text}");
}

#[test]
fn a_workload_too_short_to_compact_warns_and_exits_zero() {
    let seed = a_seed_that_compacts();
    let ops = (1..40).find(|ops| compactions(seed, *ops) == 0 && compactions(seed, ops + 1) == 0).expect("short");
    let (code, stdout, _) = sim_explore(&["--seed", &seed.to_string(), "--ops", &ops.to_string()]);
    assert_eq!(code, Some(0), "a warning is not a failure: {stdout}");
    assert!(stdout.contains("    operation COMPACT: never ran\n"), "{stdout}");
    let warning = format!("WARNING: operation COMPACT never ran in {ops} ops, so no crash inside it was explored");
    assert!(stdout.contains(&warning) && stdout.contains("try more --ops"), "{stdout}");

    let (code, stdout, stderr) = sim_explore(&["--seed", &seed.to_string(), "--ops", &ops.to_string(), "--json"]);
    assert_eq!(code, Some(0));
    assert!(stderr.contains(&warning), "the text report goes to stderr with --json: {stderr}");
    let json: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(json["reached"][0]["name"], "COMPACT");
    assert_eq!(json["reached"][0]["times"], 0);
    assert_eq!(json["reached"][0]["drawable"], true);
    assert!(json["warnings"][0].as_str().is_some_and(|w| w.contains("never ran")), "{json}");
}

#[test]
fn a_seed_whose_swarm_switched_compaction_off_asks_for_another_seed() {
    let redb = redb_target(KitSettings::default());
    let off = (0..100)
        .find(|seed| !redb.explore_declared(*seed)[0].drawable)
        .expect("the swarm switches COMPACT off in some seed of 100");
    assert_eq!(compactions(off, 200), 0, "a switched-off operation is never drawn");
    let report = explore(&redb, off, 20, &ExploreOptions::default()).expect("explored");
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("swarm switched it off"), "{}", report.warnings[0]);
    assert!(report.warnings[0].ends_with("try another seed"), "{}", report.warnings[0]);
}
