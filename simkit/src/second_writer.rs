//! A second writer (`--clients N`, a seed that draws one:
//! [`KitConfig::draw_second_writer`](super::KitConfig::draw_second_writer)):
//! another client, on a connection of its own (client `N` after the
//! readers `1..N-1`), that runs write transactions in turn with the writer — before a writer's operation, where the seed draws,
//! and, with `--interleave`, as the step inside the writer's operation
//! that tries to write (`pause_vfs.rs`). Each transaction writes one key
//! and commits at the spec's first level, or is refused as busy and gives
//! up ([`WriteOutcome`]).
//!
//! What is judged (the rule is the engine's, declared in its spec):
//!
//! - a commit granted while the writer is in a write transaction (by the
//!   model, or by the engine's own account inside the writer's operation)
//!   is two writers: check `isolation`;
//! - a begin refused is allowed only while the writer is in a write
//!   transaction, may hold its lock after a fault (`readers.rs`), or a
//!   connection holds a lock the spec names
//!   ([`Readers::second_writer_refused_at`](super::Readers::second_writer_refused_at));
//!   a commit refused only where the writer waits for readers
//!   (`Readers::writer_waits`) and another connection may hold a read lock;
//! - a commit goes into the model in the order of completion: between
//!   operations at once; inside the writer's operation at once, unless that
//!   operation is a commit — the second writer was granted inside it, so
//!   the writer's commit completed first (SQLite's WAL: the checkpoint that
//!   follows a commit) — then after the writer's commit is concluded;
//! - its outcome is unknown while it runs: a crash point reached in it (or
//!   later in the writer's operation it ran inside) leaves it pending, so
//!   a recovery may show it or not. An acknowledged commit the operation
//!   around it then crashed is held no more strictly than that (a
//!   documented simplification: the kit's writer's acknowledged commits
//!   are held to their level).
//!
//! Faults are off while it runs (as a reader's step inside the writer's
//! operation): an injected fault would leave a second recovery to model.
//! Its draws come from a stream of their own (salt "2NDWRTR", per
//! operation), so a seed that does not draw a second writer keeps its
//! trace bit for bit. Besides writes it checkpoints (on its connection)
//! and closes a reader's connection while the others stay open.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::adapter::{readers_of, Adapter, KitError, OtherWrite, WriteOutcome};
use super::model::Model;
use super::run::KvRun;
use super::workload::{KitOp, PlannedKitOp};
use super::KeyKind;
use simulator::failure::Check;
use simulator::harness::{Ended, Harness, Step};

/// Salt of an operation's second-writer draws: "2NDWRTR".
const SECOND_WRITER_SALT: u64 = 0x324e_4457_5254_5200;

/// Of the writer's operations, the share before which the second writer
/// runs a transaction (when the seed drew one).
const P_BETWEEN: f64 = 0.15;

/// What the other client does, drawn per operation: a write transaction
/// (half the time), the engine's checkpoint in one of its four modes, or
/// closing its connection while the others stay open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ClientAction {
    /// A write transaction ([`ReadTransactions::write_commit`](super::ReadTransactions::write_commit)).
    Write(OtherWrite),
    /// A checkpoint in mode `0..4` ([`ReadTransactions::checkpoint`](super::ReadTransactions::checkpoint)).
    Checkpoint(usize),
    /// Its connection closed ([`ReadTransactions::close_client`](super::ReadTransactions::close_client)).
    Close,
}

/// Where a second writer's transaction ran, for judging it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WriteContext {
    /// Inside the writer's operation (`--interleave`).
    pub mid_op: bool,
    /// The writer was in a write transaction then, by the engine's own
    /// account (`None`: the adapter does not say).
    pub writing: Option<bool>,
    /// The strongest lock any connection held, reported after a refusal.
    pub lock: Option<&'static str>,
}

