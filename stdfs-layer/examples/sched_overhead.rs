//! What the layer's scheduler (issue 48, STDFS.md "Threads") costs per
//! interposed call: the same served call (`pwrite` of 8 bytes to a
//! simulated file) timed in three runs on a fresh disk each —
//!
//! - `no scheduler`: one engine thread, as persy and cowkv run (the call
//!   pays one thread-local read for the scheduling point);
//! - `scheduler, no handover`: the run has a scheduler (a second thread,
//!   blocked for good on a condition variable), so every call is a
//!   scheduling point with one runnable thread: a lock and a pick;
//! - `two threads`: two threads each make half the calls, and the seed's
//!   policy hands the baton between them (the handovers are counted).
//!
//! A measurement, not a test: `cargo run --release -p stdfs-layer
//! --example sched_overhead [CALLS]`. Wall time of the engine call, read
//! on the harness's thread (the engine's clock is the seed's).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Instant;

use stdfs_layer::demo::strict_disk;
use stdfs_layer::{Place, Worker};

/// `calls` writes of 8 bytes by `writers` threads (the engine call's own
/// when 1), with `idle` another thread blocked for good beside them.
fn engine(calls: u64, writers: u64, idle: bool) -> Option<(u64, u64, String)> {
    let file = File::create("/sim-db/db/bench").expect("created on the simulated disk");
    let file = Arc::new(file);
    if idle {
        let gate = Arc::new((Mutex::new(()), Condvar::new()));
        thread::spawn(move || {
            let (lock, never) = &*gate;
            let _unused = never.wait_while(lock.lock().unwrap(), |_| true);
        });
    }
    let write = |file: Arc<File>, n: u64| {
        for i in 0..n {
            file.write_all_at(&i.to_le_bytes(), (i % 512) * 8).expect("served");
        }
    };
    if writers == 1 {
        write(Arc::clone(&file), calls);
    } else {
        let threads: Vec<_> = (0..writers)
            .map(|_| {
                let file = Arc::clone(&file);
                thread::spawn(move || write(file, calls / writers))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().expect("joined"));
    }
    stdfs_layer::scheduler_figures()
}

fn measure(name: &str, calls: u64, writers: u64, idle: bool, seed: u64) {
    let place = Place { vfs: strict_disk(), dir: PathBuf::from("/db"), entropy_seed: seed, plant: None };
    let worker = Worker::start(place, || Ok::<(), ()>(())).unless_refused().expect("set up");
    let start = Instant::now();
    let figures = worker.call(move |_| engine(calls, writers, idle)).unless_refused();
    let elapsed = start.elapsed();
    let per_call_ns = elapsed.as_nanos() as f64 / calls as f64;
    let how = figures.map_or("no scheduler".to_string(), |(points, switches, policy)| {
        format!("{points} scheduling points, {switches} handovers, policy {policy}")
    });
    println!("{name:>24}: {calls} calls in {:.3} s, {per_call_ns:.0} ns a call ({how})", elapsed.as_secs_f64());
    // An idle thread stays blocked for good, parked (the layer says so on
    // stderr when the engine is dropped).
    drop(worker);
}

fn main() {
    let calls: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    for round in 0..3 {
        println!("round {round}");
        measure("no scheduler", calls, 1, false, 1);
        measure("scheduler, no handover", calls, 1, true, 1);
        for seed in 1..=4 {
            measure(&format!("two threads, seed {seed}"), calls, 2, false, seed);
        }
    }
}
