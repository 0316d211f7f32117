//! `sim`: the simulator's command line.
//!
//! Exit status: 0 no failure, 1 a failure found, 2 bad usage.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{CommandFactory, Parser, Subcommand};
use engine::aof::FsyncPolicy;
use sim::canary::{Canary, BUILT_WITH_CANARIES, HOW_TO_BUILD};
use sim::config::Overrides;
use sim::disk::CrashMode;
use sim::failure::{Check, Failure};
use sim::outcome::SeedOutcome;
use sim::output::{emit, verdict};
use sim::shrink::{ops_file, shrink};
use sim::summary::Summary;
use sim::target::redb::{HarshDisk, RedbTarget};
use sim::target::segsim::SegsimTarget;
use sim::target::{run_seed, Target, TargetArgs, TargetName};

/// Deterministic simulation testing for the segsim engine: runs the engine
/// on a simulated disk that crashes, tears writes and injects I/O faults,
/// drives it with a seeded workload, and checks every recovery against a
/// reference model. The same seed always runs the same way.
#[derive(Parser, Debug)]
#[command(name = "sim", version, after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<SubCommand>,

    /// Run one seed (with --time: the first seed of the soak).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,

    /// Run a range of seeds, A inclusive to B exclusive (e.g. 0..2000).
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    seeds: Option<(u64, u64)>,

    /// Soak: run consecutive seeds from --seed (default: a random base,
    /// printed) for this many wall-clock seconds.
    #[arg(long, value_name = "SECS")]
    time: Option<f64>,

    /// Parallel workers (seeds are spread over them; results are identical
    /// to --jobs 1).
    #[arg(long, default_value_t = 1, value_name = "N")]
    jobs: usize,

    /// Run only the seeds congruent to K modulo N (fleet sharding).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    shard: Option<(u64, u64)>,

    /// Print one JSON summary object on stdout (the human report goes to
    /// stderr).
    #[arg(long)]
    json: bool,

    /// Print the seed's whole event trace (one seed only).
    #[arg(long)]
    trace: bool,

    /// Run every seed twice and fail if the two traces differ.
    #[arg(long)]
    check_determinism: bool,

    /// Minimize the first failing seed's operation list and print it.
    #[arg(long)]
    shrink: bool,

    /// With --shrink: save the minimal list under corpus/regressions/.
    #[arg(long, requires = "shrink")]
    save: bool,

    /// Replay an operation list file (as saved by --shrink --save).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["seed", "seeds", "time"])]
    replay: Option<std::path::PathBuf>,

    /// Workload operations per seed.
    #[arg(long, value_name = "N")]
    ops: Option<u64>,

    /// Force the fsync policy: always, everysec or no.
    #[arg(long, value_parser = parse_fsync)]
    fsync: Option<FsyncPolicy>,

    /// Force the crash mode: strict, prefix or reorder.
    #[arg(long, value_parser = parse_crash_mode)]
    crash_mode: Option<CrashMode>,

    /// Open the store with point-in-time recovery in every seed (a quarter
    /// of the seeds draw it anyway): damage is cut, not refused.
    #[arg(long)]
    point_in_time: bool,

    /// Plant this bug in the engine (a build with `--features canaries`
    /// only; `sim canaries` lists them).
    #[arg(long, value_name = "NAME", value_parser = sim::canary::parse_name)]
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
    #[arg(long, num_args = 1.., value_name = "NAME", value_parser = sim::canary::parse_name)]
    only: Vec<Canary>,
}

const EXAMPLES: &str = "Examples:
  sim --seed 42                              one seed, human report
  sim --seeds 0..2000 --jobs 2 --json        a sweep, JSON summary on stdout
  sim --time 600 --jobs 2                    a ten-minute soak from a random base
  sim --seeds 0..400 --shard 1/4             this machine's quarter of a sweep
  sim --seed 17 --shrink --save              minimize a failure, keep it as a regression
  sim --target redb --seeds 0..2000 --jobs 2 test redb through the same simulated disk (REDB.md)
  sim --replay corpus/regressions/x.ops      re-run a saved operation list
  sim canaries --jobs 2                      prove every planted bug is caught (--features canaries)
  sim explore --seed 1 --ops 40              crash at every I/O index, check every crash state
  sim merge shard-*.json                     one report from many shards' --json summaries
  sim bench                                  the harness and the engine, measured side by side";

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("expected A..B, got {s:?}"))?;
    let a: u64 = a.parse().map_err(|_| format!("{a:?} is not a seed number"))?;
    let b: u64 = b.parse().map_err(|_| format!("{b:?} is not a seed number"))?;
    if a >= b {
        return Err(format!("the range {a}..{b} is empty (B is exclusive)"));
    }
    Ok((a, b))
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (k, n) = s.split_once('/').ok_or_else(|| format!("expected K/N, got {s:?}"))?;
    let k: u64 = k.parse().map_err(|_| format!("{k:?} is not a number"))?;
    let n: u64 = n.parse().map_err(|_| format!("{n:?} is not a number"))?;
    if n == 0 || k >= n {
        return Err(format!("shard {k}/{n}: K must be below N (0 <= K < N)"));
    }
    Ok((k, n))
}

