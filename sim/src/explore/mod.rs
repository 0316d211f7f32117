//! `sim explore`: exhaustive crash exploration of one short workload.
//!
//! The random mode crashes a run now and then and lets the crash mode draw
//! what survives: it samples. This mode enumerates, the way ALICE and
//! CrashMonkey do for file systems, but in memory: it crashes one workload
//! at *every* I/O index and, at each, recovers *every* crash state the
//! disk model allows there (as `disk/crash_states.rs` enumerates them),
//! checking each by the same rule as the random mode.
//!
//! # How
//! 1. **Record** (`record.rs`). The seed's workload — its configuration
//!    and operation list as the random mode draws them, `--ops K` long,
//!    with the planned crash points dropped (every point is explored) —
//!    runs once on a fault-free simulated disk that keeps a snapshot of
//!    itself before every I/O operation (`SimVfs::start_recording`). The
//!    driver keeps the checker alongside, exactly as the random mode's
//!    driver does, and notes it at every operation: what was acknowledged
//!    (A), what is known durable (D), which write was in flight, the
//!    clock. A `CRASH` in the workload is a strict power loss, a `RESTART`
//!    a clean close and reopen, so later crash indices fall inside
//!    recoveries too.
//! 2. **Enumerate** (`plan.rs`). Crash index `i` means the power went just
//!    before I/O `i` ran (the last index: after every I/O). For each, the
//!    snapshot's crash states are enumerated and each turned into a disk
//!    image and hashed. Two dedupes follow: recovery depends only on the
//!    image and the clock, so each distinct (image, time) is recovered
//!    once; the verdict depends also on what the checker allowed at that
//!    moment, so each distinct (image, checker context) is checked once.
//!    Every enumerated state therefore gets a verdict, most of them
//!    through a byte-identical twin (runs of reads share one snapshot).
//! 3. **Recover and check** (`check.rs`). Each distinct image becomes a
//!    fresh disk; `Store::open` must not refuse it, and the logical dump
//!    must pass [`Checker::allows`](crate::checker::Checker::allows) — the
//!    random mode's rule, the very code `Checker::recovered` runs before it
//!    resets the model: equal to the model after
//!    some prefix `p` of the acknowledged writes with `D <= p <= A`, or `A`
//!    plus the write in flight — and `audit()` must be clean. Then the
//!    probe: one more write, an eviction, a clean close, a power loss and
//!    a reopen must give back the recovered content plus that write, rows
//!    where they were, audit clean — the next step the random mode would
//!    take, where bugs such as appending after an uncut torn tail show.
//! 4. **Report** (`report.rs`): indices, states enumerated, distinct
//!    states recovered, checks, states per second, and per failure the
//!    crash index, the state's number and description, the check, the
//!    diff, and the command (`--only-io I --only-state J`) that recovers
//!    exactly that state again.
//!
//! # Determinism
//! The recording is one deterministic run; the enumeration order is fixed;
//! recovery of an image is a pure function of its bytes and the time. So
//! `--jobs N` only spreads indices (phase 2) and distinct images (phase 3)
//! over threads, and the results are merged in index order: the report is
//! the same for every `N`, timings aside. `--max-states` cuts the
//! enumeration at a fixed point of that order.
//!
//! # What it does not cover
//! One crash per state: the recovered store takes one probe step, not a
//! workload (the random mode crashes again after recovery; this mode's
//! recording covers crashes *during* a recovery only for its own `CRASH`
//! and `RESTART` operations). No I/O faults and no media corruption: EIO,
//! short writes, fsyncgate, bit flips and rot are the random mode's, and
//! so are the planted bugs only they expose. The enumeration varies one
//! file or the directories at a time (see `disk/crash_states.rs`).

mod check;
mod cli;
pub(crate) mod parallel;
mod plan;
mod record;
mod report;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Instant;

use engine::aof::FsyncPolicy;
use engine::vfs::Vfs;

use crate::canary::Canary;
use crate::config::{Config, Overrides};
use crate::disk::{CrashMode, DiskConfig};
use crate::workload::generate;

pub use cli::cli;
pub use report::{ExploreFailure, ExploreReport, MAX_FAILURES_KEPT};

/// Workload operations by default: short enough to explore every index.
pub const DEFAULT_OPS: u64 = 40;

/// Directory-change subsets per crash index by default, when there are
/// too many to take them all.
pub const DEFAULT_MAX_DIR_SUBSETS: usize = 16;

/// What the engine is given instead of the simulated disk: the identity,
/// or a test's wrapper that plants a bug under the engine.
pub type VfsWrap = dyn Fn(Arc<dyn Vfs>) -> Arc<dyn Vfs> + Sync;

