//! The SQLite target end to end: seeds run clean and deterministically,
//! op lists round trip, explore runs clean and catches a plant.

use super::*;
use crate::sqlite_target;
use simkit::{Kit, KitSettings};
use simulator::disk::CrashMode;
use simulator::explore::{explore, ExploreOptions};
use simulator::seam::{assert_seeds_pass_and_replay, run_seed, Target};
use simulator::shrink::{ops_file, parse_ops_file};

fn sqlite(settings: KitSettings) -> Kit<SqliteAdapter> {
    sqlite_target(settings)
}

/// The pinned finding `corpus/sqlite/findings/{name}.ops`, parsed: its
/// target, seed and operations.
fn finding(name: &str) -> (Kit<SqliteAdapter>, u64, Vec<<Kit<SqliteAdapter> as Target>::Op>) {
    let path = format!("{}/../corpus/sqlite/findings/{name}.ops", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_ops_file(sqlite(KitSettings::default()), &text).unwrap()
}

fn with_options(options: &[&str], plant: Option<&'static str>) -> Kit<SqliteAdapter> {
    let mut target = sqlite(KitSettings { plant, ..KitSettings::default() });
    for option in options {
        target.set_option(option).unwrap();
    }
    target
}

#[test]
fn a_few_seeds_pass_and_replay_bit_for_bit() {
    assert_seeds_pass_and_replay(&sqlite(KitSettings { ops: Some(60), ..KitSettings::default() }), 0..8);
}

#[test]
fn ops_files_round_trip() {
    let settings = KitSettings {
        ops: Some(30),
        crash_mode: Some(CrashMode::Prefix),
        plant: Some("sqlite-no-sync"),
        ..KitSettings::default()
    };
    let mut target = sqlite(settings);
    target.set_option("journal_mode=wal").unwrap();
    let ops = target.generate(3);
    let text = ops_file(&target, 3, &ops, "a test");
    assert!(
        text.contains("\ntarget sqlite\nseed 3\ncrash-mode prefix\nplant sqlite-no-sync\nset journal_mode=wal\n"),
        "{text}"
    );
    let (back, seed, parsed) = parse_ops_file(sqlite(KitSettings::default()), &text).unwrap();
    let KitSettings { ops: op_count, .. } = target.settings.clone();
    assert_eq!(KitSettings { ops: op_count, ..back.settings }, target.settings);
    assert_eq!(seed, 3);
    assert_eq!(parsed, ops);
}

#[test]
fn options_are_checked() {
    let mut target = sqlite(KitSettings::default());
    assert!(target.set_option("journal_mode=memory").is_err());
    assert!(target.set_option("synchronous=sometimes").is_err());
    assert!(target.set_option("page_size=1000").is_err());
    assert!(target.set_option("colour=blue").unwrap_err().contains("journal_mode="));
    target.set_option("synchronous=extra").unwrap();
    assert_eq!(target.config(1, None).engine.synchronous, Synchronous::Extra);
}

/// The default VFS claims what os_unix claims on Linux: powersafe
/// overwrite and 4096-byte sectors; the old claims are a `--set` away.
#[test]
fn the_default_vfs_claims_what_os_unix_claims() {
    let mut target = sqlite(KitSettings::default());
    let engine = target.config(1, None).engine;
    assert!(engine.powersafe && !engine.sector_from_disk, "{engine:?}");
    assert!(target.set_option("sector=512").is_err());
    target.set_option("powersafe=off").unwrap();
    target.set_option("sector=disk").unwrap();
    let engine = target.config(1, None).engine;
    assert!(!engine.powersafe && engine.sector_from_disk, "{engine:?}");
}

#[test]
fn promises_follow_the_documented_table() {
    use simkit::Promise::*;
    use JournalMode::*;
    use Synchronous::*;
    assert_eq!(promise_of(Wal, Off), Nothing);
    assert_eq!(promise_of(Wal, Normal), Eventual);
    assert_eq!(promise_of(Wal, Full), Durable);
    assert_eq!(promise_of(Delete, Full), Eventual, "ALICE: the journal's unlink is not made durable");
    assert_eq!(promise_of(Delete, Extra), Durable);
    assert_eq!(promise_of(Truncate, Full), Durable);
    assert_eq!(promise_of(Persist, Normal), Nothing, "the docs allow corruption under NORMAL");
}

#[test]
fn explore_runs_clean_and_catches_a_plant() {
    let options = ExploreOptions { jobs: 2, ..ExploreOptions::default() };
    let honest = with_options(&["journal_mode=wal", "synchronous=full"], None);
    let report = explore(&honest, 1, 10, &options).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    let again = explore(&honest, 1, 10, &ExploreOptions { jobs: 1, ..options.clone() }).unwrap();
    assert_eq!(again.without_timings(), report.without_timings(), "the report does not depend on --jobs");

    let planted = with_options(&["journal_mode=wal", "synchronous=full"], Some("sqlite-no-sync"));
    let report = explore(&planted, 1, 10, &options).unwrap();
    assert!(report.failures_total > 0, "{}", report.to_text());
    let first = &report.failures[0];
    assert!(
        first.repro.contains("--target sqlite") && first.repro.contains("--plant sqlite-no-sync"),
        "{}",
        first.repro
    );
}

/// Each planted bug is caught by a short forced sweep (SQLITE.md has the
/// figures).
#[test]
fn the_planted_bugs_are_caught() {
    let cases: [(&str, &[&str]); 3] = [
        ("sqlite-no-sync", &["journal_mode=wal", "synchronous=full"]),
        ("sqlite-delete-no-dirsync", &["journal_mode=delete", "synchronous=extra"]),
        ("sqlite-late-truncate", &["journal_mode=truncate", "synchronous=full"]),
    ];
    for (plant, options) in cases {
        let target = with_options(options, Some(plant));
        let caught = (0..60).any(|seed| run_seed(&target, seed, false).failure.is_some());
        assert!(caught, "{plant} was not caught in 60 seeds");
    }
}

/// SQLite's PRNG and the list of VFSes are process-wide: seeds run on two
/// threads at once must trace exactly as they do alone.
#[test]
fn seeds_on_two_threads_trace_as_they_do_alone() {
    let target = sqlite(KitSettings { ops: Some(60), ..KitSettings::default() });
    let alone: Vec<u64> = (0..6).map(|seed| run_seed(&target, seed, false).trace_hash).collect();
    let together: Vec<u64> = std::thread::scope(|scope| {
        let odd = scope.spawn(|| {
            (0..6).filter(|s| s % 2 == 1).map(|s| run_seed(&target, s, false).trace_hash).collect::<Vec<_>>()
        });
        let even: Vec<u64> = (0..6).filter(|s| s % 2 == 0).map(|s| run_seed(&target, s, false).trace_hash).collect();
        let odd = odd.join().unwrap();
        even.into_iter().zip(odd).flat_map(|(e, o)| [e, o]).collect()
    });
    assert_eq!(alone, together);
}

/// SQLITE.md's finding 1, judged by the in-doubt rule: the failed WAL
/// commit that a reopen showed rolled back comes back after a later power
/// loss. SQLite documents only that such a transaction "might be rolled
/// back", so this passes — and it passes because the comeback is allowed
/// and counted, not because the repro stopped reaching it.
#[test]
fn finding_one_is_a_failed_commit_that_came_back_in_doubt() {
    let (target, seed, ops) = finding("wal-failed-commit-comes-back");
    let outcome = target.run(seed, &ops, false);
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
    assert_eq!((outcome.counters.in_doubt, outcome.counters.came_back), (1, 1), "the failed commit, and its comeback");
}

/// SQLITE.md's finding 6 (the deep soak's seeds 365941041416 and
/// 365941034008, the far soaks' 14333533, 52743175, 73700908, 75190179,
/// 78472342 and 79432069): a WAL commit torn by one power loss, rolled back by its
/// recovery, is whole again after the next commit's overwrite of its frame
/// is torn by a second power loss, and recovery replays it over the
/// history that went on without it (in all but `-page8k`, over an
/// acknowledged commit). Each
/// repro fails at its last power loss with the revived key, and runs clean
/// without the step that revives it: the last power loss where the run's
/// own final power loss does not tear the same way, else the commit whose
/// frame overwrites the torn one (the last `COMMIT`; in `-page8k` the
/// power loss is inside it, drawn by the seed, so the list ends there).
#[test]
fn finding_six_is_a_rolled_back_wal_commit_revived_by_a_torn_overwrite() {
    /// Which step the repro runs clean without.
    enum Without {
        LastCrash,
        OverwritingCommit,
    }
    for (name, revived, without) in [
        ("wal-rolled-back-commit-revived", "key \"k8\": expected absent, got \"3hbvj3mz9qbggmm\"", Without::LastCrash),
        ("wal-rolled-back-commit-revived-4k", "key \"k43\": expected absent, got \"femctdk\"", Without::LastCrash),
        ("wal-rolled-back-commit-revived-page512", "key \"k43\": expected absent, got \"gpkjm0i\"", Without::LastCrash),
        (
            "wal-rolled-back-commit-revived-sector512",
            "key 00afd9d6906cdb16: expected absent, got \"n23\"",
            Without::OverwritingCommit,
        ),
        (
            "wal-rolled-back-commit-revived-frame1",
            "key 0098c475f0f066a9: expected absent, got \"mi47p6rbpg4gwx7w0a\"",
            Without::OverwritingCommit,
        ),
        (
            "wal-rolled-back-commit-revived-page8k",
            "key \"k1\": expected absent, got \"gw3sdn1m2b2ms\"",
            Without::OverwritingCommit,
        ),
        (
            "wal-rolled-back-commit-revived-page512-sector512",
            "key 00afd9d6906cdb16: expected absent, got \"lllxu658iwc52rkfcl1oe5e0\"",
            Without::OverwritingCommit,
        ),
        (
            "wal-rolled-back-commit-revived-page4k",
            "key 0008d12e6b76c84d: expected absent, got \"badfx7tlgu5i6ad039o04\"",
            Without::OverwritingCommit,
        ),
    ] {
        let (target, seed, ops) = finding(name);
        let failure = target.run(seed, &ops, false).failure.expect("the rolled-back commit comes back");
        assert_eq!(failure.check, simulator::failure::Check::Durability, "{name}: {failure:?}");
        assert!(failure.detail.contains("it equals no committed state at all"), "{name}: {}", failure.detail);
        assert!(failure.detail.contains(revived), "{name}: {}", failure.detail);
        let dropped = match without {
            Without::LastCrash => {
                let last = &ops.last().unwrap().op;
                assert_eq!(*last, simkit::KitOp::Crash, "{name}: the repro ends with the power loss that revives");
                ops.len() - 1
            }
            Without::OverwritingCommit => {
                ops.iter().rposition(|step| matches!(step.op, simkit::KitOp::Commit { .. })).unwrap()
            }
        };
        let mut clean = ops.clone();
        clean.remove(dropped);
        let outcome = target.run(seed, &clean, false);
        assert!(outcome.failure.is_none(), "{name}: {:?}", outcome.failure);
    }
}

/// SQLITE.md's finding 7 (the far soaks' seeds 78424026 and 52763975): a
/// `PRAGMA wal_checkpoint(TRUNCATE)` whose WAL fsync fails, then the
/// close's checkpoint, which syncs again (nothing is dirty after the
/// failed writeback) and copies a frame the disk never took over page 1:
/// every later open answers "file is not a database". Each runs clean
/// without its `VACUUM` (the maintenance whose checkpoint fails).
#[test]
fn finding_seven_is_a_close_checkpoint_copying_a_frame_whose_writeback_failed() {
    for name in [
        "wal-close-checkpoint-after-failed-fsync-copies-unwritten-frame",
        "wal-close-checkpoint-after-failed-fsync-copies-torn-frame",
    ] {
        let (target, seed, ops) = finding(name);
        let failure = target.run(seed, &ops, false).failure.expect("page 1 overwritten");
        assert_eq!(failure.check, simulator::failure::Check::Open, "{name}: {failure:?}");
        assert!(failure.detail.contains("file is not a database"), "{name}: {}", failure.detail);
        let mut clean = ops.clone();
        clean.retain(|step| !matches!(step.op, simkit::KitOp::Maintain(_)));
        assert_eq!(clean.len() + 1, ops.len(), "{name}: one VACUUM");
        let outcome = target.run(seed, &clean, false);
        assert!(outcome.failure.is_none(), "{name}: {:?}", outcome.failure);
    }
}

/// Readers beside the writer (`--clients 3`), in WAL and in a rollback
/// mode: seeds run clean and replay bit for bit. In DELETE mode the
/// writer's commits wait for readers (`SQLITE_BUSY`, the readers ended,
/// the commit retried); in WAL mode nothing ever waits.
#[test]
fn readers_run_clean_in_wal_and_rollback_modes() {
    for (mode, waits) in [("journal_mode=wal", false), ("journal_mode=delete", true)] {
        let mut target = with_options(&[mode, "synchronous=full"], None);
        target.settings.ops = Some(80);
        target.set_clients(3).unwrap();
        assert_seeds_pass_and_replay(&target, 0..6);
        let busy_waits: u64 = (0..6).map(|seed| run_seed(&target, seed, false).counters.busy_waits).sum();
        assert_eq!(busy_waits > 0, waits, "{mode}: {busy_waits} writer operations waited for readers");
    }
}

/// The two lock plants' shrunk histories (SQLITE.md, "Readers beside the
/// writer"): each fails check `isolation` with its plant, and the same
/// history passes on the honest VFS.
#[test]
fn the_lock_plants_break_a_readers_snapshot() {
    let cases = [
        (
            "plant sqlite-shm-lock-lies\nset journal_mode=wal\n",
            "seed 79\n",
            "174 PUT t1 k2 ffsu0dpkwne5\n177 COMMIT commit\n179 READER 1 BEGIN\n180 VACUUM\n\
             181 PUT t0 44534042262981244 1q2vtzzan5xqust\n182 COMMIT commit\n187 READER 1 GET t0 44534042262981244\n",
        ),
        (
            "plant sqlite-locks-per-process\nset journal_mode=delete\n",
            "seed 0\n",
            "167 READER 1 SCAN t1\n168 PUT t0 0 x\n177 COMMIT commit\n178 READER 1 SCAN t0\n",
        ),
    ];
    for (settings, seed, ops) in cases {
        for planted in [true, false] {
            let settings = if planted {
                settings.to_string()
            } else {
                settings.lines().skip(1).collect::<Vec<_>>().join("\n") + "\n"
            };
            let text = format!("target sqlite\n{seed}{settings}clients 3\n{ops}");
            let (target, seed, ops) = parse_ops_file(sqlite(KitSettings::default()), &text).unwrap();
            let failure = target.run(seed, &ops, false).failure;
            match planted {
                true => assert_eq!(failure.map(|f| f.check), Some(simulator::failure::Check::Isolation), "{text}"),
                false => assert!(failure.is_none(), "{text}: {failure:?}"),
            }
        }
    }
}

/// Every shrunk repro under `corpus/sqlite/` (`--shrink --save`; the
/// soak of issue 52) passes, and every finding under `findings/` holds:
/// the fifteen that say `# expect: fail` still fail (SQLite's own, under the
/// configurations SQLITE.md names), the rest pass (twins, and the disk
/// model's old mistakes). `cargo test` replays them all.
#[test]
fn the_saved_sqlite_regressions_and_findings_hold() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/sqlite");
    let held = simulator::cli::replay::assert_saved_ops_hold(|| sqlite(KitSettings::default()), &dir);
    assert_eq!(held.failed_as_expected, 15, "the fifteen findings that must fail: {held:?}");
    assert!(held.passed >= 16, "the eleven repros of issue 52's soak and five passing findings: {held:?}");
}

