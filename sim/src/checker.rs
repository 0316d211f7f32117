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

use std::collections::{BTreeMap, BTreeSet};

use engine::aof::FsyncPolicy;
use engine::model::{EntryView, Model, ShowsInOrder, Undo};
use engine::store::{Command, LogicalEntry, LogicalValue, Reply, Store};

/// `everysec`: a write is due on disk this long after it was acknowledged.
pub const EVERYSEC_DUE_MS: u64 = 1_000;

/// The model and the durability bookkeeping of one run.
///
/// There is no copy of the state at the last recovery: each acknowledged
/// write keeps the [`Undo`] that takes it back, so the state after any
/// prefix is `current` with the later writes' undos applied. The prefix
/// search reads those states through an overlay ([`PrefixView`]) and never
/// copies the model; a recovery then rolls `current` back in place.
#[derive(Clone, Debug)]
pub struct Checker {
    fsync: FsyncPolicy,
    /// Acknowledged writes since the last recovery (or the start).
    history: Vec<Acked>,
    /// `history[..durable]` is known durable.
    durable: usize,
    /// A write whose outcome is unknown (at most one: after it the store
    /// is either gone or poisoned).
    uncertain: Option<(u64, Command)>,
    /// The state at the last recovery + `history`: what reads must see now.
    current: Model,
}

/// One acknowledged write. The command itself is not kept: its undo is
/// all a prefix needs, and the run's operation list names it.
#[derive(Clone, Debug)]
struct Acked {
    /// The clock when it was acknowledged.
    at_ms: u64,
    /// Takes `current` from the state after this write to the one before.
    undo: Undo,
}

/// The recovered state matched nothing allowed.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Which rule failed and how, for a person.
    pub detail: String,
}

impl Checker {
    /// A checker for a store that starts empty.
    pub fn new(fsync: FsyncPolicy) -> Self {
        Checker { fsync, history: Vec::new(), durable: 0, uncertain: None, current: Model::new() }
    }

    /// What the model answers for a read (it does not change the model).
    pub fn read(&mut self, command: &Command, now_ms: u64) -> engine::Result<Reply> {
        debug_assert!(!command.is_write());
        self.current.execute(command, now_ms)
    }

