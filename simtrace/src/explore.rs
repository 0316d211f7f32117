//! `sim trace explore`: every crash state of a replayed recording, written
//! out as a real directory and judged by the user's checker command.
//!
//! The explorer is `sim explore`'s (`simulator::explore`: its plan and its
//! parallel check, driven through [`CrashCheck`]), with a program outside
//! the process in place of an in-process recovery: replay the recording
//! onto the simulated disk (`replay.rs`), and at every I/O index enumerate
//! the crash states the disk model allows there
//! ([`DiskSnapshot::crash_states`](simulator::disk::DiskSnapshot::crash_states):
//! directory-change subsets, each file cut at every write and sector
//! boundary, two files cut together, and with `--torn-garbage` torn
//! sectors holding garbage), under the chosen file-system profile. A sector
//! torn into garbage is a drive's fault, not a file system's rule: every
//! profile keeps a one-sector write atomic (FILESYSTEMS.md), so, as `sim
//! explore` does for an engine that does not tolerate it, those states are
//! left out unless asked for (their numbers are kept, so a state's number
//! means the same with and without the flag). A state is judged in a
//! context: the bytes the program had printed before the crash (its
//! acknowledgements). Two
//! states that leave byte-identical directories in the same context are
//! one check, so the checker runs once per distinct (image, printed
//! chunks) pair, in the order first met, whatever `--jobs` says; the
//! report is built from results stored by position, so it is the same for
//! any number of jobs.
//!
//! The checker is `sh -c CMD sim-trace-check DIR PRINTED`: `$1` (and
//! `$TRACE_DIR`) is the crash state as a fresh directory, `$2` (and
//! `$TRACE_PRINTED`) a file holding what the program printed before the
//! crash, `$TRACE_CRASH_INDEX` and `$TRACE_STATE` name the state. Exit 0
//! passes; anything else, or running past the timeout, fails.
//!
//! Each state is written out in a fresh directory under the scratch
//! directory (`--scratch`; [`default_scratch`]: `/dev/shm` where it exists,
//! a memory file system, else the system's temporary directory) and
//! removed after its check: writing a state to a disk-backed directory
//! costs more than the harness's own work.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::check_server::{self, ServerPool, SERVER_NAME};
use super::replay::{Replayed, ROOT};
use simulator::check_process::{output_tail, wait_within};
use simulator::disk::DiskImage;
use simulator::explore::coverage::CoverageTotals;
use simulator::explore::{CheckAt, CrashCheck, ExploreOptions};
use simulator::failure::Check;
use simulator::seam::RecordedContext;
use simulator::written_state::write_state;

/// How to explore (the command line's flags).
#[derive(Clone, Debug)]
pub struct TraceExploreOptions {
    /// The checker command, run by `sh -c`.
    pub check: String,
    /// The checker is a server judging many states (`check_server.rs`),
    /// one per job, not a process per state.
    pub server: bool,
    /// Checker processes at once.
    pub jobs: usize,
    /// Directory-change subsets per crash index, at most (as `sim explore`).
    pub max_dir_subsets: usize,
    /// A checker running longer than this fails.
    pub timeout: Duration,
    /// Only this crash index and state (a failure's repro).
    pub only: Option<(u64, usize)>,
    /// Where the states are written out, one fresh directory each.
    pub scratch: PathBuf,
    /// Also the states whose torn sector holds garbage.
    pub torn_garbage: bool,
    /// Every state the model allows where it allows at most this many at
    /// a crash index (`u64::MAX`: everywhere), as `sim explore`.
    pub complete_up_to: u64,
}

impl TraceExploreOptions {
    /// The same, as the simulator's explorer takes them: a recording's
    /// writes are not reordered (family 4 is a one-file engine's), and no
    /// cap but `--max-dir-subsets` and `--complete-up-to`.
    fn explore_options(&self) -> ExploreOptions {
        ExploreOptions {
            max_dir_subsets: self.max_dir_subsets,
            jobs: self.jobs.max(1),
            only_io: self.only.map(|(io_index, _)| io_index),
            only_state: self.only.map(|(_, state)| state),
            reordered: false,
            garbage: self.torn_garbage,
            complete_up_to: self.complete_up_to,
            ..ExploreOptions::default()
        }
    }
}

/// The default scratch directory: `/dev/shm` (memory) when it is a
/// directory, else the system's temporary directory.
pub fn default_scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// One distinct crash state: where it was first met and what it holds.
#[derive(Debug)]
pub struct Distinct {
    /// The crash index: the power was lost just before this I/O.
    pub io_index: u64,
    /// The state's number among that index's crash states.
    pub state: usize,
    /// Which unsynced operations it keeps and loses (the disk's words).
    pub description: String,
    /// The disk it leaves.
    pub image: DiskImage,
    /// What the program printed before the crash.
    pub printed: Vec<u8>,
    /// Other (index, state) pairs that left the same directory in the
    /// same context.
    pub duplicates: usize,
}

