//! Readers that step inside the writer's operation (`--interleave`): the
//! run loop's side of `pause_vfs.rs`. Before a writer's operation, the
//! seed draws whether one reader steps inside it, at which of its pause
//! points (the I/Os that change the disk), which reader, which table it
//! reads and whether it begins afresh — or whether, instead, it tries to
//! write; after the writer's call returns, what the step did is judged:
//!
//! - a reader that began there may see the state committed when the
//!   writer's operation began or, inside a commit, the state the commit
//!   makes (`readers.rs` keeps both and lets its reads choose);
//! - a refused begin is allowed only as the spec's refusal rule says
//!   (`reader_ops.rs`, `KvRun::reader_refusal_allowed`: the writer's lock as the
//!   adapter reports it, at that moment);
//! - a write attempt granted while the writer is in a write transaction
//!   (by the engine's own account: `ReadersBeside::writer_writing`) is a
//!   second writer, a failure; a refusal is always allowed;
//! - an error with faults off is a failure (check `isolation`).
//!
//! The draws come from a stream of their own per operation (the seed and
//! the operation's index), so a shrunk history keeps each kept
//! operation's step; without `--interleave` nothing is drawn and nothing
//! of a run changes.

use std::collections::BTreeSet;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::adapter::{readers_of, Adapter, ErrorKind};
use super::model::State;
use super::pause_vfs::{PausedStep, StepDone};
use super::run::KvRun;
use super::second_writer::{ClientAction, WriteContext};
use super::workload::{KitOp, PlannedKitOp};
use simulator::failure::Check;
use simulator::harness::{Harness, Step};

/// Salt of an operation's interleaving draw: "INTERLV".
const INTERLEAVE_SALT: u64 = 0x494e_5445_524c_5600;

/// How many of an operation's pause points the armed step may wait for:
/// a commit in WAL mode writes a frame per page and then syncs, a
/// rollback-journal commit writes, syncs and deletes its journal.
const MAX_PAUSE: u32 = 12;

/// The same for an engine that announces its pause points
/// (`ReadersBeside::pauses_where_announced`): redb's, before each fsync,
/// of which its commit makes one, or two in its 2-phase commit.
const MAX_SYNC_PAUSE: u32 = 2;

impl<A: Adapter> KvRun<'_, A> {
    /// Arm a reader's step inside `planned` (a writer's operation), if
    /// the run interleaves and the seed draws one.
    pub(super) fn arm_pause(&mut self, planned: &PlannedKitOp) {
        let Some(pause) = self.pause.clone() else { return };
        let mut rng = ChaCha8Rng::seed_from_u64(simulator::seeds::mix64(
            self.config.seed ^ INTERLEAVE_SALT ^ planned.index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ));
        if !rng.gen_bool(0.5) {
            return;
        }
        let mut step = PausedStep {
            at_pause: rng.gen_range(1..=MAX_PAUSE),
            reader: rng.gen_range(1..self.config.clients),
            table: rng.gen_range(0..self.config.spec.tables.len()),
            fresh: rng.gen_bool(0.5),
            try_write: false,
            action: None,
            other: self.config.clients,
        };
        // Drawn last, so the draws above keep what they drew before it.
        step.try_write = rng.gen_bool(0.25);
        // From the second writer's own stream: a seed without one draws
        // nothing more here.
        step.action = step.try_write.then(|| self.mid_op_action(planned)).flatten();
        let Some(beside) = readers_of(self.adapter).beside(self.db()) else { return };
        if beside.pauses_where_announced() {
            // Folded, not redrawn: every draw above stays what it was.
            step.at_pause = (step.at_pause - 1) % MAX_SYNC_PAUSE + 1;
        }
        let open: BTreeSet<usize> = self.readers.all().into_iter().collect();
        pause.arm(beside, step, open);
    }

    /// The writer's call returned: judge what the armed step did, if it
    /// ran. A crash point reached meanwhile ends everything: nothing to
    /// judge (the readers end with the crash).
    pub(super) fn absorb_pauses(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Step {
        let Some(pause) = self.pause.clone() else { return Ok(()) };
        for done in pause.disarm() {
            if h.vfs.crash_point_reached() {
                if let (Some(ClientAction::Write(write)), Some(_)) = (&done.step.action, &done.wrote) {
                    self.other_write_in_doubt(planned, write);
                }
                continue;
            }
            h.outcome.counters.interleaved_steps += 1;
            self.absorb_step(h, planned, done)?;
        }
        Ok(())
    }

    /// One step's ending, beginning and scan, in that order.
    fn absorb_step(&mut self, h: &mut Harness, planned: &PlannedKitOp, done: StepDone) -> Step {
        let StepDone { step, io_index, ended, begun, scanned, tried, wrote, acted } = done;
        let at = format!("{planned}, reader {} stepping at I/O #{io_index}", step.reader);
        if ended {
            self.readers.ended(step.reader);
        }
        if let (Some((result, writing, lock)), Some(ClientAction::Write(write))) = (wrote, &step.action) {
            h.outcome.counters.write_attempts += 1;
            let context = WriteContext { mid_op: true, writing, lock };
            if self.judge_other_write(h, &at, result, context)? {
                self.other_committed_inside(h, planned, write.clone())?;
            }
            return Ok(());
        }
        if let (Some(result), Some(action)) = (acted, &step.action) {
            return self.judge_action(h, &at, action, result);
        }
        match tried {
            None => {}
            Some((Ok(true), Some(true))) => {
                let detail = format!(
                    "{at}: it was granted the write lock while the writer is in a write transaction: two writers"
                );
                return Err(h.fail(Check::Isolation, detail));
            }
            Some((Ok(_), _)) => {
                h.outcome.counters.write_attempts += 1;
                return Ok(());
            }
            Some((Err(e), _)) => {
                return Err(h.fail(Check::Isolation, format!("{at}: its write attempt failed: {e}")));
            }
        }
        match begun {
            None => {}
            Some((Ok(()), lock)) => {
                let granted = self.reader_grant_allowed(lock);
                granted.map_err(|why| h.fail(Check::Isolation, format!("{at}: {why}")))?;
                self.readers.begun_among(step.reader, self.candidates(planned), h.op_index);
            }
            Some((Err(e), lock)) if e.kind == ErrorKind::Busy => {
                h.outcome.counters.readers_refused += 1;
                let allowed = self.reader_refusal_allowed(lock, true);
                return allowed.map_err(|why| h.fail(Check::Isolation, format!("{at}: {e}: {why}")));
            }
            Some((Err(e), _)) => {
                return Err(h.fail(Check::Isolation, format!("{at}: its begin failed with no fault injected: {e}")))
            }
        }
        match scanned {
            None => Ok(()),
            Some(Ok(rows)) => self
                .readers
                .check_scan(step.reader, step.table, &rows)
                .map_err(|detail| h.fail(Check::Isolation, format!("{at}: {detail}"))),
            Some(Err(e)) => Err(h.fail(Check::Isolation, format!("{at}: its scan failed with no fault injected: {e}"))),
        }
    }

    /// The states a reader that began inside `planned` may see: the one
    /// committed when it began, and inside a commit the one it makes.
    fn candidates(&self, planned: &PlannedKitOp) -> Vec<Arc<State>> {
        let mut states = vec![self.model.committed_shared()];
        if matches!(planned.op, KitOp::Commit { .. }) {
            states.push(self.model.commit_target());
        }
        states
    }
}
