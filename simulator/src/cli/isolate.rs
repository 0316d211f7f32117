//! `--isolate`: each seed of a run in a child process of its own, so a
//! seed that takes its process down — an abort (a panic while a panic
//! unwinds, which no `catch_unwind` contains: REDB.md, finding 3), any
//! signal — is one failed seed, and the sweep goes on.
//!
//! The protocol, both sides of it here. The parent runs its own binary
//! again (`std::env::current_exe()`, under the parent's `argv[0]`, so the
//! repro lines a child prints name the program as the parent's would) with
//! the parent's arguments less those that pick the seeds and shape the
//! report (`--seeds`, `--jobs`, `--json`, `--shrink`, ...; which they are
//! is read from [`RunArgs`] itself), plus `--seed N --isolated-child`. The
//! child runs that one seed exactly as an in-process sweep runs it, prints
//! one line on stdout — [`VERDICT_PREFIX`], the seed, and its one-seed
//! summary as the JSON `--json` prints (which `sim merge` reads) — and
//! exits 0 or 1. The
//! parent reads the last such line back and folds it in as an in-process
//! sweep folds the seed's outcome (`Summary::add_seed`): the same totals.
//!
//! A child that exits with another status, or whose stdout holds no
//! verdict for its seed that agrees with its exit status, died: a failure
//! of check `died` that names its signal or status and the last lines of
//! its stderr (which is otherwise not shown: the verdict says what failed).
//! With `--seed-timeout SECS`, a child still running after that much wall
//! time is killed and died the same way, "ran past --seed-timeout": the
//! one place a verdict depends on the machine's speed, so it is off unless
//! asked for.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitCode, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, Command as ClapCommand};
use serde_json::Value;

use super::args::{usage_error, RunArgs};
use crate::failure::{Check, Failure};
use crate::output::verdict;
use crate::seam::run_checked;
use crate::seam::Target;
use crate::summary::Summary;

/// What starts the line that carries a child's verdict on its stdout (the
/// engine under test may print lines of its own there).
pub const VERDICT_PREFIX: &str = "sim-isolated-seed-summary ";

/// The hidden flag that makes a process the child of an isolated run.
const CHILD_FLAG: &str = "--isolated-child";

/// The run flags (their `RunArgs` ids) the child does not get: the parent
/// picks each child's seed, spreads them over its jobs, reports, shrinks.
/// Every other flag (the target's, `--ops`, `--fs`, `--crash-mode`,
/// `--check-determinism`) goes through unchanged.
const PARENT_ONLY: [&str; 16] = [
    "seed",
    "seeds",
    "time",
    "jobs",
    "shard",
    "json",
    "trace",
    "shrink",
    "save",
    "replay",
    "report",
    "isolate",
    "seed_timeout",
    "isolated_child",
    "reuse_children",
    "isolated_server",
];

/// Lines of a died child's stderr its report keeps.
const STDERR_TAIL_LINES: usize = 10;

/// How to start one seed's child: this binary, under the name it was
/// started by, with the arguments every child shares.
pub struct Children {
    pub(super) program: PathBuf,
    pub(super) argv0: OsString,
    pub(super) shared_args: Vec<OsString>,
    /// `--seed-timeout`: a child running longer is killed.
    pub(super) timeout: Option<Duration>,
}

impl Children {
    /// The children of this process, or why it cannot have any.
    pub fn of_this_process(timeout_secs: Option<u64>) -> Result<Children, String> {
        let program = std::env::current_exe().map_err(|e| format!("--isolate: cannot find this program: {e}"))?;
        let parent: Vec<OsString> = std::env::args_os().collect();
        let argv0 = parent.first().cloned().unwrap_or_else(|| program.clone().into_os_string());
        let shared_args = child_args(parent.get(1..).unwrap_or_default());
        Ok(Children { program, argv0, shared_args, timeout: timeout_secs.map(Duration::from_secs) })
    }

    /// Run `seed` in a child and return its one-seed summary: the one it
    /// printed, or a failure of check `died` when it printed none.
    pub fn run<T: Target>(&self, target: &T, seed: u64) -> Summary {
        let mut command = Command::new(&self.program);
        with_argv0(&mut command, &self.argv0);
        command.args(&self.shared_args).arg("--seed").arg(seed.to_string()).arg(CHILD_FLAG);
        let one = match output_within(command.stdin(Stdio::null()), self.timeout) {
            Ok((output, false)) => verdict_of(&output, seed, target.fs_profile().name)
                .map_err(|why| died(target, seed, &output.status, &why, &output)),
            Ok((output, true)) => Err(ran_past(target, seed, self.timeout.expect("only a timeout kills"), &output)),
            Err(e) => Err(not_started(target, seed, &e)),
        };
        let one = one.unwrap_or_else(Summary::of_failure);
        assert_eq!(one.seeds, 1, "one child, one seed");
        one
    }
}

