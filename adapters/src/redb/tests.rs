//! The redb target end to end: seeds run clean and deterministically, the
//! planted bugs are caught, op lists shrink and replay, explore runs.

use super::*;
use crate::redb_target;
use simkit::{Kit, KitSettings};
use simulator::disk::{CrashMode, FsProfile};
use simulator::explore::{explore, ExploreOptions};
use simulator::seam::{assert_seeds_pass_and_replay, Target};
use simulator::shrink::{ops_file, parse_ops_file};

fn redb(settings: KitSettings) -> Kit<RedbAdapter> {
    redb_target(settings)
}

fn planted(name: &'static str) -> Kit<RedbAdapter> {
    redb(KitSettings { plant: Some(name), ..KitSettings::default() })
}

#[test]
fn a_few_seeds_pass_and_replay_bit_for_bit() {
    assert_seeds_pass_and_replay(&redb(KitSettings { ops: Some(60), ..KitSettings::default() }), 0..6);
}

#[test]
fn ops_files_round_trip() {
    let mut settings = KitSettings {
        ops: Some(30),
        crash_mode: Some(CrashMode::Prefix),
        fs: FsProfile::EXT4,
        plant: Some("redb-no-sync"),
        ..KitSettings::default()
    };
    settings.harsh.torn_garbage = true;
    settings.harsh.read_bitflips = true;
    let target = redb(settings);
    let ops = target.generate(3);
    let text = ops_file(&target, 3, &ops, "a test");
    assert!(
        text.contains("\ntarget redb\nseed 3\ncrash-mode prefix\nfs ext4\nplant redb-no-sync\ntorn-garbage on\n"),
        "{text}"
    );
    let (back, seed, parsed) = parse_ops_file(redb(KitSettings::default()), &text).unwrap();
    let KitSettings { ops: op_count, .. } = target.settings.clone();
    assert_eq!(
        KitSettings { ops: op_count, ..back.settings },
        target.settings,
        "every setting but the op count, which the list itself gives"
    );
    assert_eq!(seed, 3);
    assert_eq!(parsed, ops);
}

#[test]
fn explore_runs_clean_and_catches_a_plant() {
    let options = ExploreOptions { jobs: 2, ..ExploreOptions::default() };
    let honest = redb(KitSettings::default());
    let report = explore(&honest, 1, 12, &options).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    assert!(
        report.counts.states > report.counts.distinct_states && report.counts.distinct_states > 0,
        "{}",
        report.to_text()
    );
    let again = explore(&honest, 1, 12, &ExploreOptions { jobs: 1, ..options.clone() }).unwrap();
    assert_eq!(again.without_timings(), report.without_timings(), "the report does not depend on --jobs");

    let planted = planted("redb-no-sync");
    let report = explore(&planted, 1, 12, &options).unwrap();
    assert!(report.failures_total > 0, "{}", report.to_text());
    let first = &report.failures[0];
    assert!(first.repro.contains("--target redb") && first.repro.contains("--plant redb-no-sync"), "{}", first.repro);
}

/// Depth 2 on redb: every recovery (and probe) crashed again at every
/// I/O, the same for any `--jobs`; a planted late write is caught there
/// too, its second crashes named with their repro.
#[test]
fn depth_two_runs_clean_and_catches_a_plant() {
    let options = ExploreOptions { jobs: 2, depth: 2, ..ExploreOptions::default() };
    let honest = redb(KitSettings::default());
    let report = explore(&honest, 1, 8, &options).unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    let second = report.depth2.as_ref().expect("depth 2");
    assert_eq!(second.recoveries_recorded, report.counts.distinct_states);
    assert!(second.counts.states > second.counts.io_indices && second.counts.distinct_states > 0, "{second:?}");
    let again = explore(&honest, 1, 8, &ExploreOptions { jobs: 1, ..options.clone() }).unwrap();
    assert_eq!(again.without_timings(), report.without_timings(), "the report does not depend on --jobs");

    let planted = planted("redb-late-write");
    let report = explore(&planted, 1, 12, &options).unwrap();
    let deeper = report.failures.iter().find(|f| f.then.is_some()).expect("a second crash fails");
    assert!(deeper.repro.contains("--target redb") && deeper.repro.contains("--then-io"), "{}", deeper.repro);
}

