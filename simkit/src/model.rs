//! The kit's reference model and its durability rule (the oracle), for
//! every engine behind an [`Adapter`](super::Adapter).
//!
//! The model is a `BTreeMap` per table, sharing nothing with any engine.
//! It keeps the *history* of committed states (each an `Arc`, so the
//! contexts the explorer clones are cheap), each with whether it may
//! survive a power loss on its own (its commit's [`Promise`] was not
//! `Volatile`), the index of the last one known durable, the open write
//! transaction's working copy, and what an operation in flight might
//! publish.
//!
//! # The rule
//! After a power loss (or a reopen after an I/O error) the content must be
//! one of:
//! - **the last durable state `D`**;
//! - **the target of an operation in flight** that could have made
//!   something durable: the state of a commit that had not returned (or
//!   failed), or the last acknowledged state `A` for a close or a
//!   maintenance operation that had not returned;
//! - **a committed state after `D`** whose commit was `Eventual` or
//!   `Durable` (a prefix of the acknowledged history; a `Volatile` commit
//!   never survives on its own, and the report says when one did).
//!
//! After a clean close that returned `Ok` (and the engine declares that a
//! close syncs), `D = A`.
//!
//! After a process kill — the simulator's (`run.rs`: a crash point taken
//! as a kill) or a real one (`crash-os`, `crash_os/`) — no power is lost
//! and the page cache keeps every byte written, so a stricter rule holds
//! first ([`Model::allows_after_kill`]): the newest acknowledged state
//! whose commit survives a kill (its level's
//! [`super::Level::survives_process_kill`]: not `Volatile`, not held in the
//! engine's memory), or what the operation in flight could publish.
//!
//! # Outcomes in doubt
//! A commit that returned an error, or that a crash or a kill cut short, is
//! *in doubt*: it may or may not have taken effect, never half (Jepsen's
//! `:info` operation; TigerBeetle's workload calls the reply `unknown`).
//! SQLite documents exactly this much about a failed `COMMIT`: the
//! transaction "might be rolled back" (`c3ref/get_autocommit.html`,
//! `lang_transaction.html`). So its state `T` is allowed at the recovery
//! that follows (in flight, as above), and if that recovery does not show
//! it, at every later recovery too, until evidence settles it:
//! - **a recovery after a power loss**: the disk is all there is, so what
//!   it shows is the answer (`T` or not), for good;
//! - **a recovery that shows `T`**: it took effect (counted as *came
//!   back* when an earlier recovery had not shown it);
//! - **the next acknowledged commit that changed the content**: the engine
//!   built it on the content it showed, which did not hold `T`, and said
//!   so; a `T` after that is a failure.
//!
//! What does not settle it: a process restart (a reopen syncs nothing by
//! itself, and the page cache may hold the failed commit's bytes in a shape
//! the engine's next open reads differently), an empty commit (it
//! acknowledges no new content), a clean close or a maintenance operation
//! (they make durable what the engine shows, not what it may still find).
//! An adapter whose engine documents that a failed commit is rolled back
//! declares it ([`super::Level::failed_commit_rolls_back`]): then the
//! failed commit is not in doubt, and its state appearing fails. When the disk announced damage to durable bytes
//! and the engine promises to detect it, it may refuse, or fall back to an
//! *older* committed state: accepted, and counted apart as a **silent
//! rollback** when it went back past a durable commit (a loss of
//! acknowledged durable data a user must hear about). A state no commit
//! ever had fails, damage or not.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use super::{Promise, Rows};

/// The whole content: every table, in [`super::Spec::tables`] order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    /// Per table.
    pub tables: Vec<Rows>,
}

impl State {
    /// `tables` empty tables.
    pub fn empty(tables: usize) -> State {
        State { tables: vec![Rows::new(); tables] }
    }
}

/// A committed state and whether it may be what a power loss leaves.
#[derive(Clone, Debug)]
struct Committed {
    state: Arc<State>,
    survives_alone: bool,
    /// A process kill (the page cache kept) cannot take it.
    survives_kill: bool,
}

/// What an operation in flight may have made durable.
#[derive(Clone, Debug)]
pub(super) enum Pending {
    /// A commit of this state.
    Commit(Arc<State>),
    /// A close or a maintenance operation: everything acknowledged.
    PublishAll,
}

/// The model (see the module doc). Cloning it is cheap: states are shared.
#[derive(Clone, Debug)]
pub struct Model {
    /// Oldest first; never empty.
    history: Vec<Committed>,
    /// Index into `history` of the last state known durable.
    durable: usize,
    /// The open write transaction's view, if one is open.
    working: Option<State>,
    /// What the operation in flight may have published (a failed commit,
    /// then the close that follows it, may each publish something).
    pending: Vec<Pending>,
    /// A commit that promised nothing was acknowledged since everything
    /// was last durable: a power loss may leave any content.
    unpromised: bool,
    /// A failed fsync dropped dirty pages while states newer than the
    /// durable one were acknowledged ([`Model::page_cache_dropped`]): a
    /// process kill's stricter rule does not hold until the next recovery
    /// or durable commit.
    page_cache_dropped: bool,
    /// The states of failed commits still in doubt (see the module doc),
    /// oldest first: each may yet appear, whole.
    doubts: Vec<Arc<State>>,
}

