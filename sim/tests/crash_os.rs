//! `sim crash-os` end to end: the `sim` binary runs redb in real child
//! processes on the real file system, SIGKILLs them and checks each
//! recovery. An honest run passes; the planted harness mistake (the child
//! acknowledges each commit before running it) must be caught by the
//! durability check, with the seed, the cycle and a rerun line; bad usage
//! exits 2.
//!
//! Kill moments are seeded but what a child has done by then is the
//! machine's: these tests assert what holds on any machine (a clean run
//! passes; the planted mistake is caught within a generous number of
//! cycles — a caught run ends at once; on this repository's machine redb's
//! seed 1 was caught at its first cycle in each of three runs), never
//! exact counts.

use std::path::Path;
use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim")).arg("crash-os").args(args).output().expect("the sim binary runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Seed 4 commits at every redb level, `none` (volatile) among them.
#[test]
fn an_honest_engine_passes_every_cycle() {
    let output = sim(&["--target", "redb", "--seed", "4", "--cycles", "8"]);
    let report = text(&output);
    assert_eq!(output.status.code(), Some(0), "{report}");
    assert!(report.contains("8 of 8 kill/restart cycles passed"), "{report}");
    assert!(report.contains("no failure") && report.contains("not reproducible bit for bit"), "{report}");
    assert!(!report.contains("left for inspection"), "a passing run removes its directory: {report}");
}

#[test]
fn a_commit_acknowledged_before_it_ran_is_caught() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let engine_dir = dir.path().join("db");
    let engine_dir_text = engine_dir.to_str().expect("a UTF-8 temporary path");
    let args = ["--target", "redb", "--seed", "1", "--cycles", "100", "--plant-early-ack", "--dir", engine_dir_text];
    let output = sim(&args);
    let report = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert!(report.contains("FAILED at cycle") && report.contains("(seed 1): check 'durability'"), "{report}");
    assert!(report.contains("an acknowledged commit was lost"), "{report}");
    assert!(report.contains("rerun: cargo run --release -p sim -- crash-os --target redb --seed 1"), "{report}");
    assert!(report.contains("--plant-early-ack"), "the rerun keeps the plant: {report}");
    assert!(engine_dir.join("data.redb").exists(), "the failed run's database is left for inspection");
}

#[test]
fn bad_usage_exits_2_and_says_why() {
    let segsim = sim(&["--cycles", "1"]);
    assert_eq!(segsim.status.code(), Some(2));
    assert!(text(&segsim).contains("make crash-os"), "{}", text(&segsim));
    let zero = sim(&["--target", "redb", "--cycles", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(text(&zero).contains("--cycles must be at least 1"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("someone-elses"), b"data").expect("a file");
    let taken = sim(&["--target", "redb", "--dir", dir.path().to_str().expect("UTF-8"), "--cycles", "1"]);
    assert_eq!(taken.status.code(), Some(2), "{}", text(&taken));
    assert!(text(&taken).contains("not empty"));
    assert!(Path::new(&dir.path().join("someone-elses")).exists(), "nothing of a refused directory is touched");
    let plant = sim(&["--target", "redb", "--plant", "no-such-plant"]);
    assert_eq!(plant.status.code(), Some(2));
    assert!(text(&plant).contains("redb-no-sync"), "the error lists the plants: {}", text(&plant));
}

/// The page-cache rule is what catches an eventual commit a kill lost.
/// SQLite in WAL mode with `synchronous=NORMAL` promises only `Eventual`
/// (a power loss may roll a commit back), but its commits reach the
/// kernel before they return: honest, it passes the page-cache rule; with
/// the early acknowledgement planted it fails it, and passes the looser
/// power-loss rule, which lets an eventual commit go.
#[cfg(feature = "sqlite")]
#[test]
fn a_kill_must_keep_the_eventual_commits_a_power_loss_may_take() {
    let wal_normal = ["--target", "sqlite", "--seed", "1", "--set", "journal_mode=wal", "--set", "synchronous=normal"];
    let run = |extra: &[&str]| {
        let output = sim(&[&wal_normal[..], extra].concat());
        (output.status.code(), text(&output))
    };
    let (code, report) = run(&["--cycles", "10"]);
    assert_eq!(code, Some(0), "{report}");
    let (code, report) = run(&["--cycles", "100", "--plant-early-ack"]);
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("after a process kill (the page cache survives)"), "{report}");
    let (code, report) = run(&["--cycles", "10", "--plant-early-ack", "--kill-rule", "power-loss"]);
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("kill rule: power-loss"), "{report}");
}

/// `--clients 3` (issue 49): the child runs the readers' steps and the
/// parent holds each read to the state its reader began on. Honest redb
/// passes; the planted unpinned reader (a fresh read transaction per read)
/// fails check `isolation`, within a generous number of cycles (on this
/// repository's machine seeds 1 to 4 were caught by their 8th cycle); a
/// configuration whose writer waits for its readers is refused.
#[test]
fn readers_run_on_the_real_disk_and_an_unpinned_one_is_caught() {
    let honest = sim(&["--target", "redb", "--seed", "4", "--cycles", "6", "--clients", "3"]);
    let report = text(&honest);
    assert_eq!(honest.status.code(), Some(0), "{report}");
    let planted = sim(&[
        "--target",
        "redb",
        "--seed",
        "4",
        "--cycles",
        "100",
        "--clients",
        "3",
        "--plant",
        "redb-reader-unpinned",
    ]);
    let report = text(&planted);
    assert_eq!(planted.status.code(), Some(1), "{report}");
    assert!(report.contains("check 'isolation'") && report.contains("READER"), "{report}");
    assert!(report.contains("--clients 3"), "the rerun keeps the clients: {report}");
    let dir = report.lines().find_map(|line| line.split("left for inspection: ").nth(1)).map(str::trim);
    if let Some(dir) = dir.filter(|dir| dir.starts_with(std::env::temp_dir().to_str().unwrap_or("/tmp"))) {
        let _ = std::fs::remove_dir_all(dir);
    }
    let waits =
        sim(&["--target", "sqlite", "--seed", "1", "--cycles", "2", "--clients", "3", "--set", "journal_mode=delete"]);
    let report = text(&waits);
    assert_eq!(waits.status.code(), Some(1), "{report}");
    assert!(report.contains("writer that waits for its readers"), "{report}");
    let dir = report.lines().find_map(|line| line.split("left for inspection: ").nth(1)).map(str::trim);
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}
