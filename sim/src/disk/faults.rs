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
use super::sectors::inner_cuts;

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
    /// Every bit a read has flipped, as (file, bit of the file). A
    /// transient fault does not strike the same bit twice: without this,
    /// two reads flipping the same bit would agree, and a reader that
    /// trusts two agreeing reads (`engine::vfs::read_stable`) would take
    /// the flip for the disk's bytes — a coincidence of one in `8 × len`
    /// per pair of faulty reads, which a fuzzer steering the draws finds.
    flipped: BTreeSet<(u64, u64)>,
}

/// The state of [`Faults::arm_at`]'s fault, or the list
/// [`Faults::note_faultable`] keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Armed {
    Never,
    /// Noting every index an armed fault could fire at, in order.
    Noting(Vec<u64>),
    At(u64),
    Fired,
}

impl Faults {
    pub fn new() -> Self {
        Faults { rng: None, seed: 0, enabled: true, observing: false, armed: Armed::Never, flipped: BTreeSet::new() }
    }

    /// Decisions from now on come from `seed`'s stream.
    pub fn reseed(&mut self, seed: u64) {
        self.rng = None;
        self.seed = seed;
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
    pub fn arm_at(&mut self, index: u64) {
        self.armed = Armed::At(index);
    }

    /// Arm nothing, but note every index where an armed fault would fire
    /// (every I/O but the harness's observations), for
    /// [`Faults::faultable`].
    pub fn note_faultable(&mut self) {
        self.armed = Armed::Noting(Vec::new());
    }

    /// The indices [`Faults::note_faultable`] noted since it was called.
    pub fn faultable(&self) -> &[u64] {
        match &self.armed {
            Armed::Noting(indices) => indices,
            _ => &[],
        }
    }

    /// `None` if no fault was armed, else whether it fired.
    pub fn armed_fired(&self) -> Option<bool> {
        match self.armed {
            Armed::Never | Armed::Noting(_) => None,
            Armed::At(_) => Some(false),
            Armed::Fired => Some(true),
        }
    }

    /// Whether the I/O at `index` is the armed one (it
    /// fires now). Draws nothing: the seeded streams are untouched.
    pub fn take_armed(&mut self, index: u64) -> bool {
        if self.observing {
            return false;
        }
        match &mut self.armed {
            Armed::At(at) if *at == index => {
                self.armed = Armed::Fired;
                true
            }
            Armed::Noting(indices) => {
                indices.push(index);
                false
            }
            _ => false,
        }
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

    /// Which bit of a `len_bytes` read of `file` at `offset_bytes` to
    /// flip, if any: never one flipped before (see `flipped`).
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
        assert_eq!(faults.rng().get_word_pos(), before);
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
        faults.arm_at(3);
        assert!(!faults.take_armed(2));
        assert_eq!(faults.armed_fired(), Some(false));
        assert!(faults.take_armed(3));
        assert!(!faults.take_armed(3));
        assert_eq!(faults.armed_fired(), Some(true));
        faults.note_faultable();
        assert!(!faults.take_armed(4) && !faults.take_armed(9));
        assert_eq!((faults.faultable(), faults.armed_fired()), (&[4, 9][..], None));
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
