//! The seam between the harness and a system under test: the [`Target`]
//! trait and every type that crosses it.
//!
//! A target is whatever can do the few things the random mode, the
//! shrinker and the explorer need, and nothing more:
//!
//! - **generate** a seed's operation list (all randomness from the seed);
//! - **run** an operation list on a fresh simulated disk and report a
//!   [`SeedOutcome`] — the same counters, failure and trace hash for every
//!   target, so `summary.rs`, `--json`, `sim merge`,
//!   `--check-determinism` and sharding work unchanged;
//! - **print and parse** one operation per line, and name the settings
//!   that pin a run beyond its seed (the `.ops` files of `--shrink --save`
//!   and `--replay`, see `crate::shrink`);
//! - for `sim explore`: **record** one fault-free run with a snapshot of
//!   the disk before every I/O and what a recovery there is held to, then
//!   **recover** a crash image and **judge** what came back
//!   (`crate::explore` is the one explorer: enumerate, dedupe, recover in
//!   parallel, report).
//!
//! What only some targets can do is a capability, a trait of its own the
//! target opts into by implementing it and returning `Some(self)` from
//! its accessor (default `None`, and the explorer refuses the flag):
//! [`ExploreDepth2`] (`--depth 2`: record a recovery to crash it again),
//! [`ExploreFaults`] (`--faults`: recover and run with an I/O failing),
//! [`ExploreDamage`] (`--damage`: name the records of an image and recover
//! it with one damaged). The explorer's core — recover a crash image,
//! judge it — is `crate::explore::CrashCheck`, which a target at one seed
//! is (`explore::AtSeed`) and which `sim trace` implements for a recording.
//!
//! The trait keeps the target's own types (its operation, its checker
//! context, what a recovery returns) as associated types, so each target
//! keeps its own vocabulary. This file sits low in the crate, beside the
//! disk it names: the harness (explore, shrink, report, the kit) builds on
//! it, and the targets themselves (`crate::systems`) implement it; which
//! targets exist is the command line's registry (`crate::cli`), not this
//! file's business.

use std::fmt;

use crate::disk::{ArmedFault, DiskImage, DiskRecording, FsProfile};
use crate::failure::{Check, Failure};
use crate::outcome::SeedOutcome;

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
    /// first recorded I/O. Operations that do no I/O begin a context no
    /// index falls in, which is right: power cannot fail between two I/Os
    /// twice.
    pub contexts: Vec<RecordedContext<C>>,
    /// The recording run itself failed: the check and why. Nothing is
    /// explored then.
    pub failure: Option<(Check, String)>,
    /// The I/O indices of the recorded run where an armed fault could
    /// fire (`sim explore --faults` fails each in a run of its own,
    /// [`ExploreFaults::run_with_fault`]) ...
    pub faultable_ios: Vec<u64>,
    /// ... and the writes among them.
    pub faultable_writes: Vec<u64>,
    /// The recording run's whole trace, if it kept one (recorded inside
    /// `crate::trace::keeping_all_for_report`, for `--report`).
    pub trace: Option<crate::trace::Trace>,
    /// Every run of a declared operation ([`Target::explore_declared`])
    /// in the recording, in order.
    pub operations: Vec<RecordedOperation>,
}

/// What a target declares its workload is there to reach, for `sim
/// explore`'s account of what the recorded workload reached
/// (`explore/reach.rs`): a phase its engine marks, or an operation of its
/// workload (a kit engine's maintenance, segsim's evict, rewrite and sync).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// A phase or an operation.
    pub kind: DeclaredKind,
    /// As the engine marks it, or as an operation line prints it.
    pub name: String,
    /// Whether the seed's workload can draw it at all: `false` for an
    /// operation the seed's swarm switched off, which only another seed
    /// reaches. A phase: `true` (the engine decides when it marks one).
    pub drawable: bool,
}

/// What a [`Declared`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeclaredKind {
    /// A phase the engine marks (`Vfs::mark`): reached
    /// each time it is marked, at the crash index of the I/O that follows.
    Phase,
    /// A workload operation: reached each time it runs, over the crash
    /// indices of its I/Os.
    Operation,
}

impl DeclaredKind {
    /// The word reports use.
    pub fn name(self) -> &'static str {
        match self {
            DeclaredKind::Phase => "phase",
            DeclaredKind::Operation => "operation",
        }
    }
}

