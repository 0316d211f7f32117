//! The simulator's command line for one target, shared by `sim` (segsim
//! and the built-in kit targets) and by any binary that tests its own
//! engine through the kit (`crate::kit::main`): which seeds to run (one, a
//! range, a soak, a shard), `--jobs`, `--json`, `--trace`,
//! `--check-determinism`, `--shrink` (and `--save`), `--replay`,
//! `--isolate` (each seed in a child process: `isolate.rs`; children that
//! serve seed after seed: `isolate_reuse.rs`), and `merge`.
//! Exit status: 0 no failure, 1 a failure found, 2 bad usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::args::{usage_error, RunArgs};
use super::isolate;
use super::isolate_reuse;
use crate::explore::{is_explore_report, ExploreTotals};
use crate::failure::Check;
use crate::output::{emit, verdict};
use crate::seam::{run_checked, run_seed, Replayed, Target};
use crate::shrink::{ops_file, shrink};
use crate::summary::Summary;

/// Replays an `.ops` file's text, writing the run's page to the path
/// given (`--report`).
pub type ReplayFile = dyn Fn(&str, Option<&Path>) -> Result<Replayed, String>;

/// What a run needs besides its flags and its target.
pub struct Hooks<'a> {
    /// The program's name in messages (`sim`, the user's binary).
    pub program: &'a str,
    /// A bug planted that an `.ops` file's lines do not carry, as a shrunk
    /// file's comment names it (segsim's canary: ` with canary NAME planted
    /// (replay with --canary)`), or empty.
    pub planted: String,
    /// Replay an `.ops` file's text (the file names its target), writing
    /// the run's page to the path given (`--report`).
    pub replay: &'a ReplayFile,
}

/// Everything but the subcommands, for the target the command line picked:
/// replay, or run the seeds (one with its trace, many, a soak; each in a
/// child process of its own with `--isolate`) and shrink the first failure.
pub fn run_target<T: Target>(cli: &RunArgs, target: T, hooks: &Hooks<'_>) -> ExitCode {
    if cli.jobs == 0 {
        return usage_error(hooks.program, "--jobs must be at least 1");
    }
    if let Some(path) = &cli.replay {
        let given =
            [("--fs", cli.fs.is_some()), ("--crash-mode", cli.crash_mode.is_some()), ("--ops", cli.ops.is_some())];
        if let Some(exit) = refuse_with_replay(hooks.program, &given) {
            return exit;
        }
        if cli.trace {
            return usage_error(hooks.program, "--trace takes --seed N; --report FILE.html draws a replay's events");
        }
        // The file names its target (and a planted bug its lines do not
        // carry comes from the flags: segsim's `--canary`).
        return replay(path, cli.json, cli.report.as_deref(), hooks);
    }
    if cli.isolated_child {
        return isolate::run_as_child(cli, &target, hooks.program);
    }
    if cli.isolated_server {
        return isolate_reuse::serve_seeds(cli, &target, hooks.program);
    }
    let seeds = match seeds_to_run(cli, hooks.program) {
        Ok(seeds) => seeds,
        Err(exit) => return exit,
    };
    if let Some(note) = target.unchecked() {
        eprintln!("{}: {note}", hooks.program);
    }
    let one_seed = match &seeds {
        Seeds::List(list) if list.len() == 1 => Some(list[0]),
        _ => None,
    };
    match (cli.trace, &cli.report, one_seed) {
        (true, _, Some(seed)) => return print_trace(&target, seed),
        (true, _, None) => return usage_error(hooks.program, "--trace needs exactly one seed (--seed N)"),
        (false, Some(report), Some(seed)) => return run_one_with_report(&target, seed, report, cli.json),
        (false, Some(_), None) => {
            return usage_error(hooks.program, "--report needs exactly one seed (--seed N) or --replay")
        }
        (false, None, _) => {}
    }
    let children = match cli.isolate.then(|| isolate::Children::of_this_process(cli.seed_timeout)).transpose() {
        Ok(children) => children.map(|children| match cli.reuse_children {
            true => Isolation::Reused(isolate_reuse::Servers::new(children)),
            false => Isolation::PerSeed(children),
        }),
        Err(message) => return usage_error(hooks.program, &message),
    };
    let run_one = |seed: u64| match &children {
        Some(Isolation::PerSeed(children)) => children.run(&target, seed),
        Some(Isolation::Reused(servers)) => servers.run(&target, seed),
        None => Summary::of(&run_checked(seed, &target, cli.check_determinism)),
    };
    let started = Instant::now();
    let mut summary = run_many(&seeds, &run_one, cli.jobs, cli.shard.map(|(_, n)| n));
    summary.elapsed_sec = started.elapsed().as_secs_f64();
    summary.fs = Some(target.fs_profile().name.to_string());
    emit(&summary.to_text(), cli.json.then(|| summary.to_json()).as_ref());
    if cli.shrink {
        shrink_first(&summary, &target, hooks, cli.save);
    }
    verdict(!summary.failures.is_empty())
}