/// Run `command` to its end, or with a `timeout` until then (killing it):
/// its output, and whether the timeout killed it. Its stdout and stderr
/// are read on threads of their own meanwhile, so a child that fills a
/// pipe is not taken for a hang.
fn output_within(command: &mut Command, timeout: Option<Duration>) -> std::io::Result<(Output, bool)> {
    let Some(limit) = timeout else {
        return command.output().map(|output| (output, false));
    };
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            // A read error ends what is kept; the status still says how it ended.
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped above")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped above")));
    let deadline = Instant::now() + limit;
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (status, false);
        }
        if Instant::now() >= deadline {
            // Already gone is fine: `wait` reports how it ended.
            let _ = child.kill();
            break (child.wait()?, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    Ok((Output { status, stdout, stderr }, timed_out))
}

/// The arguments every child gets: the parent's (`parent`, without its
/// `argv[0]`) less the [`PARENT_ONLY`] flags and their values.
fn child_args(parent: &[OsString]) -> Vec<OsString> {
    let dropped = parent_only_flags();
    let mut kept = Vec::with_capacity(parent.len());
    let mut tokens = parent.iter();
    while let Some(token) = tokens.next() {
        let Some(text) = token.to_str() else {
            kept.push(token.clone());
            continue;
        };
        if text == "--" {
            kept.push(token.clone());
            kept.extend(tokens.by_ref().cloned());
            break;
        }
        let (name, inline_value) = match text.split_once('=') {
            Some((name, _)) => (name, true),
            None => (text, false),
        };
        match dropped.iter().find(|(long, _)| *long == name) {
            // `--flag value`: the value goes with it.
            Some((_, takes_value)) if *takes_value && !inline_value => {
                tokens.next();
            }
            Some(_) => {}
            None => kept.push(token.clone()),
        }
    }
    kept
}

/// Each [`PARENT_ONLY`] flag as it is spelled (`--seeds`), and whether it
/// takes a value: read from `RunArgs`' own definition, so a flag changed
/// there cannot leave this list behind.
fn parent_only_flags() -> Vec<(String, bool)> {
    let command = RunArgs::augment_args(ClapCommand::new("run"));
    let flags: Vec<(String, bool)> = command
        .get_arguments()
        .filter(|arg| PARENT_ONLY.contains(&arg.get_id().as_str()))
        .map(|arg| {
            let long = arg.get_long().expect("every run flag is a long flag");
            (format!("--{long}"), arg.get_action().takes_values())
        })
        .collect();
    assert_eq!(flags.len(), PARENT_ONLY.len(), "every parent-only id names a flag of RunArgs");
    flags
}

/// The child's side: run the one seed `--seed` names, as an in-process
/// sweep runs it, print its summary after [`VERDICT_PREFIX`] and exit
/// 0 or 1.
pub fn run_as_child<T: Target>(cli: &RunArgs, target: &T, program: &str) -> ExitCode {
    let (Some(seed), None, None, None) = (cli.seed, cli.seeds, cli.time, cli.shard) else {
        return usage_error(program, "--isolated-child is --isolate's own: it runs one seed, given by --seed N alone");
    };
    let mut one = Summary::of(&run_checked(seed, target, cli.check_determinism));
    one.fs = Some(target.fs_profile().name.to_string());
    println!("{VERDICT_PREFIX}{seed} {}", one.to_json());
    verdict(!one.failures.is_empty())
}

/// The verdict a child that exited printed for `seed` under the profile
/// named `fs`, or why there is none: an exit status that is no verdict, no
/// verdict line, one that does not read back, is not of that one seed
/// under that profile, or disagrees with the status.
fn verdict_of(output: &Output, seed: u64, fs: &str) -> Result<Summary, String> {
    let failed = match output.status.code() {
        Some(0) => false,
        Some(1) => true,
        _ => return Err("before giving a verdict".to_string()),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let Some(at) = stdout.rfind(VERDICT_PREFIX) else {
        return Err("but printed no verdict".to_string());
    };
    let line = stdout[at + VERDICT_PREFIX.len()..].lines().next().unwrap_or_default();
    let one = verdict_line(line, seed, fs)?;
    if failed == one.failures.is_empty() {
        return Err(format!("but its verdict ({} failures) disagrees with its status", one.failures.len()));
    }
    Ok(one)
}

/// The summary a verdict `line` (what follows [`VERDICT_PREFIX`]) gives
/// for `seed` under the profile named `fs`, or why it gives none: it does
/// not read back, or is not of that one seed under that profile.
pub(super) fn verdict_line(line: &str, seed: u64, fs: &str) -> Result<Summary, String> {
    let (seed_run, json) = line.split_once(' ').unwrap_or_default();
    let one = serde_json::from_str::<Value>(json)
        .map_err(|e| e.to_string())
        .and_then(|value| Summary::from_json(&value))
        .map_err(|e| format!("but its verdict does not read back: {e}"))?;
    let of_seed = seed_run == seed.to_string()
        && one.seeds == 1
        && one.failures.iter().all(|f| f.seed == seed)
        && one.fs.as_deref() == Some(fs);
    if !of_seed {
        return Err(format!(
            "but its verdict ({} seeds, {} failures, profile {:?}) is not seed {seed}'s under {fs:?}",
            one.seeds,
            one.failures.len(),
            one.fs.as_deref().unwrap_or_default()
        ));
    }
    Ok(one)
}

/// The failure of a child that ended with `status` and no verdict (`why`:
/// before giving one, or what was wrong with the one it gave).
pub(super) fn died<T: Target>(target: &T, seed: u64, status: &ExitStatus, why: &str, output: &Output) -> Failure {
    let ended = how_it_ended(status);
    let tail = stderr_tail(&output.stderr);
    // A shell reports death by signal N as exit status 128 + N.
    let same_way = match signal_of(status) {
        Some(signal) => format!("be killed the same way (a shell shows exit status {})", 128 + signal),
        None => "end the same way".to_string(),
    };
    let mut detail = format!(
        "its child process {ended} {why}\nthe repro line runs the seed in one process (no --isolate): expect that \
         process to {same_way}, and a sweep in process to stop there\n"
    );
    push_stderr_tail(&mut detail, &tail);
    died_failure(target, seed, detail)
}

/// The failure of a child still running after `timeout`, killed.
pub(super) fn ran_past<T: Target>(target: &T, seed: u64, timeout: Duration, output: &Output) -> Failure {
    let secs = timeout.as_secs();
    let mut detail = format!(
        "its child process ran past --seed-timeout {secs} s and was killed\nthe repro line runs the seed in one \
         process (no --isolate): expect it to run longer than {secs} s, or never to end (a hang, a livelock)\n"
    );
    push_stderr_tail(&mut detail, &stderr_tail(&output.stderr));
    died_failure(target, seed, detail)
}

/// Seed `seed` failed check `died`, saying `detail`; its repro runs it in
/// one process.
fn died_failure<T: Target>(target: &T, seed: u64, detail: String) -> Failure {
    let (recent, repro, drew) = (Vec::new(), target.repro(seed, ""), target.drew(seed));
    Failure { seed, op_index: 0, check: Check::Died, detail, recent, repro, drew }
}

/// The end of a died child's report: the last lines of its stderr.
fn push_stderr_tail(detail: &mut String, tail: &[String]) {
    if tail.is_empty() {
        detail.push_str("its stderr was empty");
        return;
    }
    detail.push_str("the last lines of its stderr (backtrace frames left out):");
    for line in tail {
        detail.push_str("\n  ");
        detail.push_str(line);
    }
}

/// The failure of a seed whose child could not even start.
pub(super) fn not_started<T: Target>(target: &T, seed: u64, error: &std::io::Error) -> Failure {
    let detail = format!("its child process could not be started: {error}");
    died_failure(target, seed, detail)
}

/// `killed by signal 6 (SIGABRT)`, `exited with status 101`.
fn how_it_ended(status: &ExitStatus) -> String {
    match (status.code(), signal_of(status)) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}{}", signal_name(signal)),
        (None, None) => format!("ended ({status})"),
    }
}