/// A reader refused as busy is allowed while a writer's operation that
/// survived an injected fault may have left work under the write lock (a
/// `ROLLBACK` whose journal playback failed leaves the journal hot), and
/// an empty `COMMIT` does not settle that (seed 3032697, shrunk: it takes
/// no lock). A commit that wrote does: after it, a refused reader is a
/// failure — which is how a lock the VFS keeps too long is still caught
/// (`sqlite-unlock-keeps-pending`).
#[test]
fn a_busy_reader_is_allowed_until_a_commit_that_wrote() {
    let history = |commit: &str, plant: &str| {
        format!(
            "target sqlite\nseed 3032697\nfs ext4\n{plant}clients 3\n42 READER 2 GET t0 0\n44 PUT t1 k0 9yn90sm9\n\
             45 ABORT\n{commit}48 READER 1 GET t0 44534042262981244\n"
        )
    };
    let run = |text: &str| {
        let (target, seed, ops) = parse_ops_file(sqlite(KitSettings::default()), text).unwrap();
        target.run(seed, &ops, false)
    };
    let empty = "46 COMMIT commit\n";
    let wrote = "46 PUT t1 k1 x\n47 COMMIT commit\n";
    let plant = "plant sqlite-unlock-keeps-pending\n";
    let honest = run(&history(empty, ""));
    assert!(honest.failure.is_none(), "{:?}", honest.failure);
    assert_eq!(honest.counters.readers_refused, 1, "reader 1 met the hot journal that reader 2's lock kept");
    assert!(run(&history(wrote, "")).failure.is_none(), "the commit that wrote rolled the journal back");
    assert!(run(&history(empty, plant)).failure.is_none(), "still in doubt: the refusal is allowed");
    let caught = run(&history(wrote, plant)).failure.expect("the kept PENDING lock refuses reader 1");
    assert_eq!(caught.check, simulator::failure::Check::Reply, "{caught:?}");
    assert!(caught.detail.contains("database is locked"), "{}", caught.detail);
}

