//! What a failed run reports: which [`Check`] failed, and the [`Failure`]
//! with its detail, its last trace events and the command that reproduces
//! it; and the one place a panic becomes a failure ([`catch_panic`],
//! [`catch_failure`]), with the one panic that is not an engine's: an
//! [`EnvironmentRefused`] raised by the layer an engine runs on.
//!
//! A caught panic's message ends with the place it was raised (`…
//! (panicked at persy-1.8.1/src/device.rs:178)`), noted by a panic hook
//! installed once: reports show where an engine panicked, and the
//! shrinker keeps a panic's place, not only its check ([`panic_place`]).
//!
//! Checks are a closed enum, not strings, so every place that names one —
//! the driver, the explorer, the JSON summary, `sim merge` reading a
//! shard's summary back, the canary table — names the same set: a check
//! added here is one `sim merge` can read (a test merges a summary holding
//! every variant).

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

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
    /// A reader's read-only transaction saw other than the one committed
    /// state it began on (`kit/readers.rs`).
    Isolation,
}

impl Check {
    /// Every check, in a fixed order.
    pub const ALL: [Check; 21] = [
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
        Check::Isolation,
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
            Check::Isolation => "isolation",
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
    /// What the seed drew (a kit target's configuration: `Target::drew`),
    /// if the target says: reports print it first.
    pub drew: Option<String>,
}

impl Failure {
    /// A failure of `check` found in operation `op_index` of `seed`'s run
    /// on `vfs`, with the last events of that run's trace (what led up to
    /// it) and `repro`, the command line that runs it again.
    pub fn in_run(vfs: &SimVfs, seed: u64, op_index: u64, check: Check, detail: String, repro: String) -> Failure {
        let recent = vfs.with_trace(|t| t.recent().iter().map(|e| t.describe(e)).collect());
        Failure { seed, op_index, check, detail, recent, repro, drew: None }
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

/// A panic carried from the thread it was raised on to another, where it
/// is raised again (`resume_unwind` runs no hook): its payload and the
/// place it was first raised. [`carry_panic_place`] makes one.
pub struct PlacedPanic {
    /// The original payload.
    pub payload: Box<dyn Any + Send>,
    /// Where it was raised: `file:line`.
    pub place: String,
}

thread_local! {
    /// Where the last panic on this thread was raised, noted by the hook.
    static LAST_PANIC_PLACE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install, once per process, a panic hook that notes on the panicking
/// thread where the panic was raised and then does what the hook before
/// it did (print it).
fn note_panic_places() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let place = info.location().map(|at| format!("{}:{}", short_source_path(at.file()), at.line()));
            // A thread being torn down has no locals left to note in.
            let _ = LAST_PANIC_PLACE.try_with(|last| *last.borrow_mut() = place);
            previous(info);
        }));
    });
}

/// A source path as a reader wants it: a dependency's from its crate's
/// folder (`persy-1.8.1/src/device.rs`), not from cargo's registry.
fn short_source_path(file: &str) -> &str {
    match file.split_once("/registry/src/") {
        Some((_, index_and_crate)) => index_and_crate.split_once('/').map_or(index_and_crate, |(_, path)| path),
        None => file,
    }
}

/// Take the place of the last panic raised on this thread, if any.
fn take_panic_place() -> Option<String> {
    LAST_PANIC_PLACE.try_with(|last| last.borrow_mut().take()).ok().flatten()
}

/// A panic caught on the thread it was raised on, made ready to be raised
/// again on another (an engine's own thread handing its panic to the
/// kit's): the place this thread noted goes with it, so the kit's report
/// and shrinker see where it was raised.
pub fn carry_panic_place(panic: Box<dyn Any + Send>) -> Box<dyn Any + Send> {
    if panic.is::<PlacedPanic>() {
        return panic;
    }
    match take_panic_place() {
        Some(place) => Box::new(PlacedPanic { payload: panic, place }),
        None => panic,
    }
}

/// A panic's message, for a report.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(placed) = panic.downcast_ref::<PlacedPanic>() {
        return panic_message(placed.payload.as_ref());
    }
    if let Some(refused) = panic.downcast_ref::<EnvironmentRefused>() {
        return format!("the environment refused: {}", refused.what);
    }
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic with no message".to_string())
}