#[test]
fn torn_garbage_states_are_explored_only_when_asked() {
    let options = ExploreOptions::default();
    let mild = explore(&redb(KitSettings::default()), 1, 12, &options).unwrap();
    let mut settings = KitSettings::default();
    settings.harsh.torn_garbage = true;
    let harsh = redb(settings);
    let harsh = explore(&harsh, 1, 12, &options).unwrap();
    assert!(harsh.counts.states > mild.counts.states, "{} vs {}", harsh.counts.states, mild.counts.states);
}

/// REDB.md, finding 4, as a test: after an unclean shutdown, one flipped
/// bit in a page of the newest commit (durable: its `commit()` returned)
/// makes redb — integrity check on open and all — fall back to the commit
/// before it and open without a word if that commit was made in one phase,
/// and refuse with `Corrupted` if it was made in two.
#[test]
fn a_damaged_newest_commit_is_rolled_back_silently_in_one_phase_and_refused_in_two() {
    use redb::{Builder, ReadableDatabase, TableDefinition};
    use std::path::Path;
    use vfs::{read_whole, MemVfs, OpenMode, Vfs};

    const T: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t");
    let path = Path::new("/db/data.redb");
    let open = |vfs: &MemVfs| {
        let file = vfs.open(path, OpenMode::Write).unwrap();
        Builder::new().set_check_integrity_on_open(true).create_with_backend(VfsBackend::new(
            file,
            "/db/data.redb",
            None,
        ))
    };
    let commit = |db: &redb::Database, value: &[u8], two_phase: bool| {
        let mut txn = db.begin_write().unwrap();
        txn.set_two_phase_commit(two_phase);
        txn.open_table(T).unwrap().insert(b"k".as_slice(), value).unwrap();
        txn.commit().unwrap();
    };
    // What each damaged image opens to: the value read, or the error.
    let outcomes = |two_phase: bool| -> Vec<Result<Vec<u8>, String>> {
        let vfs = MemVfs::new();
        vfs.create_dir_all(Path::new("/db")).unwrap();
        drop(vfs.open(path, OpenMode::Create).unwrap());
        let db = open(&vfs).unwrap();
        commit(&db, b"first", two_phase);
        let before = read_whole(&vfs, path).unwrap();
        commit(&db, b"second", two_phase);
        let after = read_whole(&vfs, path).unwrap();
        // The process dies: no close, the file stays marked as in use.
        std::mem::forget(db);
        let mut outcomes = Vec::new();
        for page in 1..after.len() / 4096 {
            let range = page * 4096..(page + 1) * 4096;
            if before.get(range.clone()) == Some(&after[range.clone()]) {
                continue;
            }
            let mut damaged = after.clone();
            damaged[range.start + 100] ^= 0x10;
            let copy = MemVfs::new();
            copy.create_dir_all(Path::new("/db")).unwrap();
            copy.open(path, OpenMode::Create).unwrap().write_at(0, &damaged).unwrap();
            outcomes.push(match open(&copy) {
                Ok(db) => {
                    let read = db.begin_read().unwrap();
                    Ok(read.open_table(T).unwrap().get(b"k".as_slice()).unwrap().unwrap().value().to_vec())
                }
                Err(e) => Err(e.to_string()),
            });
        }
        outcomes
    };
    let one_phase = outcomes(false);
    eprintln!("one phase, a bit flipped in each page the second commit changed: {one_phase:?}");
    assert!(one_phase.contains(&Ok(b"first".to_vec())), "no silent rollback in one phase: {one_phase:?}");
    let two_phase = outcomes(true);
    eprintln!("two phases: {two_phase:?}");
    assert!(!two_phase.contains(&Ok(b"first".to_vec())), "a rollback in two phases: {two_phase:?}");
    assert!(
        two_phase.iter().any(|o| o.as_ref().is_err_and(|e| e.contains("Primary is corrupted despite 2-phase commit"))),
        "{two_phase:?}"
    );
}

