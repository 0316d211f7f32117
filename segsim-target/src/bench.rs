//! `sim bench`: the harness and the engine measured side by side, in one
//! run, on one core.
//!
//! Every ratio compares two measurements taken in the same process a
//! moment apart on the same operation lists, so a busy machine slows both
//! sides alike. Nothing here asserts a figure: it prints them.
//!
//! - **sim throughput** — workload operations (and seeds) per second with
//!   the default swarm configuration, checks and all, generating the
//!   workload included (as `sim --seeds` does), and without it;
//! - **sim overhead** — the simulator's time for a set of seeds ÷ the same
//!   operation lists on the engine over the fault-free `MemVfs` with no
//!   model and no checks (the "bare engine");
//! - **sim vs OS** — the same operation lists on `OsVfs` in a temp
//!   directory (same fsync policy, real fsyncs) ÷ the simulator's time;
//! - **explore rate** — crash states enumerated and checked per second by
//!   `sim explore` over three seeds' workloads, at depth 1 and (capped)
//!   at depth 2;
//! - **engine on OsVfs** — AOF replay MB/s from the page cache, segment
//!   point-get latency (p50, p99) through the mapping, seal (build +
//!   fsync) MB/s, hot-path write ops/s under each fsync policy.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::aof::FsyncPolicy;
use engine::clock::ManualClock;
use engine::seg::{Seg, SegBuilder};
use engine::store::{Command, Options, Store};
use engine::vfs::{MemVfs, OsVfs, Vfs};
use serde_json::{json, Value};

use crate::config::{Config, Overrides};
use crate::run::run_ops;
use crate::segsim::SegsimTarget;
use crate::workload::{generate, with_oversized_command, Op, PlannedOp, T0_MS};
use simulator::explore::{explore, ExploreOptions};

/// What to measure, and how much.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Seeds for the simulator figures (0..seeds).
    pub seeds: u64,
    /// Seeds for the OsVfs comparison (real fsyncs are slow).
    pub os_seeds: u64,
    /// Rows in the engine benchmarks' segment and log.
    pub rows: u64,
    /// Operations per explored workload (seeds 1, 2 and 3).
    pub explore_ops: u64,
    /// The `sim` program to time each AOF replay in, as a fresh process
    /// (`sim bench-replay`); `None` times it in this one (see `replay`).
    pub replay_program: Option<PathBuf>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions { seeds: 400, os_seeds: 20, rows: 200_000, explore_ops: 200, replay_program: None }
    }
}

/// One named figure.
#[derive(Clone, Debug)]
pub struct Figure {
    /// Stable name (the JSON key).
    pub name: &'static str,
    /// The value.
    pub value: f64,
    /// Its unit, for people.
    pub unit: &'static str,
    /// How it was measured, in a few words.
    pub how: String,
}

/// Every figure of one bench run.
#[derive(Clone, Debug, Default)]
pub struct BenchReport {
    /// In the order measured.
    pub figures: Vec<Figure>,
}

impl BenchReport {
    fn push(&mut self, name: &'static str, value: f64, unit: &'static str, how: String) {
        eprintln!("bench: {name} = {value:.2} {unit}");
        self.figures.push(Figure { name, value, unit, how });
    }