/// The checker's verdict on one distinct state.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// Exit 0 within the timeout.
    pub passed: bool,
    /// How it ended: `exit N`, `signal`, `timed out`, or why it could not run.
    pub ended: String,
    /// The end of what it printed (stdout and stderr together).
    pub output_tail: String,
    /// Its wall time.
    pub seconds: f64,
    /// With `--check-server`: the server broke the protocol on this state
    /// (it gave no verdict; `passed` is false).
    pub fault: Option<super::check_server::ServerFault>,
}

/// Everything explored.
#[derive(Debug)]
pub struct Explored {
    /// Crash indices visited.
    pub crash_indices: u64,
    /// Crash states enumerated over them.
    pub states: usize,
    /// The distinct ones, in the order first met.
    pub distinct: Vec<Distinct>,
    /// One verdict per distinct state, same order.
    pub verdicts: Vec<Verdict>,
    /// Wall time of enumeration and deduplication.
    pub plan_seconds: f64,
    /// Wall time of the checker runs (all jobs together).
    pub check_seconds: f64,
    /// Per crash index, the model's states and the enumerated ones.
    pub coverage: CoverageTotals,
}

/// Enumerate, dedupe, then check every distinct state (see the module
/// doc), with the simulator's one explorer: its plan and its parallel
/// check, driven by `TraceCheck`. `Err` names a state number the crash
/// index does not have.
pub fn explore(replayed: &Replayed, options: &TraceExploreOptions) -> Result<Explored, String> {
    let started = Instant::now();
    let pool = options.server.then(|| ServerPool::new(&options.check, SERVER_NAME, options.timeout, &options.scratch));
    let check = TraceCheck { replayed, options, pool };
    let contexts = contexts(replayed);
    let explore_options = options.explore_options();
    let plan = simulator::explore::plan(&check, &replayed.disk, &contexts, &explore_options)?;
    let plan_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let checked = simulator::explore::check_all(&check, &contexts, &plan, &explore_options, true, |_, _, _| ());
    let check_seconds = started.elapsed().as_secs_f64();
    let mut distinct = Vec::with_capacity(plan.recoveries.len());
    let mut verdicts = Vec::with_capacity(plan.recoveries.len());
    for (recovery, checked) in plan.recoveries.iter().zip(checked) {
        // The recovery key is the context, so each recovery is one check.
        assert_eq!(recovery.checks.len(), 1, "one check per distinct (image, printed) pair");
        let first = recovery.checks[0];
        distinct.push(Distinct {
            io_index: first.io_index,
            state: first.state,
            description: recovery.snapshot.describe(&recovery.crash_state),
            image: recovery.snapshot.image(&recovery.crash_state),
            printed: replayed.printed_before(first.io_index),
            duplicates: usize::try_from(recovery.occurrences - 1).expect("a count of states"),
        });
        verdicts.push(checked.recovered.expect("kept"));
    }
    Ok(Explored {
        crash_indices: plan.io_indices,
        states: usize::try_from(plan.states).expect("a count of states"),
        distinct,
        verdicts,
        plan_seconds,
        check_seconds,
        coverage: plan.coverage,
    })
}

/// A recording's crash states as the explorer checks them: a state is
/// judged in the context of how many chunks the program had printed
/// before the crash, and "recovering" it is running the checker on it
/// (so the recovery key is the context: one checker run per distinct
/// (image, printed) pair).
struct TraceCheck<'a> {
    replayed: &'a Replayed,
    options: &'a TraceExploreOptions,
    /// With `--check-server`, the servers.
    pool: Option<ServerPool>,
}

impl CrashCheck for TraceCheck<'_> {
    /// Chunks printed.
    type Context = usize;
    type Recovered = Verdict;

    fn torn_garbage(&self) -> bool {
        self.options.torn_garbage
    }

    fn recovery_key(&self, printed: &usize) -> u64 {
        *printed as u64
    }

    fn recover(&self, image: &DiskImage, _key: u64, first: &CheckAt) -> Verdict {
        let printed = self.replayed.printed_before(first.io_index);
        let at = (first.io_index, first.state);
        match &self.pool {
            Some(pool) => check_server::check(pool, image, &printed, at),
            None => check_one(image, &printed, at, self.options),
        }
    }

    fn judge(&self, verdict: &Verdict, _printed: &usize) -> Result<(), (Check, String)> {
        match verdict.passed {
            true => Ok(()),
            false => Err((Check::Content, verdict.ended.clone())),
        }
    }
}

