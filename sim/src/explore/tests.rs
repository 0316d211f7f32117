//! Exploration end to end, on the segsim target: the real engine survives
//! every crash state of a few short workloads; reports are the same twice
//! and for any `--jobs`; a planted bug is caught, and its repro recovers
//! exactly the failing state; the cap, the usage errors and the command
//! line behave. (The redb target's are in `target/redb/tests.rs`.)

use std::process::ExitCode;

use engine::aof::FsyncPolicy;

use super::cli::{Explored, Invocation};
use super::*;
use crate::config::Overrides;
use crate::planted::skip_fsync;
use crate::target::segsim::SegsimTarget;
use crate::workload::PlannedOp;

fn options() -> ExploreOptions {
    ExploreOptions::default()
}

/// The segsim store with its fsync policy forced (or the seed's).
fn segsim(fsync: Option<FsyncPolicy>) -> SegsimTarget {
    SegsimTarget::new(Overrides { fsync, ..Overrides::default() })
}

#[test]
fn the_engine_survives_every_crash_state_of_short_workloads() {
    for (seed, fsync) in [(1, None), (2, Some(FsyncPolicy::Always)), (3, Some(FsyncPolicy::EverySec))] {
        let report = explore(&segsim(fsync), seed, 20, &options()).unwrap();
        assert_eq!(report.failures_total, 0, "seed {seed}:\n{}", report.to_text());
        assert_eq!(report.io_indices, report.recorded_ios + 1, "every index, and the one after the last I/O");
        assert!(report.states >= report.io_indices && report.checks >= report.distinct_states);
        // Each seed's store opens, logs, syncs and restarts: dozens of
        // distinct disks at the least.
        assert!(report.distinct_states >= 30, "seed {seed}: only {} distinct states", report.distinct_states);
        assert!(!report.capped);
    }
}

#[test]
fn a_report_is_the_same_twice_and_for_any_number_of_jobs() {
    let target = segsim(None);
    let one = explore(&target, 4, 20, &options()).unwrap().without_timings();
    let again = explore(&target, 4, 20, &options()).unwrap().without_timings();
    let two = explore(&target, 4, 20, &ExploreOptions { jobs: 2, ..options() }).unwrap().without_timings();
    assert_eq!(one, again);
    assert_eq!(one, two);
    assert!(one.states > 0);
}

#[test]
fn the_report_states_the_fsync_policy() {
    let report = explore(&segsim(Some(FsyncPolicy::EverySec)), 1, 5, &options()).unwrap();
    let text = report.to_text();
    assert!(text.starts_with("sim explore: seed 1 (5 ops, fsync everysec, "), "{text}");
    let json = report.to_json();
    assert_eq!((json["fsync"].as_str(), json["target"].as_str()), (Some("everysec"), Some("segsim")));
    assert_eq!(json["states"].as_u64(), Some(report.states));
}

#[test]
fn a_vfs_that_skips_fsync_is_caught_and_its_repro_recovers_that_state() {
    // Every file fsync returns success without syncing anything.
    let planted = SegsimTarget { wrap: skip_fsync, ..segsim(Some(FsyncPolicy::Always)) };
    // Every seed catches it at once: the recording itself (a workload
    // CRASH finds the log's header gone beside a manifest, a refusal no
    // crash can cause), or a crash state. Take the first seed where a
    // crash state fails, to prove its repro recovers exactly that state.
    let mut caught_in_a_crash_state = None;
    for seed in 1..=16 {
        let report = explore(&planted, seed, 20, &options()).unwrap();
        assert!(report.failures_total > 0, "seed {seed}:\n{}", report.to_text());
        if let Some(first) = report.failures.iter().find(|f| f.io_index.is_some()) {
            caught_in_a_crash_state = Some((seed, report.clone(), first.clone()));
            break;
        }
    }
    let (seed, report, first) = caught_in_a_crash_state.expect("a crash state fails in one of 16 seeds");
    let (Some(io), Some(state)) = (first.io_index, first.state) else { unreachable!("found by its index") };
    let want = format!("--seed {seed} --ops 20 --fsync always --only-io {io} --only-state {state}");
    assert!(first.repro.contains(&want), "{}", first.repro);
    assert!(!first.description.is_empty() && !first.detail.is_empty(), "{first:?}");
    let text = report.to_text();
    assert!(text.contains(&first.repro) && text.contains(&report.failures[0].repro), "{text}");

    // The repro's options recover exactly that state, and it fails the same way.
    let only = ExploreOptions { only_io: Some(io), only_state: Some(state), ..options() };
    let again = explore(&planted, seed, 20, &only).unwrap();
    assert_eq!((again.io_indices, again.states, again.distinct_states), (1, 1, 1));
    assert_eq!(again.examined.as_deref(), Some(&first.description[..]));
    assert_eq!(again.failures, vec![first]);

    // The same seed passes on the honest disk.
    assert_eq!(explore(&segsim(Some(FsyncPolicy::Always)), seed, 20, &options()).unwrap().failures_total, 0);
}