/// One run of a declared operation in a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedOperation {
    /// [`Declared::name`].
    pub name: String,
    /// Its crash indices: power lost just before each of its I/Os (empty
    /// if it did none).
    pub io_indices: std::ops::Range<u64>,
}

impl<C> Recording<C> {
    /// The context of crash index `io_index`: the last one begun at or
    /// before it.
    pub fn context_at(&self, io_index: u64) -> usize {
        context_at(&self.contexts, io_index)
    }
}

/// The last of `contexts` (in order of `first_io_index`) begun at or
/// before `io_index` (the first, if none is).
pub(crate) fn context_at<C>(contexts: &[RecordedContext<C>], io_index: u64) -> usize {
    let after = contexts.partition_point(|c| c.first_io_index <= io_index);
    after.saturating_sub(1)
}

/// One recovery of a crash image recorded for `sim explore --depth 2`:
/// the same open (and probe) as [`Target::recover`], on a disk that keeps
/// a snapshot before every I/O, so that the explorer can crash it again.
///
/// Crash indices below `recovered_at_io` fall inside the recovery itself:
/// nothing was returned to anyone yet, so what a second recovery brings
/// back is held to the contexts the crash image itself was judged in.
/// From `recovered_at_io` on, the recovered system is in use (the probe),
/// and each crash index is judged by the context noted there.
#[derive(Clone, Debug)]
pub struct RecoveryRecording<C> {
    /// The disk before every I/O of the recovery and of what follows it;
    /// its indices start at 0 (a fresh disk holding the image).
    pub disk: DiskRecording,
    /// The first crash index after the recovery returned; every index if
    /// it never did (a refused open).
    pub recovered_at_io: u64,
    /// In order of `first_io_index`, all at or after `recovered_at_io`.
    pub contexts: Vec<RecordedContext<C>>,
}

impl<C> RecoveryRecording<C> {
    /// The context of crash index `io_index`, or `None` if it falls inside
    /// the recovery itself (judged in the crash image's own contexts).
    pub fn context_at(&self, io_index: u64) -> Option<usize> {
        if io_index < self.recovered_at_io || self.contexts.is_empty() {
            return None;
        }
        Some(context_at(&self.contexts, io_index))
    }
}

/// One recovery with one I/O failing (`sim explore --faults`): what it
/// returned, whether the armed fault fired (the I/O at that index was a
/// I/O of any kind but one the harness made observing), and — for a recovery with no fault armed — the
/// I/O indices where one could have fired.
#[derive(Clone, Debug)]
pub struct FaultedRecovery<R> {
    /// What the recovery returned (the target's own result type).
    pub recovered: R,
    /// The armed fault fired: the I/O at its index happened and failed.
    pub fired: bool,
    /// With no fault armed, the indices of the I/Os a fault can be armed
    /// at (the harness's observing I/Os left out); empty otherwise.
    pub faultable_ios: Vec<u64>,
    /// Of `faultable_ios`, the writes (where a short write or ENOSPC can
    /// be armed too).
    pub faultable_writes: Vec<u64>,
}

/// One place to damage in a durable image (`sim explore --damage`): these
/// bytes written over the file at `path` from `offset_bytes` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamageSite {
    /// The file's full path on the simulated disk.
    pub path: std::path::PathBuf,
    /// Where the bad bytes start.
    pub offset_bytes: u64,
    /// The bad bytes: what the file holds from `offset_bytes` on (any
    /// past its end grow it, as a write that grew the file and landed
    /// elsewhere leaves it).
    pub bytes: Vec<u8>,
    /// What the disk announces the damage as (media corruption, a lost
    /// write, a misdirected one; the floor after each is the same).
    pub kind: crate::disk::DamageKind,
    /// For a person: which record, and how it is damaged.
    pub what: String,
    /// The kind of record damaged, one of those the target declares in
    /// [`ExploreDamage::damage_ways`] (the reach report counts by it).
    pub record_kind: &'static str,
}

/// A kind of record a target damages under `sim explore --damage`, and
/// the ways it damages one wherever the durable image allows (the reach
/// report says which ways never applied in a recording, and why that
/// matters: a way never applied is a rule never tested at that seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DamageWays {
    /// The record kind, as sites name it ([`DamageSite::record_kind`]).
    pub record_kind: &'static str,
    /// What each way is announced as (media rot, a lost write, a
    /// misdirected one), in the order the report lists them.
    pub ways: &'static [crate::disk::DamageKind],
}