/// The contexts of `replayed`'s crash indices: none printed from the
/// start, then one more chunk from each chunk's I/O count on (so the
/// context of crash index `i` is [`Replayed::prints_before`]`(i)`).
fn contexts(replayed: &Replayed) -> Vec<RecordedContext<usize>> {
    let start = RecordedContext { first_io_index: 0, what: String::new(), context: 0 };
    let chunks = replayed.prints.iter().enumerate().map(|(at, (io_count, _))| RecordedContext {
        first_io_index: *io_count,
        what: String::new(),
        context: at + 1,
    });
    std::iter::once(start).chain(chunks).collect()
}

fn could_not(started: Instant, why: String) -> Verdict {
    Verdict {
        passed: false,
        ended: why,
        output_tail: String::new(),
        seconds: started.elapsed().as_secs_f64(),
        fault: None,
    }
}

/// Write `image` (crash index and state number `at`) out with what the
/// program had `printed`, and run the checker on it.
pub fn check_one(image: &DiskImage, printed: &[u8], at: (u64, usize), options: &TraceExploreOptions) -> Verdict {
    let started = Instant::now();
    let written = match write_state(image, ROOT.as_ref(), printed, &options.scratch, "sim-trace-") {
        Ok(written) => written,
        Err(why) => return could_not(started, why),
    };
    let (dir, printed_file) = (&written.dir, &written.printed);
    let output = written.path().join("output");
    let log = match std::fs::File::create(&output).and_then(|f| Ok((f.try_clone()?, f))) {
        Ok(pair) => pair,
        Err(e) => return could_not(started, format!("the checker's output file: {e}")),
    };
    let child = Command::new("sh")
        .arg("-c")
        .arg(&options.check)
        .arg("sim-trace-check")
        .arg(dir)
        .arg(printed_file)
        .env("TRACE_DIR", dir)
        .env("TRACE_PRINTED", printed_file)
        .env("TRACE_CRASH_INDEX", at.0.to_string())
        .env("TRACE_STATE", at.1.to_string())
        .stdin(Stdio::null())
        .stdout(log.0)
        .stderr(log.1)
        // Its own process group: a checker past the timeout is killed with
        // what it started (`check_process`).
        .process_group(0)
        .spawn();
    let ended = match child {
        Ok(mut child) => wait_within(&mut child, options.timeout),
        Err(e) => return could_not(started, format!("cannot run sh: {e}")),
    };
    let seconds = started.elapsed().as_secs_f64();
    let tail = output_tail(&output);
    Verdict { passed: ended.passed(), ended: ended.to_string(), output_tail: tail, seconds, fault: None }
}

