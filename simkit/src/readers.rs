//! The kit's readers: read-only transactions of clients beside the one
//! writer (`READER r ...` operations, for an engine whose spec declares
//! [`Readers`](super::Readers)), each with the committed states it may
//! see, and the check of what it read.
//!
//! Between the writer's operations the history is sequential: a reader
//! that begins there must see exactly the state committed then — the
//! last commit acknowledged before it began: no later commit, no write of
//! the writer's open transaction, no earlier state — and the same state at
//! every read until it ends (snapshot isolation, the promise of MVCC
//! engines and of SQLite's connections).
//!
//! With `--interleave` a reader also steps while the writer's operation
//! is suspended at one of its I/Os (`pause_vfs.rs`): its invocation and
//! completion then overlap the writer's operation, and the snapshot it may
//! see is any state committed between its invocation and its first read's
//! completion — the state committed when the writer's operation began, or,
//! inside a commit, the state that commit makes (whose outcome is still
//! unknown: a commit that then fails ends the reader with the reopen).
//! A reader therefore holds a set of candidate states, one or two; each
//! read keeps those it agrees with, and a read no candidate agrees with
//! fails the run (a Porcupine-style search, exhaustive because one writer
//! leaves at most two candidates). This forbids exactly the anomalies a
//! snapshot read forbids with one writer: a dirty read (an uncommitted or
//! aborted write, G1a/G1b), a fractured read (two reads of one transaction
//! from two states), and a stale one (a state older than the last commit
//! acknowledged before the reader began: real-time order). Write
//! anomalies (lost update, write skew) need two writers.
//!
//! A commit that failed ends with a reopen, and a reopen, a crash or a
//! clean close ends every reader (the kit forgets them; the adapter drops
//! their handles with the database's). The run loop's side — carrying
//! out a reader's steps on the adapter — is `reader_ops.rs` and
//! `interleave.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::model::{diff, show_value, Model, State};
use super::Rows;

/// What an open reader may see.
#[derive(Clone, Debug)]
struct Snapshot {
    /// The states it may see: the one committed when it began, or (begun
    /// inside a commit) that one and the commit's; narrowed by its reads.
    states: Vec<Arc<State>>,
    /// The operation that began it (an explicit `BEGIN`, or a read that
    /// found the reader closed, or the writer's operation it began inside).
    begun_at_op: u64,
    /// The writer's commits that changed the content since it began: the
    /// history a failure shows.
    commits_since: Vec<u64>,
}

impl Snapshot {
    /// Where the reader began and what the writer committed since, for a
    /// failure.
    fn history(&self, reader: usize) -> String {
        let commits: Vec<String> = self.commits_since.iter().map(|op| format!("#{op}")).collect();
        let since = match commits.is_empty() {
            true => "the writer committed no change since".to_string(),
            false => format!("the writer committed changes since, at op {}", commits.join(", ")),
        };
        let among = match self.states.len() {
            1 => String::new(),
            n => format!(" (inside the writer's commit: it may see any of {n} states, before or after it)"),
        };
        format!("reader {reader} began at op #{}{among}, and {since}", self.begun_at_op)
    }

    /// Keep the candidates `agrees` accepts; `false` if none does (the
    /// candidates are then left as they were, for the failure's words).
    fn narrow(&mut self, agrees: impl Fn(&State) -> bool) -> bool {
        let kept: Vec<Arc<State>> = self.states.iter().filter(|state| agrees(state)).cloned().collect();
        if kept.is_empty() {
            return false;
        }
        self.states = kept;
        true
    }
}

/// The readers open now, by client number.
#[derive(Clone, Debug, Default)]
pub(super) struct OpenReaders {
    open: BTreeMap<usize, Snapshot>,
    /// A writer's operation succeeded although the disk injected a fault
    /// in it, and no commit that wrote has been acknowledged since: the
    /// writer may hold its write lock, or have left work that needs it.
    /// SQLite's `ROLLBACK` answers `OK` when its journal playback fails
    /// (`sqlite3RollbackAll` ignores `sqlite3BtreeRollback`'s error), then
    /// drops its locks and leaves the journal hot (`pager_unlock`); the
    /// next connection to read must roll it back under `EXCLUSIVE`, which
    /// any other reader's `SHARED` lock refuses (`SQLITE_BUSY`). An empty
    /// commit settles nothing: it takes no lock. A commit that wrote did
    /// read first (rolling the journal back) and then released its locks.
    writer_lock_in_doubt: bool,
}

impl OpenReaders {
    /// Whether reader `reader` has a read-only transaction open.
    pub fn is_open(&self, reader: usize) -> bool {
        self.open.contains_key(&reader)
    }

    /// Reader `reader` began, at operation `op_index`, seeing what
    /// `model` has committed.
    pub fn begun(&mut self, reader: usize, model: &Model, op_index: u64) {
        self.begun_among(reader, vec![model.committed_shared()], op_index);
    }

    /// Reader `reader` began inside the writer's operation `op_index`,
    /// and may see any of `states` (`interleave.rs`).
    pub fn begun_among(&mut self, reader: usize, mut states: Vec<Arc<State>>, op_index: u64) {
        debug_assert!(!states.is_empty(), "a reader sees some state");
        states.dedup_by(|a, b| a == b);
        let snapshot = Snapshot { states, begun_at_op: op_index, commits_since: Vec::new() };
        let before = self.open.insert(reader, snapshot);
        debug_assert!(before.is_none(), "reader {reader} begins only when none of its own is open");
    }

    /// Reader `reader` ended (or is about to be ended).
    pub fn ended(&mut self, reader: usize) {
        let was = self.open.remove(&reader);
        debug_assert!(was.is_some(), "reader {reader} ends only when open");
    }

