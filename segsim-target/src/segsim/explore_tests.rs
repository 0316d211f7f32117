//! Exploration end to end, on the segsim target: the real engine survives
//! every crash state of a few short workloads; reports are the same twice
//! and for any `--jobs`; a planted bug is caught, and its repro recovers
//! exactly the failing state; the cap, the usage errors and the command
//! line behave. (The redb target's are in `systems/redb/tests.rs`; the explorer itself is
//! `simulator::explore`.)

use engine::aof::FsyncPolicy;

use crate::config::Overrides;
use crate::planted::{skip_fsync, unsynced_cut};
use crate::segsim::SegsimTarget;
use crate::workload::PlannedOp;
use simulator::explore::*;
use simulator::seam::Target;

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
        assert_eq!(report.counts.io_indices, report.recorded_ios + 1, "every index, and the one after the last I/O");
        assert!(
            report.counts.states >= report.counts.io_indices && report.counts.checks >= report.counts.distinct_states
        );
        // Each seed's store opens, logs, syncs and restarts: dozens of
        // distinct disks at the least.
        assert!(
            report.counts.distinct_states >= 30,
            "seed {seed}: only {} distinct states",
            report.counts.distinct_states
        );
        assert!(!report.counts.capped);
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
    assert!(one.counts.states > 0);
}

/// Segsim's report says how often its workload ran each admin call, as
/// counted from the workload itself, and where the engine marked its
/// eviction's phases; a phase no operation of the workload reaches warns.
#[test]
fn the_report_says_what_the_workload_reached() {
    let target = segsim(None);
    let workload = target.explore_workload(10, 100);
    let evictions = workload.iter().filter(|planned| planned.op == crate::workload::Op::Evict).count() as u64;
    assert!(evictions > 0, "the explore workload's motifs evict");
    let report = explore(&target, 10, 100, &options()).unwrap();
    let reached = |name: &str| report.reached.iter().find(|r| r.name == name).expect(name).clone();
    let evict = reached("EVICT");
    assert_eq!(evict.times, evictions);
    assert!(evict.crash_indices > 0 && evict.crash_states >= evict.crash_indices, "{evict:?}");
    let sealed = reached("seal.built");
    assert!(sealed.times > 0 && sealed.crash_indices <= sealed.times && sealed.crash_states > 0, "{sealed:?}");
    let text = report.to_text();
    assert!(text.contains(&format!("    operation EVICT: ran {evictions} times; ")), "{text}");
    for never in report.reached.iter().filter(|r| r.times == 0) {
        let warning = format!("WARNING: phase {} was never marked in 100 ops", never.name);
        assert!(report.warnings.iter().any(|w| w.starts_with(&warning)), "{warning}: {:?}", report.warnings);
    }
    assert_eq!(report.to_json()["reached"].as_array().map(Vec::len), Some(report.reached.len()));
}

#[test]
fn the_report_states_the_fsync_policy() {
    let report = explore(&segsim(Some(FsyncPolicy::EverySec)), 1, 5, &options()).unwrap();
    let text = report.to_text();
    assert!(text.starts_with("explore segsim: seed 1 (5 ops, fsync everysec, "), "{text}");
    let json = report.to_json();
    assert_eq!((json["fsync"].as_str(), json["target"].as_str()), (Some("everysec"), Some("segsim")));
    assert_eq!(json["states"].as_u64(), Some(report.counts.states));
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
    assert_eq!((again.counts.io_indices, again.counts.states, again.counts.distinct_states), (1, 1, 1));
    assert_eq!(again.counts.examined.as_deref(), Some(&first.description[..]));
    assert_eq!(again.failures, vec![first]);

    // The same seed passes on the honest disk.
    assert_eq!(explore(&segsim(Some(FsyncPolicy::Always)), seed, 20, &options()).unwrap().failures_total, 0);
}

#[test]
fn the_state_cap_cuts_the_same_prefix_for_any_number_of_jobs() {
    let target = segsim(None);
    let full = explore(&target, 5, 20, &options()).unwrap();
    let cap = full.counts.states / 2;
    let capped = explore(&target, 5, 20, &ExploreOptions { max_states: Some(cap), ..options() }).unwrap();
    assert_eq!(capped.counts.states, cap);
    assert!(capped.counts.capped && !full.counts.capped);
    assert!(
        capped.counts.io_indices < full.counts.io_indices
            && capped.counts.distinct_states <= full.counts.distinct_states
    );
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
    assert!(report.counts.io_indices == recording.disk.snapshots.len() as u64 && report.counts.distinct_states > 10);
}