/// How a damaged image's recovery passed (`sim explore --damage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamageVerdict {
    /// The open refused the damage, changing nothing.
    Refused,
    /// The open went through, holding a state the rule allows.
    Opened,
}

/// One run of the recorded workload with one I/O failing (`sim explore
/// --faults`): its failure, if any, and whether the armed fault fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultedRun {
    /// The check the run failed, and its detail; `None` if it passed.
    pub failure: Option<(Check, String)>,
    /// The armed fault fired: the I/O at its index happened and failed.
    pub fired: bool,
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

    /// Which target this is (`--target NAME`, `.ops` files, reports).
    fn name(&self) -> &'static str;

    /// Whether this is the built-in binary's default target, which
    /// commands and `.ops` files need not name.
    fn is_default(&self) -> bool {
        false
    }

    /// The settings that pin a run beyond its seed (forced crash mode, a
    /// planted bug, ...), as `key value` lines of an `.ops` file header;
    /// an empty value is a line with the key alone.
    fn settings(&self) -> Vec<(&'static str, String)>;

    /// This target with one setting read back from an `.ops` file (`value`
    /// empty for a line with the key alone).
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

    /// The file-system profile the disk follows (`--fs`): the one a
    /// verdict holds under, named in every summary.
    fn fs_profile(&self) -> FsProfile;

    /// The workload `sim explore` records for `seed`: `ops` operations,
    /// crash points dropped (every point is explored).
    fn explore_workload(&self, seed: u64, ops: u64) -> Vec<Self::Op>;

    /// The command line that explores `seed`'s `ops`-operation workload
    /// with these settings again, then `extra` (`--only-io I`, ...).
    fn explore_repro(&self, seed: u64, ops: u64, extra: &str) -> String;

    /// The sector size of `seed`'s disk (where explored writes are cut).
    fn sector_bytes(&self, seed: u64) -> u64;

    /// What `seed` drew, in one line, for reports (`drew: ...`): a kit
    /// target's configuration (the kit's `KitConfig::drew`). Default:
    /// nothing.
    fn drew(&self, _seed: u64) -> Option<String> {
        None
    }

    /// What this run, as configured, leaves unchecked that the target
    /// declares it could check (a kit engine's readers without
    /// `--clients`), said once before a sweep so a promise nobody checks
    /// does not pass unnoticed. None by default.
    fn unchecked(&self) -> Option<String> {
        None
    }

    /// What an exploration report states about `seed`'s run besides its
    /// sector size, as `key value` (segsim: the fsync policy the store ran
    /// with); the JSON report carries each as a field.
    fn explore_facts(&self, _seed: u64) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The phases and operations `seed`'s workload is there to reach
    /// (see [`Declared`]): `sim explore` says how often the recording
    /// reached each and how many crash states it explored there, and warns
    /// of each it never reached. Default: none.
    fn explore_declared(&self, _seed: u64) -> Vec<Declared> {
        Vec::new()
    }

    /// Whether crash states with a torn sector holding garbage are
    /// explored (they are skipped, keeping their numbers, when not).
    fn torn_garbage(&self) -> bool {
        true
    }

    /// Whether exploration also enumerates one file's writes reordered
    /// (`disk/crash_states.rs`, family 4). The kit's targets do: a
    /// one-file engine's ordering mistakes live there.
    fn explores_reorderings(&self) -> bool {
        false
    }

    /// Run `workload` once, fault-free, on a disk that keeps a snapshot
    /// before every I/O, noting the context of every operation.
    fn record(&self, seed: u64, workload: &[Self::Op]) -> Recording<Self::Context>;

    /// What a recovery depends on besides the image (a clock, say): two
    /// crash states with the same image and key are recovered once.
    fn recovery_key(&self, context: &Self::Context) -> u64;

    /// Open the system on `image` (recovery key `key`) and take what it
    /// returns, plus whatever follow-up checks need no context. Never
    /// panics. Called on the explorer's worker threads.
    fn recover(&self, seed: u64, image: &DiskImage, key: u64) -> Self::Recovered;

    /// Whether `recovered` is allowed in `context`: `Err((check, detail))`.
    fn judge(&self, recovered: &Self::Recovered, context: &Self::Context) -> Result<(), (Check, String)>;

    /// `sim explore --depth 2`'s capability, if this target has it: it
    /// records a recovery so that the explorer can crash it again.
    /// `Some(self)` from a target that implements [`ExploreDepth2`]; `None`
    /// (the default) refuses `--depth 2`.
    fn depth2(&self) -> Option<&dyn ExploreDepth2<Self::Context>> {
        None
    }

    /// `sim explore --faults`' capability, if this target has it: it
    /// recovers, and runs its workload, with one I/O failing. `Some(self)`
    /// from a target that implements [`ExploreFaults`]; `None` (the
    /// default) refuses `--faults`.
    fn faults(&self) -> Option<&dyn ExploreFaults<Self::Op, Self::Recovered>> {
        None
    }

    /// `sim explore --damage`'s capability, if this target has it: it
    /// names its files' records and recovers them damaged. `Some(self)`
    /// from a target that implements [`ExploreDamage`]; `None` (the
    /// default) refuses `--damage`.
    fn damage(&self) -> Option<&dyn ExploreDamage<Self::Context>> {
        None
    }
}

