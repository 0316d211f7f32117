//! The durability checker: the reference model plus the rule that says
//! which recovered states are allowed.
//!
//! The model is updated only by acknowledged writes. After a crash the
//! recovered logical content must equal the model after some prefix `p` of
//! the writes acknowledged since the last recovery, with `D <= p <= A`:
//! `A` is every acknowledged write, `D` those known durable under the
//! fsync policy (`always`: all; `everysec`: those acknowledged at least a
//! simulated second before a later successful store call; `no`: those
//! before the last successful sync, rewrite or clean close). One more state
//! is allowed: all `A` plus the single write whose outcome is unknown (in
//! flight when the power went, or failed in a way that may still have
//! reached the disk). No holes, no resurrected deletes, no reverted values.
//! The model is then reset to the recovered prefix and the run goes on.
//!
//! A recovery after damage to the log the checker was told of may go
//! further back (see [`Floor`]): a point-in-time recovery cuts at the
//! damage, and so does the default one where no file format can tell the
//! damage from a torn write. Either may lose the writes whose log bytes lie
//! at or after the damage, never one that lies wholly before it. So each
//! acknowledged write remembers where the log ended when it was
//! acknowledged ([`LogPosition`]), and the history is kept from the log's
//! base (the start, or its last rewrite) on, not only since the last
//! recovery: every prefix since then stays reachable through the undos.
//!
//! This file keeps the bookkeeping — the model of what reads must see
//! now, the acknowledged writes since the log's base (each with the
//! undo that takes it back), the durable mark, the uncertain write — and
//! the ways in: a recovered dump, or a just-opened store whose rows are
//! compared where they lie, checked and then reset to. Which prefix a
//! recovered content is, found by walking back from the current model
//! without copying it, is `prefix.rs`; what a person reads when none is,
//! `report.rs`.

mod prefix;
mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use engine::aof::FsyncPolicy;
use engine::store::{Command, LogicalEntry, Reply, Store};
use testkit::model::{Model, ShowsInOrder, Undo};

pub use report::{diff, Mismatch};

use prefix::Content;

/// `everysec`: a write is due on disk this long after it was acknowledged.
pub const EVERYSEC_DUE_MS: u64 = 1_000;

/// Where the log ended (which file, how long) when a write was
/// acknowledged: its frame lies wholly before that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogPosition {
    /// The log file's identity on the disk (an inode number).
    pub file: u64,
    /// The log's length just after the write was acknowledged.
    pub len_bytes: u64,
}

/// How far back a recovery may go: the lowest prefix it may equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floor {
    /// The durable prefix `D`: the rule for every crash and restart.
    Durable,
    /// The log was damaged from this byte of this file on, and the
    /// recovery may cut there: every write whose frame lies wholly before
    /// it must come back; a write acknowledged while a different file was
    /// the log (before a rewrite made this one) lies in this one's
    /// snapshot, vouched durable, and must come back too.
    DamagedAt(LogPosition),
}

/// The model and the durability bookkeeping of one run.
///
/// There is no copy of the state at the last recovery: each acknowledged
/// write keeps the [`Undo`] that takes it back, so the state after any
/// prefix is `current` with the later writes' undos applied. The prefix
/// search reads those states through an overlay (`prefix::PrefixView`)
/// and never copies the model; a recovery then rolls `current` back in
/// place.
#[derive(Clone, Debug)]
pub struct Checker {
    fsync: FsyncPolicy,
    /// Acknowledged writes since the log's base (the start, or the last
    /// successful rewrite): `current` is the base plus all of them.
    history: Vec<Acked>,
    /// `history[..durable]` is known durable.
    durable: usize,

    /// A write whose outcome is in doubt (at most one: after it the store
    /// is either gone or poisoned, and the next write acknowledged settles
    /// it). It survives a recovery after a process restart that did not
    /// show it; a power loss's recovery settles it (ARCHITECTURE.md,
    /// "Outcomes in doubt").
    uncertain: Option<(u64, Command)>,
    /// `uncertain` was already in doubt at an earlier recovery that did not
    /// show it: if a recovery shows it now, it came back.
    uncertain_outlived_recovery: bool,
    /// The last recovery showed a write that came back (see
    /// [`Checker::take_came_back`]).
    came_back: bool,
    /// The state at the last recovery + `history`: what reads must see now.
    current: Model,
}

/// One acknowledged write. The command itself is not kept: its undo is
/// all a prefix needs, and the run's operation list names it.
#[derive(Clone, Debug)]
struct Acked {
    /// The clock when it was acknowledged.
    at_ms: u64,
    /// Where the log ended then, if the driver said.
    log_at: Option<LogPosition>,
    /// Takes `current` from the state after this write to the one before.
    undo: Undo,
}

impl Checker {
    /// A checker for a store that starts empty.
    pub fn new(fsync: FsyncPolicy) -> Self {
        Checker {
            fsync,
            history: Vec::new(),
            durable: 0,
            uncertain: None,
            uncertain_outlived_recovery: false,
            came_back: false,
            current: Model::new(),
        }
    }

