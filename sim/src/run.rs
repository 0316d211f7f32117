//! Running one seed: the engine on the simulated disk, driven by the
//! workload, checked against the model after every operation and every
//! recovery.
//!
//! Everything here is single-threaded and takes its randomness from the
//! seed: the workload list, each operation's fault stream (keyed by the
//! seed and the operation's index), each crash's choice of surviving
//! writes. The same seed and the same operation list give the same trace,
//! bit for bit.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::store::{Command, Options, RecoveryReport, Reply, Store};
use engine::vfs::Vfs;
use engine::{Error, Phase};

use crate::canary::CanarySwitch;
use crate::checker::{diff, Checker};
use crate::config::{Config, Overrides};
use crate::disk::{CrashOutcome, CrashPoint, SimVfs};
use crate::trace::{hash_reply, Event, FaultKind, Trace};
use crate::workload::{Op, PlannedOp, T0_MS};

/// Where the store lives on the simulated disk.
pub const DB_DIR: &str = "/db";

/// How many times an open is tried with faults on before the last try
/// without them (an injected read error is transient, not a refusal).
const OPEN_ATTEMPTS_WITH_FAULTS: u64 = 3;

/// What a seed's run found.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// The index of the operation during which it was found.
    pub op_index: u64,
    /// Which check failed (`reply`, `durability`, `audit`, `open`, `panic`, ...).
    pub check: &'static str,
    /// What exactly, for a person (diffs included).
    pub detail: String,
    /// The last trace events before the failure.
    pub recent: Vec<String>,
    /// The one command line that reproduces it.
    pub repro: String,
}

/// Every check name a [`Failure`] can carry (so a JSON summary read back
/// maps onto the same static names).
pub const CHECKS: [&str; 9] =
    ["reply", "durability", "audit", "content", "open", "dump", "admin", "panic", "determinism"];

/// The static name of a check, from its text.
pub fn check_name(name: &str) -> Option<&'static str> {
    CHECKS.iter().find(|c| **c == name).copied()
}

/// Counters and the verdict of one seed.
#[derive(Clone, Debug, Default)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// Workload operations run.
    pub ops: u64,
    /// Power losses.
    pub crashes: u64,
    /// Store reopens (after crashes and clean restarts).
    pub restarts: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<FaultKind, u64>,
    /// Crashes by where they landed (`seal`, `frame`, `commit`, `rewrite`,
    /// `flushall`, `boundary`, `in_op`, ...).
    pub crash_gaps: BTreeMap<&'static str, u64>,
    /// Recoveries whose refusal was expected (media corruption) and accepted.
    pub refusals_accepted: u64,
    /// The rolling hash of every trace event.
    pub trace_hash: u64,
    /// The first failed check, if any.
    pub failure: Option<Failure>,
    /// The whole trace, when asked for.
    pub trace: Option<Trace>,
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The fault stream seed of operation `index` of `seed`.
pub fn fault_seed(seed: u64, index: u64) -> u64 {
    splitmix64(splitmix64(seed) ^ index)
}

fn crash_seed(seed: u64, index: u64) -> u64 {
    splitmix64(fault_seed(seed, index) ^ 0xC4A5_0000)
}

/// Where a crash landed, for the gap counters.
fn crash_gap(op: &Op, last_mark: Option<Phase>) -> &'static str {
    match op {
        Op::Crash => "boundary",
        Op::Evict => match last_mark {
            None | Some(Phase::SealBuilt) | Some(Phase::SealDirSynced) => "seal",
            Some(Phase::SealRegistered) => "frame",
            Some(Phase::FrameLogged) => "commit",
            _ => "evict_done",
        },
        Op::Rewrite => "rewrite",
        Op::Cmd(Command::FlushAll) => "flushall",
        Op::Restart => "restart",
        _ => "in_op",
    }
}

struct Runner<'a> {
    config: &'a Config,
    overrides: Overrides,
    /// The simulated disk, for control (faults, crashes, trace).
    vfs: Arc<SimVfs>,
    /// What the engine is given: the disk itself, or a test's wrapper.
    engine_vfs: Arc<dyn Vfs>,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    checker: Checker,
    outcome: SeedOutcome,
    op_index: u64,
    /// The crash point armed for the current operation.
    planned_crash: Option<CrashPoint>,
    /// A store call failed since the last open. Its memory may then hold
    /// what its log does not (a row promoted for a write whose frame
    /// never landed), which no reader can see but a reopen undoes: the
    /// physical layout is compared across a clean restart only when this
    /// is false.
    call_failed_since_open: bool,
}

