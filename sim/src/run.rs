//! Running one seed: the random mode. The `Driver` runs each operation
//! with the checker's bookkeeping; this file adds the mode's policy on
//! top — the seed's configuration, workload, fault streams and crash
//! points (all drawn up front, see `seeds.rs`), what to do with a poisoned
//! store (reopen it, after a power loss half the time), periodic audits,
//! the final clean restart — and catches panics.
//!
//! Everything here is single-threaded and takes its randomness from the
//! seed. The same seed and the same operation list give the same trace,
//! bit for bit.

use std::sync::Arc;

use engine::clock::ManualClock;
use engine::vfs::Vfs;

use crate::canary::CanarySwitch;
use crate::config::{Config, Overrides};
use crate::disk::{CrashPoint, SimVfs};
use crate::drive::{Driver, Unobserved};
use crate::failure::{catch_panic, Check, Failure};
use crate::outcome::SeedOutcome;
use crate::seeds;
use crate::trace::Trace;
use crate::workload::{Op, PlannedOp, T0_MS};

type Step = Result<(), Failure>;

/// One operation under the random mode's policy: a store the operation
/// left poisoned is reopened at once — after a power loss half the time
/// (the page cache may be no better than the disk), else after a process
/// restart.
fn step(driver: &mut Driver<'_>, planned: &PlannedOp) -> Step {
    let stepped = driver.step(planned, &mut Unobserved)?;
    if stepped.poisoned {
        if seeds::poisoned_by_power_loss(driver.seed(), planned.index) {
            driver.power_loss(&planned.op)?;
        } else {
            driver.reopen_poisoned()?;
        }
    }
    no_hazards(driver)
}

/// The operation ended: the engine left no persistence hazard behind
/// (`disk/hazards.rs`), whether or not a crash would have exposed it.
pub(crate) fn no_hazards(driver: &Driver<'_>) -> Step {
    let hazards = driver.vfs().end_op_hazards();
    if hazards.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = hazards.iter().map(|h| h.describe()).collect();
    Err(driver.fail(Check::Hazard, format!("persistence hazards:\n    {}", lines.join("\n    "))))
}

/// The whole list, audited every `config.audit_every` operations, then a
/// clean restart that must bring back exactly the model.
fn run(driver: &mut Driver<'_>, config: &Config, ops: &[PlannedOp]) -> Step {
    match seeds::crash_in_creation(config.seed) {
        Some(after_ios) => driver.create_crashing(CrashPoint::AfterIos(after_ios))?,
        None => driver.open_empty()?,
    }
    no_hazards(driver)?;
    for planned in ops {
        step(driver, planned)?;
        driver.outcome_mut().ops += 1;
        if (planned.index + 1) % config.audit_every == 0 {
            driver.audit()?;
        }
    }
    let end = PlannedOp { index: ops.last().map_or(0, |p| p.index + 1), op: Op::Restart, crash: None };
    step(driver, &end)?;
    driver.audit()
}

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
    let switch = CanarySwitch::on(overrides.canary);
    let clock = Arc::new(ManualClock::new(T0_MS));
    let mut driver = Driver::new(config, overrides, vfs.clone(), wrap(vfs.clone()), clock);
    let failure = match catch_panic(|| run(&mut driver, config, ops)) {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err(message) => Some(driver.fail(Check::Panic, message)),
    };
    let mut outcome = driver.into_outcome();
    drop(switch);
    outcome.failure = failure;
    outcome.take_disk(&vfs, keep_trace);
    assert!(outcome.failure.is_some() || outcome.reopens_add_up(), "a reopen without one cause: {outcome:?}");
    outcome
}

/// Run seed `seed` with its generated workload.
pub fn run_seed(seed: u64, overrides: Overrides, keep_trace: bool) -> SeedOutcome {
    let config = Config::from_seed(seed, overrides);
    let ops = crate::workload::generate(&config);
    run_ops(&config, overrides, &ops, keep_trace)
}
