//! Per-operation fault decisions: whether this write, fsync or read fails,
//! and how.
//!
//! Every decision draws from one ChaCha8 stream that the driver reseeds at
//! each workload operation (`begin_op`), so the faults of one operation do
//! not depend on how many I/Os earlier operations made — deleting an
//! operation while shrinking a failure leaves the others' faults in place.
//! A probability of zero draws nothing: a fault-free run consumes no
//! randomness at all, which is also what keeps it fast.

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::DiskConfig;
use super::data::InodeId;
use super::sectors::inner_cuts;
use super::silent::Fate;

/// How a write fails, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteFault {
    /// The write goes through.
    None,
    /// EIO, nothing written.
    Eio,
    /// EIO after the first `keep_bytes` (a sector-aligned, strict,
    /// non-empty prefix) were written.
    Short { keep_bytes: u64 },
}

/// The fault stream of the current workload operation.
#[derive(Debug)]
pub(super) struct Faults {
    /// The current operation's stream, made from `seed` at its first draw:
    /// most operations draw nothing (a fault-free config, faults off, no
    /// I/O), and seeding a ChaCha stream per operation cost more than the
    /// draws.
    rng: Option<ChaCha8Rng>,
    seed: u64,
    enabled: bool,
    /// The harness is observing (an audit listing the directory): no
    /// fault fires, not even the armed one, and no index is noted as one
    /// where it could.
    observing: bool,
    /// `sim explore --faults`: the one I/O (of any kind) that
    /// fails (EIO), whatever `enabled` says.
    armed: Armed,
    /// The armed fault (or the noting) heeds `enabled`: it fires only
    /// where a drawn fault could (a fault in the recorded workload), not
    /// also where the harness turned faults off (a recovery's).
    gated: bool,
    /// Every bit a read has flipped, as (file, bit of the file). A
    /// transient fault does not strike the same bit twice: without this,
    /// two reads flipping the same bit would agree, and a reader that
    /// trusts two agreeing reads (`vfs::read_stable`) would take
    /// the flip for the disk's bytes — a coincidence of one in `8 × len`
    /// per pair of faulty reads, which a fuzzer steering the draws finds.
    flipped: BTreeSet<(u64, u64)>,
    /// Every sector a read has misdirected, as (file, sector): for the
    /// same reason, never one twice.
    misread: BTreeSet<(u64, u64)>,
}

/// Where a misdirected write may land: the file's latest writes, its
/// length before the write, and the other files open now.
pub(super) struct Targets<'a> {
    pub recent_writes: &'a [(u64, u64)],
    pub file_len_bytes: u64,
    pub other_files: &'a [InodeId],
}

/// How an armed fault (`sim explore --faults`) fails its I/O. Every kind
/// of I/O can fail with EIO; a write can also fail after a short write or
/// for lack of space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArmedFault {
    /// EIO, as the I/O's own fault kind does (a failed fsync drops the
    /// dirty data; any operation but a read, write, fsync or map changes
    /// nothing).
    Eio,
    /// A write: EIO after the longest strict sector-aligned prefix of its
    /// data was written (plain EIO for a write within one sector).
    ShortWrite,
    /// A write: `StorageFull`, nothing written.
    NoSpace,
}

impl ArmedFault {
    /// Every kind, in the order exploration tries them.
    pub const ALL: [ArmedFault; 3] = [ArmedFault::Eio, ArmedFault::ShortWrite, ArmedFault::NoSpace];

    /// The name on a command line (`--fault-kind`) and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ArmedFault::Eio => "eio",
            ArmedFault::ShortWrite => "short-write",
            ArmedFault::NoSpace => "enospc",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Result<ArmedFault, String> {
        ArmedFault::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| format!("{name:?}: expected eio, short-write or enospc"))
    }

    /// Whether only a write can fail this way.
    pub fn writes_only(self) -> bool {
        self != ArmedFault::Eio
    }
}

