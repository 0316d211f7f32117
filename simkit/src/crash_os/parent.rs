//! The parent's loop: for each cycle, start a child where the last one
//! was cut short, kill it at the schedule's moment, feed what it
//! acknowledged to the judge, and reopen the engine to hold what it kept
//! to the rule for a kill (the module doc of `crash_os` has the whole
//! story). The first failure ends the run.

use std::path::Path;

use super::super::config::KitConfig;
use super::super::{Adapter, ErrorKind, Kit};
use super::command::child_argv;
use super::judge::{self, Judge};
use super::line::Line;
use super::on_disk::OnDisk;
use super::report::{Counts, CrashOsReport};
use super::schedule::{KillMoment, KillSchedule};
use super::workload::Endless;
use super::{failure, panicked, process, CrashOsRequest};
use simulator::failure::{catch_panic, Check};

/// The parent's loop, its model and its position in the workload.
pub(super) struct Cycles<'a, A: Adapter> {
    kit: &'a Kit<A>,
    request: &'a CrashOsRequest,
    dir: &'a Path,
    config: KitConfig<A::Config>,
}

impl<'a, A: Adapter> Cycles<'a, A> {
    pub fn new(kit: &'a Kit<A>, request: &'a CrashOsRequest, dir: &'a Path) -> Self {
        Cycles { kit, request, dir, config: kit.config(request.seed, None) }
    }

