//! What a failed run reports: which [`Check`] failed, and the [`Failure`]
//! with its detail, its last trace events and the command that reproduces
//! it; and the one place a panic becomes a failure ([`catch_panic`],
//! [`catch_failure`]), with the one panic that is not an engine's: an
//! [`EnvironmentRefused`] raised by the layer an engine runs on.
//!
//! Checks are a closed enum, not strings, so every place that names one —
//! the driver, the explorer, the JSON summary, `sim merge` reading a
//! shard's summary back, the canary table — names the same set: a check
//! added here is one `sim merge` can read (a test merges a summary holding
//! every variant).

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::disk::SimVfs;

/// A check the simulator holds the engine to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// A reply differed from the model's, or an error had no cause.
    Reply,
    /// A recovered state is no state the durability contract allows.
    Durability,
    /// `audit()` found a violated invariant.
    Audit,
    /// The content between operations differs from the model's.
    Content,
    /// The store refused to open where it must open.
    Open,
    /// Reading the whole content (`logical_dump`) failed.
    Dump,
    /// An admin call (evict, rewrite, sync, tick, close) failed with no cause.
    Admin,
    /// A clean restart changed where rows live (cold rows, segments).
    Layout,
    /// The store poisoned itself on a fault-free disk.
    Poisoned,
    /// Exploration's probe: a recovered store did not go on working.
    Probe,
    /// An open that refused damage changed the directory anyway.
    Untouched,
    /// An open destroyed what it must keep: a file it does not own, or (a
    /// point-in-time open) any file or any byte it cut.
    Destroyed,
    /// A second opener of a live store was not refused as locked, or its
    /// attempt changed something.
    Lock,
    /// A segment seq was used for a second file after its first was gone.
    SeqReuse,
    /// A panic in the engine or the harness.
    Panic,
    /// Two runs of one seed differ.
    Determinism,
    /// A read-only inspection of a crashed directory changed a byte of it,
    /// or saw other content than the recovery that followed.
    Inspect,
    /// A file's data was fsynced while its name was not durable, then
    /// relied on or acknowledged (a persistence hazard, `disk/hazards.rs`).
    Hazard,
    /// The seed's child process (`--isolate`) ended without a verdict:
    /// killed by a signal (an abort: a panic while a panic unwinds, which
    /// no `catch_unwind` contains) or with an exit status that is none.
    Died,
    /// The environment an engine runs on refused a call it could not
    /// serve faithfully (the stdfs layer: a memory map of a simulated
    /// file, a call from another thread), raised as
    /// [`EnvironmentRefused`]: the run tested less than it says, whatever
    /// faults were injected.
    Refused,
}

impl Check {
    /// Every check, in a fixed order.
    pub const ALL: [Check; 20] = [
        Check::Reply,
        Check::Durability,
        Check::Audit,
        Check::Content,
        Check::Open,
        Check::Dump,
        Check::Admin,
        Check::Layout,
        Check::Poisoned,
        Check::Probe,
        Check::Untouched,
        Check::Destroyed,
        Check::Lock,
        Check::SeqReuse,
        Check::Panic,
        Check::Determinism,
        Check::Inspect,
        Check::Hazard,
        Check::Died,
        Check::Refused,
    ];

    /// The name reports and JSON summaries carry.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::Reply => "reply",
            Check::Durability => "durability",
            Check::Audit => "audit",
            Check::Content => "content",
            Check::Open => "open",
            Check::Dump => "dump",
            Check::Admin => "admin",
            Check::Layout => "layout",
            Check::Poisoned => "poisoned",
            Check::Probe => "probe",
            Check::Untouched => "untouched",
            Check::Destroyed => "destroyed",
            Check::Lock => "lock",
            Check::SeqReuse => "seq-reuse",
            Check::Panic => "panic",
            Check::Determinism => "determinism",
            Check::Inspect => "inspect",
            Check::Hazard => "hazard",
            Check::Died => "died",
            Check::Refused => "refused",
        }
    }

    /// The check named `name` (see [`Check::as_str`]).
    pub fn parse(name: &str) -> Option<Check> {
        Check::ALL.into_iter().find(|check| check.as_str() == name)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// What a seed's run found.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The index of the operation during which it was found.
    pub op_index: u64,
    /// Which check failed.
    pub check: Check,
    /// What exactly, for a person (diffs included).
    pub detail: String,
    /// The last trace events before the failure.
    pub recent: Vec<String>,
    /// The one command line that reproduces it.
    pub repro: String,
}

impl Failure {
    /// A failure of `check` found in operation `op_index` of `seed`'s run
    /// on `vfs`, with the last events of that run's trace (what led up to
    /// it) and `repro`, the command line that runs it again.
    pub fn in_run(vfs: &SimVfs, seed: u64, op_index: u64, check: Check, detail: String, repro: String) -> Failure {
        let recent = vfs.with_trace(|t| t.recent().iter().map(|e| t.describe(e)).collect());
        Failure { seed, op_index, check, detail, recent, repro }
    }
}

/// The panic payload an adapter raises (`std::panic::panic_any`) when the
/// environment its engine runs on refused a call it could not serve
/// faithfully: the run fails with check [`Check::Refused`], naming the
/// call, instead of [`Check::Panic`] or an error the kit might accept
/// under an injected fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvironmentRefused {
    /// What was refused, for the report: the call and why.
    pub what: String,
}

/// A panic's message, for a report.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(refused) = panic.downcast_ref::<EnvironmentRefused>() {
        return format!("the environment refused: {}", refused.what);
    }
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic with no message".to_string())
}

/// Run `f`, turning a panic into `Err(message)`: a panic in the engine is
/// a finding of the seed that caused it, never the end of a sweep.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| panic_message(panic.as_ref()))
}

/// Run `f`, turning a panic into the check it fails and its message:
/// [`Check::Refused`] for an [`EnvironmentRefused`], [`Check::Panic`] for
/// any other.
pub fn catch_failure<T>(f: impl FnOnce() -> T) -> Result<T, (Check, String)> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let check = if panic.is::<EnvironmentRefused>() { Check::Refused } else { Check::Panic };
        (check, panic_message(panic.as_ref()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_one_name_that_parses_back() {
        let mut names: Vec<&str> = Check::ALL.iter().map(|c| c.as_str()).collect();
        for check in Check::ALL {
            assert_eq!(Check::parse(check.as_str()), Some(check));
            assert_eq!(check.to_string(), check.as_str());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Check::ALL.len());
        assert_eq!(Check::parse("Layout"), None);
    }

    #[test]
    fn a_panic_becomes_its_message() {
        assert_eq!(catch_panic(|| 7), Ok(7));
        assert_eq!(catch_panic(|| panic!("boom {}", 1)), Err::<(), _>("boom 1".to_string()));
        assert_eq!(catch_panic(|| std::panic::panic_any(5u8)), Err::<(), _>("a panic with no message".to_string()));
    }

    #[test]
    fn an_environment_refusal_is_its_own_check() {
        let refused = EnvironmentRefused { what: "mmap of /db/f".to_string() };
        let caught = catch_failure(|| std::panic::panic_any(refused));
        assert_eq!(caught, Err::<(), _>((Check::Refused, "the environment refused: mmap of /db/f".to_string())));
        assert_eq!(catch_failure(|| panic!("boom")), Err::<(), _>((Check::Panic, "boom".to_string())));
    }
}
