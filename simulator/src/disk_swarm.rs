//! The swarm's disk table: how a seed draws its simulated disk (crash
//! mode, sector size, which faults are on and how often), the one table
//! every target's configuration uses. What differs between targets is a
//! named field of [`DiskSwarm`], set by the target: the engine detects
//! damage or not, tolerates torn garbage or not, fits in a small disk or
//! not, and so on. A target never copies the table.
//!
//! The draws come in three generations, each added after the ones before
//! so every older seed kept its configuration: the disk
//! ([`DiskSwarm::draw`], right after the target's first draws), damage no
//! crash causes ([`DiskSwarm::draw_env_damage`]), then failing metadata
//! operations and the drive's silent faults ([`DiskSwarm::draw_late`]). A
//! target draws its own dials between them, as it always has; the order of
//! every draw is part of every seed's meaning (see `draw.rs`).

use rand::Rng;

use crate::disk::{CrashMode, DiskConfig, FsProfile};
use crate::draw::maybe;

/// What one target makes of the table (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiskSwarm {
    /// The crash mode's index is drawn from a 64-bit word of the stream
    /// (a kit target's seeds), not a 32-bit one (segsim's). The same
    /// three modes, equally likely; the stream after it differs, and
    /// every kit seed's findings (REDB.md, SQLITE.md, STDFS.md) depend on
    /// it.
    pub crash_mode_from_u64: bool,
    /// A failing fsync's probability, when the seed turns it on, is drawn
    /// below this (from 0.001).
    pub p_fsync_eio_max: f64,
    /// The chance the disk has a capacity limit at all.
    pub p_capacity_limited: f64,
    /// The smallest capacity a limited disk draws (the largest is 512
    /// KiB): what the engine needs to do anything at all.
    pub min_capacity_bytes: u64,
    /// Power losses damage durable bytes (media corruption): only for an
    /// engine that promises to detect damage. Off, nothing is drawn.
    pub media_corruption: bool,
    /// A torn sector may hold garbage. Drawn either way; off, kept at 0.
    pub torn_garbage: bool,
    /// A read may return one flipped bit. Drawn either way; off, kept at 0.
    pub read_bitflips: bool,
    /// Damage no crash causes: a durable file lost, cut, with junk
    /// prepended, a stray file ([`DiskSwarm::draw_env_damage`]). Off,
    /// nothing is drawn.
    pub env_damage: bool,
    /// The drive's silent faults: lost and misdirected writes,
    /// misdirected reads (issue 25; a target's page says what its format
    /// binds before they are on for it). Off, nothing is drawn.
    pub silent_faults: bool,
}

/// The largest capacity a limited disk draws (exclusive).
const MAX_CAPACITY_BYTES: u64 = 512 << 10;

impl DiskSwarm {
    /// The first generation: crash mode, sector size, the I/O faults'
    /// probabilities, capacity, media corruption and torn garbage, on a
    /// disk following `fs` (which draws nothing). The later generations'
    /// probabilities start at zero.
    pub fn draw(&self, rng: &mut impl Rng, fs: FsProfile) -> DiskConfig {
        debug_assert!(self.min_capacity_bytes < MAX_CAPACITY_BYTES, "a capacity range that is not empty");
        let modes = CrashMode::ALL.len();
        let crash_mode = CrashMode::ALL[match self.crash_mode_from_u64 {
            true => rng.gen_range(0..modes as u64) as usize,
            false => rng.gen_range(0..modes as u32) as usize,
        }];
        let sector_bytes = if rng.gen_bool(0.5) { 512 } else { 4096 };
        let p_write_eio = maybe(rng, 0.001, 0.02);
        let p_short_write = rng.gen_range(0.0..1.0);
        let p_fsync_eio = maybe(rng, 0.001, self.p_fsync_eio_max);
        let p_read_eio = maybe(rng, 0.001, 0.02);
        let p_bitflip = maybe(rng, 0.001, 0.02);
        let capacity_bytes = match rng.gen_bool(self.p_capacity_limited) {
            true => rng.gen_range(self.min_capacity_bytes..MAX_CAPACITY_BYTES),
            false => u64::MAX,
        };
        let p_media_corruption = if self.media_corruption { maybe(rng, 0.02, 0.2) } else { 0.0 };
        let p_torn_garbage = rng.gen_range(0.0..0.5);
        DiskConfig {
            crash_mode,
            sector_bytes,
            p_write_eio,
            p_short_write,
            p_fsync_eio,
            p_read_eio,
            p_bitflip: if self.read_bitflips { p_bitflip } else { 0.0 },
            capacity_bytes,
            p_media_corruption,
            p_torn_garbage: if self.torn_garbage { p_torn_garbage } else { 0.0 },
            p_env_damage: 0.0,
            p_meta_eio: 0.0,
            p_lost_write: 0.0,
            p_misdirected_write: 0.0,
            p_misdirected_read: 0.0,
            fs,
        }
    }