#[cfg(unix)]
fn signal_of(status: &ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

#[cfg(not(unix))]
fn signal_of(_status: &ExitStatus) -> Option<i32> {
    None
}

/// The child runs under the parent's `argv[0]`: its repro lines name the
/// program as the parent's do.
#[cfg(unix)]
pub(super) fn with_argv0(command: &mut Command, argv0: &OsString) {
    std::os::unix::process::CommandExt::arg0(command, argv0);
}

#[cfg(not(unix))]
pub(super) fn with_argv0(_command: &mut Command, _argv0: &OsString) {}

/// ` (SIGABRT)` for the signals a dying test run meets, else nothing.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        2 => "SIGINT: interrupted",
        4 => "SIGILL",
        6 => "SIGABRT: an abort, such as a panic while a panic unwinds",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL: killed, by hand or by the kernel out of memory",
        11 => "SIGSEGV: a segmentation fault",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return String::new(),
    };
    format!(" ({name})")
}

/// The last [`STDERR_TAIL_LINES`] lines of a child's stderr, without the
/// frames of backtraces (`RUST_BACKTRACE=1` prints dozens per panic; the
/// panic messages are what says why it died).
fn stderr_tail(stderr: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    let kept: Vec<&str> = text.lines().filter(|line| !is_backtrace_noise(line)).collect();
    kept[kept.len().saturating_sub(STDERR_TAIL_LINES)..].iter().map(|line| line.to_string()).collect()
}