    /// The writer's commit at operation `op_index` changed the content:
    /// every open reader must go on seeing what it saw.
    pub fn writer_committed(&mut self, op_index: u64) {
        for snapshot in self.open.values_mut() {
            snapshot.commits_since.push(op_index);
        }
    }

    /// A writer's operation succeeded with a fault injected in it.
    pub fn writer_survived_fault(&mut self) {
        self.writer_lock_in_doubt = true;
    }

    /// A writer's commit of a transaction that wrote was acknowledged: its
    /// lock is released, and whatever it needed the lock for is done.
    pub fn writer_acknowledged(&mut self) {
        self.writer_lock_in_doubt = false;
    }

    /// Whether the writer may hold its write lock outside a transaction
    /// (see `writer_lock_in_doubt`).
    pub fn writer_lock_in_doubt(&self) -> bool {
        self.writer_lock_in_doubt
    }

    /// Every open reader, lowest first.
    pub fn all(&self) -> Vec<usize> {
        self.open.keys().copied().collect()
    }

    /// Whether no reader is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// A crash, a close or a reopen ended them all.
    pub fn clear(&mut self) {
        self.open.clear();
        self.writer_lock_in_doubt = false;
    }

    fn snapshot(&mut self, reader: usize) -> &mut Snapshot {
        self.open.get_mut(&reader).expect("a reader that read successfully is open")
    }

    /// Hold a reader's read of `key` in `table` to its snapshot; `Err` says
    /// what it saw instead, and where that came from.
    pub fn check_get(
        &mut self,
        reader: usize,
        table: usize,
        key: &[u8],
        got: Option<&Vec<u8>>,
        model: &Model,
    ) -> Result<(), String> {
        let snapshot = self.snapshot(reader);
        if snapshot.narrow(|state| state.tables[table].get(key) == got) {
            return Ok(());
        }
        let want = snapshot.states[0].tables[table].get(key);
        let source = if got == model.committed().tables[table].get(key) {
            "what a commit after the reader began holds"
        } else if model.in_transaction() && got == model.visible().tables[table].get(key) {
            "what the writer's open transaction holds, uncommitted"
        } else {
            "no state committed since it began"
        };
        Err(format!(
            "{}: it must see the state committed when it began\n    expected {}\n    got      {} ({source})",
            snapshot.history(reader),
            show_value(want),
            show_value(got),
        ))
    }

    /// Hold a reader's scan of `table`, known only by `agrees` (which rows
    /// it could have been: `crash-os` hears a count and a hash) and `got`
    /// (how to name it), to its snapshot.
    pub fn check_scan_answer(
        &mut self,
        reader: usize,
        table: usize,
        agrees: impl Fn(&Rows) -> bool,
        got: &str,
    ) -> Result<(), String> {
        let snapshot = self.snapshot(reader);
        if snapshot.narrow(|state| agrees(&state.tables[table])) {
            return Ok(());
        }
        let want = snapshot.states[0].tables[table].len();
        Err(format!(
            "{}: its scan ({got}) is not the table committed when it began ({want} rows)",
            snapshot.history(reader)
        ))
    }

    /// Hold a reader's scan of `table` to its snapshot.
    pub fn check_scan(&mut self, reader: usize, table: usize, got: &Rows) -> Result<(), String> {
        let snapshot = self.snapshot(reader);
        if snapshot.narrow(|state| state.tables[table] == *got) {
            return Ok(());
        }
        let tables = snapshot.states[0].tables.len();
        let (mut expected, mut seen) = (State::empty(tables), State::empty(tables));
        expected.tables[table] = snapshot.states[0].tables[table].clone();
        seen.tables[table] = got.clone();
        Err(format!(
            "{}: its scan differs from the state committed when it began:\n{}",
            snapshot.history(reader),
            diff(&expected, &seen)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Promise;

    fn model_with(key: &[u8], value: &[u8]) -> Model {
        let mut model = Model::new(1);
        model.put(0, key, value);
        model.commit(Promise::Durable);
        model
    }

    /// A reader keeps the state it began on: a later commit and the
    /// writer's open transaction are both refused, each named.
    #[test]
    fn a_reader_sees_only_the_state_committed_when_it_began() {
        let mut model = model_with(b"k", b"old");
        let mut readers = OpenReaders::default();
        readers.begun(1, &model, 7);
        model.put(0, b"k", b"new");
        assert!(model.in_transaction());
        let uncommitted = readers.check_get(1, 0, b"k", Some(&b"new".to_vec()), &model).unwrap_err();
        assert!(uncommitted.contains("began at op #7") && uncommitted.contains("uncommitted"), "{uncommitted}");
        assert!(uncommitted.contains("committed no change since"), "{uncommitted}");
        model.commit(Promise::Durable);
        readers.writer_committed(8);
        let later = readers.check_get(1, 0, b"k", Some(&b"new".to_vec()), &model).unwrap_err();
        assert!(later.contains("a commit after the reader began"), "{later}");
        assert!(later.contains("committed changes since, at op #8"), "{later}");
        assert_eq!(readers.check_get(1, 0, b"k", Some(&b"old".to_vec()), &model), Ok(()));
        let rows = model.committed().tables[0].clone();
        assert!(readers.check_scan(1, 0, &rows).is_err(), "the scan sees the later commit");
        readers.ended(1);
        readers.begun(1, &model, 9);
        assert_eq!(readers.check_scan(1, 0, &rows), Ok(()));
        assert_eq!(readers.all(), vec![1]);
        readers.clear();
        assert!(!readers.is_open(1));
    }
}