/// `sim explore --depth 2` (`explore/depth2.rs`): a target that records
/// a recovery, so that the explorer can crash it again. A [`Target`]
/// holds it through [`Target::depth2`].
pub trait ExploreDepth2<C>: Sync {
    /// For `sim explore --depth 2`: [`Target::recover`] once more, on a
    /// disk that keeps a snapshot before every I/O, noting where the
    /// recovery returned and the context of every later operation (see
    /// [`RecoveryRecording`]). Called on the explorer's worker threads.
    /// Never panics.
    fn record_recovery(&self, seed: u64, image: &DiskImage, key: u64) -> RecoveryRecording<C>;
}

/// `sim explore --faults` (`explore/faults.rs`): a target that recovers,
/// and runs its recorded workload, with one I/O failing. A [`Target`]
/// holds it through [`Target::faults`].
pub trait ExploreFaults<Op, R>: Sync {
    /// For `sim explore --faults`: [`Target::recover`] once more, with the
    /// I/O (of any kind) at index `fault.0` of the recovery and
    /// probe failing as `fault.1` says (EIO; a write also short or out of
    /// space) (`None`: no fault, noting the indices where one could
    /// fire). The
    /// system must treat the error as what it is — a failed open retried,
    /// a poisoned store recovered — and the result is judged in the image's
    /// own contexts. Called on the explorer's worker threads. Never panics.
    fn recover_with_fault(
        &self,
        seed: u64,
        image: &DiskImage,
        key: u64,
        fault: Option<(u64, ArmedFault)>,
    ) -> FaultedRecovery<R>;

    /// For `sim explore --faults`: run `workload` as [`Target::record`]
    /// does, but without snapshots, with the I/O at `fault.0` (one of
    /// [`Recording::faultable_ios`]) failing as `fault.1` says. The system
    /// must handle the error as the random mode requires — a failed write
    /// not acknowledged, a poisoned store recovered (killed, reopened, then
    /// the power lost, each recovery checked) — and every check of the run
    /// applies. Called on the explorer's worker threads. Never panics.
    fn run_with_fault(&self, seed: u64, workload: &[Op], fault: (u64, ArmedFault)) -> FaultedRun;

    /// For `sim explore --faults`: whether a recovery with an injected
    /// fault (`faulted`) brought back what the same image's recovery with
    /// none (`plain`) did, where both opened — a transient error may fail
    /// an open, never change what it recovers (every other outcome is
    /// [`Target::judge`]'s). `Err((check, detail))`.
    fn same_recovery(&self, faulted: &R, plain: &R) -> Result<(), (Check, String)>;
}

/// `sim explore --damage` (`explore/damage.rs`): a target that names where
/// the records of a durable image lie and recovers the image with one of
/// them damaged. A [`Target`] holds it through [`Target::damage`].
pub trait ExploreDamage<C>: Sync {
    /// Where the records of `image` (a durable image of `seed`'s
    /// recording) lie, each with a way to damage it, in a fixed order
    /// (none where `seed`'s configuration promises nothing about damage).
    fn damage_sites(&self, seed: u64, image: &DiskImage) -> Vec<DamageSite>;