/// Depth 2 on the honest engine: every distinct recovered state is
/// recorded and crashed again at every I/O of its recovery and probe, and
/// the engine survives all of it; the report is the same for any `--jobs`.
#[test]
fn depth_two_crashes_every_recovery_and_the_engine_survives() {
    for (seed, fsync) in [(1, None), (2, Some(FsyncPolicy::Always)), (3, Some(FsyncPolicy::EverySec))] {
        let depth2 = ExploreOptions { depth: 2, ..options() };
        let report = explore(&segsim(fsync), seed, 20, &depth2).unwrap();
        assert_eq!(report.failures_total, 0, "seed {seed}:\n{}", report.to_text());
        let second = report.depth2.as_ref().expect("a depth-2 report");
        assert_eq!(
            second.recoveries_recorded, report.counts.distinct_states,
            "every parent passed, so every one is recorded"
        );
        // Each recovery does a few dozen I/Os (open, probe: write, evict,
        // restart, crash), and most second crashes land on new disks.
        assert!(second.counts.io_indices > 10 * second.recoveries_recorded, "{second:?}");
        assert!(
            second.counts.states >= second.counts.io_indices
                && second.counts.distinct_states > report.counts.distinct_states,
            "{second:?}"
        );
        assert!(!second.counts.capped && second.counts.checks >= second.counts.distinct_states);
        // Depth 1 is the same with or without depth 2.
        let first = explore(&segsim(fsync), seed, 20, &options()).unwrap();
        assert_eq!(ExploreReport { depth2: None, ..report.without_timings() }, first.without_timings());
        let text = report.to_text();
        assert!(text.contains("depth 2: ") && text.contains("states/s"), "{text}");
        let json = report.to_json();
        assert_eq!((json["depth"].as_u64(), json["depth2"]["states"].as_u64()), (Some(2), Some(second.counts.states)));
    }
}

#[test]
fn a_depth_two_report_is_the_same_for_any_number_of_jobs_and_its_cap_cuts_a_prefix() {
    let target = segsim(None);
    let depth2 = ExploreOptions { depth: 2, ..options() };
    let one = explore(&target, 4, 15, &depth2).unwrap().without_timings();
    let two = explore(&target, 4, 15, &ExploreOptions { jobs: 2, ..depth2.clone() }).unwrap().without_timings();
    assert_eq!(one, two);
    let full = one.depth2.expect("depth 2");
    let cap = full.counts.states / 3;
    let capped = ExploreOptions { max_depth2_states: Some(cap), ..depth2 };
    let capped_one = explore(&target, 4, 15, &capped).unwrap().without_timings();
    let capped_two = explore(&target, 4, 15, &ExploreOptions { jobs: 2, ..capped }).unwrap().without_timings();
    assert_eq!(capped_one, capped_two);
    let second = capped_one.depth2.expect("depth 2");
    assert_eq!(second.counts.states, cap);
    assert!(second.counts.capped && !full.counts.capped && second.counts.distinct_states < full.counts.distinct_states);
}

