//! The run flags every target's command line shares ([`RunArgs`]: which
//! seeds, how many jobs, what to print, replay, shrink, isolate), their
//! value parsers, and how a command line ends badly (exit 2) or with its
//! help (exit 0). Low in `cli/`: the run (`run.rs`) and `--isolate`'s
//! parent and child (`isolate.rs`) both read these flags.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::disk::{CrashMode, FsProfile};

/// The flags every target's run takes.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Run one seed (with --time: the first seed of the soak).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Run a range of seeds, A inclusive to B exclusive (e.g. 0..2000).
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub seeds: Option<(u64, u64)>,

    /// Soak: run consecutive seeds from --seed (default: a random base,
    /// printed) for this many wall-clock seconds.
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,

    /// Parallel workers (seeds are spread over them; results are identical
    /// to --jobs 1).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub jobs: usize,

    /// Run only the seeds congruent to K modulo N (fleet sharding).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<(u64, u64)>,

    /// Print one JSON summary object on stdout (the human report goes to
    /// stderr).
    #[arg(long)]
    pub json: bool,

    /// Print the seed's whole event trace (one seed only).
    #[arg(long)]
    pub trace: bool,

    /// Run every seed twice and fail if the two traces differ: the trace
    /// hash (every event, each I/O's place and length) or the hash of
    /// every byte written, with its offset.
    #[arg(long)]
    pub check_determinism: bool,

    /// Minimize the first failing seed's operation list and print it.
    #[arg(long)]
    pub shrink: bool,

    /// With --shrink: save the minimal list (segsim's under
    /// corpus/regressions/, another target's under `corpus/<target>/`).
    #[arg(long, requires = "shrink")]
    pub save: bool,

    /// Replay an operation list file (as saved by --shrink --save), as it
    /// is: its header lines name the target, seed, profile, crash mode and
    /// settings, so every flag that would set one of them (--fs,
    /// --crash-mode, --ops, --set, --plant, --clients, ...) is refused with
    /// it, and --trace too (--report draws the replay).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["seed", "seeds", "time"])]
    pub replay: Option<PathBuf>,

    /// Workload operations per seed.
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// Force the crash mode: strict, prefix or reorder.
    #[arg(long, value_parser = parse_crash_mode)]
    pub crash_mode: Option<CrashMode>,

    /// The file-system profile the disk follows (FILESYSTEMS.md): posix
    /// (the default, the weakest POSIX allows), ext4, xfs or btrfs.
    #[arg(long = "fs", value_name = "NAME", value_parser = parse_fs)]
    pub fs: Option<FsProfile>,

    /// Draw the run as one self-contained HTML page (one seed, or with
    /// --replay): the operations in time, a lane per file, the crash, the
    /// recovery and the verdict. Open it in a browser.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,

    /// Run each seed in a child process of its own (this program again,
    /// with the same target flags and that one seed; --jobs N at a time):
    /// a seed that takes its process down (an abort, such as a panic while
    /// a panic unwinds, which nothing in process can catch; any signal) is
    /// one failed seed (check 'died', with its signal and the last lines
    /// of its stderr) and the run goes on. The same totals as in process,
    /// at the cost of a process start per seed. Not with --trace or
    /// --report (one process's own output).
    #[arg(long, conflicts_with_all = ["trace", "report", "replay"])]
    pub isolate: bool,

    /// With --isolate: a seed's child still running after this many
    /// seconds of wall time is killed and the seed fails (check 'died',
    /// "ran past --seed-timeout"): an engine that hangs is one failed seed,
    /// not a sweep that never ends. Wall time, so which slow seed crosses
    /// it depends on the machine; give it a wide margin. Default: none.
    #[arg(long, value_name = "SECS", requires = "isolate")]
    pub seed_timeout: Option<u64>,

    /// With --isolate: a child process runs seed after seed (the parent
    /// hands them over one at a time) until one takes it down; a fresh
    /// child then goes on with the next. A process start per death instead
    /// of per seed, with the same verdicts, each seed run as an in-process
    /// sweep runs it (a seed leaves nothing behind in its process, which
    /// --check-determinism checks). For engines that abort often and run
    /// fast: persy's sweeps, soaks.
    #[arg(long, requires = "isolate")]
    pub reuse_children: bool,

    /// --isolate --reuse-children's own: run each seed named on a line of
    /// standard input and print its summary for the parent process.
    #[arg(long, hide = true, conflicts_with_all = ["seed", "seeds", "time", "shard", "isolate", "trace", "report", "replay", "isolated_child"])]
    pub isolated_server: bool,

    /// --isolate's own: run the one seed --seed names and print its
    /// summary for the parent process.
    #[arg(long, hide = true, conflicts_with_all = ["seeds", "time", "shard", "isolate", "trace", "report", "replay"])]
    pub isolated_child: bool,
}

/// The process's arguments as `P`, or how to exit: `--help` and
/// `--version` print and exit 0, bad usage prints why and exits 2.
pub fn parse_args<P: clap::Parser>() -> Result<P, ExitCode> {
    parse_args_with(|command| command)
}

/// [`parse_args`] with `P`'s command line first changed by `adjust` (help
/// text made at run time: the plants an adapter declares, say).
pub fn parse_args_with<P: clap::Parser>(adjust: impl FnOnce(clap::Command) -> clap::Command) -> Result<P, ExitCode> {
    let exit = |e: clap::Error| {
        let _ = e.print();
        ExitCode::from(if e.use_stderr() { 2 } else { 0 })
    };
    let matches = adjust(P::command()).try_get_matches().map_err(exit)?;
    P::from_arg_matches(&matches).map_err(exit)
}

/// Bad usage: say so and exit 2.
pub fn usage_error(program: &str, message: &str) -> ExitCode {
    eprintln!("{program}: {message}\n(see {program} --help)");
    ExitCode::from(2)
}

/// `--seeds A..B`: the seeds from `A` up to, not including, `B`; an
/// empty range is refused, since it would run nothing and pass.
pub fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let a: u64 = a.parse().map_err(|_| format!("{a:?} is not a seed number"))?;
    let b: u64 = b.parse().map_err(|_| format!("{b:?} is not a seed number"))?;
    if a >= b {
        return Err(format!("the range {a}..{b} is empty (B is exclusive)"));
    }
    Ok((a, b))
}

/// `--shard K/N`: this process runs the seeds congruent to `K` modulo `N`,
/// so `N` processes with `K = 0..N` share a range without overlap.
pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (k, n) = s.split_once('/').ok_or_else(|| format!("expected K/N, got {s:?}"))?;
    let k: u64 = k.parse().map_err(|_| format!("{k:?} is not a number"))?;
    let n: u64 = n.parse().map_err(|_| format!("{n:?} is not a number"))?;
    if n == 0 || k >= n {
        return Err(format!("shard {k}/{n}: K must be below N (0 <= K < N)"));
    }
    Ok((k, n))
}

/// `--crash-mode`: what a power loss keeps of unsynced writes (`strict`,
/// `prefix` or `reorder`; see `disk::CrashMode`).
pub fn parse_crash_mode(s: &str) -> Result<CrashMode, String> {
    CrashMode::parse(s).ok_or_else(|| format!("{s:?}: expected strict, prefix or reorder"))
}

/// `--fs`: which file system's crash behaviour the disk follows; a bad
/// name is answered with the list of known ones.
pub fn parse_fs(s: &str) -> Result<FsProfile, String> {
    FsProfile::parse_or_list(s)
}
