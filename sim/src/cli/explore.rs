//! The `sim explore` command line: flags, usage errors, output, exit
//! status (0 no failure, 1 a failure found, 2 bad usage).
//!
//! The flags build the target (`--target` and its settings, through the
//! registry, `targets.rs`) and the [`ExploreOptions`]; the rest is the one
//! generic explorer (`crate::explore`).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use engine::aof::FsyncPolicy;

use super::args::parse_fs;
use super::explored::ExploreRequest;
use super::targets::{Runnable, TargetArgs, TargetFlags};
use crate::canary::{parse_name, Canary};
use crate::disk::ArmedFault;
use crate::explore::{ExploreOptions, DEFAULT_COMPLETE_UP_TO, DEFAULT_MAX_DIR_SUBSETS, DEFAULT_OPS};

/// Exhaustive crash exploration: run one seed's short workload once,
/// fault-free, then crash it at every I/O index and recover every crash
/// state the disk model allows there (each file's unsynced writes cut at
/// every write and sector boundary, torn sectors holding garbage, two
/// files cut together at whole writes, subsets of unsynced directory
/// changes), checking each by the random mode's rule; `--depth 2` crashes
/// every recovery again, `--faults` fails each of its I/Os in turn.
#[derive(Parser, Debug)]
#[command(name = "sim explore", after_help = EXAMPLES)]
struct ExploreArgs {
    #[command(flatten)]
    common: ExploreCommon,

    /// Force the fsync policy: always, everysec or no (default: the seed's).
    #[arg(long, value_parser = parse_fsync)]
    fsync: Option<FsyncPolicy>,

    /// Plant this bug in the engine (a build with `--features canaries`
    /// only; `sim canaries` lists them).
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    canary: Option<Canary>,

    #[command(flatten)]
    target: TargetArgs,
}

/// The flags of `explore` every target takes.
#[derive(clap::Args, Debug, Clone)]
pub struct ExploreCommon {
    /// The seed whose configuration and workload to explore.
    #[arg(long, value_name = "N")]
    pub seed: u64,

    /// Workload operations (segsim: the seed's window declarations come on top).
    #[arg(long, value_name = "K", default_value_t = DEFAULT_OPS)]
    pub ops: u64,

    /// Directory-change subsets per crash index when there are more than
    /// 4 unsynced changes and more subsets than this.
    #[arg(long, value_name = "M", default_value_t = DEFAULT_MAX_DIR_SUBSETS)]
    pub max_dir_subsets: usize,

    /// Stop after this many crash states (in crash-index order).
    #[arg(long, value_name = "S")]
    pub max_states: Option<u64>,

    /// At a crash index where the model allows at most this many crash
    /// states, enumerate every one of them (else a sample, which the
    /// report's first line says, with the counts).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_COMPLETE_UP_TO)]
    pub complete_up_to: u64,

    /// Enumerate every crash state the model allows at every crash index,
    /// however many (memory and time grow with them).
    #[arg(long, conflicts_with = "complete_up_to")]
    pub exhaustive: bool,

    /// Worker threads; the report is the same for any number.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,

    /// The file-system profile the disk follows (FILESYSTEMS.md): posix
    /// (the default), ext4, xfs or btrfs.
    #[arg(long = "fs", value_name = "NAME", value_parser = parse_fs)]
    pub fs: Option<crate::disk::FsProfile>,

    /// Print one JSON object on stdout (the human report goes to stderr).
    #[arg(long)]
    pub json: bool,

    /// With --only-io and --only-state: draw that crash state as one
    /// self-contained HTML page (the run up to the crash, a lane per file,
    /// what the crash kept, the recovery's verdict). Open it in a browser.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<std::path::PathBuf>,

    /// Explore only this crash index (power lost just before I/O I).
    #[arg(long, value_name = "I")]
    pub only_io: Option<u64>,

    /// With --only-io: recover only this crash state of that index.
    #[arg(long, value_name = "J", requires = "only_io")]
    pub only_state: Option<usize>,

    /// 1: one crash per state. 2: also crash every distinct recovered
    /// state again at every I/O index of its recovery and probe (a
    /// recovery interrupted; second crashes are judged in the first
    /// one's contexts).
    #[arg(long, value_name = "D", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub depth: u8,

    /// With --depth 2: stop after this many second-crash states (in the
    /// order of the first crashes, then crash index, then state).
    #[arg(long, value_name = "S")]
    pub max_depth2_states: Option<u64>,

    /// With --only-io and --only-state (implies --depth 2): crash that
    /// state's recovery only at its I/O index K.
    #[arg(long, value_name = "K", requires = "only_state")]
    pub then_io: Option<u64>,

