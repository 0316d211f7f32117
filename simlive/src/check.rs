//! The checker of a live run's crash state: the disk the crash left
//! written out as a fresh directory (`simulator::written_state`, DIR's
//! content) beside what the program printed, then judged by the user's
//! command — one process per state (`--check`, the simple default: `sh -c
//! CHECK sim-live-check STATE PRINTED`), or a server that stays up for the
//! whole sweep (`--check-server`, `simulator::check_server`'s protocol, as
//! `sim trace explore`'s: `STATE<TAB>PRINTED<TAB>CRASH_AT<TAB>SEED` in,
//! `pass` or `fail WHY` out; CRASH_AT is the cut's I/O index, `end` for
//! the cut after the exit). A per-state checker still running at
//! `--timeout` is killed with what it started and fails its state, saying
//! so (`simulator::check_process`). A server that dies, hangs past `--timeout` or
//! answers outside the protocol fails the state with a typed
//! [`ServerFault`], said apart from the checker's own `fail`, and the pool
//! starts a fresh server for the next state.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use simulator::check_process::{output_tail, wait_within, Ended};
use simulator::check_server::{Answer, Faulted, ServerFault, ServerPool};
use simulator::disk::DiskImage;
use simulator::written_state::{write_state, WrittenState};

use crate::run::RunOptions;

/// The name a live server sees as `$0`.
pub const SERVER_NAME: &str = "sim-live-check-server";

/// What the checker said of one run's crash state.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// The state is acceptable.
    pub passed: bool,
    /// Why not: the end of a per-state checker's output, a server's `fail
    /// WHY`, or the server's fault (and the end of its standard error).
    pub said: String,
    /// The server broke the protocol on this state: it has no verdict.
    pub fault: Option<ServerFault>,
    /// Wall time from writing the state out to the verdict (a figure for
    /// the sweep's summary, never part of a verdict).
    pub seconds: f64,
}

/// Write the crash's disk out under `options.scratch` and judge it with
/// `check` (per state, or by `options.servers`).
pub fn check_state(options: &RunOptions, image: &DiskImage, printed: &[u8], check: &str) -> Result<Checked, String> {
    let started = Instant::now();
    let written = write_state(image, Path::new("/"), printed, &options.scratch, "sim-live-state-")?;
    let checked = match &options.servers {
        Some(pool) => by_server(options, pool, &written),
        None => by_process(options, &written, check)?,
    };
    // A server's fault gives the state no verdict: it never passes.
    debug_assert!(!(checked.passed && checked.fault.is_some()), "{checked:?}");
    Ok(Checked { seconds: started.elapsed().as_secs_f64(), ..checked })
}

/// `sh -c CHECK sim-live-check STATE PRINTED`: exit 0 passes; past
/// `options.timeout` it is killed with what it started, and the state
/// fails saying so.
fn by_process(options: &RunOptions, written: &WrittenState, check: &str) -> Result<Checked, String> {
    let output = written.path().join("check.out");
    let out = std::fs::File::create(&output).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new("sh")
        .args(["-c", check, "sim-live-check"])
        .arg(&written.dir)
        .arg(&written.printed)
        .env("LIVE_DIR", &written.dir)
        .env("LIVE_PRINTED", &written.printed)
        .env("LIVE_SEED", options.seed.to_string())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("running the checker: {e}"))?;
    let ended = wait_within(&mut child, options.timeout);
    let tail = output_tail(&output).trim_end().to_string();
    let said = match ended {
        Ended::TimedOut(_) | Ended::WaitFailed(_) => format!("the checker {ended}; its output ends: {tail}"),
        Ended::Exit(_) | Ended::Signal => tail,
    };
    Ok(Checked { passed: ended.passed(), said, fault: None, seconds: 0.0 })
}