/// A recovery recorded for depth 2: its crash indices before the open
/// returned are the image's own contexts'; after it, the probe's, each
/// named; a crash in the probe recovers at the same clock.
#[test]
fn a_recorded_recovery_hands_over_to_the_probe_where_the_open_returned() {
    let target = segsim(Some(FsyncPolicy::No));
    let lines = ["0 SET a 1", "1 SYNC", "2 SET b 2"];
    let workload: Vec<PlannedOp> = lines.iter().map(|line| PlannedOp::parse(line).unwrap()).collect();
    let recording = target.record(6, &workload);
    let last = recording.disk.io_indices().end - 1;
    let snapshot = recording.disk.before_io(last).unwrap();
    let image = snapshot.image(&snapshot.crash_states(DEFAULT_MAX_DIR_SUBSETS)[0]);
    let now_ms = recording.contexts.last().unwrap().context.now_ms;
    let recorded = target.depth2().expect("segsim records its recoveries").record_recovery(6, &image, now_ms);
    assert!(recorded.recovered_at_io > 0, "the open does I/O");
    assert!(recorded.recovered_at_io < recorded.disk.io_indices().end, "and the probe after it");
    assert_eq!(recorded.context_at(0), None);
    assert_eq!(recorded.context_at(recorded.recovered_at_io - 1), None);
    assert_eq!(recorded.context_at(recorded.recovered_at_io), Some(0));
    let whats: Vec<&str> = recorded.contexts.iter().map(|c| c.what.as_str()).collect();
    assert_eq!(whats[0], "probe: the recovered store (dump, audit)");
    assert!(whats.iter().all(|what| what.starts_with("probe: ")), "{whats:?}");
    assert!(whats.iter().any(|what| what.ends_with("SET explore-probe 1")), "{whats:?}");
    assert!(whats.iter().any(|what| what.ends_with("CRASH")), "{whats:?}");
    assert!(recorded.contexts.iter().all(|c| target.recovery_key(&c.context) == now_ms));
    // The recovered content is the base: nothing acknowledged after it yet.
    assert_eq!(recorded.contexts[0].context.checker.counts(), (0, 0));
}

/// A Vfs that leaves a cut file unsynced until another file is synced
/// (`planted::unsynced_cut`, recovery's cut of a torn tail left unsynced):
/// one crash shows nothing, since the next open cuts again, so depth 1
/// passes; a second crash inside the recovery, after the manifest was
/// made durable beside a log that is not, finds a store that no longer
/// opens. The failure names itself with a repro (`--then-io K
/// --then-state L`) that recovers exactly that state again.
#[test]
fn a_recovery_that_leaves_its_cut_unsynced_is_caught_at_depth_two_only_with_a_repro() {
    let planted = SegsimTarget { wrap: unsynced_cut, ..segsim(Some(FsyncPolicy::Always)) };
    let depth2 = ExploreOptions { depth: 2, ..options() };
    let seed = 1;
    assert_eq!(explore(&planted, seed, 10, &options()).unwrap().failures_total, 0, "invisible at depth 1");
    let report = explore(&planted, seed, 10, &depth2).unwrap();
    assert!(report.failures_total > 0, "{}", report.to_text());
    assert!(report.failures.iter().all(|f| f.then.is_some()), "{}", report.to_text());
    let first = report.failures[0].clone();
    assert_eq!(first.check, simulator::failure::Check::Open, "{first:?}");
    assert_eq!(explore(&segsim(Some(FsyncPolicy::Always)), seed, 10, &depth2).unwrap().failures_total, 0);
    let (Some(io), Some(state), Some((then_io, then_state))) = (first.io_index, first.state, first.then) else {
        unreachable!("a depth-2 failure")
    };
    let want = format!("--only-io {io} --only-state {state} --then-io {then_io} --then-state {then_state}");
    assert!(first.repro.contains(&want), "{}", first.repro);
    assert!(first.description.contains("; then, in its recovery: "), "{}", first.description);
    let only = ExploreOptions {
        only_io: Some(io),
        only_state: Some(state),
        then_io: Some(then_io),
        then_state: Some(then_state),
        ..depth2
    };
    let again = explore(&planted, seed, 10, &only).unwrap();
    let second = again.depth2.as_ref().expect("depth 2");
    assert_eq!((second.recoveries_recorded, second.counts.io_indices, second.counts.states), (1, 1, 1));
    assert!(second.counts.examined.as_deref().is_some_and(|examined| first.description.ends_with(examined)));
    let failures: Vec<&ExploreFailure> = again.failures.iter().filter(|f| f.then.is_some()).collect();
    assert_eq!(failures, vec![&first]);
    // Numbers that do not exist are usage errors.
    let too_far = ExploreOptions { then_io: Some(1 << 40), then_state: None, ..only.clone() };
    assert!(explore(&planted, seed, 10, &too_far).unwrap_err().contains("--then-io"));
    let no_state = ExploreOptions { then_state: Some(1 << 20), ..only };
    assert!(explore(&planted, seed, 10, &no_state).unwrap_err().contains("--then-state"));
}

