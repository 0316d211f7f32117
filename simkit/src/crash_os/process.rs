//! One `crash-os` child process, from the parent's side: start it, read
//! its lines as they come (a thread forwards each whole line), wait for it
//! to open the engine, SIGKILL it, reap it, and hand over everything it
//! said.
//!
//! The kill is a real `SIGKILL` from the operating system (`Child::kill`):
//! no handler runs, no destructor, no buffered write is flushed — what the
//! engine had handed to the kernel is in the page cache, and nothing else
//! survives.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::line::{parse, Line};

/// How long the child may take to open the engine, and the pipe to close
/// once it is dead, before the parent gives up on it.
const PATIENCE: Duration = Duration::from_secs(60);

/// `SIGKILL`'s number, which POSIX fixes at 9.
const SIGKILL: i32 = 9;

/// What the reader thread forwards.
enum Event {
    Line(Result<Line, String>),
    Closed,
}

/// A running child.
pub(super) struct Running {
    process: Child,
    events: Receiver<Event>,
    /// Lines received so far, in order.
    lines: Vec<Line>,
    /// A line the parent could not read, if any.
    unreadable: Option<String>,
    closed: bool,
}

/// A child after its end.
pub(super) struct Ended {
    /// Every whole line it printed for the parent, in order.
    pub lines: Vec<Line>,
    /// Whether the parent's SIGKILL ended it (else it ended on its own).
    pub killed: bool,
    /// How it ended, for reports.
    pub status: String,
    /// A line the parent could not read, if any (a harness error).
    pub unreadable: Option<String>,
}

/// Start `argv` (the program, then its arguments) with its standard output
/// piped to a thread that forwards each whole line.
pub(super) fn spawn(argv: &[OsString]) -> Result<Running, String> {
    let (program, args) = argv.split_first().expect("a command line names its program");
    let mut process = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the child {}: {e}", program.to_string_lossy()))?;
    let stdout = process.stdout.take().expect("piped above");
    let (sender, events) = mpsc::channel();
    std::thread::spawn(move || forward(stdout, &sender));
    Ok(Running { process, events, lines: Vec::new(), unreadable: None, closed: false })
}

/// The reader thread: every whole line of the child's that is for the
/// parent, then `Closed` when the pipe closes. A last line with no
/// newline was cut by the kill and is dropped (see `line.rs`).
fn forward(stdout: ChildStdout, sender: &Sender<Event>) {
    let mut reader = BufReader::new(stdout);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Ok(n) if n > 0 && buffer.ends_with(b"\n") => {
                let text = String::from_utf8_lossy(&buffer[..buffer.len() - 1]);
                if let Some(event) = parse(&text) {
                    if sender.send(Event::Line(event)).is_err() {
                        return;
                    }
                }
            }
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
    let _ = sender.send(Event::Closed);
}

impl Running {
    /// Take in one event, waiting at most `timeout`: `false` if none came.
    fn receive(&mut self, timeout: Duration) -> bool {
        let event = match self.events.recv_timeout(timeout) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => return false,
            Err(RecvTimeoutError::Disconnected) => Event::Closed,
        };
        match event {
            Event::Line(Ok(line)) => self.lines.push(line),
            Event::Line(Err(why)) => self.unreadable = self.unreadable.take().or(Some(why)),
            Event::Closed => self.closed = true,
        }
        true
    }

    /// Wait until the child says it opened the engine: `Ok(true)`, or
    /// `Ok(false)` if it ended first (the caller reaps it and reports why).
    pub fn wait_ready(&mut self) -> Result<bool, String> {
        let deadline = Instant::now() + PATIENCE;
        while !self.lines.contains(&Line::Ready) {
            if self.closed {
                return Ok(false);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.receive(left) {
                return Err(format!("the child did not open the engine within {} s", PATIENCE.as_secs()));
            }
        }
        Ok(true)
    }

    /// SIGKILL the child (if it still runs), reap it, and collect every
    /// line it printed.
    pub fn kill(mut self) -> Result<Ended, String> {
        // An error here means the child had already ended; the status says how.
        let _ = self.process.kill();
        let status = self.process.wait().map_err(|e| format!("reaping the child: {e}"))?;
        let deadline = Instant::now() + PATIENCE;
        while !self.closed {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !self.receive(left) {
                return Err("the dead child's output never closed".to_string());
            }
        }
        let killed = status.signal() == Some(SIGKILL);
        Ok(Ended { lines: self.lines, killed, status: status.to_string(), unreadable: self.unreadable })
    }
}