/// Where `--isolate` runs each seed: a child of its own, or a child that
/// serves seed after seed until one takes it down (`--reuse-children`).
enum Isolation {
    PerSeed(isolate::Children),
    Reused(isolate_reuse::Servers),
}

/// The seeds the flags name: one, a range, or a soak (its base printed),
/// each less the seeds outside `--shard`; or how to exit.
fn seeds_to_run(cli: &RunArgs, program: &str) -> Result<Seeds, ExitCode> {
    let in_shard = |seed: &u64| cli.shard.is_none_or(|(k, n)| seed % n == k);
    match (cli.seed, cli.seeds, cli.time) {
        (_, Some(_), Some(_)) => Err(usage_error(program, "--seeds and --time cannot be combined")),
        (Some(_), Some(_), None) => Err(usage_error(program, "give --seed or --seeds, not both")),
        (Some(seed), None, None) => Ok(Seeds::List(vec![seed].into_iter().filter(in_shard).collect())),
        (None, Some((a, b)), None) => Ok(Seeds::List((a..b).filter(in_shard).collect())),
        (seed, None, Some(secs)) => {
            if !(secs > 0.0 && secs.is_finite()) {
                return Err(usage_error(program, "--time must be a positive number of seconds"));
            }
            let mut base = seed.unwrap_or_else(random_base);
            if let Some((k, n)) = cli.shard {
                // The soak steps by N from the shard's first seed.
                base += (k + n - base % n) % n;
            }
            eprintln!("{program}: soak for {secs} s from seed {base} (repeat with --seed {base})");
            Ok(Seeds::Soak { base, deadline: Instant::now() + Duration::from_secs_f64(secs) })
        }
        (None, None, None) => {
            Err(usage_error(program, "say which seeds to run: --seed N, --seeds A..B or --time SECS"))
        }
    }
}

/// `--trace`: run one seed keeping its trace, print every event and the
/// trace's hash.
fn print_trace<T: Target>(target: &T, seed: u64) -> ExitCode {
    let outcome = run_seed(target, seed, true);
    let trace = outcome.trace.as_ref().expect("kept");
    for line in trace.describe_all() {
        println!("{line}");
    }
    println!("trace hash {:016x}", outcome.trace_hash);
    verdict(outcome.failure.is_some())
}

/// `--shrink`: shrink the first failure the shrinker can run. A seed whose
/// child process died (`--isolate`) is not one: the shrinker runs in this
/// process, which that seed would take down too; say so and name it.
fn shrink_first<T: Target>(summary: &Summary, target: &T, hooks: &Hooks<'_>, save: bool) {
    let program = hooks.program;
    let died: Vec<String> =
        summary.failures.iter().filter(|f| f.check == Check::Died).map(|f| f.seed.to_string()).collect();
    if !died.is_empty() {
        eprintln!(
            "{program}: --shrink: cannot shrink seed(s) {} (check 'died'): shrinking runs in this process, which \
             such a seed takes down as it took its child; its repro is the seed itself",
            died.join(", ")
        );
    }
    match summary.failures.iter().find(|f| f.check != Check::Died) {
        Some(failure) => shrink_and_report(target, failure.seed, failure.check, &hooks.planted, save),
        None if died.is_empty() => eprintln!("{program}: --shrink: nothing failed, nothing to shrink"),
        None => eprintln!("{program}: --shrink: no other failure to shrink"),
    }
}

