//! The redb target's swarm configuration: everything a seed decides about
//! a run before its first operation — the simulated disk (crash mode,
//! sector size, which faults and how often), redb's own knobs (page cache
//! size, integrity check on open, how often a commit is `Durability::None`,
//! 2-phase, quick-repair) and the workload's shape (key space, value sizes,
//! which operation kinds exist).
//!
//! Swarm testing as in `crate::config`: each seed draws its own mix, so a
//! bug that needs, say, a tiny page cache, only `None` commits and no
//! compaction is found by the seeds that happen to look like that. The
//! stream is salted apart from the segsim target's, so the two targets'
//! seeds are unrelated.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::disk::{CrashMode, DiskConfig};
use crate::draw::{maybe, swarm_weights};

/// The workload operation kinds whose weights the swarm draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum OpKind {
    Put,
    Remove,
    Get,
    Scan,
    Commit,
    Abort,
    Compact,
    Restart,
    Crash,
}

impl OpKind {
    /// Every kind with its base weight, before the swarm switches some off.
    pub const BASE_WEIGHTS: [(OpKind, u32); 9] = [
        (OpKind::Put, 30),
        (OpKind::Remove, 8),
        (OpKind::Get, 10),
        (OpKind::Scan, 3),
        (OpKind::Commit, 12),
        (OpKind::Abort, 2),
        (OpKind::Compact, 1),
        (OpKind::Restart, 2),
        (OpKind::Crash, 2),
    ];

    /// Kinds the swarm never switches off: without writes and commits
    /// there is nothing to lose.
    fn essential(self) -> bool {
        matches!(self, OpKind::Put | OpKind::Commit)
    }
}

/// A seed's whole configuration for the redb target.
#[derive(Clone, Debug)]
pub struct RedbConfig {
    /// The seed everything derives from.
    pub seed: u64,
    /// Workload operations to run.
    pub ops: u64,
    /// The simulated disk. Two of its faults are off unless asked for
    /// ([`HarshDisk`]): garbage in torn sectors and bit flips on reads.
    pub disk: DiskConfig,
    /// redb's page cache (`Builder::set_cache_size`). Small caches make
    /// redb write pages out mid-transaction and read them back.
    pub cache_bytes: usize,
    /// `Builder::set_check_integrity_on_open`: verify every checksum at
    /// every open. Media corruption is injected only when this is on: it is
    /// the only mode in which redb promises to report an altered file
    /// rather than trust it (see REDB.md).
    pub check_integrity_on_open: bool,
    /// Probability that a commit is `Durability::None`.
    pub p_durability_none: f64,
    /// Probability that a commit uses 2-phase commit.
    pub p_two_phase: f64,
    /// Probability that a commit uses quick-repair (which implies 2-phase).
    pub p_quick_repair: f64,
    /// Distinct keys per table.
    pub key_space: u32,
    /// Largest generated value, in bytes.
    pub max_value_bytes: usize,
    /// Operation kinds and their weights (0 = switched off).
    pub weights: Vec<(OpKind, u32)>,
    /// Probability that an operation carries a crash inside it.
    pub inner_crash_rate: f64,
    /// Probability that a recovery (an open after a power loss or a
    /// restart) loses power itself, part way through.
    pub p_crash_in_recovery: f64,
    /// Compare the whole content with the model every this many operations.
    pub audit_every: u64,
}

/// The two disk faults the redb target leaves out unless asked, because
/// redb documents (or its design plainly takes) that the disk does not do
/// them; REDB.md shows what happens when it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HarshDisk {
    /// `--torn-garbage`: a torn sector may hold garbage instead of old or
    /// new bytes. redb's commit protocol rewrites its header (magic number,
    /// flags and both commit slots, 320 bytes in sector 0) in place and
    /// "relies on the fact that this is a single byte to perform atomic
    /// commits" (docs/design.md): a header sector left holding garbage is
    /// not a database any more.
    pub torn_garbage: bool,
    /// `--read-bitflips`: a read may return one flipped bit (transient).
    /// redb verifies page checksums only when it repairs or checks
    /// integrity, not on reads, and keeps what it read in its cache: it
    /// takes the storage to return right bytes or an error.
    pub read_bitflips: bool,
}

/// Default workload length per seed: a redb operation costs more I/O than
/// a segsim one (a commit writes pages, two headers and syncs; an open
/// after a crash walks every tree), so fewer make a run of similar length.
pub const DEFAULT_OPS: u64 = 200;

/// Salt so the configuration stream differs from the workload stream and
/// from the segsim target's configuration stream.
const CONFIG_SALT: u64 = 0x5245_4442_0000_0001;

/// One of a few fixed probabilities (a swarm dial with recognisable stops).
fn one_of(rng: &mut ChaCha8Rng, stops: &[f64]) -> f64 {
    stops[rng.gen_range(0..stops.len())]
}

