//! The redb target's reference model and its durability rule (the oracle).
//!
//! The model is a `BTreeMap` per table, sharing nothing with redb. It
//! keeps the *history* of committed states (each an `Arc`, so the checker
//! contexts that explore clones are cheap), the index of the last one
//! known durable, the open write transaction's working copy, and what an
//! operation in flight might publish.
//!
//! # What redb promises, and what is checked
//! - A transaction is atomic: after any crash the content equals some
//!   committed state, never a mix.
//! - `Durability::Immediate`: durable once `commit()` returns `Ok`.
//! - `Durability::None`: visible to later transactions at once, *not*
//!   durable: redb documents that such commits "will not be persisted to
//!   disk unless followed by a commit with `Durability::Immediate`". Its
//!   implementation never writes the commit slot for them (they live in
//!   an in-memory secondary slot), so a power loss returns to the last
//!   durable commit. A later durable commit persists them (its tree
//!   contains them), and so do a clean `Database::close()` (which commits
//!   them) and `compact()` (whose first commit publishes them).
//!
//! So after a power loss (or a reopen after an I/O error) the content must
//! be exactly **the last durable state `D`**, or **the target of the one
//! operation in flight** that could have made something durable: the
//! state of an `Immediate` commit that had not returned (or failed), or
//! the last acknowledged state `A` for a close or a compaction that had
//! not returned. This is stricter than "some prefix `D <= p <= A`"
//! (which is what a durability contract alone would allow): a state
//! strictly between — a `None` commit surviving a crash on its own —
//! fails too, and the report says that it satisfies the looser rule.
//! After a clean close that returned `Ok`, `D = A` and the reopened
//! content must be `A`.
//!
//! When media corruption was injected (only in seeds that run redb's
//! integrity check at every open), redb may refuse with `Corrupted`, or
//! — since with 1-phase commit a damaged newest commit cannot be told
//! from a torn one — fall back to an *older* committed state; any state
//! of the history is then accepted and counted as an expected loss. A
//! state no commit ever had fails, corruption or not.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// One table: key bytes (big-endian for `t0`'s numbers) to value bytes.
pub type TableContent = BTreeMap<Vec<u8>, Arc<[u8]>>;

/// The whole database's content: both tables, in [`super::workload::Table`] order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// Per table.
    pub tables: [TableContent; 2],
}

/// What an operation in flight may have made durable.
#[derive(Clone, Debug)]
pub enum Pending {
    /// An `Immediate` commit of this state.
    Commit(Arc<State>),
    /// A close or compaction: everything acknowledged.
    PublishAll,
}

/// The model (see the module doc). Cloning it is cheap: states are shared.
#[derive(Clone, Debug)]
pub struct Model {
    /// Committed states, oldest first; never empty.
    history: Vec<Arc<State>>,
    /// Index into `history` of the last state known durable.
    durable: usize,
    /// The open write transaction's view, if one is open.
    working: Option<State>,
    /// What the operation in flight may have published (a failed commit,
    /// then the close that follows it, may each publish something).
    pending: Vec<Pending>,
}

/// How a recovered state was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// It is the last durable state.
    Durable,
    /// It is what the operation in flight would have published.
    InFlight,
    /// Media corruption was injected and redb fell back to an older state.
    MediaRollback,
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

impl Model {
    /// An empty database, durable.
    pub fn new() -> Model {
        Model { history: vec![Arc::new(State::default())], durable: 0, working: None, pending: Vec::new() }
    }

    /// A database just recovered holding `state`: that state, durable,
    /// nothing in flight (where a recovery's probe starts).
    pub fn recovered_at(state: State) -> Model {
        Model { history: vec![Arc::new(state)], durable: 0, working: None, pending: Vec::new() }
    }

    /// The last committed state (what a read transaction sees).
    pub fn committed(&self) -> &State {
        self.history.last().expect("the history is never empty")
    }

    /// The state a read sees: the write transaction's if one is open.
    pub fn visible(&self) -> &State {
        self.working.as_ref().unwrap_or_else(|| self.committed())
    }

