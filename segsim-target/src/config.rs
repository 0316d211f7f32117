//! The swarm configuration: everything about a run that the seed decides
//! before the first operation.
//!
//! Swarm testing (Groce et al.): rather than one "realistic" mix, each seed
//! draws its own — fsync policy, crash mode, sector size, which fault kinds
//! are on (often none), key space, tables and spans, and which command
//! kinds exist at all. A bug that needs, say, many field TTLs and no
//! rewrites is found by the seeds that happen to look like that.

use engine::aof::FsyncPolicy;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::canary::Canary;
use simulator::disk::{CrashMode, DiskConfig, FsProfile};
use simulator::disk_swarm::DiskSwarm;
use simulator::draw::swarm_weights;

/// The workload operation kinds whose weights the swarm draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum OpKind {
    Set,
    Get,
    Del,
    HSet,
    HGet,
    HDel,
    HGetAll,
    PExpireAt,
    Persist,
    HPExpireAt,
    FlushAll,
    Evict,
    Rewrite,
    Sync,
    Advance,
    Crash,
    Restart,
    SecondOpen,
    Kill,
    Exists,
    PTtl,
    HMGet,
    HLen,
    HExists,
    HIncrBy,
    HSetNx,
}

impl OpKind {
    /// Every kind, with its base weight (before the swarm switches some off).
    pub const BASE_WEIGHTS: [(OpKind, u32); 26] = [
        (OpKind::Set, 6),
        (OpKind::Get, 5),
        (OpKind::Del, 3),
        (OpKind::HSet, 30),
        (OpKind::HGet, 8),
        (OpKind::HDel, 3),
        (OpKind::HGetAll, 6),
        (OpKind::PExpireAt, 2),
        (OpKind::Persist, 1),
        (OpKind::HPExpireAt, 2),
        (OpKind::FlushAll, 1),
        (OpKind::Evict, 6),
        (OpKind::Rewrite, 2),
        (OpKind::Sync, 2),
        (OpKind::Advance, 6),
        (OpKind::Crash, 1),
        (OpKind::Restart, 1),
        (OpKind::SecondOpen, 1),
        (OpKind::Kill, 1),
        (OpKind::Exists, 2),
        (OpKind::PTtl, 2),
        (OpKind::HMGet, 3),
        (OpKind::HLen, 3),
        (OpKind::HExists, 2),
        (OpKind::HIncrBy, 3),
        (OpKind::HSetNx, 2),
    ];

    /// Kinds the swarm never switches off: without them a run tests little.
    fn essential(self) -> bool {
        matches!(self, OpKind::HSet | OpKind::Evict | OpKind::Advance)
    }
}

/// One windowed table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSpec {
    /// Table name (rows are `name:<id>`).
    pub name: String,
    /// The window column.
    pub column: String,
    /// The window span.
    pub span: i64,
}

/// A seed's whole configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The seed everything derives from.
    pub seed: u64,
    /// Workload operations to run.
    pub ops: u64,
    /// The store's fsync policy.
    pub fsync: FsyncPolicy,
    /// The simulated disk: crash mode, sector size, fault probabilities.
    pub disk: DiskConfig,
    /// Distinct row ids per table and distinct plain keys.
    pub key_space: u32,
    /// The windowed tables.
    pub tables: Vec<TableSpec>,
    /// Operation kinds and their weights (0 = switched off).
    pub weights: Vec<(OpKind, u32)>,
    /// Probability that an operation carries a crash inside it.
    pub inner_crash_rate: f64,
    /// Audit every this many operations.
    pub audit_every: u64,
    /// Largest generated value, in bytes.
    pub max_value_bytes: usize,
    /// The store opens with point-in-time recovery (`Options::point_in_time`):
    /// damage is cut, not refused, and nothing is swept in that open.
    pub point_in_time: bool,
}

/// Command-line overrides of the swarm's choices, and the planted bug a
/// run switches on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--ops`.
    pub ops: Option<u64>,
    /// `--fsync`.
    pub fsync: Option<FsyncPolicy>,
    /// `--crash-mode`.
    pub crash_mode: Option<CrashMode>,
    /// `--point-in-time`: force point-in-time recovery on.
    pub point_in_time: bool,
    /// `--fs`: the file-system profile the disk follows (default `posix`).
    /// It draws nothing: the seed's configuration is the same under every
    /// profile, only the disk's rules differ.
    pub fs: FsProfile,
    /// `--canary`: the engine bug to plant. Only the runner reads it, to
    /// switch it on in the engine; [`Config::from_seed`] ignores it, so
    /// the workload, the disk and the checker are the same with or
    /// without a canary.
    pub canary: Option<Canary>,
}

