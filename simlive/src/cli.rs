//! `sim live run` and `sim live sweep`: the command line of `crate::run`
//! and `crate::sweep`. Exit status: 0 clean, 1 a failing run (a checker
//! said no, or the layer refused a call), 2 bad usage or a run that could
//! not be made.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use simulator::check_server::ServerPool;
use simulator::cli::args::parse_fs;
use simulator::disk::{ArmedFault, CrashMode, FsProfile};

use crate::check::{Checked, SERVER_NAME};
use crate::faults::FaultSpec;
use crate::run::{parse_armed, run, RunOptions, RunOutcome};
use crate::sweep::{row_failed, sweep, SweepRow};

/// Run a program on the simulated disk with faults and crashes injected
/// live: its file calls under DIR are served by the stdfs layer, preloaded
/// (LD_PRELOAD) into it and every process it starts.
#[derive(Parser, Debug)]
#[command(name = "sim live", after_help = EXAMPLES)]
struct LiveArgs {
    #[command(subcommand)]
    command: LiveCommand,
}

#[derive(Subcommand, Debug)]
enum LiveCommand {
    /// One run: the program with seed S's faults, its power cut at
    /// --crash-at (or after it exits), CHECK run on what the disk kept.
    Run {
        /// The seed: the faults drawn, the crash state, each process's
        /// time and randomness.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Cut the power when the disk reaches this I/O index (0-based:
        /// that call is not made). Default: after the program exits.
        #[arg(long, value_name = "I")]
        crash_at: Option<u64>,
        #[command(flatten)]
        common: Common,
    },
    /// Seeds A..B: per seed a run to the end, then one cut at an I/O index
    /// the seed draws (or at every index, --every-index), each checked; a
    /// failure prints the repro line of its run.
    Sweep {
        /// The seeds, `A..B` (B excluded).
        #[arg(long, value_name = "A..B", value_parser = parse_seeds)]
        seeds: std::ops::Range<u64>,
        /// Cut the power at every I/O index of the first run in turn (one
        /// run each, the seed's crash state), not at one drawn index.
        #[arg(long)]
        every_index: bool,
        /// Shrink the first failing run: its faults to none or one armed
        /// fault, its crash to the earliest index that still fails.
        #[arg(long)]
        shrink: bool,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(clap::Args, Debug)]
struct Common {
    /// The directory the program is told (made absolute): its files there
    /// are the simulated disk's, which starts empty. It must not exist on
    /// the real disk (a call the layer does not see would reach it).
    #[arg(long, value_name = "DIR")]
    dir: PathBuf,
    /// The checker, run as `sh -c CHECK sim-live-check STATE PRINTED`: $1
    /// ($LIVE_DIR) the crash state written out as a fresh directory (DIR's
    /// content), $2 ($LIVE_PRINTED) a file with what the program printed
    /// before the crash. Exit 0: the state is acceptable.
    #[arg(long, value_name = "CHECK")]
    check: Option<String>,
    /// CHECK is a server that judges many states, started once (and again
    /// after a fault) as `sh -c CHECK sim-live-check-server`: for each
    /// state it reads a line `STATE<TAB>PRINTED<TAB>CRASH_AT<TAB>SEED`
    /// (CRASH_AT the cut's I/O index, `end` after the exit) on its standard
    /// input and answers one line, `pass` or `fail WHY` (`sim trace
    /// explore --check-server`'s protocol). It saves a process start per
    /// state; it must judge each state on its own. No answer within
    /// --timeout, an exit, or any other line fails the state, and a fresh
    /// server takes the next one.
    #[arg(long, requires = "check")]
    check_server: bool,
    /// The file-system profile: posix, ext4, ext4-noauto, xfs, btrfs.
    #[arg(long, value_name = "PROFILE", value_parser = parse_fs, default_value = "posix")]
    fs: FsProfile,
    /// What a power loss keeps of the unsynced: strict (nothing), prefix
    /// (per file and directory, a prefix of the pending operations),
    /// reorder (each pending change independently).
    #[arg(long, value_name = "MODE", value_parser = parse_crash_mode, default_value = "prefix")]
    crash_mode: CrashMode,
    /// Fault kinds drawn per disk call at --fault-rate: fsync (fsync and
    /// fdatasync fail with EIO, the file's dirty data dropped), write (EIO,
    /// nothing written), short-write (EIO after a sector-aligned prefix),
    /// meta (EIO on an open, rename, unlink or directory fsync).
    #[arg(long, value_name = "KINDS", default_value = "")]
    faults: String,
    /// The probability of each --faults kind per eligible disk call.
    #[arg(long, value_name = "P", default_value_t = 0.1)]
    fault_rate: f64,
    /// A fault at one I/O index: eio (of any call: a directory fsync's
    /// shuts ext4, XFS and btrfs down), short-write or enospc (a write's).
    #[arg(long, value_name = "I:KIND", value_parser = parse_armed)]
    fault_at: Vec<(u64, ArmedFault)>,
    /// The disk's capacity in bytes: growth past it fails with ENOSPC.
    #[arg(long, value_name = "BYTES")]
    capacity: Option<u64>,
    /// The preloaded object. Default: libstdfs_preload.so beside this
    /// binary (`cargo build --release -p stdfs-preload`), or $SIM_LIVE_PRELOAD.
    #[arg(long, value_name = "SO")]
    preload: Option<PathBuf>,
    /// Where each crash state is written out for its checker.
    #[arg(long, value_name = "DIR")]
    scratch: Option<PathBuf>,
    /// Seconds a run may take before it is killed and fails, and a
    /// checker's time on a state: a per-state --check still running is
    /// killed (with what it started) and the state fails, saying so; with
    /// --check-server, the server's answer.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    timeout: f64,
    /// The disk's sector size (where a torn write may be cut).
    #[arg(long, value_name = "BYTES", default_value_t = 4096)]
    sector_bytes: u64,
    /// Print every disk call with its I/O index on stderr (where to aim
    /// --crash-at and --fault-at).
    #[arg(long)]
    show_ios: bool,
    /// The program and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    command: Vec<String>,
}

const EXAMPLES: &str = "Examples:
  sim live run --dir /tmp/live --seed 3 --faults fsync -- ./probe /tmp/live
  sim live run --dir /tmp/live --seed 3 --crash-at 40 --check './check.sh \"$1\" \"$2\"' -- ./probe /tmp/live
  sim live sweep --dir /tmp/live --seeds 0..20 --fs ext4 --faults fsync --check ./check.sh -- ./probe /tmp/live
  sim live sweep --dir /tmp/lsq --seeds 0..4 --every-index --check 'programs/sqlite3/check-server.py wal full' \\
      --check-server -- programs/sqlite3/run.sh /tmp/lsq wal full";

fn parse_seeds(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("{s:?}: expected A..B"))?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| "A: a number")?, b.parse().map_err(|_| "B: a number")?);
    if a >= b {
        return Err(format!("{s:?}: an empty range"));
    }
    Ok(a..b)
}

