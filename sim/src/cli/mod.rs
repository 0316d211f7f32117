//! The `sim` binary's command line ([`main`]), assembled from the blocks
//! every target shares (`simulator::cli`, re-exported here as `args`,
//! `run`, `isolate`, `explored`, `replay`), the kit's `crash-os`
//! (`simkit::cli::crash_os`), `sim trace` (`simtrace::cli`) and `sim live`
//! (`simlive::cli`):
//!
//! - `mod.rs`: the `sim` binary's flags and subcommands (`canaries`,
//!   `explore`, `trace`, `merge`, `crash-os`, `bench`), routed to the rest;
//! - `targets.rs`: the registry of the targets `--target` names, each
//!   built from the flags and erased behind `Runnable`;
//! - `explore.rs`: `sim explore`'s own flags (`--target`, `--fsync`,
//!   `--canary`) around the ones every target takes.
//!
//! Exit status everywhere: 0 no failure, 1 a failure found, 2 bad usage.

pub mod explore;
pub mod targets;

// The run command line every target shares, from the simulator: `sim`'s
// own files name them as before (`super::run`, ...).
pub use simulator::cli::{args, explored, isolate, replay, run};
// `crash-os`, a kit engine on the real disk, from the kit.
pub use simkit::cli::crash_os;
// `sim trace`, from its crate.
pub use simtrace::cli as trace;
// `sim live`, from its crate.
pub use simlive::cli as live;

use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use engine::aof::FsyncPolicy;

use self::args::{parse_args_with, RunArgs};
use self::run::Hooks;
use self::targets::{TargetArgs, TargetFlags};
use crate::canary::{Canary, BUILT_WITH_CANARIES, HOW_TO_BUILD};
use crate::config::Overrides;
use crate::output::{emit, verdict};

/// Deterministic simulation testing for the segsim engine: runs the engine
/// on a simulated disk that crashes, tears writes and injects I/O faults,
/// drives it with a seeded workload, and checks every recovery against a
/// reference model. The same seed always runs the same way.
#[derive(Parser, Debug)]
#[command(name = "sim", version, after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<SubCommand>,

    #[command(flatten)]
    run: RunArgs,

    /// Force the fsync policy: always, everysec or no.
    #[arg(long, value_parser = parse_fsync)]
    fsync: Option<FsyncPolicy>,

    /// Open the store with point-in-time recovery in every seed (a quarter
    /// of the seeds draw it anyway): damage is cut, not refused.
    #[arg(long)]
    point_in_time: bool,

    /// Plant this bug in the engine (a build with `--features canaries`
    /// only; `sim canaries` lists them).
    #[arg(long, value_name = "NAME", value_parser = crate::canary::parse_name)]
    canary: Option<Canary>,

    #[command(flatten)]
    target: TargetArgs,

    /// With --target redb: reads may return a flipped bit (off by default:
    /// redb takes reads to be right or an error; REDB.md).
    #[arg(long)]
    read_bitflips: bool,
}

#[derive(Subcommand, Debug)]
enum SubCommand {
    /// Hunt every planted engine bug over fresh seeds (0, 1, 2, ...) until
    /// the simulator catches it or its budget runs out; print the table.
    /// Exit 1 if any canary survives. Needs a build with `--features
    /// canaries`.
    Canaries(CanariesArgs),

