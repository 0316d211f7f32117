//! A reader's steps on the run loop (`READER r BEGIN|GET|SCAN|END`): the
//! kit's key-value workload ([`KvRun`]) carries each out on the adapter —
//! a read with no transaction open begins one, a `BEGIN` ends the open
//! one first — and holds what it read to the reader's snapshot
//! (`readers.rs`, which owns the rule). Readers end before a clean close
//! and, where the engine says so, before its maintenance. Where the
//! writer waits for readers (`Readers::writer_waits`: SQLite's rollback
//! journal), a reader refused at its begin because the writer holds its
//! write lock, or may have left work that needs it, stays closed (reply
//! `Busy`) — at the locks the spec names (`Readers::refused_at`) and no
//! other: SQLite refuses a new reader at `PENDING` or `EXCLUSIVE`, never
//! at `RESERVED` (`KvRun::reader_refusal_allowed`, which the steps inside the
//! writer's operations, `interleave.rs`, answer to as well).

use super::adapter::readers_of;
use super::client::Reply;
use super::run::KvRun;
use super::workload::{PlannedKitOp, ReaderStep};
use super::{Adapter, ErrorKind, KitError};
use simulator::failure::Check;
use simulator::harness::{Ended, Harness, Step};
use simulator::trace::hash_debug;