    /// The store acknowledged `command`: apply it to the model and return
    /// the model's reply (which the store's must equal).
    pub fn acknowledged(&mut self, command: &Command, now_ms: u64) -> engine::Result<Reply> {
        let (reply, undo) = self.current.execute_undoable(command, now_ms)?;
        self.history.push(Acked { at_ms: now_ms, undo });
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

    /// `command` may or may not have reached the disk.
    pub fn uncertain(&mut self, command: &Command, now_ms: u64) {
        self.uncertain = Some((now_ms, command.clone()));
    }

    /// Everything acknowledged so far is durable (a successful sync,
    /// rewrite or clean close).
    pub fn all_durable(&mut self) {
        self.durable = self.history.len();
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

    /// Writes acknowledged since the last recovery, and how many are
    /// known durable.
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
        self.find_prefix(&Content::whole(dump, &self.current, now_ms), now_ms)
            .ok_or_else(|| self.mismatch(dump, now_ms))
    }

    /// The rule itself (see the module doc): the first allowed prefix `p`
    /// whose model shows exactly the recovered content — `history.len() +
    /// 1` for all of them plus the uncertain write — or `None`.
    ///
    /// The states are visited newest first, from `current` back to the
    /// durable prefix, each one's difference from the content kept as a
    /// count that a write's undo changes only at its own keys; the last
    /// (lowest) prefix with no difference wins, as if they had been tried
    /// from the bottom up.
    fn find_prefix(&self, content: &Content<'_>, now_ms: u64) -> Option<usize> {
        let lowest = self.durable;
        let newest = self.history.len();
        assert!(lowest <= newest, "the durable mark is within the history");
        let mut view = PrefixView {
            content,
            now_ms,
            below: self.current.stored_map(),
            overlay: BTreeMap::new(),
            differing: content.differing_at_newest,
        };
        let mut matched = None;
        let mut p = newest;
        loop {
            if view.differing == 0 {
                matched = Some(p);
            }
            if p == lowest {
                break;
            }
            p -= 1;
            view.take_back(&self.history[p].undo);
        }
        if matched.is_none() {
            if let Some((at_ms, command)) = &self.uncertain {
                if self.newest_plus_shows(command, *at_ms, content, now_ms) {
                    matched = Some(newest + 1);
                }
            }
        }
        matched
    }

    /// Why a recovered `dump` matched nothing allowed, for a person.
    fn mismatch(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Mismatch {
        let (acked, durable) = self.counts();
        let detail = format!(
            "recovered state equals no allowed prefix: {acked} writes acknowledged, {durable} known durable \
             (fsync {}), in-flight write: {}\n{}",
            self.fsync.name(),
            self.uncertain.as_ref().map_or("none".to_string(), |(_, c)| format!("{c:?}")),
            diff(&self.current.dump(now_ms), dump)
        );
        Mismatch { detail }
    }

    /// Whether `current` plus `command` (run at `at_ms`) shows exactly the
    /// content — asked without touching `current`: the command runs on a
    /// model of just its keys, and only their share of the difference
    /// from the content changes.
    fn newest_plus_shows(&self, command: &Command, at_ms: u64, content: &Content<'_>, now_ms: u64) -> bool {
        let Some(keys) = Model::keys_of(command) else {
            // FLUSHALL leaves nothing.
            return content.is_empty;
        };
        let mut keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut alone =
            Model::from_dump(keys.iter().filter_map(|k| Some((k.to_vec(), self.current.stored(k)?.clone()))).collect());
        if alone.execute(command, at_ms).is_err() {
            return false;
        }
        let mut differing = content.differing_at_newest;
        for key in keys {
            let shown = content.get(key);
            differing -= usize::from(!Model::shows_as(self.current.stored(key), now_ms, shown));
            differing += usize::from(!Model::shows_as(alone.stored(key), now_ms, shown));
        }
        differing == 0
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
        let content = Content::whole(dump, &self.current, now_ms);
        let Some(p) = self.find_prefix(&content, now_ms) else { return Err(self.mismatch(dump, now_ms)) };
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
    ) -> engine::Result<Result<usize, Mismatch>> {
        // Keys the search may look up: those the undos from the durable
        // prefix on name, and the uncertain write's. A FLUSHALL among them
        // would need the whole content: then it is dumped after all.
        let mut wanted: BTreeSet<&[u8]> = BTreeSet::new();
        let mut needs_whole = false;
        for acked in &self.history[self.durable..] {
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
            return Ok(self.recovered(&dump, now_ms, power_lost));
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
        let Some(p) = self.find_prefix(&content, now_ms) else {
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
            self.history.push(Acked { at_ms, undo });
        }
        // Roll `current` back to the state after p writes.
        while self.history.len() > p {
            let acked = self.history.pop().expect("longer than p");
            self.current.undo(acked.undo);
        }
        if power_lost {
            self.history.clear();
            self.durable = 0;
        } else {
            self.durable = self.durable.min(p);
        }
        self.uncertain = None;
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

/// What the prefix search needs of the recovered content.
struct Content<'a> {
    /// The content's entry of every key the search may look up (all of
    /// them, or those the undos and the uncertain write name).
    entries: &'a BTreeMap<Vec<u8>, LogicalEntry>,
    /// Keys `current` shows differently from the content.
    differing_at_newest: usize,
    is_empty: bool,
    /// The whole content, if at hand: past a FLUSHALL's undo every key
    /// must be compared again.
    whole: Option<&'a BTreeMap<Vec<u8>, LogicalEntry>>,
}

impl<'a> Content<'a> {
    /// A recovered dump, all of it at hand, against `current`.
    fn whole(dump: &'a BTreeMap<Vec<u8>, LogicalEntry>, current: &Model, now_ms: u64) -> Self {
        let differing_at_newest = Model::count_differing(current.stored_map(), dump, now_ms, usize::MAX);
        Content { entries: dump, differing_at_newest, is_empty: dump.is_empty(), whole: Some(dump) }
    }

    fn get(&self, key: &[u8]) -> Option<EntryView<'a>> {
        self.entries.get(key).map(LogicalEntry::view)
    }
}

/// The state after some prefix of the history, seen without building it:
/// the stored map it falls back on (`current`'s, or the map a FLUSHALL's
/// undo holds) under the entries later writes' undos restore, and how many
/// keys it shows differently from the recovered content.
struct PrefixView<'a> {
    content: &'a Content<'a>,
    now_ms: u64,
    below: &'a BTreeMap<Vec<u8>, LogicalEntry>,
    /// Key → its stored entry in this state (`None`: absent), for every
    /// key an undo taken back since `below` was set.
    overlay: BTreeMap<&'a [u8], Option<&'a LogicalEntry>>,
    /// Keys this state shows differently from the content; zero is a match.
    differing: usize,
}

impl<'a> PrefixView<'a> {
    /// Step one write back: to the state before the write `undo` takes back.
    fn take_back(&mut self, undo: &'a Undo) {
        match undo {
            Undo::All(before) => {
                let whole = self.content.whole.expect("the whole content is at hand past a FLUSHALL");
                self.below = before;
                self.overlay.clear();
                self.differing = Model::count_differing(before, whole, self.now_ms, usize::MAX);
            }
            Undo::Keys(before) => {
                // In reverse, as `Model::undo` puts them back: a key named
                // twice ends at its older entry.
                for (key, entry) in before.iter().rev() {
                    let shown = self.content.get(key);
                    let was = match self.overlay.get(key.as_slice()) {
                        Some(entry) => *entry,
                        None => self.below.get(key),
                    };
                    self.differing -= usize::from(!Model::shows_as(was, self.now_ms, shown));
                    self.differing += usize::from(!Model::shows_as(entry.as_ref(), self.now_ms, shown));
                    self.overlay.insert(key, entry.as_ref());
                }
            }
        }
    }
}

fn show_entry(entry: Option<&LogicalEntry>) -> String {
    let Some(entry) = entry else { return "(absent)".to_string() };
    let ttl = entry.expire_at_ms.map_or(String::new(), |at| format!(" ttl@{at}"));
    match &entry.value {
        LogicalValue::Str(v) => format!("{:?}{ttl}", String::from_utf8_lossy(v)),
        LogicalValue::Hash(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(f, (v, at))| {
                    let field_ttl = at.map_or(String::new(), |at| format!(" ttl@{at}"));
                    format!("{}={:?}{field_ttl}", String::from_utf8_lossy(f), String::from_utf8_lossy(v))
                })
                .collect();
            format!("{{{}}}{ttl}", inner.join(", "))
        }
    }
}

/// A readable difference between the expected (all acknowledged) and the
/// recovered content: at most 12 keys.
pub fn diff(expected: &BTreeMap<Vec<u8>, LogicalEntry>, got: &BTreeMap<Vec<u8>, LogicalEntry>) -> String {
    let mut keys: Vec<&Vec<u8>> = expected.keys().chain(got.keys()).collect();
    keys.sort();
    keys.dedup();
    let differing: Vec<&Vec<u8>> = keys.into_iter().filter(|k| expected.get(*k) != got.get(*k)).collect();
    let mut out = format!("  {} keys differ from the state after every acknowledged write:\n", differing.len());
    for key in differing.iter().take(12) {
        out.push_str(&format!(
            "    key {:?}: expected {}, got {}\n",
            String::from_utf8_lossy(key),
            show_entry(expected.get(*key)),
            show_entry(got.get(*key))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> Command {
        Command::Set { key: k.as_bytes().to_vec(), value: v.as_bytes().to_vec() }
    }

    fn dump_of(commands: &[Command]) -> BTreeMap<Vec<u8>, LogicalEntry> {
        let mut m = Model::new();
        for c in commands {
            m.execute(c, 0).unwrap();
        }
        m.dump(0)
    }

    /// A small deterministic stream of writes over few keys and fields,
    /// with TTLs near the clock.
    struct Writes(u64);

    impl Writes {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn next(&mut self, now_ms: u64) -> Command {
            let key = format!("k{}", self.below(5));
            let field = format!("f{}", self.below(3));
            let value = format!("v{}", self.below(3));
            let at = (now_ms + self.below(3_000)).saturating_sub(500).to_string();
            let words: Vec<String> = match self.below(12) {
                0..=2 => vec!["SET".into(), key, value],
                3 => vec!["DEL".into(), key, format!("k{}", self.below(5)), format!("k{}", self.below(5))],
                4..=6 => vec!["HSET".into(), key, field, value],
                7 => vec!["HDEL".into(), key, field],
                8 => vec!["PEXPIREAT".into(), key, at],
                9 => vec!["PERSIST".into(), key],
                10 => vec!["HPEXPIREAT".into(), key, at, field],
                _ => vec!["FLUSHALL".into()],
            };
            Command::parse(&words).unwrap()
        }
    }

    /// The rule as it was first written: a copy of the base, every
    /// acknowledged write replayed onto it, each allowed prefix compared
    /// with the whole dump.
    #[derive(Clone)]
    struct ForwardSearch {
        base: Model,
        history: Vec<(u64, Command)>,
        durable: usize,
        uncertain: Option<(u64, Command)>,
        current: Model,
    }

    impl ForwardSearch {
        fn find_prefix(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Option<(usize, Model)> {
            let mut state = self.base.clone();
            for p in 0..=self.history.len() {
                if p >= self.durable && state.same_as(dump, now_ms) {
                    return Some((p, state));
                }
                if let Some((at_ms, command)) = self.history.get(p) {
                    state.execute(command, *at_ms).unwrap();
                }
            }
            let (at_ms, command) = self.uncertain.as_ref()?;
            (state.execute(command, *at_ms).is_ok() && state.same_as(dump, now_ms))
                .then_some((self.history.len() + 1, state))
        }

        fn recovered(
            &mut self,
            dump: &BTreeMap<Vec<u8>, LogicalEntry>,
            now_ms: u64,
            power_lost: bool,
        ) -> Option<usize> {
            let (p, state) = self.find_prefix(dump, now_ms)?;
            if power_lost {
                self.base = state.clone();
                self.history.clear();
                self.durable = 0;
            } else {
                if p > self.history.len() {
                    self.history.push(self.uncertain.clone().unwrap());
                }
                self.history.truncate(p);
                self.durable = self.durable.min(p);
            }
            self.current = state;
            self.uncertain = None;
            Some(p)
        }

        /// The state after `p` writes (`history.len() + 1`: and the
        /// uncertain one), as a dump at `now_ms`.
        fn dump_after(&self, p: usize, now_ms: u64) -> BTreeMap<Vec<u8>, LogicalEntry> {
            let mut state = self.base.clone();
            for (at_ms, command) in &self.history[..p.min(self.history.len())] {
                state.execute(command, *at_ms).unwrap();
            }
            if p > self.history.len() {
                if let Some((at_ms, command)) = &self.uncertain {
                    let _ = state.execute(command, *at_ms);
                }
            }
            state.dump(now_ms)
        }
    }

    /// A store holding exactly `dump` at `now_ms`, on a fresh in-memory disk.
    fn store_holding(dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Store {
        let vfs = std::sync::Arc::new(engine::vfs::MemVfs::new());
        let clock = std::sync::Arc::new(engine::clock::ManualClock::new(now_ms));
        let options = engine::store::Options { fsync: FsyncPolicy::No };
        let (mut store, _) = Store::open(vfs, clock, std::path::Path::new("/db"), options).unwrap();
        for (key, entry) in dump {
            let key = key.clone();
            let (write, field_ttls): (Command, Vec<(Vec<u8>, u64)>) = match &entry.value {
                LogicalValue::Str(value) => (Command::Set { key: key.clone(), value: value.clone() }, Vec::new()),
                LogicalValue::Hash(fields) => (
                    Command::HSet {
                        key: key.clone(),
                        pairs: fields.iter().map(|(f, (v, _))| (f.clone(), v.clone())).collect(),
                    },
                    fields.iter().filter_map(|(f, (_, at))| Some((f.clone(), (*at)?))).collect(),
                ),
            };
            store.execute(&write).unwrap();
            for (field, at_ms) in field_ttls {
                store.execute(&Command::HPExpireAt { key: key.clone(), at_ms, fields: vec![field] }).unwrap();
            }
            if let Some(at_ms) = entry.expire_at_ms {
                store.execute(&Command::PExpireAt { key: key.clone(), at_ms }).unwrap();
            }
        }
        assert_eq!(store.logical_dump().unwrap(), *dump, "the store holds the dump");
        store
    }

    #[test]
    fn the_rule_is_the_forward_search_bit_for_bit() {
        let policies = [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No];
        // Recoveries that matched: below the newest prefix, at it, with
        // the uncertain write; and that matched nothing.
        let (mut below, mut newest, mut with_uncertain, mut nothing) = (0, 0, 0, 0);
        for seed in 1..=150u64 {
            let mut writes = Writes(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let fsync = policies[seed as usize % 3];
            let mut checker = Checker::new(fsync);
            let mut reference = ForwardSearch {
                base: Model::new(),
                history: Vec::new(),
                durable: 0,
                uncertain: None,
                current: Model::new(),
            };
            let mut now_ms = 1_000;
            for step in 0..400 {
                let at = format!("seed {seed} step {step}");
                now_ms += writes.below(300);
                match writes.below(16) {
                    0..=8 => {
                        let command = writes.next(now_ms);
                        let got = checker.acknowledged(&command, now_ms).ok();
                        let want = reference.current.execute(&command, now_ms).ok();
                        assert_eq!(got, want, "{at}: {command:?}");
                        if want.is_some() {
                            reference.history.push((now_ms, command));
                            if fsync == FsyncPolicy::Always {
                                reference.durable = reference.history.len();
                            }
                        }
                    }
                    9 => {
                        checker.all_durable();
                        reference.durable = reference.history.len();
                    }
                    10 | 11 => {
                        checker.call_succeeded(now_ms);
                        if fsync == FsyncPolicy::EverySec {
                            while reference.durable < reference.history.len()
                                && reference.history[reference.durable].0 + EVERYSEC_DUE_MS <= now_ms
                            {
                                reference.durable += 1;
                            }
                        }
                    }
                    12 => {
                        let command = writes.next(now_ms);
                        checker.uncertain(&command, now_ms);
                        reference.uncertain = Some((now_ms, command));
                    }
                    _ => {
                        // A recovery: some prefix's state, now and then
                        // with one key changed so that it matches nothing.
                        let p = writes.below(reference.history.len() as u64 + 2) as usize;
                        let mut dump = reference.dump_after(p, now_ms);
                        match writes.below(6) {
                            0 => drop(dump.pop_first()),
                            1 => drop(dump.insert(
                                b"k0".to_vec(),
                                LogicalEntry { value: LogicalValue::Str(b"odd".to_vec()), expire_at_ms: None },
                            )),
                            _ => {}
                        }
                        let allowed = checker.allows(&dump, now_ms);
                        let want = reference.find_prefix(&dump, now_ms).map(|(p, _)| p);
                        match want {
                            None => nothing += 1,
                            Some(p) if p < reference.history.len() => below += 1,
                            Some(p) if p == reference.history.len() => newest += 1,
                            Some(_) => with_uncertain += 1,
                        }
                        assert_eq!(allowed.as_ref().ok().copied(), want, "{at}: allows");
                        let power_lost = writes.below(2) == 0;
                        let mut streamed = checker.clone();
                        let store = store_holding(&dump, now_ms);
                        let got = checker.recovered(&dump, now_ms, power_lost);
                        let got_streamed = streamed.recovered_store(&store, now_ms, power_lost).unwrap();
                        if let (Err(a), Err(b), Err(c)) = (&allowed, &got, &got_streamed) {
                            assert_eq!(a.detail, b.detail, "{at}");
                            assert_eq!(b.detail, c.detail, "{at}");
                        }
                        assert_eq!(got.ok(), want, "{at}: recovered");
                        assert_eq!(got_streamed.ok(), want, "{at}: recovered from the store");
                        assert_eq!(reference.recovered(&dump, now_ms, power_lost), want, "{at}");
                        for ours in [&checker, &streamed] {
                            assert_eq!(ours.current, reference.current, "{at}: the model after the reset");
                            assert_eq!(ours.counts(), (reference.history.len(), reference.durable), "{at}");
                            assert_eq!(ours.uncertain.is_none(), reference.uncertain.is_none(), "{at}");
                        }
                    }
                }
            }
        }
        for (what, count) in [("below", below), ("newest", newest), ("uncertain", with_uncertain), ("none", nothing)] {
            assert!(count >= 50, "only {count} recoveries matched {what}: the test lost its reach");
        }
    }

    #[test]
    fn under_no_any_prefix_is_allowed_but_not_a_hole() {
        let mut checker = Checker::new(FsyncPolicy::No);
        let writes = [set("a", "1"), set("b", "2"), set("a", "3")];
        for w in &writes {
            checker.acknowledged(w, 0).unwrap();
        }
        let mut probe = checker.clone();
        assert_eq!(probe.recovered(&dump_of(&writes[..1]), 0, true).unwrap(), 1);
        // a=3 without b=2 is a hole: never allowed.
        let hole = dump_of(&[set("a", "3")]);
        assert!(checker.clone().recovered(&hole, 0, true).is_err());
        // A reverted value after a sync is not allowed either.
        checker.all_durable();
        let err = checker.clone().recovered(&dump_of(&writes[..2]), 0, true).unwrap_err();
        assert!(err.detail.contains("key \"a\""), "{}", err.detail);
    }

    #[test]
    fn the_uncertain_write_may_or_may_not_be_there() {
        let mut checker = Checker::new(FsyncPolicy::Always);
        checker.acknowledged(&set("a", "1"), 0).unwrap();
        checker.uncertain(&set("b", "2"), 0);
        assert!(checker.clone().recovered(&dump_of(&[set("a", "1")]), 0, true).is_ok());
        assert!(checker.clone().recovered(&dump_of(&[set("a", "1"), set("b", "2")]), 0, true).is_ok());
        assert!(checker.clone().recovered(&dump_of(&[]), 0, true).is_err(), "an acknowledged write under always");
    }

    #[test]
    fn allows_is_the_rule_of_recovered_without_the_reset() {
        let mut checker = Checker::new(FsyncPolicy::No);
        let writes = [set("a", "1"), set("b", "2")];
        for w in &writes {
            checker.acknowledged(w, 0).unwrap();
        }
        checker.all_durable();
        checker.uncertain(&set("c", "3"), 0);
        let before = format!("{checker:?}");
        let with_c = dump_of(&[set("a", "1"), set("b", "2"), set("c", "3")]);
        for dump in [dump_of(&writes[..1]), dump_of(&writes), with_c] {
            let allowed = checker.allows(&dump, 0).map_err(|m| m.detail);
            assert_eq!(allowed, checker.clone().recovered(&dump, 0, true).map_err(|m| m.detail));
            assert_eq!(format!("{checker:?}"), before, "allows changes nothing");
        }
        assert_eq!(checker.allows(&dump_of(&writes), 0).unwrap(), 2);
        assert!(checker.allows(&dump_of(&writes[..1]), 0).is_err(), "b was synced");
    }

    #[test]
    fn everysec_makes_writes_due_a_second_later() {
        let mut checker = Checker::new(FsyncPolicy::EverySec);
        checker.acknowledged(&set("a", "1"), 100).unwrap();
        checker.acknowledged(&set("b", "2"), 900).unwrap();
        checker.call_succeeded(1_099);
        assert_eq!(checker.counts(), (2, 0));
        checker.call_succeeded(1_100);
        assert_eq!(checker.counts(), (2, 1));
        assert!(checker.clone().recovered(&dump_of(&[]), 2_000, true).is_err());
    }
}
