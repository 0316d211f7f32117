//! Targets: what the simulator tests. The segsim store is the default
//! target; [`redb`] is a database nobody here wrote, tested through the
//! same simulated disk, fault model and crash explorer.
//!
//! A target is whatever can do the few things the random mode, the
//! shrinker and the explorer need, and nothing more:
//!
//! - **generate** a seed's operation list (all randomness from the seed);
//! - **run** an operation list on a fresh simulated disk and report a
//!   [`SeedOutcome`] — the same counters, failure and trace hash as the
//!   segsim runner's, so `summary.rs`, `--json`, `sim merge`,
//!   `--check-determinism` and sharding work unchanged;
//! - **print and parse** one operation per line (the `.ops` files of
//!   `--shrink --save` and `--replay`);
//! - for `sim explore`: **record** one fault-free run with a snapshot of
//!   the disk before every I/O and what a recovery there is held to, then
//!   **recover** a crash image and **judge** what came back
//!   ([`explore`] is the generic driver: enumerate, dedupe, recover in
//!   parallel, report).
//!
//! The trait keeps the target's own types (its operation, its checker
//! context, what a recovery returns) as associated types, so each target
//! keeps its own vocabulary; the command line picks one by
//! [`TargetName`] and calls the generic functions here with it.

pub mod explore;
pub mod redb;

use std::fmt;

use crate::failure::Check;

use crate::disk::{DiskImage, DiskRecording};
use crate::outcome::SeedOutcome;

/// The targets the command line knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TargetName {
    /// The segsim store (`engine`), the default.
    #[default]
    Segsim,
    /// redb (crates.io `redb` 4), through [`redb::VfsBackend`].
    Redb,
}

impl TargetName {
    /// Every target, default first.
    pub const ALL: [TargetName; 2] = [TargetName::Segsim, TargetName::Redb];

    /// The name on the command line and in `.ops` files.
    pub fn name(self) -> &'static str {
        match self {
            TargetName::Segsim => "segsim",
            TargetName::Redb => "redb",
        }
    }

    /// Parse a `--target` argument.
    pub fn parse(name: &str) -> Result<TargetName, String> {
        TargetName::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| {
            let names: Vec<&str> = TargetName::ALL.iter().map(|t| t.name()).collect();
            format!("no target is called {name:?}; the targets are: {}", names.join(", "))
        })
    }
}

/// One recording context: from `first_io_index` on (until the next
/// context's), a crash is judged by `context`; `what` names the operation
/// under way for reports.
#[derive(Clone, Debug)]
pub struct RecordedContext<C> {
    /// The first crash index it applies to.
    pub first_io_index: u64,
    /// The operation under way, as its line prints.
    pub what: String,
    /// The target's checker state.
    pub context: C,
}

/// A recorded run for `sim explore`.
#[derive(Clone, Debug)]
pub struct Recording<C> {
    /// The disk before every I/O.
    pub disk: DiskRecording,
    /// In order of `first_io_index`; the first starts at or before the
    /// first recorded I/O.
    pub contexts: Vec<RecordedContext<C>>,
    /// The recording run itself failed: `(check, detail)`. Nothing is
    /// explored then.
    pub failure: Option<(&'static str, String)>,
}

/// What the simulator needs from a system under test (see the module doc).
pub trait Target: Sync {
    /// One workload operation.
    type Op: Clone + fmt::Display + Send + Sync;
    /// What a recovery at one crash index is held to.
    type Context: Clone + Send + Sync;
    /// What recovering one crash image returned (judged in each context
    /// the image appeared in).
    type Recovered: Send + Sync;

    /// The name on the command line.
    fn name(&self) -> &'static str;