#[test]
fn the_state_cap_cuts_the_same_prefix_for_any_number_of_jobs() {
    let target = segsim(None);
    let full = explore(&target, 5, 20, &options()).unwrap();
    let cap = full.states / 2;
    let capped = explore(&target, 5, 20, &ExploreOptions { max_states: Some(cap), ..options() }).unwrap();
    assert_eq!(capped.states, cap);
    assert!(capped.capped && !full.capped);
    assert!(capped.io_indices < full.io_indices && capped.distinct_states <= full.distinct_states);
    let capped_two = explore(&target, 5, 20, &ExploreOptions { max_states: Some(cap), jobs: 2, ..options() }).unwrap();
    assert_eq!(capped.without_timings(), capped_two.without_timings());
}

#[test]
fn an_index_or_state_that_does_not_exist_is_a_usage_error() {
    let target = segsim(None);
    let too_far = explore(&target, 1, 5, &ExploreOptions { only_io: Some(1 << 40), ..options() }).unwrap_err();
    assert!(too_far.contains("--only-io"), "{too_far}");
    let no_state = explore(&target, 1, 5, &ExploreOptions { only_io: Some(0), only_state: Some(1 << 20), ..options() });
    assert!(no_state.unwrap_err().contains("--only-state"));
}

/// A hand-written workload: a power loss and a clean restart in the middle
/// put crash indices inside recoveries, whose checker is the one from
/// before the operation.
#[test]
fn crashes_inside_the_workloads_own_crash_and_restart_are_explored_too() {
    let target = segsim(Some(FsyncPolicy::No));
    let lines = ["0 SET a 1", "1 SYNC", "2 SET b 2", "3 CRASH", "4 SET c 3", "5 RESTART", "6 HSET h f v"];
    let workload: Vec<PlannedOp> = lines.iter().map(|line| PlannedOp::parse(line).unwrap()).collect();
    let recording = target.record(6, &workload);
    assert!(recording.failure.is_none(), "{:?}", recording.failure);
    let contexts = &recording.contexts;
    assert_eq!(contexts[0].first_io_index, 0);
    assert!(contexts.windows(2).all(|pair| pair[0].first_io_index <= pair[1].first_io_index));
    let crash = contexts.iter().position(|c| c.what == "3 CRASH").expect("a context for the crash");
    let next = &contexts[crash + 1];
    assert!(next.first_io_index > contexts[crash].first_io_index + 2, "the reopen did I/O inside the crash op");
    let (acked, durable) = contexts[crash].context.checker.counts();
    assert_eq!((acked, durable), (2, 1), "b was acknowledged but never synced");
    assert!(contexts.iter().any(|c| c.what == "5 RESTART (reopening)"));

    let ops = workload.len() as u64;
    let report = explore_workload(&target, 6, ops, &workload, &options(), std::time::Instant::now()).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    assert!(report.io_indices == recording.disk.snapshots.len() as u64 && report.distinct_states > 10);
}

