//! A kit seed's swarm configuration: everything a seed decides before its
//! first operation — the simulated disk (crash mode, sector size, which
//! faults and how often), the engine's own knobs (drawn by the adapter),
//! and the workload's shape (key space, value sizes, which operation kinds
//! exist, how often each commit level is used).
//!
//! Swarm testing (Groce et al.): each seed draws its own mix, so a
//! bug that needs, say, only volatile commits and no maintenance is found
//! by the seeds that happen to look like that. The stream is salted by the
//! target's name, so two targets' seeds are unrelated.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Adapter, Level, Promise, Spec};
use simulator::disk::{CrashMode, DiskConfig, FsProfile};
use simulator::disk_swarm::DiskSwarm;
use simulator::draw::swarm_weights;

/// The operation kinds whose weights the swarm draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub(super) enum OpKind {
    Put,
    Delete,
    Get,
    Scan,
    Commit,
    Abort,
    Maintain,
    Restart,
    Crash,
    ReaderBegin,
    ReaderGet,
    ReaderScan,
    ReaderEnd,
}

impl OpKind {
    /// Every kind with its base weight, before the swarm switches some off.
    const BASE_WEIGHTS: [(OpKind, u32); 9] = [
        (OpKind::Put, 30),
        (OpKind::Delete, 8),
        (OpKind::Get, 10),
        (OpKind::Scan, 3),
        (OpKind::Commit, 12),
        (OpKind::Abort, 2),
        (OpKind::Maintain, 1),
        (OpKind::Restart, 2),
        (OpKind::Crash, 2),
    ];

    /// A reader's steps and their weights, with more than one client:
    /// mostly reads, so a reader often stays open across commits.
    const READER_WEIGHTS: [(OpKind, u32); 4] =
        [(OpKind::ReaderBegin, 3), (OpKind::ReaderGet, 8), (OpKind::ReaderScan, 2), (OpKind::ReaderEnd, 2)];

    /// Without writes and commits there is nothing to lose.
    fn essential(self) -> bool {
        matches!(self, OpKind::Put | OpKind::Commit)
    }
}

/// A seed's whole configuration for a kit target.
#[derive(Clone, Debug)]
pub struct KitConfig<C> {
    /// The seed everything derives from.
    pub seed: u64,
    /// Workload operations to run.
    pub ops: u64,
    /// The simulated disk.
    pub disk: DiskConfig,
    /// The engine's configuration, drawn by the adapter.
    pub engine: C,
    /// What the engine, so configured, is and promises
    /// ([`Adapter::spec`]): whether it detects damage (so the disk damages
    /// durable bytes at some power losses), what each level promises.
    pub spec: Spec,
    /// Distinct keys per table.
    pub key_space: u32,
    /// Largest generated value, in bytes.
    pub max_value_bytes: usize,
    /// Operation kinds and their weights (0 = switched off).
    pub(super) weights: Vec<(OpKind, u32)>,
    /// Per commit level, its weight (at least one above zero).
    pub level_weights: Vec<(usize, u32)>,
    /// Probability that an operation carries a crash inside it.
    pub inner_crash_rate: f64,
    /// Probability that a recovery loses power itself, part way through.
    pub p_crash_in_recovery: f64,
    /// Compare the whole content with the model every this many operations.
    pub audit_every: u64,
    /// Clients: the writer, and `clients - 1` readers beside it (see
    /// [`super::Readers`]); 1 unless the run asks for more (`--clients`).
    pub clients: usize,
    /// Readers also step inside the writer's operations, between two of
    /// its I/Os (`--interleave`; `interleave.rs`). Drawn nothing from the
    /// seed's streams: off, a run is what it was.
    pub interleave: bool,
    /// A second writer runs transactions in turn with the writer, on a
    /// reader's connection (`second_writer.rs`): drawn per seed from a
    /// stream of its own ([`KitConfig::draw_second_writer`]), so a seed
    /// that does not draw it is what it was.
    pub second_writer: bool,
}

/// The disk faults a run asks for beyond what the adapter tolerates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Harsh {
    /// `--torn-garbage`: a torn sector may hold garbage.
    pub torn_garbage: bool,
    /// `--read-bitflips`: a read may return one flipped bit (transient).
    pub read_bitflips: bool,
}

/// One of a few fixed probabilities (a swarm dial with recognisable stops).
fn one_of(rng: &mut ChaCha8Rng, stops: &[f64]) -> f64 {
    stops[rng.gen_range(0..stops.len())]
}