fn parse_crash_mode(s: &str) -> Result<CrashMode, String> {
    CrashMode::parse(s).ok_or_else(|| format!("{s:?}: expected strict, prefix or reorder"))
}

/// Run `sim live` with the arguments after `live`.
pub fn cli(args: &[String]) -> ExitCode {
    let parsed = match LiveArgs::try_parse_from(std::iter::once("sim live".to_string()).chain(args.iter().cloned())) {
        Ok(parsed) => parsed,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    match parsed.command {
        LiveCommand::Run { seed, crash_at, common } => match options(&common, seed, crash_at) {
            Ok(options) => run_once(&options),
            Err(usage) => bad_usage(&usage),
        },
        LiveCommand::Sweep { seeds, every_index, shrink, common } => match options(&common, seeds.start, None) {
            Ok(options) => sweep_seeds(&options, seeds, every_index, shrink),
            Err(usage) => bad_usage(&usage),
        },
    }
}

fn bad_usage(what: &str) -> ExitCode {
    eprintln!("sim live: {what}");
    ExitCode::from(2)
}

fn options(common: &Common, seed: u64, crash_at: Option<u64>) -> Result<RunOptions, String> {
    let root = absolute(&common.dir)?;
    if std::fs::symlink_metadata(&root).is_ok() {
        return Err(format!("{} exists on the real disk; remove it (the program's directory is the simulated disk's, and a call the layer does not see would reach the real one)", root.display()));
    }
    if common.fault_at.len() > 1 {
        return Err("--fault-at: one armed fault per run (the disk holds one)".to_string());
    }
    if !(common.timeout.is_finite() && common.timeout > 0.0) {
        return Err("--timeout must be a positive number of seconds".to_string());
    }
    let scratch = common.scratch.clone().unwrap_or_else(default_scratch);
    let timeout = Duration::from_secs_f64(common.timeout);
    let servers = match (&common.check, common.check_server) {
        (Some(check), true) => Some(Arc::new(ServerPool::new(check, SERVER_NAME, timeout, &scratch))),
        _ => None,
    };
    let mut faults = FaultSpec::parse(&common.faults, common.fault_rate)?;
    faults.armed = common.fault_at.clone();
    faults.capacity_bytes = common.capacity;
    Ok(RunOptions {
        root,
        seed,
        fs: common.fs,
        crash_mode: common.crash_mode,
        faults,
        crash_at,
        command: common.command.clone(),
        check: common.check.clone(),
        servers,
        preload: preload(common.preload.as_deref())?,
        echo: true,
        scratch,
        timeout,
        sector_bytes: common.sector_bytes,
        show_ios: common.show_ios,
    })
}

/// `dir` made absolute against the working directory, `.` and `..` taken
/// lexically (the root is compared with paths byte for byte).
fn absolute(dir: &Path) -> Result<PathBuf, String> {
    let joined = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?.join(dir);
    let mut out = PathBuf::from("/");
    for part in joined.components() {
        match part {
            std::path::Component::Normal(name) => out.push(name),
            std::path::Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    if out == Path::new("/") || out.to_str().is_none() {
        return Err(format!("--dir {}: a UTF-8 directory below /", dir.display()));
    }
    Ok(out)
}

fn preload(given: Option<&Path>) -> Result<PathBuf, String> {
    let path = match (given, std::env::var_os("SIM_LIVE_PRELOAD")) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(path)) => PathBuf::from(path),
        (None, None) => {
            let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
            exe.with_file_name("libstdfs_preload.so")
        }
    };
    if !path.is_file() {
        return Err(format!(
            "{} not found: build it with `cargo build --release -p stdfs-preload`, or give --preload",
            path.display()
        ));
    }
    std::fs::canonicalize(&path).map_err(|e| format!("{}: {e}", path.display()))
}

fn default_scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn run_once(options: &RunOptions) -> ExitCode {
    match run(options) {
        Ok(outcome) => {
            eprint!("{}", describe(options, &outcome));
            ExitCode::from(u8::from(outcome.failed()))
        }
        Err(what) => bad_usage(&what),
    }
}

fn sweep_seeds(base: &RunOptions, seeds: std::ops::Range<u64>, every_index: bool, shrink: bool) -> ExitCode {
    let started = std::time::Instant::now();
    let quiet = RunOptions { echo: false, ..base.clone() };
    let rows = sweep(&quiet, seeds.clone(), every_index, |row| eprint!("{}", sweep_line(row)));
    let failed: Vec<&SweepRow> = rows.iter().filter(|r| row_failed(r)).collect();
    eprintln!(
        "sim live sweep: seeds {}..{} under {}: {} runs, {} failing",
        seeds.start,
        seeds.end,
        base.fs.name,
        rows.len(),
        failed.len()
    );
    eprintln!("{}", checker_line(&rows, base.servers.is_some(), started.elapsed().as_secs_f64()));
    if let (true, Some(row)) = (shrink, failed.first()) {
        report_shrunk(row);
    }
    ExitCode::from(u8::from(!failed.is_empty()))
}

/// The sweep's pace and its checker's share, in wall time (a figure for
/// the reader, never part of a verdict).
fn checker_line(rows: &[SweepRow], server: bool, seconds: f64) -> String {
    let checked: Vec<f64> =
        rows.iter().filter_map(|r| r.outcome.as_ref().ok()?.check.as_ref().map(|c| c.seconds)).collect();
    let pace = format!(
        "sim live sweep: {:.1} runs/s ({} runs in {seconds:.2} s)",
        rows.len() as f64 / seconds.max(1e-9),
        rows.len()
    );
    if checked.is_empty() {
        return format!("{pace}; no state checked");
    }
    let how = if server { "by a checker server" } else { "a checker process per state" };
    let mean_ms = 1000.0 * checked.iter().sum::<f64>() / checked.len() as f64;
    format!("{pace}; checker mean {mean_ms:.2} ms a state, {how}")
}

fn report_shrunk(row: &SweepRow) {
    let Ok(outcome) = &row.outcome else { return };
    let shrunk = crate::shrink::shrink(&row.options, &outcome.injected);
    match shrunk.options {
        Some(options) => {
            let faults = options
                .faults
                .armed
                .first()
                .map_or("no fault".to_string(), |(i, k)| format!("one {} at I/O {i}", k.name()));
            let at = options.crash_at.map_or("after the exit".to_string(), |i| format!("at I/O {i}"));
            eprintln!("shrunk (seed {}, {} runs): {faults}, the power cut {at}", row.seed, shrunk.tries);
            eprintln!("  repro: {}", repro(&options));
        }
        None => eprintln!(
            "not shrunk (seed {}, {} runs): no single injected fault of {} fails it alone (the disk arms one)",
            row.seed,
            shrunk.tries,
            outcome.injected.len()
        ),
    }
}

fn sweep_line(row: &SweepRow) -> String {
    let at = match row.options.crash_at {
        Some(index) => format!("cut at I/O {index}"),
        None => "to the end".to_string(),
    };
    match &row.outcome {
        Err(what) => format!("seed {} {at}: could not run: {what}\n", row.seed),
        Ok(outcome) if outcome.failed() => format!("seed {} {at}: FAIL\n{}", row.seed, describe(&row.options, outcome)),
        Ok(outcome) => format!(
            "seed {} {at}: ok ({} I/Os, {}, faults {:?}, printed {:?})\n",
            row.seed,
            outcome.io_count,
            outcome.ended,
            outcome.faults,
            String::from_utf8_lossy(&outcome.printed)
        ),
    }
}

/// The report of one run, ending with its repro line.
pub fn describe(options: &RunOptions, outcome: &RunOutcome) -> String {
    let mut text = String::new();
    let cut = match options.crash_at {
        Some(index) if outcome.crashed => format!("the power cut at I/O index {index}"),
        Some(index) => format!("the program ended before I/O index {index}; the power cut after it"),
        None => "the power cut after the program ended".to_string(),
    };
    text += &format!(
        "sim live run: seed {} under {}: {} disk calls by {} process(es), {cut}; the program: {}\n",
        options.seed, options.fs.name, outcome.io_count, outcome.processes, outcome.ended
    );
    text += &format!("  faults injected: {:?}; trace hash {:016x}\n", outcome.faults, outcome.trace_hash);
    text += &format!("  printed before the crash: {:?}\n", String::from_utf8_lossy(&outcome.printed));
    let files: Vec<String> = outcome.files.iter().map(|(p, n)| format!("{p} ({n} B)")).collect();
    text += &format!("  the disk kept: {}\n", if files.is_empty() { "nothing".to_string() } else { files.join(", ") });
    for what in &outcome.refusals {
        text += &format!("  REFUSED: {what}\n");
    }
    match &outcome.check {
        Some(Checked { passed: true, .. }) => text += "  checker: pass\n",
        Some(Checked { fault: Some(_), said, .. }) => text += &format!("  checker: {said}\n"),
        Some(Checked { said, .. }) => text += &format!("  checker: FAIL: {said}\n"),
        None => text += "  checker: none given\n",
    }
    text += &format!("  repro: {}\n", repro(options));
    text
}

/// The command line that replays this one run.
pub fn repro(options: &RunOptions) -> String {
    let mut words = vec!["sim".to_string(), "live".into(), "run".into(), "--dir".into()];
    words.push(options.root.display().to_string());
    words.extend(["--seed".to_string(), options.seed.to_string(), "--fs".into(), options.fs.name.to_string()]);
    words.extend(["--crash-mode".to_string(), options.crash_mode.name().to_string()]);
    if let Some(index) = options.crash_at {
        words.extend(["--crash-at".to_string(), index.to_string()]);
    }
    words.extend(options.faults.flags());
    if let Some(check) = &options.check {
        words.extend(["--check".to_string(), check.clone()]);
    }
    if options.servers.is_some() {
        words.push("--check-server".to_string());
    }
    words.push("--".to_string());
    words.extend(options.command.iter().cloned());
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
