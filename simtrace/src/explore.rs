//! `sim trace explore`: every crash state of a replayed recording, written
//! out as a real directory and judged by the user's checker command.
//!
//! The method is `sim explore`'s (`simulator::explore`), with a program outside
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::replay::{Replayed, ROOT};
use simulator::disk::{Coverage, DiskImage, DiskSnapshot, StateOptions};
use simulator::explore::coverage::{CoverageTotals, IndexCoverage};

/// How to explore (the command line's flags).
#[derive(Clone, Debug)]
pub struct TraceExploreOptions {
    /// The checker command, run by `sh -c`.
    pub check: String,
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
    /// How to enumerate a snapshot's crash states.
    pub fn states(&self) -> StateOptions {
        StateOptions {
            max_dir_subsets: self.max_dir_subsets,
            reordered: false,
            garbage: self.torn_garbage,
            complete_up_to: self.complete_up_to,
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

/// Enumerate, dedupe, then check every distinct state (see the module doc).
pub fn explore(replayed: &Replayed, options: &TraceExploreOptions) -> Explored {
    let started = Instant::now();
    let planned = plan(replayed, options);
    let plan_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let verdicts = check_all(&planned.distinct, options);
    Explored {
        crash_indices: planned.crash_indices,
        states: planned.states,
        distinct: planned.distinct,
        verdicts,
        plan_seconds,
        check_seconds: started.elapsed().as_secs_f64(),
        coverage: planned.coverage,
    }
}

/// The last snapshot enumerated, its context (chunks printed), the
/// distinct state each of its states came to, and its coverage.
struct Previous<'a> {
    snapshot: &'a Arc<DiskSnapshot>,
    printed: usize,
    targets: Vec<usize>,
    coverage: Coverage,
    enumerated: u64,
}

/// What the enumeration found, before any check.
struct Planned {
    distinct: Vec<Distinct>,
    states: usize,
    crash_indices: u64,
    coverage: CoverageTotals,
}

fn plan(replayed: &Replayed, options: &TraceExploreOptions) -> Planned {
    let mut seen: BTreeMap<(u64, usize), usize> = BTreeMap::new();
    let mut planned =
        Planned { distinct: Vec::new(), states: 0, crash_indices: 0, coverage: CoverageTotals::default() };
    let distinct = &mut planned.distinct;
    let mut previous: Option<Previous<'_>> = None;
    for io_index in replayed.disk.io_indices() {
        if options.only.is_some_and(|(only, _)| only != io_index) {
            continue;
        }
        planned.crash_indices += 1;
        let snapshot = replayed.disk.before_io(io_index).expect("an index of the recording");
        let printed = replayed.prints_before(io_index);
        // The same snapshot in the same context leaves the same states:
        // each is a duplicate of what it was, without building it again.
        if let Some(last) =
            previous.as_ref().filter(|last| Arc::ptr_eq(last.snapshot, snapshot) && last.printed == printed)
        {
            planned.states += last.targets.len();
            last.targets.iter().for_each(|&at| distinct[at].duplicates += 1);
            if options.only.is_none() {
                planned.coverage.add(IndexCoverage { io_index, coverage: last.coverage, enumerated: last.enumerated });
            }
            continue;
        }
        let mut targets = Vec::new();
        let coverage = snapshot.coverage(&options.states());
        let states = snapshot.crash_states_for(&options.states());
        let points = options.only.is_none().then(|| snapshot.points_in(&states, |s| s.explored(options.torn_garbage)));
        for (number, state) in states.iter().enumerate() {
            if options.only.is_some_and(|(_, only)| only != number) || !state.explored(options.torn_garbage) {
                continue;
            }
            planned.states += 1;
            let image = snapshot.image(state);
            let key = (image.hash(), printed);
            let at = match seen.get(&key) {
                Some(&at) => {
                    distinct[at].duplicates += 1;
                    at
                }
                None => {
                    seen.insert(key, distinct.len());
                    let description = snapshot.describe(state);
                    let bytes = replayed.printed_before(io_index);
                    distinct.push(Distinct {
                        io_index,
                        state: number,
                        description,
                        image,
                        printed: bytes,
                        duplicates: 0,
                    });
                    distinct.len() - 1
                }
            };
            targets.push(at);
        }
        // One state asked for (a repro): no claim either way.
        if let Some(enumerated) = points {
            planned.coverage.add(IndexCoverage { io_index, coverage, enumerated });
        }
        previous = Some(Previous { snapshot, printed, targets, coverage, enumerated: points.unwrap_or(0) });
    }
    planned
}

fn check_all(distinct: &[Distinct], options: &TraceExploreOptions) -> Vec<Verdict> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Verdict>>> = Mutex::new(vec![None; distinct.len()]);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(state) = distinct.get(at) else { break };
                let verdict = check_one(state, options);
                results.lock().unwrap_or_else(|poison| poison.into_inner())[at] = Some(verdict);
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|poison| poison.into_inner());
    results.into_iter().map(|verdict| verdict.expect("every state checked")).collect()
}

