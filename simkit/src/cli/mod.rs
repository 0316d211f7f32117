//! [`main`]: the simulator's command line for a binary that tests its own
//! engine through the kit — everything `sim --target redb` offers (one
//! seed, a range, a soak, shards, `--jobs`, `--json`, `--trace`,
//! `--check-determinism`, `--shrink`, `--replay`, `--isolate`, `explore`
//! with depth 2 and `--faults`, `merge`), with repro lines that name the
//! user's binary; and `crash-os`, the engine on the real disk killed for
//! real (`crash_os.rs`).

use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use simulator::cli::args::{parse_args_with, usage_error, RunArgs};
use simulator::cli::explore_flags::{options, request, ExploreCommon};
use simulator::cli::explored::run as explore_and_report;
use simulator::cli::replay::replay_as;
use simulator::cli::run::{merge, run_target, Hooks};
use simulator::disk::FsProfile;
use simulator::shrink::ops_file_name;

use self::crash_os::{run as crash_os, CrashOsArgs};
use crate::spec::plants_help;
use crate::{Adapter, Kit, KitSettings, Plant};

pub mod crash_os;

/// Deterministic simulation testing of one engine through the target kit:
/// runs it on a simulated disk that crashes, tears writes and injects I/O
/// faults, drives it with a seeded workload, and checks every recovery
/// against a reference model and the engine's declared durability
/// promises. The same seed always runs the same way. Exit status: 0 no
/// failure, 1 a failure found, 2 bad usage.
#[derive(Parser, Debug)]
#[command(after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
struct KitCli {
    #[command(subcommand)]
    command: Option<KitCommand>,

    #[command(flatten)]
    run: RunArgs,

    #[command(flatten)]
    target: KitArgs,
}

/// The kit's own settings.
#[derive(clap::Args, Debug, Clone)]
struct KitArgs {
    /// Plant one of the adapter's bugs under the engine.
    #[arg(long, value_name = "NAME")]
    plant: Option<String>,

    /// Torn sectors may hold garbage even if the engine says the disk
    /// does not do that.
    #[arg(long)]
    torn_garbage: bool,

    /// Reads may return one flipped bit even if the engine says the disk
    /// does not do that.
    #[arg(long)]
    read_bitflips: bool,

    /// Force part of the engine's configuration (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    options: Vec<String>,

    /// Each seed draws 1 to N clients: the writer and readers beside it,
    /// each reader's read-only transaction held to the one committed
    /// state it began on (check `isolation`). Only for an engine whose
    /// adapter declares readers (`Spec::readers`); default 1.
    #[arg(long, value_name = "N")]
    clients: Option<usize>,

    /// With --clients: readers also step inside the writer's operations,
    /// between two of its I/Os, where the seed draws (an adapter whose
    /// readers step apart from its Db: ReadTransactions::beside).
    #[arg(long)]
    interleave: bool,
}

