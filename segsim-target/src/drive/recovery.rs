//! Reopening the segsim store after a crash or a restart, and holding what
//! came back to recovery's rule (the module doc of `drive`): the workload's
//! hooks into the loop's recovery — a read-only inspection first, each
//! open attempt watched where a refusal must change nothing, the refusal
//! of damage accepted, the recovered content judged with the damage's
//! floor, then the audit and the seq ledger.

use std::path::Path;

use engine::manifest::MANIFEST_FILE;
use engine::vfs::Vfs;
use engine::Error;

use super::{transient_fault_called_corruption, Driver, Reopen, DB_DIR};
use simulator::disk::{CrashOutcome, Damage};
use simulator::failure::Check;
use simulator::harness::{Harness, OpenFailed, Reopening, Step};
use simulator::seeds;
use testkit::transcript::Transcript;

/// The damage a reopening follows (none after a kill or a restart).
fn damage_of(reopening: &Reopening) -> &[Damage] {
    reopening.crash().map_or(&[], |crash: &CrashOutcome| crash.damage.as_slice())
}

impl Driver<'_> {
    /// A read-only inspection of the directory as the crash left it,
    /// before the recovery (a quarter of them, by the seed): it must change
    /// no byte. What it read is returned for [`Driver::compare_inspection`];
    /// `None` if it refused (it may: a directory the crash left without a
    /// store is nothing to inspect, and damage may refuse it).
    pub(super) fn inspect_read_only(&mut self, h: &mut Harness) -> Step<Option<Transcript>> {
        if !seeds::inspect_read_only(h.seed(), h.op_index) {
            return Ok(None);
        }
        self.inspect_now(h)
    }

    /// The read-only inspection of [`Driver::inspect_read_only`], whatever
    /// the seed's coin says (exploration inspects every crash image).
    /// What it saw is written down flat (a [`Transcript`]), not dumped
    /// into a map: the recovery is held to it byte for byte.
    pub fn inspect_now(&mut self, h: &mut Harness) -> Step<Option<Transcript>> {
        let dir = Path::new(DB_DIR);
        self.vfs.set_observing(true);
        let before = self.vfs.files(dir);
        let changes_before = self.vfs.changes();
        let opened = engine::store::Store::open_read_only(self.engine_vfs.clone(), self.clock.clone(), dir);
        let seen = opened.ok().and_then(|(store, _)| Transcript::of_store(&store).ok());
        self.vfs.set_observing(false);
        // The disk counts every change to a file's bytes or a directory's
        // entries: where it counted none, there is no byte to compare.
        if self.vfs.changes() != changes_before {
            self.directory_unchanged(h, &before, Check::Inspect, "a read-only open")?;
        }
        h.outcome.counters.inspections += 1;
        Ok(seen)
    }

    /// The inspection saw what the recovery then opened, where both opened
    /// on an undamaged directory outside point-in-time mode (a torn tail
    /// the recovery cuts is one the inspection stopped at too).
    pub fn compare_inspection(&self, h: &Harness, seen: &Transcript, damaged: bool) -> Step {
        if damaged || self.config.point_in_time {
            return Ok(());
        }
        // Compared as the store walks its content; the recovered dump is
        // built only for a report.
        let same = seen.same_as_store(self.store()).map_err(|e| h.fail(Check::Dump, e.to_string()))?;
        if same {
            return Ok(());
        }
        let recovered = self.store().logical_dump().map_err(|e| h.fail(Check::Dump, e.to_string()))?;
        Err(h.fail(
            Check::Inspect,
            format!(
                "the read-only inspection saw other content than the recovery:\n{}",
                crate::checker::diff(&recovered, &seen.to_dump())
            ),
        ))
    }

    /// One open attempt after `reopening` (its fault stream begun by the
    /// loop), watching the directory where a refusal must have changed
    /// nothing or a point-in-time open lost nothing.
    pub(super) fn try_reopen(&mut self, h: &Harness, reopening: &Reopening) -> bool {
        debug_assert!(self.store.is_none(), "an open attempt finds the store dropped");
        debug_assert!(self.reopen.report.is_none(), "no attempt of this recovery opened yet");
        let watch = !damage_of(reopening).is_empty() || self.config.point_in_time;
        let before = watch.then(|| self.vfs.files(Path::new(DB_DIR)));
        let result = self.open_store();
        self.reopen.attempts += 1;
        self.reopen.faulted |= h.vfs.faults_injected_this_op();
        match result {
            Ok((store, report)) => {
                self.store = Some(store);
                self.reopen.before = before;
                self.reopen.report = Some(report);
                true
            }
            Err(e) => {
                self.reopen.before = before;
                self.reopen.error = Some(e);
                false
            }
        }
    }

    /// An open attempt failed: retried while a fault explains it (no
    /// transient fault may call itself corruption), a refusal of damage
    /// accepted once the directory is seen unchanged, any other a failure.
    pub(super) fn reopen_failed(
        &mut self,
        h: &mut Harness,
        reopening: &Reopening,
        injected: bool,
        last: bool,
    ) -> Step<OpenFailed> {
        let damage = damage_of(reopening);
        let damaged = !damage.is_empty();
        let error = self.reopen.error.take().expect("a failed open attempt keeps its error");
        match error {
            e @ Error::Corrupt { .. } if injected && !damaged => {
                Err(h.fail(Check::Open, transient_fault_called_corruption(&e)))
            }
            _ if injected && !last => {
                if self.reopen.attempts == 1 {
                    self.reopen.at_crash = self.reopen.before.take();
                }
                Ok(OpenFailed::Retry)
            }
            Error::Corrupt { .. } if damaged => {
                let before = self.reopen.before.take().expect("watched when damaged");
                self.directory_unchanged(h, &before, Check::Untouched, "an open that refused damage")?;
                Ok(OpenFailed::Refused)
            }
            e => {
                let why = if damaged { format!(" (damage injected: {damage:?})") } else { String::new() };
                Err(h.fail(Check::Open, format!("the store refused to open after a crash: {e}{why}")))
            }
        }
    }

    /// The store reopened after `reopening`: what the open kept and cut,
    /// what the inspection saw, then the content by the rule.
    pub(super) fn judge_reopened(&mut self, h: &mut Harness, reopening: &Reopening) -> Step {
        let Reopen { inspected, faulted, before, at_crash, report, .. } = std::mem::take(&mut self.reopen);
        let report = report.expect("an open that succeeded keeps its report");
        let damage = damage_of(reopening);
        h.vfs.with_trace(|t| t.note(|| format!("recovery report: {report:?}")));
        self.sweep_skipped = report.sweep_skipped;
        // Damage to the manifest's newest records, which nothing later
        // vouched for, may take a registration with it undetectably (a
        // torn tail to any format): its seq may then be handed out again.
        let manifest = Path::new(DB_DIR).join(MANIFEST_FILE);
        if damage.iter().any(|d| Path::new(&d.path) == manifest && !d.vouched) {
            self.segment_seqs.clear();
            self.seqs_checked = None;
        }
        self.call_failed_since_open = false;
        if let Some(before) = &before {
            self.check_nothing_destroyed(h, &report, before, damage)?;
            self.check_replayed_before_damage(h, &report, before, at_crash.as_ref(), damage)?;
        }
        // A fault in the recovery may change what it finds (a failed fsync
        // drops the dirty pages the inspection read): compared only without.
        if let (Some(seen), false) = (&inspected, faulted) {
            self.compare_inspection(h, seen, !damage.is_empty())?;
        }
        self.judge_content(h, reopening.power_lost(), damage)
    }

    /// The reopened store's content against the checker (after a power
    /// loss: `power_lost`), down to the floor `damage` allows, then its
    /// audit and the seq ledger.
    fn judge_content(&mut self, h: &mut Harness, power_lost: bool, damage: &[Damage]) -> Step {
        let damaged = !damage.is_empty();
        let floor = self.floor(damage);
        let now_ms = self.now_ms();
        let store = self.store.as_ref().expect("opened by the recovery");
        // Read as the store walks its content (no dump).
        match self.checker.recovered_store(store, now_ms, power_lost, floor) {
            Ok(Ok(_)) => h.outcome.counters.came_back += u64::from(self.checker.take_came_back()),
            Ok(Err(mismatch)) => {
                let why =
                    if damaged { format!("\n    damage injected: {damage:?}, floor {floor:?}") } else { String::new() };
                return Err(h.fail(Check::Durability, format!("{}{why}", mismatch.detail)));
            }
            // Damaged bytes refused on read, as they must be.
            Err(Error::Corrupt { .. }) if damaged => return self.start_over(h),
            Err(e) => return Err(h.fail(Check::Dump, format!("logical_dump failed after recovery: {e}"))),
        }
        let violations = self.audit_fault_free();
        if !violations.is_empty() {
            if damaged {
                // The audit found the damage: a refusal to trust it.
                return self.start_over(h);
            }
            return Err(h.fail(Check::Audit, format!("after recovery: {violations:?}")));
        }
        self.check_seqs(h, true)
    }

    /// Damage made the store refuse, as it may: start over on an empty
    /// directory (the refusal itself was the check).
    pub(super) fn start_over(&mut self, h: &mut Harness) -> Step {
        h.outcome.counters.refusals_accepted += 1;
        self.store = None;
        let dir = Path::new(DB_DIR);
        let opened = h.fault_free(|| {
            let names = self.vfs.list_dir(dir).unwrap_or_default();
            for name in names {
                // Best effort: an unlink that fails leaves a file the fresh
                // open below will refuse or sweep, and that is checked.
                let _ = self.vfs.unlink(&dir.join(name));
            }
            let _ = self.vfs.sync_dir(dir);
            self.open_store()
        });
        match opened {
            Ok((store, _)) => self.store = Some(store),
            Err(e) => return Err(h.fail(Check::Open, format!("an empty directory did not open: {e}"))),
        }
        self.call_failed_since_open = false;
        self.checker.reset_empty();
        // A new store: its seqs start afresh.
        self.segment_seqs.clear();
        self.seqs_checked = None;
        self.declare_windows(h)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use engine::clock::ManualClock;
    use engine::store::Command;
    use simulator::disk::{CrashMode, DiskConfig, SimVfs};
    use simulator::trace::Trace;

    use crate::config::{Config, Overrides};

    use super::*;

    fn set(driver: &mut Driver<'_>, key: &str) {
        let command = Command::Set { key: key.as_bytes().to_vec(), value: b"v".to_vec() };
        driver.store_mut().execute(&command).expect("a plain SET on a fault-free disk");
    }

    /// The inspection's transcript is held to what the recovery opened:
    /// the same content passes; a key the inspection did not see fails
    /// the `inspect` check, and the report names it.
    #[test]
    fn a_recovery_that_opened_other_content_than_the_inspection_saw_fails() {
        let mut config = Config::from_seed(1, Overrides::default());
        config.point_in_time = false;
        let vfs = Arc::new(SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false)));
        let clock = Arc::new(ManualClock::new(0));
        let mut run = Driver::new(&config, vfs.clone(), vfs, clock).into_loop(&Overrides::default());
        run.w.open().expect("a fresh store opens");
        set(&mut run.w, "seen-by-both");
        run.w.store = None;

        let seen = run.w.inspect_now(&mut run.h).expect("a read-only open changes nothing");
        let seen = seen.expect("a closed store's directory opens read-only");
        assert_eq!(seen.len(), 1);
        run.w.open().expect("the store reopens");
        assert!(run.w.compare_inspection(&run.h, &seen, false).is_ok(), "the same content");

        set(&mut run.w, "opened-only");
        let failure = run.w.compare_inspection(&run.h, &seen, false).expect_err("a key the inspection did not see");
        assert_eq!(failure.check, Check::Inspect);
        assert!(failure.detail.contains("opened-only"), "{}", failure.detail);
        assert!(run.w.compare_inspection(&run.h, &seen, true).is_ok(), "damage may change what a recovery finds");
    }
}