impl RedbConfig {
    /// The configuration of `seed`, with `ops` and `crash_mode` forced if
    /// given. Torn sectors hold garbage only with `disk.torn_garbage`, and
    /// reads flip bits only with `disk.read_bitflips` (see
    /// [`RedbConfig::disk`] and REDB.md); both are drawn either way, so the
    /// rest of the configuration does not depend on them.
    pub fn from_seed(seed: u64, ops: Option<u64>, crash_mode: Option<CrashMode>, disk: HarshDisk) -> RedbConfig {
        let harsh = disk;
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ CONFIG_SALT);
        let drawn_mode = CrashMode::ALL[rng.gen_range(0..CrashMode::ALL.len())];
        let sector_bytes = if rng.gen_bool(0.5) { 512 } else { 4096 };
        let check_integrity_on_open = rng.gen_bool(0.5);
        let disk = DiskConfig {
            crash_mode: crash_mode.unwrap_or(drawn_mode),
            sector_bytes,
            p_write_eio: maybe(&mut rng, 0.001, 0.02),
            p_short_write: rng.gen_range(0.0..1.0),
            p_fsync_eio: maybe(&mut rng, 0.001, 0.02),
            p_read_eio: maybe(&mut rng, 0.001, 0.02),
            p_bitflip: maybe(&mut rng, 0.001, 0.02),
            capacity_bytes: if rng.gen_bool(0.1) { rng.gen_range(64 << 10..512 << 10) } else { u64::MAX },
            p_media_corruption: if check_integrity_on_open { maybe(&mut rng, 0.02, 0.2) } else { 0.0 },
            p_torn_garbage: rng.gen_range(0.0..0.5),
            p_env_damage: 0.0,
        };
        let disk = DiskConfig {
            p_torn_garbage: if harsh.torn_garbage { disk.p_torn_garbage } else { 0.0 },
            p_bitflip: if harsh.read_bitflips { disk.p_bitflip } else { 0.0 },
            ..disk
        };
        let cache_bytes = [16 << 10, 64 << 10, 256 << 10, 1 << 30][rng.gen_range(0..4)];
        let p_durability_none = one_of(&mut rng, &[0.0, 0.3, 0.7]);
        let p_two_phase = one_of(&mut rng, &[0.0, 0.5, 1.0]);
        let p_quick_repair = one_of(&mut rng, &[0.0, 0.3]);
        let weights = swarm_weights(&mut rng, &OpKind::BASE_WEIGHTS, OpKind::essential);
        let max_value_bytes = match rng.gen_range(0..20) {
            0 => 20_000,
            1 | 2 => 3_000,
            _ => 24,
        };
        RedbConfig {
            seed,
            ops: ops.unwrap_or(DEFAULT_OPS),
            disk,
            cache_bytes,
            check_integrity_on_open,
            p_durability_none,
            p_two_phase,
            p_quick_repair,
            key_space: rng.gen_range(4..64),
            max_value_bytes,
            weights,
            inner_crash_rate: rng.gen_range(0.0..0.05),
            audit_every: rng.gen_range(16..64),
            p_crash_in_recovery: one_of(&mut rng, &[0.0, 0.0, 0.2]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_draws_the_same_configuration_and_overrides_win() {
        let a = RedbConfig::from_seed(42, None, None, HarshDisk::default());
        let b = RedbConfig::from_seed(42, None, None, HarshDisk::default());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let harsh = HarshDisk { torn_garbage: true, read_bitflips: true };
        let configs: Vec<(RedbConfig, RedbConfig)> = (0..50)
            .map(|s| {
                (
                    RedbConfig::from_seed(s, None, None, HarshDisk::default()),
                    RedbConfig::from_seed(s, None, None, harsh),
                )
            })
            .collect();
        assert!(configs.iter().all(|(mild, _)| mild.disk.p_torn_garbage == 0.0 && mild.disk.p_bitflip == 0.0));
        assert!(
            configs.iter().any(|(_, h)| h.disk.p_torn_garbage > 0.0)
                && configs.iter().any(|(_, h)| h.disk.p_bitflip > 0.0)
        );
        assert!(configs.iter().all(|(mild, h)| mild.cache_bytes == h.cache_bytes && mild.key_space == h.key_space));
        let forced = RedbConfig::from_seed(42, Some(7), Some(CrashMode::Reorder), HarshDisk::default());
        assert_eq!((forced.ops, forced.disk.crash_mode), (7, CrashMode::Reorder));
    }

    #[test]
    fn media_corruption_only_where_redb_promises_to_report_it() {
        let configs: Vec<RedbConfig> =
            (0..200).map(|s| RedbConfig::from_seed(s, None, None, HarshDisk::default())).collect();
        assert!(configs.iter().any(|c| c.disk.p_media_corruption > 0.0));
        for c in &configs {
            assert!(c.check_integrity_on_open || c.disk.p_media_corruption == 0.0, "seed {}", c.seed);
            c.disk.assert_valid();
        }
        assert!(configs.iter().any(|c| c.p_durability_none > 0.0) && configs.iter().any(|c| c.cache_bytes < 1 << 20));
    }
}
