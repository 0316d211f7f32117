//! The `sim explore` command line: flags, usage errors, output, exit
//! status (0 no failure, 1 a failure found, 2 bad usage).
//!
//! The flags build the target (`--target` and its settings, through the
//! registry, `targets.rs`) and the explorer's options (`simulator::cli::explore_flags`); the rest is the one
//! generic explorer (`crate::explore`).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};
use engine::aof::FsyncPolicy;

use super::explored::ExploreRequest;
use super::targets::{Runnable, TargetArgs, TargetFlags};
use crate::canary::{parse_name, Canary};
#[cfg(test)]
use crate::explore::DEFAULT_OPS;
use simulator::cli::explore_flags::{options, request, ExploreCommon};

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