/// A quarter of the crash points reached inside an operation are process
/// kills (the page cache kept), some followed by a power loss: redb comes
/// back from every one of them over a few dozen seeds.
#[test]
fn kills_inside_operations_happen_and_redb_survives_them() {
    let target = redb(KitSettings { ops: Some(120), ..KitSettings::default() });
    let mut kills = 0;
    for seed in 0..40 {
        let outcome = target.run(seed, &target.generate(seed), false);
        assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
        kills += outcome.counters.crash_gaps.get("kill_in_op").copied().unwrap_or(0);
    }
    assert!(kills > 0, "no kill inside an operation in 40 seeds");
}

fn with_clients(mut target: Kit<RedbAdapter>, clients: usize) -> Kit<RedbAdapter> {
    target.set_clients(clients).expect("redb declares readers");
    target
}

/// Readers beside the writer (`--clients 3`): seeds that draw them run
/// clean and replay bit for bit; a seed that draws one client runs the
/// very workload it runs without `--clients`.
#[test]
fn readers_run_clean_beside_the_writer() {
    use simkit::KitOp;
    let readers = with_clients(redb(KitSettings { ops: Some(80), ..KitSettings::default() }), 3);
    let plain = redb(KitSettings { ops: Some(80), ..KitSettings::default() });
    let (mut several, mut one) = (0, 0);
    for seed in 0..12 {
        let ops = readers.generate(seed);
        if readers.config(seed, None).clients == 1 {
            assert_eq!(ops, plain.generate(seed), "seed {seed}: one client, the same workload");
            one += 1;
        } else {
            assert!(ops.iter().any(|p| matches!(p.op, KitOp::Reader { .. })), "seed {seed}: no reader drawn");
            several += 1;
        }
    }
    assert!(several > 0 && one > 0, "12 seeds drew {several} with readers, {one} without");
    assert_seeds_pass_and_replay(&readers, 0..6);
    let seed = (0..12).find(|&seed| readers.config(seed, None).clients > 1).expect("counted above");
    let ops = readers.generate(seed);
    let (back, _, parsed) = parse_ops_file(redb(KitSettings::default()), &ops_file(&readers, seed, &ops, "")).unwrap();
    assert_eq!((back.settings.clients, parsed), (Some(3), ops), "READER lines print and parse back");
}

/// `--plant redb-reader-unpinned` (each read in a fresh read transaction)
/// fails check `isolation` within a few seeds; its failure names the
/// reader and the operation it began at; and its `.ops` file keeps
/// `clients`.
#[test]
fn an_unpinned_reader_is_caught_as_an_isolation_failure() {
    let target = with_clients(planted("redb-reader-unpinned"), 3);
    let failure =
        (0..40).find_map(|seed| target.run(seed, &target.generate(seed), false).failure).expect("caught in 40 seeds");
    assert_eq!(failure.check, simulator::failure::Check::Isolation, "{}", failure.detail);
    assert!(failure.detail.contains("began at op #"), "{}", failure.detail);
    assert!(failure.repro.contains("--clients 3"), "{}", failure.repro);
    let text = ops_file(&target, failure.seed, &target.generate(failure.seed), "a test");
    assert!(text.contains("\nclients 3\n"), "{text}");
    let (back, _, _) = parse_ops_file(redb(KitSettings::default()), &text).unwrap();
    assert_eq!(back.settings.clients, Some(3));
}