fn parse_fsync(s: &str) -> Result<FsyncPolicy, String> {
    FsyncPolicy::parse(s).ok_or_else(|| format!("{s:?}: expected always, everysec or no"))
}

fn parse_crash_mode(s: &str) -> Result<CrashMode, String> {
    CrashMode::parse(s).ok_or_else(|| format!("{s:?}: expected strict, prefix or reorder"))
}

fn usage_error(message: &str) -> ExitCode {
    let mut command = Cli::command();
    let error = command.error(clap::error::ErrorKind::ArgumentConflict, message);
    let _ = error.print();
    ExitCode::from(2)
}

/// Which seeds to run: a finite list, or an endless soak from a base.
enum Seeds {
    List(Vec<u64>),
    Soak { base: u64, deadline: Instant },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match &cli.command {
        Some(SubCommand::Canaries(args)) => return canaries(args),
        Some(SubCommand::Explore { args }) => return sim::explore::cli(args),
        Some(SubCommand::Merge { files, json }) => return merge(files, *json),
        Some(SubCommand::Bench { seeds, os_seeds, rows, explore_ops, json }) => {
            let options =
                sim::bench::BenchOptions { seeds: *seeds, os_seeds: *os_seeds, rows: *rows, explore_ops: *explore_ops };
            let report = sim::bench::run(options);
            if *json {
                println!("{}", serde_json::to_string_pretty(&report.to_json()).expect("a JSON value serializes"));
            } else {
                print!("{}", report.to_text());
            }
            return ExitCode::SUCCESS;
        }
        None => {}
    }
    if cli.jobs == 0 {
        return usage_error("--jobs must be at least 1");
    }
    if cli.save && cli.canary.is_some() {
        return usage_error("--save keeps engine regressions; a failure under --canary is the planted bug's");
    }
    let TargetArgs { target, plant, torn_garbage } = cli.target;
    match target {
        TargetName::Segsim if plant.is_some() || torn_garbage || cli.read_bitflips => {
            usage_error("--plant, --torn-garbage and --read-bitflips are the redb target's: add --target redb")
        }
        TargetName::Segsim => run_target(
            &cli,
            SegsimTarget::new(Overrides {
                ops: cli.ops,
                fsync: cli.fsync,
                crash_mode: cli.crash_mode,
                point_in_time: cli.point_in_time,
                canary: cli.canary,
            }),
        ),
        TargetName::Redb if cli.fsync.is_some() => {
            usage_error("--fsync is the segsim store's policy; redb's durability is per commit")
        }
        TargetName::Redb if cli.canary.is_some() => {
            usage_error("--canary plants a bug in the segsim engine; under redb use --plant")
        }
        TargetName::Redb if cli.save && plant.is_some() => {
            usage_error("--save keeps redb findings; a failure under --plant is the planted bug's")
        }
        TargetName::Redb => run_target(
            &cli,
            RedbTarget {
                ops: cli.ops,
                crash_mode: cli.crash_mode,
                plant,
                harsh: HarshDisk { torn_garbage, read_bitflips: cli.read_bitflips },
            },
        ),
    }
}

