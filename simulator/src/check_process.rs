//! A per-state checker process (`sim trace explore --check`, `sim live
//! --check`): waited for within a deadline, and past it killed with every
//! process it started, so a checker that hangs fails its state instead of
//! the whole sweep.
//!
//! The caller starts the checker in a process group of its own
//! (`CommandExt::process_group(0)`); [`wait_within`] then kills that group
//! at the deadline, which reaches what `sh -c CHECK` started too (an
//! interpreter, a pipeline), not only the shell. [`kill_group`] is the same
//! kill for a checker server (`crate::check_server`), and [`output_tail`]
//! what a verdict quotes of either's output.
//!
//! This crate owns it for the reason it owns the server protocol: `simtrace`
//! and `simlive` both wait for checkers, and the code is written once.

use std::fmt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How a checker process ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// It exited with this code (0 passes).
    Exit(i32),
    /// A signal ended it (not ours: ours is [`Ended::TimedOut`]).
    Signal,
    /// It ran past the deadline and was killed, its process group with it.
    TimedOut(Duration),
    /// Waiting for it failed.
    WaitFailed(String),
}

impl Ended {
    /// The checker passed the state: it exited with 0.
    pub fn passed(&self) -> bool {
        *self == Ended::Exit(0)
    }
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ended::Exit(code) => write!(f, "exit {code}"),
            Ended::Signal => write!(f, "killed by a signal"),
            Ended::TimedOut(timeout) => write!(f, "timed out after {} s (killed)", timeout.as_secs_f64()),
            Ended::WaitFailed(why) => write!(f, "waiting failed: {why}"),
        }
    }
}

/// Wait for `child` (started in a process group of its own) for at most
/// `timeout`, polling with a growing sleep: short first, since most
/// checkers are quick and the wait is part of the process-start floor.
pub fn wait_within(child: &mut Child, timeout: Duration) -> Ended {
    let started = Instant::now();
    let mut pause = Duration::from_micros(100);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return match status.code() {
                    Some(code) => Ended::Exit(code),
                    None => Ended::Signal,
                }
            }
            Ok(None) if started.elapsed() > timeout => {
                kill_group(child);
                return Ended::TimedOut(timeout);
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(e) => return Ended::WaitFailed(e.to_string()),
        }
    }
}

/// How much of a checker's output a verdict quotes: its last bytes.
pub const OUTPUT_TAIL_BYTES: usize = 400;

/// The last [`OUTPUT_TAIL_BYTES`] of the file a checker wrote its output
/// (or a server its standard error) to; empty if it cannot be read.
pub fn output_tail(path: &Path) -> String {
    let text = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(&text[text.len().saturating_sub(OUTPUT_TAIL_BYTES)..]).into_owned()
}

/// Kill `child`'s process group (the group it leads: it was started with
/// `process_group(0)`) and `child` itself, and reap it.
pub fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn checker(script: &str) -> Child {
        Command::new("sh").args(["-c", script]).stdin(Stdio::null()).process_group(0).spawn().unwrap()
    }

    #[test]
    fn a_quick_checker_ends_with_its_exit_code() {
        assert_eq!(wait_within(&mut checker("exit 0"), Duration::from_secs(10)), Ended::Exit(0));
        let failed = wait_within(&mut checker("exit 3"), Duration::from_secs(10));
        assert_eq!((failed.to_string(), failed.passed()), ("exit 3".to_string(), false));
    }

    /// A checker that hangs is killed at the deadline with what it started:
    /// the background `sleep` it left (its pid in a file) is gone too.
    #[test]
    fn a_hung_checker_is_killed_with_its_group_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let ended = wait_within(&mut checker(&script), Duration::from_millis(300));
        assert_eq!(ended, Ended::TimedOut(Duration::from_millis(300)));
        assert_eq!(ended.to_string(), "timed out after 0.3 s (killed)");
        let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_string();
        // A killed process may stay a zombie until its parent (init, now)
        // reaps it: gone or a zombie, it no longer runs.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
            let running = state.as_deref().is_some_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')));
            if !running {
                break;
            }
            assert!(Instant::now() < deadline, "the checker's sleep {pid} outlived the kill");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
