//! The stable replay: every committed fuzz input through its target, each
//! under `catch_unwind`, every panic collected and reported together.
//!
//! Two places hold inputs under a corpus root (the repository's `corpus/`):
//!
//! - `<target>/*`: the seed corpus `make corpus` writes, one directory per
//!   target;
//! - `regressions/<target>-<anything>`: every crasher a fuzz run ever found,
//!   routed to its target by the name before the first `-`. The simulator's
//!   shrunk `*.ops` lists live there too and are replayed by
//!   `sim/tests/regressions.rs`, so they (and `README*` and dotfiles) are
//!   skipped here.
//!
//! A regression whose name routes to no target is itself a failure: a typo
//! would otherwise retire a crasher silently.

use std::fs;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use super::Target;

/// The directory of fuzz crashers (and simulator regressions) in a corpus.
pub const REGRESSIONS_DIR: &str = "regressions";

/// What a replay ran and what failed.
#[derive(Debug, Default)]
pub struct Replay {
    /// Inputs run, per target, in the order of the targets given.
    pub inputs: Vec<(&'static str, usize)>,
    /// Every input that panicked (or could not be routed or read).
    pub failures: Vec<ReplayFailure>,
}

/// One input that failed.
#[derive(Debug)]
pub struct ReplayFailure {
    /// The input file.
    pub path: PathBuf,
    /// What went wrong: the panic message, or why it could not run.
    pub message: String,
}

impl Replay {
    /// How many inputs ran, over all targets.
    pub fn total_inputs(&self) -> usize {
        self.inputs.iter().map(|(_, count)| count).sum()
    }

    /// One line per failure, naming the input.
    pub fn report(&self) -> String {
        let lines: Vec<String> = self.failures.iter().map(|f| format!("{}: {}", f.path.display(), f.message)).collect();
        lines.join("\n")
    }
}

/// Replay everything under `root` through `targets` (see the module doc).
/// A missing `<target>/` directory counts as no inputs; an unreadable one
/// is an error.
pub fn replay_corpus(root: &Path, targets: &[Target]) -> io::Result<Replay> {
    let mut replay = Replay::default();
    let mut routed: Vec<(Target, PathBuf)> = Vec::new();
    for target in targets {
        for path in files_in(&root.join(target.name))? {
            routed.push((*target, path));
        }
    }
    for path in files_in(&root.join(REGRESSIONS_DIR))? {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.ends_with(".ops") || name.starts_with("README") {
            continue;
        }
        let prefix = name.split('-').next().unwrap_or_default();
        match targets.iter().find(|target| target.name == prefix) {
            Some(target) => routed.push((*target, path)),
            None => replay.failures.push(ReplayFailure {
                path,
                message: format!("no fuzz target named {prefix:?}: a crasher is named <target>-<hash>"),
            }),
        }
    }

    replay.inputs = targets.iter().map(|target| (target.name, 0)).collect();
    for (target, path) in routed {
        let count = replay.inputs.iter_mut().find(|(name, _)| *name == target.name).expect("listed above");
        count.1 += 1;
        let message = match fs::read(&path) {
            Ok(bytes) => run_one(target, &bytes).err(),
            Err(e) => Some(format!("unreadable: {e}")),
        };
        if let Some(message) = message {
            replay.failures.push(ReplayFailure { path, message: format!("target {}: {message}", target.name) });
        }
    }
    Ok(replay)
}

/// Run one input; `Err` holds the panic message.
pub fn run_one(target: Target, bytes: &[u8]) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| (target.run)(bytes))).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic with no message".to_string())
    })
}

/// The regular files directly in `dir`, sorted, skipping dotfiles; none if
/// `dir` does not exist.
fn files_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if entry.file_type()?.is_file() && !hidden {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}