/// With the `canaries` feature: every planted bug that a crash state can
/// expose is caught within a few seeds, by a seed that passes without it,
/// exploring 100 operations (`make explore`'s and CI's length) at depth 1
/// — or at depth 2 for `cut-no-fsync`, which only a crash during a
/// recovery exposes. The other canaries need I/O faults (EIO, bit flips,
/// a failed fsync) or media corruption, which exploration leaves to the
/// random mode.
#[cfg(feature = "canaries")]
#[test]
fn every_canary_a_crash_state_can_expose_is_caught() {
    use crate::canary::Canary;
    // (name, seeds, depth). Each is caught at seed 0, 1 or 2 (CANARIES.md);
    // `compact-rename-before-fsync` (seed 57) has a test of its own below.
    let exposable = [
        ("seg-no-fsync", 2, 1),
        ("seal-no-dir-sync", 2, 1),
        ("frame-before-register", 2, 1),
        ("ghost-stubs", 40, 1),
        ("append-after-torn-tail", 2, 1),
        ("rewrite-no-fsync", 2, 1),
        ("rewrite-no-dir-sync", 2, 1),
        ("promote-not-dead", 40, 1),
        ("rewrite-drops-ttl", 40, 1),
        ("everysec-no-fsync", 2, 1),
        ("stitch-absent-only", 2, 1),
        ("sweep-named-segment", 40, 1),
        ("flushall-retire-early", 40, 1),
        ("manifest-tail-kept", 2, 1),
        ("rewrite-drops-hwm", 12, 1),
        ("recovery-no-fsync", 2, 1),
        ("seq-from-live-set", 2, 1),
        ("cut-no-fsync", 2, 2),
        // A wrong reply, seen by the recording run itself (seed 3).
        ("hlen-stub-weight", 4, 1),
    ];
    let policies = [None, Some(FsyncPolicy::Always), Some(FsyncPolicy::EverySec), Some(FsyncPolicy::No)];
    for (name, seeds, depth) in exposable {
        let canary = Some(Canary::parse(name).expect("a canary of the engine"));
        let options = ExploreOptions { depth, ..options() };
        let caught = (0..seeds).flat_map(|seed| policies.map(|fsync| (seed, fsync))).find(|&(seed, fsync)| {
            let planted = SegsimTarget::new(Overrides { canary, fsync, ..Overrides::default() });
            explore(&planted, seed, 100, &options).unwrap().failures_total > 0
        });
        let Some((seed, fsync)) = caught else { panic!("{name} survived {seeds} seeds of exploration") };
        let honest = explore(&segsim(fsync), seed, 100, &options).unwrap();
        assert_eq!(honest.failures_total, 0, "{name}: seed {seed} fails without the canary too");
    }
}

/// With the `canaries` feature: the planted bugs that only a failing
/// read, write or fsync exposes — a log that failed to read taken for an
/// empty one, a failed fsync retried and ignored, a failed append
/// acknowledged — pass plain exploration and are caught with `--faults`,
/// at seed 0, by a seed that passes without them.
#[cfg(feature = "canaries")]
#[test]
fn every_canary_a_failing_recovery_io_exposes_is_caught_with_faults() {
    use crate::canary::Canary;
    let with_faults = ExploreOptions { faults: true, ..options() };
    for name in ["read-error-empty-log", "fsync-retry", "ack-failed-append"] {
        let canary = Some(Canary::parse(name).expect("a canary of the engine"));
        let planted = SegsimTarget::new(Overrides { canary, ..Overrides::default() });
        assert_eq!(explore(&planted, 0, 40, &options()).unwrap().failures_total, 0, "{name}: seen without faults");
        let caught = explore(&planted, 0, 40, &with_faults).unwrap();
        assert!(caught.failures.first().is_some_and(|f| f.fault_io.is_some()), "{name}: {}", caught.to_text());
    }
    assert_eq!(explore(&segsim(None), 0, 40, &with_faults).unwrap().failures_total, 0);
}

