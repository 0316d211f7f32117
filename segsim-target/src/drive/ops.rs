//! One segsim operation run and its reply checked against the model: a
//! store command (or raw arguments Redis may refuse), an admin call, a
//! clean close, a second opener. Each tells the loop how it ended: a crash
//! point reached (after the checker marked the write in flight uncertain),
//! the workload's own `CRASH` or `KILL`, a clean close, or done.

use std::path::Path;

use engine::store::{Command, Options, Reply, Store};
use engine::Error;

use super::reply_hash::hash_reply;
use super::reply_text;
use super::{Driver, Layout, Moment, DB_DIR};
use crate::workload::{with_oversized_command, Op, PlannedOp};
use simulator::failure::Check;
use simulator::harness::{Ended, Harness, Step};
use simulator::trace::Event;
use testkit::model;

impl Driver<'_> {
    /// Run `planned` (its fault stream begun, its crash point armed).
    pub(super) fn run_op(&mut self, h: &mut Harness, planned: &PlannedOp) -> Step<Ended> {
        let was_poisoned = self.store().poisoned().is_some();
        match &planned.op {
            Op::Cmd(command) => self.run_command(h, command, planned),
            Op::Args(args) => self.run_args(h, args, planned),
            Op::OversizedSet { key, value_bytes, byte } => {
                with_oversized_command(key, *value_bytes, *byte, |command| self.run_command(h, command, planned))
            }
            Op::Evict => {
                self.observe(planned, Moment::Begins, None);
                let result = self.store_mut().evict().map(|_| ());
                self.admin_result(h, &planned.op, was_poisoned, result)
            }
            Op::Rewrite | Op::Sync => {
                self.observe(planned, Moment::Begins, None);
                let result = match planned.op {
                    Op::Rewrite => self.store_mut().rewrite(),
                    _ => self.store_mut().sync(),
                };
                if result.is_ok() && !h.vfs.crash_point_reached() {
                    match planned.op {
                        // The log now starts from this state.
                        Op::Rewrite => self.checker.log_rewritten(),
                        _ => self.checker.all_durable(),
                    }
                }
                self.admin_result(h, &planned.op, was_poisoned, result)
            }
            Op::Advance(ms) => {
                // The clock moves first: a crash inside the tick happens at
                // the new time.
                self.clock.advance(*ms);
                self.observe(planned, Moment::Begins, None);
                let result = self.store_mut().tick();
                self.admin_result(h, &planned.op, was_poisoned, result)
            }
            Op::Crash => {
                self.observe(planned, Moment::Begins, None);
                Ok(Ended::PowerLoss)
            }
            Op::Restart => self.close(h, planned),
            Op::SecondOpen => {
                self.observe(planned, Moment::Begins, None);
                self.second_open(h, planned)
            }
            Op::Kill => {
                self.observe(planned, Moment::Begins, None);
                Ok(Ended::Kill)
            }
        }
    }

    /// A store command, its reply checked against the model's.
    fn run_command(&mut self, h: &mut Harness, command: &Command, planned: &PlannedOp) -> Step<Ended> {
        self.observe(planned, Moment::Begins, command.is_write().then_some(command));
        let now_ms = self.now_ms();
        let was_poisoned = self.store().poisoned().is_some();
        let result = self.store_mut().execute(command);
        let reply_hash = match &result {
            Ok(reply) => hash_reply(reply),
            Err(_) => 0,
        };
        let index = h.op_index;
        let crashed = h.vfs.trace_then_crash_reached(|t| {
            t.push(Event::Reply { index, hash: reply_hash });
            t.note_reply(|| reply_text::store_reply(&result));
        });
        if crashed {
            if command.is_write() {
                self.checker.uncertain(command, now_ms);
                h.outcome.counters.in_doubt += 1;
            }
            return Ok(Ended::CrashPoint);
        }
        if command.is_write() {
            self.check_write(h, command, was_poisoned, result)?;
        } else {
            self.check_read(h, command, result)?;
        }
        Ok(Ended::Done)
    }

    /// A read's reply against the model's answer.
    fn check_read(&mut self, h: &mut Harness, command: &Command, result: engine::Result<Reply>) -> Step {
        let want = self.checker.read(command, self.now_ms());
        match (&result, want) {
            (Ok(got), want) => self.check_reply(h, command, got, want),
            (Err(Error::Invalid(_)), Err(_)) => {
                h.outcome.counters.bad_inputs_refused += 1;
                Ok(())
            }
            (Err(_), Err(_)) => Ok(()),
            (Err(_), Ok(_)) if h.vfs.faults_injected_this_op() => Ok(()),
            (Err(e), Ok(want)) => {
                Err(h.fail(Check::Reply, format!("{command:?}: the store failed ({e}), the model answered {want:?}")))
            }
        }
    }

    /// A write's reply: acknowledged (and checked), refused as invalid
    /// where the model refuses it too, or failed under a fault.
    fn check_write(
        &mut self,
        h: &mut Harness,
        command: &Command,
        was_poisoned: bool,
        result: engine::Result<Reply>,
    ) -> Step {
        let now_ms = self.now_ms();
        match result {
            Ok(got) => {
                let log_at = self.log_position();
                let want = self.checker.acknowledged_at(command, now_ms, log_at);
                self.check_reply(h, command, &got, want)?;
                self.checker.call_succeeded(now_ms);
            }
            Err(Error::Invalid(why)) => {
                if !self.checker.model_would_refuse(command, now_ms) {
                    return Err(h.fail(Check::Reply, format!("{command:?}: the store refused a valid write: {why}")));
                }
                h.outcome.counters.bad_inputs_refused += 1;
            }
            Err(e) => {
                self.call_failed_since_open = true;
                if !was_poisoned && self.store().poisoned().is_some() {
                    // Poisoned by this write: its frame may be on disk.
                    self.checker.uncertain(command, now_ms);
                    h.outcome.counters.in_doubt += 1;
                } else if !was_poisoned && !h.vfs.faults_injected_this_op() {
                    return Err(h.fail(Check::Reply, format!("{command:?}: failed with no fault injected: {e}")));
                }
            }
        }
        Ok(())
    }

    /// A command given as raw arguments. One that Redis refuses before
    /// running anything (the model's own reading, `testkit::model::
    /// refusal_of`: wrong arity, a misspelled integer, `SET` options that
    /// do not read, a `WINDOW` that declares nothing) must be refused with
    /// those words and change nothing — not a byte of the log, not a byte
    /// of memory; any other is the command it parses to.
    fn run_args(&mut self, h: &mut Harness, args: &[Vec<u8>], planned: &PlannedOp) -> Step<Ended> {
        let Some(refusal) = model::refusal_of(args) else {
            return match Command::parse(args) {
                Ok(command) => self.run_command(h, &command, planned),
                Err(e) => Err(h.fail(Check::Reply, format!("{planned}: the store refused what Redis reads: {e}"))),
            };
        };
        self.observe(planned, Moment::Begins, None);
        let before = (self.log_position(), self.store().used_memory(), self.store().key_count());
        let result = self.store_mut().execute_args(args);
        let reply_hash = result.as_ref().map_or(0, hash_reply);
        let index = h.op_index;
        h.vfs.with_trace(|t| {
            t.push(Event::Reply { index, hash: reply_hash });
            t.note_reply(|| reply_text::store_reply(&result));
        });
        let after = (self.log_position(), self.store().used_memory(), self.store().key_count());
        match result {
            Err(Error::Invalid(why)) if why.contains(refusal.words()) && before == after => {
                h.outcome.counters.bad_inputs_refused += 1;
                Ok(Ended::Done)
            }
            other => Err(h.fail(
                Check::Reply,
                format!(
                    "{planned}: Redis refuses it ({}), the store answered {other:?}{}",
                    refusal.words(),
                    if before == after { "" } else { " and changed its log or memory" }
                ),
            )),
        }
    }

    fn check_reply(&self, h: &Harness, command: &Command, got: &Reply, want: engine::Result<Reply>) -> Step {
        match want {
            Ok(want) if want == *got => Ok(()),
            Ok(want) => Err(h.fail(Check::Reply, format!("{command:?}\n    expected {want:?}\n    got      {got:?}"))),
            Err(e) => {
                Err(h.fail(Check::Reply, format!("{command:?}: the store answered {got:?}, the model refused: {e}")))
            }
        }
    }

    /// An admin call's result: a crash point reached ends it; an error is
    /// fine only when a fault was injected or the store was already
    /// poisoned.
    fn admin_result(
        &mut self,
        h: &mut Harness,
        op: &Op,
        was_poisoned: bool,
        result: engine::Result<()>,
    ) -> Step<Ended> {
        if h.vfs.crash_point_reached() {
            return Ok(Ended::CrashPoint);
        }
        match result {
            Ok(()) => {
                let now_ms = self.now_ms();
                self.checker.call_succeeded(now_ms);
                Ok(Ended::Done)
            }
            Err(_) if was_poisoned || h.vfs.faults_injected_this_op() => {
                self.call_failed_since_open = true;
                Ok(Ended::Done)
            }
            Err(e) => {
                let what = match op {
                    Op::Advance(_) => "tick",
                    _ => op.tag(),
                };
                Err(h.fail(Check::Admin, format!("{what} failed with no fault injected: {e}")))
            }
        }
    }

    /// Clean close: if it succeeds every acknowledged write is durable, and
    /// the reopened store must hold exactly them — with the same rows cold,
    /// in as many segments (see [`Layout`], compared by the loop's
    /// `restarted`). A close that failed under a fault is an error's reopen.
    fn close(&mut self, h: &mut Harness, planned: &PlannedOp) -> Step<Ended> {
        self.observe(planned, Moment::Begins, None);
        debug_assert!(self.layout_before_close.is_none(), "the last clean restart compared its layout");
        let store = self.store.take().expect("a store is open");
        let was_poisoned = store.poisoned().is_some();
        let before = (!self.call_failed_since_open && !was_poisoned).then(|| Layout::of(&store));
        let closed = store.close();
        if h.vfs.crash_point_reached() {
            return Ok(Ended::CrashPoint);
        }
        match closed {
            Ok(()) => self.checker.all_durable(),
            Err(_) if was_poisoned || h.vfs.faults_injected_this_op() => return Ok(Ended::Failed),
            Err(e) => return Err(h.fail(Check::Admin, format!("close failed with no fault injected: {e}"))),
        }
        self.observe(planned, Moment::Reopening, None);
        self.layout_before_close = before;
        Ok(Ended::Closed)
    }

    /// A second opener tries the live store's directory — to write on even
    /// indices, read-only on odd ones — and must be refused as locked,
    /// having changed nothing: no byte on disk, not the first holder's lock.
    fn second_open(&mut self, h: &mut Harness, planned: &PlannedOp) -> Step<Ended> {
        let dir = Path::new(DB_DIR);
        let (changes, holders) = (h.vfs.changes(), h.vfs.lock_holders(dir));
        let read_only = planned.index % 2 == 1;
        let result = if read_only {
            Store::open_read_only(self.engine_vfs.clone(), self.clock.clone(), dir)
        } else {
            let options = Options { fsync: self.config.fsync, point_in_time: self.config.point_in_time };
            Store::open(self.engine_vfs.clone(), self.clock.clone(), dir, options)
        };
        if h.vfs.crash_point_reached() {
            drop(result);
            return Ok(Ended::CrashPoint);
        }
        let how = if read_only { "a read-only" } else { "a writing" };
        match result {
            Err(Error::Locked { .. }) => {}
            Err(_) if h.vfs.faults_injected_this_op() => {}
            Err(e) => {
                return Err(h.fail(Check::Lock, format!("{how} second opener was refused, but not as locked: {e}")))
            }
            Ok(_) => return Err(h.fail(Check::Lock, format!("{how} second opener of a live store was let in"))),
        }
        if h.vfs.changes() != changes || h.vfs.lock_holders(dir) != holders {
            return Err(h.fail(Check::Lock, format!("{how} refused second opener changed the disk or the lock")));
        }
        Ok(Ended::Done)
    }
}
