//! `crash-os`: a kit engine on the real file system, killed for real.
//!
//! The simulator proves an engine against a model of a disk; this shows
//! the same engine, through the same [`Adapter`], keeping its promises on
//! a real kernel and file system ([`OsVfs`], a real directory). The parent draws the kit's workload for the seed
//! (`workload.rs`: endless, `CRASH` skipped, `RESTART` a clean close and
//! reopen; with `--clients`, readers' steps too, each read held to the
//! state its reader began on, as on the simulated disk: `judge.rs`), starts a child — this same binary with `--child-from INDEX`
//! and the kit's settings as flags (`command.rs`) — which opens the engine
//! and runs the workload from `INDEX`, printing a line per completed
//! operation with its answer (`child.rs`, `line.rs`). At a moment drawn
//! from the seed (`schedule.rs`) the parent SIGKILLs it (`process.rs`),
//! feeds everything acknowledged to the kit's model and checks each answer
//! (`judge.rs`), opens the engine itself, reads what is committed and
//! holds it to the rule for a process kill, closes it, and starts the next
//! child after the operation the kill cut short (`parent.rs`). For
//! `cycles` cycles; the first failure ends the run (`report.rs`). Every
//! call into the adapter is in `on_disk.rs`.
//!
//! The rule for a kill (no power loss: the page cache keeps every byte the
//! engine handed the kernel), [`KillRule::PageCache`] by default: the
//! newest acknowledged state whose commit survives a kill must be there —
//! at every level that declares `Level::survives_process_kill` (by
//! default all but `Volatile`, in the engine's memory, which the kill
//! took, and `Nothing`, no promise) — or what the operation in flight
//! could have published: an in-flight commit is in doubt, and the counts
//! say how often it landed. The simulator's kills are held to the same
//! rule (`Model::allows_after_kill`). [`KillRule::PowerLoss`] holds every
//! kill's recovery only to what the kit allows after a power loss.
//!
//! Kill moments are seeded, but what the child has done by then depends on
//! the machine: a run is not reproducible bit for bit. It shows that the
//! engine's discipline holds on a real kernel and file system — not that
//! it survives a power loss, which no process can cause: a missing fsync
//! (logkv's planted `lazy-fsync`) is invisible to a kill, since the page
//! cache keeps what was never synced. That is the simulator's job.
//!
//! [`OsVfs`]: crate::vfs::OsVfs

mod child;
mod command;
mod judge;
mod line;
mod on_disk;
mod parent;
mod process;
mod report;
mod schedule;
mod workload;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use self::command::rerun;
use self::on_disk::OnDisk;
use self::parent::Cycles;
use self::workload::Endless;
use super::{Adapter, ErrorKind, Kit};
use simulator::failure::Check;

pub use self::report::{Counts, CrashOsFailure, CrashOsReport};

/// The rule a kill's recovery is held to (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KillRule {
    /// Every acknowledged commit that may survive on its own is there.
    #[default]
    PageCache,
    /// Only what the kit allows after a power loss.
    PowerLoss,
}

impl KillRule {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            KillRule::PageCache => "page-cache",
            KillRule::PowerLoss => "power-loss",
        }
    }

    /// The rule called `name`.
    pub fn parse(name: &str) -> Result<KillRule, String> {
        match name {
            "page-cache" => Ok(KillRule::PageCache),
            "power-loss" => Ok(KillRule::PowerLoss),
            other => Err(format!("{other:?}: expected page-cache or power-loss")),
        }
    }

    /// What it requires, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            KillRule::PageCache => {
                "page-cache (after a kill, every acknowledged commit that may survive on its own is there; the one \
                 in flight may or may not be)"
            }
            KillRule::PowerLoss => "power-loss (after a kill, what the kit allows after a power loss)",
        }
    }
}