    /// Where the writes in flight at one crash index of `seed`'s recording
    /// (`in_flight`: issued to files `image` names, not yet fsynced; `image`
    /// its durable image) damage `image` when the drive writes one back at
    /// another record's place (the fault model's misdirected write), in a
    /// fixed order. Asked at every crash index with writes in flight, also
    /// where `image` was first seen earlier: the sites new at an index are
    /// recovered in that index's context. None by default.
    fn in_flight_damage_sites(
        &self,
        _seed: u64,
        _image: &DiskImage,
        _in_flight: &[crate::disk::InFlightWrite<'_>],
    ) -> Vec<DamageSite> {
        Vec::new()
    }

    /// Every kind of record [`ExploreDamage::damage_sites`] names, with
    /// the ways it damages one: what the reach report holds each
    /// recording to (a way that applied to no record of any durable image
    /// is warned about).
    fn damage_ways(&self) -> &'static [DamageWays];

    /// Whether a damaged image is opened a second way, as an operator
    /// cutting at the damage would (a point in time); a target with no
    /// such mode opens it the default way only.
    fn opens_at_a_point_in_time(&self) -> bool;

    /// Open `image`, damaged as the disk announced in `damage`, the
    /// default way or (`point_in_time`, only if
    /// [`ExploreDamage::opens_at_a_point_in_time`]) as an operator cutting
    /// at the damage would, at the recovery key of `context`, and judge it
    /// by the random mode's rule after announced damage in `context`.
    /// Called on the explorer's worker threads. Never panics.
    fn recover_damaged(
        &self,
        seed: u64,
        image: &DiskImage,
        damage: &crate::disk::Damage,
        point_in_time: bool,
        context: &C,
    ) -> Result<DamageVerdict, (Check, String)>;
}

/// Run `seed`'s generated workload.
pub fn run_seed<T: Target>(target: &T, seed: u64, keep_trace: bool) -> SeedOutcome {
    target.run(seed, &target.generate(seed), keep_trace)
}

/// Run one seed, or twice with `check_determinism`: a second run whose
/// trace, written bytes or failure differs fails the seed with check
/// `determinism`.
pub fn run_checked<T: Target>(seed: u64, target: &T, check_determinism: bool) -> SeedOutcome {
    let mut outcome = run_seed(target, seed, false);
    if check_determinism {
        let again = run_seed(target, seed, false);
        let same_failure = outcome.failure.as_ref().map(|f| (f.check, f.op_index))
            == again.failure.as_ref().map(|f| (f.check, f.op_index));
        let same_trace = (again.trace_hash, again.written_hash) == (outcome.trace_hash, outcome.written_hash);
        if (!same_trace || !same_failure) && outcome.failure.is_none() {
            outcome.failure = Some(Failure {
                seed,
                op_index: 0,
                check: Check::Determinism,
                detail: format!(
                    "two runs of the seed differ: trace hash {:016x} vs {:016x}, written bytes' hash {:016x} vs {:016x}",
                    outcome.trace_hash, again.trace_hash, outcome.written_hash, again.written_hash
                ),
                recent: Vec::new(),
                repro: target.repro(seed, " --check-determinism"),
                drew: outcome.drew.clone(),
            });
        }
    }
    outcome
}

/// The first test of any target (a kit adapter's especially): each of
/// `seeds` runs without a failure, does some operations, and runs again to
/// the same trace hash. Panics, naming the seed, where one does not.
pub fn assert_seeds_pass_and_replay<T: Target>(target: &T, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let first = run_seed(target, seed, false);
        assert!(first.failure.is_none(), "{} seed {seed}: {:?}", target.name(), first.failure);
        assert!(first.counters.ops > 0, "{} seed {seed} ran no operation", target.name());
        let again = run_seed(target, seed, false);
        assert_eq!(
            (first.trace_hash, first.written_hash),
            (again.trace_hash, again.written_hash),
            "{} seed {seed} does not replay bit for bit (trace hash, written bytes' hash)",
            target.name()
        );
    }
}

/// A replayed `.ops` file: how many operations it holds, and the failure
/// its run found, if any.
pub type Replayed = (usize, Option<Failure>);