/// `sqlite-unlock-keeps-pending` is caught by a short sweep with readers
/// in a rollback mode (SQLITE.md, *Planted bugs*).
#[test]
fn the_kept_pending_lock_is_caught() {
    let mut target = with_options(&["journal_mode=delete"], Some("sqlite-unlock-keeps-pending"));
    target.set_clients(3).unwrap();
    let caught = (0..20).filter_map(|seed| run_seed(&target, seed, false).failure).next();
    assert_eq!(caught.map(|f| f.check), Some(simulator::failure::Check::Reply));
}

/// `sqlite-reserved-own-only` (issue 49): `xCheckReservedLock` answers
/// for the caller alone, so a reader takes the writer's live journal for
/// a hot one and is refused while the writer holds only `RESERVED`. The
/// spec's refusal rule (`Readers::refused_at`: `PENDING` or `EXCLUSIVE`)
/// catches it in DELETE mode within a short sweep, naming the lock; the
/// honest VFS passes the same seeds. With the rule switched off
/// (`refused_at: &[]`: any refused begin inside a write transaction
/// accepted, as before) this test fails: SQLITE.md, *Clients that
/// overlap*.
#[test]
fn the_reserved_lock_plant_is_caught_by_the_refusal_rule() {
    let planted = |plant| {
        let mut target = with_options(&["journal_mode=delete"], plant);
        target.set_clients(3).unwrap();
        target
    };
    let (bad, honest) = (planted(Some("sqlite-reserved-own-only")), planted(None));
    let caught = (0..20).find_map(|seed| run_seed(&bad, seed, false).failure).expect("caught within 20 seeds");
    assert_eq!(caught.check, simulator::failure::Check::Reply, "{caught:?}");
    assert!(caught.detail.contains("while the writer holds RESERVED"), "{}", caught.detail);
    assert!(run_seed(&honest, caught.seed, false).failure.is_none(), "seed {} passes honestly", caught.seed);
}

