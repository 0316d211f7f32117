//! `sim trace record`: run a program under the system's `strace`, keep
//! every file-system call it (and every process it starts) makes under
//! one directory, and what it printed, as a [`Recording`].
//!
//! The directory's content before the run is read first (every file and
//! subdirectory; a symbolic link or a special file in it is refused: the
//! simulated disk has neither). strace writes its log to a temporary file
//! with `-f` (children), `-y` (each descriptor's path), `-xx` (every
//! string in hex, so no byte is lost or ambiguous), `-X raw` (flags as
//! numbers), `-s` [`MAX_STRING_BYTES`] (a longer write is refused, never
//! cut), and `read`/`readv` raw (their bytes are not needed, only how far
//! they moved the offset). The program's standard output is a pipe of
//! ours, copied through to ours as it comes, so `-y` names it
//! (`pipe:[N]`) and a write to it is an acknowledgement in the log's order.

use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use super::recorder::Recorder;
use super::recording::{Recording, RelPath};
use super::strace::Joiner;

/// strace's `-s`: the longest string (a write's bytes) kept whole.
pub const MAX_STRING_BYTES: usize = 64 << 20;

/// The calls strace shows: every call on a path or a descriptor, the
/// process calls (clone, exec), the two syncs that take neither, and the
/// asynchronous I/O interfaces, whose writes name no descriptor strace
/// decodes as one (the recorder refuses them).
const TRACED: &str = "%file,%desc,%process,sync,syncfs,io_setup,io_submit,io_uring_setup";

/// A recording that could not be made, for the command line (exit 2).
#[derive(Debug)]
pub struct RecordFailure(pub String);

impl std::fmt::Display for RecordFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a recorded run left.
#[derive(Debug)]
pub struct Recorded {
    /// The recording.
    pub recording: Recording,
    /// How the program ended.
    pub status: ExitStatus,
    /// strace's log lines read.
    pub strace_lines: usize,
}

/// Run `command` under strace, watching `dir` (see the module doc).
pub fn record(dir: &Path, command: &[String]) -> Result<Recorded, RecordFailure> {
    let root = dir.canonicalize().map_err(|e| RecordFailure(format!("--dir {}: {e}", dir.display())))?;
    if !root.is_dir() {
        return Err(RecordFailure(format!("--dir {}: not a directory", dir.display())));
    }
    let (initial_dirs, initial_files) = read_tree(&root)?;
    let log = tempfile::NamedTempFile::new().map_err(|e| RecordFailure(format!("temporary strace log: {e}")))?;
    let mut child = Command::new("strace")
        .args(["-f", "-qq", "-X", "raw", "-xx", "-y", "-e", "signal=none", "-e", "raw=read,readv"])
        .arg("-s")
        .arg(MAX_STRING_BYTES.to_string())
        .arg("-e")
        .arg(format!("trace={TRACED}"))
        .arg("-o")
        .arg(log.path())
        .arg("--")
        .args(command)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| {
            RecordFailure(format!("cannot run strace (is it installed? Debian: apt-get install strace): {e}"))
        })?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let marker = std::fs::read_link(format!("/proc/self/fd/{}", stdout.as_raw_fd()))
        .map_err(|e| RecordFailure(format!("the program's stdout pipe: {e}")))?;
    copy_through(&mut stdout);
    let status = child.wait().map_err(|e| RecordFailure(format!("waiting for strace: {e}")))?;
    let cwd = std::env::current_dir().map_err(|e| RecordFailure(format!("working directory: {e}")))?;
    let mut recorder = Recorder::new(
        root.as_os_str().as_bytes().to_vec(),
        marker.as_os_str().as_bytes().to_vec(),
        cwd.as_os_str().as_bytes().to_vec(),
        initial_dirs.iter().cloned(),
    );
    let strace_lines = read_log(log.path(), &mut recorder)?;
    let recording =
        Recording { root: root.as_os_str().as_bytes().to_vec(), initial_dirs, initial_files, ops: recorder.finish() };
    Ok(Recorded { recording, status, strace_lines })
}

/// Copy the program's output to ours as it comes (a user sees it live;
/// the recording takes it from strace's log, in order with the calls).
fn copy_through(stdout: &mut impl Read) {
    let mut buffer = [0u8; 8192];
    let mut ours = std::io::stdout();
    while let Ok(read) = stdout.read(&mut buffer) {
        if read == 0 {
            break;
        }
        let _ = ours.write_all(&buffer[..read]);
        let _ = ours.flush();
    }
}

fn read_log(path: &Path, recorder: &mut Recorder) -> Result<usize, RecordFailure> {
    let text = std::fs::read(path).map_err(|e| RecordFailure(format!("strace's log: {e}")))?;
    let mut joiner = Joiner::default();
    let mut lines = 0;
    for (index, line) in text.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        lines += 1;
        // With -xx every string is escaped, so the log is ASCII; a line
        // that is not is refused rather than read lossily.
        let line = std::str::from_utf8(line)
            .map_err(|_| RecordFailure(format!("strace output line {}: not ASCII", index + 1)))?;
        let call = joiner.line(index + 1, line).map_err(|e| RecordFailure(e.to_string()))?;
        if let Some(call) = call {
            recorder.call(&call, joiner.pending_clone()).map_err(|e| RecordFailure(e.to_string()))?;
        }
    }
    Ok(lines)
}

/// A directory's content: its subdirectories and its files with their bytes.
type Tree = (Vec<RelPath>, Vec<(RelPath, Vec<u8>)>);

/// Every subdirectory (parents first) and file under `root`, sorted.
fn read_tree(root: &Path) -> Result<Tree, RecordFailure> {
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .and_then(|list| list.map(|entry| entry.map(|e| e.path())).collect())
            .map_err(|e| RecordFailure(format!("reading {}: {e}", dir.display())))?;
        entries.sort();
        for path in entries.into_iter().rev() {
            let rel = RelPath(path.strip_prefix(root).expect("below the root").as_os_str().as_bytes().to_vec());
            let kind =
                std::fs::symlink_metadata(&path).map_err(|e| RecordFailure(format!("{}: {e}", path.display())))?;
            if kind.is_dir() {
                dirs.push(rel);
                pending.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).map_err(|e| RecordFailure(format!("{}: {e}", path.display())))?;
                files.push((rel, bytes));
            } else {
                return Err(RecordFailure(format!(
                    "{}: neither a file nor a directory (the simulated disk has no links or special files)",
                    path.display()
                )));
            }
        }
    }
    dirs.sort();
    files.sort();
    Ok((dirs, files))
}