/// One line to a server of `pool`, one line back.
fn by_server(options: &RunOptions, pool: &ServerPool, written: &WrittenState) -> Checked {
    let crash_at = options.crash_at.map_or("end".to_string(), |index| index.to_string());
    let seed = options.seed.to_string();
    match pool.judge(&written.dir, &written.printed, (&crash_at, &seed)) {
        Ok(Answer::Pass) => Checked { passed: true, said: String::new(), fault: None, seconds: 0.0 },
        Ok(Answer::Fail(why)) => Checked { passed: false, said: why, fault: None, seconds: 0.0 },
        Err(Faulted { fault, stderr_tail }) => {
            let cut = options.crash_at.map_or("the cut after the exit".to_string(), |i| format!("the cut at I/O {i}"));
            let said = format!("CHECKER SERVER FAULT at seed {}, {cut}: {fault}", options.seed);
            eprintln!("sim live: {said}");
            let tail = stderr_tail.trim_end();
            let said = if tail.is_empty() { said } else { format!("{said}; its stderr ends: {tail}") };
            Checked { passed: false, said, fault: Some(fault), seconds: 0.0 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultSpec;
    use crate::sweep::sweep;
    use simulator::disk::{CrashMode, DiskConfig, FsProfile, SimVfs};
    use simulator::trace::Trace;
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    /// Options for `check` (with `server`, a pool running it) under
    /// `scratch`; the program `command` runs with no layer preloaded (an
    /// empty LD_PRELOAD): it never reaches the disk, whose state is then
    /// its root alone, and what it prints is the state's context.
    fn options(check: &str, server: bool, scratch: &Path, command: &str) -> RunOptions {
        let timeout = Duration::from_secs(10);
        RunOptions {
            root: PathBuf::from("/nonexistent/sim-live-test"),
            seed: 0,
            fs: FsProfile::POSIX,
            crash_mode: CrashMode::Prefix,
            faults: FaultSpec::default(),
            crash_at: None,
            command: vec!["sh".to_string(), "-c".to_string(), command.to_string()],
            check: Some(check.to_string()),
            servers: server.then(|| Arc::new(ServerPool::new(check, SERVER_NAME, timeout, scratch))),
            preload: PathBuf::new(),
            echo: false,
            scratch: scratch.to_path_buf(),
            timeout,
            sector_bytes: 4096,
            show_ios: false,
        }
    }

    /// A disk image holding the `names` given as files (content: the name),
    /// all durable.
    fn image(names: &[&str]) -> DiskImage {
        use vfs::{OpenMode, Vfs};
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        disk.create_dir_all(Path::new("/")).unwrap();
        for name in names {
            let mut file = disk.open(&Path::new("/").join(name), OpenMode::Create).unwrap();
            file.write_at(0, name.as_bytes()).unwrap();
            file.sync().unwrap();
        }
        disk.sync_dir(Path::new("/")).unwrap();
        disk.snapshot().durable_image()
    }

    /// One rule both ways: a state passes if it holds `a`, or if nothing
    /// was acknowledged.
    const PER_STATE: &str = r#"[ -f "$1/a" ] || ! grep -q ack "$2""#;
    const SERVER: &str = r#"while IFS="$(printf '\t')" read -r dir printed at seed; do
        if [ -f "$dir/a" ] || ! grep -q ack "$printed"; then echo pass; else echo "fail no a at $at/$seed"; fi
    done"#;

    #[test]
    fn a_server_judges_the_states_as_the_per_state_checker_does() {
        let scratch = tempfile::tempdir().unwrap();
        let (per_state, server) =
            (options(PER_STATE, false, scratch.path(), ""), options(SERVER, true, scratch.path(), ""));
        let mut verdicts = Vec::new();
        for (names, printed) in [(&["a"][..], &b"ack 1\n"[..]), (&["b"], b"ack 1\n"), (&["b"], b""), (&[], b"ack 2\n")]
        {
            let image = image(names);
            let one = check_state(&per_state, &image, printed, PER_STATE).unwrap();
            let other = check_state(&server, &image, printed, SERVER).unwrap();
            assert_eq!(one.passed, other.passed, "{names:?} {printed:?}: {one:?} against {other:?}");
            verdicts.push(other);
        }
        assert_eq!(verdicts.iter().map(|v| v.passed).collect::<Vec<_>>(), [true, false, true, false]);
        assert_eq!(verdicts[1].said, "no a at end/0", "the cut and the seed name the state");
        assert_eq!(server.servers.as_ref().unwrap().idle_count(), 1, "one server judged them all");
    }

    /// Seeds 0..6 swept each way (and by server twice): the program prints
    /// `ack SEED`, the rule fails an odd seed's states.
    #[test]
    fn a_sweep_gives_the_same_verdicts_by_server_and_per_state_seed_for_seed() {
        let per_state = r#"! grep -q 'ack [13579]$' "$2""#;
        let server = r#"while IFS="$(printf '\t')" read -r dir printed at seed; do
            if grep -q 'ack [13579]$' "$printed"; then echo "fail odd seed $seed"; else echo pass; fi
        done"#;
        let scratch = tempfile::tempdir().unwrap();
        let program = r#"echo "ack $SIM_LIVE_SEED""#;
        let verdicts = |check: &str, server: bool| -> Vec<(u64, Option<u64>, bool, String)> {
            let base = options(check, server, scratch.path(), program);
            let rows = sweep(&base, 0..6, false, |_| {});
            rows.iter()
                .map(|row| {
                    let checked = row.outcome.as_ref().unwrap().check.clone().unwrap();
                    assert_eq!(checked.fault, None, "{checked:?}");
                    (row.seed, row.options.crash_at, checked.passed, checked.said)
                })
                .collect()
        };
        let by_state = verdicts(per_state, false);
        let by_server = verdicts(server, true);
        let passed =
            |rows: &[(u64, Option<u64>, bool, String)]| rows.iter().map(|r| (r.0, r.1, r.2)).collect::<Vec<_>>();
        assert_eq!(passed(&by_state), passed(&by_server));
        assert_eq!(by_server, verdicts(server, true), "same seeds, same verdicts");
        // The program makes no disk call: per seed a run to the end and a
        // cut at I/O 1 (the first after the root) that it never reaches.
        assert_eq!(by_server.iter().map(|r| r.1).filter(|at| *at == Some(1)).count(), 6);
        assert_eq!(by_server.len(), 12);
        for (seed, _, passed, said) in &by_server {
            assert_eq!(*passed, seed % 2 == 0, "seed {seed}: {said}");
        }
        assert_eq!(by_server[2].3, "odd seed 1");
    }

    /// A per-state checker that hangs fails its state at `--timeout`,
    /// saying so (and what it printed), killed with the `sleep` it started;
    /// the next state is judged as usual.
    #[test]
    fn a_per_state_checker_that_hangs_fails_its_state_at_the_timeout() {
        let scratch = tempfile::tempdir().unwrap();
        let hangs = r#"[ -f "$1/a" ] || { echo "no a, waiting"; sleep 30; }"#;
        let mut options = options(hangs, false, scratch.path(), "");
        options.timeout = Duration::from_millis(300);
        let hung = check_state(&options, &image(&["b"]), b"", hangs).unwrap();
        assert!(!hung.passed, "{hung:?}");
        assert_eq!(hung.said, "the checker timed out after 0.3 s (killed); its output ends: no a, waiting");
        let quick = check_state(&options, &image(&["a"]), b"", hangs).unwrap();
        assert!(quick.passed, "{quick:?}");
    }

    /// A server that exits after two states, and one that answers
    /// garbage: each faulted state fails, typed and named, and the sweep
    /// goes on with a fresh server.
    #[test]
    fn a_server_that_dies_mid_sweep_or_prints_garbage_fails_that_state_and_is_replaced() {
        let scratch = tempfile::tempdir().unwrap();
        let dies = r#"n=0; while read -r line; do n=$((n + 1)); [ $n -le 2 ] || { echo "dying after $n" >&2; exit 7; }; echo pass; done"#;
        // Two rows a seed (to the end, a cut the program never reaches).
        let rows = sweep(&options(dies, true, scratch.path(), "echo hi"), 0..3, false, |_| {});
        let checked: Vec<Checked> = rows.iter().map(|r| r.outcome.as_ref().unwrap().check.clone().unwrap()).collect();
        let faults: Vec<Option<ServerFault>> = checked.iter().map(|c| c.fault.clone()).collect();
        let died = Some(ServerFault::Died("exited with 7".to_string()));
        assert_eq!(faults, [None, None, died.clone(), None, None, died]);
        assert_eq!(checked.iter().map(|c| c.passed).collect::<Vec<_>>(), [true, true, false, true, true, false]);
        assert!(checked[2].said.starts_with("CHECKER SERVER FAULT at seed 1, the cut after the exit:"), "{checked:?}");
        assert!(checked[5].said.starts_with("CHECKER SERVER FAULT at seed 2, the cut at I/O 1:"), "{checked:?}");
        assert!(checked[2].said.ends_with("its stderr ends: dying after 3"), "{checked:?}");
        let garbage = "while read -r line; do echo OK; done";
        let rows = sweep(&options(garbage, true, scratch.path(), "echo hi"), 0..2, false, |_| {});
        for row in &rows {
            let checked = row.outcome.as_ref().unwrap().check.clone().unwrap();
            assert_eq!(checked.fault, Some(ServerFault::Garbage("OK".to_string())), "{checked:?}");
            assert!(!checked.passed && checked.said.contains("not `pass` nor `fail WHY`"), "{checked:?}");
        }
    }
}