/// `--report`: run one seed keeping its whole trace, print its summary
/// as any run does, and draw it.
fn run_one_with_report<T: Target>(target: &T, seed: u64, report: &Path, json: bool) -> ExitCode {
    let started = Instant::now();
    let ops = target.generate(seed);
    let outcome = match crate::report::run_with_report(target, seed, &ops, Some(report)) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("sim: {e}");
            return ExitCode::from(2);
        }
    };
    let mut summary = Summary::default();
    summary.add(&outcome);
    summary.elapsed_sec = started.elapsed().as_secs_f64();
    summary.fs = Some(target.fs_profile().name.to_string());
    emit(&summary.to_text(), json.then(|| summary.to_json()).as_ref());
    verdict(!summary.failures.is_empty())
}

/// A base seed from the wall clock, for soaks started without --seed (the
/// only use of the wall clock besides timing; it is printed so the soak
/// can be repeated).
fn random_base() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos % 1_000_000_000_000
}

/// Run `seeds` on `jobs` threads, each seed by `run_one` (in this process
/// or in a child of its own), folding each seed's summary in as it comes:
/// the totals do not depend on the order seeds finish in.
fn run_many(seeds: &Seeds, run_one: &(dyn Fn(u64) -> Summary + Sync), jobs: usize, shard_n: Option<u64>) -> Summary {
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
                    let one = run_one(seed);
                    summary.lock().unwrap_or_else(|e| e.into_inner()).add_seed(&one);
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
            let rate = s.counters.ops as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let of = total.map_or(String::new(), |t| format!("/{t}"));
            eprintln!(
                "sim: {}{of} seeds, {} ops ({rate:.0} ops/s), {} crashes, {} failures",
                s.seeds,
                s.counters.ops,
                s.counters.crashes,
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
fn shrink_and_report<T: Target>(target: &T, seed: u64, check: Check, planted: &str, save: bool) {
    let name = target.name();
    // Only a target other than the default names itself.
    let named = if target.is_default() { String::new() } else { format!("{name} ") };
    let ops = target.generate(seed);
    eprintln!("sim: shrinking {named}seed {seed} ({} ops, check '{check}') ...", ops.len());
    let (minimal, runs) = shrink(target, seed, ops, check);
    let mut comment =
        format!("{named}seed {seed} fails check '{check}'{planted}; shrunk in {runs} runs to {} ops", minimal.len());
    comment.push_str(&what_made_it_fail(target, seed, &minimal));
    let text = ops_file(target, seed, &minimal, &comment);
    println!("minimal failing op list ({} ops, {runs} shrink runs):\n{text}", minimal.len());
    if save {
        let (dir, replayed) = if target.is_default() {
            ("corpus/regressions".to_string(), " (cargo test replays it)")
        } else {
            (format!("corpus/{name}"), "")
        };
        let path = std::path::Path::new(&dir).join(format!("seed-{seed}-{check}.ops"));
        match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &text)) {
            Ok(()) => eprintln!("sim: saved {}{replayed}", path.display()),
            Err(e) => eprintln!("sim: could not save {}: {e}", path.display()),
        }
    }
}

/// The shrunk list run once more — exactly what a replay of its file runs
/// — as comment lines for the file: the failure, and the events of the
/// run's end that made it (faults injected, crashes, restarts; drawn from
/// the seed's streams by operation index, so the file replays them without
/// naming them). A list that no longer fails alone says so: it would not
/// be a repro.
fn what_made_it_fail<T: Target>(target: &T, seed: u64, minimal: &[T::Op]) -> String {
    let Some(failure) = target.run(seed, minimal, false).failure else {
        return "\nWARNING: this list passed when run again alone; it is no repro".to_string();
    };
    let mut out = format!("\nfails: {}", failure.detail.lines().next().unwrap_or(""));
    let events: Vec<&String> = failure
        .recent
        .iter()
        .filter(|event| ["fault ", "CRASH", "restart", "KILL"].iter().any(|kind| event.starts_with(kind)))
        .collect();
    if !events.is_empty() {
        out.push_str("\nthe events before it, replayed from the seed's streams as they are:");
        for event in events {
            out.push_str(&format!("\n  {event}"));
        }
    }
    out
}

