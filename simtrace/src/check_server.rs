//! `sim trace explore --check-server`: one checker process per job that
//! judges many crash states, in place of one process per state.
//!
//! A checker that starts a process per state pays that start on every
//! state: about a millisecond for `sh`, 20 to 200 for an interpreter that
//! imports a database module, which is most of a recording's exploration
//! once the states number thousands (issue 51: a Python checker at 5
//! states/s). A server pays it once per job. The protocol is a line each
//! way:
//!
//! - the harness writes `DIR<TAB>PRINTED<TAB>CRASH_INDEX<TAB>STATE` on the
//!   server's standard input: the crash state written out as a fresh
//!   directory, the file of what the program printed before the crash (the
//!   per-state checker's `$1` and `$2`), and the state's names;
//! - the server answers one line on its standard output: `pass`, or
//!   `fail WHY` (WHY is the verdict's explanation in the report).
//!
//! Anything else is a [`ServerFault`], as is no answer within `--timeout`
//! or the server's exit: the state gets no verdict from the checker, so it
//! counts as failing, and the fault is said loudly, typed and naming the
//! state (on standard error as it happens, and in the report as a
//! `CHECKER SERVER FAULT`, apart from the checker's `fail` verdicts). A
//! server that faulted so is killed and a fresh one started for the next
//! state, so one bad state cannot poison the verdicts after it. The
//! server's standard error goes to a file beside the states, and its end
//! is the faulting state's output. A server must
//! judge each state on its own (nothing carried from one state to the
//! next): the verdicts are then the per-state checker's, which the tests
//! here and the programs' checkers (`programs/*/check-server.*`,
//! PROGRAMS.md) show for the recordings they run on.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::explore::{write_state, Verdict};
use simulator::disk::DiskImage;

/// How a checker server broke the protocol on one state: not a verdict on
/// the state, a fault of the checker (the report keeps the two apart).
#[derive(Clone, Debug, PartialEq)]
pub enum ServerFault {
    /// It could not be started, or its log could not be made.
    NotStarted(String),
    /// It took no request: its standard input was closed or broken.
    Refused(String),
    /// It ended before answering (`exited with N`, `killed by a signal`).
    Died(String),
    /// It answered a line that is neither `pass` nor `fail WHY`.
    Garbage(String),
    /// It gave no answer within the timeout.
    Silent {
        /// The timeout it ran past.
        timeout_seconds: f64,
    },
}

impl std::fmt::Display for ServerFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerFault::NotStarted(why) => write!(f, "the checker server could not be started: {why}"),
            ServerFault::Refused(why) => write!(f, "the checker server took no request: {why}"),
            ServerFault::Died(how) => write!(f, "the checker server {how} before answering"),
            ServerFault::Garbage(line) => {
                write!(f, "the checker server answered {line:?}: not `pass` nor `fail WHY` (the protocol)")
            }
            ServerFault::Silent { timeout_seconds } => {
                write!(f, "the checker server gave no answer within {timeout_seconds} s")
            }
        }
    }
}

/// Servers not now judging a state, started on demand (at most one per
/// job, as the explorer's workers take them), ended when the pool drops.
pub struct ServerPool {
    command: String,
    timeout: Duration,
    scratch: PathBuf,
    idle: Mutex<Vec<Server>>,
}

/// One running server.
struct Server {
    child: Child,
    stdin: ChildStdin,
    /// Its standard output, a line at a time, read by a thread of its own
    /// so that a wait for an answer can time out.
    answers: Receiver<std::io::Result<String>>,
    /// Its standard error.
    log: tempfile::NamedTempFile,
}