/// A blank line, a backtrace's header, note or frame (`  12: name`,
/// `      at file:line`).
fn is_backtrace_noise(line: &str) -> bool {
    let trimmed = line.trim_start();
    let indented = trimmed.len() < line.len();
    let frame = trimmed.split_once(": ").is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    trimmed.is_empty()
        || line == "stack backtrace:"
        || line.contains("RUST_BACKTRACE")
        || (indented && (frame || trimmed.starts_with("at ")))
}

// The statuses built here are Unix wait statuses.
#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;
    use crate::counters::Counters;
    use crate::outcome::SeedOutcome;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    /// A child that runs past its timeout is killed and said to be; one
    /// that ends in time keeps all it printed, more than a pipe holds.
    #[test]
    fn a_child_past_its_timeout_is_killed_and_one_in_time_keeps_its_output() {
        let short = Some(Duration::from_millis(200));
        let (output, timed_out) = output_within(Command::new("sleep").arg("30"), short).unwrap();
        assert!(timed_out);
        assert_eq!(output.status.signal(), Some(9), "{:?}", output.status);
        let script = "head -c 200000 /dev/zero | tr '\\0' x; echo done >&2";
        let long = Some(Duration::from_secs(60));
        let (output, timed_out) = output_within(Command::new("sh").arg("-c").arg(script), long).unwrap();
        assert!(!timed_out && output.status.success(), "{:?}", output.status);
        assert_eq!((output.stdout.len(), output.stderr.as_slice()), (200_000, b"done\n".as_slice()));
    }

    #[test]
    fn a_child_gets_the_target_flags_and_not_the_parents_own() {
        let parent = os(&[
            "--target",
            "redb",
            "--seeds",
            "110..116",
            "--plant",
            "redb-late-write",
            "--isolate",
            "--jobs=2",
            "--json",
            "--shard",
            "1/2",
            "--shrink",
            "--save",
            "--ops",
            "40",
            "--fs=ext4",
            "--check-determinism",
            "--set",
            "cache=1",
        ]);
        let expected = os(&[
            "--target",
            "redb",
            "--plant",
            "redb-late-write",
            "--ops",
            "40",
            "--fs=ext4",
            "--check-determinism",
            "--set",
            "cache=1",
        ]);
        assert_eq!(child_args(&parent), expected);
        assert_eq!(child_args(&os(&["--time", "60", "--seed", "7", "--canary", "x"])), os(&["--canary", "x"]));
        // What follows `--` is no flag of ours.
        assert_eq!(child_args(&os(&["--json", "--", "--json"])), os(&["--", "--json"]));
    }

    #[test]
    fn the_parent_only_flags_are_read_from_run_args() {
        let flags = parent_only_flags();
        let takes = |name: &str| flags.iter().find(|(long, _)| long == name).map(|(_, takes)| *takes);
        assert_eq!(takes("--seeds"), Some(true));
        assert_eq!(takes("--report"), Some(true));
        assert_eq!(takes("--json"), Some(false));
        assert_eq!(takes("--isolated-child"), Some(false));
        assert_eq!(takes("--check-determinism"), None, "the child runs the seed twice itself");
    }

    fn output(status: ExitStatus, stdout: &str, stderr: &str) -> Output {
        Output { status, stdout: stdout.as_bytes().to_vec(), stderr: stderr.as_bytes().to_vec() }
    }

    /// What a child prints for a seed that passed (`failure: None`) or not.
    fn printed(seed: u64, failure: Option<Failure>) -> String {
        let mut one = Summary::of(&SeedOutcome {
            seed,
            counters: Counters { ops: 9, ..Counters::default() },
            failure,
            ..SeedOutcome::default()
        });
        one.fs = Some("posix".to_string());
        format!("engine chatter\n{VERDICT_PREFIX}{seed} {}\n", one.to_json())
    }

    #[test]
    fn a_verdict_is_read_back_only_when_it_agrees_with_the_exit_status() {
        let passed = printed(5, None);
        let one = verdict_of(&output(ExitStatus::from_raw(0), &passed, ""), 5, "posix").unwrap();
        assert_eq!((one.seeds, one.counters.ops, one.failures.len()), (1, 9, 0));
        // Exit 1 is a failure: a verdict without one is no verdict.
        assert!(verdict_of(&output(ExitStatus::from_raw(1 << 8), &passed, ""), 5, "posix").is_err());
        assert!(verdict_of(&output(ExitStatus::from_raw(0), &passed, ""), 6, "posix").is_err(), "another seed's");
        assert!(verdict_of(&output(ExitStatus::from_raw(0), &passed, ""), 5, "ext4").is_err(), "another profile's");
        let failure = Failure {
            seed: 5,
            op_index: 3,
            check: Check::Durability,
            detail: "lost".to_string(),
            recent: vec!["op#3 put".to_string()],
            repro: "sim --seed 5".to_string(),
            drew: Some("journal_mode=wal; promises: commit durable".to_string()),
        };
        let failed = printed(5, Some(failure));
        let one = verdict_of(&output(ExitStatus::from_raw(1 << 8), &failed, ""), 5, "posix").unwrap();
        assert_eq!(one.failures[0].check, Check::Durability);
        assert_eq!(one.failures[0].drew.as_deref(), Some("journal_mode=wal; promises: commit durable"), "read back");
        let no_line = verdict_of(&output(ExitStatus::from_raw(0), "chatter\n", ""), 5, "posix").unwrap_err();
        assert!(no_line.contains("no verdict"), "{no_line}");
        let garbled = format!("{VERDICT_PREFIX}5 {{\"seeds\": 1}}\n");
        let garbled = verdict_of(&output(ExitStatus::from_raw(0), &garbled, ""), 5, "posix").unwrap_err();
        assert!(garbled.contains("does not read back") && garbled.contains("`ops`"), "{garbled}");
        // Status 101 (a panic out of main) and a signal are no verdicts.
        assert!(verdict_of(&output(ExitStatus::from_raw(101 << 8), &passed, ""), 5, "posix").is_err());
        assert!(verdict_of(&output(ExitStatus::from_raw(6), &passed, ""), 5, "posix").is_err());
    }

    #[test]
    fn how_a_child_ended_is_said() {
        assert_eq!(how_it_ended(&ExitStatus::from_raw(101 << 8)), "exited with status 101");
        let aborted = how_it_ended(&ExitStatus::from_raw(6));
        assert!(aborted.starts_with("was killed by signal 6 (SIGABRT"), "{aborted}");
        assert_eq!(how_it_ended(&ExitStatus::from_raw(33)), "was killed by signal 33");
    }

    #[test]
    fn a_died_childs_stderr_keeps_its_panic_messages_not_its_backtrace_frames() {
        let mut stderr = String::from("early line\n");
        stderr.push_str("thread 'main' panicked at src/a.rs:1:2:\nslice index starts at 144 but ends at 108\n");
        stderr.push_str("stack backtrace:\n   0: std::panicking::begin\n             at /rustc/x/panicking.rs:1:2\n");
        stderr.push_str("note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n\n");
        stderr.push_str("panic in a destructor during cleanup\nthread caused non-unwinding panic. aborting.\n");
        let tail = stderr_tail(stderr.as_bytes());
        assert_eq!(
            tail,
            [
                "early line",
                "thread 'main' panicked at src/a.rs:1:2:",
                "slice index starts at 144 but ends at 108",
                "panic in a destructor during cleanup",
                "thread caused non-unwinding panic. aborting.",
            ]
        );
        let long: String = (0..30).map(|n| format!("line {n}\n")).collect();
        let tail = stderr_tail(long.as_bytes());
        assert_eq!((tail.len(), tail[0].as_str(), tail[9].as_str()), (STDERR_TAIL_LINES, "line 20", "line 29"));
    }
}
