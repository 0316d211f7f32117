//! The redb target: crates.io `redb` 4, a database nobody here wrote, run
//! on the simulated disk through [`VfsBackend`] and held to a reference
//! model by the same kinds of checks the segsim target gets. REDB.md says
//! what is tested, what redb promises, and what was found.
//!
//! - `backend.rs`: redb's `StorageBackend` over one simulated file, and
//!   the planted bugs ([`Plant`]).
//! - `config.rs`: the swarm configuration a seed draws.
//! - `workload.rs`: the operations (puts, removes, reads, commits with
//!   either durability, aborts, compaction, clean restarts, power losses),
//!   their lines, generation.
//! - `model.rs`: the reference model and the durability rule.
//! - `run.rs`: one seed's run.
//! - `explore.rs`: what `sim explore` needs from this target.

mod backend;
mod config;
mod explore;
mod model;
mod run;
mod workload;

pub use backend::{Plant, VfsBackend};
pub use config::{HarshDisk, OpKind, RedbConfig, DEFAULT_OPS};
pub use explore::RedbRecovered;
pub use model::{Accepted, Model, Pending, State};
pub use run::{run_ops, DB_DIR, DB_FILE};
pub use workload::{generate, CommitMode, Key, PlannedRedbOp, RedbOp, Table};

use crate::disk::{CrashMode, DiskImage};
use crate::failure::Check;
use crate::outcome::SeedOutcome;

use super::{Recording, RecoveryRecording, Target, TargetName};

/// The redb target with its settings (see [`Target::settings`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RedbTarget {
    /// `--ops`: operations per seed (default [`DEFAULT_OPS`]).
    pub ops: Option<u64>,
    /// `--crash-mode`: force the disk's crash mode.
    pub crash_mode: Option<CrashMode>,
    /// `--plant`: a bug planted under redb.
    pub plant: Option<Plant>,
    /// `--torn-garbage`, `--read-bitflips`: the disk faults left out by
    /// default ([`HarshDisk`]).
    pub harsh: HarshDisk,
}

impl RedbTarget {
    /// `seed`'s configuration under these settings.
    pub fn config(&self, seed: u64) -> RedbConfig {
        RedbConfig::from_seed(seed, self.ops, self.crash_mode, self.harsh)
    }

    /// The flags that pin these settings, but the op count, on a command
    /// line.
    fn flags(&self) -> String {
        let mut out = String::new();
        if let Some(mode) = self.crash_mode {
            out.push_str(&format!(" --crash-mode {}", mode.name()));
        }
        if let Some(plant) = self.plant {
            out.push_str(&format!(" --plant {}", plant.name()));
        }
        if self.harsh.torn_garbage {
            out.push_str(" --torn-garbage");
        }
        if self.harsh.read_bitflips {
            out.push_str(" --read-bitflips");
        }
        out
    }
}

impl Target for RedbTarget {
    type Op = PlannedRedbOp;
    type Context = Model;
    type Recovered = RedbRecovered;

    fn name(&self) -> TargetName {
        TargetName::Redb
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(mode) = self.crash_mode {
            out.push(("crash-mode", mode.name().to_string()));
        }
        if let Some(plant) = self.plant {
            out.push(("plant", plant.name().to_string()));
        }
        if self.harsh.torn_garbage {
            out.push(("torn-garbage", "on".to_string()));
        }
        if self.harsh.read_bitflips {
            out.push(("read-bitflips", "on".to_string()));
        }
        out
    }

    fn with_setting(mut self, key: &str, value: &str) -> Result<Self, String> {
        match key {
            "crash-mode" => {
                self.crash_mode = Some(CrashMode::parse(value).ok_or_else(|| format!("bad crash mode {value:?}"))?);
            }
            "plant" => self.plant = Some(Plant::parse(value)?),
            "torn-garbage" if value == "on" => self.harsh.torn_garbage = true,
            "read-bitflips" if value == "on" => self.harsh.read_bitflips = true,
            _ => return Err(format!("the redb target has no setting {key:?}")),
        }
        Ok(self)
    }

    fn generate(&self, seed: u64) -> Vec<PlannedRedbOp> {
        generate(&self.config(seed))
    }

    fn parse_op(&self, line: &str) -> Result<PlannedRedbOp, String> {
        PlannedRedbOp::parse(line)
    }

    fn run(&self, seed: u64, ops: &[PlannedRedbOp], keep_trace: bool) -> SeedOutcome {
        run_ops(&self.config(seed), self.plant, self.repro(seed, ""), ops, keep_trace)
    }

    fn repro(&self, seed: u64, extra: &str) -> String {
        let ops = self.ops.map_or(String::new(), |ops| format!(" --ops {ops}"));
        format!("cargo run --release -p sim -- --target redb --seed {seed}{ops}{}{extra}", self.flags())
    }

    fn explore_workload(&self, seed: u64, ops: u64) -> Vec<PlannedRedbOp> {
        let config = RedbConfig::from_seed(seed, Some(ops), self.crash_mode, self.harsh);
        let mut workload = generate(&config);
        for planned in &mut workload {
            planned.crash = None;
        }
        workload
    }

    fn explore_repro(&self, seed: u64, ops: u64, extra: &str) -> String {
        format!("cargo run --release -p sim -- explore --target redb --seed {seed} --ops {ops}{}{extra}", self.flags())
    }

    fn sector_bytes(&self, seed: u64) -> u64 {
        self.config(seed).disk.sector_bytes
    }

    fn torn_garbage(&self) -> bool {
        self.harsh.torn_garbage
    }

    fn record(&self, seed: u64, workload: &[PlannedRedbOp]) -> Recording<Model> {
        explore::record(&self.config(seed), self.plant, workload)
    }

    fn recovery_key(&self, _context: &Model) -> u64 {
        // redb reads no clock: a recovery depends on the image alone.
        0
    }

    fn recover(&self, seed: u64, image: &DiskImage, _key: u64) -> RedbRecovered {
        explore::recover(&self.config(seed), self.plant, image)
    }

    fn judge(&self, recovered: &RedbRecovered, context: &Model) -> Result<(), (Check, String)> {
        explore::judge(recovered, context)
    }

    fn records_recoveries(&self) -> bool {
        true
    }

    fn record_recovery(&self, seed: u64, image: &DiskImage, _key: u64) -> RecoveryRecording<Model> {
        explore::record_recovery(&self.config(seed), self.plant, image)
    }
}

#[cfg(test)]
mod tests;