/// What a clean restart must reproduce beyond the logical content: where
/// the rows live. Replay rebuilds memory from the log, so after a clean
/// close the same rows are cold, in the same number of segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    cold_rows: usize,
    segments: usize,
}

impl Layout {
    fn of(store: &Store) -> Layout {
        Layout { cold_rows: store.cold_count(), segments: store.segment_count() }
    }
}

type Step = Result<(), Failure>;

impl Runner<'_> {
    fn fail(&self, check: &'static str, detail: impl Into<String>) -> Failure {
        let recent = self.vfs.with_trace(|t| t.recent().iter().map(|e| t.describe(e)).collect());
        Failure {
            seed: self.config.seed,
            op_index: self.op_index,
            check,
            detail: detail.into(),
            recent,
            repro: Config::repro(self.config.seed, &self.overrides, ""),
        }
    }

    fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("a store is open between operations")
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    fn open_store(&self) -> engine::Result<(Store, engine::store::RecoveryReport)> {
        Store::open(
            self.engine_vfs.clone(),
            self.clock.clone(),
            Path::new(DB_DIR),
            Options { fsync: self.config.fsync },
        )
    }

    /// Declare the workload's windowed tables on a fresh store (their
    /// declarations are the first operations; a wipe needs them again).
    fn declare_windows(&mut self) -> Step {
        for table in &self.config.tables {
            let command = Command::Window {
                table: table.name.clone().into_bytes(),
                column: table.column.clone().into_bytes(),
                span: table.span,
            };
            self.vfs.set_faults_enabled(false);
            let result = self.store().execute(&command);
            self.vfs.set_faults_enabled(true);
            if let Err(e) = result {
                return Err(self.fail("open", format!("a fault-free WINDOW failed on a fresh store: {e}")));
            }
        }
        Ok(())
    }

    /// Reopen after a power loss or restart and check what came back.
    fn recover(&mut self, crash: Option<&CrashOutcome>) -> Step {
        self.outcome.restarts += 1;
        let media_corrupted = crash.is_some_and(|c| !c.media_corrupted.is_empty());
        let quarantined_before = self.quarantine_files();
        let mut opened = None;
        for attempt in 0..=OPEN_ATTEMPTS_WITH_FAULTS {
            self.vfs.begin_op(fault_seed(self.config.seed, self.op_index) ^ (0xA77E_0000 + attempt));
            self.vfs.set_faults_enabled(attempt < OPEN_ATTEMPTS_WITH_FAULTS);
            let result = self.open_store();
            let injected = self.vfs.faults_injected_this_op();
            self.vfs.set_faults_enabled(true);
            match result {
                Ok(ok) => {
                    opened = Some(ok);
                    break;
                }
                Err(_) if injected && attempt < OPEN_ATTEMPTS_WITH_FAULTS => continue,
                Err(e @ Error::Corrupt { .. }) if media_corrupted => {
                    let _ = e;
                    return self.accept_refusal();
                }
                Err(e) => {
                    return Err(self.fail("open", format!("the store refused to open after a crash: {e}")));
                }
            }
        }
        let (store, report) = opened.expect("the loop either opened or returned");
        self.store = Some(store);
        self.call_failed_since_open = false;
        let now_ms = self.now();
        if media_corrupted {
            self.recover_after_media_corruption(&report, now_ms, crash.is_some(), quarantined_before)?;
        } else {
            // Read as the store walks its content (no dump), then the
            // quarantine count — in that order, as the trace records it.
            let store = self.store.as_ref().expect("opened above");
            let verdict = match self.checker.recovered_store(store, now_ms, crash.is_some()) {
                Ok(verdict) => verdict,
                Err(e) => return Err(self.fail("dump", format!("logical_dump failed after recovery: {e}"))),
            };
            // Without media corruption a loss report excuses nothing, but
            // asking lists the directory, a traced I/O: it stays, after
            // the read as before, so every seed's trace stays what it was.
            let _ = self.loss_reported(&report, quarantined_before);
            if let Err(mismatch) = verdict {
                return Err(self.fail("durability", mismatch.detail));
            }
        }
        let violations = self.store().audit();
        if !violations.is_empty() {
            if media_corrupted {
                return self.accept_refusal();
            }
            return Err(self.fail("audit", format!("after recovery: {violations:?}")));
        }
        Ok(())
    }

    /// [`Runner::recover`]'s check of the content when media corruption
    /// was injected: a refusal to read it is accepted, and a loss the
    /// store reported becomes the new truth.
    fn recover_after_media_corruption(
        &mut self,
        report: &RecoveryReport,
        now_ms: u64,
        power_lost: bool,
        quarantined_before: usize,
    ) -> Step {
        let dump = match self.store().logical_dump() {
            Ok(dump) => dump,
            Err(Error::Corrupt { .. }) => return self.accept_refusal(),
            Err(e) => return Err(self.fail("dump", format!("logical_dump failed after recovery: {e}"))),
        };
        if self.loss_reported(report, quarantined_before) {
            // Durable bytes were damaged and recovery said it cut data:
            // loss is expected and was not silent. Go on from what came
            // back (its audit below must still be clean).
            self.outcome.refusals_accepted += 1;
            self.checker.rebase(dump);
        } else if let Err(mismatch) = self.checker.recovered(&dump, now_ms, power_lost) {
            return Err(self
                .fail("durability", format!("{} (media corruption was injected, but not reported)", mismatch.detail)));
        }
        Ok(())
    }

    /// Whether the open reported a loss: bytes cut from the log or the
    /// manifest. A failed open attempt may already have cut the log; the
    /// quarantine file it left is its durable report of the loss (counting
    /// them lists the directory: one traced I/O).
    fn loss_reported(&self, report: &RecoveryReport, quarantined_before: usize) -> bool {
        report.aof.dropped_bytes > 0 || report.manifest_torn_bytes > 0 || self.quarantine_files() > quarantined_before
    }

    /// How many AOF quarantine files the store directory holds.
    fn quarantine_files(&self) -> usize {
        let names = self.vfs.list_dir(Path::new(DB_DIR)).unwrap_or_default();
        names.iter().filter(|n| n.contains(".quarantine.")).count()
    }

    /// Media corruption made the store refuse, as it must: start over on
    /// an empty directory (the refusal itself was the check).
    fn accept_refusal(&mut self) -> Step {
        self.outcome.refusals_accepted += 1;
        self.store = None;
        self.vfs.set_faults_enabled(false);
        let dir = Path::new(DB_DIR);
        let names = self.vfs.list_dir(dir).unwrap_or_default();
        for name in names {
            let _ = self.vfs.unlink(&dir.join(name));
        }
        let _ = self.vfs.sync_dir(dir);
        let opened = self.open_store();
        self.vfs.set_faults_enabled(true);
        match opened {
            Ok((store, _)) => self.store = Some(store),
            Err(e) => return Err(self.fail("open", format!("an empty directory did not open: {e}"))),
        }
        self.call_failed_since_open = false;
        self.checker.reset_empty();
        self.declare_windows()
    }

    fn power_loss(&mut self, op: &Op) -> Step {
        self.store = None;
        // A crash aimed at a mark happens at that mark, whatever the
        // engine went on to do in memory before it noticed.
        let at_mark = match self.planned_crash {
            Some(CrashPoint::AtMark(label)) if self.vfs.crash_point_reached() => Some(label),
            _ => self.vfs.last_mark(),
        };
        let gap = crash_gap(op, at_mark);
        *self.outcome.crash_gaps.entry(gap).or_default() += 1;
        self.outcome.crashes += 1;
        let crash = self.vfs.power_loss(crash_seed(self.config.seed, self.op_index));
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        self.recover(Some(&crash))
    }

    /// A poisoned store must be reopened; half the time the machine also
    /// loses power (the page cache may be no better than the disk).
    fn restart_poisoned(&mut self, op: &Op) -> Step {
        if fault_seed(self.config.seed, self.op_index) & 1 == 0 {
            return self.power_loss(op);
        }
        self.store = None;
        self.vfs.process_restart();
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        self.recover(None)
    }

    fn check_reply(&mut self, command: &Command, got: &Reply, want: engine::Result<Reply>) -> Step {
        match want {
            Ok(want) if want == *got => Ok(()),
            Ok(want) => Err(self.fail("reply", format!("{command:?}\n    expected {want:?}\n    got      {got:?}"))),
            Err(e) => {
                Err(self.fail("reply", format!("{command:?}: the store answered {got:?}, the model refused: {e}")))
            }
        }
    }

    fn run_command(&mut self, command: &Command, op: &Op) -> Step {
        let now_ms = self.now();
        let was_poisoned = self.store().poisoned().is_some();
        let result = self.store().execute(command);
        let reply_hash = match &result {
            Ok(reply) => hash_reply(reply),
            Err(_) => 0,
        };
        let index = self.op_index;
        self.vfs.with_trace(|t| t.push(Event::Reply { index, hash: reply_hash }));
        if self.vfs.crash_point_reached() {
            if command.is_write() {
                self.checker.uncertain(command, now_ms);
            }
            return self.power_loss(op);
        }
        if !command.is_write() {
            let want = self.checker.read(command, now_ms);
            return match (&result, want) {
                (Ok(got), want) => self.check_reply(command, got, want),
                (Err(_), Err(_)) => Ok(()),
                (Err(_), Ok(_)) if self.vfs.faults_injected_this_op() => Ok(()),
                (Err(e), Ok(want)) => {
                    Err(self.fail("reply", format!("{command:?}: the store failed ({e}), the model answered {want:?}")))
                }
            };
        }
        match result {
            Ok(got) => {
                let want = self.checker.acknowledged(command, now_ms);
                self.check_reply(command, &got, want)?;
                self.checker.call_succeeded(now_ms);
                Ok(())
            }
            Err(Error::Invalid(why)) => {
                if self.checker.model_would_refuse(command, now_ms) {
                    Ok(())
                } else {
                    Err(self.fail("reply", format!("{command:?}: the store refused a valid write: {why}")))
                }
            }
            Err(e) => {
                self.call_failed_since_open = true;
                if !was_poisoned && self.store().poisoned().is_some() {
                    // Poisoned by this write: its frame may be on disk.
                    self.checker.uncertain(command, now_ms);
                } else if !was_poisoned && !self.vfs.faults_injected_this_op() {
                    return Err(self.fail("reply", format!("{command:?}: failed with no fault injected: {e}")));
                }
                Ok(())
            }
        }
    }

    /// An admin call's result: errors are fine only when a fault was
    /// injected or the store was already poisoned.
    fn admin_result(&mut self, what: &str, was_poisoned: bool, result: engine::Result<()>) -> Step {
        match result {
            Ok(()) => {
                let now_ms = self.now();
                self.checker.call_succeeded(now_ms);
                Ok(())
            }
            Err(_) if was_poisoned || self.vfs.faults_injected_this_op() => {
                self.call_failed_since_open = true;
                Ok(())
            }
            Err(e) => Err(self.fail("admin", format!("{what} failed with no fault injected: {e}"))),
        }
    }

    fn step(&mut self, planned: &PlannedOp) -> Step {
        self.op_index = planned.index;
        self.vfs.begin_op(fault_seed(self.config.seed, planned.index));
        self.vfs.arm_crash(planned.crash);
        self.planned_crash = planned.crash;
        let index = planned.index;
        let tag = planned.op.tag();
        self.vfs.with_trace(|t| t.push(Event::Op { index, tag }));
        let was_poisoned = self.store().poisoned().is_some();
        let result = match &planned.op {
            Op::Cmd(command) => self.run_command(command, &planned.op),
            Op::Evict => {
                let result = self.store().evict().map(|_| ());
                if self.vfs.crash_point_reached() {
                    self.power_loss(&planned.op)
                } else {
                    self.admin_result("evict", was_poisoned, result)
                }
            }
            Op::Rewrite | Op::Sync => {
                let result = match planned.op {
                    Op::Rewrite => self.store().rewrite(),
                    _ => self.store().sync(),
                };
                if self.vfs.crash_point_reached() {
                    self.power_loss(&planned.op)
                } else {
                    if result.is_ok() {
                        self.checker.all_durable();
                    }
                    self.admin_result(tag, was_poisoned, result)
                }
            }
            Op::Advance(ms) => {
                self.clock.advance(*ms);
                let result = self.store().tick();
                if self.vfs.crash_point_reached() {
                    self.power_loss(&planned.op)
                } else {
                    self.admin_result("tick", was_poisoned, result)
                }
            }
            Op::Crash => self.power_loss(&planned.op),
            Op::Restart => self.restart(&planned.op),
        };
        self.vfs.arm_crash(None);
        result?;
        if self.store().poisoned().is_some() {
            return self.restart_poisoned(&planned.op);
        }
        Ok(())
    }

    /// Clean close and reopen: if the close succeeds every acknowledged
    /// write is durable, and the reopened store must hold exactly them —
    /// with the same rows cold, in as many segments (see [`Layout`]).
    fn restart(&mut self, op: &Op) -> Step {
        let store = self.store.take().expect("a store is open");
        let before = (!self.call_failed_since_open && store.poisoned().is_none()).then(|| Layout::of(&store));
        let closed = store.close();
        if self.vfs.crash_point_reached() {
            return self.power_loss(op);
        }
        if closed.is_ok() {
            self.checker.all_durable();
        }
        self.vfs.process_restart();
        self.vfs.with_trace(|t| t.push(Event::Restart { clean: closed.is_ok() }));
        self.recover(None)?;
        match before {
            Some(before) if closed.is_ok() => {
                let after = Layout::of(self.store());
                if after != before {
                    return Err(self.fail(
                        "layout",
                        format!(
                            "a clean restart changed where rows live: before close {before:?}, after reopen {after:?}"
                        ),
                    ));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn audit(&mut self) -> Step {
        let violations = self.store().audit();
        if !violations.is_empty() {
            return Err(self.fail("audit", format!("{violations:?}")));
        }
        let now_ms = self.now();
        // Compared as the store walks its content, without a dump: the
        // dump (every value copied into a map) is built only for a report.
        let store = self.store.as_ref().expect("a store is open between operations");
        let mut in_order = self.checker.shows_in_order(now_ms);
        let visited = store.logical_visit(|key, entry| in_order.next(key, entry));
        match visited {
            Ok(()) if in_order.finish() => Ok(()),
            Ok(()) => match store.logical_dump() {
                Ok(dump) => Err(self.fail("content", diff(&self.checker.expected(now_ms), &dump))),
                Err(e) => Err(self.fail("content", format!("logical_dump failed: {e}"))),
            },
            Err(e) => Err(self.fail("content", format!("logical_dump failed: {e}"))),
        }
    }

    fn run(&mut self, ops: &[PlannedOp]) -> Step {
        self.vfs.begin_op(fault_seed(self.config.seed, u64::MAX));
        self.vfs.set_faults_enabled(false);
        let opened = self.open_store();
        self.vfs.set_faults_enabled(true);
        match opened {
            Ok((store, _)) => self.store = Some(store),
            Err(e) => return Err(self.fail("open", format!("an empty directory did not open: {e}"))),
        }
        for planned in ops {
            self.step(planned)?;
            self.outcome.ops += 1;
            if (planned.index + 1) % self.config.audit_every == 0 {
                self.audit()?;
            }
        }
        // The end: a clean restart must bring back exactly the model.
        let end = PlannedOp { index: ops.last().map_or(0, |p| p.index + 1), op: Op::Restart, crash: None };
        self.step(&end)?;
        self.audit()
    }
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
    let mut runner = Runner {
        config,
        overrides,
        vfs: vfs.clone(),
        engine_vfs: wrap(vfs.clone()),
        clock: Arc::new(ManualClock::new(T0_MS)),
        store: None,
        checker: Checker::new(config.fsync),
        outcome: SeedOutcome { seed: config.seed, ..SeedOutcome::default() },
        op_index: 0,
        planned_crash: None,
        call_failed_since_open: false,
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runner.run(ops)));
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic with no message".to_string());
            Some(runner.fail("panic", message))
        }
    };
    let mut outcome = std::mem::take(&mut runner.outcome);
    drop(runner);
    drop(switch);
    outcome.failure = failure;
    outcome.faults = vfs.fault_counts();
    let trace = vfs.take_trace();
    outcome.trace_hash = trace.hash();
    if keep_trace {
        outcome.trace = Some(trace);
    }
    outcome
}

/// Run seed `seed` with its generated workload.
pub fn run_seed(seed: u64, overrides: Overrides, keep_trace: bool) -> SeedOutcome {
    let config = Config::from_seed(seed, overrides);
    let ops = crate::workload::generate(&config);
    run_ops(&config, overrides, &ops, keep_trace)
}
