//! The prefix search: which allowed prefix of the acknowledged writes a
//! recovered content is the state after, found without copying the model.
//!
//! The states are read newest first, from the current model back to the
//! durable prefix, through an overlay of the entries each write's undo
//! restores ([`PrefixView`]); only the keys an undo names are compared
//! again at each step. It is the checker's work after every recovery, and
//! the reason the model keeps undos at all. The rule it decides is stated
//! in `checker`'s module doc; the test
//! `the_rule_is_the_forward_search_bit_for_bit` holds this search to the
//! plain replay-and-compare one it replaced.

use std::collections::BTreeMap;

use engine::store::EntryView;
use engine::store::{Command, LogicalEntry};
use testkit::model::{Model, Undo};

use super::Checker;

impl Checker {
    /// The rule itself (see the module doc): the newest allowed prefix `p`
    /// whose model shows exactly the recovered content — `history.len() +
    /// 1` for all of them plus the uncertain write — or `None`.
    ///
    /// The states are visited newest first: all the writes plus the
    /// uncertain one, then from `current` back to the durable prefix, each
    /// one's difference from the content kept as a count that a write's
    /// undo changes only at its own keys; the first (newest) prefix with no
    /// difference wins. Where writes cancel out (a field set, then its key
    /// deleted), several prefixes show the same content, and only the
    /// newest is safe to continue from: the store's log may hold every one
    /// of those writes, and a later recovery that cuts the log between them
    /// (at damage) shows a state only the newest's history still knows.
    /// Continuing from an older one forgot them (seed 3948 failed so, with
    /// no bug in the store). The uncertain write is the newest of all: a
    /// FLUSHALL in doubt shows the same empty content as a history that
    /// began empty, and continuing from the empty start forgot the writes
    /// the log still held before the FLUSHALL frame, which a later
    /// point-in-time cut at damage brought back (seed 1059760). A newer
    /// choice costs nothing where the log held less: the states are the
    /// same, so everything after them is too.
    pub(super) fn find_prefix(&self, content: &Content<'_>, now_ms: u64, lowest: usize) -> Option<usize> {
        let newest = self.history.len();
        assert!(lowest <= newest, "the lowest prefix is within the history");
        if let Some((at_ms, command)) = &self.uncertain {
            if self.newest_plus_shows(command, *at_ms, content, now_ms) {
                return Some(newest + 1);
            }
        }
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
                break;
            }
            if p == lowest {
                break;
            }
            p -= 1;
            view.take_back(&self.history[p].undo);
        }
        matched
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
}

/// What the prefix search needs of the recovered content.
pub(super) struct Content<'a> {
    /// The content's entry of every key the search may look up (all of
    /// them, or those the undos and the uncertain write name).
    pub(super) entries: &'a BTreeMap<Vec<u8>, LogicalEntry>,
    /// Keys `current` shows differently from the content.
    pub(super) differing_at_newest: usize,
    pub(super) is_empty: bool,
    /// The whole content, if at hand: past a FLUSHALL's undo every key
    /// must be compared again.
    pub(super) whole: Option<&'a BTreeMap<Vec<u8>, LogicalEntry>>,
}

impl<'a> Content<'a> {
    /// A recovered dump, all of it at hand, against `current`.
    pub(super) fn whole(dump: &'a BTreeMap<Vec<u8>, LogicalEntry>, current: &Model, now_ms: u64) -> Self {
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