    /// A table for people.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.figures {
            out.push_str(&format!("{:<28} {:>14.2} {:<10} {}\n", f.name, f.value, f.unit, f.how));
        }
        out
    }

    /// One JSON object: name → value (units in the names' docs).
    pub fn to_json(&self) -> Value {
        let map: serde_json::Map<String, Value> =
            self.figures.iter().map(|f| (f.name.to_string(), json!(f.value))).collect();
        Value::Object(map)
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("segsim-bench-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temp dir for the bench");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The operation lists of seeds `0..count` with their configurations.
fn workloads(count: u64) -> Vec<(Config, Vec<PlannedOp>)> {
    (0..count)
        .map(|seed| {
            let config = Config::from_seed(seed, Overrides::default());
            let ops = generate(&config);
            (config, ops)
        })
        .collect()
}

/// The operations on the engine alone: no faults, no model, no checks. A
/// crash or restart is a drop and reopen (what recovery costs is part of
/// the work the simulator also does).
fn run_bare(config: &Config, ops: &[PlannedOp], vfs: Arc<dyn Vfs>, dir: &Path) -> u64 {
    let clock = Arc::new(ManualClock::new(T0_MS));
    let options = Options { fsync: config.fsync, ..Options::default() };
    let open = || Store::open(vfs.clone(), clock.clone(), dir, options).expect("a fault-free open").0;
    let mut store = open();
    let mut done = 0u64;
    for planned in ops {
        match &planned.op {
            Op::Cmd(command) => {
                let _ = store.execute(command);
            }
            Op::Args(args) => {
                let _ = store.execute_args(args);
            }
            Op::OversizedSet { key, value_bytes, byte } => {
                let _ = with_oversized_command(key, *value_bytes, *byte, |command| store.execute(command));
            }
            Op::Evict => {
                let _ = store.evict();
            }
            Op::Rewrite => {
                let _ = store.rewrite();
            }
            Op::Sync => {
                let _ = store.sync();
            }
            Op::Advance(ms) => {
                clock.advance(*ms);
                let _ = store.tick();
            }
            Op::Crash | Op::Restart | Op::Kill => {
                drop(store);
                store = open();
            }
            // A refused open costs next to nothing; the bare engine skips it.
            Op::SecondOpen => {}
        }
        done += 1;
    }
    done
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64().max(1e-9)
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Run every measurement.
pub fn run(options: BenchOptions) -> BenchReport {
    let mut report = BenchReport::default();
    // Generating the lists is part of what `sim --seeds` does, so it counts
    // in the throughput; the overhead ratio compares running alone.
    let started = Instant::now();
    let lists = workloads(options.seeds);
    let generate_secs = seconds(started.elapsed());
    assert_eq!(lists.len() as u64, options.seeds, "one list per seed");
    let sim_secs = sim_figures(&mut report, &lists, generate_secs);
    bare_figures(&mut report, &lists, sim_secs);
    let os_lists = &lists[..options.os_seeds.min(options.seeds) as usize];
    os_figures(&mut report, os_lists);
    explore_figures(&mut report, options.explore_ops);
    engine_figures(&mut report, options.rows, options.replay_program.as_deref());
    report
}

/// Every operation in `lists`.
fn total_ops(lists: &[(Config, Vec<PlannedOp>)]) -> u64 {
    lists.iter().map(|(_, ops)| ops.len() as u64).sum()
}

/// The simulator, checks and all, over `lists` (generated in
/// `generate_secs`): its figures, and the seconds it ran.
fn sim_figures(report: &mut BenchReport, lists: &[(Config, Vec<PlannedOp>)], generate_secs: f64) -> f64 {
    let total_ops = total_ops(lists);
    let started = Instant::now();
    for (config, ops) in lists {
        let outcome = run_ops(config, Overrides::default(), ops, false);
        assert!(outcome.failure.is_none(), "bench seed {} failed: rerun it with sim --seed", config.seed);
    }
    let sim_secs = seconds(started.elapsed());
    report.push(
        "sim_ops_per_sec",
        total_ops as f64 / (generate_secs + sim_secs),
        "ops/s",
        format!("{} seeds, default swarm, one core, generation included (target >= 500000)", lists.len()),
    );
    report.push("sim_seeds_per_sec", lists.len() as f64 / (generate_secs + sim_secs), "seeds/s", "same run".into());
    report.push(
        "sim_run_ops_per_sec",
        total_ops as f64 / sim_secs,
        "ops/s",
        "same run, lists generated beforehand".into(),
    );
    report.push("generate_ops_per_sec", total_ops as f64 / generate_secs, "ops/s", "workload generation alone".into());
    sim_secs
}

/// The bare engine on `MemVfs`, same lists, and its overhead against the
/// simulator's `sim_secs`.
fn bare_figures(report: &mut BenchReport, lists: &[(Config, Vec<PlannedOp>)], sim_secs: f64) {
    let started = Instant::now();
    for (config, ops) in lists {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        run_bare(config, ops, vfs, Path::new("/db"));
    }
    let bare_secs = seconds(started.elapsed());
    report.push(
        "bare_ops_per_sec",
        total_ops(lists) as f64 / bare_secs,
        "ops/s",
        "same lists, engine on MemVfs, no checks".into(),
    );
    report.push("sim_overhead", sim_secs / bare_secs, "x", "sim time / bare engine time (target <= 1.5)".into());
}

/// The same lists on the real file system (fewer: fsyncs are real), and
/// the simulator on those same few.
fn os_figures(report: &mut BenchReport, os_lists: &[(Config, Vec<PlannedOp>)]) {
    let started = Instant::now();
    for (config, ops) in os_lists {
        let dir = TempDir::new("os");
        run_bare(config, ops, Arc::new(OsVfs), &dir.0);
    }
    let os_secs = seconds(started.elapsed());
    let started = Instant::now();
    for (config, ops) in os_lists {
        run_ops(config, Overrides::default(), ops, false);
    }
    let sim_small_secs = seconds(started.elapsed());
    report.push(
        "os_ops_per_sec",
        total_ops(os_lists) as f64 / os_secs,
        "ops/s",
        format!("{} seeds' lists on OsVfs, real fsyncs", os_lists.len()),
    );
    report.push("sim_vs_os", os_secs / sim_small_secs, "x", "OsVfs time / sim time, same lists (target >= 20)".into());
}

/// Depth-2 states per seed in the explore figure: a fixed prefix of the
/// second crashes, so the figure takes seconds at any `--explore-ops`.
const DEPTH2_STATES_PER_SEED: u64 = 100_000;

/// Exhaustive crash-state exploration of three seeds' workloads, one job:
/// at depth 1, then at depth 2 (the first [`DEPTH2_STATES_PER_SEED`]
/// second crashes of each, timed on their own).
fn explore_figures(report: &mut BenchReport, ops: u64) {
    let (mut states, mut distinct, mut secs, mut check_secs) = (0u64, 0u64, 0f64, 0f64);
    for seed in 1..=3 {
        let explored =
            explore(&SegsimTarget::default(), seed, ops, &ExploreOptions::default()).expect("a plain exploration");
        assert_eq!(explored.failures_total, 0, "bench exploration of seed {seed} failed: rerun sim explore");
        states += explored.counts.states;
        distinct += explored.counts.distinct_states;
        secs += explored.counts.elapsed_sec;
        check_secs += explored.counts.phase_sec.check;
    }
    report.push(
        "explore_states_per_sec",
        states as f64 / secs.max(1e-9),
        "states/s",
        format!("seeds 1-3, {ops} ops each, {states} crash states, all phases (target >= 10000)"),
    );
    report.push(
        "explore_recoveries_per_sec",
        distinct as f64 / check_secs.max(1e-9),
        "states/s",
        format!("same, {distinct} distinct images each recovered and checked"),
    );

    let depth2 = ExploreOptions { depth: 2, max_depth2_states: Some(DEPTH2_STATES_PER_SEED), ..Default::default() };
    let (mut states, mut distinct, mut secs) = (0u64, 0u64, 0f64);
    for seed in 1..=3 {
        let explored = explore(&SegsimTarget::default(), seed, ops, &depth2).expect("a plain exploration");
        assert_eq!(explored.failures_total, 0, "bench exploration of seed {seed} failed: rerun sim explore");
        let second = explored.depth2.expect("explored at depth 2");
        states += second.counts.states;
        distinct += second.counts.distinct_states;
        secs += second.counts.elapsed_sec;
    }
    report.push(
        "explore_depth2_states_per_sec",
        states as f64 / secs.max(1e-9),
        "states/s",
        format!(
            "seeds 1-3, {ops} ops, --depth 2: {states} second-crash states (at most {DEPTH2_STATES_PER_SEED} a \
             seed), {distinct} newly recovered, all depth-2 phases"
        ),
    );
}

/// The engine alone on `OsVfs`: sealing a segment, point gets through
/// its mapping, hot-path writes under each fsync policy, and replay of a
/// log of small and of large rows.
fn engine_figures(report: &mut BenchReport, rows: u64, replay_program: Option<&Path>) {
    let dir = TempDir::new("engine");
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    let value = vec![b'v'; 100];
    let path = dir.0.join("row-74-1.seg");
    let keys: Vec<Vec<u8>> = (0..rows).map(|i| format!("t:{i:012}").into_bytes()).collect();
    seal_figure(report, &*vfs, &path, &keys, &value);
    seg_get_figures(report, &*vfs, &path, &keys);
    let clock = Arc::new(ManualClock::new(T0_MS));
    write_figures(report, &vfs, &clock, &dir.0, &value, rows);
    let where_ = if replay_program.is_some() { "fresh process" } else { "in this process" };
    let log_dir = dir.0.join(FsyncPolicy::No.name());
    let (mb_per_sec, ns_per_frame, log_mb) = replay(replay_program, &clock, &log_dir, rows);
    report.push(
        "aof_replay_mb_per_sec",
        mb_per_sec,
        "MB/s",
        format!("open of a {log_mb:.1} MB log of {rows} HSETs of ~130 B, page cache, {where_} (target >= 500)"),
    );
    report.push("aof_replay_ns_per_frame", ns_per_frame, "ns", "same".into());

    // The same replay with 4 KiB values: what a frame costs apart from
    // its bytes shows as the gap between the two MB/s figures.
    let large_rows = (rows / 10).max(1);
    let large_dir = dir.0.join("large");
    write_large_log(&vfs, &clock, &large_dir, large_rows);
    let (mb_per_sec, ns_per_frame, log_mb) = replay(replay_program, &clock, &large_dir, large_rows);
    report.push(
        "aof_replay_large_mb_per_sec",
        mb_per_sec,
        "MB/s",
        format!("open of a {log_mb:.1} MB log of {large_rows} HSETs of 4 KiB, page cache, {where_}"),
    );
    report.push("aof_replay_large_ns_per_frame", ns_per_frame, "ns", "same".into());
}

/// Seal: build a segment at `path` of one `value` per key and fsync it.
fn seal_figure(report: &mut BenchReport, vfs: &dyn Vfs, path: &Path, keys: &[Vec<u8>], value: &[u8]) {
    let started = Instant::now();
    let mut builder = SegBuilder::create(vfs, path, 1).expect("create segment");
    for key in keys {
        builder.push(key, value).expect("push");
    }
    builder.finish().expect("finish");
    let seal_secs = seconds(started.elapsed());
    let seal_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    report.push(
        "seal_mb_per_sec",
        seal_bytes as f64 / 1e6 / seal_secs,
        "MB/s",
        format!("{} rows x 100 B, build + fsync", keys.len()),
    );
}

/// Point gets of the sealed segment's `keys` through the mapping, one
/// timed at a time, in a fixed pseudo-random order.
fn seg_get_figures(report: &mut BenchReport, vfs: &dyn Vfs, path: &Path, keys: &[Vec<u8>]) {
    let rows = keys.len() as u64;
    let seg = Seg::open(vfs, path).expect("open segment");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut latencies = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let key = &keys[(state % rows) as usize];
        let started = Instant::now();
        let got = seg.get(key).expect("get");
        latencies.push(started.elapsed().as_nanos() as u64);
        assert!(got.is_some());
    }
    latencies.sort_unstable();
    report.push(
        "seg_get_p50_ns",
        percentile(&latencies, 0.50) as f64,
        "ns",
        format!("{rows}-row segment, warm mapping"),
    );
    report.push("seg_get_p99_ns", percentile(&latencies, 0.99) as f64, "ns", "same".into());
}

/// Hot-path writes under each fsync policy, each store in a directory of
/// `dir` named after its policy (the `no` one's log is then replayed).
fn write_figures(
    report: &mut BenchReport,
    vfs: &Arc<dyn Vfs>,
    clock: &Arc<ManualClock>,
    dir: &Path,
    value: &[u8],
    rows: u64,
) {
    for (policy, name, count) in [
        (FsyncPolicy::Always, "write_ops_per_sec_always", 5_000u64),
        (FsyncPolicy::EverySec, "write_ops_per_sec_everysec", rows),
        (FsyncPolicy::No, "write_ops_per_sec_no", rows),
    ] {
        let store_dir = dir.join(policy.name());
        let (mut store, _) =
            Store::open(vfs.clone(), clock.clone(), &store_dir, Options { fsync: policy, ..Options::default() })
                .expect("open");
        let started = Instant::now();
        for i in 0..count {
            let command = Command::HSet {
                key: format!("t:{i:012}").into_bytes(),
                pairs: vec![(b"ts".to_vec(), i.to_string().into_bytes()), (b"v".to_vec(), value.to_vec())],
            };
            store.execute(&command).expect("write");
            if i % 1000 == 999 {
                clock.advance(250);
            }
        }
        let secs = seconds(started.elapsed());
        store.close().expect("close");
        report.push(name, count as f64 / secs, "ops/s", format!("{count} HSETs of ~130 B, OsVfs"));
    }
}

/// A store in `dir` whose log holds `rows` HSETs of one 4 KiB value each.
fn write_large_log(vfs: &Arc<dyn Vfs>, clock: &Arc<ManualClock>, dir: &Path, rows: u64) {
    let (mut store, _) =
        Store::open(vfs.clone(), clock.clone(), dir, Options { fsync: FsyncPolicy::No, ..Options::default() })
            .expect("open");
    let large_value = vec![b'w'; 4096];
    for i in 0..rows {
        let command =
            Command::HSet { key: format!("t:{i:012}").into_bytes(), pairs: vec![(b"v".to_vec(), large_value.clone())] };
        store.execute(&command).expect("write");
    }
    store.close().expect("close");
}

/// Reopen the store in `dir`, whose log holds `frames` records: MB/s,
/// ns per frame, and the log's size in MB. Timed in a fresh process
/// (`program bench-replay`) when there is a program, as a restart is: the
/// rows' memory is then new to the process, and its first touch is part of
/// the cost. Timed in this process, the open reuses the heap the writes
/// before it freed, or not, as the allocator decides to trim it: the 4 KiB
/// figure moved by 2x with the heap's history alone.
fn replay(program: Option<&Path>, clock: &ManualClock, dir: &Path, frames: u64) -> (f64, f64, f64) {
    let log_mb = std::fs::metadata(dir.join(engine::store::AOF_FILE)).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let now_ms = engine::clock::Clock::now_ms(clock);
    let secs = match program {
        None => replay_seconds(dir, frames, now_ms),
        Some(program) => replay_in_child(program, dir, frames, now_ms),
    };
    (log_mb / secs, secs * 1e9 / frames as f64, log_mb)
}

/// `sim bench-replay`: the seconds one `Store::open` of the store in `dir`
/// takes (on `OsVfs`, the clock at `now_ms`), which must replay `frames`
/// records. The store is dropped after the clock stops.
pub fn replay_seconds(dir: &Path, frames: u64, now_ms: u64) -> f64 {
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    let clock = Arc::new(ManualClock::new(now_ms));
    let started = Instant::now();
    let (store, report) = Store::open(vfs, clock, dir, Options::default()).expect("reopen");
    let secs = seconds(started.elapsed());
    assert_eq!(report.frames_replayed, frames);
    drop(store);
    secs
}

/// [`replay_seconds`] in a fresh process running `program`.
fn replay_in_child(program: &Path, dir: &Path, frames: u64, now_ms: u64) -> f64 {
    let output = std::process::Command::new(program)
        .arg("bench-replay")
        .arg("--dir")
        .arg(dir)
        .args(["--frames", &frames.to_string(), "--now-ms", &now_ms.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} bench-replay: {e}", program.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.trim().parse::<f64>() {
        Ok(secs) if output.status.success() => secs,
        _ => panic!(
            "{} bench-replay failed ({}): {stdout}{}",
            program.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_bench_reports_every_figure() {
        let report = run(BenchOptions { seeds: 3, os_seeds: 1, rows: 2_000, explore_ops: 12, replay_program: None });
        let names: Vec<&str> = report.figures.iter().map(|f| f.name).collect();
        for expected in [
            "sim_ops_per_sec",
            "sim_run_ops_per_sec",
            "generate_ops_per_sec",
            "sim_overhead",
            "sim_vs_os",
            "explore_states_per_sec",
            "explore_recoveries_per_sec",
            "explore_depth2_states_per_sec",
            "seal_mb_per_sec",
            "seg_get_p50_ns",
            "seg_get_p99_ns",
            "write_ops_per_sec_always",
            "aof_replay_mb_per_sec",
            "aof_replay_large_mb_per_sec",
        ] {
            assert!(names.contains(&expected), "missing {expected}: {names:?}");
        }
        assert!(report.figures.iter().all(|f| f.value.is_finite() && f.value > 0.0), "{report:?}");
        assert!(report.to_json().get("sim_overhead").is_some());
    }
}