/// The process-start floor: the mean wall time of `sh -c :` over `runs`
/// runs, waited for the way checkers are.
pub fn shell_floor_seconds(runs: u32) -> f64 {
    let started = Instant::now();
    for _ in 0..runs {
        let child =
            Command::new("sh").args(["-c", ":"]).stdin(Stdio::null()).stdout(Stdio::null()).process_group(0).spawn();
        if let Ok(mut child) = child {
            wait_within(&mut child, Duration::from_secs(10));
        }
    }
    started.elapsed().as_secs_f64() / f64::from(runs.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::{Op, OpenFlags, Recording, RelPath, WriteAt};
    use crate::replay::replay;
    use simulator::disk::FsProfile;

    fn rel(name: &str) -> RelPath {
        RelPath(name.as_bytes().to_vec())
    }

    /// Five directory operations (three creates, two renames) over two
    /// small files: 32 directory subsets, more than `--max-dir-subsets`'s
    /// 16, so the families alone take a sample.
    fn five_renames() -> Recording {
        let create = OpenFlags { create: true, ..OpenFlags::default() };
        let mut ops = Vec::new();
        for (handle, name) in [(1, "a"), (2, "b"), (3, "c")] {
            ops.push(Op::Open { handle, path: rel(name), flags: create });
            ops.push(Op::Write { handle, at: WriteAt::Offset(0), bytes: name.as_bytes().to_vec() });
            ops.push(Op::Close { handle });
        }
        ops.push(Op::Rename { from: rel("a"), to: rel("x") });
        ops.push(Op::Rename { from: rel("b"), to: rel("c") });
        ops.push(Op::Print { bytes: b"done\n".to_vec() });
        Recording { root: b"/t".to_vec(), ops, ..Recording::default() }
    }

    fn explored(recording: &Recording, complete_up_to: u64) -> Explored {
        explored_with(recording, complete_up_to, "true", 2)
    }

    fn explored_with(recording: &Recording, complete_up_to: u64, check: &str, jobs: usize) -> Explored {
        explored_by(recording, complete_up_to, (check, false), jobs)
    }

    /// `check` run per state, or (`server`) as a checker server.
    fn explored_by(recording: &Recording, complete_up_to: u64, (check, server): (&str, bool), jobs: usize) -> Explored {
        let replayed = replay(recording, FsProfile::POSIX, 4096).expect("replays");
        let scratch = tempfile::tempdir().expect("a scratch directory");
        let options = TraceExploreOptions {
            check: check.to_string(),
            server,
            jobs,
            max_dir_subsets: simulator::explore::DEFAULT_MAX_DIR_SUBSETS,
            timeout: Duration::from_secs(10),
            only: None,
            scratch: scratch.path().to_path_buf(),
            torn_garbage: false,
            complete_up_to,
        };
        explore(&replayed, &options).expect("every state exists")
    }

    #[test]
    fn a_five_operation_rename_program_is_complete_by_default_and_the_sample_says_so() {
        let recording = five_renames();
        let default = explored(&recording, simulator::explore::DEFAULT_COMPLETE_UP_TO);
        let exhaustive = explored(&recording, u64::MAX);
        let sample = explored(&recording, 0);
        assert!(default.coverage.is_complete(), "{:?}", default.coverage);
        assert!(default.coverage.line(1024).starts_with("complete: "));
        assert_eq!(default.distinct.len(), exhaustive.distinct.len(), "complete is every state");
        assert!(!sample.coverage.is_complete());
        assert!(sample.coverage.line(0).starts_with("SAMPLED: "), "{}", sample.coverage.line(0));
        assert!(sample.distinct.len() < default.distinct.len(), "the families alone miss some");
        assert!(sample.coverage.sampled_enumerated < u64::try_from(sample.coverage.sampled_allowed).unwrap());
    }

    /// Every enumerated state is a distinct one or a duplicate of one; the
    /// checker runs once per distinct state, sees the printed bytes of its
    /// context, and the result does not depend on `--jobs`.
    #[test]
    fn each_state_is_checked_once_in_its_context_whatever_the_jobs() {
        let recording = five_renames();
        // Fails exactly the states judged after "done" was printed.
        let check = r#"grep -q done "$2" && exit 1; exit 0"#;
        let one = explored_with(&recording, simulator::explore::DEFAULT_COMPLETE_UP_TO, check, 1);
        let three = explored_with(&recording, simulator::explore::DEFAULT_COMPLETE_UP_TO, check, 3);
        let counted: usize = one.distinct.iter().map(|d| 1 + d.duplicates).sum();
        assert_eq!(counted, one.states, "a state is a distinct one or a duplicate");
        let summary = |e: &Explored| -> Vec<(u64, usize, usize, bool)> {
            e.distinct.iter().zip(&e.verdicts).map(|(d, v)| (d.io_index, d.state, d.duplicates, v.passed)).collect()
        };
        assert_eq!(summary(&one), summary(&three));
        for (state, verdict) in one.distinct.iter().zip(&one.verdicts) {
            assert_eq!(verdict.passed, state.printed.is_empty(), "{state:?}: {verdict:?}");
        }
        assert!(one.verdicts.iter().any(|v| !v.passed) && one.verdicts.iter().any(|v| v.passed));
    }

    /// A checker server gives the per-state checker's verdicts, state for
    /// state, whatever the jobs: the same rule written both ways.
    #[test]
    fn a_checker_server_judges_as_the_per_state_checker_does() {
        let recording = five_renames();
        let complete = simulator::explore::DEFAULT_COMPLETE_UP_TO;
        // Fails a state printed "done" whose x is missing or whose c is not b's.
        let per_state = r#"grep -q done "$2" || exit 0; [ -f "$1/x" ] && [ "$(cat "$1/c" 2>/dev/null)" = b ]"#;
        let server = r#"while IFS="$(printf '\t')" read -r dir printed io state; do
            if ! grep -q done "$printed" || { [ -f "$dir/x" ] && [ "$(cat "$dir/c" 2>/dev/null)" = b ]; }; then
                echo pass; else echo "fail at $io/$state"; fi
        done"#;
        let by_state = explored_by(&recording, complete, (per_state, false), 2);
        let verdicts = |e: &Explored| -> Vec<(u64, usize, bool)> {
            e.distinct.iter().zip(&e.verdicts).map(|(d, v)| (d.io_index, d.state, v.passed)).collect()
        };
        for jobs in [1, 2] {
            let by_server = explored_by(&recording, complete, (server, true), jobs);
            assert_eq!(verdicts(&by_state), verdicts(&by_server), "jobs {jobs}");
        }
        assert!(by_state.verdicts.iter().any(|v| !v.passed) && by_state.verdicts.iter().any(|v| v.passed));
    }
}
