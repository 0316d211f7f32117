//! `sim`: the simulator's command line.
//!
//! Exit status: 0 no failure, 1 a failure found, 2 bad usage.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{CommandFactory, Parser};
use engine::aof::FsyncPolicy;
use sim::config::{Config, Overrides};
use sim::disk::CrashMode;
use sim::run::{run_seed, SeedOutcome};
use sim::shrink::{shrink, OpList};
use sim::summary::Summary;
use sim::workload::generate;

/// Deterministic simulation testing for the segsim engine: runs the engine
/// on a simulated disk that crashes, tears writes and injects I/O faults,
/// drives it with a seeded workload, and checks every recovery against a
/// reference model. The same seed always runs the same way.
#[derive(Parser, Debug)]
#[command(name = "sim", version, after_help = EXAMPLES)]
struct Cli {
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
}

const EXAMPLES: &str = "Examples:
  sim --seed 42                              one seed, human report
  sim --seeds 0..2000 --jobs 2 --json        a sweep, JSON summary on stdout
  sim --time 600 --jobs 2                    a ten-minute soak from a random base
  sim --seeds 0..400 --shard 1/4             this machine's quarter of a sweep
  sim --seed 17 --shrink --save              minimize a failure, keep it as a regression
  sim --replay corpus/regressions/x.ops      re-run a saved operation list";

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
    let overrides = Overrides { ops: cli.ops, fsync: cli.fsync, crash_mode: cli.crash_mode };
    if cli.jobs == 0 {
        return usage_error("--jobs must be at least 1");
    }
    if let Some(path) = &cli.replay {
        return replay(path, cli.json);
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
    if cli.trace && !matches!(&seeds, Seeds::List(list) if list.len() == 1) {
        return usage_error("--trace needs exactly one seed (--seed N)");
    }
    if cli.trace {
        let Seeds::List(list) = &seeds else { unreachable!() };
        let outcome = run_seed(list[0], overrides, true);
        let trace = outcome.trace.as_ref().expect("kept");
        for event in trace.all() {
            println!("{}", trace.describe(event));
        }
        println!("trace hash {:016x}", outcome.trace_hash);
        return if outcome.failure.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS };
    }

    let started = Instant::now();
    let summary = run_many(&seeds, overrides, cli.jobs, cli.check_determinism, cli.shard.map(|(_, n)| n));
    let mut summary = summary;
    summary.elapsed_sec = started.elapsed().as_secs_f64();
    let text = summary.to_text();
    if cli.json {
        eprint!("{text}");
        println!("{}", serde_json::to_string_pretty(&summary.to_json()).expect("a JSON value serializes"));
    } else {
        print!("{text}");
    }
    if cli.shrink {
        if let Some(failure) = summary.failures.first() {
            shrink_and_report(failure.seed, failure.check, overrides, cli.save);
        } else {
            eprintln!("sim: --shrink: nothing failed, nothing to shrink");
        }
    }
    if summary.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A base seed from the wall clock, for soaks started without --seed (the
/// only use of the wall clock besides timing; it is printed so the soak
/// can be repeated).
fn random_base() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos % 1_000_000_000_000
}

/// Run one seed, or twice with `check_determinism`.
fn run_checked(seed: u64, overrides: Overrides, check_determinism: bool) -> SeedOutcome {
    let mut outcome = run_seed(seed, overrides, false);
    if check_determinism {
        let again = run_seed(seed, overrides, false);
        let same_failure = outcome.failure.as_ref().map(|f| (f.check, f.op_index))
            == again.failure.as_ref().map(|f| (f.check, f.op_index));
        if (again.trace_hash != outcome.trace_hash || !same_failure) && outcome.failure.is_none() {
            outcome.failure = Some(sim::run::Failure {
                seed,
                op_index: 0,
                check: "determinism",
                detail: format!(
                    "two runs of the seed differ: trace hash {:016x} vs {:016x}",
                    outcome.trace_hash, again.trace_hash
                ),
                recent: Vec::new(),
                repro: format!(
                    "cargo run --release -p sim -- --seed {seed} --check-determinism{}",
                    Config::override_args(&overrides)
                ),
            });
        }
    }
    outcome
}

fn run_many(
    seeds: &Seeds,
    overrides: Overrides,
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
                    let outcome = run_checked(seed, overrides, check_determinism);
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

fn shrink_and_report(seed: u64, check: &str, overrides: Overrides, save: bool) {
    let config = Config::from_seed(seed, overrides);
    let ops = generate(&config);
    eprintln!("sim: shrinking seed {seed} ({} ops, check '{check}') ...", ops.len());
    let (minimal, runs) = shrink(&config, overrides, ops, check);
    let list = OpList { seed, overrides: Overrides { ops: None, ..overrides }, ops: minimal };
    let comment = format!("seed {seed} fails check '{check}'; shrunk in {runs} runs to {} ops", list.ops.len());
    let text = list.to_text(&comment);
    println!("minimal failing op list ({} ops, {runs} shrink runs):\n{text}", list.ops.len());
    if save {
        let path = std::path::Path::new("corpus/regressions").join(format!("seed-{seed}-{check}.ops"));
        match std::fs::create_dir_all("corpus/regressions").and_then(|()| std::fs::write(&path, &text)) {
            Ok(()) => eprintln!("sim: saved {} (cargo test replays it)", path.display()),
            Err(e) => eprintln!("sim: could not save {}: {e}", path.display()),
        }
    }
}

fn replay(path: &std::path::Path, json: bool) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("sim: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let list = match OpList::parse(&text) {
        Ok(list) => list,
        Err(e) => {
            eprintln!("sim: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let failure = list.run();
    if json {
        let value = serde_json::json!({
            "file": path.display().to_string(),
            "ops": list.ops.len(),
            "failure": failure.as_ref().map(|f| serde_json::json!({"check": f.check, "detail": f.detail})),
        });
        println!("{value}");
    }
    match failure {
        None => {
            eprintln!("sim: {} ({} ops): no failure", path.display(), list.ops.len());
            ExitCode::SUCCESS
        }
        Some(f) => {
            eprintln!("sim: {} failed check '{}' at op #{}:\n{}", path.display(), f.check, f.op_index, f.detail);
            ExitCode::from(1)
        }
    }
}
