//! The segsim target: this repository's own store (`engine`), the
//! default. Everything it does is the simulator's segsim machinery behind
//! the [`Target`] trait — the swarm configuration ([`Config`]), the
//! workload (`workload::generate`, `PlannedOp` lines), the random mode's run
//! ([`run_ops_with`]) — so the trait adds no second way to run the store.
//!
//! - `record.rs`: what `sim explore` records — the random mode's driver,
//!   watched as each operation begins.
//! - `recover.rs`: one crash image opened, dumped, audited and probed
//!   through the same driver, and the verdict in one context.
//!
//! Settings: the [`Overrides`] (fsync policy, crash mode, point-in-time,
//! the planted canary) and, for tests that prove the checker can fail, a
//! wrapper the engine sees the disk through ([`VfsWrap`]). The canary is
//! switched on per thread (`crate::canary::CanarySwitch`) by whatever
//! runs the engine: the run, the recording, each recovery.

mod damage;
#[cfg(test)]
mod explore_fault_tests;
#[cfg(test)]
mod explore_tests;
#[cfg(test)]
mod on_disk;
mod record;
mod recover;
#[cfg(test)]
mod replay_tests;
#[cfg(test)]
mod summary_tests;

use std::sync::Arc;

use engine::aof::FsyncPolicy;
use engine::phase::Phase;
use engine::vfs::Vfs;

use crate::canary::Canary;
use crate::config::{Config, Overrides};
use crate::run::run_ops_with;
use crate::workload::{generate, generate_for_explore, PlannedOp};
use crate::SEGSIM;
use simulator::disk::{ArmedFault, CrashMode, Damage, DiskConfig, DiskImage, FsProfile, InFlightWrite};
use simulator::failure::Check;
use simulator::outcome::SeedOutcome;
use simulator::seam::{
    DamageSite, DamageVerdict, DamageWays, Declared, DeclaredKind, ExploreDamage, ExploreDepth2, ExploreFaults,
    FaultedRecovery, FaultedRun, Recording, RecoveryRecording, Target,
};

pub use record::RecoveryContext;
use recover::Recovery;
pub use recover::{Outcome, Recovered};

/// What the engine is given instead of the simulated disk: the disk
/// itself ([`honest`]), or a test's wrapper that plants a bug under the
/// engine (`crate::planted`).
pub type VfsWrap = fn(Arc<dyn Vfs>) -> Arc<dyn Vfs>;

/// The disk as it is.
pub fn honest(disk: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    disk
}

/// The segsim target with its settings.
#[derive(Clone, Copy, Debug)]
pub struct SegsimTarget {
    /// The command line's overrides of the swarm, and the canary.
    pub overrides: Overrides,
    /// What the engine sees the disk through.
    pub wrap: VfsWrap,
}

impl Default for SegsimTarget {
    fn default() -> Self {
        SegsimTarget::new(Overrides::default())
    }
}

impl SegsimTarget {
    /// The store under `overrides`, on the honest disk.
    pub fn new(overrides: Overrides) -> Self {
        SegsimTarget { overrides, wrap: honest }
    }

    /// The store with `canary` planted and nothing else pinned.
    pub fn with_canary(canary: Option<Canary>) -> Self {
        SegsimTarget::new(Overrides { canary, ..Overrides::default() })
    }

    /// `seed`'s configuration under these settings.
    pub fn config(&self, seed: u64) -> Config {
        Config::from_seed(seed, self.overrides)
    }

    /// The disk of exploration: fault-free (the random mode's faults are
    /// drawn, exploration's one armed fault is not) and strict (the
    /// workload's own `CRASH` operations keep exactly what was synced),
    /// with the seed's sector size.
    fn explore_disk(config: &Config) -> DiskConfig {
        DiskConfig { fs: config.disk.fs, ..DiskConfig::fault_free(CrashMode::Strict, config.disk.sector_bytes) }
    }

    /// `image` of `seed`, to recover at `now_ms` on exploration's disk.
    fn recovery(&self, seed: u64, image: &DiskImage, now_ms: u64) -> Recovery {
        let config = self.config(seed);
        let disk = SegsimTarget::explore_disk(&config);
        Recovery::new(config, &disk, self.overrides, self.wrap, image, now_ms)
    }
}

impl Target for SegsimTarget {
    type Op = PlannedOp;
    type Context = RecoveryContext;
    type Recovered = Outcome;

