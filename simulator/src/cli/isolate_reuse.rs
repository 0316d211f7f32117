//! `--isolate --reuse-children`: children that run seed after seed, so a
//! sweep pays a process start per seed that takes its process down, not
//! per seed. persy aborts in a fraction of its seeds and runs a seed in
//! ~20 ms, where a process start costs ~100 ms: a soak of it is bound by
//! starts under plain `--isolate`.
//!
//! The protocol, both sides of it here, beside `isolate.rs`'s. The parent
//! starts its own binary as `isolate.rs` does, with `--isolated-server`
//! instead of a seed, and keeps up to `--jobs` such children. It hands a
//! child one seed at a time, a line on the child's stdin; the child prints
//! [`START_PREFIX`] and the seed on stderr, runs the seed as an in-process
//! sweep runs it, and prints its verdict line on stdout exactly as a
//! one-seed child does ([`VERDICT_PREFIX`], the seed, the summary). It
//! exits 0 at the end of its stdin.
//!
//! A child whose stdout ends before the seed's verdict died on that seed:
//! the same failure of check `died` as `isolate.rs` reports, its signal or
//! status, and the lines its stderr printed since that seed's start (the
//! earlier seeds' are not that seed's). `--seed-timeout` counts from the
//! seed's handover. The next seed gets a fresh child; seeds before it keep
//! the verdicts they had.
//!
//! Whether reuse gives a sweep the verdicts per-seed children give is the
//! question whether a seed leaves anything behind in its process that a
//! later seed sees. The simulator's own determinism rules say it must not
//! (`--check-determinism` runs each seed twice in one process), and
//! `sim/tests/isolate.rs` compares the two modes' summaries.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use super::args::{usage_error, RunArgs};
use super::isolate::{died, not_started, ran_past, verdict_line, with_argv0, Children, VERDICT_PREFIX};
use crate::output::verdict;
use crate::seam::{run_checked, Target};
use crate::summary::Summary;

/// What a serving child prints on stderr as it starts a seed (followed by
/// the seed): where that seed's part of its stderr begins.
pub const START_PREFIX: &str = "sim-isolated-seed-start ";

/// The hidden flag that makes a process a serving child.
pub const SERVER_FLAG: &str = "--isolated-server";

/// Children that serve seeds, up to one per job: the idle ones wait here.
pub struct Servers {
    children: Children,
    idle: Mutex<Vec<Server>>,
}

/// One serving child and the pipes the parent reads it through.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout, a line at a time, from a thread of its own.
    lines: Receiver<String>,
    /// Its stderr as it arrives, from a thread of its own.
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl Servers {
    /// Serving children started as `children` says, none yet.
    pub fn new(children: Children) -> Servers {
        Servers { children, idle: Mutex::new(Vec::new()) }
    }

    /// Run `seed` in a serving child (an idle one, or a new one) and
    /// return its one-seed summary: its verdict, or a failure of check
    /// `died`.
    pub fn run<T: Target>(&self, target: &T, seed: u64) -> Summary {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let server = match idle.map_or_else(|| self.start(), Ok) {
            Ok(server) => server,
            Err(e) => return Summary::of_failure(not_started(target, seed, &e)),
        };
        let (one, server) = self.serve(server, target, seed);
        if let Some(server) = server {
            self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(server);
        }
        assert_eq!(one.seeds, 1, "one seed, one verdict");
        one
    }

    fn start(&self) -> std::io::Result<Server> {
        let mut command = Command::new(&self.children.program);
        with_argv0(&mut command, &self.children.argv0);
        command.args(&self.children.shared_args).arg(SERVER_FLAG);
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let stdout = child.stdout.take().expect("piped above");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                // A read error ends the lines as the child's end does.
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = child.stderr.take().expect("piped above");
        let sink = Arc::clone(&stderr);
        let stderr_reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buffer) {
                sink.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&buffer[..n]);
            }
        });
        let stdin = child.stdin.take();
        Ok(Server { child, stdin, lines, stderr, stderr_reader: Some(stderr_reader) })
    }

    /// Hand `seed` to `server` and wait for its verdict: the summary, and
    /// the server again if it is still fit to serve.
    fn serve<T: Target>(&self, mut server: Server, target: &T, seed: u64) -> (Summary, Option<Server>) {
        let fs = target.fs_profile().name;
        let handed = server.stdin.as_mut().map(|stdin| writeln!(stdin, "{seed}").and_then(|()| stdin.flush()));
        if !matches!(handed, Some(Ok(()))) {
            return (Summary::of_failure(server.died(target, seed, "before taking the seed")), None);
        }
        let deadline = self.children.timeout.map(|limit| Instant::now() + limit);
        loop {
            let line = match deadline {
                None => server.lines.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(deadline) => server.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            };
            let line = match line {
                Ok(line) => line,
                Err(RecvTimeoutError::Disconnected) => {
                    return (Summary::of_failure(server.died(target, seed, "before giving a verdict")), None)
                }
                Err(RecvTimeoutError::Timeout) => {
                    let limit = self.children.timeout.expect("only a timeout times out");
                    // Already gone is fine: the output below says how it ended.
                    let _ = server.child.kill();
                    let output = server.finish();
                    return (Summary::of_failure(ran_past(target, seed, limit, &output)), None);
                }
            };
            // The engine under test may print on stdout too.
            let Some(at) = line.find(VERDICT_PREFIX) else { continue };
            return match verdict_line(&line[at + VERDICT_PREFIX.len()..], seed, fs) {
                Ok(one) => {
                    server.forget_stderr_before(seed);
                    (one, Some(server))
                }
                Err(why) => {
                    let _ = server.child.kill();
                    (Summary::of_failure(server.died(target, seed, &why)), None)
                }
            };
        }
    }
}

