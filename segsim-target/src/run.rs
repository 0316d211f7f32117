//! Running one seed: the random mode. The segsim engine runs as a
//! workload (`drive`) of the one run loop (`harness`), whose one entry
//! point (`Loop::run_to_outcome`) owns the crashes, kills, reopens after
//! errors, hazards, audit cadence, final clean restart and caught panics;
//! this file adds the mode's policy — the seed's configuration, workload,
//! fault streams and crash points (all drawn up front, see `seeds.rs`), a
//! crash inside the store's creation, the planted bug switched on.
//!
//! Everything here is single-threaded and takes its randomness from the
//! seed. The same seed and the same operation list give the same trace,
//! bit for bit.

use std::sync::Arc;

use engine::clock::ManualClock;
use engine::vfs::Vfs;

use crate::canary::CanarySwitch;
use crate::config::{Config, Overrides};
use crate::drive::Driver;
use crate::workload::{PlannedOp, T0_MS};
use simulator::disk::SimVfs;
use simulator::harness::Settings;
use simulator::outcome::SeedOutcome;
use simulator::seeds;
use simulator::trace::Trace;

/// Run `ops` (normally `workload::generate(config)`) for `config`'s seed.
/// Never panics: a panic inside the engine or the harness is caught and
/// reported as a failure of this seed.
pub fn run_ops(config: &Config, overrides: Overrides, ops: &[PlannedOp], keep_trace: bool) -> SeedOutcome {
    run_ops_with(config, overrides, ops, keep_trace, &|disk| disk)
}

/// [`run_ops`], with the engine seeing `wrap(disk)` instead of the disk:
/// the hook tests use to plant a bug under the engine (a Vfs that skips
/// fsyncs, say) and prove the checker catches it.
pub fn run_ops_with(
    config: &Config,
    overrides: Overrides,
    ops: &[PlannedOp],
    keep_trace: bool,
    wrap: &dyn Fn(Arc<dyn Vfs>) -> Arc<dyn Vfs>,
) -> SeedOutcome {
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::new(keep_trace)));
    // The planted bug stays on until the engine is dropped.
    let _canary = CanarySwitch::on(overrides.canary);
    let clock = Arc::new(ManualClock::new(T0_MS));
    let settings = Settings {
        audit_every: config.audit_every,
        p_crash_in_recovery: 0.0,
        crash_in_creation: seeds::crash_in_creation(config.seed),
    };
    let driver = Driver::new(config, vfs.clone(), wrap(vfs.clone()), clock).with_settings(settings);
    driver.into_loop(&overrides).run_to_outcome(ops, keep_trace)
}

/// Run seed `seed` with its generated workload.
pub fn run_seed(seed: u64, overrides: Overrides, keep_trace: bool) -> SeedOutcome {
    let config = Config::from_seed(seed, overrides);
    let ops = crate::workload::generate(&config);
    run_ops(&config, overrides, &ops, keep_trace)
}