    /// Whether the last recovery showed an in-doubt write that an earlier
    /// recovery had not shown (asked once: the answer is then cleared).
    pub fn take_came_back(&mut self) -> bool {
        std::mem::take(&mut self.came_back)
    }

    /// What the model answers for a read (it does not change the model).
    pub fn read(&mut self, command: &Command, now_ms: u64) -> engine::Result<Reply> {
        debug_assert!(!command.is_write());
        self.current.execute(command, now_ms)
    }

    /// The store acknowledged `command`: apply it to the model and return
    /// the model's reply (which the store's must equal).
    pub fn acknowledged(&mut self, command: &Command, now_ms: u64) -> engine::Result<Reply> {
        self.acknowledged_at(command, now_ms, None)
    }

    /// [`Checker::acknowledged`], with where the log ended once it was.
    pub fn acknowledged_at(
        &mut self,
        command: &Command,
        now_ms: u64,
        log_at: Option<LogPosition>,
    ) -> engine::Result<Reply> {
        let (reply, undo) = self.current.execute_undoable(command, now_ms)?;
        self.history.push(Acked { at_ms: now_ms, undo, log_at });
        // The store built this write on the content it showed, without the
        // write in doubt, and acknowledged it: that settles the doubt.
        self.uncertain = None;
        self.uncertain_outlived_recovery = false;
        if self.fsync == FsyncPolicy::Always {
            self.durable = self.history.len();
        }
        Ok(reply)
    }

    /// The store refused a write the model accepts or vice versa is a
    /// failure the caller reports; this asks the model alone.
    pub fn model_would_refuse(&self, command: &Command, now_ms: u64) -> bool {
        self.current.refuses(command, now_ms)
    }

    /// `command` may or may not have reached the disk: its outcome is in
    /// doubt. One still in doubt from before a process restart is settled
    /// as not applied: the store wrote this one after the content it
    /// showed, which did not hold it.
    pub fn uncertain(&mut self, command: &Command, now_ms: u64) {
        self.uncertain = Some((now_ms, command.clone()));
        self.uncertain_outlived_recovery = false;
    }

    /// Everything acknowledged so far is durable (a successful sync,
    /// rewrite or clean close).
    pub fn all_durable(&mut self) {
        self.durable = self.history.len();
    }

    /// A rewrite succeeded: the log now starts from the current state, and
    /// no recovery can go back past it. The history before it is dropped.
    pub fn log_rewritten(&mut self) {
        self.all_durable();
        self.history.clear();
        self.durable = 0;
    }

    /// The lowest prefix a recovery under `floor` may equal.
    fn lowest(&self, floor: Floor) -> usize {
        match floor {
            Floor::Durable => self.durable,
            Floor::DamagedAt(damage) => {
                // The first write whose frame may reach the damage (or
                // whose place in the log is unknown).
                let reaches = |acked: &Acked| match acked.log_at {
                    None => true,
                    Some(at) => at.file == damage.file && at.len_bytes > damage.len_bytes,
                };
                self.history.iter().position(reaches).unwrap_or(self.history.len()).min(self.durable)
            }
        }
    }

    /// A store call succeeded at `now_ms`: under `everysec`, writes a
    /// second older are now due on disk.
    pub fn call_succeeded(&mut self, now_ms: u64) {
        if self.fsync != FsyncPolicy::EverySec {
            return;
        }
        while self.durable < self.history.len() && self.history[self.durable].at_ms + EVERYSEC_DUE_MS <= now_ms {
            self.durable += 1;
        }
    }

    /// Writes acknowledged since the log's base (its start or last
    /// rewrite), and how many are known durable.
    pub fn counts(&self) -> (usize, usize) {
        (self.history.len(), self.durable)
    }

    /// The model's content at `now_ms`.
    pub fn expected(&self, now_ms: u64) -> BTreeMap<Vec<u8>, LogicalEntry> {
        self.current.dump(now_ms)
    }

    /// Whether `dump` is the model's content at `now_ms`.
    pub fn matches(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> bool {
        self.current.same_as(dump, now_ms)
    }

    /// [`Checker::matches`] for content that arrives one key at a time
    /// ([`engine::store::Store::logical_visit`]).
    pub fn shows_in_order(&self, now_ms: u64) -> ShowsInOrder<'_> {
        self.current.shows_in_order(now_ms)
    }