/// A kit target's part of the swarm's disk table (`simulator::disk_swarm`):
/// media corruption only for an engine that detects damage, torn garbage
/// and flipped bits only if it tolerates them or the run asks for them
/// (`allowed`), failing fsyncs below 2%, a disk no smaller than 64 KiB for
/// 10% of the seeds, and neither damage no crash causes nor silent faults
/// (segsim's, issue 25: a target's page says what its format binds before
/// they are turned on for it).
fn disk_swarm(detects_damage: bool, allowed: Harsh) -> DiskSwarm {
    DiskSwarm {
        crash_mode_from_u64: true,
        p_fsync_eio_max: 0.02,
        p_capacity_limited: 0.1,
        min_capacity_bytes: 64 << 10,
        media_corruption: detects_damage,
        torn_garbage: allowed.torn_garbage,
        read_bitflips: allowed.read_bitflips,
        env_damage: false,
        silent_faults: false,
    }
}

impl<C> KitConfig<C> {
    /// The configuration of `seed` for `adapter`, with `ops` and
    /// `crash_mode` forced if given, the engine's `options` applied (they
    /// were checked when the settings were made: see
    /// [`super::Kit::set_option`]), and the `harsh` faults on whether or
    /// not the adapter tolerates them. The configuration's spec must have
    /// the shape of `reference` (the kit's: [`super::Kit::spec`]).
    pub fn from_seed<A: Adapter<Config = C>>(
        adapter: &A,
        reference: &Spec,
        seed: u64,
        ops: Option<u64>,
        crash_mode: Option<CrashMode>,
        harsh: Harsh,
        options: &[(String, String)],
    ) -> KitConfig<C> {
        let mut rng = ChaCha8Rng::seed_from_u64(simulator::seeds::kit_config(seed, adapter.name()));
        let engine = adapter.configure_with(&mut rng, options).expect("options are checked when they are set");
        let spec = adapter.spec(&engine);
        spec.check();
        spec.check_shape(reference);
        let tolerated = spec.tolerates;
        let allowed = Harsh {
            torn_garbage: tolerated.torn_garbage || harsh.torn_garbage,
            read_bitflips: tolerated.read_bitflips || harsh.read_bitflips,
        };
        let swarm = disk_swarm(spec.detects_damage, allowed);
        // The run's profile is set by `Kit::config` (it draws nothing).
        let mut disk = swarm.draw(&mut rng, FsProfile::POSIX);
        if let Some(mode) = crash_mode {
            disk.crash_mode = mode;
        }
        let mut weights = swarm_weights(&mut rng, &OpKind::BASE_WEIGHTS, OpKind::essential);
        if spec.maintenance.is_none() {
            weights.retain(|(kind, _)| *kind != OpKind::Maintain);
        }
        let level_weights = draw_level_weights(&mut rng, spec.levels.len());
        let max_value_bytes = match rng.gen_range(0..20) {
            0 => 20_000,
            1 | 2 => 3_000,
            _ => 24,
        };
        let mut config = KitConfig {
            seed,
            ops: ops.unwrap_or(spec.default_ops),
            disk,
            engine,
            spec,
            key_space: rng.gen_range(4..64),
            max_value_bytes,
            weights,
            level_weights,
            inner_crash_rate: rng.gen_range(0.0..0.05),
            audit_every: rng.gen_range(16..64),
            p_crash_in_recovery: one_of(&mut rng, &[0.0, 0.0, 0.2]),
            clients: 1,
            interleave: false,
            second_writer: false,
        };
        // Drawn last, so the draws above mean what they meant before it:
        // opens, renames, unlinks, directory fsyncs, set_len and locks fail.
        swarm.draw_env_damage(&mut rng, &mut config.disk);
        swarm.draw_late(&mut rng, &mut config.disk);
        config
    }

    /// Draw this seed's clients, up to `max_clients` (`--clients`), from
    /// their own stream: a seed that draws one client (or a run without
    /// `--clients`) keeps every draw of the rest, and its trace. With more,
    /// the readers' steps join the workload's kinds, at their weights.
    pub fn draw_clients(&mut self, max_clients: usize) {
        assert!(max_clients >= 1, "at least the writer");
        let readers = self.spec.max_readers();
        assert!(max_clients <= readers + 1, "--clients {max_clients}: the engine allows {readers} readers");
        if max_clients == 1 {
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(simulator::seeds::kit_clients(self.seed));
        self.clients = rng.gen_range(1..=max_clients);
        if self.clients > 1 {
            self.weights.extend(OpKind::READER_WEIGHTS);
        }
    }

    /// Draw whether a second writer runs beside the writer: half the
    /// seeds with readers, on an engine that allows one
    /// ([`super::Readers::second_writer_refused_at`] names its refusals),
    /// from a stream of its own (salt "WRITER2").
    pub fn draw_second_writer(&mut self) {
        let allowed = self.spec.readers.is_some_and(|readers| !readers.second_writer_refused_at.is_empty());
        if self.clients < 2 || !allowed {
            return;
        }
        let salt = 0x5752_4954_4552_3200;
        let mut rng = ChaCha8Rng::seed_from_u64(simulator::seeds::mix64(self.seed ^ salt));
        self.second_writer = rng.gen_bool(0.5);
    }
}

impl<C> KitConfig<C> {
    /// What a commit at `level` promises, so configured.
    pub fn promise(&self, level: usize) -> Promise {
        self.spec.levels[level].promise
    }

