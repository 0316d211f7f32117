//! Exploring as a capability: [`CrashCheck`], what the explorer's plan
//! and its parallel check (`check_all.rs`) need of whatever they explore,
//! and [`CheckAt`], where in the plan each check stands.
//!
//! Two explorers share the plan (`plan.rs`: every crash state of every
//! I/O index, deduplicated by image and recovery key, then by image and
//! context) and the check (each distinct image recovered once, on
//! `--jobs` threads, and judged in each context it appeared in, merged in
//! plan order so the result does not depend on the thread count): `sim
//! explore`, for a [`Target`] at one seed ([`AtSeed`]), and `sim trace
//! explore`, for a recording whose crash states a command outside the
//! process judges (`simtrace`). What differs lives with each: the
//! recording, how a crash image is recovered, what a verdict is, the
//! report.

use crate::disk::DiskImage;
use crate::failure::Check;
use crate::seam::Target;

/// One check of a recovered image: against the context numbered
/// `context`, where crash index `io_index`'s state number `state` first
/// gave this image in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckAt {
    /// The context's number among the recording's.
    pub context: usize,
    /// The crash index: the power was lost just before this I/O.
    pub io_index: u64,
    /// The state's number among that index's crash states.
    pub state: usize,
}

/// What the explorer's plan and check need of a system whose crash states
/// they check (see the module doc).
pub trait CrashCheck: Sync {
    /// What a recovery at one crash index is held to (segsim: what was
    /// acknowledged and known durable; `sim trace`: what the program had
    /// printed).
    type Context: Sync;
    /// What recovering one crash image returned.
    type Recovered: Send;

    /// Whether crash states with a torn sector holding garbage are
    /// explored (they are skipped, keeping their numbers, when not).
    fn torn_garbage(&self) -> bool;

    /// What a recovery depends on besides the image: two crash states
    /// with the same image and key are recovered once.
    fn recovery_key(&self, context: &Self::Context) -> u64;

    /// Recover `image` (recovery key `key`), first met at `first` (crash
    /// index and state number, for a recovery that names the state it
    /// checks). Called on the explorer's worker threads. Never panics.
    fn recover(&self, image: &DiskImage, key: u64, first: &CheckAt) -> Self::Recovered;

    /// Whether `recovered` is allowed in `context`: `Err((check, detail))`.
    fn judge(&self, recovered: &Self::Recovered, context: &Self::Context) -> Result<(), (Check, String)>;
}

/// A [`Target`] explored at one seed: the seed is every recovery's.
pub struct AtSeed<'t, T> {
    /// The target.
    pub target: &'t T,
    /// The seed whose recording is explored.
    pub seed: u64,
}

impl<T: Target> CrashCheck for AtSeed<'_, T> {
    type Context = T::Context;
    type Recovered = T::Recovered;

    fn torn_garbage(&self) -> bool {
        self.target.torn_garbage()
    }

    fn recovery_key(&self, context: &T::Context) -> u64 {
        self.target.recovery_key(context)
    }

    fn recover(&self, image: &DiskImage, key: u64, _first: &CheckAt) -> T::Recovered {
        self.target.recover(self.seed, image, key)
    }

    fn judge(&self, recovered: &T::Recovered, context: &T::Context) -> Result<(), (Check, String)> {
        self.target.judge(recovered, context)
    }
}