/// Readers stepping inside the writer's operations (`--interleave`), in
/// WAL and in a rollback mode: seeds run clean and replay bit for bit,
/// and steps did run between a writer's I/Os.
#[test]
fn interleaved_readers_run_clean_in_wal_and_rollback_modes() {
    for mode in ["journal_mode=wal", "journal_mode=delete"] {
        let mut target = with_options(&[mode, "synchronous=full"], None);
        target.settings.ops = Some(80);
        target.set_clients(3).unwrap();
        target.set_interleave(true).unwrap();
        assert_seeds_pass_and_replay(&target, 0..6);
        let steps: u64 = (0..6).map(|seed| run_seed(&target, seed, false).counters.interleaved_steps).sum();
        assert!(steps > 0, "{mode}: no reader stepped inside a writer's operation");
    }
}

/// `sqlite-shared-over-pending` (issue 49): `xLock` grants `SHARED` while
/// the writer holds `PENDING`. With `--interleave` the writer's busy
/// handler sleeps while a reader's `SHARED` lock keeps it from
/// `EXCLUSIVE`, a reader steps in that sleep, and its begin is granted
/// where SQLite refuses it (check `isolation`, naming the lock); the
/// honest VFS passes the same seed.
#[test]
fn the_shared_over_pending_plant_is_caught_inside_a_busy_wait() {
    let planted = |plant| {
        let mut target = with_options(&["journal_mode=delete"], plant);
        target.set_clients(3).unwrap();
        target.set_interleave(true).unwrap();
        target
    };
    let (bad, honest) = (planted(Some("sqlite-shared-over-pending")), planted(None));
    let caught = (0..10).find_map(|seed| run_seed(&bad, seed, false).failure).expect("caught within 10 seeds");
    assert_eq!(caught.check, simulator::failure::Check::Isolation, "{caught:?}");
    assert!(caught.detail.contains("began while the writer holds PENDING"), "{}", caught.detail);
    assert!(run_seed(&honest, caught.seed, false).failure.is_none(), "seed {} passes honestly", caught.seed);
}

