//! `sim bench-replay`, the fresh process `sim bench` times each AOF replay
//! in (`bench::replay`): it opens the store it is given, checks the number
//! of records replayed, and prints the seconds — or fails, and says why.

use std::process::Command as Process;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Command, Options, Store};
use engine::vfs::{OsVfs, Vfs};

const NOW_MS: u64 = 1_700_000_000_000;

/// A closed store of `rows` HSETs in a fresh directory.
fn store_of(rows: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    let (mut store, _) = Store::open(vfs, Arc::new(ManualClock::new(NOW_MS)), dir.path(), Options::default()).unwrap();
    for i in 0..rows {
        let command =
            Command::HSet { key: format!("t:{i}").into_bytes(), pairs: vec![(b"v".to_vec(), vec![b'x'; 40])] };
        store.execute(&command).unwrap();
    }
    store.close().unwrap();
    dir
}

fn bench_replay(dir: &std::path::Path, frames: u64) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_sim"))
        .arg("bench-replay")
        .arg("--dir")
        .arg(dir)
        .args(["--frames", &frames.to_string(), "--now-ms", &NOW_MS.to_string()])
        .output()
        .unwrap()
}

#[test]
fn a_replay_is_timed_in_a_fresh_process_and_its_record_count_checked() {
    let dir = store_of(50);
    let output = bench_replay(dir.path(), 50);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let secs: f64 = String::from_utf8_lossy(&output.stdout).trim().parse().expect("seconds on stdout");
    assert!(secs > 0.0 && secs.is_finite(), "{secs}");

    let wrong = bench_replay(dir.path(), 51);
    assert!(!wrong.status.success(), "a replay of 50 records passed for 51");
}