    /// With --then-io: recover only this crash state of that index.
    #[arg(long, value_name = "L", requires = "then_io")]
    pub then_state: Option<usize>,

    /// Also recover every distinct state that passed once per I/O index
    /// of its recovery and probe, with the I/O there (any kind)
    /// failing (EIO): the open may fail, not as corruption, and must
    /// succeed the next time; a poisoned store loses the power and what it
    /// acknowledged must come back.
    #[arg(long)]
    pub faults: bool,

    /// With --faults: stop after this many faulted recoveries (in the
    /// order of the recovered states, then I/O index).
    #[arg(long, value_name = "R")]
    pub max_fault_runs: Option<u64>,

    /// With --only-io and --only-state (implies --faults): fail only the
    /// I/O at this index of that state's recovery.
    #[arg(long, value_name = "K", requires = "only_state")]
    pub fault_io: Option<u64>,

    /// Implies --faults: run only the recorded workload with its own I/O
    /// at index K failing (a workload fault's repro); no recovery is
    /// faulted.
    #[arg(long, value_name = "K")]
    pub workload_fault_io: Option<u64>,

    /// With --faults: fail only this way — eio (any I/O), short-write or
    /// enospc (writes) — instead of each way in turn.
    #[arg(long, value_name = "KIND", value_parser = ArmedFault::parse)]
    pub fault_kind: Option<ArmedFault>,

    /// Also damage every record of every distinct durable image of the
    /// recording, one at a time (segsim: each frame of the log and the
    /// manifest and each segment record — a flipped bit, a length past the
    /// end, the other log's record in its place, a later frame misdirected
    /// onto it, its write lost — opened the default way and at a point in
    /// time: a refusal must change nothing, a cut is allowed only where
    /// nothing vouched for the bytes or at a point in time (quarantined),
    /// and nothing may be swept; a kit engine whose adapter describes its
    /// records and detects damage: each record bit-flipped, zeroed, its
    /// write lost, opened the default way and held to the rule after
    /// damage).
    #[arg(long)]
    pub damage: bool,

    /// With --damage: stop after this many damaged recoveries (in the order
    /// of the images, then site, default open first).
    #[arg(long, value_name = "R")]
    pub max_damage_states: Option<u64>,

    /// With --only-io (implies --damage): damage only this site of that
    /// index's durable image (a --damage failure's repro).
    #[arg(long, value_name = "S", requires = "only_io")]
    pub damage_site: Option<usize>,
}

const EXAMPLES: &str = "Examples:
  sim explore --seed 1                          every crash state of seed 1's 100-op workload
  sim explore --seed 1 --ops 40 --json          a 40-op workload, JSON on stdout
  sim explore --seed 1 --fsync always           the same workload, every write fsynced
  sim explore --seed 7 --jobs 2 --max-states 50000
  sim explore --seed 7 --only-io 118 --only-state 5   recover exactly one state (a failure's repro)
  sim explore --seed 10 --depth 2               also crash every recovery (and probe) at every I/O
  sim explore --seed 0 --only-io 9 --only-state 2 --then-io 14 --then-state 3   one second crash
  sim explore --seed 10 --faults                also fail each I/O of every recovery, one at a time
  sim explore --seed 0 --only-io 9 --only-state 2 --fault-io 7   one faulted recovery
  sim explore --seed 0 --workload-fault-io 31 --fault-kind short-write   the workload, one of its writes cut short
  sim explore --seed 10 --damage                also damage every record of every durable image
  sim explore --seed 10 --only-io 40 --damage-site 7   one damaged image, opened both ways
  sim explore --target redb --seed 1            the same method on redb (REDB.md)
  sim explore --target sqlite --seed 1 --depth 2   and on SQLite (SQLITE.md)";

fn parse_fsync(s: &str) -> Result<FsyncPolicy, String> {
    FsyncPolicy::parse(s).ok_or_else(|| format!("{s:?}: expected always, everysec or no"))
}

/// What the command line asks for, or why it cannot be run. Made once per
/// process, so the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Invocation {
    /// Explore with this target.
    Run { request: ExploreRequest, target: Box<dyn Runnable> },
    /// `--help` or `--version`: print this and succeed.
    Info(String),
    /// Bad usage: print this and exit 2.
    Usage(String),
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invocation::Run { request, target } => write!(f, "Run({request:?}, {})", target.repro(request.seed)),
            Invocation::Info(text) => write!(f, "Info({text:?})"),
            Invocation::Usage(text) => write!(f, "Usage({text:?})"),
        }
    }
}