/// `sqlite-shm-unlock-releases-all` (issue 49's released-slots plant):
/// an `xShmLock` unlock releases every wal-index slot the connection
/// holds, so the WAL writer loses its write lock when it unlocks the read
/// marks it took to restart the WAL. Harmless while only the writer
/// writes; with `--interleave` a reader's write attempt inside the
/// writer's transaction is granted (check `isolation`, "two writers"),
/// and on the honest VFS the same seed passes.
#[test]
fn the_released_slots_plant_is_caught_by_a_second_writer() {
    let planted = |plant| {
        let mut target = with_options(&["journal_mode=wal"], plant);
        target.set_clients(3).unwrap();
        target.set_interleave(true).unwrap();
        target
    };
    let (bad, honest) = (planted(Some("sqlite-shm-unlock-releases-all")), planted(None));
    let caught = (0..10).find_map(|seed| run_seed(&bad, seed, false).failure).expect("caught within 10 seeds");
    assert_eq!(caught.check, simulator::failure::Check::Isolation, "{caught:?}");
    assert!(caught.detail.contains("two writers"), "{}", caught.detail);
    assert!(run_seed(&honest, caught.seed, false).failure.is_none(), "seed {} passes honestly", caught.seed);
}

/// The shrunk history of `sqlite-shared-over-pending` (SQLITE.md,
/// *Clients that overlap*): two operations, and the steps drawn inside
/// them — reader 2 begins inside the `PUT`, so the `COMMIT` waits at
/// `PENDING` in its busy handler, where reader 2 begins afresh. With the
/// plant its begin is granted (check `isolation`); on the honest VFS it is
/// refused, the writer's next try takes `EXCLUSIVE`, and the run passes.
#[test]
fn the_shared_over_pending_history_fails_only_with_its_plant() {
    let ops = "187 PUT t0 17010490488034552 h4vowlbgm8zomh4c\n189 COMMIT commit\n";
    for planted in [true, false] {
        let plant = if planted { "plant sqlite-shared-over-pending\n" } else { "" };
        let text = format!("target sqlite\nseed 0\n{plant}set journal_mode=delete\nclients 3\ninterleave on\n{ops}");
        let (target, seed, ops) = parse_ops_file(sqlite(KitSettings::default()), &text).unwrap();
        let outcome = target.run(seed, &ops, false);
        match planted {
            true => assert_eq!(outcome.failure.map(|f| f.check), Some(simulator::failure::Check::Isolation)),
            false => assert!(outcome.failure.is_none(), "{:?}", outcome.failure),
        }
        assert!(outcome.counters.interleaved_steps >= 2, "planted {planted}: {:?}", outcome.counters);
    }
}