    fn name(&self) -> &'static str {
        SEGSIM
    }

    fn is_default(&self) -> bool {
        true
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(fsync) = self.overrides.fsync {
            out.push(("fsync", fsync.name().to_string()));
        }
        if let Some(mode) = self.overrides.crash_mode {
            out.push(("crash-mode", mode.name().to_string()));
        }
        if self.overrides.point_in_time {
            out.push(("point-in-time", String::new()));
        }
        if !self.overrides.fs.is_posix() {
            out.push(("fs", self.overrides.fs.name.to_string()));
        }
        out
    }

    fn with_setting(mut self, key: &str, value: &str) -> Result<Self, String> {
        match key {
            "fsync" => {
                self.overrides.fsync = Some(FsyncPolicy::parse(value).ok_or_else(|| format!("bad fsync {value:?}"))?);
            }
            "crash-mode" => {
                self.overrides.crash_mode =
                    Some(CrashMode::parse(value).ok_or_else(|| format!("bad crash mode {value:?}"))?);
            }
            "point-in-time" if value.is_empty() => self.overrides.point_in_time = true,
            "fs" => self.overrides.fs = FsProfile::parse_or_list(value)?,
            _ => return Err(format!("the segsim target has no setting {key:?}")),
        }
        Ok(self)
    }

    fn generate(&self, seed: u64) -> Vec<PlannedOp> {
        generate(&self.config(seed))
    }

    fn parse_op(&self, line: &str) -> Result<PlannedOp, String> {
        PlannedOp::parse(line)
    }

    fn run(&self, seed: u64, ops: &[PlannedOp], keep_trace: bool) -> SeedOutcome {
        run_ops_with(&self.config(seed), self.overrides, ops, keep_trace, &self.wrap)
    }

    fn repro(&self, seed: u64, extra: &str) -> String {
        Config::repro(seed, &self.overrides, extra)
    }

    fn explore_workload(&self, seed: u64, ops: u64) -> Vec<PlannedOp> {
        let config = Config::from_seed(seed, Overrides { ops: Some(ops), ..self.overrides });
        // Biased toward evict → change a cold row → rewrite → crash.
        let mut workload = generate_for_explore(&config);
        for planned in &mut workload {
            planned.crash = None;
        }
        workload
    }

    fn explore_repro(&self, seed: u64, ops: u64, extra: &str) -> String {
        let canary = self.overrides.canary;
        let features = if canary.is_some() { " --features canaries" } else { "" };
        let mut command = format!("cargo run --release -p sim{features} -- explore --seed {seed} --ops {ops}");
        if let Some(canary) = canary {
            command.push_str(&format!(" --canary {}", canary.name()));
        }
        if let Some(fsync) = self.overrides.fsync {
            command.push_str(&format!(" --fsync {}", fsync.name()));
        }
        command + extra
    }

    fn sector_bytes(&self, seed: u64) -> u64 {
        self.config(seed).disk.sector_bytes
    }

    fn explore_facts(&self, seed: u64) -> Vec<(&'static str, String)> {
        let mut facts = vec![("fsync", self.config(seed).fsync.name().to_string())];
        if !self.overrides.fs.is_posix() {
            facts.push(("fs", self.overrides.fs.name.to_string()));
        }
        facts
    }

    fn explore_declared(&self, _seed: u64) -> Vec<Declared> {
        // Every phase the engine marks (its protocols' steps, and the end
        // of an open), then the admin calls the motifs draw: every seed's
        // workload can draw each of them.
        let phase = |phase: &Phase| Declared { kind: DeclaredKind::Phase, name: phase.to_string(), drawable: true };
        let admin = |name: &&str| Declared { kind: DeclaredKind::Operation, name: name.to_string(), drawable: true };
        Phase::ALL.iter().map(phase).chain(record::ADMIN_OPS.iter().map(admin)).collect()
    }

    fn fs_profile(&self) -> FsProfile {
        self.overrides.fs
    }

    fn record(&self, seed: u64, workload: &[PlannedOp]) -> Recording<RecoveryContext> {
        let config = self.config(seed);
        record::record(&config, &SegsimTarget::explore_disk(&config), self.overrides, self.wrap, workload)
    }

    fn recovery_key(&self, context: &RecoveryContext) -> u64 {
        // Recovery reads the clock (expiry): the same image at two times
        // is two recoveries.
        context.now_ms
    }

    fn recover(&self, seed: u64, image: &DiskImage, now_ms: u64) -> Outcome {
        self.recovery(seed, image, now_ms).run()
    }

    fn judge(&self, recovered: &Outcome, context: &RecoveryContext) -> Result<(), (Check, String)> {
        recover::judge(recovered, context)
    }

    fn damage(&self) -> Option<&dyn ExploreDamage<RecoveryContext>> {
        Some(self)
    }

    fn depth2(&self) -> Option<&dyn ExploreDepth2<RecoveryContext>> {
        Some(self)
    }

    fn faults(&self) -> Option<&dyn ExploreFaults<PlannedOp, Outcome>> {
        Some(self)
    }
}