/// `--clients` asks for more readers than redb declares: refused, saying
/// how many it runs.
#[test]
fn too_many_clients_are_refused() {
    let mut target = redb(KitSettings::default());
    let err = target.set_clients(6).unwrap_err();
    assert!(err.contains("runs 1 to 5 clients"), "{err}");
    assert!(target.set_clients(0).is_err());
}

/// A sweep without `--clients` says the readers redb declares go
/// unchecked; with them, it says nothing.
#[test]
fn declared_readers_left_unchecked_are_said() {
    let mut kit = redb(KitSettings::default());
    let note = kit.unchecked().expect("readers declared, none run");
    assert!(note.contains("--clients 5"), "{note}");
    kit.set_clients(3).unwrap();
    assert_eq!(kit.unchecked(), None);
}

/// Every kit target injects recovery faults and workload faults (the
/// kit supplies both): redb survives one failing I/O in each recovery
/// and in each run of its workload.
#[test]
fn a_kit_target_survives_one_failing_io_in_every_recovery() {
    let report = explore(
        &redb_target(KitSettings::default()),
        1,
        12,
        &ExploreOptions { faults: true, ..ExploreOptions::default() },
    )
    .unwrap();
    assert_eq!(report.failures_total, 0, "{}", report.to_text());
    let counts = report.faults.clone().expect("--faults reports");
    assert!(counts.injected > 0 && counts.runs == counts.injected, "{counts:?}");
    assert!(counts.workload.runs > 0 && counts.workload.injected == counts.workload.runs, "{counts:?}");
}

/// `--damage` on a target that does not describe its files' records is a
/// usage error.
#[test]
fn damage_on_a_target_without_records_is_a_usage_error() {
    let refused =
        explore(&redb(KitSettings::default()), 1, 5, &ExploreOptions { damage: true, ..ExploreOptions::default() })
            .unwrap_err();
    assert!(refused.contains("does not describe its files' records"), "{refused}");
}

/// Every shrunk repro under `corpus/redb/` (`--shrink --save`) passes:
/// soak seed 365941073990 (issue 52's deep soak) is the kit model's
/// mistake, fixed (`Model::allows`: any surviving state of equal content).
#[test]
fn the_saved_redb_regressions_pass() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/redb");
    let held = simulator::cli::replay::assert_saved_ops_hold(|| redb(KitSettings::default()), &dir);
    assert!(held.passed >= 1 && held.failed_as_expected == 0, "{held:?}");
}

/// Readers stepping inside the writer's operations (`--interleave`), at
/// the pause points the backend announces (before a commit's flush):
/// seeds run clean and replay bit for bit, steps did run, and the unpinned
/// plant is caught by a step inside a commit, whose seed passes honestly.
#[test]
fn interleaved_readers_run_clean_and_catch_the_unpinned_plant_inside_a_commit() {
    let interleaved = |mut target: Kit<RedbAdapter>| {
        target.settings.ops = Some(80);
        let mut target = with_clients(target, 3);
        target.set_interleave(true).expect("with clients");
        target
    };
    let honest = interleaved(redb(KitSettings::default()));
    assert_seeds_pass_and_replay(&honest, 0..6);
    let steps: u64 =
        (0..6).map(|seed| honest.run(seed, &honest.generate(seed), false).counters.interleaved_steps).sum();
    assert!(steps > 0, "no reader stepped inside a writer's operation");
    let bad = interleaved(planted("redb-reader-unpinned"));
    let caught = (0..60)
        .filter_map(|seed| bad.run(seed, &bad.generate(seed), false).failure)
        .find(|failure| failure.detail.contains("stepping at I/O"))
        .expect("a step inside a commit catches it within 60 seeds");
    assert_eq!(caught.check, simulator::failure::Check::Isolation, "{}", caught.detail);
    assert!(honest.run(caught.seed, &honest.generate(caught.seed), false).failure.is_none(), "seed {}", caught.seed);
}