/// A seed names what it drew (issue 52): the outcome, its failure, and
/// the summary of one seed, in words and in JSON — the engine's settings
/// as `--set` spells them, each level's promise, the disk and the clients.
#[test]
fn a_seed_names_its_draw_in_its_summary_and_its_failure() {
    let mut target = with_options(&["journal_mode=delete"], Some("sqlite-unlock-keeps-pending"));
    target.set_clients(3).unwrap();
    let outcome = (0..20).map(|seed| run_seed(&target, seed, false)).find(|o| o.failure.is_some()).unwrap();
    let drew = outcome.drew.clone().expect("a kit target names its draw");
    let engine = target.config(outcome.seed, None).engine;
    let settings =
        format!("journal_mode=delete synchronous={} page_size={}", engine.synchronous.name(), engine.page_bytes);
    assert!(drew.starts_with(&settings), "{drew}");
    assert!(drew.contains("; promises: commit ") && drew.contains("; disk: crash-mode "), "{drew}");
    assert_eq!(outcome.failure.as_ref().and_then(|f| f.drew.clone()), Some(drew.clone()));
    let summary = simulator::summary::Summary::of(&outcome);
    let text = summary.to_text();
    assert!(text.contains(&format!("\ndrew: {drew}\n")) && text.contains(&format!("\n  drew: {drew}\n")), "{text}");
    let json = summary.to_json();
    assert_eq!(json["drew"], drew.as_str());
    assert_eq!(json["failures"][0]["drew"], drew.as_str());
    let back = simulator::summary::Summary::from_json(&json).unwrap();
    assert_eq!((back.drew.as_deref(), back.failures[0].drew.as_deref()), (Some(&*drew), Some(&*drew)));
}