    /// The settings that pin a run beyond its seed (forced crash mode, a
    /// planted bug, ...), as `key value` pairs for an `.ops` file header.
    fn settings(&self) -> Vec<(&'static str, String)>;

    /// This target with one setting read back from an `.ops` file.
    fn with_setting(self, key: &str, value: &str) -> Result<Self, String>
    where
        Self: Sized;

    /// The operation list of `seed`.
    fn generate(&self, seed: u64) -> Vec<Self::Op>;

    /// Parse one operation line (as `Display` prints it).
    fn parse_op(&self, line: &str) -> Result<Self::Op, String>;

    /// Run `ops` under `seed`'s configuration on a fresh simulated disk.
    /// Never panics: a panic in the system under test is a failure.
    fn run(&self, seed: u64, ops: &[Self::Op], keep_trace: bool) -> SeedOutcome;

    /// The command line that reruns `seed` with these settings, then `extra`.
    fn repro(&self, seed: u64, extra: &str) -> String;

    /// The workload `sim explore` records for `seed`: `ops` operations,
    /// crash points dropped (every point is explored).
    fn explore_workload(&self, seed: u64, ops: u64) -> Vec<Self::Op>;

    /// The sector size of `seed`'s disk (where explored writes are cut).
    fn sector_bytes(&self, seed: u64) -> u64;

    /// Whether crash states with a torn sector holding garbage are
    /// explored (they are skipped, keeping their numbers, when not).
    fn torn_garbage(&self) -> bool {
        true
    }

    /// Run `workload` once, fault-free, on a disk that keeps a snapshot
    /// before every I/O, noting the context of every operation.
    fn record(&self, seed: u64, workload: &[Self::Op]) -> Recording<Self::Context>;

    /// What a recovery depends on besides the image (a clock, say): two
    /// crash states with the same image and key are recovered once.
    fn recovery_key(&self, context: &Self::Context) -> u64;

    /// Open the system on `image` (recovery key `key`) and take what it
    /// returns, plus whatever follow-up checks need no context. Never
    /// panics.
    fn recover(&self, seed: u64, image: &DiskImage, key: u64) -> Self::Recovered;

    /// Whether `recovered` is allowed in `context`: `Err((check, detail))`.
    fn judge(&self, recovered: &Self::Recovered, context: &Self::Context) -> Result<(), (&'static str, String)>;
}

/// Run `seed`'s generated workload.
pub fn run_seed<T: Target>(target: &T, seed: u64, keep_trace: bool) -> SeedOutcome {
    target.run(seed, &target.generate(seed), keep_trace)
}

/// Delta debugging (Zeller's ddmin) over any list: the shortest sub-list
/// found on which `fails` still holds, and how many candidates were run.
/// Deterministic: same list, same predicate, same result.
pub fn ddmin<O: Clone>(ops: Vec<O>, mut fails: impl FnMut(&[O]) -> bool) -> (Vec<O>, u64) {
    let mut runs = 0u64;
    let mut current = ops;
    let mut chunks = 2usize;
    while current.len() >= 2 {
        let chunk_len = current.len().div_ceil(chunks);
        let mut reduced = false;
        let mut start = 0;
        while start < current.len() {
            let end = (start + chunk_len).min(current.len());
            let mut candidate = current[..start].to_vec();
            candidate.extend_from_slice(&current[end..]);
            runs += 1;
            if !candidate.is_empty() && fails(&candidate) {
                current = candidate;
                reduced = true;
                chunks = (chunks - 1).max(2);
                break;
            }
            start = end;
        }
        if !reduced {
            if chunks >= current.len() {
                break;
            }
            chunks = (chunks * 2).min(current.len());
        }
    }
    (current, runs)
}

/// Shrink `ops` (of `seed`) to a shorter list that still fails `check`.
pub fn shrink<T: Target>(target: &T, seed: u64, ops: Vec<T::Op>, check: Check) -> (Vec<T::Op>, u64) {
    ddmin(ops, |candidate| target.run(seed, candidate, false).failure.is_some_and(|f| f.check == check))
}

/// The `.ops` file of a target other than segsim: `#` comments, `target
/// NAME`, `seed N`, the target's settings as `key value` lines, then one
/// operation per line. (A file without a `target` line is segsim's, read
/// by `crate::shrink::OpList`.)
pub fn ops_file<T: Target>(target: &T, seed: u64, ops: &[T::Op], comment: &str) -> String {
    let mut out = String::new();
    for line in comment.lines() {
        out.push_str(&format!("# {line}\n"));
    }
    out.push_str(&format!("target {}\nseed {seed}\n", target.name()));
    for (key, value) in target.settings() {
        out.push_str(&format!("{key} {value}\n"));
    }
    for op in ops {
        out.push_str(&format!("{op}\n"));
    }
    out
}

/// The target an `.ops` file names (its `target` line), if any.
pub fn ops_file_target(text: &str) -> Result<Option<TargetName>, String> {
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        return match line.strip_prefix("target ") {
            Some(name) => TargetName::parse(name.trim()).map(Some),
            None => Ok(None),
        };
    }
    Ok(None)
}

/// Read an `.ops` file written by [`ops_file`]: the target with the
/// file's settings applied, the seed and the operations. Errors name the
/// line.
pub fn parse_ops_file<T: Target>(mut target: T, text: &str) -> Result<(T, u64, Vec<T::Op>), String> {
    let mut seed = None;
    let mut ops = Vec::new();
    let mut in_header = true;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = |e: String| format!("line {}: {e}", number + 1);
        if line.is_empty() || line.starts_with('#') || line.starts_with("target ") {
            continue;
        }
        if let Some(value) = line.strip_prefix("seed ") {
            seed = Some(value.trim().parse().map_err(|_| at(format!("bad seed {value:?}")))?);
            continue;
        }
        let first = line.split_whitespace().next().unwrap_or("");
        if in_header && first.parse::<u64>().is_err() {
            let (key, value) = line.split_once(' ').ok_or_else(|| at(format!("not a setting: {line:?}")))?;
            target = target.with_setting(key, value.trim()).map_err(at)?;
            continue;
        }
        in_header = false;
        ops.push(target.parse_op(line).map_err(at)?);
    }
    let seed = seed.ok_or("no `seed N` line")?;
    Ok((target, seed, ops))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_culprits() {
        let ops: Vec<u32> = (0..100).collect();
        let (minimal, runs) = ddmin(ops, |c| c.contains(&17) && c.contains(&71));
        assert_eq!(minimal, vec![17, 71]);
        assert!(runs > 0);
    }

    #[test]
    fn target_names_round_trip() {
        for target in TargetName::ALL {
            assert_eq!(TargetName::parse(target.name()), Ok(target));
        }
        assert!(TargetName::parse("sqlite").unwrap_err().contains("redb"));
        assert_eq!(ops_file_target("# x\n\ntarget redb\nseed 1\n"), Ok(Some(TargetName::Redb)));
        assert_eq!(ops_file_target("seed 1\n0 EVICT\n"), Ok(None));
    }
}