impl ServerPool {
    /// A pool running `command` (by `sh -c`) as its servers, each answer
    /// due within `timeout`, states and logs written under `scratch`.
    pub fn new(command: &str, timeout: Duration, scratch: &Path) -> ServerPool {
        ServerPool {
            command: command.to_string(),
            timeout,
            scratch: scratch.to_path_buf(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The verdict on `image` (crash index and state number `at`), with
    /// what the program had `printed`, from a server of the pool.
    pub fn check(&self, image: &DiskImage, printed: &[u8], at: (u64, usize)) -> Verdict {
        let started = Instant::now();
        let written = match write_state(image, printed, &self.scratch) {
            Ok(written) => written,
            Err(why) => {
                let seconds = started.elapsed().as_secs_f64();
                return Verdict { passed: false, ended: why, output_tail: String::new(), seconds, fault: None };
            }
        };
        let taken = self.idle.lock().expect("no server thread panics holding the pool").pop();
        let mut server = match taken.map_or_else(|| self.start(), Ok) {
            Ok(server) => server,
            Err(why) => return faulted(started, at, ServerFault::NotStarted(why), String::new()),
        };
        let request = format!("{}\t{}\t{}\t{}\n", written.dir.display(), written.printed.display(), at.0, at.1);
        match server.ask(&request, self.timeout) {
            Ok(answer) => match answered(started, &answer) {
                Ok(verdict) => {
                    self.idle.lock().expect("no server thread panics holding the pool").push(server);
                    verdict
                }
                Err(fault) => {
                    let tail = server.end();
                    faulted(started, at, fault, tail)
                }
            },
            Err(fault) => {
                let tail = server.end();
                faulted(started, at, fault, tail)
            }
        }
    }

    /// A fresh server: `sh -c COMMAND sim-trace-check-server`.
    fn start(&self) -> Result<Server, String> {
        let log = tempfile::Builder::new()
            .prefix("sim-trace-server-")
            .tempfile_in(&self.scratch)
            .map_err(|e| format!("the checker server's log in {}: {e}", self.scratch.display()))?;
        let stderr = log.reopen().map_err(|e| format!("the checker server's log: {e}"))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .arg("sim-trace-check-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            // Its own process group: a server that is ended takes the
            // processes it started with it.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (send, answers) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(Server { child, stdin, answers, log })
    }
}

impl Drop for ServerPool {
    /// Every idle server told there is no more (its input closed) and
    /// waited for; killed if it does not go.
    fn drop(&mut self) {
        let servers = std::mem::take(self.idle.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()));
        for server in servers {
            server.close();
        }
    }
}

impl Server {
    /// Write `request` and wait up to `timeout` for the answer line.
    fn ask(&mut self, request: &str, timeout: Duration) -> Result<String, ServerFault> {
        self.stdin
            .write_all(request.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| ServerFault::Refused(e.to_string()))?;
        match self.answers.recv_timeout(timeout) {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(e)) => Err(ServerFault::Garbage(format!("(unreadable: {e})"))),
            Err(RecvTimeoutError::Timeout) => Err(ServerFault::Silent { timeout_seconds: timeout.as_secs_f64() }),
            Err(RecvTimeoutError::Disconnected) => Err(ServerFault::Died(self.exited())),
        }
    }

    /// How the server ended (it closed its output).
    fn exited(&mut self) -> String {
        match self.child.wait() {
            Ok(status) => match status.code() {
                Some(code) => format!("exited with {code}"),
                None => "was killed by a signal".to_string(),
            },
            Err(e) => format!("closed its output ({e})"),
        }
    }

    /// Kill it and its process group; the end of its standard error.
    fn end(mut self) -> String {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = std::fs::read(self.log.path()).unwrap_or_default();
        String::from_utf8_lossy(&text[text.len().saturating_sub(400)..]).into_owned()
    }

    /// Close its input and wait a moment for it to go.
    fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The verdict an answer line gives, or the fault if it is outside the
/// protocol.
fn answered(started: Instant, answer: &str) -> Result<Verdict, ServerFault> {
    let seconds = started.elapsed().as_secs_f64();
    let answer = answer.trim_end_matches('\r');
    if answer == "pass" {
        return Ok(Verdict {
            passed: true,
            ended: "pass".to_string(),
            output_tail: String::new(),
            seconds,
            fault: None,
        });
    }
    match answer.strip_prefix("fail") {
        Some(why) if why.is_empty() || why.starts_with(' ') => {
            let why = why.trim().to_string();
            Ok(Verdict { passed: false, ended: "fail".to_string(), output_tail: why, seconds, fault: None })
        }
        _ => Err(ServerFault::Garbage(answer.to_string())),
    }
}

/// The verdict of a state the server faulted on (`at`: crash index and
/// state): failing, typed, said on standard error at once.
fn faulted(started: Instant, at: (u64, usize), fault: ServerFault, output_tail: String) -> Verdict {
    let ended = format!("CHECKER SERVER FAULT at crash index {}, state {}: {fault}", at.0, at.1);
    eprintln!("sim trace explore: {ended}");
    Verdict { passed: false, ended, output_tail, seconds: started.elapsed().as_secs_f64(), fault: Some(fault) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::ROOT;
    use simulator::disk::{CrashMode, DiskConfig, SimVfs};
    use simulator::trace::Trace;

    /// A disk image holding `/db/x` (or an empty `/db`), all durable.
    fn image(with_x: bool) -> DiskImage {
        use vfs::{OpenMode, Vfs};
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        let dir = Path::new(ROOT);
        disk.create_dir_all(dir).unwrap();
        if with_x {
            let mut file = disk.open(&dir.join("x"), OpenMode::Create).unwrap();
            file.write_at(0, b"x").unwrap();
            file.sync().unwrap();
        }
        disk.sync_dir(dir).unwrap();
        disk.snapshot().durable_image()
    }

    fn started(command: &str, timeout_ms: u64) -> (ServerPool, tempfile::TempDir) {
        let scratch = tempfile::tempdir().expect("a scratch directory");
        (ServerPool::new(command, Duration::from_millis(timeout_ms), scratch.path()), scratch)
    }

    /// A server in sh: passes a state holding `x`, fails one without.
    const HAS_X: &str = r#"while IFS="$(printf '\t')" read -r dir printed io state; do
        if [ -f "$dir/x" ]; then echo pass; else echo "fail no x at $io/$state"; fi
    done"#;

    #[test]
    fn one_server_judges_many_states_and_says_why_one_fails() {
        let (pool, _scratch) = started(HAS_X, 10_000);
        for round in 0..3 {
            assert!(pool.check(&image(true), b"", (round, 0)).passed);
            let failed = pool.check(&image(false), b"", (round, 1));
            assert!(!failed.passed);
            assert_eq!(
                (failed.ended.as_str(), failed.output_tail.as_str()),
                ("fail", format!("no x at {round}/1").as_str())
            );
        }
        assert_eq!(pool.idle.lock().unwrap().len(), 1, "one job, one server, kept between states");
    }

    #[test]
    fn an_answer_outside_the_protocol_is_a_fault_naming_the_state() {
        let (pool, _scratch) = started("while read -r line; do echo ok; done", 10_000);
        let verdict = pool.check(&image(true), b"", (3, 5));
        assert_eq!(verdict.fault, Some(ServerFault::Garbage("ok".to_string())), "{verdict:?}");
        assert!(!verdict.passed && verdict.ended.contains("at crash index 3, state 5"), "{verdict:?}");
        assert!(pool.idle.lock().unwrap().is_empty(), "a server that broke the protocol is not kept");
        assert!(pool.check(&image(true), b"", (3, 6)).fault.is_some(), "a fresh server, as wrong");
    }

    #[test]
    fn a_server_that_exits_or_hangs_fails_that_state_and_is_replaced() {
        let (pool, _scratch) = started("read -r line; echo dying >&2; exit 3", 10_000);
        let verdict = pool.check(&image(true), b"", (7, 1));
        assert_eq!(verdict.fault, Some(ServerFault::Died("exited with 3".to_string())), "{verdict:?}");
        assert!(!verdict.passed && verdict.ended.contains("at crash index 7, state 1"), "{verdict:?}");
        assert!(verdict.output_tail.contains("dying"), "its standard error is the output: {verdict:?}");
        assert!(pool.idle.lock().unwrap().is_empty(), "an ended server is not kept");
        let (hanging, _scratch) = started("read -r line; sleep 30", 200);
        let verdict = hanging.check(&image(true), b"", (0, 0));
        assert_eq!(verdict.fault, Some(ServerFault::Silent { timeout_seconds: 0.2 }), "{verdict:?}");
        assert!(!verdict.passed && verdict.ended.contains("gave no answer within 0.2 s"), "{verdict:?}");
    }

    #[test]
    fn the_state_and_what_was_printed_reach_the_server() {
        let command = r#"while IFS="$(printf '\t')" read -r dir printed io state; do
            if grep -q '^ack 7$' "$printed" && [ "$(cat "$dir/x")" = x ]; then echo pass; else echo fail; fi
        done"#;
        let (pool, _scratch) = started(command, 10_000);
        assert!(pool.check(&image(true), b"ack 7\n", (4, 2)).passed);
        assert!(!pool.check(&image(true), b"ack 6\n", (4, 2)).passed);
    }
}