/// A second writer (issue 49): in the seeds that draw one, a connection
/// of its own runs write transactions (`BEGIN IMMEDIATE`, a put,
/// `COMMIT`), checkpoints and closes, in turn with the writer and, with
/// `--interleave`, inside its operations. In WAL and in a rollback mode
/// the seeds run clean and replay bit for bit; commits of the second
/// writer went into the model, and refusals happened only where the spec
/// allows them (else the seeds fail).
#[test]
fn a_second_writer_commits_in_turn_and_runs_clean() {
    for mode in ["journal_mode=wal", "journal_mode=delete"] {
        for interleave in [false, true] {
            let mut target = with_options(&[mode, "synchronous=full"], None);
            target.settings.ops = Some(120);
            target.set_clients(3).unwrap();
            target.set_interleave(interleave).unwrap();
            assert_seeds_pass_and_replay(&target, 0..8);
            let outcomes: Vec<_> = (0..8).map(|seed| run_seed(&target, seed, false).counters).collect();
            let commits: u64 = outcomes.iter().map(|c| c.second_writer_commits).sum();
            let actions: u64 = outcomes.iter().map(|c| c.client_checkpoints + c.client_closes).sum();
            assert!(commits > 0 && actions > 0, "{mode} interleave {interleave}: {commits} commits, {actions} actions");
        }
    }
}

/// `sqlite-shm-unmap-discards-shared` (issue 49): `xShmUnmap` with its
/// delete flag discards the wal-index other connections map. The kit now
/// closes readers' connections while the writer's stays open (a pool's
/// close, `ReadTransactions::close_client`), yet SQLite never raises the
/// flag there: `sqlite3WalClose` raises it only when the closing
/// connection gets `EXCLUSIVE` on the database file, and in WAL mode every
/// connection that maps the wal-index keeps its `SHARED` lock while open
/// (`pager_unlock` ends the WAL read transaction and keeps the lock). So
/// over WAL seeds with closes no delete comes from a connection that is
/// not the last, and the plant (which needs one) passes them: it is
/// unreachable in any execution SQLite allows, not missed.
#[test]
fn no_wal_index_delete_comes_from_a_connection_that_is_not_the_last() {
    let mut target = with_options(&["journal_mode=wal"], Some("sqlite-shm-unmap-discards-shared"));
    target.set_clients(3).unwrap();
    let closes: u64 = (0..40).map(|seed| run_seed(&target, seed, false).counters.client_closes).sum();
    assert!(closes > 0, "readers' connections closed beside the writer's");
    assert_eq!(super::shared::deletes_beside_others(), 0, "a delete flag came from a connection not the last");
    assert_seeds_pass_and_replay(&target, 0..40);
}
