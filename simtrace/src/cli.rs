//! `sim trace record` and `sim trace explore`: the command line of
//! `crate::syscalls` (any program, recorded with strace, every crash state
//! checked by the user's command). Exit status: 0 clean (or recorded), 1
//! a failing state found (or the recorded program failed), 2 bad usage or
//! a recording refused.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::explore::{default_scratch, explore, shell_floor_seconds, TraceExploreOptions};
use crate::record::record;
use crate::replay::replay;
use crate::report::{self, Context, DEFAULT_SECTOR_BYTES};
use crate::Recording;
use simulator::cli::args::parse_fs;
use simulator::disk::FsProfile;
use simulator::explore::{DEFAULT_COMPLETE_UP_TO, DEFAULT_MAX_DIR_SUBSETS};
use simulator::output::{emit, verdict};

/// Crash-test any program: record its file-system calls under a directory
/// with strace, then check every crash state the disk model allows with a
/// command of yours.
#[derive(Parser, Debug)]
#[command(name = "sim trace", after_help = EXAMPLES)]
struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Run CMD under strace (children too) and record every file-system
    /// call it makes under DIR, and what it prints on stdout, in order.
    Record {
        /// The directory to watch (its content before the run is recorded too).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
        /// Where to write the recording.
        #[arg(long, value_name = "FILE", default_value = "recording.syscalls")]
        out: PathBuf,
        /// The program and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Replay a recording onto the simulated disk, build the crash states
    /// at every I/O index, and run CHECK on each distinct one.
    Explore(ExploreArgs),
}

#[derive(clap::Args, Debug)]
struct ExploreArgs {
    /// The recording (from `sim trace record`).
    recording: PathBuf,
    /// The checker, run as `sh -c CHECK sim-trace-check DIR PRINTED`: $1
    /// ($TRACE_DIR) is the crash state as a fresh directory, $2
    /// ($TRACE_PRINTED) a file with what the program printed before the
    /// crash. Exit 0: the state is acceptable.
    #[arg(long, value_name = "CHECK")]
    check: String,
    /// CHECK is a server that judges many states, started once per job as
    /// `sh -c CHECK sim-trace-check-server`: for each state it reads a line
    /// `DIR<TAB>PRINTED<TAB>CRASH_INDEX<TAB>STATE` on its standard input and
    /// answers one line, `pass` or `fail WHY`. It saves a process start per
    /// state (an interpreter's: tens of milliseconds); it must judge each
    /// state on its own. No answer within --timeout, an exit, or any other
    /// line fails the state, and a fresh server takes the next one.
    #[arg(long)]
    check_server: bool,
    /// The file-system profile: posix (the weakest POSIX allows), ext4,
    /// ext4-noauto, xfs, btrfs.
    #[arg(long, value_name = "PROFILE", value_parser = parse_fs, default_value = "posix")]
    fs: FsProfile,
    /// Checker processes at once.
    #[arg(long, value_name = "N", default_value_t = 1)]
    jobs: usize,
    /// Print the report as JSON on stdout (the text goes to stderr).
    #[arg(long)]
    json: bool,
    /// Directory-change subsets per crash index, at most, where the
    /// states are sampled (as `sim explore`).
    #[arg(long, value_name = "M", default_value_t = DEFAULT_MAX_DIR_SUBSETS)]
    max_dir_subsets: usize,
    /// At a crash index where the model allows at most this many crash
    /// states, enumerate every one of them (else a sample, which the
    /// report's first line says, with the counts).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_COMPLETE_UP_TO)]
    complete_up_to: u64,
    /// Enumerate every crash state the model allows at every crash index,
    /// however many.
    #[arg(long, conflicts_with = "complete_up_to")]
    exhaustive: bool,
    /// The disk's sector size (where a torn write may be cut).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_SECTOR_BYTES)]
    sector_bytes: u64,
    /// Also explore the states where a torn write left its sector holding
    /// garbage: a drive's fault, which no profile's file system does (each
    /// keeps a one-sector write atomic, FILESYSTEMS.md). Off by default, as
    /// `sim explore` leaves it off for an engine that does not tolerate it.
    #[arg(long)]
    torn_garbage: bool,
    /// A checker running longer than this many seconds fails.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    timeout: f64,
    /// Where to write each crash state out for its checker (a fresh
    /// directory per state, removed after). Default: /dev/shm (memory)
    /// when it exists, else the temporary directory.
    #[arg(long, value_name = "DIR")]
    scratch: Option<PathBuf>,
    /// Only this crash index (a failure's repro; with --only-state).
    #[arg(long, value_name = "I", requires = "only_state")]
    only_io: Option<u64>,
    /// Only this state of --only-io's crash states.
    #[arg(long, value_name = "J", requires = "only_io")]
    only_state: Option<usize>,
}