impl<A: Adapter> KvRun<'_, A> {
    /// A reader's step (`READER r ...`), its reply held to the reader's
    /// snapshot (a mismatch fails check `isolation`).
    pub(super) fn reader_op(
        &mut self,
        h: &mut Harness,
        planned: &PlannedKitOp,
        reader: usize,
        step: &ReaderStep,
    ) -> Step<Ended> {
        let max = self.config.spec.max_readers();
        assert!((1..=max).contains(&reader), "{planned}: the grammar and the generator keep readers in 1..={max}");
        self.note_context(h, planned);
        let result = self.reader_call(h.op_index, reader, step);
        Self::trace_reply(h, result.as_ref().map_or(0, hash_debug));
        h.vfs.with_trace(|t| t.note_reply(|| super::reply_text::kit_reply(&result)));
        if matches!(result, Ok(Reply::Busy)) {
            h.outcome.counters.readers_refused += 1;
        }
        match Self::conclude(h, planned, result)? {
            Ok(reply) => self.check_reader_reply(h, planned, reader, step, reply).map(|()| Ended::Done),
            Err(ended) => Ok(ended),
        }
    }

    /// Carry out `step` for `reader`: a `BEGIN` ends the reader's open
    /// transaction first, a read begins one if none is open, an `END` ends
    /// the open one (none open: nothing to do).
    fn reader_call(&mut self, op_index: u64, reader: usize, step: &ReaderStep) -> Result<Reply, KitError> {
        let reading = readers_of(self.adapter);
        let open = self.readers.is_open(reader);
        if open && matches!(step, ReaderStep::Begin | ReaderStep::End) {
            self.readers.ended(reader);
            reading.end_read(self.db(), reader)?;
        }
        if matches!(step, ReaderStep::End) {
            return Ok(Reply::Done);
        }
        if !self.readers.is_open(reader) {
            match reading.begin_read(self.db(), reader) {
                Err(e) if e.kind == ErrorKind::Busy => {
                    let lock = reading.writer_lock(self.db());
                    self.reader_refusal_allowed(lock, false)
                        .map_err(|why| KitError::new(e.kind, format!("{e}: {why}")))?;
                    return Ok(Reply::Busy);
                }
                other => other?,
            }
            let lock = reading.writer_lock(self.db());
            self.reader_grant_allowed(lock).map_err(|why| KitError::new(ErrorKind::Other, why))?;
            self.readers.begun(reader, &self.model, op_index);
        }
        match step {
            ReaderStep::Get { table, key } => reading.reader_get(self.db(), reader, table.index, key).map(Reply::Value),
            ReaderStep::Scan { table } => reading.reader_scan(self.db(), reader, table.index).map(Reply::Rows),
            ReaderStep::Begin | ReaderStep::End => Ok(Reply::Done),
        }
    }

    fn check_reader_reply(
        &mut self,
        h: &Harness,
        planned: &PlannedKitOp,
        reader: usize,
        step: &ReaderStep,
        reply: Reply,
    ) -> Step {
        let verdict = match (step, &reply) {
            (ReaderStep::Get { table, key }, Reply::Value(got)) => {
                self.readers.check_get(reader, table.index, key, got.as_ref(), &self.model)
            }
            (ReaderStep::Scan { table }, Reply::Rows(got)) => self.readers.check_scan(reader, table.index, got),
            (ReaderStep::Begin | ReaderStep::End, Reply::Done) => Ok(()),
            (ReaderStep::Begin | ReaderStep::Get { .. } | ReaderStep::Scan { .. }, Reply::Busy) => Ok(()),
            _ => return Err(h.fail(Check::Reply, format!("{planned}: the adapter answered {reply:?}"))),
        };
        verdict.map_err(|detail| h.fail(Check::Isolation, format!("{planned}: {detail}")))
    }

    /// Whether a reader's begin may be refused as busy, the writer holding
    /// `lock` (as the adapter reports it; `mid_op`: the writer's
    /// operation is suspended at one of its I/Os, `interleave.rs`). The
    /// writer must wait for readers ([`super::Readers::writer_waits`])
    /// and may hold its lock: in a write transaction or inside an
    /// operation (SQLite's writer holds `RESERVED` from its first write,
    /// `EXCLUSIVE` from a cache spill to its commit), or after an operation
    /// that succeeded with a fault injected in it, until a commit that
    /// wrote is acknowledged (a `ROLLBACK` whose journal playback failed
    /// leaves the journal hot, and the reader must roll it back under
    /// `EXCLUSIVE`, which another reader's `SHARED` lock refuses:
    /// `OpenReaders::writer_lock_in_doubt`). Where the spec names the
    /// locks that refuse readers ([`super::Readers::refused_at`]) and the
    /// adapter reports its writer's, the lock must be one of them. `Err`
    /// says why the refusal is not allowed.
    pub(super) fn reader_refusal_allowed(&self, lock: Option<&'static str>, mid_op: bool) -> Result<(), String> {
        let Some(readers) = self.config.spec.readers.filter(|readers| readers.writer_waits) else {
            return Err("the engine's writer never waits for readers (Readers::writer_waits), so nothing may \
                        refuse them"
                .to_string());
        };
        if self.readers.writer_lock_in_doubt() {
            return Ok(());
        }
        if !mid_op && !self.model.in_transaction() {
            return Err("a reader refused with no write transaction open and no operation in flight".to_string());
        }
        match lock {
            Some(lock) if !readers.refused_at.is_empty() && !readers.refused_at.contains(&lock) => Err(format!(
                "a reader refused while the writer holds {lock}; the engine refuses readers only at {} \
                 (Readers::refused_at)",
                readers.refused_at.join(" or "),
            )),
            _ => Ok(()),
        }
    }

    /// Whether a reader's begin may succeed with the writer holding `lock`
    /// (as the adapter reports it, once the reader holds its own): never
    /// at a lock the spec says refuses readers ([`super::Readers::
    /// refused_at`]) — SQLite grants no new `SHARED` lock while another
    /// connection holds `PENDING` (`lockingv3.html`: "no new SHARED locks
    /// will be granted"), and a reader that began under `EXCLUSIVE` reads
    /// pages the writer is overwriting.
    pub(super) fn reader_grant_allowed(&self, lock: Option<&'static str>) -> Result<(), String> {
        let refused_at = self.config.spec.readers.filter(|readers| readers.writer_waits).map(|r| r.refused_at);
        match (refused_at, lock) {
            (Some(refused_at), Some(lock)) if refused_at.contains(&lock) => Err(format!(
                "a reader began while the writer holds {lock}, where the engine refuses new readers \
                 (Readers::refused_at)"
            )),
            _ => Ok(()),
        }
    }

    /// Whether `error` is the writer refused as busy by an engine whose
    /// writer waits for its readers, with readers open: the kit then ends
    /// them and retries, as an application's busy handler would.
    pub(super) fn writer_waits_for_readers(&self, error: &KitError) -> bool {
        error.kind == ErrorKind::Busy && self.writer_waits() && !self.readers.is_empty()
    }

    /// Whether this configuration's writer waits for its readers
    /// ([`super::Readers::writer_waits`]).
    fn writer_waits(&self) -> bool {
        self.config.spec.readers.is_some_and(|readers| readers.writer_waits)
    }

    /// End every open reader (before a clean close: the application ends
    /// its transactions before it closes the database).
    pub(super) fn end_readers(&mut self) -> Result<(), KitError> {
        for reader in self.readers.all() {
            self.readers.ended(reader);
            readers_of(self.adapter).end_read(self.db(), reader)?;
        }
        Ok(())
    }

    /// End every open reader before the engine's maintenance, unless the
    /// engine keeps readers across it ([`super::Readers::across_maintenance`]).
    pub(super) fn readers_before_maintenance(&mut self) -> Result<(), KitError> {
        match self.config.spec.readers {
            Some(readers) if !readers.across_maintenance => self.end_readers(),
            _ => Ok(()),
        }
    }
}
