//! Checkers that stay up: one checker process that judges many crash
//! states, in place of one process per state (`sim trace explore
//! --check-server` and `sim live run|sweep --check-server`).
//!
//! A checker that starts a process per state pays that start on every
//! state: about a millisecond for `sh`, 20 to 200 for an interpreter that
//! imports a database module, which is most of an exploration once the
//! states number thousands (issue 51: a Python checker at 5 states/s). A
//! server pays it once. The protocol is a line each way:
//!
//! - the harness writes `DIR<TAB>PRINTED<TAB>A<TAB>B` on the server's
//!   standard input: the crash state written out as a fresh directory
//!   (`crate::written_state`), the file of what the program printed before the
//!   crash (the per-state checker's `$1` and `$2`), and the state's two
//!   names (`sim trace`: the crash index and the state's number there;
//!   `sim live`: the crash's I/O index, `end` for the cut after the exit,
//!   and the seed);
//! - the server answers one line on its standard output: `pass`, or
//!   `fail WHY`.
//!
//! Anything else is a [`ServerFault`], as is no answer within the timeout
//! or the server's exit: the state gets no verdict from the checker, so
//! the caller counts it as failing and says so apart from the checker's
//! `fail` verdicts. A server that faulted is killed (its process group
//! with it) and a fresh one started for the next state, so one bad state
//! cannot poison the verdicts after it. The server's standard error goes
//! to a file beside the states; its end comes back with the fault. A
//! server must judge each state on its own (nothing carried from one state
//! to the next): the verdicts are then the per-state checker's.
//!
//! This crate owns it because both `simtrace` and `simlive` build on it and
//! on nothing else they share: the code is written once.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use crate::check_process;

/// How a checker server broke the protocol on one state: not a verdict on
/// the state, a fault of the checker (reports keep the two apart).
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

/// A server's verdict on one state.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// `pass`.
    Pass,
    /// `fail WHY`: WHY, trimmed (possibly empty).
    Fail(String),
}

/// A fault, with the end of the faulting server's standard error (what it
/// said before it went wrong, the state's output in a report).
#[derive(Clone, Debug, PartialEq)]
pub struct Faulted {
    /// What broke.
    pub fault: ServerFault,
    /// The end of the server's standard error
    /// ([`check_process::OUTPUT_TAIL_BYTES`]).
    pub stderr_tail: String,
}

/// Servers not now judging a state, started on demand (at most one per
/// thread that asks at once), ended when the pool drops.
pub struct ServerPool {
    command: String,
    /// The name the command sees as `$0`.
    name: &'static str,
    timeout: Duration,
    scratch: PathBuf,
    idle: Mutex<Vec<Server>>,
}

