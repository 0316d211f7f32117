//! What a simulated disk is told before a run (its crash mode, sector size
//! and fault probabilities), where a crash is aimed, and what a crash did.
//!
//! These are plain values the workload generator draws per seed and the
//! checker reads back; keeping them apart from the disk's machinery lets
//! both sides agree on the contract without seeing the machinery.

use super::profile::FsProfile;

/// How the unsynced part of the disk fares at power loss (see the module
/// doc of [`crate::disk`] for the exact rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write and directory change is lost.
    Strict,
    /// Per file a prefix of its unsynced writes survives, the boundary
    /// write torn at a sector; per directory a prefix of its changes.
    Prefix,
    /// Each unsynced sector, and each unsynced directory change, survives
    /// or not independently.
    Reorder,
}

impl CrashMode {
    /// Every mode, in the order a seed picks from.
    pub const ALL: [CrashMode; 3] = [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            CrashMode::Strict => "strict",
            CrashMode::Prefix => "prefix",
            CrashMode::Reorder => "reorder",
        }
    }

    /// The mode called `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        CrashMode::ALL.into_iter().find(|mode| mode.name() == name)
    }
}

/// A disk's behaviour for one run: every probability is per operation
/// (per power loss for media corruption, per torn sector for garbage).
#[derive(Clone, Debug)]
pub struct DiskConfig {
    /// What power loss keeps of unsynced state.
    pub crash_mode: CrashMode,
    /// The unit a disk persists atomically: 512 or 4096 (any power of two
    /// up to [`MAX_SECTOR_BYTES`] is accepted).
    pub sector_bytes: u64,
    /// A write fails with EIO ...
    pub p_write_eio: f64,
    /// ... and, given that, first writes a strict prefix of its data, cut
    /// at a sector boundary.
    pub p_short_write: f64,
    /// An fsync fails with EIO and the file's dirty data is dropped (the
    /// volatile image reverts to the durable one); the next fsync of that
    /// file succeeds, proving nothing about the dropped data (fsyncgate).
    pub p_fsync_eio: f64,
    /// A read or a map fails with EIO.
    pub p_read_eio: f64,
    /// A read returns its data with one bit flipped; the disk is unchanged
    /// (a transient fault: reading again gives the right bytes). Maps are
    /// exempt: a mapping lives long, so a flip there would not be transient.
    pub p_bitflip: f64,
    /// A write or a growing `set_len` fails with `StorageFull`, writing
    /// nothing, when the sum of all files' volatile lengths would exceed
    /// this. `u64::MAX` means unlimited.
    pub capacity_bytes: u64,
    /// Per power loss: one random sector of one random durable file is
    /// overwritten with garbage, and the file is named in the outcome.
    pub p_media_corruption: f64,
    /// A torn sector holds random garbage instead of old or new bytes.
    pub p_torn_garbage: f64,
    /// Per power loss: the environment damages the disk — one durable file
    /// lost, cut to zero or with junk before its first byte, or a stray
    /// file appears — and the damage is named in the outcome.
    pub p_env_damage: f64,
    /// Any other operation fails with EIO, changing nothing: an open or a
    /// create, a rename, an unlink, a `set_len`, a length, a directory
    /// listing, an `exists`, a `create_dir_all`, a `sync_dir` (every
    /// pending entry change stays pending: none is made durable, none is
    /// dropped), and taking a lock.
    pub p_meta_eio: f64,
    /// A write that reports success is lost when the drive writes it (at
    /// the fsync that makes it durable): the place keeps its old bytes.
    /// Announced at the next power loss (`silent.rs`).
    pub p_lost_write: f64,
    /// A write that reports success lands elsewhere when the drive writes
    /// it: at another offset of the file (often an earlier write's of the
    /// same size; else another recent write's start, aligned or not, or a
    /// sector-aligned offset) or at the same offset of another open file;
    /// the place keeps its old bytes. Announced at the next power loss.
    pub p_misdirected_write: f64,
    /// A read returns, for one sector of what it reads, another sector's
    /// bytes of the same file (transient, like a bit flip: never twice
    /// for the same sector, so two reads that agree hold the disk's bytes).
    pub p_misdirected_read: f64,
    /// The file system's rules beyond POSIX (`profile.rs`): `posix`, the
    /// weakest, unless a run asks for another.
    pub fs: FsProfile,
}

/// The largest sector size a disk accepts.
pub const MAX_SECTOR_BYTES: u64 = 64 * 1024;

impl DiskConfig {
    /// A disk that never fails an operation and has no size limit; power
    /// loss still loses what was not synced, per `crash_mode`.
    pub fn fault_free(crash_mode: CrashMode, sector_bytes: u64) -> Self {
        DiskConfig {
            crash_mode,
            sector_bytes,
            p_write_eio: 0.0,
            p_short_write: 0.0,
            p_fsync_eio: 0.0,
            p_read_eio: 0.0,
            p_bitflip: 0.0,
            capacity_bytes: u64::MAX,
            p_media_corruption: 0.0,
            p_torn_garbage: 0.0,
            p_env_damage: 0.0,
            p_meta_eio: 0.0,
            p_lost_write: 0.0,
            p_misdirected_write: 0.0,
            p_misdirected_read: 0.0,
            fs: FsProfile::POSIX,
        }
    }