/// Everything but the subcommands, for the target the command line picked:
/// replay, or run the seeds (one with its trace, many, a soak) and shrink
/// the first failure.
fn run_target<T: Target>(cli: &Cli, target: T) -> ExitCode {
    if let Some(path) = &cli.replay {
        // The file names its target; `--canary` plants a bug in segsim's.
        return replay(path, cli.json, cli.canary);
    }
    let in_shard = |seed: &u64| cli.shard.is_none_or(|(k, n)| seed % n == k);
    let seeds = match (cli.seed, cli.seeds, cli.time) {
        (_, Some(_), Some(_)) => return usage_error("--seeds and --time cannot be combined"),
        (Some(_), Some(_), None) => return usage_error("give --seed or --seeds, not both"),
        (Some(seed), None, None) => Seeds::List(vec![seed].into_iter().filter(in_shard).collect()),
        (None, Some((a, b)), None) => Seeds::List((a..b).filter(in_shard).collect()),
        (seed, None, Some(secs)) => {
            if !(secs > 0.0 && secs.is_finite()) {
                return usage_error("--time must be a positive number of seconds");
            }
            let mut base = seed.unwrap_or_else(random_base);
            if let Some((k, n)) = cli.shard {
                // The soak steps by N from the shard's first seed.
                base += (k + n - base % n) % n;
            }
            eprintln!("sim: soak for {secs} s from seed {base} (repeat with --seed {base})");
            Seeds::Soak { base, deadline: Instant::now() + Duration::from_secs_f64(secs) }
        }
        (None, None, None) => return usage_error("say which seeds to run: --seed N, --seeds A..B or --time SECS"),
    };
    if cli.trace {
        let Seeds::List(list) = &seeds else { return usage_error("--trace needs exactly one seed (--seed N)") };
        let [seed] = list[..] else { return usage_error("--trace needs exactly one seed (--seed N)") };
        let outcome = run_seed(&target, seed, true);
        let trace = outcome.trace.as_ref().expect("kept");
        for event in trace.all() {
            println!("{}", trace.describe(event));
        }
        println!("trace hash {:016x}", outcome.trace_hash);
        return verdict(outcome.failure.is_some());
    }

    let started = Instant::now();
    let mut summary = run_many(&seeds, &target, cli.jobs, cli.check_determinism, cli.shard.map(|(_, n)| n));
    summary.elapsed_sec = started.elapsed().as_secs_f64();
    emit(&summary.to_text(), cli.json.then(|| summary.to_json()).as_ref());
    if cli.shrink {
        match summary.failures.first() {
            Some(failure) => shrink_and_report(&target, failure.seed, failure.check, cli.canary, cli.save),
            None => eprintln!("sim: --shrink: nothing failed, nothing to shrink"),
        }
    }
    verdict(!summary.failures.is_empty())
}

/// A base seed from the wall clock, for soaks started without --seed (the
/// only use of the wall clock besides timing; it is printed so the soak
/// can be repeated).
fn random_base() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos % 1_000_000_000_000
}

/// Run one seed, or twice with `check_determinism`.
fn run_checked<T: Target>(seed: u64, target: &T, check_determinism: bool) -> SeedOutcome {
    let mut outcome = run_seed(target, seed, false);
    if check_determinism {
        let again = run_seed(target, seed, false);
        let same_failure = outcome.failure.as_ref().map(|f| (f.check, f.op_index))
            == again.failure.as_ref().map(|f| (f.check, f.op_index));
        if (again.trace_hash != outcome.trace_hash || !same_failure) && outcome.failure.is_none() {
            outcome.failure = Some(Failure {
                seed,
                op_index: 0,
                check: Check::Determinism,
                detail: format!(
                    "two runs of the seed differ: trace hash {:016x} vs {:016x}",
                    outcome.trace_hash, again.trace_hash
                ),
                recent: Vec::new(),
                repro: target.repro(seed, " --check-determinism"),
            });
        }
    }
    outcome
}

fn run_many<T: Target>(
    seeds: &Seeds,
    target: &T,
    jobs: usize,
    check_determinism: bool,
    shard_n: Option<u64>,
) -> Summary {
    let summary = Mutex::new(Summary::default());
    let next = AtomicU64::new(0);
    let running = AtomicUsize::new(jobs);
    let started = Instant::now();
    let step = shard_n.unwrap_or(1);
    let total = match seeds {
        Seeds::List(list) => Some(list.len()),
        Seeds::Soak { .. } => None,
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let position = next.fetch_add(1, Ordering::Relaxed);
                    let seed = match seeds {
                        Seeds::List(list) => match list.get(position as usize) {
                            Some(seed) => *seed,
                            None => break,
                        },
                        Seeds::Soak { base, deadline } => {
                            if Instant::now() >= *deadline {
                                break;
                            }
                            base.wrapping_add(position * step)
                        }
                    };
                    let outcome = run_checked(seed, target, check_determinism);
                    summary.lock().unwrap_or_else(|e| e.into_inner()).add(&outcome);
                }
                running.fetch_sub(1, Ordering::Relaxed);
            });
        }
        // Progress on stderr, about once a second, for runs that take a while.
        let mut last_report = Instant::now();
        while running.load(Ordering::Relaxed) > 0 {
            std::thread::sleep(Duration::from_millis(20));
            if last_report.elapsed() < Duration::from_secs(1) {
                continue;
            }
            last_report = Instant::now();
            let s = summary.lock().unwrap_or_else(|e| e.into_inner());
            let rate = s.ops as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let of = total.map_or(String::new(), |t| format!("/{t}"));
            eprintln!(
                "sim: {}{of} seeds, {} ops ({rate:.0} ops/s), {} crashes, {} failures",
                s.seeds,
                s.ops,
                s.crashes,
                s.failures.len()
            );
        }
    });
    summary.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// `--shrink`: minimize `seed`'s list to one that still fails `check`,
