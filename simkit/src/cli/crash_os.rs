//! `crash-os` on the command line: a kit engine on the real file system,
//! SIGKILLed at seeded moments and checked after each restart
//! (`crate::crash_os`). The same flags for a kit user's binary
//! (`logkv crash-os ...`, from [`super::main`]) and for `sim`'s
//! built-in kit targets (`sim crash-os --target redb ...`, through the
//! registry), and the hidden child mode (`--child-from`) both start
//! themselves in. Exit status: 0 no failure, 1 a failure, 2 bad usage.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::crash_os::{self, CrashOsRequest, KillRule};
use crate::{Adapter, Kit};
use simulator::cli::args::usage_error;
use simulator::output::verdict;

/// The flags of `crash-os`.
#[derive(clap::Args, Debug, Clone)]
pub struct CrashOsArgs {
    /// The seed: the engine's configuration, the workload and the kill moments.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,

    /// Kill/restart cycles.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub cycles: u64,

    /// The engine's directory, new or empty (default: a fresh one under
    /// the temporary directory, removed after a passing run).
    #[arg(long, value_name = "PATH")]
    pub dir: Option<PathBuf>,

    /// Kill each child at most this many milliseconds into its workload.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    pub max_kill_ms: u64,

    /// Operations per chunk of the endless workload (default: the
    /// adapter's per-seed count).
    #[arg(long, value_name = "K")]
    pub ops: Option<u64>,

    /// Plant one of the adapter's bugs under the engine.
    #[arg(long, value_name = "NAME")]
    pub plant: Option<String>,

    /// Force part of the engine's configuration (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub options: Vec<String>,

    /// Each seed draws 1 to N clients: the writer and readers beside it,
    /// whose steps the child runs and the parent holds to the snapshot
    /// each began on (an engine whose writer waits for its readers is
    /// refused).
    #[arg(long, value_name = "N")]
    pub clients: Option<usize>,

    /// Plant a harness mistake to prove the check can fail: the child
    /// acknowledges each commit before running it.
    #[arg(long)]
    pub plant_early_ack: bool,

    /// What a kill's recovery must show: page-cache (every acknowledged
    /// commit of a level that may survive on its own) or power-loss (only
    /// what the kit allows after a power loss, for an engine whose eventual
    /// commits live in its own memory).
    #[arg(long, value_name = "RULE", value_parser = KillRule::parse, default_value = "page-cache")]
    pub kill_rule: KillRule,

    /// Internal: run as the child, from this operation, in --dir.
    #[arg(long, value_name = "INDEX", hide = true)]
    pub child_from: Option<u64>,
}

/// `crash-os` for `kit` (its program, target flag and adapter set; the
/// plant, options and chunk size come from `args`).
pub fn run<A: Adapter>(mut kit: Kit<A>, args: &CrashOsArgs) -> ExitCode {
    let name = kit.adapter.name();
    if let Err(message) = check(args) {
        return usage_error(name, &message);
    }
    kit.settings.ops = args.ops;
    if let Err(message) = kit.apply_args(args.plant.as_deref(), &args.options, args.clients) {
        return usage_error(name, &message);
    }
    if let Some(from) = args.child_from {
        let Some(dir) = &args.dir else { return usage_error(name, "--child-from needs --dir") };
        return crash_os::child(&kit, args.seed, dir, from, args.plant_early_ack);
    }
    let request = request(&kit, args);
    eprintln!("crash-os {name}: seed {}, {} cycles, kills up to {} ms in", args.seed, args.cycles, args.max_kill_ms);
    let progress = |cycles: u64, counts: &crash_os::Counts| {
        eprintln!("crash-os {name}: {cycles} cycles passed, {} operations acknowledged", counts.acknowledged);
    };
    let report = crash_os::run(&kit, &request, &progress);
    print!("{report}");
    verdict(report.failed())
}

/// The request `args` make, its child started as this binary with
/// `crash-os` and the target's flag (`--target redb` for `sim`'s own).
fn request<A: Adapter>(kit: &Kit<A>, args: &CrashOsArgs) -> CrashOsRequest {
    let program =
        std::env::current_exe().map_or_else(|_| std::env::args_os().next().unwrap_or_default(), OsString::from);
    let mut child_command = vec![program, OsString::from("crash-os")];
    child_command.extend(kit.settings.target_flag.split_whitespace().map(OsString::from));
    CrashOsRequest {
        seed: args.seed,
        cycles: args.cycles,
        dir: args.dir.clone(),
        max_kill_ms: args.max_kill_ms,
        early_ack: args.plant_early_ack,
        kill_rule: args.kill_rule,
        child_command,
    }
}

/// The flags that make no run.
fn check(args: &CrashOsArgs) -> Result<(), String> {
    if args.cycles == 0 {
        return Err("--cycles must be at least 1".into());
    }
    if args.max_kill_ms == 0 {
        return Err("--max-kill-ms must be at least 1".into());
    }
    if args.ops == Some(0) {
        return Err("--ops must be at least 1".into());
    }
    match (&args.dir, args.child_from) {
        // A child runs in the directory its parent filled.
        (Some(dir), None) => crash_os::check_dir(dir),
        _ => Ok(()),
    }
}