    /// Whether a recovered `dump` (taken at `now_ms`) is allowed, leaving
    /// the checker as it is: the prefix length it matched, or why not.
    /// [`Checker::recovered`] is this plus the reset; exhaustive
    /// exploration asks it of many dumps in one context.
    pub fn allows(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Result<usize, Mismatch> {
        self.find_prefix(&Content::whole(dump, &self.current, now_ms), now_ms, self.durable)
            .ok_or_else(|| self.mismatch(dump, now_ms))
    }

    /// Check a recovered `dump` (taken at `now_ms`) and, if it is allowed,
    /// reset the model to it; returns the prefix length it matched.
    ///
    /// After a power loss what came back is what the disk held, so it
    /// becomes the new durable base. After a process restart the page
    /// cache survived: the store may have read back writes that were never
    /// fsynced, and they are no more durable for having been read — the
    /// history is cut to the matched prefix but keeps its durable mark.
    pub fn recovered(
        &mut self,
        dump: &BTreeMap<Vec<u8>, LogicalEntry>,
        now_ms: u64,
        power_lost: bool,
    ) -> Result<usize, Mismatch> {
        self.recovered_from(dump, now_ms, power_lost, Floor::Durable)
    }

    /// [`Checker::recovered`], allowing prefixes down to `floor`.
    pub fn recovered_from(
        &mut self,
        dump: &BTreeMap<Vec<u8>, LogicalEntry>,
        now_ms: u64,
        power_lost: bool,
        floor: Floor,
    ) -> Result<usize, Mismatch> {
        let content = Content::whole(dump, &self.current, now_ms);
        let lowest = self.lowest(floor);
        let Some(p) = self.find_prefix(&content, now_ms, lowest) else { return Err(self.mismatch(dump, now_ms)) };
        self.reset_to(p, power_lost);
        debug_assert!(self.current.same_as(dump, now_ms), "the search matched the state after {p} writes");
        Ok(p)
    }

    /// [`Checker::recovered`] for the content of a just-opened `store` (at
    /// its clock, `now_ms`), read as the store walks it rather than dumped
    /// into a map: only the entries of keys some write since the durable
    /// prefix names are copied. The same verdict and reset, bit for bit;
    /// the outer error is the one [`Store::logical_dump`] would return.
    pub fn recovered_store(
        &mut self,
        store: &Store,
        now_ms: u64,
        power_lost: bool,
        floor: Floor,
    ) -> engine::Result<Result<usize, Mismatch>> {
        // Keys the search may look up: those the undos from the lowest
        // allowed prefix on name, and the uncertain write's. A FLUSHALL
        // among them would need the whole content: then it is dumped.
        let lowest = self.lowest(floor);
        let mut wanted: BTreeSet<&[u8]> = BTreeSet::new();
        let mut needs_whole = false;
        for acked in &self.history[lowest..] {
            match &acked.undo {
                Undo::Keys(before) => wanted.extend(before.iter().map(|(key, _)| key.as_slice())),
                Undo::All(_) => needs_whole = true,
            }
        }
        if let Some((_, command)) = &self.uncertain {
            match Model::keys_of(command) {
                Some(keys) => wanted.extend(keys.iter().map(Vec::as_slice)),
                None => needs_whole = true,
            }
        }
        if needs_whole {
            let dump = store.logical_dump()?;
            return Ok(self.recovered_from(&dump, now_ms, power_lost, floor));
        }
        let mut entries = BTreeMap::new();
        let mut in_order = self.current.count_in_order(now_ms);
        let mut is_empty = true;
        store.logical_visit(|key, entry| {
            in_order.next(key, entry);
            is_empty = false;
            if wanted.contains(key) {
                entries.insert(key.to_vec(), entry.to_entry());
            }
        })?;
        let content = Content { entries: &entries, differing_at_newest: in_order.finish(), is_empty, whole: None };
        let Some(p) = self.find_prefix(&content, now_ms, lowest) else {
            // Only a report needs the whole content.
            let dump = store.logical_dump()?;
            return Ok(Err(self.mismatch(&dump, now_ms)));
        };
        self.reset_to(p, power_lost);
        debug_assert!(
            store.logical_dump().is_ok_and(|dump| self.current.same_as(&dump, now_ms)),
            "the search matched the state after {p} writes"
        );
        Ok(Ok(p))
    }

    /// Make the state after `p` writes (`history.len() + 1`: all of them
    /// plus the uncertain one) the current one, as a recovery found it.
    fn reset_to(&mut self, p: usize, power_lost: bool) {
        if p > self.history.len() {
            let (at_ms, command) = self.uncertain.take().expect("p past the history means the uncertain write");
            let (_, undo) =
                self.current.execute_undoable(&command, at_ms).expect("the uncertain write applied in the search");
            self.history.push(Acked { at_ms, undo, log_at: None });
            self.came_back = self.uncertain_outlived_recovery;
        }
        // Roll `current` back to the state after p writes.
        while self.history.len() > p {
            let acked = self.history.pop().expect("longer than p");
            self.current.undo(acked.undo);
        }
        // After a power loss what came back is what the disk held: durable.
        self.durable = if power_lost { p } else { self.durable.min(p) };
        // A process restart that did not show the write in doubt settles
        // nothing: its bytes may yet be what a power loss leaves. After
        // one, the disk has answered.
        if power_lost {
            self.uncertain = None;
        }
        self.uncertain_outlived_recovery = self.uncertain.is_some();
    }

    /// Continue from `dump` as the new truth (a loss the store reported).
    pub fn rebase(&mut self, dump: BTreeMap<Vec<u8>, LogicalEntry>) {
        *self = Checker::new(self.fsync);
        self.current = Model::from_dump(dump);
    }

    /// Forget everything: the store was wiped (after an accepted refusal).
    pub fn reset_empty(&mut self) {
        *self = Checker::new(self.fsync);
    }
}