/// The place a caught panic's message names (what [`catch_panic`] and
/// [`catch_failure`] append), if it names one.
pub fn panic_place(detail: &str) -> Option<&str> {
    let (_, rest) = detail.rsplit_once(PLACE_OPEN)?;
    rest.strip_suffix(')')
}

const PLACE_OPEN: &str = " (panicked at ";

/// Run `f`, catching a panic: its payload and the place it was raised.
fn catch_placed<T>(f: impl FnOnce() -> T) -> Result<T, (Box<dyn Any + Send>, Option<String>)> {
    note_panic_places();
    let _stale = take_panic_place();
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let noted = take_panic_place();
        match panic.downcast::<PlacedPanic>() {
            Ok(placed) => (placed.payload, Some(placed.place)),
            Err(panic) => (panic, noted),
        }
    })
}

/// A panic's message with its place, if known.
fn placed_message(panic: &(dyn Any + Send), place: Option<String>) -> String {
    let message = panic_message(panic);
    match place {
        Some(place) => format!("{message}{PLACE_OPEN}{place})"),
        None => message,
    }
}

/// Run `f`, turning a panic into `Err(message)` (with its place): a panic
/// in the engine is a finding of the seed that caused it, never the end
/// of a sweep.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_placed(f).map_err(|(panic, place)| placed_message(panic.as_ref(), place))
}

/// Run `f`, turning a panic into the check it fails and its message (with
/// its place): [`Check::Refused`] for an [`EnvironmentRefused`] (no place:
/// the refusal names its call), [`Check::Panic`] for any other.
pub fn catch_failure<T>(f: impl FnOnce() -> T) -> Result<T, (Check, String)> {
    catch_placed(f).map_err(|(panic, place)| {
        if panic.is::<EnvironmentRefused>() {
            (Check::Refused, panic_message(panic.as_ref()))
        } else {
            (Check::Panic, placed_message(panic.as_ref(), place))
        }
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
    fn a_panic_becomes_its_message_and_place() {
        assert_eq!(catch_panic(|| 7), Ok(7));
        let line = line!() + 1;
        let caught = catch_panic(|| panic!("boom {}", 1)).unwrap_err();
        assert_eq!(caught, format!("boom 1 (panicked at simulator/src/failure.rs:{line})"));
        assert_eq!(panic_place(&caught), Some(format!("simulator/src/failure.rs:{line}").as_str()));
        let caught = catch_panic(|| std::panic::panic_any(5u8)).unwrap_err();
        assert!(caught.starts_with("a panic with no message (panicked at simulator/src/failure.rs:"), "{caught}");
        assert_eq!(panic_place("an error, no panic"), None);
    }

    #[test]
    fn a_panic_carried_from_another_thread_keeps_its_place() {
        let line = line!() + 3;
        let caught = catch_panic(|| {
            let carried =
                std::thread::spawn(|| catch_placed_raw(|| panic!("far away")).map_err(carry_panic_place).unwrap_err());
            std::panic::resume_unwind(carried.join().expect("the thread returns its panic"))
        });
        assert_eq!(caught, Err::<(), _>(format!("far away (panicked at simulator/src/failure.rs:{line})")));
    }

    /// `catch_unwind` alone, as an engine's own thread does it.
    fn catch_placed_raw<T>(f: impl FnOnce() -> T) -> Result<T, Box<dyn Any + Send>> {
        catch_unwind(AssertUnwindSafe(f))
    }

    #[test]
    fn registry_paths_are_cut_to_the_crate() {
        let file = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/persy-1.8.1/src/device.rs";
        assert_eq!(short_source_path(file), "persy-1.8.1/src/device.rs");
        assert_eq!(short_source_path("simulator/src/failure.rs"), "simulator/src/failure.rs");
    }

    #[test]
    fn an_environment_refusal_is_its_own_check() {
        let refused = EnvironmentRefused { what: "mmap of /db/f".to_string() };
        let caught = catch_failure(|| std::panic::panic_any(refused));
        assert_eq!(caught, Err::<(), _>((Check::Refused, "the environment refused: mmap of /db/f".to_string())));
        let (check, detail) = catch_failure(|| panic!("boom")).unwrap_err();
        assert_eq!(check, Check::Panic);
        assert!(detail.starts_with("boom (panicked at simulator/src/failure.rs:"), "{detail}");
    }
}