impl std::fmt::Debug for ServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPool")
            .field("command", &self.command)
            .field("timeout", &self.timeout)
            .field("scratch", &self.scratch)
            .finish_non_exhaustive()
    }
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
    /// A pool running `command` as `sh -c COMMAND NAME` for its servers,
    /// each answer due within `timeout`, their logs written under `scratch`.
    pub fn new(command: &str, name: &'static str, timeout: Duration, scratch: &Path) -> ServerPool {
        assert!(!timeout.is_zero(), "a server must be given time to answer");
        ServerPool {
            command: command.to_string(),
            name,
            timeout,
            scratch: scratch.to_path_buf(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Where the states and the servers' logs are written.
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// Servers kept running between states.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().expect("no thread panics holding the pool").len()
    }

    /// A server's verdict on the state written out at `dir`, with what the
    /// program printed in the file `printed`, named `names`; or the fault,
    /// after which that server is gone.
    pub fn judge(&self, dir: &Path, printed: &Path, names: (&str, &str)) -> Result<Answer, Faulted> {
        let request = request_line(dir, printed, names);
        let taken = self.idle.lock().expect("no thread panics holding the pool").pop();
        let mut server = match taken.map_or_else(|| self.start(), Ok) {
            Ok(server) => server,
            Err(why) => return Err(Faulted { fault: ServerFault::NotStarted(why), stderr_tail: String::new() }),
        };
        let answer = server.ask(&request, self.timeout).and_then(|line| parse_answer(&line));
        match answer {
            Ok(answer) => {
                self.idle.lock().expect("no thread panics holding the pool").push(server);
                Ok(answer)
            }
            Err(fault) => Err(Faulted { fault, stderr_tail: server.end() }),
        }
    }

    /// A fresh server: `sh -c COMMAND NAME`.
    fn start(&self) -> Result<Server, String> {
        let log = tempfile::Builder::new()
            .prefix("sim-check-server-")
            .tempfile_in(&self.scratch)
            .map_err(|e| format!("the checker server's log in {}: {e}", self.scratch.display()))?;
        let stderr = log.reopen().map_err(|e| format!("the checker server's log: {e}"))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .arg(self.name)
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

/// The request for one state: `DIR<TAB>PRINTED<TAB>A<TAB>B` and a newline.
fn request_line(dir: &Path, printed: &Path, (a, b): (&str, &str)) -> String {
    let line = format!("{}\t{}\t{a}\t{b}\n", dir.display(), printed.display());
    // The harness makes the paths and names: a tab or newline in one would
    // shift the fields the server reads.
    debug_assert_eq!(line.matches('\t').count(), 3, "{line:?}");
    debug_assert_eq!(line.matches('\n').count(), 1, "{line:?}");
    line
}

/// The verdict an answer line gives, or the fault if it is outside the
/// protocol.
pub fn parse_answer(line: &str) -> Result<Answer, ServerFault> {
    let line = line.trim_end_matches('\r');
    if line == "pass" {
        return Ok(Answer::Pass);
    }
    match line.strip_prefix("fail") {
        Some(why) if why.is_empty() || why.starts_with(' ') => Ok(Answer::Fail(why.trim().to_string())),
        _ => Err(ServerFault::Garbage(line.to_string())),
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
        check_process::kill_group(&mut self.child);
        check_process::output_tail(self.log.path())
    }

    /// Close its input and wait a moment for it to go; past that, kill it
    /// with its process group, as [`Server::end`] does.
    fn close(mut self) {
        drop(self.stdin);
        check_process::wait_within(&mut self.child, Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state directory, holding `x` or not, and an empty printed file.
    fn state(scratch: &Path, name: &str, with_x: bool) -> (PathBuf, PathBuf) {
        let dir = scratch.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if with_x {
            std::fs::write(dir.join("x"), b"x").unwrap();
        }
        let printed = scratch.join(format!("{name}.printed"));
        std::fs::write(&printed, b"").unwrap();
        (dir, printed)
    }

    fn started(command: &str, timeout_ms: u64) -> (ServerPool, tempfile::TempDir) {
        let scratch = tempfile::tempdir().expect("a scratch directory");
        (ServerPool::new(command, "test-check-server", Duration::from_millis(timeout_ms), scratch.path()), scratch)
    }

    fn judged(pool: &ServerPool, with_x: bool, names: (&str, &str)) -> Result<Answer, Faulted> {
        let name = format!("{}-{}-{with_x}", names.0, names.1);
        let (dir, printed) = state(pool.scratch(), &name, with_x);
        pool.judge(&dir, &printed, names)
    }

    /// A server in sh: passes a state holding `x`, fails one without.
    const HAS_X: &str = r#"while IFS="$(printf '\t')" read -r dir printed a b; do
        if [ -f "$dir/x" ]; then echo pass; else echo "fail no x at $a/$b"; fi
    done"#;

    #[test]
    fn one_server_judges_many_states_and_says_why_one_fails() {
        let (pool, _scratch) = started(HAS_X, 10_000);
        for round in ["0", "1", "2"] {
            assert_eq!(judged(&pool, true, (round, "0")), Ok(Answer::Pass));
            assert_eq!(judged(&pool, false, (round, "1")), Ok(Answer::Fail(format!("no x at {round}/1"))));
        }
        assert_eq!(pool.idle_count(), 1, "one caller, one server, kept between states");
    }

    #[test]
    fn an_answer_outside_the_protocol_is_a_fault_and_the_server_is_replaced() {
        let (pool, _scratch) = started("while read -r line; do echo ok; done", 10_000);
        let faulted = judged(&pool, true, ("3", "5")).unwrap_err();
        assert_eq!(faulted.fault, ServerFault::Garbage("ok".to_string()));
        assert_eq!(pool.idle_count(), 0, "a server that broke the protocol is not kept");
        assert!(judged(&pool, true, ("3", "6")).is_err(), "a fresh server, as wrong");
    }

    #[test]
    fn a_server_that_exits_or_hangs_is_a_fault_with_its_stderr() {
        let (pool, _scratch) = started("read -r line; echo dying >&2; exit 3", 10_000);
        let faulted = judged(&pool, true, ("7", "1")).unwrap_err();
        assert_eq!(faulted.fault, ServerFault::Died("exited with 3".to_string()));
        assert!(faulted.stderr_tail.contains("dying"), "{faulted:?}");
        assert_eq!(pool.idle_count(), 0, "an ended server is not kept");
        let (hanging, _scratch) = started("read -r line; sleep 30", 200);
        let faulted = judged(&hanging, true, ("0", "0")).unwrap_err();
        assert_eq!(faulted.fault, ServerFault::Silent { timeout_seconds: 0.2 });
        assert!(faulted.fault.to_string().contains("gave no answer within 0.2 s"));
    }

    #[test]
    fn answers_are_pass_or_fail_with_a_reason_and_nothing_else() {
        assert_eq!(parse_answer("pass"), Ok(Answer::Pass));
        assert_eq!(parse_answer("pass\r"), Ok(Answer::Pass));
        assert_eq!(parse_answer("fail"), Ok(Answer::Fail(String::new())));
        assert_eq!(parse_answer("fail  gone "), Ok(Answer::Fail("gone".to_string())));
        for garbage in ["", "passed", "failed", "PASS", " pass", "ok"] {
            assert_eq!(parse_answer(garbage), Err(ServerFault::Garbage(garbage.to_string())), "{garbage:?}");
        }
    }
}