/// With the `canaries` feature: a recovery whose cut of a torn tail (and
/// the header it writes) is not fsynced (`cut-no-fsync`) leaves nothing
/// wrong that one crash can show — the next open cuts again — so depth 1
/// passes; a second crash inside that recovery, after the manifest was
/// created beside a log that is not durable yet, finds a store that no
/// longer opens. Depth 2 catches it, on the first seed, at depth 2 only.
#[cfg(feature = "canaries")]
#[test]
fn a_recovery_that_does_not_fsync_its_cut_is_caught_at_depth_two_only() {
    use crate::canary::Canary;
    let canary = Some(Canary::parse("cut-no-fsync").expect("a canary of the engine"));
    let planted = SegsimTarget::new(Overrides { canary, fsync: Some(FsyncPolicy::Always), ..Overrides::default() });
    let first = explore(&planted, 0, 40, &options()).unwrap();
    assert_eq!(first.failures_total, 0, "{}", first.to_text());
    let second = explore(&planted, 0, 40, &ExploreOptions { depth: 2, ..options() }).unwrap();
    assert!(second.failures_total > 0, "{}", second.to_text());
    assert!(second.failures.iter().all(|f| f.then.is_some()), "{}", second.to_text());
    let honest = explore(&segsim(Some(FsyncPolicy::Always)), 0, 40, &ExploreOptions { depth: 2, ..options() });
    assert_eq!(honest.unwrap().failures_total, 0);
}

/// Manifest compaction is due only after a few dozen segments were
/// retired: seed 57's 100-operation exploration workload (its cold cycles
/// seal and retire segments quickly) compacts, the first of seeds 0, 1, 2,
/// ... whose exploration catches `compact-rename-before-fsync` at its own
/// fsync policy. Every crash state of it, compaction's own included,
/// recovers.
#[test]
fn the_engine_survives_every_crash_state_of_a_workload_that_compacts_the_manifest() {
    let report = explore(&segsim(None), COMPACTING_SEED, COMPACTING_OPS, &options()).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    assert!(!report.counts.capped);
}

/// See [`the_engine_survives_every_crash_state_of_a_workload_that_compacts_the_manifest`].
const COMPACTING_SEED: u64 = 57;
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

/// `--damage`: every record of every durable image of a short workload,
/// damaged three ways (a frame four: a later one misdirected onto it;
/// every record five: its write lost, alone and with its fsync's tail)
/// and opened both ways, passes on the real engine;
/// some opens refuse and some go through (a cut of unvouched bytes, a
/// point in time); the report is the same for any `--jobs`; the cap cuts
/// a prefix.
#[test]
fn the_engine_refuses_or_cuts_every_damaged_record_as_its_rule_says() {
    let damage = ExploreOptions { damage: true, ..options() };
    let report = explore(&segsim(None), 10, 40, &damage).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    let counts = report.damage.clone().expect("--damage reports");
    assert!(counts.images >= 5 && counts.sites >= 3 * counts.images, "{counts:?}");
    assert_eq!(counts.recoveries, counts.refused + counts.opened, "every recovery passed one way");
    assert!(counts.refused > 0 && counts.opened > 0, "{counts:?}");
    // The reach: every site counted once under its declared kind and way.
    assert_eq!(counts.reach.iter().map(|reach| reach.sites).sum::<u64>(), counts.sites, "{counts:?}");
    assert!(counts.reach.iter().all(|reach| reach.images <= counts.images), "{counts:?}");
    let two = explore(&segsim(None), 10, 40, &ExploreOptions { jobs: 2, ..damage.clone() }).unwrap();
    assert_eq!(report.without_timings(), two.without_timings());
    let capped = explore(&segsim(None), 10, 40, &ExploreOptions { max_damage_states: Some(7), ..damage }).unwrap();
    let capped = capped.damage.expect("--damage reports");
    assert!(capped.capped && capped.recoveries == 7, "{capped:?}");
}

/// Every declared way reaches every record kind the recording holds
/// (issue 51): seed 2's first 100 operations append manifest records of no
/// repeated size after the first, which once left the manifest never
/// misdirected (a warned-about gap); a frame with no later frame of its
/// size is now misdirected onto by the nearest later frame of another
/// size. The per-kind lines say so, and no damage warning is left.
#[test]
fn every_declared_way_reaches_every_record_kind_held() {
    let report = explore(&segsim(None), 2, 100, &ExploreOptions { damage: true, ..options() }).unwrap();
    let damage = report.damage.clone().expect("--damage reports");
    for reach in &damage.reach {
        assert!(reach.present > 0 && reach.sites > 0, "{reach:?}: {}", report.to_text());
    }
    let warned = report.warnings.iter().filter(|w| w.contains("--damage")).count();
    assert_eq!(warned, 0, "{}", report.to_text());
    let text = report.to_text();
    assert!(text.contains("manifest record (in "), "{text}");
    assert!(text.contains("a misdirected write, a lost write (every declared way)"), "{text}");
}