/// A replay runs its file as it is: the settings among `given` (flag,
/// whether given) that would change the run are refused (exit 2), not
/// silently ignored — the answer would be for another run than the one
/// asked.
pub fn refuse_with_replay(program: &str, given: &[(&str, bool)]) -> Option<ExitCode> {
    let flags: Vec<&str> = given.iter().filter(|(_, on)| *on).map(|(flag, _)| *flag).collect();
    if flags.is_empty() {
        return None;
    }
    let message = format!(
        "--replay runs the file as it is: its header lines set the target's settings (`fs`, `crash-mode`, `set`, \
         `plant`, `clients`, ...) and its lines the operations; edit the file instead of passing {}",
        flags.join(", ")
    );
    Some(usage_error(program, &message))
}

fn replay(path: &Path, json: bool, report: Option<&Path>, hooks: &Hooks<'_>) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("{}: cannot read {}: {e}", hooks.program, path.display());
            return ExitCode::from(2);
        }
    };
    let (op_count, failure) = match (hooks.replay)(&text, report) {
        Ok(replayed) => replayed,
        Err(e) => {
            eprintln!("{}: {}: {e}", hooks.program, path.display());
            return ExitCode::from(2);
        }
    };
    if json {
        let value = serde_json::json!({
            "file": path.display().to_string(),
            "ops": op_count,
            "failure": failure.as_ref().map(|f| serde_json::json!({"check": f.check.as_str(), "detail": f.detail, "drew": f.drew})),
        });
        println!("{value}");
    }
    match failure {
        None => {
            eprintln!("{}: {} ({op_count} ops): no failure", hooks.program, path.display());
            ExitCode::SUCCESS
        }
        Some(f) => {
            let drew = f.drew.as_ref().map_or(String::new(), |drew| format!("drew: {drew}\n"));
            eprintln!(
                "{}: {} failed check '{}' at op #{}:\n{drew}{}",
                hooks.program,
                path.display(),
                f.check,
                f.op_index,
                f.detail
            );
            ExitCode::from(1)
        }
    }
}

/// `sim merge`: one summary from many `--json` summaries.
/// `merge`: one report from many `--json` outputs — random-mode summaries
/// (one per shard, say) and `explore --json` reports alike, each added to
/// its own totals. Exit 1 if any of them holds a failure.
pub fn merge(files: &[PathBuf], json: bool) -> ExitCode {
    let mut merged = Summary::default();
    let mut explored = ExploreTotals::default();
    for path in files {
        let added = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string()))
            .and_then(|value| match is_explore_report(&value) {
                true => explored.add(&value),
                false => Summary::from_json(&value).and_then(|summary| merged.merge_same_fs(&summary)),
            });
        if let Err(e) = added {
            eprintln!("sim merge: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if let (Some(random), Some(explored)) = (&merged.fs, &explored.fs) {
        if random != explored {
            eprintln!("sim merge: summaries under file-system profile {random:?} and explorations under {explored:?}");
            return ExitCode::from(2);
        }
    }
    // Only explorations given: their report alone.
    let only_explored = merged.seeds == 0 && !explored.is_empty();
    let mut text = if only_explored { String::new() } else { merged.to_text() };
    let mut value = merged.to_json();
    if !explored.is_empty() {
        text.push_str(&explored.to_text());
        value["explore"] = explored.to_json();
    }
    emit(&text, json.then_some(&value));
    verdict(!merged.failures.is_empty() || !explored.failures.is_empty())
}

/// Which seeds to run: a finite list, or an endless soak from a base.
pub(crate) enum Seeds {
    List(Vec<u64>),
    Soak { base: u64, deadline: Instant },
}
