//! `cargo test` replays every saved operation list under
//! `corpus/regressions/*.ops` (written by `sim --shrink --save`): each was
//! once a failure, and must now pass.

use std::path::Path;

use sim::cli::targets::replay;

#[test]
fn every_saved_regression_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "ops"))
        .collect();
    files.sort();
    let mut failed = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("read regression");
        let (_, failure) = replay(&text, None, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Some(failure) = failure {
            failed.push(format!("{}: check '{}': {}", path.display(), failure.check, failure.detail));
        }
    }
    assert!(failed.is_empty(), "regressions failing again:\n{}", failed.join("\n"));
    eprintln!("replayed {} saved regressions", files.len());
}

#[test]
fn a_replayed_list_runs_its_operations() {
    // A hand-written list through the same path as the saved ones: the
    // rows written before the crash must be back after it.
    let text = "# hand-written\nseed 3\nfsync always\ncrash-mode strict\n\
                0 WINDOW t0 ts 5\n1 HSET t0:1 ts 1 f0 a\n2 HSET t0:2 ts 50\n3 EVICT\n4 CRASH\n5 HGETALL t0:1\n";
    let (ops, failure) = replay(text, None, None).unwrap();
    assert_eq!(ops, 6);
    assert!(failure.is_none(), "{failure:?}");
}

/// `--replay` runs the file as it is: a flag that would change the run
/// (`--fs`, `--crash-mode`, `--ops`, a target's settings) is refused (exit
/// 2), not silently ignored.
#[test]
fn a_replay_refuses_flags_it_would_ignore() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/regressions/manifest-compacted-cut-seq-reuse.ops");
    let flags = [
        &["--fs", "ext4"][..],
        &["--crash-mode", "prefix"],
        &["--ops", "5"],
        &["--fsync", "no"],
        &["--set", "journal_mode=wal"],
        &["--clients", "3"],
        &["--plant", "redb-no-sync"],
    ];
    for flag in flags {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("--replay")
            .arg(&file)
            .args(flag)
            .output()
            .expect("the sim binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {stderr}");
        assert!(stderr.contains("edit the file"), "{flag:?}: {stderr}");
    }
}