/// Parse `args`, the arguments after `explore`.
pub(super) fn parse(args: &[String]) -> Invocation {
    let argv = std::iter::once("sim explore".to_string()).chain(args.iter().cloned());
    let matches = super::targets::plants_listed(ExploreArgs::command()).try_get_matches_from(argv);
    let parsed = match matches.and_then(|matches| ExploreArgs::from_arg_matches(&matches)) {
        Ok(parsed) => parsed,
        Err(e) if e.use_stderr() => return Invocation::Usage(e.render().to_string()),
        Err(e) => return Invocation::Info(e.render().to_string()),
    };
    let usage = |message: &str| Invocation::Usage(format!("sim explore: {message}\n(see sim explore --help)\n"));
    let options = match options(&parsed.common, args) {
        Ok(options) => options,
        Err(message) => return usage(&message),
    };
    let flags = TargetFlags {
        canary: parsed.canary,
        fsync: parsed.fsync,
        fs: parsed.common.fs.unwrap_or_default(),
        ..TargetFlags::default()
    }
    .with_target_args(&parsed.target);
    match parsed.target.target.build(&flags) {
        Ok(target) => Invocation::Run { request: request(&parsed.common, options), target },
        Err(message) => usage(&message),
    }
}

/// The exploration `common`'s flags ask for, explored with `options`.
pub fn request(common: &ExploreCommon, options: ExploreOptions) -> ExploreRequest {
    ExploreRequest { seed: common.seed, ops: common.ops, options, json: common.json, report: common.report.clone() }
}

/// The explorer's options from the flags every target takes (`args`, as
/// given, tell whether `--depth` was), or what is wrong with them.
pub fn options(parsed: &ExploreCommon, args: &[String]) -> Result<ExploreOptions, String> {
    if parsed.jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    if parsed.max_dir_subsets == 0 {
        return Err("--max-dir-subsets must be at least 1 (the strict subset)".into());
    }
    let maxima = [parsed.max_states, parsed.max_depth2_states, parsed.max_fault_runs, parsed.max_damage_states];
    if maxima.contains(&Some(0)) {
        return Err(
            "--max-states, --max-depth2-states, --max-fault-runs and --max-damage-states must be at least 1".into()
        );
    }
    // A depth-2 repro names its second crash: that is depth 2.
    let depth_given = args.iter().any(|arg| arg == "--depth" || arg.starts_with("--depth="));
    let depth = if parsed.then_io.is_some() { 2 } else { parsed.depth };
    if parsed.then_io.is_some() && depth_given && parsed.depth != 2 {
        return Err("--then-io names a crash inside a recovery: that is --depth 2".into());
    }
    if parsed.max_depth2_states.is_some() && depth != 2 {
        return Err("--max-depth2-states bounds --depth 2".into());
    }
    let faults = parsed.faults || parsed.fault_io.is_some() || parsed.workload_fault_io.is_some();
    if parsed.fault_io.is_some() && parsed.workload_fault_io.is_some() {
        return Err(
            "--fault-io fails an I/O of a recovery, --workload-fault-io one of the workload: one or the other".into()
        );
    }
    if parsed.fault_kind.is_some() && !faults {
        return Err("--fault-kind says how --faults fails an I/O".into());
    }
    if parsed.max_fault_runs.is_some() && !faults {
        return Err("--max-fault-runs bounds --faults".into());
    }
    let damage = parsed.damage || parsed.damage_site.is_some();
    if parsed.max_damage_states.is_some() && !damage {
        return Err("--max-damage-states bounds --damage".into());
    }
    Ok(ExploreOptions {
        max_dir_subsets: parsed.max_dir_subsets,
        max_states: parsed.max_states,
        jobs: parsed.jobs,
        only_io: parsed.only_io,
        only_state: parsed.only_state,
        depth,
        max_depth2_states: parsed.max_depth2_states,
        then_io: parsed.then_io,
        then_state: parsed.then_state,
        faults,
        max_fault_runs: parsed.max_fault_runs,
        fault_io: parsed.fault_io,
        fault_kind: parsed.fault_kind,
        workload_fault_io: parsed.workload_fault_io,
        progress: true,
        damage,
        max_damage_states: parsed.max_damage_states,
        damage_site: parsed.damage_site,
        garbage: false,
        complete_up_to: if parsed.exhaustive { u64::MAX } else { parsed.complete_up_to },
        reordered: false,
    })
}