impl Server {
    /// The child's end, after its stdout ended: how it ended, and its
    /// stderr since `seed`'s start, as a failure of check `died`.
    fn died<T: Target>(mut self, target: &T, seed: u64, why: &str) -> crate::failure::Failure {
        let mut output = self.finish();
        output.stderr = since_start(&output.stderr, seed).to_vec();
        died(target, seed, &output.status, why, &output)
    }

    /// Close its stdin, wait for it to end, and collect its stderr.
    fn finish(&mut self) -> Output {
        drop(self.stdin.take());
        let status = self.child.wait().expect("a child this process started can be waited for");
        if let Some(reader) = self.stderr_reader.take() {
            // A reader that panicked kept what it had read.
            let _ = reader.join();
        }
        let stderr = std::mem::take(&mut *self.stderr.lock().unwrap_or_else(|e| e.into_inner()));
        Output { status, stdout: Vec::new(), stderr }
    }

    /// Drop what the child printed on stderr before `seed`'s start: only
    /// the seed in hand's part is ever reported.
    fn forget_stderr_before(&self, seed: u64) {
        let mut stderr = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let kept = since_start(&stderr, seed).len();
        let cut = stderr.len() - kept;
        stderr.drain(..cut);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            // The end of its stdin ends an idle child.
            let _ = self.finish();
        }
    }
}

/// The part of a child's `stderr` from `seed`'s start marker's line on (the
/// last such marker), or all of it if it printed none.
fn since_start(stderr: &[u8], seed: u64) -> &[u8] {
    let marker = format!("{START_PREFIX}{seed}\n");
    let found = stderr.windows(marker.len()).rposition(|window| window == marker.as_bytes());
    found.map_or(stderr, |at| &stderr[at + marker.len()..])
}

/// The child's side: run each seed named on a line of stdin, as an
/// in-process sweep runs it, printing its start on stderr and its verdict
/// on stdout; exit 0 at the end of stdin, 2 on a line that names no seed.
pub fn serve_seeds<T: Target>(cli: &RunArgs, target: &T, program: &str) -> std::process::ExitCode {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(seed) = line.trim().parse::<u64>() else {
            return usage_error(program, &format!("{SERVER_FLAG}: {line:?} on stdin names no seed"));
        };
        eprintln!("{START_PREFIX}{seed}");
        let mut one = Summary::of(&run_checked(seed, target, cli.check_determinism));
        one.fs = Some(target.fs_profile().name.to_string());
        println!("{VERDICT_PREFIX}{seed} {}", one.to_json());
        // The parent waits on this line: it must not sit in a buffer.
        let _ = std::io::stdout().flush();
    }
    verdict(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeds_stderr_starts_at_its_last_start_marker() {
        let text = format!("{START_PREFIX}4\nfour's line\n{START_PREFIX}5\nfive's panic\nabort\n");
        assert_eq!(since_start(text.as_bytes(), 5), b"five's panic\nabort\n");
        assert_eq!(
            since_start(text.as_bytes(), 4),
            format!("four's line\n{START_PREFIX}5\nfive's panic\nabort\n").as_bytes()
        );
        // Seed 55's marker is not seed 5's.
        let text = format!("{START_PREFIX}55\nx\n");
        assert_eq!(since_start(text.as_bytes(), 5), text.as_bytes());
        assert_eq!(since_start(b"", 5), b"");
    }
}