impl<A: Adapter> KvRun<'_, A> {
    /// The stream of the second writer's draws for operation `index`
    /// (`mid_op`: the write inside it, apart from the one before it).
    fn second_writer_rng(&self, index: u64, mid_op: bool) -> ChaCha8Rng {
        let salt = SECOND_WRITER_SALT ^ u64::from(mid_op);
        ChaCha8Rng::seed_from_u64(simulator::seeds::mix64(
            self.config.seed ^ salt ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ))
    }

    /// The write a second writer's transaction makes: a key of the
    /// workload's key space (so it meets the writer's keys), a value
    /// marked `w` (so a report shows whose it is).
    fn draw_other_write(&self, rng: &mut ChaCha8Rng) -> OtherWrite {
        let table = rng.gen_range(0..self.config.spec.tables.len());
        let n = rng.gen_range(0..self.config.key_space);
        let key = match self.config.spec.tables[table].keys {
            KeyKind::U64 => (u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 8).to_be_bytes().to_vec(),
            KeyKind::Bytes => format!("k{n}").into_bytes(),
        };
        let mut value = b"w".to_vec();
        value.extend(simulator::draw::token(rng, 16));
        OtherWrite { table, key, value }
    }

    /// The second writer's own connection: the client after the readers
    /// (so that its transactions leave every reader's snapshot open).
    pub(super) fn other_client(&self) -> usize {
        self.config.clients
    }

    /// What the other client does (see [`ClientAction`]).
    fn draw_action(&self, rng: &mut ChaCha8Rng) -> ClientAction {
        match rng.gen_range(0..10) {
            0..=4 => ClientAction::Write(self.draw_other_write(rng)),
            5..=7 => ClientAction::Checkpoint(rng.gen_range(0..4)),
            _ => ClientAction::Close,
        }
    }

    /// The action of the other client's step inside `planned`, if the
    /// seed has one (the step itself is drawn by `interleave.rs`).
    pub(super) fn mid_op_action(&self, planned: &PlannedKitOp) -> Option<ClientAction> {
        self.config.second_writer.then(|| self.draw_action(&mut self.second_writer_rng(planned.index, true)))
    }

    /// Before the writer's operation `planned`: the second writer's
    /// transaction, if the seed draws one here. `Some(ended)`: a crash
    /// point cut it short, and the operation ends there.
    pub(super) fn second_writer_between(&mut self, h: &mut Harness, planned: &PlannedKitOp) -> Step<Option<Ended>> {
        if !self.config.second_writer {
            return Ok(None);
        }
        let mut rng = self.second_writer_rng(planned.index, false);
        if !rng.gen_bool(P_BETWEEN) {
            return Ok(None);
        }
        let reader = rng.gen_range(1..self.config.clients);
        let action = self.draw_action(&mut rng);
        let other = self.other_client();
        match action {
            ClientAction::Write(write) => self.write_between(h, planned, other, &write),
            action => {
                // A close ends a reader's connection; a checkpoint runs on
                // the second writer's own.
                let client = match action {
                    ClientAction::Close => reader,
                    _ => other,
                };
                if self.readers.is_open(client) {
                    self.readers.ended(client);
                }
                let at = format!("{planned}, client {client} before it");
                let reading = readers_of(self.adapter);
                h.vfs.set_faults_enabled(false);
                let result = match action {
                    ClientAction::Checkpoint(mode) => reading.checkpoint(self.db(), client, mode),
                    _ => reading.close_client(self.db(), client),
                };
                h.vfs.set_faults_enabled(true);
                if h.vfs.crash_point_reached() {
                    return Ok(Some(Ended::CrashPoint));
                }
                let result =
                    result.expect("an engine that declares a second writer's refusals runs its clients' actions");
                self.judge_action(h, &at, &action, result)?;
                Ok(None)
            }
        }
    }

    /// A checkpoint or a close by another client: it changes no content,
    /// and with faults off it may not fail (what it did to the others'
    /// snapshots their reads show).
    pub(super) fn judge_action(
        &mut self,
        h: &mut Harness,
        at: &str,
        action: &ClientAction,
        result: Result<(), KitError>,
    ) -> Step {
        match action {
            ClientAction::Checkpoint(_) => h.outcome.counters.client_checkpoints += 1,
            _ => h.outcome.counters.client_closes += 1,
        }
        result.map_err(|e| h.fail(Check::Isolation, format!("{at}: its {action:?} failed with no fault injected: {e}")))
    }

    /// The second writer's transaction before the writer's operation.
    fn write_between(
        &mut self,
        h: &mut Harness,
        planned: &PlannedKitOp,
        writer: usize,
        write: &OtherWrite,
    ) -> Step<Option<Ended>> {
        let target = Model::with_write(self.model.committed(), write.table, &write.key, &write.value);
        self.model.set_pending_other(target);
        self.note_context(h, &format_args!("{planned} (client {writer} writing first)"));
        let reading = readers_of(self.adapter);
        h.vfs.set_faults_enabled(false);
        let result = reading.write_commit(self.db(), writer, write);
        h.vfs.set_faults_enabled(true);
        if h.vfs.crash_point_reached() {
            return Ok(Some(Ended::CrashPoint));
        }
        self.model.clear_pending();
        let result = result.expect("an engine that declares a second writer's refusals runs one (write_commit)");
        let lock = match result {
            Ok(WriteOutcome::Committed) => None,
            _ => reading.writer_lock(self.db()),
        };
        let context = WriteContext { mid_op: false, writing: None, lock };
        let at = format!("{planned}, client {writer} writing before it");
        if self.judge_other_write(h, &at, result, context)? {
            self.other_committed(h, write);
        }
        Ok(None)
    }

    /// Judge a second writer's transaction (see the module doc): `Ok(true)`
    /// if it committed.
    pub(super) fn judge_other_write(
        &mut self,
        h: &mut Harness,
        at: &str,
        result: Result<WriteOutcome, KitError>,
        context: WriteContext,
    ) -> Result<bool, simulator::failure::Failure> {
        let writing = context.writing.unwrap_or(false) || self.model.in_transaction();
        let refused = |h: &mut Harness, why: Result<(), String>| {
            h.outcome.counters.second_writer_refused += 1;
            why.map(|()| false).map_err(|why| h.fail(Check::Isolation, format!("{at}: {why}")))
        };
        match result {
            Ok(WriteOutcome::Committed | WriteOutcome::RefusedAtCommit) if writing => Err(h.fail(
                Check::Isolation,
                format!(
                    "{at}: a second writer began writing while the writer is in a write transaction ({result:?}): \
                     two writers"
                ),
            )),
            Ok(WriteOutcome::Committed) => {
                h.outcome.counters.second_writer_commits += 1;
                Ok(true)
            }
            Ok(WriteOutcome::RefusedAtBegin) => {
                let why = self.second_writer_refusal_allowed(writing, context.lock);
                refused(h, why)
            }
            Ok(WriteOutcome::RefusedAtCommit) => {
                let why = self.second_commit_refusal_allowed(context.mid_op);
                refused(h, why)
            }
            Err(e) => {
                Err(h.fail(Check::Isolation, format!("{at}: its transaction failed with no fault injected: {e}")))
            }
        }
    }

    /// Whether a second writer's begin may be refused as busy: the writer
    /// is in a write transaction, may hold its lock after a fault, or a
    /// connection holds `lock`, one the spec names.
    fn second_writer_refusal_allowed(&self, writing: bool, lock: Option<&'static str>) -> Result<(), String> {
        let refused_at = self.config.spec.readers.map_or(&[][..], |readers| readers.second_writer_refused_at);
        if writing || self.readers.writer_lock_in_doubt() || lock.is_some_and(|lock| refused_at.contains(&lock)) {
            return Ok(());
        }
        Err(format!(
            "a second writer's begin was refused while the writer is in no write transaction and the strongest lock \
             held is {}; the engine refuses a second writer only at {} (Readers::second_writer_refused_at)",
            lock.unwrap_or("unknown"),
            refused_at.join(" or "),
        ))
    }

    /// Whether a second writer's commit may be refused as busy: only where
    /// the writer waits for readers (a read lock another connection holds
    /// makes a commit wait), and another connection may hold one — a
    /// reader open, or the writer inside its operation.
    fn second_commit_refusal_allowed(&self, mid_op: bool) -> Result<(), String> {
        let waits = self.config.spec.readers.is_some_and(|readers| readers.writer_waits);
        if waits && (mid_op || !self.readers.is_empty() || self.readers.writer_lock_in_doubt()) {
            return Ok(());
        }
        Err("a second writer's commit was refused as busy, with no reader open, by an engine whose commits wait \
             for no reader"
            .to_string())
    }

    /// A second writer's commit of `write` was acknowledged: into the
    /// model on the state committed now, at the spec's first level.
    pub(super) fn other_committed(&mut self, h: &Harness, write: &OtherWrite) {
        let (promise, survives_kill) = self.config.acknowledged(0, false);
        let before = self.model.committed_shared();
        self.model.other_committed(write.table, &write.key, &write.value, promise, survives_kill);
        if !std::sync::Arc::ptr_eq(&before, &self.model.committed_shared()) {
            self.readers.writer_committed(h.op_index);
        }
        self.readers.writer_acknowledged();
    }

    /// A second writer committed `write` inside the writer's operation
    /// `planned`: into the model now, or, inside a commit (which completed
    /// first), once that commit is concluded (`settle_deferred_writes`).
    pub(super) fn other_committed_inside(&mut self, h: &Harness, planned: &PlannedKitOp, write: OtherWrite) -> Step {
        match planned.op {
            KitOp::Commit { .. } => self.deferred_writes.push(write),
            _ => self.other_committed(h, &write),
        }
        Ok(())
    }

    /// The writer's commit is concluded: the second writer's commits
    /// inside it follow it into the model — acknowledged, on the state it
    /// made; not acknowledged (a crash point or an error after the second
    /// writer ran), in doubt on the state it would have made.
    pub(super) fn settle_deferred_writes(&mut self, h: &Harness, acknowledged: bool) {
        for write in std::mem::take(&mut self.deferred_writes) {
            if acknowledged {
                self.other_committed(h, &write);
            } else {
                let target = Model::with_write(self.model.visible(), write.table, &write.key, &write.value);
                self.model.set_pending_other(target);
            }
        }
    }

    /// A crash point was reached in the writer's operation `planned` after
    /// (or while) the second writer wrote `write` inside it: its commit may
    /// have landed, on the state the writer's commit makes if `planned` is
    /// one (it completed first), else on the state committed.
    pub(super) fn other_write_in_doubt(&mut self, planned: &PlannedKitOp, write: &OtherWrite) {
        let base = match planned.op {
            KitOp::Commit { .. } => self.model.commit_target(),
            _ => self.model.committed_shared(),
        };
        let target = Model::with_write(&base, write.table, &write.key, &write.value);
        self.model.set_pending_other(target);
    }
}