/// Run `sim explore` with `args`, the arguments after `explore`: exit 0
/// if no state failed, 1 if one did, 2 on bad usage.
pub fn cli(args: &[String]) -> ExitCode {
    match parse(args) {
        Invocation::Run { request, target } => target.explore(&request),
        Invocation::Info(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Invocation::Usage(text) => {
            eprint!("{text}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_parses_refuses_and_exits_by_the_verdict() {
        let parse = |list: &[&str]| parse(&list.iter().map(|s| s.to_string()).collect::<Vec<String>>());
        let Invocation::Info(help) = parse(&["--help"]) else { panic!("--help is not an error") };
        assert!(help.contains("--max-dir-subsets") && help.contains("--only-state"), "{help}");
        assert!(help.contains("--target") && help.contains("--plant") && help.contains("--canary"), "{help}");
        let refused = |list: &[&str], why: &str| match parse(list) {
            Invocation::Usage(text) => assert!(text.contains(why), "{list:?}: {text}"),
            other => panic!("{list:?} was accepted: {other:?}"),
        };
        refused(&[], "--seed");
        refused(&["--seed", "1", "--jobs", "0"], "--jobs must be at least 1");
        refused(&["--seed", "1", "--max-dir-subsets", "0"], "--max-dir-subsets");
        refused(&["--seed", "1", "--only-state", "3"], "--only-io");
        refused(&["--seed", "1", "--fsync", "sometimes"], "expected always, everysec or no");
        refused(&["--seed", "1", "--plant", "redb-no-sync"], "add --target redb");
        refused(&["--seed", "1", "--target", "redb", "--fsync", "no"], "segsim store's");
        let Invocation::Run { request, target } = parse(&["--seed", "1", "--target", "redb", "--depth", "2"]) else {
            panic!("redb explores at depth 2 too")
        };
        assert_eq!(request.options.depth, 2);
        assert!(target.repro(1).contains("--target redb"), "{}", target.repro(1));
        refused(&["--seed", "1", "--depth", "3"], "--depth");
        refused(&["--seed", "1", "--depth", "0"], "--depth");
        refused(&["--seed", "1", "--max-depth2-states", "5"], "--max-depth2-states bounds --depth 2");
        refused(&["--seed", "1", "--depth", "2", "--max-depth2-states", "0"], "at least 1");
        refused(&["--seed", "1", "--only-io", "3", "--then-io", "2"], "--only-state");
        refused(&["--seed", "1", "--max-fault-runs", "5"], "--max-fault-runs bounds --faults");
        refused(&["--seed", "1", "--faults", "--max-fault-runs", "0"], "at least 1");
        refused(&["--seed", "1", "--only-io", "3", "--fault-io", "2"], "--only-state");
        let Invocation::Run { request: ExploreRequest { options, .. }, .. } =
            parse(&["--seed", "1", "--only-io", "3", "--only-state", "0", "--fault-io", "2"])
        else {
            panic!("a faulted recovery's repro")
        };
        assert!(options.faults && options.fault_io == Some(2) && options.depth == 1);
        refused(&["--seed", "1", "--only-io", "3", "--only-state", "0", "--then-io", "2", "--depth", "1"], "--depth 2");
        let Invocation::Run { request: ExploreRequest { options, .. }, .. } =
            parse(&["--seed", "1", "--only-io", "3", "--only-state", "0", "--then-io", "2"])
        else {
            panic!("a depth-2 repro")
        };
        assert_eq!((options.depth, options.then_io, options.then_state), (2, Some(2), None));
        let Invocation::Run { request, target } = parse(&["--seed", "9", "--jobs", "2", "--json", "--fsync", "always"])
        else {
            panic!("a valid command line")
        };
        let ExploreRequest { seed, ops, options, json, report } = request;
        assert_eq!((seed, ops, options.jobs, options.max_dir_subsets, json), (9, DEFAULT_OPS, 2, 16, true));
        assert_eq!(report, None);
        assert_eq!(target.repro(9), "cargo run --release -p sim -- --seed 9 --fsync always");
        let Invocation::Run { target: redb, .. } = parse(&["--seed", "1", "--target", "redb", "--torn-garbage"]) else {
            panic!("a valid redb command line")
        };
        assert!(redb.repro(1).contains(" --torn-garbage") && !redb.repro(1).contains("--plant"), "{}", redb.repro(1));
        let Invocation::Run { target: sqlite, .. } =
            parse(&["--seed", "1", "--target", "sqlite", "--plant", "sqlite-no-sync", "--set", "journal_mode=wal"])
        else {
            panic!("a valid sqlite command line")
        };
        let repro = sqlite.repro(1);
        assert!(repro.contains(" --plant sqlite-no-sync") && repro.contains(" --set journal_mode=wal"), "{repro}");
        refused(&["--seed", "1", "--target", "sqlite", "--plant", "redb-no-sync"], "sqlite-no-sync");
        refused(&["--seed", "1", "--target", "sqlite", "--set", "journal_mode=memory"], "journal_mode");

        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        assert_eq!(cli(&args(&["--seed", "1", "--ops", "3", "--only-io", "999999"])), ExitCode::from(2));
        assert_eq!(cli(&args(&["--seed", "1", "--ops", "5", "--json"])), ExitCode::SUCCESS);
    }
}