/// How to explore (the command-line flags, see `cli.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExploreOptions {
    /// Force the fsync policy; otherwise the seed's.
    pub fsync: Option<FsyncPolicy>,
    /// Bound on directory-change subsets per crash index (at least 1).
    pub max_dir_subsets: usize,
    /// Stop enumerating after this many crash states (in index order).
    pub max_states: Option<u64>,
    /// Worker threads (at least 1); the report does not depend on it.
    pub jobs: usize,
    /// Explore only this crash index.
    pub only_io: Option<u64>,
    /// With `only_io`: only this crash state of that index.
    pub only_state: Option<usize>,
    /// Print progress on stderr about once a second.
    pub progress: bool,
    /// The engine bug to plant (a build with the `canaries` feature only),
    /// in the recording and in every recovery.
    pub canary: Option<Canary>,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            fsync: None,
            max_dir_subsets: DEFAULT_MAX_DIR_SUBSETS,
            max_states: None,
            jobs: 1,
            only_io: None,
            only_state: None,
            progress: false,
            canary: None,
        }
    }
}

/// Explore seed `seed`'s workload of `ops` operations (see the module
/// doc). `Err` is a usage error found once the workload is recorded: a
/// crash index or state number that does not exist.
pub fn explore(seed: u64, ops: u64, options: &ExploreOptions) -> Result<ExploreReport, String> {
    explore_with(seed, ops, options, &|disk| disk)
}

/// [`explore`], with the engine seeing `wrap(disk)` instead of each disk,
/// in the recording and in every recovery: the hook tests use to prove
/// that exploration catches a planted bug.
pub fn explore_with(seed: u64, ops: u64, options: &ExploreOptions, wrap: &VfsWrap) -> Result<ExploreReport, String> {
    assert!(options.jobs >= 1 && options.max_dir_subsets >= 1, "checked by the caller");
    let started = Instant::now();
    let overrides = Overrides { ops: Some(ops), fsync: options.fsync, canary: options.canary, ..Overrides::default() };
    let config = Config::from_seed(seed, overrides);
    let mut workload = generate(&config);
    for planned in &mut workload {
        planned.crash = None;
    }
    // Fault-free: I/O errors are the random mode's business. Strict: the
    // workload's own CRASH operations keep exactly what was synced.
    let disk_config = DiskConfig::fault_free(CrashMode::Strict, config.disk.sector_bytes);
    let mut report = ExploreReport::new(seed, ops, &config);

    let recording = record::record(&config, &disk_config, &workload, options.canary, wrap);
    report.recorded_ios = recording.disk.snapshots.len() as u64 - 1;
    report.phase_sec.record = started.elapsed().as_secs_f64();
    if let Some(mut failure) = recording.failure {
        failure.repro = repro_command(seed, ops, options, None, None);
        report.add_failures(vec![failure]);
        report.elapsed_sec = started.elapsed().as_secs_f64();
        return Ok(report);
    }

    let enumerate_started = Instant::now();
    let plan = plan::plan(&recording, options)?;
    report.phase_sec.enumerate = enumerate_started.elapsed().as_secs_f64();
    report.io_indices = plan.io_indices;
    report.states = plan.states;
    report.distinct_states = plan.recoveries.len() as u64;
    report.checks = plan.checks;
    report.capped = plan.capped;
    report.examined = plan.examined.clone();

    let check_started = Instant::now();
    let with = check::Checking { recording: &recording, config: &config, disk_config: &disk_config, options, wrap };
    let failures = check::check_all(&plan, &with);
    report.phase_sec.check = check_started.elapsed().as_secs_f64();
    report.add_failures(failures);
    report.elapsed_sec = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The command that explores exactly `(io_index, state)` again (or, with
/// neither, the whole seed).
pub(crate) fn repro_command(
    seed: u64,
    ops: u64,
    options: &ExploreOptions,
    io_index: Option<u64>,
    state: Option<usize>,
) -> String {
    let features = if options.canary.is_some() { " --features canaries" } else { "" };
    let mut command = format!("cargo run --release -p sim{features} -- explore --seed {seed} --ops {ops}");
    if let Some(canary) = options.canary {
        command.push_str(&format!(" --canary {}", canary.name()));
    }
    if let Some(fsync) = options.fsync {
        command.push_str(&format!(" --fsync {}", fsync.name()));
    }
    // The state numbering depends on the subset bound.
    if options.max_dir_subsets != DEFAULT_MAX_DIR_SUBSETS {
        command.push_str(&format!(" --max-dir-subsets {}", options.max_dir_subsets));
    }
    if let Some(io_index) = io_index {
        command.push_str(&format!(" --only-io {io_index}"));
    }
    if let Some(state) = state {
        command.push_str(&format!(" --only-state {state}"));
    }
    command
}