/// How a recovered state was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// It is the last durable state.
    Durable,
    /// It is what the operation in flight would have published.
    InFlight,
    /// A committed state after the last durable one, whose commit promised
    /// no more than that.
    Rollback,
    /// Damage was announced and the engine fell back to an older state
    /// than the last durable one: an acknowledged durable commit is gone.
    SilentRollback,
    /// Damage was announced and the engine fell back to some other
    /// committed state.
    DamageRollback,
    /// No promise covers it, and none was made: a commit at a level that
    /// promises nothing was acknowledged since everything was durable.
    Unpromised,
    /// It is the state of a failed commit that an earlier recovery did not
    /// show: still in doubt, it came back (allowed; counted).
    CameBack,
}

impl Model {
    /// An empty database of `tables` tables, durable.
    pub fn new(tables: usize) -> Model {
        Model::recovered_at(State::empty(tables))
    }

    /// A database just recovered holding `state`: that state, durable,
    /// nothing in flight (where a recovery's probe starts).
    pub fn recovered_at(state: State) -> Model {
        let first = Committed { state: Arc::new(state), survives_alone: true, survives_kill: true };
        Model {
            history: vec![first],
            durable: 0,
            working: None,
            pending: Vec::new(),
            unpromised: false,
            page_cache_dropped: false,
            doubts: Vec::new(),
        }
    }

    /// The last committed state (what a read outside a transaction sees).
    pub fn committed(&self) -> &State {
        &self.history.last().expect("the history is never empty").state
    }

    /// The last committed state, shared: what a reader that begins now
    /// must see until it ends (`readers.rs`).
    pub(super) fn committed_shared(&self) -> Arc<State> {
        self.history.last().expect("the history is never empty").state.clone()
    }

    /// The state a read sees: the write transaction's if one is open.
    pub fn visible(&self) -> &State {
        self.working.as_ref().unwrap_or_else(|| self.committed())
    }