/// print it as an `.ops` file, and with `save` keep it (segsim's under
/// `corpus/regressions/`, which `cargo test` replays; another target's
/// under `corpus/<target>/`).
fn shrink_and_report<T: Target>(target: &T, seed: u64, check: Check, canary: Option<Canary>, save: bool) {
    let name = target.name();
    // Only a target other than the default names itself.
    let named = if name.is_default() { String::new() } else { format!("{} ", name.name()) };
    let ops = target.generate(seed);
    eprintln!("sim: shrinking {named}seed {seed} ({} ops, check '{check}') ...", ops.len());
    let (minimal, runs) = shrink(target, seed, ops, check);
    // A canary is no setting of the file: say so, and how to replay it.
    let planted = canary.map_or(String::new(), |c| format!(" with canary {} planted (replay with --canary)", c.name()));
    let comment =
        format!("{named}seed {seed} fails check '{check}'{planted}; shrunk in {runs} runs to {} ops", minimal.len());
    let text = ops_file(target, seed, &minimal, &comment);
    println!("minimal failing op list ({} ops, {runs} shrink runs):\n{text}", minimal.len());
    if save {
        let (dir, replayed) = match name {
            TargetName::Segsim => ("corpus/regressions".to_string(), " (cargo test replays it)"),
            _ => (format!("corpus/{}", name.name()), ""),
        };
        let path = std::path::Path::new(&dir).join(format!("seed-{seed}-{check}.ops"));
        match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &text)) {
            Ok(()) => eprintln!("sim: saved {}{replayed}", path.display()),
            Err(e) => eprintln!("sim: could not save {}: {e}", path.display()),
        }
    }
}

fn replay(path: &std::path::Path, json: bool, canary: Option<Canary>) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("sim: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let (op_count, failure) = match sim::target::replay(&text, canary) {
        Ok(replayed) => replayed,
        Err(e) => {
            eprintln!("sim: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    if json {
        let value = serde_json::json!({
            "file": path.display().to_string(),
            "ops": op_count,
            "failure": failure.as_ref().map(|f| serde_json::json!({"check": f.check.as_str(), "detail": f.detail})),
        });
        println!("{value}");
    }
    match failure {
        None => {
            eprintln!("sim: {} ({op_count} ops): no failure", path.display());
            ExitCode::SUCCESS
        }
        Some(f) => {
            eprintln!("sim: {} failed check '{}' at op #{}:\n{}", path.display(), f.check, f.op_index, f.detail);
            ExitCode::from(1)
        }
    }
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
    let progress = |hunt: &sim::hunt::Hunt| match &hunt.catch {
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
    let hunts = sim::hunt::hunt_all(&chosen, Overrides::default(), budget, args.jobs, &progress);
    let table = sim::hunt::table(&hunts, budget);
    emit(&table, args.json.then(|| sim::hunt::to_json(&hunts, budget)).as_ref());
    verdict(!hunts.iter().all(sim::hunt::Hunt::caught))
}

/// `sim merge`: one summary from many `--json` summaries.
fn merge(files: &[std::path::PathBuf], json: bool) -> ExitCode {
    let mut merged = Summary::default();
    for path in files {
        let parsed = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string()))
            .and_then(|value| Summary::from_json(&value));
        match parsed {
            Ok(summary) => merged.merge(&summary),
            Err(e) => {
                eprintln!("sim merge: {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
    }
    emit(&merged.to_text(), json.then(|| merged.to_json()).as_ref());
    verdict(!merged.failures.is_empty())
}
