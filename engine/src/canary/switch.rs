//! The canary switch: which planted bug is on for this thread.
//!
//! A thread-local, not a global: `sim --jobs N` runs seeds on N threads,
//! each with its own canary (or none). Only the engine reads it (through
//! `canary!`); the simulator sets it once per seed run and clears it
//! afterwards, so the workload, the fault model and the checker cannot
//! know a bug is planted, and a catch is an honest catch.

use std::cell::Cell;

/// One planted bug. The comment on each variant says what the engine then
/// does wrong; [`Canary::description`] says the same in one line for the
/// table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Canary {
    /// Seal ADDs a segment to the manifest without fsyncing its data.
    SegNoFsync,
    /// Seal never fsyncs the directory: the segment's name is not durable.
    SealNoDirSync,
    /// `SEGMENTED` is logged before the segment is durably registered.
    FrameBeforeRegister,
    /// Commit also turns the table's out-of-window rows that seal filtered
    /// out (TTL-bearing) into stubs of a segment that does not hold them.
    GhostStubs,
    /// Open resumes appending at the end of a torn AOF tail instead of
    /// cutting it: every later write lands after an invalid frame.
    AppendAfterTornTail,
    /// Replay skips an invalid AOF frame and applies the frames after it.
    ReplayPastInvalid,
    /// A failed AOF fsync is retried, and the retry's success believed.
    FsyncRetry,
    /// Rewrite renames its temp log over the AOF without fsyncing it.
    RewriteNoFsync,
    /// Rewrite retires segments before a directory fsync makes its rename
    /// durable.
    RewriteNoDirSync,
    /// Promoting a cold row does not count its segment record dead.
    PromoteNotDead,
    /// Segment reads return records without verifying their checksum.
    SegNoChecksum,
    /// Rewrite leaves key TTLs out of the new log.
    RewriteDropsTtl,
    /// `everysec` never fsyncs (only barriers do).
    EverysecNoFsync,
    /// Replay's stitch inserts stubs for absent keys but leaves hot rows
    /// hot.
    StitchAbsentOnly,
    /// Open's sweep also drops registered segments without live stubs,
    /// though the log still names them.
    SweepNamedSegment,
    /// FLUSHALL retires every segment before its rewrite is durable.
    FlushallRetireEarly,
    /// The manifest resumes appending after a torn tail instead of
    /// cutting it.
    ManifestTailKept,
    /// Recovery trusts a single read of the log: a transient bit flip
    /// passes for a torn tail and a healthy log is cut.
    SingleReadRecovery,
    /// A failed AOF write (EIO, ENOSPC) is acknowledged as if it had been
    /// logged.
    AckFailedAppend,
    /// A log that fails to read at open (EIO) is taken for an empty one.
    ReadErrorEmptyLog,
    /// Damage to durable log frames (an invalid frame that a later `SYNCED`
    /// mark vouches for) is cut as a torn tail instead of refused.
    CutVouchedDamage,
    /// A missing log beside an existing manifest is taken for a new store.
    MissingLogIsEmpty,
    /// Open sweeps orphan segments even after a point-in-time cut, whose
    /// cut frames may have been the ones naming them.
    SweepAfterDamage,
    /// Rewrite leaves the windows' high-water marks out of the new log.
    RewriteDropsHwm,
    /// Recovery does not fsync what it replayed when it cut nothing: a
    /// dead process's unsynced page cache is built on as if durable.
    RecoveryNoFsync,
    /// A new segment's seq is one past the highest live one: a dropped
    /// seq is used again.
    SeqFromLiveSet,
    /// Recovery's cut of a torn tail is not fsynced before the store
    /// appends.
    CutNoFsync,
    /// Manifest compaction renames its new ledger over `MANIFEST` before
    /// fsyncing it: a power loss may keep the rename and lose the bytes.
    CompactRenameBeforeFsync,
    /// `HLEN` of a cold row answers from the stub's accounting (its
    /// weight) instead of counting the row's fields in its segment.
    HlenStubWeight,
    /// A failed directory fsync in seal is ignored: the segment is
    /// registered and logged though its name may not be durable.
    DirSyncErrorIgnored,
    /// A failed rename of the rewrite's new log is ignored: the store goes
    /// on with the new log under its temp name and retires segments the
    /// old log, still the one named, needs.
    RenameErrorIgnored,
    /// Log recovery fsyncs the log but not its directory: a name the dead
    /// process never made durable (a rewrite's rename) is built on.
    RecoveryNoDirSync,
    /// A read-only open cuts the torn log tail it finds.
    ReadOnlyCutsTail,
    /// The quarantine copy's directory entry is not made durable before
    /// the log's cut is: masked by recovery's own directory fsync right
    /// after the cut.
    QuarantineNoDirSync,
    /// The AOF frame checksum leaves out the frame's place (its offset):
    /// a whole frame a misdirected write put elsewhere in the log replays.
    AofPlaceIgnored,
    /// A rewrite's log whose snapshot has no `SNAPSHOT_END` (the last
    /// batch's write was lost) is read as if the snapshot ended where the
    /// valid frames do, and damage inside it as a torn tail: the seed-6503
    /// bug (then a header the rewrite never finished), in format 4.
    UnfinishedRewriteRead,
    /// `PEXPIREAT`/`HPEXPIREAT` with a deadline equal to the clock set a
    /// TTL instead of deleting (the old `at < now`; Redis deletes at
    /// `at <= now`).
    ExpireAtNowKept,
    /// The manifest's record checksum leaves out the record's place: a
    /// record misdirected onto the place of the record before it replays
    /// there (a ledger no prefix of the manifest held).
    ManifestPlaceIgnored,
}