    /// Whether a write transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.working.is_some()
    }

    /// Begin a write transaction (a no-op if one is open).
    pub fn begin(&mut self) {
        if self.working.is_none() {
            self.working = Some(self.committed().clone());
        }
    }

    fn working(&mut self) -> &mut State {
        self.begin();
        self.working.as_mut().expect("begun above")
    }

    /// Insert into the write transaction; the value it replaced.
    pub fn put(&mut self, table: usize, key: Vec<u8>, value: &[u8]) -> Option<Arc<[u8]>> {
        self.working().tables[table].insert(key, Arc::from(value))
    }

    /// Remove in the write transaction; the value removed.
    pub fn remove(&mut self, table: usize, key: &[u8]) -> Option<Arc<[u8]>> {
        self.working().tables[table].remove(key)
    }

    /// What a read of `key` sees.
    pub fn get(&self, table: usize, key: &[u8]) -> Option<&Arc<[u8]>> {
        self.visible().tables[table].get(key)
    }

    /// The state an `Immediate` commit of the open transaction (or of an
    /// empty one) would publish.
    pub fn commit_target(&self) -> Arc<State> {
        Arc::new(self.visible().clone())
    }

    /// An operation that may make `pending` durable is about to run (on
    /// top of whatever an earlier step of the same operation may have).
    pub fn set_pending(&mut self, pending: Pending) {
        self.pending.push(pending);
    }

    /// The operation in flight finished without leaving doubt.
    pub fn clear_pending(&mut self) {
        self.pending.clear();
    }

    /// The write transaction committed (`durable`: with `Immediate`).
    pub fn commit(&mut self, durable: bool) {
        let state = self.working.take().unwrap_or_else(|| self.committed().clone());
        if state != *self.committed() {
            self.history.push(Arc::new(state));
        }
        if durable {
            self.durable = self.history.len() - 1;
        }
        self.pending.clear();
    }

    /// The write transaction was aborted (or lost).
    pub fn abort(&mut self) {
        self.working = None;
    }

    /// Everything committed is durable (a clean close or a compaction
    /// returned `Ok`).
    pub fn all_durable(&mut self) {
        self.durable = self.history.len() - 1;
        self.pending.clear();
    }

    /// Judge `recovered` after a power loss or a reopen (see the module
    /// doc); `media_corrupted` says whether media corruption was injected.
    /// On success the model goes on from the recovered state: the write
    /// transaction and the doubt are gone, and the state is durable (redb
    /// just opened it from the disk).
    pub fn recovered(&mut self, recovered: &State, media_corrupted: bool) -> Result<Accepted, String> {
        let verdict = self.allows(recovered, media_corrupted);
        if let Ok((accepted, index)) = &verdict {
            match (accepted, index) {
                (_, Some(index)) => self.history.truncate(index + 1),
                (_, None) => self.history.push(Arc::new(recovered.clone())),
            }
            self.durable = self.history.len() - 1;
        }
        self.working = None;
        self.pending.clear();
        verdict.map(|(accepted, _)| accepted)
    }

    /// Whether `recovered` is allowed now, and where it is in the history
    /// (`None`: the in-flight commit's new state). `Err` is the report.
    pub fn allows(&self, recovered: &State, media_corrupted: bool) -> Result<(Accepted, Option<usize>), String> {
        if *self.history[self.durable] == *recovered {
            return Ok((Accepted::Durable, Some(self.durable)));
        }
        for pending in &self.pending {
            let target = match pending {
                Pending::Commit(target) => &**target,
                Pending::PublishAll => self.committed(),
            };
            if *target == *recovered {
                let at = (*target == *self.committed()).then_some(self.history.len() - 1);
                return Ok((Accepted::InFlight, at));
            }
        }
        let found = self.history.iter().rposition(|state| **state == *recovered);
        if media_corrupted {
            if let Some(index) = found {
                return Ok((Accepted::MediaRollback, Some(index)));
            }
        }
        Err(self.explain(recovered, found, media_corrupted))
    }

    fn explain(&self, recovered: &State, found: Option<usize>, media_corrupted: bool) -> String {
        let acked = self.history.len() - 1;
        let mut out = format!(
            "recovered content is not the last durable state: {} committed states, #{} the last durable, #{acked} \
             the last acknowledged, in flight: {}",
            self.history.len(),
            self.durable,
            if self.pending.is_empty() {
                "nothing that could publish".to_string()
            } else {
                let what: Vec<&str> = self
                    .pending
                    .iter()
                    .map(|p| match p {
                        Pending::Commit(_) => "an Immediate commit",
                        Pending::PublishAll => "a close or compaction (publishes the last acknowledged)",
                    })
                    .collect();
                what.join(" and ")
            }
        );
        match found {
            Some(index) if index > self.durable => {
                let _ = write!(
                    out,
                    "\n    it equals committed state #{index}: a Durability::None commit survived the power loss on \
                     its own (allowed by the looser rule D <= p <= A; redb documents that such commits 'will not be \
                     persisted to disk unless followed by a commit with Durability::Immediate')"
                );
            }
            Some(index) => {
                let _ = write!(out, "\n    it equals OLDER committed state #{index}: a durable commit was lost");
            }
            None => {
                let _ = write!(out, "\n    it equals no committed state at all");
            }
        }
        if media_corrupted {
            out.push_str(" (media corruption was injected; redb did not refuse)");
        }
        let _ = write!(
            out,
            "\n    against the last durable state #{}:\n{}",
            self.durable,
            diff(&self.history[self.durable], recovered)
        );
        if acked != self.durable {
            let _ = write!(
                out,
                "\n    against the last acknowledged state #{acked}:\n{}",
                diff(self.committed(), recovered)
            );
        }
        out
    }

    /// Start over from an empty database (after an accepted refusal wiped it).
    pub fn reset_empty(&mut self) {
        *self = Model::new();
    }
}

