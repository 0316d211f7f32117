//! The flags of `explore` every target takes (`sim explore`, a kit user's
//! `explore`), and the checks that turn them into the explorer's options:
//! what is wrong with a combination is said before anything runs.

use super::args::parse_fs;
use super::explored::ExploreRequest;
use crate::disk::ArmedFault;
use crate::explore::{ExploreOptions, DEFAULT_COMPLETE_UP_TO, DEFAULT_MAX_DIR_SUBSETS, DEFAULT_OPS};

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