    fn disk(&self) -> OnDisk<'_, A> {
        OnDisk::new(&self.kit.adapter, &self.config, self.kit.plant(), self.dir)
    }

    /// Create the database, then kill and check `cycles` children.
    pub fn run(&self, report: &mut CrashOsReport, progress: &dyn Fn(u64, &Counts)) {
        let waits = self.config.spec.readers.is_some_and(|readers| readers.writer_waits);
        if self.config.clients > 1 && waits {
            let why = "this seed's configuration has a writer that waits for its readers (Spec::readers: \
                       writer_waits), and crash-os runs readers only beside a writer that does not: drop --clients \
                       or pick another configuration";
            report.failure = Some(failure(None, None, why));
            return;
        }
        let mut judge = Judge::<A>::new(&self.config);
        if let Err(e) = catch_panic(|| self.disk().create(false)).unwrap_or_else(|panic| Err(panicked(panic))) {
            report.failure = Some(failure(None, Some(Check::Open), format!("creating the database failed: {e}")));
            return;
        }
        let mut workload = Endless::new(&self.config);
        let mut schedule = KillSchedule::new(self.request.seed, self.request.max_kill_ms);
        let mut next = 0;
        for cycle in 0..self.request.cycles {
            let moment = schedule.next_moment();
            let outcome = self.cycle(&mut judge, &mut workload, moment, next);
            report.counts = judge.counts.clone();
            match outcome {
                Ok(after) => next = after,
                Err((check, detail)) => {
                    let detail = format!(
                        "{}\n    (the child started at operation {next}; the kill was drawn {moment})",
                        detail.trim_end()
                    );
                    report.failure = Some(failure(Some(cycle), check, detail));
                    return;
                }
            }
            report.cycles_passed += 1;
            if report.cycles_passed.is_multiple_of(25) {
                progress(report.cycles_passed, &report.counts);
            }
        }
    }

    /// One cycle: start a child at `next`, kill it at `moment`, judge what
    /// it said and what the engine recovered. The index to start the next
    /// child at, or the failure (`None`: a harness error).
    fn cycle(
        &self,
        judge: &mut Judge<'_, A>,
        workload: &mut Endless<'_, A::Config>,
        moment: KillMoment,
        next: u64,
    ) -> Result<u64, (Option<Check>, String)> {
        let mut running = process::spawn(&child_argv(self.kit, self.request, self.dir, next)).map_err(|e| (None, e))?;
        if moment.after_ready {
            running.wait_ready().map_err(|e| (None, e))?;
        }
        std::thread::sleep(moment.delay);
        let ended = running.kill().map_err(|e| (None, e))?;
        if let Some(why) = ended.unreadable {
            return Err((None, why));
        }
        let failed = ended.lines.iter().any(|line| matches!(line, Line::Failed { .. }));
        if failed || !ended.killed {
            let (check, why) = ended_on_its_own(&ended.lines, &ended.status);
            return Err((Some(check), why));
        }
        let after = self.judge_lines(judge, workload, next, &ended.lines)?;
        self.recover(judge).map_err(|(check, why)| (Some(check), why))?;
        Ok(after)
    }

    /// Feed the child's acknowledgements to `judge` in order, mark the
    /// operation in flight, count the kill; the index after the operation
    /// the kill cut short (or `next` again if the engine had not opened).
    fn judge_lines(
        &self,
        judge: &mut Judge<'_, A>,
        workload: &mut Endless<'_, A::Config>,
        next: u64,
        lines: &[Line],
    ) -> Result<u64, (Option<Check>, String)> {
        let mut acks = lines.iter();
        match acks.next() {
            Some(Line::Ready) => {}
            None => {
                judge.counts.kills_before_ready += 1;
                return Ok(next);
            }
            Some(line) => return Err((None, format!("a killed child's first line was {line:?}, not `ready`"))),
        }
        judge.counts.kills_in_workload += 1;
        let mut expected = workload.next_at(next);
        for line in acks {
            let Line::Ack { index, answer } = line else {
                return Err((None, format!("a killed child printed {line:?} after `ready`")));
            };
            if *index != expected.index {
                return Err((None, format!("the child acknowledged operation {index}, expected {}", expected.index)));
            }
            judge.acknowledged(&expected, answer).map_err(|(check, why)| (Some(check), why))?;
            expected = workload.next_at(expected.index + 1);
        }
        judge.in_flight(&expected);
        Ok(expected.index + 1)
    }

    /// Open the killed engine, read what it committed, hold that to the
    /// model, close it.
    fn recover(&self, judge: &mut Judge<'_, A>) -> judge::Verdict {
        let disk = self.disk();
        let opened = catch_panic(|| disk.open()).unwrap_or_else(|panic| Err(panicked(panic)));
        let mut db = match opened {
            Ok(db) => db,
            Err(e) if e.kind == ErrorKind::Corrupt && judge.refusal_allowed() => {
                disk.create(true).map_err(|e| (Check::Open, format!("creating a fresh database failed: {e}")))?;
                judge.started_over();
                return Ok(());
            }
            Err(e) => return Err((Check::Open, format!("the engine refused to open after a kill: {e}"))),
        };
        let read = catch_panic(|| disk.read(&mut db)).unwrap_or_else(|panic| Err(panicked(panic)));
        let state =
            read.map_err(|e| (Check::Open, format!("the engine opened but reading its content failed: {e}")))?;
        judge.recovered(&state, self.request.kill_rule)?;
        let closed = catch_panic(move || disk.close(db)).unwrap_or_else(|panic| Err(panicked(panic)));
        closed.map_err(|e| (Check::Admin, format!("closing the engine after the check failed: {e}")))?;
        judge.closed();
        Ok(())
    }
}

/// Why a child failed on its own (an error with no fault injected, a
/// panic, an exit before its kill): its `failed` line, or its exit status.
fn ended_on_its_own(lines: &[Line], status: &str) -> (Check, String) {
    let said = lines.iter().rev().find_map(|line| match line {
        Line::Failed { index: Some(index), message } => {
            Some((Check::Reply, format!("operation {index} failed with no fault injected: {message}")))
        }
        Line::Failed { index: None, message } => Some((Check::Open, format!("the engine failed to open: {message}"))),
        _ => None,
    });
    let (check, said) = said.unwrap_or_else(|| (Check::Panic, "it printed no reason".to_string()));
    (check, format!("the child failed on its own ({status}): {said}"))
}