impl Canary {
    /// Every canary, in table order.
    pub const ALL: [Canary; 38] = [
        Canary::SegNoFsync,
        Canary::SealNoDirSync,
        Canary::FrameBeforeRegister,
        Canary::GhostStubs,
        Canary::AppendAfterTornTail,
        Canary::ReplayPastInvalid,
        Canary::FsyncRetry,
        Canary::RewriteNoFsync,
        Canary::RewriteNoDirSync,
        Canary::PromoteNotDead,
        Canary::SegNoChecksum,
        Canary::RewriteDropsTtl,
        Canary::EverysecNoFsync,
        Canary::StitchAbsentOnly,
        Canary::SweepNamedSegment,
        Canary::FlushallRetireEarly,
        Canary::ManifestTailKept,
        Canary::SingleReadRecovery,
        Canary::AckFailedAppend,
        Canary::ReadErrorEmptyLog,
        Canary::CutVouchedDamage,
        Canary::MissingLogIsEmpty,
        Canary::SweepAfterDamage,
        Canary::RewriteDropsHwm,
        Canary::RecoveryNoFsync,
        Canary::SeqFromLiveSet,
        Canary::CutNoFsync,
        Canary::CompactRenameBeforeFsync,
        Canary::HlenStubWeight,
        Canary::DirSyncErrorIgnored,
        Canary::RenameErrorIgnored,
        Canary::RecoveryNoDirSync,
        Canary::ReadOnlyCutsTail,
        Canary::QuarantineNoDirSync,
        Canary::AofPlaceIgnored,
        Canary::UnfinishedRewriteRead,
        Canary::ExpireAtNowKept,
        Canary::ManifestPlaceIgnored,
    ];