/// The state of [`Faults::arm_at`]'s fault, or the lists
/// [`Faults::note_faultable`] keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Armed {
    Never,
    /// Noting every index an armed fault could fire at, in order, and
    /// apart the indices of writes (where every [`ArmedFault`] can).
    Noting {
        all: Vec<u64>,
        writes: Vec<u64>,
    },
    At(u64, ArmedFault),
    Fired,
}

impl Faults {
    pub fn new() -> Self {
        Faults {
            rng: None,
            seed: 0,
            enabled: true,
            observing: false,
            armed: Armed::Never,
            gated: false,
            flipped: BTreeSet::new(),
            misread: BTreeSet::new(),
        }
    }

    /// Decisions from now on come from `seed`'s stream.
    pub fn reseed(&mut self, seed: u64) {
        self.rng = None;
        self.seed = seed;
    }

    /// The seed of the current operation's stream (for a draw that must
    /// not consume the stream itself: a remount's power loss).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream, made on first use: the same draws as if it had been
    /// made at [`Faults::reseed`].
    fn rng(&mut self) -> &mut ChaCha8Rng {
        let seed = self.seed;
        self.rng.get_or_insert_with(|| ChaCha8Rng::seed_from_u64(seed))
    }

    pub fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
    }

    pub fn set_observing(&mut self, on: bool) {
        self.observing = on;
    }

    /// Make the I/O at `index` fail with EIO (once), whatever its kind.
    pub fn arm_at(&mut self, index: u64, kind: ArmedFault, gated: bool) {
        self.armed = Armed::At(index, kind);
        self.gated = gated;
    }

    /// Arm nothing, but note every index where an armed fault would fire
    /// (every I/O but the harness's observations), for
    /// [`Faults::faultable`].
    pub fn note_faultable(&mut self, gated: bool) {
        self.armed = Armed::Noting { all: Vec::new(), writes: Vec::new() };
        self.gated = gated;
    }

    /// The indices [`Faults::note_faultable`] noted since it was called.
    pub fn faultable(&self) -> &[u64] {
        match &self.armed {
            Armed::Noting { all, .. } => all,
            _ => &[],
        }
    }

    /// Of [`Faults::faultable`], the writes.
    pub fn faultable_writes(&self) -> &[u64] {
        match &self.armed {
            Armed::Noting { writes, .. } => writes,
            _ => &[],
        }
    }

    /// `None` if no fault was armed, else whether it fired.
    pub fn armed_fired(&self) -> Option<bool> {
        match self.armed {
            Armed::Never | Armed::Noting { .. } => None,
            Armed::At(..) => Some(false),
            Armed::Fired => Some(true),
        }
    }

    /// Whether the I/O at `index` is the armed one (it
    /// fires now). Draws nothing: the seeded streams are untouched.
    pub fn take_armed(&mut self, index: u64) -> bool {
        let armed = self.take_armed_kind(index, false);
        debug_assert!(armed.is_none_or(|kind| !kind.writes_only()), "a write-only fault armed at another I/O");
        armed.is_some()
    }

    /// The fault armed at the write at `index`, if it is the armed one
    /// (it fires now). Draws nothing.
    pub fn take_armed_write(&mut self, index: u64) -> Option<ArmedFault> {
        self.take_armed_kind(index, true)
    }

    fn take_armed_kind(&mut self, index: u64, write: bool) -> Option<ArmedFault> {
        if self.observing || (self.gated && !self.enabled) {
            return None;
        }
        match &mut self.armed {
            Armed::At(at, kind) if *at == index => {
                let kind = *kind;
                self.armed = Armed::Fired;
                Some(kind)
            }
            Armed::Noting { all, writes } => {
                all.push(index);
                if write {
                    writes.push(index);
                }
                None
            }
            _ => None,
        }
    }

    /// Whether faults may strike now (on, and the harness not observing):
    /// a shut-down file system's failures heed it as drawn faults do.
    pub fn active(&self) -> bool {
        self.enabled && !self.observing
    }

    /// Whether an event of probability `p` happens; draws only if it could.
    fn chance(&mut self, p: f64) -> bool {
        self.enabled && !self.observing && p > 0.0 && self.rng().gen_bool(p)
    }

    /// Whether growing the disk's volatile bytes from `volatile_bytes` by
    /// `growth_bytes` runs past the capacity. Not random, but a fault all
    /// the same: off when faults are off.
    pub fn no_space(&self, config: &DiskConfig, volatile_bytes: u64, growth_bytes: u64) -> bool {
        self.enabled
            && !self.observing
            && growth_bytes > 0
            && volatile_bytes.saturating_add(growth_bytes) > config.capacity_bytes
    }

    /// Whether an operation that is not a read, write, fsync or map fails
    /// (see [`DiskConfig::p_meta_eio`]).
    pub fn meta(&mut self, config: &DiskConfig) -> bool {
        self.chance(config.p_meta_eio)
    }

    /// The fate of a write of `len_bytes` at `offset_bytes` that the armed
    /// fault `kind` fails (never `NoSpace`: the caller reports that).
    pub fn armed_write(config: &DiskConfig, kind: ArmedFault, offset_bytes: u64, len_bytes: u64) -> WriteFault {
        assert_ne!(kind, ArmedFault::NoSpace, "the caller's");
        let cuts = inner_cuts(offset_bytes..offset_bytes + len_bytes, config.sector_bytes);
        if kind == ArmedFault::Eio || cuts.count == 0 {
            return WriteFault::Eio;
        }
        WriteFault::Short { keep_bytes: cuts.at(cuts.count - 1) - offset_bytes }
    }

    /// The fate of a write of `len_bytes` at `offset_bytes`.
    pub fn write(&mut self, config: &DiskConfig, offset_bytes: u64, len_bytes: u64) -> WriteFault {
        if !self.chance(config.p_write_eio) {
            return WriteFault::None;
        }
        if !self.chance(config.p_short_write) {
            return WriteFault::Eio;
        }
        let cuts = inner_cuts(offset_bytes..offset_bytes + len_bytes, config.sector_bytes);
        if cuts.count == 0 {
            // The write lies within one sector: the only strict prefix a
            // disk can leave is the empty one, which is a plain EIO.
            return WriteFault::Eio;
        }
        let cut_bytes = cuts.at(self.rng().gen_range(0..cuts.count));
        WriteFault::Short { keep_bytes: cut_bytes - offset_bytes }
    }

    /// Whether an fsync fails.
    pub fn fsync(&mut self, config: &DiskConfig) -> bool {
        self.chance(config.p_fsync_eio)
    }

    /// Whether a read or a map fails.
    pub fn read(&mut self, config: &DiskConfig) -> bool {
        self.chance(config.p_read_eio)
    }

    /// Whether a write that succeeds is lost or misdirected when the drive
    /// writes it (see `silent.rs`): `None`, or `Some(true)` if it is to be
    /// misdirected (then ask [`Faults::misdirect`] where).
    pub fn silent_write(&mut self, config: &DiskConfig, len_bytes: u64) -> Option<bool> {
        if len_bytes == 0 {
            return None;
        }
        if self.chance(config.p_lost_write) {
            return Some(false);
        }
        self.chance(config.p_misdirected_write).then_some(true)
    }

    /// Where a misdirected write of `len_bytes` meant for `offset_bytes`
    /// lands: an earlier write's offset of the same size (two times in
    /// five when there is one: the nasty case, a whole once-valid record
    /// of the same shape replaced), the same offset of another open file,
    /// another sector-aligned offset inside the file, or where any recent
    /// write of the file started (records start there, aligned or not: a
    /// small log has no aligned offset but its first) — the first drawn of
    /// those that exist, or nowhere (a lost write) if none does.
    pub fn misdirect(&mut self, config: &DiskConfig, offset_bytes: u64, len_bytes: u64, targets: &Targets) -> Fate {
        let same_size: Vec<u64> = targets
            .recent_writes
            .iter()
            .filter(|(offset, len)| *len == len_bytes && *offset != offset_bytes)
            .map(|(offset, _)| *offset)
            .collect();
        let record_starts: Vec<u64> = targets
            .recent_writes
            .iter()
            .map(|(offset, _)| *offset)
            .filter(|offset| *offset != offset_bytes && *offset < targets.file_len_bytes)
            .collect();
        // Sector-aligned offsets where the whole write fits in the file.
        let slots = targets.file_len_bytes.checked_sub(len_bytes).map_or(0, |last| last / config.sector_bytes + 1);
        let rng = self.rng();
        let first = [0, 0, 1, 2, 3][rng.gen_range(0..5)];
        for choice in (first..first + 4).map(|c| c % 4) {
            match choice {
                0 if !same_size.is_empty() => {
                    return Fate::Elsewhere { offset_bytes: same_size[rng.gen_range(0..same_size.len())] };
                }
                1 if !targets.other_files.is_empty() => {
                    let inode = targets.other_files[rng.gen_range(0..targets.other_files.len())];
                    return Fate::OtherFile { inode };
                }
                2 if slots > 1 || (slots == 1 && offset_bytes != 0) => {
                    let mut to = rng.gen_range(0..slots) * config.sector_bytes;
                    if to == offset_bytes {
                        to = (to + config.sector_bytes) % (slots * config.sector_bytes);
                    }
                    return Fate::Elsewhere { offset_bytes: to };
                }
                3 if !record_starts.is_empty() => {
                    return Fate::Elsewhere { offset_bytes: record_starts[rng.gen_range(0..record_starts.len())] };
                }
                _ => {}
            }
        }
        Fate::Lost
    }

    /// For a `len_bytes` read of `file` (`file_len_bytes` long) at
    /// `offset_bytes`: if one of its sectors reads another's bytes, the
    /// sector's start and the other sector's start. Never a sector
    /// misdirected before (see `misread`).
    pub fn misread(
        &mut self,
        config: &DiskConfig,
        file: u64,
        offset_bytes: u64,
        len_bytes: usize,
        file_len_bytes: u64,
    ) -> Option<(u64, u64)> {
        if len_bytes == 0 || !self.chance(config.p_misdirected_read) {
            return None;
        }
        let sector_bytes = config.sector_bytes;
        let first = offset_bytes / sector_bytes;
        let last = (offset_bytes + len_bytes as u64 - 1) / sector_bytes;
        let file_sectors = file_len_bytes.div_ceil(sector_bytes).max(2);
        let rng = self.rng();
        let sector = rng.gen_range(first..=last);
        let mut other = rng.gen_range(0..file_sectors);
        if other == sector {
            other = (other + 1) % file_sectors;
        }
        self.misread.insert((file, sector)).then_some((sector * sector_bytes, other * sector_bytes))
    }

    /// Media corruption changed byte `offset_bytes` of `file`: no read
    /// flips a bit of it from now on. A transient flip there could undo
    /// the damage for one read, and a reader shown the sound bytes would
    /// replay what the checker knows the disk no longer holds (seed
    /// 79190727: a rotten bit and a read's flip of that very bit).
    pub fn never_flip_byte(&mut self, file: u64, offset_bytes: u64) {
        let first_bit = offset_bytes.saturating_mul(8);
        self.flipped.extend((first_bit..first_bit + 8).map(|bit| (file, bit)));
    }

    /// Which bit of a `len_bytes` read of `file` at `offset_bytes` to
    /// flip, if any: never one flipped before (see `flipped`), nor one of
    /// a byte media corruption changed (`never_flip_byte`).
    pub fn bitflip(&mut self, config: &DiskConfig, file: u64, offset_bytes: u64, len_bytes: usize) -> Option<usize> {
        if len_bytes == 0 || !self.chance(config.p_bitflip) {
            return None;
        }
        let bit = self.rng().gen_range(0..len_bytes * 8);
        let file_bit = offset_bytes.saturating_mul(8).saturating_add(bit as u64);
        self.flipped.insert((file, file_bit)).then_some(bit)
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::CrashMode;
    use super::*;

    fn always(sector_bytes: u64) -> DiskConfig {
        let mut config = DiskConfig::fault_free(CrashMode::Strict, sector_bytes);
        config.p_write_eio = 1.0;
        config.p_short_write = 1.0;
        config.p_fsync_eio = 1.0;
        config.p_read_eio = 1.0;
        config.p_bitflip = 1.0;
        config.p_lost_write = 1.0;
        config.p_misdirected_write = 1.0;
        config.p_misdirected_read = 1.0;
        config
    }

    #[test]
    fn a_fault_free_config_draws_nothing() {
        let config = DiskConfig::fault_free(CrashMode::Strict, 512);
        let mut faults = Faults::new();
        faults.reseed(7);
        let before = faults.rng().get_word_pos();
        assert_eq!(faults.write(&config, 0, 4096), WriteFault::None);
        assert!(!faults.fsync(&config));
        assert!(!faults.read(&config));
        assert_eq!(faults.bitflip(&config, 1, 0, 100), None);
        assert_eq!(faults.silent_write(&config, 100), None);
        assert_eq!(faults.misread(&config, 1, 0, 100, 4096), None);
        assert_eq!(faults.rng().get_word_pos(), before);
    }

    #[test]
    fn a_read_never_flips_a_bit_of_a_byte_damage_changed() {
        let config = always(512);
        let mut faults = Faults::new();
        faults.reseed(3);
        let bit = faults.bitflip(&config, 1, 0, 1).expect("p_bitflip is 1");
        let mut rotten = Faults::new();
        rotten.never_flip_byte(1, 0);
        rotten.reseed(3);
        assert_eq!(rotten.bitflip(&config, 1, 0, 1), None, "bit {bit} of the rotten byte: the same draw, no flip");
        assert_eq!(rotten.bitflip(&config, 2, 0, 1).map(|_| ()), Some(()), "another file's byte flips");
    }

    #[test]
    fn a_read_never_flips_a_bit_flipped_before() {
        let config = always(512);
        let mut faults = Faults::new();
        faults.reseed(7);
        let bit = faults.bitflip(&config, 1, 64, 100).expect("p_bitflip is 1");
        faults.reseed(7);
        assert_eq!(faults.bitflip(&config, 1, 64, 100), None, "the same draw, the same bit");
        faults.reseed(7);
        assert_eq!(faults.bitflip(&config, 2, 64, 100), Some(bit), "another file's bit");
        faults.reseed(7);
        assert_eq!(faults.bitflip(&config, 1, 0, 100), Some(bit), "another bit of the file");
    }

    #[test]
    fn a_misdirected_write_lands_on_an_aligned_offset_a_record_start_or_another_file() {
        let config = always(512);
        let mut faults = Faults::new();
        let recent = [(0, 100), (512, 100), (1024, 50), (1074, 29)];
        let (mut seen_same_size, mut seen_unaligned) = (false, false);
        for seed in 0..200 {
            faults.reseed(seed);
            let targets = Targets { recent_writes: &recent, file_len_bytes: 2048, other_files: &[9] };
            match faults.misdirect(&config, 1103, 100, &targets) {
                Fate::Elsewhere { offset_bytes } => {
                    let aligned = offset_bytes % 512 == 0 && offset_bytes + 100 <= 2048;
                    let record_start = recent.iter().any(|(offset, _)| *offset == offset_bytes);
                    assert!((aligned || record_start) && offset_bytes != 1103, "{offset_bytes}");
                    seen_same_size |= offset_bytes == 512 || offset_bytes == 0;
                    seen_unaligned |= offset_bytes == 1074;
                }
                Fate::OtherFile { inode } => assert_eq!(inode, 9),
                Fate::Lost => panic!("targets exist"),
            }
            let nowhere = Targets { recent_writes: &[], file_len_bytes: 0, other_files: &[] };
            assert_eq!(faults.misdirect(&config, 0, 100, &nowhere), Fate::Lost, "nowhere to land");
        }
        assert!(seen_same_size && seen_unaligned);
    }

    #[test]
    fn a_read_never_misdirects_a_sector_twice() {
        let config = always(512);
        let mut faults = Faults::new();
        faults.reseed(3);
        let (sector, other) = faults.misread(&config, 1, 0, 512, 4096).expect("p is 1");
        assert_eq!((sector, other % 512), (0, 0));
        assert_ne!(other, 0);
        faults.reseed(3);
        assert_eq!(faults.misread(&config, 1, 0, 512, 4096), None);
    }

    #[test]
    fn disabled_faults_never_fire() {
        let config = always(512);
        let mut faults = Faults::new();
        faults.set_enabled(false);
        assert_eq!(faults.write(&config, 0, 4096), WriteFault::None);
        assert!(!faults.fsync(&config) && !faults.read(&config));
        assert!(!faults.no_space(&DiskConfig { capacity_bytes: 0, ..config }, 0, 1));
    }

    #[test]
    fn short_writes_keep_a_strict_sector_aligned_prefix() {
        let config = always(512);
        let mut faults = Faults::new();
        for seed in 0..200 {
            faults.reseed(seed);
            match faults.write(&config, 100, 2000) {
                WriteFault::Short { keep_bytes } => {
                    assert!(keep_bytes > 0 && keep_bytes < 2000);
                    assert_eq!((100 + keep_bytes) % 512, 0);
                }
                other => panic!("expected a short write, got {other:?}"),
            }
        }
        faults.reseed(0);
        assert_eq!(faults.write(&config, 100, 50), WriteFault::Eio, "no boundary inside");
    }

    #[test]
    fn an_armed_fault_fires_once_at_its_index_even_when_faults_are_off() {
        let mut faults = Faults::new();
        faults.set_enabled(false);
        assert_eq!(faults.armed_fired(), None);
        faults.arm_at(3, ArmedFault::Eio, false);
        assert!(!faults.take_armed(2));
        assert_eq!(faults.armed_fired(), Some(false));
        assert!(faults.take_armed(3));
        assert!(!faults.take_armed(3));
        assert_eq!(faults.armed_fired(), Some(true));
        faults.note_faultable(false);
        assert!(!faults.take_armed(4) && faults.take_armed_write(6).is_none() && !faults.take_armed(9));
        assert_eq!((faults.faultable(), faults.armed_fired()), (&[4, 6, 9][..], None));
        assert_eq!(faults.faultable_writes(), &[6]);
        faults.arm_at(6, ArmedFault::NoSpace, false);
        assert_eq!(faults.take_armed_write(6), Some(ArmedFault::NoSpace));
        // Gated, it fires only where faults are on.
        faults.note_faultable(true);
        assert!(!faults.take_armed(10));
        faults.set_enabled(true);
        assert!(!faults.take_armed(11));
        assert_eq!(faults.faultable(), &[11]);
        faults.arm_at(12, ArmedFault::Eio, true);
        faults.set_enabled(false);
        assert!(!faults.take_armed(12));
        assert_eq!(faults.armed_fired(), Some(false));
    }

    #[test]
    fn an_armed_short_write_keeps_its_longest_strict_sector_aligned_prefix() {
        let config = always(512);
        assert_eq!(
            Faults::armed_write(&config, ArmedFault::ShortWrite, 100, 2000),
            WriteFault::Short { keep_bytes: 1948 }
        );
        assert_eq!(Faults::armed_write(&config, ArmedFault::ShortWrite, 0, 512), WriteFault::Eio, "one sector");
        assert_eq!(Faults::armed_write(&config, ArmedFault::Eio, 100, 2000), WriteFault::Eio);
        for kind in ArmedFault::ALL {
            assert_eq!(ArmedFault::parse(kind.name()), Ok(kind));
        }
        assert!(ArmedFault::parse("eperm").is_err());
    }

    #[test]
    fn capacity_counts_only_growth() {
        let mut config = DiskConfig::fault_free(CrashMode::Strict, 512);
        config.capacity_bytes = 100;
        let faults = Faults::new();
        assert!(!faults.no_space(&config, 100, 0));
        assert!(!faults.no_space(&config, 90, 10));
        assert!(faults.no_space(&config, 90, 11));
    }
}