/// One `crash-os` run.
#[derive(Clone, Debug)]
pub struct CrashOsRequest {
    /// The seed: configuration, workload and kill moments.
    pub seed: u64,
    /// Kill/restart cycles.
    pub cycles: u64,
    /// The engine's directory (new or empty); `None`: a fresh one under
    /// the system's temporary directory, removed after a passing run.
    pub dir: Option<PathBuf>,
    /// Kills land at most this many milliseconds into a child's workload.
    pub max_kill_ms: u64,
    /// The planted harness mistake: the child acknowledges each commit
    /// before running it.
    pub early_ack: bool,
    /// The rule a kill's recovery is held to.
    pub kill_rule: KillRule,
    /// The command that starts a child: this binary and the words that
    /// pick the subcommand and the target (`crash-os --target redb`); the
    /// run adds the seed, the settings, the directory and the index.
    pub child_command: Vec<OsString>,
}

/// Run `kit`'s engine in a child from operation `from` in `dir` until it is
/// killed (the child mode; see `child.rs`).
pub fn child<A: Adapter>(kit: &Kit<A>, seed: u64, dir: &Path, from: u64, early_ack: bool) -> ExitCode {
    let config = kit.config(seed, None);
    let disk = OnDisk::new(&kit.adapter, &config, kit.plant(), dir);
    let mut workload = Endless::new(&config);
    child::run(&disk, &mut workload, from, early_ack)
}

/// A failure at `cycle` of `check`.
fn failure(cycle: Option<u64>, check: Option<Check>, detail: impl Into<String>) -> CrashOsFailure {
    CrashOsFailure { cycle, check, detail: detail.into() }
}

/// Whether `dir` can hold a run: new, or an empty directory (the model
/// starts from an empty database).
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let refuse =
        |why: &str| Err(format!("--dir {}: {why} (crash-os's model starts from an empty database)", dir.display()));
    match std::fs::read_dir(dir) {
        Ok(mut entries) => match entries.next() {
            None => Ok(()),
            Some(_) => refuse("not empty"),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => refuse(&format!("not a directory crash-os can list: {e}")),
    }
}

/// The directory to run in: the one given (refused unless new or empty),
/// or a fresh one of the run's own (`true`: made here).
fn prepare_dir(request: &CrashOsRequest, name: &str) -> Result<(PathBuf, bool), String> {
    let Some(dir) = &request.dir else {
        let fresh = std::env::temp_dir().join(format!("sim-crash-os-{name}-{}-{}", std::process::id(), request.seed));
        let _ = std::fs::remove_dir_all(&fresh);
        return Ok((fresh, true));
    };
    check_dir(dir)?;
    Ok((dir.clone(), false))
}

/// Run `request` against `kit`'s engine (see the module doc). `progress`
/// hears about every 25th cycle passed.
pub fn run<A: Adapter>(kit: &Kit<A>, request: &CrashOsRequest, progress: &dyn Fn(u64, &Counts)) -> CrashOsReport {
    assert!(request.cycles > 0 && request.max_kill_ms > 0, "the command line refuses zero cycles or span");
    let started = Instant::now();
    let mut report = CrashOsReport {
        target: kit.adapter.name(),
        seed: request.seed,
        cycles: request.cycles,
        cycles_passed: 0,
        seconds: 0.0,
        dir: request.dir.clone().unwrap_or_default(),
        dir_kept: true,
        kill_rule: request.kill_rule,
        counts: Counts::default(),
        failure: None,
        rerun: rerun(kit, request),
    };
    match prepare_dir(request, kit.adapter.name()) {
        Ok((dir, made)) => {
            report.dir = dir.clone();
            Cycles::new(kit, request, &dir).run(&mut report, progress);
            report.dir_kept = !made || report.failed();
            if !report.dir_kept {
                let _ = std::fs::remove_dir_all(&report.dir);
            }
        }
        Err(why) => report.failure = Some(failure(None, None, why)),
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// A panic in the engine or the adapter, as an error (parent and child).
fn panicked(message: String) -> super::KitError {
    super::KitError::new(ErrorKind::Other, format!("panic: {message}"))
}