    /// Panics on a configuration no run should be started with: a sector
    /// size that is not a power of two, or a probability outside `0..=1`.
    pub fn assert_valid(&self) {
        assert!(
            self.sector_bytes.is_power_of_two() && self.sector_bytes <= MAX_SECTOR_BYTES,
            "sector_bytes must be a power of two up to {MAX_SECTOR_BYTES}, not {}",
            self.sector_bytes
        );
        let probabilities = [
            ("p_write_eio", self.p_write_eio),
            ("p_short_write", self.p_short_write),
            ("p_fsync_eio", self.p_fsync_eio),
            ("p_read_eio", self.p_read_eio),
            ("p_bitflip", self.p_bitflip),
            ("p_media_corruption", self.p_media_corruption),
            ("p_torn_garbage", self.p_torn_garbage),
            ("p_env_damage", self.p_env_damage),
            ("p_meta_eio", self.p_meta_eio),
            ("p_lost_write", self.p_lost_write),
            ("p_misdirected_write", self.p_misdirected_write),
            ("p_misdirected_read", self.p_misdirected_read),
        ];
        for (name, p) in probabilities {
            assert!((0.0..=1.0).contains(&p), "{name} must be a probability, not {p}");
        }
    }
}

/// Where an armed crash strikes. From that point on every I/O operation
/// fails with "simulated power loss" without touching the disk, until the
/// driver calls [`crate::disk::SimVfs::power_loss`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    /// At the `n`-th (0-based) I/O operation since the last `begin_op`
    /// (or at once, if that many have already happened).
    AfterIos(u64),
    /// At the I/O operation with this global index (or at once, if the
    /// index has passed).
    AtIo(u64),
    /// When the system under test marks the phase of this name
    /// (`Vfs::mark`: segsim's `Phase::as_str`, a kit target's declared
    /// names).
    AtMark(&'static str),
}

/// Damage to durable state that no crash causes, announced to the checker
/// (it expects a refusal, or no loss at all, never silent loss).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamageKind {
    /// Media corruption: one durable sector garbage, or one bit flipped.
    Media,
    /// A whole file gone (its directory entry and its data).
    FileLost,
    /// A file cut to zero bytes.
    FileTruncated,
    /// Junk written before a file's first byte.
    JunkPrepended,
    /// A file no engine wrote appeared in a directory.
    StrayFile,
    /// A write the drive reported done never landed (its place holds its
    /// old bytes).
    LostWrite,
    /// A write the drive reported done landed elsewhere: its place holds
    /// its old bytes, or (the range announced) another write's bytes.
    MisdirectedWrite,
}

impl DamageKind {
    /// Whether this damage changes bytes inside a file that is still there
    /// (from [`Damage::offset_bytes`], exactly the first changed byte),
    /// rather than losing, emptying or adding a whole file.
    pub fn changes_bytes_in_place(self) -> bool {
        matches!(self, DamageKind::Media | DamageKind::LostWrite | DamageKind::MisdirectedWrite)
    }
}

/// One piece of damage one power loss did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// What happened.
    pub kind: DamageKind,
    /// The file's full path.
    pub path: String,
    /// The first byte that may differ (0 for whole-file damage).
    pub offset_bytes: u64,
    /// Whether that byte was vouched: durable before some later write to
    /// the file was durable too (see `Inode::vouched`). Media damage
    /// above the vouched length is indistinguishable from a torn write to
    /// any file format; below it, an engine has had the chance to record
    /// that the byte was durable, and must refuse the damage.
    pub vouched: bool,
    /// How many of the file's first bytes, as the power loss left them,
    /// are exactly what the page cache held under the same path when
    /// power went, where the path had by then come to name another file
    /// (a rename over this one that the crash took back); 0 where the
    /// path still named this file, and for damage other than a silent
    /// write fault's (`LostWrite`, `MisdirectedWrite`). Damage inside that prefix rebuilt the
    /// replacement's own bytes at their own offsets (each of its writes
    /// misdirected to the same offset of the file it was replacing): no
    /// file format can tell the file from the replacement it would have
    /// been, so a replay inside that prefix reads only bytes the engine
    /// wrote for this path, at the offsets it wrote them.
    pub matches_replacement_bytes: u64,
}

/// What one power loss did to the disk, for the checker and the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashOutcome {
    /// The full paths of files whose durable bytes were damaged (media
    /// corruption): the engine must refuse them, never serve them.
    pub media_corrupted: Vec<String>,
    /// Every piece of damage to durable state (media corruption and the
    /// environment's: a file lost, truncated, junk prepended, a stray
    /// file), with where it is.
    pub damage: Vec<Damage>,
    /// Sectors left holding garbage by a torn write.
    pub torn_sectors: u64,
    /// Unsynced directory changes (create, rename, unlink) that did not
    /// survive.
    pub lost_dir_changes: u64,
    /// Unsynced data operations (write, set_len) that did not survive
    /// whole: in `reorder` mode, those with any sector not at its newest
    /// content or whose file did not keep its newest length.
    pub lost_writes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_modes_round_trip_through_their_names() {
        for mode in CrashMode::ALL {
            assert_eq!(CrashMode::parse(mode.name()), Some(mode));
        }
        assert_eq!(CrashMode::parse("lenient"), None);
    }

    #[test]
    fn fault_free_is_valid_and_injects_nothing() {
        let config = DiskConfig::fault_free(CrashMode::Prefix, 4096);
        config.assert_valid();
        assert_eq!(config.capacity_bytes, u64::MAX);
        assert_eq!(config.p_write_eio + config.p_fsync_eio + config.p_media_corruption, 0.0);
    }

    #[test]
    #[should_panic(expected = "power of two")]
    fn an_odd_sector_size_is_refused() {
        DiskConfig::fault_free(CrashMode::Strict, 1000).assert_valid();
    }

    #[test]
    #[should_panic(expected = "must be a probability")]
    fn a_probability_above_one_is_refused() {
        let mut config = DiskConfig::fault_free(CrashMode::Strict, 512);
        config.p_bitflip = 1.5;
        config.assert_valid();
    }
}
