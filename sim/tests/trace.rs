//! `sim trace` end to end, on the system's strace: the planted proof of
//! PROGRAMS.md. `programs/replace/run.sh` replaces a file by a temporary
//! file and a rename; its `buggy` mode never fsyncs the temporary file, and
//! `trace explore` under `posix` must find a crash state that the checker
//! fails, naming the lost write; its `fixed` mode must be clean. Bad
//! usage and a damaged recording exit 2 with the place named.
//!
//! strace is required (`.ci/run` installs Debian's): without it these
//! tests fail with that message rather than pass having checked nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sim"))
}

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../programs")
}

fn require_strace() {
    let found = Command::new("strace").arg("-V").output().is_ok_and(|out| out.status.success());
    assert!(found, "strace is not installed: `sim trace` needs it (Debian: apt-get install strace; .ci/run does)");
}

/// Record `run.sh DIR mode` over a directory holding the old config.
fn record(scratch: &Path, mode: &str) -> PathBuf {
    let dir = scratch.join(format!("db-{mode}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config"), "old content, version 1\n").unwrap();
    let out = scratch.join(format!("{mode}.syscalls"));
    let recorded = sim()
        .args(["trace", "record", "--dir"])
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .arg("--")
        .arg(programs().join("replace/run.sh"))
        .arg(&dir)
        .arg(mode)
        .output()
        .unwrap();
    assert!(recorded.status.success(), "record {mode}: {}", String::from_utf8_lossy(&recorded.stderr));
    assert_eq!(String::from_utf8_lossy(&recorded.stdout), "replaced\n", "the program's output passes through");
    out
}

fn explore(recording: &Path, fs: &str) -> (Output, serde_json::Value) {
    explore_jobs(recording, fs, 2)
}

fn explore_jobs(recording: &Path, fs: &str, jobs: usize) -> (Output, serde_json::Value) {
    let check = format!("{} \"$1\" \"$2\"", programs().join("replace/check.sh").display());
    let output = sim()
        .args(["trace", "explore"])
        .arg(recording)
        .args(["--check", &check, "--fs", fs, "--jobs", &jobs.to_string(), "--json"])
        .output()
        .unwrap();
    let json = serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
    (output, json)
}

#[test]
fn the_unsynced_temporary_file_is_found_under_posix_and_the_fixed_program_is_clean() {
    require_strace();
    let scratch = tempfile::tempdir().unwrap();
    let buggy = record(scratch.path(), "buggy");
    let text = std::fs::read_to_string(&buggy).unwrap();
    assert!(text.contains("\nrename config.tmp config\n") && !text.contains("open 2 config.tmp"), "{text}");
    let (output, json) = explore(&buggy, "posix");
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let failures = json["failures"].as_array().expect("failures listed");
    assert!(!failures.is_empty(), "{json}");
    // The acknowledged replacement came back empty: the rename and the
    // directory fsync were durable, the temporary file's write was lost.
    let acknowledged_loss = failures.iter().any(|failure| {
        failure["printed"] == "replaced\n"
            && failure["crash"].as_str().is_some_and(|crash| crash.contains("unsynced data op is lost"))
            && failure["files"][0]["bytes"] == 0
            && failure["unsynced_writes"] == serde_json::json!(["#2 `write 1 0 (23 bytes)`"])
    });
    assert!(acknowledged_loss, "{json:#}");
    // The failures (everything but timings) are the same for any --jobs.
    let (_, one_job) = explore_jobs(&buggy, "posix", 1);
    let (_, three_jobs) = explore_jobs(&buggy, "posix", 3);
    assert_eq!(one_job["failures"], json["failures"]);
    assert_eq!(three_jobs["failures"], json["failures"]);
    let repro = failures[0]["repro"].as_str().unwrap();
    assert!(repro.contains("--only-io") && repro.contains("--fs posix"), "{repro}");

    let fixed = record(scratch.path(), "fixed");
    let (output, json) = explore(&fixed, "posix");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(json["failing_states"], 0, "{json:#}");
    assert!(json["distinct_states"].as_u64().unwrap() > 1, "more than one state was checked: {json:#}");
}