/// The segsim engine's part of the swarm's disk table
/// (`simulator::disk_swarm`): every fault on (the engine detects damage,
/// refuses torn garbage and flipped bits, and is held to silent faults and
/// damage no crash causes), failing fsyncs below 1%, and a disk as small as
/// 32 KiB for 15% of the seeds.
const DISK: DiskSwarm = DiskSwarm {
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

/// Default workload length per seed.
pub const DEFAULT_OPS: u64 = 400;

impl Config {
    /// The configuration of `seed`, with `overrides` applied (all but the
    /// canary, which is none of the configuration's business).
    pub fn from_seed(seed: u64, overrides: Overrides) -> Config {
        let Overrides { ops, fsync: fsync_override, crash_mode: crash_mode_override, point_in_time, fs, canary: _ } =
            overrides;
        let mut rng = ChaCha8Rng::seed_from_u64(simulator::seeds::config(seed));
        let fsync = match rng.gen_range(0..3) {
            0 => FsyncPolicy::Always,
            1 => FsyncPolicy::EverySec,
            _ => FsyncPolicy::No,
        };
        let mut disk = DISK.draw(&mut rng, fs);
        if let Some(mode) = crash_mode_override {
            disk.crash_mode = mode;
        }
        let tables = (0..rng.gen_range(1..=3))
            .map(|i| TableSpec { name: format!("t{i}"), column: "ts".to_string(), span: rng.gen_range(0..40) })
            .collect();
        let weights = swarm_weights(&mut rng, &OpKind::BASE_WEIGHTS, OpKind::essential);
        let mut config = Config {
            seed,
            ops: ops.unwrap_or(DEFAULT_OPS),
            fsync: fsync_override.unwrap_or(fsync),
            disk,
            key_space: rng.gen_range(4..64),
            tables,
            weights,
            inner_crash_rate: rng.gen_range(0.0..0.03),
            audit_every: rng.gen_range(16..64),
            max_value_bytes: if rng.gen_bool(0.1) { 4096 } else { 24 },
            point_in_time: false,
        };
        // Drawn last, so the draws above mean what they meant before these
        // existed: damage no crash causes, and point-in-time recovery for a
        // quarter of the seeds; then failing metadata operations and the
        // drive's silent faults (the table's later generations).
        DISK.draw_env_damage(&mut rng, &mut config.disk);
        config.point_in_time = point_in_time || rng.gen_bool(0.25);
        DISK.draw_late(&mut rng, &mut config.disk);
        config
    }

    /// The arguments that pin this configuration's overrides on a command
    /// line (for repro commands).
    pub fn override_args(overrides: &Overrides) -> String {
        let mut out = String::new();
        if let Some(ops) = overrides.ops {
            out.push_str(&format!(" --ops {ops}"));
        }
        if let Some(fsync) = overrides.fsync {
            out.push_str(&format!(" --fsync {}", fsync.name()));
        }
        if let Some(mode) = overrides.crash_mode {
            out.push_str(&format!(" --crash-mode {}", mode.name()));
        }
        if overrides.point_in_time {
            out.push_str(" --point-in-time");
        }
        if !overrides.fs.is_posix() {
            out.push_str(&format!(" --fs {}", overrides.fs.name));
        }
        if let Some(canary) = overrides.canary {
            out.push_str(&format!(" --canary {}", canary.name()));
        }
        out
    }

    /// The one command line that re-runs `seed` under `overrides`, with
    /// `extra` flags (` --check-determinism`, say) after them.
    pub fn repro(seed: u64, overrides: &Overrides, extra: &str) -> String {
        let features = if overrides.canary.is_some() { " --features canaries" } else { "" };
        format!("cargo run --release -p sim{features} -- --seed {seed}{}{extra}", Config::override_args(overrides))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_always_draws_the_same_configuration() {
        let a = Config::from_seed(42, Overrides::default());
        let b = Config::from_seed(42, Overrides::default());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn the_swarm_varies_and_overrides_win() {
        let configs: Vec<Config> = (0..64).map(|s| Config::from_seed(s, Overrides::default())).collect();
        assert!(configs.iter().any(|c| c.fsync == FsyncPolicy::Always));
        assert!(configs.iter().any(|c| c.fsync == FsyncPolicy::No));
        assert!(configs.iter().any(|c| c.disk.p_fsync_eio == 0.0));
        assert!(configs.iter().any(|c| c.disk.p_fsync_eio > 0.0));
        assert!(configs.iter().any(|c| c.weights.iter().any(|(_, w)| *w == 0)));
        let pinned = Overrides {
            ops: Some(7),
            fsync: Some(FsyncPolicy::EverySec),
            crash_mode: Some(CrashMode::Strict),
            point_in_time: false,
            fs: FsProfile::EXT4,
            canary: None,
        };
        let c = Config::from_seed(3, pinned);
        assert_eq!((c.ops, c.fsync, c.disk.crash_mode), (7, FsyncPolicy::EverySec, CrashMode::Strict));
        assert_eq!(c.disk.fs, FsProfile::EXT4);
        assert_eq!(Config::override_args(&pinned), " --ops 7 --fsync everysec --crash-mode strict --fs ext4");
        assert_eq!(
            Config::repro(3, &pinned, " --trace"),
            "cargo run --release -p sim -- --seed 3 --ops 7 --fsync everysec --crash-mode strict --fs ext4 --trace"
        );
    }

    #[cfg(feature = "canaries")]
    #[test]
    fn a_canary_changes_nothing_the_seed_decides() {
        for canary in crate::canary::Canary::ALL {
            let planted = Overrides { canary: Some(canary), ..Overrides::default() };
            for seed in 0..8 {
                let with = Config::from_seed(seed, planted);
                let without = Config::from_seed(seed, Overrides::default());
                assert_eq!(format!("{with:?}"), format!("{without:?}"), "{}", canary.name());
            }
            let repro = Config::repro(5, &planted, "");
            assert!(repro.contains("--features canaries") && repro.contains(canary.name()), "{repro}");
        }
    }
}