    /// Whether a write transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.working.is_some()
    }

    /// Whether committing now would change no content: no write
    /// transaction is open, or its writes left every table as committed
    /// (a delete of an absent key). Such a commit is "empty" to an engine
    /// that writes only what changed (`Spec::empty_commit_makes_durable`).
    pub fn changes_nothing(&self) -> bool {
        self.working.as_ref().is_none_or(|working| working == self.committed())
    }

    fn working(&mut self) -> &mut State {
        if self.working.is_none() {
            self.working = Some(self.committed().clone());
        }
        self.working.as_mut().expect("begun above")
    }

    /// Insert into the write transaction; the value it replaced.
    pub fn put(&mut self, table: usize, key: &[u8], value: &[u8]) -> Option<Vec<u8>> {
        self.working().tables[table].insert(key.to_vec(), value.to_vec())
    }

    /// Remove in the write transaction; the value removed.
    pub fn remove(&mut self, table: usize, key: &[u8]) -> Option<Vec<u8>> {
        self.working().tables[table].remove(key)
    }

    /// What a read of `key` sees.
    pub fn get(&self, table: usize, key: &[u8]) -> Option<&Vec<u8>> {
        self.visible().tables[table].get(key)
    }

    /// The state a commit of the open transaction (or of an empty one)
    /// would publish.
    pub(super) fn commit_target(&self) -> Arc<State> {
        Arc::new(self.visible().clone())
    }

    /// An operation that may make `pending` durable is about to run (on
    /// top of whatever an earlier step of the same operation may have).
    pub(super) fn set_pending(&mut self, pending: Pending) {
        if let Pending::Commit(target) = &pending {
            debug_assert!(**target == *self.visible(), "a commit in flight publishes the state its reads see");
        }
        self.pending.push(pending);
    }

    /// Whether nothing is in flight: so between operations, every
    /// operation's end having settled what it might publish.
    pub(super) fn nothing_pending(&self) -> bool {
        self.pending.is_empty()
    }

    /// The invariants every change keeps (cheap: no state is compared).
    fn check_invariants(&self) {
        assert!(!self.history.is_empty(), "the history is never empty");
        assert!(self.durable < self.history.len(), "the durable point is inside the history");
        let tables = self.committed().tables.len();
        debug_assert!(self.history.iter().all(|c| c.state.tables.len() == tables), "every state has every table");
        debug_assert!(self.working.as_ref().is_none_or(|w| w.tables.len() == tables), "so does the transaction's");
    }

    /// The operation in flight finished without leaving doubt.
    pub(super) fn clear_pending(&mut self) {
        self.pending.clear();
    }

    /// The commit in flight returned an error, and the engine documents
    /// that a failed commit is rolled back: its state may not appear.
    pub(super) fn commit_rolled_back(&mut self) {
        self.pending.retain(|pending| !matches!(pending, Pending::Commit(_)));
    }

    /// How many failed commits are still in doubt.
    pub fn in_doubt(&self) -> usize {
        self.doubts.len()
    }

    /// Whether a commit that promised nothing was acknowledged since
    /// everything was last durable.
    pub fn unpromised(&self) -> bool {
        self.unpromised
    }

    /// What the engine writes from now on is promised nothing (its every
    /// level promises nothing: see `run.rs`), as if a commit that promised
    /// nothing had been acknowledged.
    pub(super) fn unpromise(&mut self) {
        self.unpromised = true;
    }

    /// The write transaction committed, promising `promise`, at a level
    /// whose commits survive a process kill unless they are `Volatile` or
    /// promise `Nothing` (see [`Model::commit_with`]).
    pub fn commit(&mut self, promise: Promise) {
        self.commit_with(promise, matches!(promise, Promise::Durable | Promise::Eventual));
    }

    /// The write transaction committed, promising `promise`;
    /// `survives_kill`: the level's [`super::Level::survives_process_kill`].
    pub fn commit_with(&mut self, promise: Promise, survives_kill: bool) {
        assert!(!(survives_kill && promise == Promise::Volatile), "a volatile commit cannot survive a kill");
        self.unpromised |= promise == Promise::Nothing;
        let state = self.working.take().unwrap_or_else(|| self.committed().clone());
        let survives_alone = promise != Promise::Volatile;
        if state != *self.committed() {
            self.history.push(Committed { state: Arc::new(state), survives_alone, survives_kill });
            // Built on the content the engine showed, which held no
            // failed commit: that settles every doubt.
            self.doubts.clear();
        } else {
            let last = self.history.last_mut().expect("never empty");
            last.survives_alone |= survives_alone;
            last.survives_kill |= survives_kill;
        }
        if promise == Promise::Durable {
            self.newest_is_durable();
        }
        self.pending.clear();
        debug_assert!(self.working.is_none(), "a commit closes the write transaction");
        self.check_invariants();
    }

    /// The state another writer's commit of `value` at `key` of `table`
    /// makes on top of `base` (`second_writer.rs`).
    pub(super) fn with_write(base: &State, table: usize, key: &[u8], value: &[u8]) -> Arc<State> {
        let mut state = base.clone();
        state.tables[table].insert(key.to_vec(), value.to_vec());
        Arc::new(state)
    }

    /// Another writer's commit of `target` may land while the operation in
    /// flight runs (its outcome unknown until it returns): a recovery may
    /// show it. Unlike [`Model::set_pending`], `target` need not be what
    /// this writer's reads see.
    pub(super) fn set_pending_other(&mut self, target: Arc<State>) {
        self.pending.push(Pending::Commit(target));
    }

    /// Another writer committed `value` at `key` of `table`, promising
    /// `promise` (`survives_kill` as in [`Model::commit_with`]), on the
    /// state committed now: the engine grants a second writer only while
    /// this one has no write transaction open. What the operation in
    /// flight may publish stays pending.
    pub(super) fn other_committed(
        &mut self,
        table: usize,
        key: &[u8],
        value: &[u8],
        promise: Promise,
        survives_kill: bool,
    ) {
        assert!(self.working.is_none(), "another writer commits only while this one has no transaction open");
        self.working = Some((*Model::with_write(self.committed(), table, key, value)).clone());
        let pending = std::mem::take(&mut self.pending);
        self.commit_with(promise, survives_kill);
        self.pending = pending;
    }

    /// The newest committed state is durable: the durable point moves to
    /// it, forward (it never passes the history, which only a recovery
    /// cuts back, and then below the point's new place).
    fn newest_is_durable(&mut self) {
        let last = self.history.len() - 1;
        assert!(self.durable <= last, "the durable point only moves forward, inside the history");
        self.durable = last;
        self.page_cache_dropped = false;
    }

    /// The write transaction was aborted (or lost).
    pub fn abort(&mut self) {
        self.working = None;
    }

    /// Everything committed is durable (a clean close or a maintenance
    /// operation returned `Ok`).
    pub fn all_durable(&mut self) {
        self.newest_is_durable();
        self.pending.clear();
        self.unpromised = false;
    }

    /// Judge `recovered` after a power loss or a reopen (see the module
    /// doc); `damaged` says whether the disk announced damage the engine
    /// promises to detect. On success the model goes on from the recovered
    /// state, the write transaction and the doubt gone. After a power loss
    /// (`power_lost`) that state is durable: the disk is all there is. After
    /// a process restart it is not — the page cache kept what the engine
    /// never synced, and a reopen syncs nothing by itself — so the durable
    /// point stays, and the recovered state is one a later power loss may
    /// keep or roll back.
    ///
    /// A failed commit (one still pending: it never returned `Ok`) that
    /// this recovery does not show stays in doubt unless the power was lost
    /// (see the module doc).
    pub fn recovered(&mut self, recovered: &State, damaged: bool, power_lost: bool) -> Result<Accepted, String> {
        let verdict = self.allows(recovered, damaged);
        if let Ok((accepted, index)) = &verdict {
            self.settle_doubts(recovered, *accepted, power_lost);
            match index {
                // With the power kept, the content came from the page
                // cache: it is the newest state that holds it, and every
                // state between the durable one and that one is still what
                // the disk may roll back to (soak seed 37792602: SQLite's
                // DELETE commit of k9's removal equalled the durable empty
                // state; matched to that, the commit that put k9 there was
                // forgotten, and the hot journal a later power loss brought
                // back was judged a state no commit made).
                Some(index) if !power_lost => self.history.truncate(self.newest_holding(recovered, *index) + 1),
                Some(index) => self.history.truncate(index + 1),
                None => {
                    let state = Arc::new(recovered.clone());
                    self.history.push(Committed { state, survives_alone: true, survives_kill: true })
                }
            }
            let last = self.history.len() - 1;
            self.page_cache_dropped = false;
            // What a recovery read is on the disk, or in its page cache.
            self.history[last].survives_alone = true;
            self.history[last].survives_kill = true;
            self.durable = if power_lost { last } else { self.durable.min(last) };
            // `unpromised` stays: an engine so configured may write its
            // recovery unsynced too (SQLite with synchronous=OFF rolls a
            // hot journal back without syncing), so the next power loss
            // may again leave anything. Only a close or maintenance that
            // made everything durable clears it.
        }
        self.working = None;
        self.pending.clear();
        self.check_invariants();
        verdict.map(|(accepted, _)| accepted)
    }

    /// Keep in doubt, or settle, the failed commits once a recovery showed
    /// `recovered` (accepted as `accepted`).
    fn settle_doubts(&mut self, recovered: &State, accepted: Accepted, power_lost: bool) {
        let shown = matches!(accepted, Accepted::InFlight | Accepted::CameBack);
        if power_lost || shown {
            self.doubts.clear();
            return;
        }
        for pending in &self.pending {
            if let Pending::Commit(target) = pending {
                if **target != *recovered && !self.doubts.contains(target) {
                    self.doubts.push(target.clone());
                }
            }
        }
    }

    /// Whether `recovered` is allowed now, and where it is in the history
    /// (`None`: an in-flight commit's new state). `Err` is the report.
    pub fn allows(&self, recovered: &State, damaged: bool) -> Result<(Accepted, Option<usize>), String> {
        if *self.history[self.durable].state == *recovered {
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
        if self.doubts.iter().any(|doubt| **doubt == *recovered) {
            let at = (*recovered == *self.committed()).then_some(self.history.len() - 1);
            return Ok((Accepted::CameBack, at));
        }
        // Several committed states may hold one content (a write undone
        // by a later one): the recovered content is allowed if any of
        // them may survive on its own, not only the newest (a volatile
        // commit that restored what an earlier, surviving state held).
        let survivor = (self.durable + 1..self.history.len())
            .rev()
            .find(|&index| self.history[index].survives_alone && *self.history[index].state == *recovered);
        if let Some(index) = survivor {
            return Ok((Accepted::Rollback, Some(index)));
        }
        let found = self.history.iter().rposition(|c| *c.state == *recovered);
        match found {
            Some(index) if damaged && index < self.durable => Ok((Accepted::SilentRollback, Some(index))),
            Some(index) if damaged => Ok((Accepted::DamageRollback, Some(index))),
            _ if self.unpromised => Ok((Accepted::Unpromised, found)),
            _ => Err(self.explain(recovered, found, damaged)),
        }
    }

    /// The newest committed state from `index` on whose content is
    /// `recovered` (`index`'s own is).
    fn newest_holding(&self, recovered: &State, index: usize) -> usize {
        debug_assert!(*self.history[index].state == *recovered, "the verdict's index holds the content");
        (index..self.history.len()).rev().find(|&at| *self.history[at].state == *recovered).unwrap_or(index)
    }

    /// Whether `recovered` is allowed after a process kill with no power
    /// loss (the simulator's kills, `crash-os`'s on the real disk), by the
    /// stricter rule that holds there: the page cache kept every byte the
    /// engine wrote (unless a failed fsync dropped some since the last
    /// durable state: [`Model::page_cache_dropped`], then nothing more is
    /// required here), so the newest acknowledged state that survives a kill
    /// (a commit at a level whose commits reach the operating system
    /// before they return, or the last durable state) must be what comes
    /// back, or else what the operation in flight could have
    /// published, or a failed commit still in doubt. A `Volatile` commit
    /// lives in the engine's memory, which the kill took. Nothing is
    /// required when a commit promised nothing. Check this before
    /// [`Model::recovered`], which then moves the model on.
    pub fn allows_after_kill(&self, recovered: &State) -> Result<(), String> {
        if self.unpromised || self.page_cache_dropped {
            return Ok(());
        }
        let kept = self.kept_by_a_kill();
        if *self.history[kept].state == *recovered {
            return Ok(());
        }
        let published = self.pending.iter().any(|pending| match pending {
            Pending::Commit(target) => **target == *recovered,
            Pending::PublishAll => *self.committed() == *recovered,
        });
        if published || self.doubts.iter().any(|doubt| **doubt == *recovered) {
            return Ok(());
        }
        let found = self.history.iter().rposition(|c| *c.state == *recovered);
        let equals = match found {
            Some(index) => format!("it equals OLDER committed state #{index}: an acknowledged commit was lost"),
            None => "it equals no committed state at all".to_string(),
        };
        Err(format!(
            "after a process kill (the page cache survives) the recovered content must be committed state #{kept}, \
             the last acknowledged one that may survive on its own ({} committed states, #{} the last durable), or \
             what the operation in flight could publish; {equals}\n    against state #{kept}:\n{}",
            self.history.len(),
            self.durable,
            diff(&self.history[kept].state, recovered)
        ))
    }

    /// A failed fsync dropped dirty pages (the disk's fsyncgate rule): what
    /// only the page cache held may be gone, and what was committed after
    /// it may build on what is gone (a WAL frame's checksum chains to the
    /// frame before), so until the next recovery or durable commit a kill
    /// is held to the power loss's rule only ([`Model::recovered`]: any
    /// state from the last durable one that may survive on its own). Soak seed
    /// 37781515: SQLite's WAL recovery after a kill failed its fsync, and
    /// the reopen found the last acknowledged (`synchronous=NORMAL`) frame
    /// gone with the dropped pages.
    pub fn page_cache_dropped(&mut self) {
        self.page_cache_dropped |= self.durable < self.history.len() - 1;
    }

    /// The index of the newest committed state a process kill keeps: the
    /// last durable one, or a later one whose commit may survive alone.
    fn kept_by_a_kill(&self) -> usize {
        let later = (self.durable + 1..self.history.len()).rev().find(|&i| self.history[i].survives_kill);
        later.unwrap_or(self.durable)
    }

    fn explain(&self, recovered: &State, found: Option<usize>, damaged: bool) -> String {
        let acked = self.history.len() - 1;
        let in_flight: Vec<&str> = self
            .pending
            .iter()
            .map(|p| match p {
                Pending::Commit(_) => "a commit",
                Pending::PublishAll => "a close or maintenance (publishes the last acknowledged)",
            })
            .collect();
        let in_flight =
            if in_flight.is_empty() { "nothing that could publish".to_string() } else { in_flight.join(" and ") };
        let in_doubt = match self.doubts.len() {
            0 => String::new(),
            n => format!(", {n} failed commits still in doubt"),
        };
        let mut out = format!(
            "recovered content is not a state the durability promises allow: {} committed states, #{} the last \
             durable, #{acked} the last acknowledged, in flight: {in_flight}{in_doubt}",
            self.history.len(),
            self.durable,
        );
        match found {
            Some(index) if index > self.durable => {
                let _ = write!(
                    out,
                    "\n    it equals committed state #{index}, whose commit was volatile: it survived the power \
                     loss on its own (allowed by the looser rule D <= p <= A, not by the declared promise)"
                );
            }
            Some(index) => {
                let _ = write!(out, "\n    it equals OLDER committed state #{index}: a durable commit was lost");
            }
            None => out.push_str("\n    it equals no committed state at all"),
        }
        if damaged {
            out.push_str(" (damage was announced; the engine did not refuse)");
        }
        let durable = &self.history[self.durable].state;
        let _ = write!(out, "\n    against the last durable state #{}:\n{}", self.durable, diff(durable, recovered));
        if acked != self.durable {
            let _ = write!(
                out,
                "\n    against the last acknowledged state #{acked}:\n{}",
                diff(self.committed(), recovered)
            );
        }
        out
    }
}