fn could_not(started: Instant, why: String) -> Verdict {
    Verdict { passed: false, ended: why, output_tail: String::new(), seconds: started.elapsed().as_secs_f64() }
}

/// Write `state` out and run the checker on it.
pub fn check_one(state: &Distinct, options: &TraceExploreOptions) -> Verdict {
    let started = Instant::now();
    let scratch = match tempfile::Builder::new().prefix("sim-trace-").tempdir_in(&options.scratch) {
        Ok(dir) => dir,
        Err(e) => return could_not(started, format!("no directory in {}: {e}", options.scratch.display())),
    };
    let dir = scratch.path().join("state");
    let printed = scratch.path().join("printed");
    let output = scratch.path().join("output");
    if let Err(e) = materialise(&state.image, &dir).and_then(|()| std::fs::write(&printed, &state.printed)) {
        return could_not(started, format!("writing the state out: {e}"));
    }
    let log = match std::fs::File::create(&output).and_then(|f| Ok((f.try_clone()?, f))) {
        Ok(pair) => pair,
        Err(e) => return could_not(started, format!("the checker's output file: {e}")),
    };
    let child = Command::new("sh")
        .arg("-c")
        .arg(&options.check)
        .arg("sim-trace-check")
        .arg(&dir)
        .arg(&printed)
        .env("TRACE_DIR", &dir)
        .env("TRACE_PRINTED", &printed)
        .env("TRACE_CRASH_INDEX", state.io_index.to_string())
        .env("TRACE_STATE", state.state.to_string())
        .stdin(Stdio::null())
        .stdout(log.0)
        .stderr(log.1)
        .spawn();
    let ended = match child {
        Ok(mut child) => wait(&mut child, options.timeout),
        Err(e) => return could_not(started, format!("cannot run sh: {e}")),
    };
    let seconds = started.elapsed().as_secs_f64();
    let text = std::fs::read(&output).unwrap_or_default();
    let tail = String::from_utf8_lossy(&text[text.len().saturating_sub(400)..]).into_owned();
    Verdict { passed: ended == "exit 0", ended, output_tail: tail, seconds }
}

/// Wait for the checker, polling with a growing sleep (short first: most
/// checkers are quick, and the wait is part of the process-start floor).
fn wait(child: &mut std::process::Child, timeout: Duration) -> String {
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return match status.code() {
                    Some(code) => format!("exit {code}"),
                    None => "killed by a signal".to_string(),
                }
            }
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return format!("timed out after {} s", timeout.as_secs_f64());
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(e) => return format!("waiting failed: {e}"),
        }
    }
}

/// Write `image` under `dir` as real directories and files.
pub fn materialise(image: &DiskImage, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for path in image.dir_paths() {
        if let Ok(rel) = path.strip_prefix(ROOT) {
            std::fs::create_dir_all(dir.join(rel))?;
        }
    }
    for (path, bytes) in image.files() {
        if let Ok(rel) = path.strip_prefix(ROOT) {
            std::fs::write(dir.join(rel), bytes)?;
        }
    }
    Ok(())
}

/// The process-start floor: the mean wall time of `sh -c :` over `runs`
/// runs, waited for the way checkers are.
pub fn shell_floor_seconds(runs: u32) -> f64 {
    let started = Instant::now();
    for _ in 0..runs {
        let child = Command::new("sh").args(["-c", ":"]).stdin(Stdio::null()).stdout(Stdio::null()).spawn();
        if let Ok(mut child) = child {
            wait(&mut child, Duration::from_secs(10));
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
        let replayed = replay(recording, FsProfile::POSIX, 4096).expect("replays");
        let scratch = tempfile::tempdir().expect("a scratch directory");
        let options = TraceExploreOptions {
            check: "true".to_string(),
            jobs: 2,
            max_dir_subsets: simulator::explore::DEFAULT_MAX_DIR_SUBSETS,
            timeout: Duration::from_secs(10),
            only: None,
            scratch: scratch.path().to_path_buf(),
            torn_garbage: false,
            complete_up_to,
        };
        explore(&replayed, &options)
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
}