impl ExploreDepth2<RecoveryContext> for SegsimTarget {
    fn record_recovery(&self, seed: u64, image: &DiskImage, now_ms: u64) -> RecoveryRecording<RecoveryContext> {
        self.recovery(seed, image, now_ms).record()
    }
}

impl ExploreFaults<PlannedOp, Outcome> for SegsimTarget {
    fn recover_with_fault(
        &self,
        seed: u64,
        image: &DiskImage,
        now_ms: u64,
        fault: Option<(u64, ArmedFault)>,
    ) -> FaultedRecovery<Outcome> {
        self.recovery(seed, image, now_ms).run_with_fault(fault)
    }

    fn run_with_fault(&self, seed: u64, workload: &[PlannedOp], fault: (u64, ArmedFault)) -> FaultedRun {
        let config = self.config(seed);
        let disk = SegsimTarget::explore_disk(&config);
        record::run_with_fault(&config, &disk, self.overrides, self.wrap, workload, fault)
    }

    fn same_recovery(&self, faulted: &Outcome, plain: &Outcome) -> Result<(), (Check, String)> {
        recover::same_recovery(faulted, plain)
    }
}

impl ExploreDamage<RecoveryContext> for SegsimTarget {
    fn damage_sites(&self, _seed: u64, image: &DiskImage) -> Vec<DamageSite> {
        // The records lie where the engine under test wrote them: a planted
        // bug that changes the format (`aof-place-ignored` writes the old,
        // place-free checksum) is walked in its own format, so its frames
        // are found and damaged like any others.
        let _canary = crate::canary::CanarySwitch::on(self.overrides.canary);
        damage::sites(image)
    }

    fn in_flight_damage_sites(
        &self,
        _seed: u64,
        image: &DiskImage,
        in_flight: &[InFlightWrite<'_>],
    ) -> Vec<DamageSite> {
        // In the planted engine's format, as for `damage_sites`.
        let _canary = crate::canary::CanarySwitch::on(self.overrides.canary);
        damage::in_flight_sites(image, in_flight)
    }

    fn damage_ways(&self) -> &'static [DamageWays] {
        damage::DAMAGE_WAYS
    }

    fn opens_at_a_point_in_time(&self) -> bool {
        true
    }

    fn recover_damaged(
        &self,
        seed: u64,
        image: &DiskImage,
        damage: &Damage,
        point_in_time: bool,
        context: &RecoveryContext,
    ) -> Result<DamageVerdict, (Check, String)> {
        damage::recover(self, seed, image, damage, point_in_time, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Op;
    use simulator::shrink::{ops_file, parse_ops_file};

    #[test]
    fn op_lists_round_trip_through_the_ops_file() {
        let overrides = Overrides {
            ops: None,
            fsync: Some(FsyncPolicy::No),
            crash_mode: Some(CrashMode::Reorder),
            point_in_time: true,
            fs: FsProfile::XFS,
            canary: None,
        };
        let ops = vec![
            PlannedOp { index: 0, op: Op::Evict, crash: None },
            PlannedOp { index: 5, op: Op::Advance(12), crash: None },
        ];
        let text = ops_file(&SegsimTarget::new(overrides), 7, &ops, "found by a test\nsecond line");
        assert_eq!(
            text,
            "# found by a test\n# second line\nseed 7\nfsync no\ncrash-mode reorder\npoint-in-time\nfs xfs\n0 EVICT\n5 ADVANCE 12\n"
        );
        let (target, seed, parsed) = parse_ops_file(SegsimTarget::default(), &text).unwrap();
        assert_eq!((target.overrides, seed, parsed), (overrides, 7, ops));
        assert!(parse_ops_file(SegsimTarget::default(), "0 EVICT").unwrap_err().contains("seed"));
        assert!(parse_ops_file(SegsimTarget::default(), "seed 1\nfrob").unwrap_err().starts_with("line 2"));
        let unknown = parse_ops_file(SegsimTarget::default(), "seed 1\nfs zfs").unwrap_err();
        assert!(unknown.contains("posix, ext4, ext4-noauto, xfs, btrfs"), "{unknown}");
        assert!(SegsimTarget::new(overrides).repro(7, "").contains(" --fs xfs"));
    }
}