const EXAMPLES: &str = "Examples:
  sim trace record --dir /tmp/db --out run.syscalls -- ./my-program /tmp/db
  sim trace explore run.syscalls --check './check.sh \"$1\" \"$2\"' --jobs 2
  sim trace explore run.syscalls --check ./check.sh --fs ext4 --json > report.json
  sim trace explore run.syscalls --check './check-server.py' --check-server --jobs 2";

/// Run `sim trace` with the arguments after `trace`.
pub fn cli(args: &[String]) -> ExitCode {
    let parsed = match TraceArgs::try_parse_from(std::iter::once("sim trace".to_string()).chain(args.iter().cloned())) {
        Ok(parsed) => parsed,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    match parsed.command {
        TraceCommand::Record { dir, out, command } => record_cli(&dir, &out, &command),
        TraceCommand::Explore(args) => explore_cli(&args),
    }
}

fn record_cli(dir: &std::path::Path, out: &std::path::Path, command: &[String]) -> ExitCode {
    let recorded = match record(dir, command) {
        Ok(recorded) => recorded,
        Err(failure) => {
            eprintln!("sim trace record: {failure}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = std::fs::write(out, recorded.recording.encode()) {
        eprintln!("sim trace record: writing {}: {e}", out.display());
        return ExitCode::from(2);
    }
    eprintln!(
        "sim trace record: {} operations under {} ({} strace lines) written to {}; the program {}",
        recorded.recording.ops.len(),
        dir.display(),
        recorded.strace_lines,
        out.display(),
        recorded.status
    );
    verdict(!recorded.status.success())
}

fn usage(message: String) -> ExitCode {
    eprintln!("sim trace explore: {message}");
    ExitCode::from(2)
}

fn explore_cli(args: &ExploreArgs) -> ExitCode {
    if args.jobs == 0 || args.max_dir_subsets == 0 {
        return usage("--jobs and --max-dir-subsets must be at least 1".into());
    }
    if !args.sector_bytes.is_power_of_two() || args.sector_bytes > simulator::disk::MAX_SECTOR_BYTES {
        return usage(format!("--sector-bytes must be a power of two up to {}", simulator::disk::MAX_SECTOR_BYTES));
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return usage("--timeout must be a positive number of seconds".into());
    }
    let scratch = args.scratch.clone().unwrap_or_else(default_scratch);
    if !scratch.is_dir() {
        return usage(format!("--scratch {}: not a directory", scratch.display()));
    }
    let text = match std::fs::read(&args.recording) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return usage(format!("{}: {e}", args.recording.display())),
    };
    let recording = match Recording::decode(&text) {
        Ok(recording) => recording,
        Err(e) => return usage(format!("{}: {e}", args.recording.display())),
    };
    let replayed = match replay(&recording, args.fs, args.sector_bytes) {
        Ok(replayed) => replayed,
        Err(e) => return usage(format!("{}: {e}", args.recording.display())),
    };
    let options = TraceExploreOptions {
        check: args.check.clone(),
        server: args.check_server,
        jobs: args.jobs,
        max_dir_subsets: args.max_dir_subsets,
        timeout: Duration::from_secs_f64(args.timeout),
        only: args.only_io.zip(args.only_state),
        scratch,
        torn_garbage: args.torn_garbage,
        complete_up_to: if args.exhaustive { u64::MAX } else { args.complete_up_to },
    };
    if let Some(io) = args.only_io.filter(|io| !replayed.disk.io_indices().contains(io)) {
        let range = replayed.disk.io_indices();
        return usage(format!("--only-io {io}: the recording's crash indices are {}..={}", range.start, range.end - 1));
    }
    let no_such_state =
        || usage(format!("--only-state {}: no such state at that crash index", args.only_state.unwrap_or(0)));
    // `--only-io` is checked above: the explorer refuses only a state
    // number the index does not have.
    let Ok(explored) = explore(&replayed, &options) else { return no_such_state() };
    if explored.states == 0 && options.only.is_some() {
        return no_such_state();
    }
    let file = args.recording.display().to_string();
    let scratch = options.scratch.display().to_string();
    let context = Context {
        file: &file,
        recording: &recording,
        replayed: &replayed,
        profile: args.fs.name,
        check: &args.check,
        server: args.check_server,
        jobs: args.jobs,
        floor_seconds: shell_floor_seconds(10),
        scratch: &scratch,
        sector_bytes: args.sector_bytes,
        torn_garbage: args.torn_garbage,
        complete_up_to: options.complete_up_to,
    };
    let text = report::text(&context, &explored);
    let json = args.json.then(|| report::json(&context, &explored));
    emit(&text, json.as_ref());
    verdict(explored.verdicts.iter().any(|v| !v.passed))
}