    /// Exhaustive crash exploration: record one short fault-free workload,
    /// crash at every I/O index, recover and check every crash state there.
    /// `sim explore --help` lists its flags.
    #[command(disable_help_flag = true)]
    Explore {
        /// Everything after `explore`, parsed by the explorer itself.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },

    /// Crash-test any program out of process: `sim trace record` runs it
    /// under strace, `sim trace explore` checks every crash state of the
    /// recording with a command of yours. `sim trace --help` lists both.
    #[command(disable_help_flag = true)]
    Trace {
        /// Everything after `trace`, parsed by `sim trace` itself.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },

    /// Run any dynamically linked program on the simulated disk with
    /// faults and crashes injected live (the stdfs layer preloaded):
    /// `sim live run` one seed, `sim live sweep` many, each crash state
    /// checked by a command of yours. `sim live --help` lists both.
    #[command(disable_help_flag = true)]
    Live {
        /// Everything after `live`, parsed by `sim live` itself.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },

    /// Combine JSON summaries (from `--json`, e.g. one per shard) into one
    /// report. Exit 1 if any of them holds a failure.
    Merge {
        /// The summary files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<std::path::PathBuf>,

        /// Print the merged summary as JSON on stdout (the report goes to
        /// stderr).
        #[arg(long)]
        json: bool,
    },

    /// A kit target's engine on the real file system, in a child process
    /// SIGKILLed at seeded moments; after each kill the engine is reopened
    /// and held to the model. Not reproducible bit for bit. (The segsim
    /// store's own is `make crash-os`.)
    CrashOs {
        /// The kit target: redb or sqlite.
        #[arg(long, value_name = "NAME", value_parser = targets::lookup, default_value = crate::systems::SEGSIM)]
        target: &'static targets::Registered,

        #[command(flatten)]
        args: crash_os::CrashOsArgs,
    },

    /// Measure the harness and the engine side by side on one core and
    /// print every figure and ratio (see BENCHMARKS.md).
    Bench {
        /// Seeds for the simulator figures.
        #[arg(long, default_value_t = 400, value_name = "N")]
        seeds: u64,

        /// Seeds replayed on the real file system for the sim-vs-OS ratio.
        #[arg(long, default_value_t = 20, value_name = "N")]
        os_seeds: u64,

        /// Rows in the engine's segment, log and write benchmarks.
        #[arg(long, default_value_t = 200_000, value_name = "N")]
        rows: u64,

        /// Operations per explored workload (seeds 1, 2 and 3) for the explore rate.
        #[arg(long, default_value_t = 200, value_name = "N")]
        explore_ops: u64,

        /// Print the figures as one JSON object on stdout.
        #[arg(long)]
        json: bool,
    },

    /// Internal to `sim bench`: time one reopen of the store in DIR (which
    /// must replay FRAMES records) in this fresh process, as a restart is,
    /// and print the seconds.
    #[command(hide = true)]
    BenchReplay {
        #[arg(long, value_name = "DIR")]
        dir: std::path::PathBuf,
        #[arg(long, value_name = "FRAMES")]
        frames: u64,
        #[arg(long, value_name = "MS")]
        now_ms: u64,
    },
}

#[derive(clap::Args, Debug)]
struct CanariesArgs {
    /// Wall-clock seconds each canary may be hunted for (one core each).
    #[arg(long, default_value_t = 60.0, value_name = "SECS")]
    budget: f64,

    /// Canaries hunted side by side.
    #[arg(long, default_value_t = 1, value_name = "N")]
    jobs: usize,

    /// Print the table as one JSON object on stdout (the human table goes
    /// to stderr).
    #[arg(long)]
    json: bool,

    /// Hunt only these canaries.
    #[arg(long, num_args = 1.., value_name = "NAME", value_parser = crate::canary::parse_name)]
    only: Vec<Canary>,
}

const EXAMPLES: &str = "Examples:
  sim --seed 42                              one seed, human report
  sim --seeds 0..2000 --jobs 2 --json        a sweep, JSON summary on stdout
  sim --time 600 --jobs 2                    a ten-minute soak from a random base
  sim --seeds 0..400 --shard 1/4             this machine's quarter of a sweep
  sim --seeds 0..2000 --jobs 2 --isolate     each seed in a child process: an abort is one failed seed
  sim --seeds 0..2000 --jobs 2 --isolate --reuse-children   children serve seed after seed until one dies
  sim --seed 17 --shrink --save              minimize a failure, keep it as a regression
  sim --target redb --seeds 0..2000 --jobs 2 test redb through the same simulated disk (REDB.md)
  sim --target sqlite --seeds 0..2000 --jobs 2 test SQLite through its own VFS on that disk (SQLITE.md)
  sim --replay corpus/regressions/x.ops      re-run a saved operation list
  sim canaries --jobs 2                      prove every planted bug is caught (--features canaries)
  sim explore --seed 1 --ops 40              crash at every I/O index, check every crash state
  sim trace record --dir db -- ./prog db     record any program's file-system calls (PROGRAMS.md)
  sim crash-os --target redb --cycles 100    redb on the real disk, SIGKILLed 100 times, checked after each
  sim merge shard-*.json                     one report from many shards' --json summaries
  sim bench                                  the harness and the engine, measured side by side";

fn parse_fsync(s: &str) -> Result<FsyncPolicy, String> {
    FsyncPolicy::parse(s).ok_or_else(|| format!("{s:?}: expected always, everysec or no"))
}

fn usage_error(message: &str) -> ExitCode {
    let mut command = Cli::command();
    let error = command.error(clap::error::ErrorKind::ArgumentConflict, message);
    let _ = error.print();
    ExitCode::from(2)
}

/// The `sim` binary's whole command line.
pub fn main() -> ExitCode {
    let cli: Cli = match parse_args_with(targets::plants_listed) {
        Ok(cli) => cli,
        Err(exit) => return exit,
    };
    match &cli.command {
        Some(SubCommand::Canaries(args)) => return canaries(args),
        Some(SubCommand::Explore { args }) => return explore::cli(args),
        Some(SubCommand::Trace { args }) => return trace::cli(args),
        Some(SubCommand::Live { args }) => return live::cli(args),
        Some(SubCommand::Merge { files, json }) => return run::merge(files, *json),
        Some(SubCommand::CrashOs { target, args }) => return target.crash_os(args),
        Some(SubCommand::BenchReplay { dir, frames, now_ms }) => {
            println!("{}", crate::bench::replay_seconds(dir, *frames, *now_ms));
            return ExitCode::SUCCESS;
        }
        Some(SubCommand::Bench { seeds, os_seeds, rows, explore_ops, json }) => {
            let options = crate::bench::BenchOptions {
                seeds: *seeds,
                os_seeds: *os_seeds,
                rows: *rows,
                explore_ops: *explore_ops,
                replay_program: std::env::current_exe().ok(),
            };
            return bench(options, *json);
        }
        None => {}
    }
    run_target(&cli)
}

/// `sim [FLAGS]`: the target the flags name, built through the registry,
/// in the random mode.
fn run_target(cli: &Cli) -> ExitCode {
    let target = cli.target.target;
    if cli.run.save && cli.canary.is_some() {
        return usage_error("--save keeps engine regressions; a failure under --canary is the planted bug's");
    }
    if cli.run.save && cli.target.plant.is_some() {
        return usage_error(&format!(
            "--save keeps {} findings; a failure under --plant is the planted bug's",
            target.name
        ));
    }
    if cli.run.replay.is_some() {
        let kit = &cli.target;
        let given = [
            ("--plant", kit.plant.is_some()),
            ("--set", !kit.options.is_empty()),
            ("--clients", kit.clients.is_some()),
            ("--interleave", kit.interleave),
            ("--torn-garbage", kit.torn_garbage),
            ("--read-bitflips", cli.read_bitflips),
            ("--fsync", cli.fsync.is_some()),
            ("--point-in-time", cli.point_in_time),
        ];
        if let Some(exit) = run::refuse_with_replay("sim", &given) {
            return exit;
        }
    }
    let flags = TargetFlags {
        canary: cli.canary,
        fsync: cli.fsync,
        point_in_time: cli.point_in_time,
        read_bitflips: cli.read_bitflips,
        ops: cli.run.ops,
        crash_mode: cli.run.crash_mode,
        fs: cli.run.fs.unwrap_or_default(),
        ..TargetFlags::default()
    }
    .with_target_args(&cli.target);
    let built = match target.build(&flags) {
        Ok(built) => built,
        Err(message) => return usage_error(&message),
    };
    let canary = cli.canary;
    let replay = move |text: &str, report: Option<&std::path::Path>| targets::replay(text, canary, report);
    // A canary is no setting of the file: a shrunk file says so, and how to
    // replay it.
    let planted = canary.map_or(String::new(), |c| format!(" with canary {} planted (replay with --canary)", c.name()));
    built.run(&cli.run, &Hooks { program: "sim", planted, replay: &replay })
}

/// `sim bench`: measure, then print the figures as text or JSON.
fn bench(options: crate::bench::BenchOptions, json: bool) -> ExitCode {
    let report = crate::bench::run(options);
    if json {
        println!("{}", serde_json::to_string_pretty(&report.to_json()).expect("a JSON value serializes"));
    } else {
        print!("{}", report.to_text());
    }
    ExitCode::SUCCESS
}

/// `sim canaries`: hunt each canary (see `sim::hunt`) and print the table.
fn canaries(args: &CanariesArgs) -> ExitCode {
    if !BUILT_WITH_CANARIES {
        eprintln!("sim canaries: {HOW_TO_BUILD}");
        return ExitCode::from(2);
    }
    if args.jobs == 0 {
        return usage_error("--jobs must be at least 1");
    }
    if !(args.budget > 0.0 && args.budget.is_finite()) {
        return usage_error("--budget must be a positive number of seconds");
    }
    let chosen: Vec<Canary> = if args.only.is_empty() { Canary::ALL.to_vec() } else { args.only.clone() };
    let budget = Duration::from_secs_f64(args.budget);
    eprintln!("sim canaries: hunting {} canaries, {} at a time, up to {} s each", chosen.len(), args.jobs, args.budget);
    let progress = |hunt: &crate::hunt::Hunt| match &hunt.catch {
        Some(catch) if !catch.counts() => eprintln!(
            "sim canaries: {}: seed {} fails without the canary too (check '{}'): {}",
            hunt.canary.name(),
            catch.seed,
            catch.check,
            catch.repro
        ),
        Some(catch) => eprintln!(
            "sim canaries: {} caught by seed {} after {} seeds, {:.2} s (check '{}')",
            hunt.canary.name(),
            catch.seed,
            hunt.seeds,
            hunt.seconds,
            catch.check
        ),
        None => eprintln!("sim canaries: {} SURVIVED {} seeds, {:.2} s", hunt.canary.name(), hunt.seeds, hunt.seconds),
    };
    let hunts = crate::hunt::hunt_all(&chosen, Overrides::default(), budget, args.jobs, &progress);
    let table = crate::hunt::table(&hunts, budget);
    emit(&table, args.json.then(|| crate::hunt::to_json(&hunts, budget)).as_ref());
    verdict(!hunts.iter().all(crate::hunt::Hunt::caught))
}