#[test]
fn a_damaged_recording_and_bad_usage_exit_2_naming_the_place() {
    let scratch = tempfile::tempdir().unwrap();
    let bad = scratch.path().join("bad.syscalls");
    std::fs::write(&bad, "segsim-syscalls 2\nroot /x\nwrite 1 0 6zz0\nend\n").unwrap();
    let output = sim().args(["trace", "explore"]).arg(&bad).args(["--check", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("line 3, field 4"), "{stderr}");
    let usage = sim().args(["trace", "explore", "--check", "true"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let no_handle = scratch.path().join("no-handle.syscalls");
    std::fs::write(&no_handle, "segsim-syscalls 2\nroot /x\nfsync 7\nend\n").unwrap();
    let output = sim().args(["trace", "explore"]).arg(&no_handle).args(["--check", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("handle 7 is not open"));
}

#[test]
fn states_are_written_under_scratch_and_removed_after_their_check() {
    let scratch = tempfile::tempdir().unwrap();
    let recording = scratch.path().join("small.syscalls");
    let text = "segsim-syscalls 2\nroot /x\nopen 1 f create\nwrite 1 0 6162\nfsync 1\nclose 1\nend\n";
    std::fs::write(&recording, text).unwrap();
    let states = scratch.path().join("states");
    std::fs::create_dir(&states).unwrap();
    // The checker passes only where it is handed a directory under --scratch.
    let check = format!("case \"$1\" in {}/*) exit 0;; *) echo \"elsewhere: $1\"; exit 1;; esac", states.display());
    let output = sim()
        .args(["trace", "explore"])
        .arg(&recording)
        .args(["--check", &check, "--json", "--scratch"])
        .arg(&states)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(json["distinct_states"].as_u64().unwrap() > 1, "{json:#}");
    assert_eq!(json["scratch"], states.display().to_string());
    assert_eq!(std::fs::read_dir(&states).unwrap().count(), 0, "every state's directory is removed");
    let missing = scratch.path().join("missing");
    let output =
        sim().args(["trace", "explore"]).arg(&recording).args(["--check", "true", "--scratch"]).arg(&missing).output();
    let output = output.unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("not a directory"));
}

/// A sector torn into garbage is a drive's fault that no profile's file
/// system does: left out by default, explored with `--torn-garbage`, which
/// the report and each repro line say. State numbers do not depend on it.
#[test]
fn torn_garbage_states_are_explored_only_when_asked() {
    require_strace();
    let scratch = tempfile::tempdir().unwrap();
    let recording = record(scratch.path(), "buggy");
    let (plain_out, plain) = explore_jobs(&recording, "posix", 1);
    let check = format!("{} \"$1\" \"$2\"", programs().join("replace/check.sh").display());
    let harsh_out = sim()
        .args(["trace", "explore"])
        .arg(&recording)
        .args(["--check", &check, "--torn-garbage", "--json"])
        .output()
        .unwrap();
    let harsh: serde_json::Value = serde_json::from_slice(&harsh_out.stdout).unwrap();
    assert_eq!((plain["torn_garbage"].as_bool(), harsh["torn_garbage"].as_bool()), (Some(false), Some(true)));
    let states = |json: &serde_json::Value| json["crash_states"].as_u64().unwrap();
    assert!(states(&harsh) > states(&plain), "{} vs {}", states(&harsh), states(&plain));
    assert_eq!(plain_out.status.code(), Some(1), "the missing fsync needs no garbage to show");
    let repros: Vec<&str> = harsh["failures"].as_array().unwrap().iter().filter_map(|f| f["repro"].as_str()).collect();
    assert!(!repros.is_empty() && repros.iter().all(|r| r.contains(" --torn-garbage ")), "{repros:?}");
}