/// A `--damage-site` that does not exist is a usage error (`--damage` on a
/// target that does not describe its records: `adapters`' redb tests).
#[test]
fn damage_sites_that_cannot_exist_are_usage_errors() {
    let only = ExploreOptions { damage: true, only_io: Some(0), damage_site: Some(1_000_000), ..options() };
    let missing = explore(&segsim(None), 10, 10, &only).unwrap_err();
    assert!(missing.contains("--damage-site 1000000"), "{missing}");
}

/// With the `canaries` feature: the planted bugs of the damage rules —
/// vouched damage cut as a torn tail, a segment read that skips its
/// checksum, a sweep after damage, replay past an invalid frame, a frame
/// checksum that leaves out the place (caught by a frame misdirected onto
/// an earlier one of its size), a rewrite's unfinished header read as
/// finished (caught by its finishing header write lost with the rest of
/// its fsync) — pass plain exploration at CI's seed 10, and `--damage`
/// catches each there; a failure's repro damages that one site again and
/// fails the same way.
#[cfg(feature = "canaries")]
#[test]
fn every_damage_rule_canary_is_caught_by_damage_exploration_only() {
    use crate::canary::Canary;
    let damage = ExploreOptions { damage: true, ..options() };
    let names = [
        "cut-vouched-damage",
        "seg-no-checksum",
        "sweep-after-damage",
        "replay-past-invalid",
        "aof-place-ignored",
        "unfinished-rewrite-read",
        "manifest-place-ignored",
    ];
    for name in names {
        let canary = Some(Canary::parse(name).expect("a canary of the engine"));
        let planted = SegsimTarget::new(Overrides { canary, ..Overrides::default() });
        assert_eq!(explore(&planted, 10, 100, &options()).unwrap().failures_total, 0, "{name}: seen without damage");
        let caught = explore(&planted, 10, 100, &damage).unwrap();
        let first = caught.failures.first().unwrap_or_else(|| panic!("{name} not caught: {}", caught.to_text()));
        let (io_index, site) = (first.io_index, first.damage_site);
        assert!(first.repro.contains(&format!(
            "--damage --only-io {} --damage-site {}",
            io_index.unwrap(),
            site.unwrap()
        )));
        let again = ExploreOptions { only_io: io_index, damage_site: site, ..damage.clone() };
        let repro = explore(&planted, 10, 100, &again).unwrap();
        assert!(
            repro.failures.iter().any(|f| f.check == first.check && f.damage_site == site),
            "{name}: {}",
            repro.to_text()
        );
        if name == "manifest-place-ignored" {
            the_writes_in_flight_catch_it_too_and_their_repros_name_the_same_site(&planted, &caught);
        }
    }
}

/// The manifest's next record, in flight at the crash, misdirected onto
/// the last durable one (issue 51) catches the place-free manifest too;
/// each such failure's repro — a site numbered after the image's own
/// sites, where the image was first seen at an earlier crash index —
/// damages that same site again.
#[cfg(feature = "canaries")]
fn the_writes_in_flight_catch_it_too_and_their_repros_name_the_same_site(
    planted: &SegsimTarget,
    caught: &ExploreReport,
) {
    let in_flight: Vec<&ExploreFailure> =
        caught.failures.iter().filter(|f| f.description.contains("the write in flight at the crash")).collect();
    assert!(!in_flight.is_empty(), "{}", caught.to_text());
    for failure in in_flight {
        let damage =
            ExploreOptions { damage: true, only_io: failure.io_index, damage_site: failure.damage_site, ..options() };
        let repro = explore(planted, 10, 100, &damage).unwrap();
        assert!(
            repro.failures.iter().any(|f| f.description == failure.description && f.check == failure.check),
            "{}: {}",
            failure.description,
            repro.to_text()
        );
    }
}