    /// The second generation: damage no crash causes, on for about a
    /// third of the seeds and rare (like media corruption), if the target
    /// has it at all.
    pub fn draw_env_damage(&self, rng: &mut impl Rng, disk: &mut DiskConfig) {
        if self.env_damage {
            disk.p_env_damage = if rng.gen_bool(0.3) { rng.gen_range(0.01..0.06) } else { 0.0 };
        }
    }

    /// The third generation: the operations that failed in no run before
    /// (open, rename, unlink, `sync_dir`, `set_len`, locks), then the
    /// drive's silent faults if the target has them. Writes are many, so
    /// silent write faults' rates are low; a lost or misdirected write
    /// shows only if it is made durable and the power then goes.
    pub fn draw_late(&self, rng: &mut impl Rng, disk: &mut DiskConfig) {
        disk.p_meta_eio = maybe(rng, 0.001, 0.02);
        if self.silent_faults {
            disk.p_lost_write = maybe(rng, 0.0005, 0.005);
            disk.p_misdirected_write = maybe(rng, 0.0005, 0.005);
            disk.p_misdirected_read = maybe(rng, 0.001, 0.02);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const EVERYTHING: DiskSwarm = DiskSwarm {
        crash_mode_from_u64: false,
        p_fsync_eio_max: 0.01,
        p_capacity_limited: 0.15,
        min_capacity_bytes: 32 << 10,
        media_corruption: true,
        torn_garbage: true,
        read_bitflips: true,
        env_damage: true,
        silent_faults: true,
    };

    /// Everything a target switches off stays zero, and what it leaves on
    /// is drawn, over a few dozen seeds.
    #[test]
    fn a_switched_off_fault_stays_zero_and_one_left_on_is_drawn() {
        let nothing = DiskSwarm {
            media_corruption: false,
            torn_garbage: false,
            read_bitflips: false,
            env_damage: false,
            silent_faults: false,
            ..EVERYTHING
        };
        let draw_all = |swarm: &DiskSwarm, seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut disk = swarm.draw(&mut rng, FsProfile::POSIX);
            swarm.draw_env_damage(&mut rng, &mut disk);
            swarm.draw_late(&mut rng, &mut disk);
            disk
        };
        let off: Vec<DiskConfig> = (0..64).map(|seed| draw_all(&nothing, seed)).collect();
        let on: Vec<DiskConfig> = (0..64).map(|seed| draw_all(&EVERYTHING, seed)).collect();
        let probabilities = |d: &DiskConfig| {
            [d.p_media_corruption, d.p_torn_garbage, d.p_bitflip, d.p_env_damage, d.p_lost_write, d.p_misdirected_read]
        };
        assert!(off.iter().all(|d| probabilities(d).iter().all(|&p| p == 0.0)));
        for at in 0..probabilities(&on[0]).len() {
            assert!(on.iter().any(|d| probabilities(d)[at] > 0.0), "probability #{at} never drawn");
        }
        assert!(on.iter().all(|d| d.p_fsync_eio < EVERYTHING.p_fsync_eio_max));
        let limited: Vec<u64> = on.iter().map(|d| d.capacity_bytes).filter(|&c| c != u64::MAX).collect();
        assert!(!limited.is_empty() && limited.iter().all(|&c| c >= EVERYTHING.min_capacity_bytes));
    }

    /// Both ways of drawing the crash mode reach every mode.
    #[test]
    fn every_crash_mode_is_drawn_either_way() {
        for wide in [false, true] {
            let swarm = DiskSwarm { crash_mode_from_u64: wide, ..EVERYTHING };
            let mut rng = ChaCha8Rng::seed_from_u64(9);
            let modes: Vec<CrashMode> = (0..64).map(|_| swarm.draw(&mut rng, FsProfile::POSIX).crash_mode).collect();
            assert!(CrashMode::ALL.iter().all(|mode| modes.contains(mode)), "{wide}: {modes:?}");
        }
    }
}