    /// The kebab-case name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            Canary::SegNoFsync => "seg-no-fsync",
            Canary::SealNoDirSync => "seal-no-dir-sync",
            Canary::FrameBeforeRegister => "frame-before-register",
            Canary::GhostStubs => "ghost-stubs",
            Canary::AppendAfterTornTail => "append-after-torn-tail",
            Canary::ReplayPastInvalid => "replay-past-invalid",
            Canary::FsyncRetry => "fsync-retry",
            Canary::RewriteNoFsync => "rewrite-no-fsync",
            Canary::RewriteNoDirSync => "rewrite-no-dir-sync",
            Canary::PromoteNotDead => "promote-not-dead",
            Canary::SegNoChecksum => "seg-no-checksum",
            Canary::RewriteDropsTtl => "rewrite-drops-ttl",
            Canary::EverysecNoFsync => "everysec-no-fsync",
            Canary::StitchAbsentOnly => "stitch-absent-only",
            Canary::SweepNamedSegment => "sweep-named-segment",
            Canary::FlushallRetireEarly => "flushall-retire-early",
            Canary::ManifestTailKept => "manifest-tail-kept",
            Canary::SingleReadRecovery => "single-read-recovery",
            Canary::AckFailedAppend => "ack-failed-append",
            Canary::ReadErrorEmptyLog => "read-error-empty-log",
            Canary::CutVouchedDamage => "cut-vouched-damage",
            Canary::MissingLogIsEmpty => "missing-log-is-empty",
            Canary::SweepAfterDamage => "sweep-after-damage",
            Canary::RewriteDropsHwm => "rewrite-drops-hwm",
            Canary::RecoveryNoFsync => "recovery-no-fsync",
            Canary::SeqFromLiveSet => "seq-from-live-set",
            Canary::CutNoFsync => "cut-no-fsync",
            Canary::CompactRenameBeforeFsync => "compact-rename-before-fsync",
            Canary::HlenStubWeight => "hlen-stub-weight",
            Canary::DirSyncErrorIgnored => "dir-sync-error-ignored",
            Canary::RenameErrorIgnored => "rename-error-ignored",
            Canary::RecoveryNoDirSync => "recovery-no-dir-sync",
            Canary::ReadOnlyCutsTail => "read-only-cuts-tail",
            Canary::QuarantineNoDirSync => "quarantine-no-dir-sync",
            Canary::AofPlaceIgnored => "aof-place-ignored",
            Canary::UnfinishedRewriteRead => "unfinished-rewrite-read",
            Canary::ExpireAtNowKept => "expire-at-now-kept",
            Canary::ManifestPlaceIgnored => "manifest-place-ignored",
        }
    }

    /// The canary called `name`, if any.
    pub fn parse(name: &str) -> Option<Canary> {
        Canary::ALL.into_iter().find(|canary| canary.name() == name)
    }

    /// What the engine does wrong with this canary on, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Canary::SegNoFsync => "segment data not fsynced before the manifest ADD",
            Canary::SealNoDirSync => "seal skips the directory fsync: the segment's name is not durable",
            Canary::FrameBeforeRegister => "SEGMENTED logged before the segment is durably registered",
            Canary::GhostStubs => "commit stubs TTL-bearing rows the seal filtered out (ghost stubs)",
            Canary::AppendAfterTornTail => "open appends after a torn AOF tail without cutting it",
            Canary::ReplayPastInvalid => "replay skips an invalid frame and applies the frames after it",
            Canary::FsyncRetry => "a failed AOF fsync is retried and ignored; writes stay acknowledged",
            Canary::RewriteNoFsync => "rewrite renames the temp log without fsyncing it",
            Canary::RewriteNoDirSync => "rewrite retires segments before its rename is made durable",
            Canary::PromoteNotDead => "a promoted row's segment record is not counted dead",
            Canary::SegNoChecksum => "segment record reads skip checksum verification",
            Canary::RewriteDropsTtl => "rewrite drops key TTLs",
            Canary::EverysecNoFsync => "everysec never actually fsyncs",
            Canary::StitchAbsentOnly => "stitch inserts stubs for absent keys only; hot rows stay hot",
            Canary::SweepNamedSegment => "open's sweep drops a segment the log still names",
            Canary::FlushallRetireEarly => "FLUSHALL retires segments before its rewrite is durable",
            Canary::ManifestTailKept => "the manifest appends after a torn tail instead of cutting it",
            Canary::SingleReadRecovery => "recovery trusts one read: a transient bit flip cuts the log",
            Canary::AckFailedAppend => "a failed AOF write (EIO, ENOSPC) is acknowledged anyway",
            Canary::ReadErrorEmptyLog => "a log that fails to read at open (EIO) is taken for an empty one",
            Canary::CutVouchedDamage => "damage to durable log frames is cut as a torn tail, not refused",
            Canary::MissingLogIsEmpty => "a missing log beside an existing manifest opens as a new store",
            Canary::SweepAfterDamage => "open sweeps orphan segments after a point-in-time cut of damage",
            Canary::RewriteDropsHwm => "rewrite drops the windows' high-water marks: eviction changes after restart",
            Canary::RecoveryNoFsync => "recovery does not fsync what it replayed when it cut nothing",
            Canary::SeqFromLiveSet => "a new segment's seq is one past the highest live one (dropped seqs reused)",
            Canary::CutNoFsync => "recovery's cut of a torn tail is not fsynced before the next append",
            Canary::CompactRenameBeforeFsync => "manifest compaction renames its new ledger before fsyncing it",
            Canary::HlenStubWeight => "HLEN of a cold row counts from the stub's weight, not the segment's fields",
            Canary::DirSyncErrorIgnored => {
                "a failed directory fsync in seal is ignored (the segment's name may not be durable)"
            }
            Canary::RenameErrorIgnored => "a failed rename of the rewrite's log is ignored and segments are retired",
            Canary::RecoveryNoDirSync => {
                "log recovery fsyncs the log but not its directory (a dead process's rename built on)"
            }
            Canary::ReadOnlyCutsTail => "a read-only open cuts the torn log tail it finds",
            Canary::QuarantineNoDirSync => {
                "the quarantine copy's name is made durable only after the log's cut (masked)"
            }
            Canary::AofPlaceIgnored => "the AOF frame checksum ignores the frame's offset (misdirected frames replay)",
            Canary::UnfinishedRewriteRead => {
                "a rewrite's log whose snapshot has no end (its last batch lost) is read as ending where it stops"
            }
            Canary::ExpireAtNowKept => "PEXPIREAT/HPEXPIREAT at exactly the clock set a TTL instead of deleting",
            Canary::ManifestPlaceIgnored => {
                "the manifest record checksum ignores the record's offset (a misdirected record replays)"
            }
        }
    }
}