    /// What a commit at `level` that returned `Ok` promises, and whether a
    /// process kill keeps it: its level's, except for a commit of a
    /// transaction that changed nothing (`empty`: `Model::changes_nothing`)
    /// where the spec says such a commit touches nothing
    /// (`!Spec::empty_commit_makes_durable`): see `acknowledged_by`. The
    /// one rule of the run loop and `crash-os`.
    pub fn acknowledged(&self, level: usize, empty: bool) -> (Promise, bool) {
        acknowledged_by(self.spec.levels[level], empty && !self.spec.empty_commit_makes_durable)
    }

    /// The seed's draw in one line, for reports (`drew: ...`): `engine`
    /// (the adapter's [`Adapter::describe_config`]), what each commit level
    /// promises so configured, the disk (crash mode, sector size,
    /// file-system profile) and the clients.
    pub fn drew(&self, engine: &[(String, String)]) -> String {
        let mut parts = Vec::new();
        if !engine.is_empty() {
            parts.push(engine.iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>().join(" "));
        }
        let promises: Vec<String> =
            self.spec.levels.iter().map(|level| format!("{} {}", level.name, level.promise.name())).collect();
        parts.push(format!("promises: {}", promises.join(", ")));
        let disk = &self.disk;
        parts.push(format!(
            "disk: crash-mode {}, {}-byte sectors, fs {}",
            disk.crash_mode.name(),
            disk.sector_bytes,
            disk.fs.name
        ));
        parts.push(format!("clients {}", self.clients));
        if self.interleave {
            parts.push("interleaved".to_string());
        }
        if self.second_writer {
            parts.push("a second writer".to_string());
        }
        parts.join("; ")
    }

    /// Whether the seed's workload draws the engine's maintenance at all
    /// (the swarm may switch it off; an engine without one never does).
    pub fn draws_maintenance(&self) -> bool {
        self.weights.iter().any(|(kind, weight)| *kind == OpKind::Maintain && *weight > 0)
    }
}

/// Each level's weight: 0, 1 or 3, at least one above zero (the first, if
/// the draw switched every one off).
fn draw_level_weights(rng: &mut ChaCha8Rng, levels: usize) -> Vec<(usize, u32)> {
    assert!(levels > 0, "an adapter declares at least one commit level");
    let mut weights: Vec<(usize, u32)> = (0..levels).map(|level| (level, [0, 1, 3][rng.gen_range(0..3)])).collect();
    if weights.iter().all(|(_, w)| *w == 0) {
        weights[0].1 = 1;
    }
    weights
}

/// What a commit at `declared` that returned `Ok` promises, and whether a
/// process kill keeps it. `touches_nothing`: an empty commit of an engine
/// that returns before its log for one (fjall's empty batch, `src/batch/
/// mod.rs` line 101): it makes nothing before it durable (a `Durable`
/// level promises `Eventual`), and nothing before it reaches the
/// operating system either, so a kill keeps only what earlier commits'
/// own levels keep (FJALL.md, seed 1108: a `none` commit still in fjall's
/// buffer, then an empty `sync-data` commit, then a kill).
fn acknowledged_by(declared: Level, touches_nothing: bool) -> (Promise, bool) {
    if !touches_nothing {
        return (declared.promise, declared.survives_process_kill);
    }
    let promise = match declared.promise {
        Promise::Durable => Promise::Eventual,
        promise => promise,
    };
    (promise, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 1108 of fjall: the empty `sync-data` commit after a `none`
    /// one was taken to survive a kill, so the kill's loss of the `none`
    /// commit (still in fjall's buffer) failed `durability`.
    #[test]
    fn an_empty_commit_that_touches_nothing_keeps_nothing_through_a_kill() {
        let sync_data = Level::new("sync-data", Promise::Durable);
        assert_eq!(acknowledged_by(sync_data, false), (Promise::Durable, true));
        assert_eq!(acknowledged_by(sync_data, true), (Promise::Eventual, false));
        let buffer = Level::new("buffer", Promise::Eventual);
        assert_eq!(acknowledged_by(buffer, true), (Promise::Eventual, false));
    }

    #[test]
    fn names_salt_their_streams_apart() {
        use simulator::seeds::kit_config;
        assert_ne!(kit_config(1, "redb"), kit_config(1, "logkv"));
        assert_eq!(kit_config(1, "redb"), kit_config(1, "redb"));
    }

    #[test]
    fn level_weights_keep_one_level() {
        for seed in 0..200 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let weights = draw_level_weights(&mut rng, 1 + (seed % 4) as usize);
            assert!(weights.iter().any(|(_, w)| *w > 0));
        }
    }
}