/// The differences between `expected` and `got`, a line per key (the
/// first few per table), for reports.
pub fn diff(expected: &State, got: &State) -> String {
    const SHOWN_PER_TABLE: usize = 8;
    let mut out = String::new();
    for (table, (want, have)) in expected.tables.iter().zip(&got.tables).enumerate() {
        let keys: std::collections::BTreeSet<&Vec<u8>> = want.keys().chain(have.keys()).collect();
        let differing: Vec<&Vec<u8>> = keys.into_iter().filter(|k| want.get(*k) != have.get(*k)).collect();
        for key in differing.iter().take(SHOWN_PER_TABLE) {
            let _ = writeln!(
                out,
                "      t{table} key {}: expected {}, got {}",
                show_key(table, key),
                show_value(want.get(*key)),
                show_value(have.get(*key))
            );
        }
        if differing.len() > SHOWN_PER_TABLE {
            let _ = writeln!(out, "      t{table}: {} more keys differ", differing.len() - SHOWN_PER_TABLE);
        }
    }
    if out.is_empty() {
        out.push_str("      (no difference)\n");
    }
    out
}

/// A key as the op lines print it.
pub fn show_key(table: usize, key: &[u8]) -> String {
    match <[u8; 8]>::try_from(key) {
        Ok(bytes) if table == 0 => u64::from_be_bytes(bytes).to_string(),
        _ => format!("{:?}", String::from_utf8_lossy(key)),
    }
}

/// A value for a report: short ones whole, long ones by length and start.
pub fn show_value(value: Option<&Arc<[u8]>>) -> String {
    match value {
        None => "absent".to_string(),
        Some(v) if v.len() <= 32 => format!("{:?}", String::from_utf8_lossy(v)),
        Some(v) => format!("{} bytes {:?}...", v.len(), String::from_utf8_lossy(&v[..16])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pairs: &[(&[u8], &[u8])]) -> State {
        let mut s = State::default();
        for (k, v) in pairs {
            s.tables[1].insert(k.to_vec(), Arc::from(*v));
        }
        s
    }

    #[test]
    fn none_commits_are_visible_but_not_durable_until_an_immediate_one() {
        let mut m = Model::new();
        m.put(1, b"a".to_vec(), b"1");
        m.commit(false);
        assert_eq!(m.get(1, b"a").map(|v| &v[..]), Some(&b"1"[..]), "visible at once");
        // A crash now returns to the empty durable state ...
        assert_eq!(m.allows(&State::default(), false).unwrap().0, Accepted::Durable);
        // ... and the None commit surviving on its own is refused, saying so.
        let err = m.allows(&state(&[(b"a", b"1")]), false).unwrap_err();
        assert!(err.contains("Durability::None commit survived"), "{err}");
        // An empty Immediate commit makes it durable.
        m.commit(true);
        assert_eq!(m.allows(&state(&[(b"a", b"1")]), false).unwrap().0, Accepted::Durable);
        assert!(m.allows(&State::default(), false).unwrap_err().contains("OLDER"));
    }

    #[test]
    fn an_immediate_commit_in_flight_may_land_or_not() {
        let mut m = Model::new();
        m.put(1, b"a".to_vec(), b"1");
        m.set_pending(Pending::Commit(m.commit_target()));
        let landed = state(&[(b"a", b"1")]);
        assert_eq!(m.clone().recovered(&landed, false), Ok(Accepted::InFlight));
        assert_eq!(m.clone().recovered(&State::default(), false), Ok(Accepted::Durable));
        let mut after = m.clone();
        after.recovered(&landed, false).unwrap();
        assert_eq!(*after.committed(), landed);
        assert!(!after.in_transaction());
        assert!(m.recovered(&state(&[(b"a", b"2")]), false).unwrap_err().contains("no committed state"));
    }

    #[test]
    fn media_corruption_may_roll_back_but_never_invent() {
        let mut m = Model::new();
        m.put(1, b"a".to_vec(), b"1");
        m.commit(true);
        m.put(1, b"a".to_vec(), b"2");
        m.commit(true);
        assert_eq!(m.clone().recovered(&state(&[(b"a", b"1")]), true), Ok(Accepted::MediaRollback));
        assert!(m.clone().recovered(&state(&[(b"a", b"1")]), false).is_err());
        assert!(m.recovered(&state(&[(b"a", b"3")]), true).is_err());
    }
}