thread_local! {
    /// The canary switched on for this thread's runs, if any.
    static ACTIVE: Cell<Option<Canary>> = const { Cell::new(None) };
}

/// Switch `canary` on for this thread (`None`: all off). The simulator's
/// runner calls this at the start of a seed run and again, with `None`,
/// at its end.
pub fn set(canary: Option<Canary>) {
    ACTIVE.with(|active| active.set(canary));
}

/// Whether `canary` is on for this thread. The engine's `canary!` macro
/// expands to this.
pub fn is_on(canary: Canary) -> bool {
    ACTIVE.with(|active| active.get() == Some(canary))
}

/// The canary on for this thread, if any.
#[cfg(test)]
fn active() -> Option<Canary> {
    ACTIVE.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kebab_case_unique_and_parse_back() {
        let mut names: Vec<&str> = Canary::ALL.iter().map(|c| c.name()).collect();
        for canary in Canary::ALL {
            let name = canary.name();
            assert_eq!(Canary::parse(name), Some(canary));
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{name}");
            assert!(!name.starts_with('-') && !name.ends_with('-') && !name.contains("--"), "{name}");
            assert!(!canary.description().is_empty() && !canary.description().contains('\n'));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Canary::ALL.len(), "two canaries share a name");
        for stranger in ["", "seg_no_fsync", "SEG-NO-FSYNC", "no-such-canary"] {
            assert_eq!(Canary::parse(stranger), None, "{stranger:?}");
        }
    }

    #[test]
    fn the_switch_is_per_thread() {
        set(Some(Canary::GhostStubs));
        assert!(is_on(Canary::GhostStubs));
        assert!(!is_on(Canary::SegNoFsync));
        assert!(canary!(GhostStubs));
        let elsewhere = std::thread::spawn(|| (active(), is_on(Canary::GhostStubs))).join().unwrap();
        assert_eq!(elsewhere, (None, false), "another thread sees no canary");
        set(None);
        assert_eq!(active(), None);
        assert!(!canary!(GhostStubs));
    }
}