#[test]
fn the_command_line_parses_refuses_and_exits_by_the_verdict() {
    let parse = |list: &[&str]| cli::parse(&list.iter().map(|s| s.to_string()).collect::<Vec<String>>());
    let Invocation::Info(help) = parse(&["--help"]) else { panic!("--help is not an error") };
    assert!(help.contains("--max-dir-subsets") && help.contains("--only-state"), "{help}");
    assert!(help.contains("--target") && help.contains("--plant") && help.contains("--canary"), "{help}");
    let refused = |list: &[&str], why: &str| match parse(list) {
        Invocation::Usage(text) => assert!(text.contains(why), "{list:?}: {text}"),
        other => panic!("{list:?} was accepted: {other:?}"),
    };
    refused(&[], "--seed");
    refused(&["--seed", "1", "--jobs", "0"], "--jobs must be at least 1");
    refused(&["--seed", "1", "--max-dir-subsets", "0"], "--max-dir-subsets");
    refused(&["--seed", "1", "--only-state", "3"], "--only-io");
    refused(&["--seed", "1", "--fsync", "sometimes"], "expected always, everysec or no");
    refused(&["--seed", "1", "--plant", "redb-no-sync"], "add --target redb");
    refused(&["--seed", "1", "--target", "redb", "--fsync", "no"], "segsim target's");
    let Invocation::Run { seed, ops, options, json, target: Explored::Segsim(target) } =
        parse(&["--seed", "9", "--jobs", "2", "--json", "--fsync", "always"])
    else {
        panic!("a valid command line")
    };
    assert_eq!((seed, ops, options.jobs, options.max_dir_subsets, json), (9, DEFAULT_OPS, 2, 16, true));
    assert_eq!(target.overrides, Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() });
    let Invocation::Run { target: Explored::Redb(redb), .. } =
        parse(&["--seed", "1", "--target", "redb", "--torn-garbage"])
    else {
        panic!("a valid redb command line")
    };
    assert!(redb.harsh.torn_garbage && redb.plant.is_none());

    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    assert_eq!(cli(&args(&["--seed", "1", "--ops", "3", "--only-io", "999999"])), ExitCode::from(2));
    assert_eq!(cli(&args(&["--seed", "1", "--ops", "5", "--json"])), ExitCode::SUCCESS);
}

/// With the `canaries` feature: every planted bug that a crash state can
/// expose is caught within a few seeds, by a seed that passes without it.
/// The other canaries need I/O faults (EIO, bit flips, a failed fsync) or
/// media corruption, which exploration leaves to the random mode.
#[cfg(feature = "canaries")]
#[test]
fn every_canary_a_crash_state_can_expose_is_caught() {
    use crate::canary::Canary;
    let exposable = [
        ("seg-no-fsync", 2),
        ("seal-no-dir-sync", 2),
        ("frame-before-register", 2),
        ("ghost-stubs", 40),
        ("append-after-torn-tail", 2),
        ("rewrite-no-fsync", 2),
        ("rewrite-no-dir-sync", 2),
        ("promote-not-dead", 40),
        ("rewrite-drops-ttl", 40),
        ("everysec-no-fsync", 2),
        ("stitch-absent-only", 2),
        ("sweep-named-segment", 40),
        ("flushall-retire-early", 40),
        ("manifest-tail-kept", 2),
    ];
    let policies = [None, Some(FsyncPolicy::Always), Some(FsyncPolicy::EverySec), Some(FsyncPolicy::No)];
    for (name, seeds) in exposable {
        let canary = Some(Canary::parse(name).expect("a canary of the engine"));
        let caught = (0..seeds).flat_map(|seed| policies.map(|fsync| (seed, fsync))).find(|&(seed, fsync)| {
            let planted = SegsimTarget::new(Overrides { canary, fsync, ..Overrides::default() });
            explore(&planted, seed, 40, &options()).unwrap().failures_total > 0
        });
        let Some((seed, fsync)) = caught else { panic!("{name} survived {seeds} seeds of exploration") };
        let honest = explore(&segsim(fsync), seed, 40, &options()).unwrap();
        assert_eq!(honest.failures_total, 0, "{name}: seed {seed} fails without the canary too");
    }
}

/// Manifest compaction is due only after a few dozen operations: seed
/// 2553's fault-free 100-operation workload compacts once (the earliest of
/// seeds 0..5000 to compact in the random mode, at op 76). Every crash state
/// of it, compaction's own included, recovers.
#[test]
fn the_engine_survives_every_crash_state_of_a_workload_that_compacts_the_manifest() {
    let report = explore(&segsim(None), COMPACTING_SEED, COMPACTING_OPS, &options()).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    assert!(!report.capped);
}

/// See [`the_engine_survives_every_crash_state_of_a_workload_that_compacts_the_manifest`].
const COMPACTING_SEED: u64 = 2553;
const COMPACTING_OPS: u64 = 100;

/// With the compaction renaming its new ledger before fsyncing it, a crash
/// state of that same workload keeps the rename and loses the bytes: the
/// exploration must find it (so the test above explored compaction's gaps).
#[cfg(feature = "canaries")]
#[test]
fn a_compaction_that_renames_before_it_fsyncs_is_caught_by_exploration() {
    let canary = Some(crate::canary::Canary::parse("compact-rename-before-fsync").expect("a canary of the engine"));
    let planted = SegsimTarget::new(Overrides { canary, ..Overrides::default() });
    let planted = explore(&planted, COMPACTING_SEED, COMPACTING_OPS, &options()).unwrap();
    assert!(planted.failures_total > 0, "{}", planted.to_text());
}