/// Parsed once per process: the size of its largest variant costs nothing.
#[derive(Subcommand, Debug)]
#[allow(clippy::large_enum_variant)]
enum KitCommand {
    /// Exhaustive crash exploration: record one fault-free workload, crash
    /// at every I/O index, recover and check every crash state there.
    Explore {
        #[command(flatten)]
        common: ExploreCommon,
        #[command(flatten)]
        target: KitArgs,
    },
    /// The engine on the real file system, in a child process SIGKILLed at
    /// seeded moments; after each kill the engine is reopened and held to
    /// the model (every acknowledged commit that may survive on its own
    /// must be there). Not reproducible bit for bit.
    CrashOs(CrashOsArgs),
    /// Combine JSON summaries (from `--json`, e.g. one per shard) into one
    /// report. Exit 1 if any of them holds a failure.
    Merge {
        /// The summary files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<std::path::PathBuf>,
        /// Print the merged summary as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

const EXAMPLES: &str = "Examples:
  --seed 42                              one seed, human report
  --seeds 0..2000 --jobs 2 --json        a sweep, JSON summary on stdout
  --seeds 0..2000 --fs ext4              the same sweep on a disk that keeps what ext4 keeps
  --time 600 --jobs 2                    a ten-minute soak from a random base
  --seeds 0..2000 --jobs 2 --isolate     each seed in a child process: an abort is one failed seed
  --seeds 0..2000 --jobs 2 --isolate --reuse-children   children serve seed after seed until one dies
  --seed 17 --shrink --save              minimize a failure, keep it as an .ops file
  --replay corpus/NAME/seed-17-durability.ops   re-run a saved operation list
  explore --seed 1 --ops 40 --depth 2 --faults   every crash state, crashed again, each I/O failed
  crash-os --seed 1 --cycles 100         the engine on the real disk, SIGKILLed 100 times, checked after each";

/// The command that runs this binary again, for repro lines: its path as
/// invoked (relative to the working directory when it is below it).
fn program() -> String {
    let argv0 = std::env::args().next().unwrap_or_else(|| "sim".to_string());
    let cwd = std::env::current_dir().ok();
    match cwd.as_deref().and_then(|cwd| Path::new(&argv0).strip_prefix(cwd).ok()) {
        Some(relative) => format!("./{}", relative.display()),
        None => argv0,
    }
}

/// `adapter`'s kit target with these flags, or why not.
fn target<A: Adapter>(
    adapter: A,
    run: Option<&RunArgs>,
    fs: Option<FsProfile>,
    args: &KitArgs,
) -> Result<Kit<A>, String> {
    let mut settings = KitSettings {
        ops: run.and_then(|r| r.ops),
        crash_mode: run.and_then(|r| r.crash_mode),
        fs: fs.unwrap_or_default(),
        program: program(),
        ..KitSettings::default()
    };
    settings.harsh.torn_garbage = args.torn_garbage;
    settings.harsh.read_bitflips = args.read_bitflips;
    let mut kit = Kit::new(adapter, settings);
    kit.apply_args(args.plant.as_deref(), &args.options, args.clients)?;
    kit.set_interleave(args.interleave)?;
    Ok(kit)
}

/// The simulator's whole command line for `adapter`'s engine: call it from
/// your binary's `main` (see the crate's doc).
/// The adapter is cloned once, for replaying `.ops` files.
pub fn main<A: Adapter + Clone>(adapter: A) -> ExitCode {
    let name = adapter.name();
    let cli: KitCli = match parse_args_with(plants_listed::<A::Plant>) {
        Ok(cli) => cli,
        Err(exit) => return exit,
    };
    match &cli.command {
        Some(KitCommand::Merge { files, json }) => return merge(files, *json),
        Some(KitCommand::CrashOs(args)) => {
            return crash_os(Kit::new(adapter, KitSettings { program: program(), ..KitSettings::default() }), args)
        }
        Some(KitCommand::Explore { common, target: args }) => {
            let given: Vec<String> = std::env::args().skip(2).collect();
            let (options, kit) = match (options(common, &given), target(adapter, None, common.fs, args)) {
                (Ok(options), Ok(kit)) => (options, kit),
                (Err(message), _) | (_, Err(message)) => return usage_error(name, &message),
            };
            return explore_and_report(&kit, &request(common, options));
        }
        None => {}
    }
    if cli.run.replay.is_some() {
        let args = &cli.target;
        let given = [
            ("--plant", args.plant.is_some()),
            ("--set", !args.options.is_empty()),
            ("--clients", args.clients.is_some()),
            ("--interleave", args.interleave),
            ("--torn-garbage", args.torn_garbage),
            ("--read-bitflips", args.read_bitflips),
        ];
        if let Some(exit) = simulator::cli::run::refuse_with_replay(name, &given) {
            return exit;
        }
    }
    let for_replay = adapter.clone();
    let kit = match target(adapter, Some(&cli.run), cli.run.fs, &cli.target) {
        Ok(kit) => kit,
        Err(message) => return usage_error(name, &message),
    };

    let program = kit.settings.program.clone();
    let replay = move |text: &str, report: Option<&std::path::Path>| {
        let blank = Kit::new(for_replay.clone(), KitSettings { program: program.clone(), ..KitSettings::default() });
        check_file_target(text, name)?;
        replay_as(blank, text, report)
    };
    run_target(&cli.run, kit, &Hooks { program: name, planted: String::new(), replay: &replay })
}

/// The command line with `--plant`'s long help listing `P`'s plants, on
/// the run and on `explore`.
fn plants_listed<P: Plant>(command: clap::Command) -> clap::Command {
    let help = plants_help::<P>("Plant one of the adapter's bugs under the engine (proves the checks can fail):");
    command
        .mut_arg("plant", |arg| arg.long_help(help.clone()))
        .mut_subcommand("explore", |explore| explore.mut_arg("plant", |arg| arg.long_help(help.clone())))
}

/// An `.ops` file for another target is refused, naming both.
fn check_file_target(text: &str, name: &str) -> Result<(), String> {
    match ops_file_name(text)? {
        Some(file) if file != name => Err(format!("the file is for target {file:?}, this binary tests {name:?}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Planted {
        LazyFsync,
    }

    impl Plant for Planted {
        const ALL: &'static [Planted] = &[Planted::LazyFsync];
        fn name(self) -> &'static str {
            "lazy-fsync"
        }
        fn what(self) -> &'static str {
            "commit returns before the log is fsynced"
        }
    }

    #[test]
    fn help_lists_the_adapters_plants_on_the_run_and_on_explore() {
        let mut command = plants_listed::<Planted>(KitCli::command());
        let help = command.render_long_help().to_string();
        assert!(help.contains("lazy-fsync: commit returns before the log is fsynced"), "{help}");
        let explore = command.find_subcommand_mut("explore").expect("explore").render_long_help().to_string();
        assert!(explore.contains("lazy-fsync: commit returns before the log is fsynced"), "{explore}");
        let none = plants_listed::<crate::NoPlant>(KitCli::command()).render_long_help().to_string();
        assert!(none.contains("plants none"), "{none}");
    }
}
