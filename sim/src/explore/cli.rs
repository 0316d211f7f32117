//! The `sim explore` command line: flags, usage errors, output, exit
//! status (0 no failure, 1 a failure found, 2 bad usage).
//!
//! It lives here rather than in `main.rs` so the simulator's entry point
//! only has to route `sim explore ...` to [`cli`]. The flags build the
//! target (`--target` and its settings) and the [`ExploreOptions`]; the
//! rest is the one generic explorer.

use std::process::ExitCode;

use clap::Parser;
use engine::aof::FsyncPolicy;

use super::{explore, ExploreOptions, DEFAULT_MAX_DIR_SUBSETS, DEFAULT_OPS};
use crate::canary::{parse_name, Canary};
use crate::config::Overrides;
use crate::disk::ArmedFault;
use crate::kit::{Kit, KitSettings};
use crate::output::{emit, verdict};
use crate::systems::redb::RedbAdapter;
use crate::systems::segsim::SegsimTarget;
use crate::systems::sqlite::SqliteAdapter;
use crate::systems::{redb_target, sqlite_target, Target, TargetArgs, TargetName};

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

    /// Worker threads; the report is the same for any number.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,

    /// The file-system profile the disk follows (FILESYSTEMS.md): posix
    /// (the default), ext4, xfs or btrfs.
    #[arg(long = "fs", value_name = "NAME", value_parser = crate::command::parse_fs)]
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
    /// recording (segsim: each frame of the log and the manifest and each
    /// segment record — a flipped bit, a length past the end, the other
    /// log's record in its place), one at a time, and open each damaged
    /// image the default way and at a point in time: a refusal must change
    /// nothing, a cut is allowed only where nothing vouched for the bytes
    /// or at a point in time (quarantined), and nothing may be swept.
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

/// The target the command line picked, with its settings.
#[derive(Debug)]
pub(super) enum Explored {
    Segsim(SegsimTarget),
    Redb(Box<Kit<RedbAdapter>>),
    Sqlite(Box<Kit<SqliteAdapter>>),
}

/// What the command line asks for, or why it cannot be run. Made once per
/// process, so the size of its largest variant costs nothing.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(super) enum Invocation {
    /// Explore this seed of this target.
    Run {
        seed: u64,
        ops: u64,
        options: ExploreOptions,
        json: bool,
        report: Option<std::path::PathBuf>,
        target: Explored,
    },
    /// `--help` or `--version`: print this and succeed.
    Info(String),
    /// Bad usage: print this and exit 2.
    Usage(String),
}

/// Parse `args`, the arguments after `explore`.
pub(super) fn parse(args: &[String]) -> Invocation {
    let argv = std::iter::once("sim explore".to_string()).chain(args.iter().cloned());
    let parsed = match ExploreArgs::try_parse_from(argv) {
        Ok(parsed) => parsed,
        Err(e) if e.use_stderr() => return Invocation::Usage(e.render().to_string()),
        Err(e) => return Invocation::Info(e.render().to_string()),
    };
    let usage = |message: &str| Invocation::Usage(format!("sim explore: {message}\n(see sim explore --help)\n"));
    let options = match options(&parsed.common, args) {
        Ok(options) => options,
        Err(message) => return usage(&message),
    };
    let TargetArgs { target, plant, torn_garbage, options: engine_options } = parsed.target;
    let target = match target {
        TargetName::Segsim if plant.is_some() || torn_garbage || !engine_options.is_empty() => {
            return usage("--plant, --torn-garbage and --set are the kit targets': add --target redb")
        }
        TargetName::Segsim => Explored::Segsim(SegsimTarget::new(Overrides {
            fsync: parsed.fsync,
            canary: parsed.canary,
            fs: parsed.common.fs.unwrap_or_default(),
            ..Overrides::default()
        })),
        TargetName::Redb | TargetName::Sqlite if parsed.fsync.is_some() || parsed.canary.is_some() => {
            return usage(&format!(
                "--fsync and --canary are the segsim target's; {}'s durability is its own (--plant plants a bug under it)",
                target.name()
            ))
        }
        TargetName::Redb | TargetName::Sqlite => {
            let mut settings = KitSettings { fs: parsed.common.fs.unwrap_or_default(), ..KitSettings::default() };
            settings.harsh.torn_garbage = torn_garbage;
            let explored = if target == TargetName::Redb {
                let mut redb = redb_target(settings);
                redb.apply_args(plant.as_deref(), &engine_options).map(|()| Explored::Redb(Box::new(redb)))
            } else {
                let mut sqlite = sqlite_target(settings);
                sqlite.apply_args(plant.as_deref(), &engine_options).map(|()| Explored::Sqlite(Box::new(sqlite)))
            };
            match explored {
                Ok(explored) => explored,
                Err(message) => return usage(&message),
            }
        }
    };
    let ExploreCommon { seed, ops, json, report, .. } = parsed.common;
    Invocation::Run { seed, ops, options, json, report, target }
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
        reordered: false,
    })
}

/// Run `sim explore` with `args`, the arguments after `explore`: exit 0
/// if no state failed, 1 if one did, 2 on bad usage.
pub fn cli(args: &[String]) -> ExitCode {
    match parse(args) {
        Invocation::Run { seed, ops, options, json, report, target: Explored::Segsim(target) } => {
            run(&target, seed, ops, &options, json, report.as_deref())
        }
        Invocation::Run { seed, ops, options, json, report, target: Explored::Redb(target) } => {
            run(target.as_ref(), seed, ops, &options, json, report.as_deref())
        }
        Invocation::Run { seed, ops, options, json, report, target: Explored::Sqlite(target) } => {
            run(target.as_ref(), seed, ops, &options, json, report.as_deref())
        }
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

/// Explore and print the report: exit 1 if a state failed, 2 if the
/// options name a crash index or state that does not exist. With
/// `page` (`--report`, which needs `--only-io` and `--only-state`), also
/// draw that crash state (`crate::report::write_explored`).
pub fn run<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    options: &ExploreOptions,
    json: bool,
    page: Option<&std::path::Path>,
) -> ExitCode {
    let only = options.only_io.zip(options.only_state);
    if page.is_some() && only.is_none() {
        eprintln!("sim explore: --report draws one crash state: give --only-io I --only-state J (a failure's repro)");
        return ExitCode::from(2);
    }
    let report = match explore(target, seed, ops, options) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("sim explore: {message}");
            return ExitCode::from(2);
        }
    };
    emit(&report.to_text(), json.then(|| report.to_json()).as_ref());
    if let (Some(path), Some(crash)) = (page, only) {
        if let Err(e) = crate::report::write_explored(target, (seed, ops), crash, options, &report, path) {
            eprintln!("sim explore: {e}");
            return ExitCode::from(2);
        }
    }
    verdict(report.failures_total > 0)
}