/// The differences between `expected` and `got`, a line per key (the
/// first few per table), for reports.
pub fn diff(expected: &State, got: &State) -> String {
    const SHOWN_PER_TABLE: usize = 8;
    let mut out = String::new();
    let empty = Rows::new();
    let tables = expected.tables.len().max(got.tables.len());
    for table in 0..tables {
        let want = expected.tables.get(table).unwrap_or(&empty);
        let have = got.tables.get(table).unwrap_or(&empty);
        let keys: BTreeSet<&Vec<u8>> = want.keys().chain(have.keys()).collect();
        let differing: Vec<&Vec<u8>> = keys.into_iter().filter(|k| want.get(*k) != have.get(*k)).collect();
        for key in differing.iter().take(SHOWN_PER_TABLE) {
            let _ = writeln!(
                out,
                "      table {table} key {}: expected {}, got {}",
                show_bytes(key),
                show_value(want.get(*key)),
                show_value(have.get(*key))
            );
        }
        if differing.len() > SHOWN_PER_TABLE {
            let _ = writeln!(out, "      table {table}: {} more keys differ", differing.len() - SHOWN_PER_TABLE);
        }
    }
    if out.is_empty() {
        out.push_str("      (no difference)\n");
    }
    out
}

/// Bytes for a report: printable ones as a string, others in hex.
pub fn show_bytes(bytes: &[u8]) -> String {
    if bytes.iter().all(|b| b.is_ascii_graphic()) {
        format!("{:?}", String::from_utf8_lossy(bytes))
    } else {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A value for a report: short ones whole, long ones by length and start.
pub fn show_value(value: Option<&Vec<u8>>) -> String {
    match value {
        None => "absent".to_string(),
        Some(v) if v.len() <= 32 => show_bytes(v),
        Some(v) => format!("{} bytes {}...", v.len(), show_bytes(&v[..16])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pairs: &[(&[u8], &[u8])]) -> State {
        let mut s = State::empty(1);
        for (k, v) in pairs {
            s.tables[0].insert(k.to_vec(), v.to_vec());
        }
        s
    }

    #[test]
    fn volatile_commits_are_visible_but_never_survive_alone() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Volatile);
        assert_eq!(m.get(0, b"a").map(|v| &v[..]), Some(&b"1"[..]), "visible at once");
        assert_eq!(m.allows(&State::empty(1), false).unwrap().0, Accepted::Durable);
        let err = m.allows(&state(&[(b"a", b"1")]), false).unwrap_err();
        assert!(err.contains("volatile"), "{err}");
        // An empty durable commit makes it durable.
        m.commit(Promise::Durable);
        assert_eq!(m.allows(&state(&[(b"a", b"1")]), false).unwrap().0, Accepted::Durable);
        assert!(m.allows(&State::empty(1), false).unwrap_err().contains("OLDER"));
    }

    /// A transaction changes nothing when it wrote nothing or its writes
    /// left the content as committed (an engine that writes only what
    /// changed syncs nothing for it: `Spec::empty_commit_makes_durable`).
    #[test]
    fn a_transaction_that_left_the_content_as_it_was_changes_nothing() {
        let mut m = Model::new(1);
        assert!(m.changes_nothing(), "no transaction open");
        m.remove(0, b"absent");
        assert!(m.in_transaction() && m.changes_nothing(), "a delete of an absent key");
        m.put(0, b"a", b"1");
        assert!(!m.changes_nothing());
        m.remove(0, b"a");
        assert!(m.changes_nothing(), "put and deleted again");
        m.put(0, b"a", b"1");
        m.commit(Promise::Durable);
        m.put(0, b"a", b"1");
        assert!(m.changes_nothing(), "the same value again");
    }

    /// Soak seed 365941073990 (redb): a volatile commit's content, shown
    /// by a reopen (so it may survive on its own), then written over and
    /// back by two more volatile commits. A power loss that keeps it shows
    /// the content of both the surviving state and the newest, volatile
    /// one: allowed, as the surviving state. The model once looked at the
    /// newest equal state only, and failed it.
    #[test]
    fn a_content_held_by_a_surviving_state_and_a_later_volatile_one_is_allowed() {
        let mut m = Model::new(1);
        m.put(0, b"k5", b"v");
        m.commit(Promise::Volatile);
        let shown = state(&[(b"k5", b"v")]);
        // A failed maintenance (it may have published everything), then a
        // reopen with no power loss that shows the volatile commit.
        m.set_pending(Pending::PublishAll);
        assert_eq!(m.recovered(&shown, false, false), Ok(Accepted::InFlight));
        m.put(0, b"x", b"48");
        m.commit(Promise::Volatile);
        m.remove(0, b"x");
        m.commit(Promise::Volatile);
        assert_eq!(*m.committed(), shown, "the newest state holds the shown content again");
        assert_eq!(m.allows(&shown, false).map(|(accepted, _)| accepted), Ok(Accepted::Rollback));
        assert!(m.allows(&state(&[(b"k5", b"v"), (b"x", b"48")]), false).is_err(), "the volatile state between");
    }

    #[test]
    fn eventual_commits_may_survive_as_a_prefix() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Eventual);
        m.put(0, b"a", b"2");
        m.commit(Promise::Eventual);
        assert_eq!(m.allows(&state(&[(b"a", b"1")]), false).unwrap().0, Accepted::Rollback);
        assert_eq!(m.allows(&state(&[(b"a", b"2")]), false).unwrap().0, Accepted::Rollback);
        assert_eq!(m.allows(&State::empty(1), false).unwrap().0, Accepted::Durable);
        assert!(m.allows(&state(&[(b"a", b"3")]), false).is_err());
    }

    #[test]
    fn a_commit_in_flight_may_land_or_not() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.set_pending(Pending::Commit(m.commit_target()));
        let landed = state(&[(b"a", b"1")]);
        assert_eq!(m.clone().recovered(&landed, false, true), Ok(Accepted::InFlight));
        assert_eq!(m.clone().recovered(&State::empty(1), false, true), Ok(Accepted::Durable));
        let mut after = m.clone();
        after.recovered(&landed, false, true).unwrap();
        assert_eq!(*after.committed(), landed);
        assert!(!after.in_transaction());
        assert!(m.recovered(&state(&[(b"a", b"2")]), false, true).unwrap_err().contains("no committed state"));
    }

    /// A process restart reopens what the page cache holds: nothing more
    /// is durable than before it, so a later power loss may still go back.
    #[test]
    fn a_process_restart_makes_nothing_durable() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Eventual);
        let kept = state(&[(b"a", b"1")]);
        assert_eq!(m.recovered(&kept, false, false), Ok(Accepted::Rollback));
        assert_eq!(m.allows(&State::empty(1), false).unwrap().0, Accepted::Durable, "the power may still take it");
        assert_eq!(m.allows(&kept, false).unwrap().0, Accepted::Rollback);
        assert_eq!(m.recovered(&kept, false, true), Ok(Accepted::Rollback));
        assert!(m.allows(&State::empty(1), false).is_err(), "after a power loss it is durable");
    }

    #[test]
    fn a_commit_that_promised_nothing_accepts_anything_until_all_is_durable() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Nothing);
        let invented = state(&[(b"z", b"9")]);
        assert_eq!(m.allows(&invented, false).unwrap().0, Accepted::Unpromised);
        m.all_durable();
        assert!(m.allows(&invented, false).is_err(), "a clean close made it durable: promised again");
    }

    /// An engine that promised nothing may write its recovery unsynced too
    /// (SQLite under synchronous=OFF): a power loss does not make it
    /// promise again; neither does `unpromise` wait for a commit.
    #[test]
    fn nothing_promised_survives_a_power_loss_recovery() {
        let mut m = Model::new(1);
        m.unpromise();
        let invented = state(&[(b"z", b"9")]);
        assert_eq!(m.recovered(&invented, false, true), Ok(Accepted::Unpromised));
        let other = state(&[(b"y", b"8")]);
        assert_eq!(m.allows(&other, false).unwrap().0, Accepted::Unpromised, "still nothing promised");
        m.all_durable();
        assert!(m.allows(&other, false).is_err());
    }

    /// A model whose commit of `a=1` failed (still pending), on an empty
    /// durable database.
    fn failed_commit() -> (Model, State) {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.set_pending(Pending::Commit(m.commit_target()));
        (m, state(&[(b"a", b"1")]))
    }

    /// SQLite's finding 1, reduced: a failed commit that the reopen after a
    /// process restart does not show may still be what a later power loss
    /// leaves. In doubt, it may come back; never half.
    #[test]
    fn a_failed_commit_stays_in_doubt_across_a_process_restart() {
        let (mut m, landed) = failed_commit();
        assert_eq!(m.recovered(&State::empty(1), false, false), Ok(Accepted::Durable));
        assert_eq!(m.in_doubt(), 1);
        // Neither an empty commit nor a clean close settles it.
        m.commit(Promise::Durable);
        m.all_durable();
        assert_eq!(m.in_doubt(), 1);
        assert_eq!(m.clone().recovered(&landed, false, true), Ok(Accepted::CameBack));
        let half = state(&[(b"a", b"2")]);
        assert!(m.allows(&half, false).is_err(), "never a state the failed commit did not have");
        // A power loss's recovery settles it, whichever way it went.
        let mut settled = m.clone();
        assert_eq!(settled.recovered(&State::empty(1), false, true), Ok(Accepted::Durable));
        assert_eq!(settled.in_doubt(), 0);
        assert!(settled.allows(&landed, false).is_err(), "settled by the power loss: it did not land");
        let mut landed_model = m;
        assert_eq!(landed_model.recovered(&landed, false, false), Ok(Accepted::CameBack));
        assert_eq!((landed_model.in_doubt(), landed_model.committed()), (0, &landed), "it took effect");
    }

    #[test]
    fn the_next_commit_that_changes_the_content_settles_a_doubt() {
        let (mut m, landed) = failed_commit();
        m.recovered(&State::empty(1), false, false).unwrap();
        m.put(0, b"b", b"2");
        m.commit(Promise::Eventual);
        assert_eq!(m.in_doubt(), 0);
        let err = m.allows(&landed, false).unwrap_err();
        assert!(err.contains("no committed state"), "{err}");
    }

    /// An engine that documents a failed commit as rolled back: its state
    /// may not appear, not even at the recovery right after.
    #[test]
    fn a_documented_rollback_leaves_nothing_in_doubt() {
        let (mut m, landed) = failed_commit();
        m.commit_rolled_back();
        assert!(m.clone().recovered(&landed, false, false).is_err());
        assert_eq!(m.recovered(&State::empty(1), false, false), Ok(Accepted::Durable));
        assert_eq!(m.in_doubt(), 0);
        assert!(m.allows(&landed, false).is_err());
    }

    /// After a kill the page cache kept everything written: an eventual
    /// commit must be there, a volatile one may not be, the commit in
    /// flight either way.
    #[test]
    fn a_kill_keeps_every_acknowledged_commit_that_may_survive_alone() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Eventual);
        let kept = state(&[(b"a", b"1")]);
        assert!(m.allows_after_kill(&kept).is_ok());
        let lost = m.allows_after_kill(&State::empty(1)).unwrap_err();
        assert!(lost.contains("OLDER committed state #0"), "{lost}");
        assert!(m.allows(&State::empty(1), false).is_ok(), "the power-loss rule would have let it go");
        m.put(0, b"b", b"2");
        m.commit(Promise::Volatile);
        assert!(m.allows_after_kill(&kept).is_ok(), "a volatile commit lives in the memory the kill took");
        let volatile = state(&[(b"a", b"1"), (b"b", b"2")]);
        assert!(m.allows_after_kill(&volatile).is_err(), "nor may it survive on its own");
        m.put(0, b"c", b"3");
        m.set_pending(Pending::Commit(m.commit_target()));
        let landed = state(&[(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]);
        assert!(m.allows_after_kill(&landed).is_ok() && m.allows_after_kill(&kept).is_ok());
        assert!(m.allows_after_kill(&state(&[(b"z", b"9")])).unwrap_err().contains("no committed state"));
        m.unpromise();
        assert!(m.allows_after_kill(&state(&[(b"z", b"9")])).is_ok(), "nothing promised, nothing required");
    }

    /// A failed fsync dropped dirty pages (soak seed 37781515): an eventual
    /// commit's bytes may be gone, so a kill is held to the power loss's
    /// rule until the next recovery; then to the kill's again.
    #[test]
    fn dropped_pages_free_a_kill_from_its_rule_until_the_next_recovery() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Eventual);
        m.page_cache_dropped();
        assert!(m.allows_after_kill(&State::empty(1)).is_ok(), "the dropped pages held the commit");
        assert!(m.allows_after_kill(&state(&[(b"z", b"9")])).is_ok(), "the kill's rule asks nothing now");
        assert!(m.allows(&state(&[(b"z", b"9")]), false).is_err(), "the power loss's rule still holds");
        assert_eq!(m.recovered(&State::empty(1), false, false), Ok(Accepted::Durable));
        m.put(0, b"b", b"2");
        m.commit(Promise::Eventual);
        let lost = m.allows_after_kill(&State::empty(1)).unwrap_err();
        assert!(lost.contains("OLDER committed state"), "after a recovery the kill's rule holds again: {lost}");
    }

    /// Soak seed 37792602: a put and its delete, each committed with an
    /// eventual promise, leave the content the durable state holds. A
    /// restart (no power loss) shows it from the page cache: that is the
    /// newest state, and the put's state is still one a power loss may
    /// roll back to (SQLite's hot journal of the delete).
    #[test]
    fn a_restart_showing_the_durable_content_keeps_the_states_since() {
        let mut m = Model::new(1);
        m.put(0, b"k", b"1");
        m.commit(Promise::Eventual);
        m.remove(0, b"k");
        m.commit(Promise::Eventual);
        assert_eq!(m.recovered(&State::empty(1), false, false), Ok(Accepted::Durable));
        let put = state(&[(b"k", b"1")]);
        assert_eq!(m.allows(&put, false).map(|(accepted, _)| accepted), Ok(Accepted::Rollback));
        assert_eq!(m.recovered(&put, false, true), Ok(Accepted::Rollback));
        assert!(m.allows(&state(&[(b"k", b"2")]), false).is_err(), "still no content no commit made");
    }

    /// Dropped pages with nothing acknowledged past the durable state
    /// change nothing: the durable state is on the disk.
    #[test]
    fn dropped_pages_with_everything_durable_keep_the_kills_rule() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Durable);
        m.page_cache_dropped();
        m.put(0, b"b", b"2");
        m.commit(Promise::Eventual);
        assert!(m.allows_after_kill(&state(&[(b"a", b"1")])).is_err(), "the commit after the drop is held");
    }

    #[test]
    fn damage_may_roll_back_counted_apart_but_never_invent() {
        let mut m = Model::new(1);
        m.put(0, b"a", b"1");
        m.commit(Promise::Durable);
        m.put(0, b"a", b"2");
        m.commit(Promise::Durable);
        assert_eq!(m.clone().recovered(&state(&[(b"a", b"1")]), true, true), Ok(Accepted::SilentRollback));
        assert!(m.clone().recovered(&state(&[(b"a", b"1")]), false, true).is_err());
        assert!(m.recovered(&state(&[(b"a", b"3")]), true, true).is_err());
    }
}
