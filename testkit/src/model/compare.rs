//! Comparing what the model shows with a logical content, without
//! building either as a dump: [`Model::shows_as`] for one key, and over
//! whole contents [`Model::same_as`], [`Model::count_differing`] and the
//! in-order walkers [`ShowsInOrder`] and [`CountInOrder`].
//!
//! They exist for the checker's speed. After a recovery it compares the
//! recovered content with the current model, then only the keys each
//! undo restores as it walks back to earlier states; audits compare the
//! store's rows as the store walks them. A dump for each of those would
//! copy the whole content each time. Each comparison says exactly what
//! `model.dump(now_ms) == content` (or the count of keys the two show
//! differently) would say; `tests.rs` holds them to it.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::{alive, Model};
use engine::store::{EntryView, LogicalEntry, LogicalValue, ValueView};

impl Model {
    /// Whether everything visible at `now_ms` equals `dump` — what
    /// `self.dump(now_ms) == *dump` says, without building a map (checkers
    /// ask this after every recovery for every candidate prefix).
    pub fn same_as(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> bool {
        Self::count_differing(&self.map, dump, now_ms, 1) == 0
    }

    /// Whether a stored entry (`None`: absent; expired keys and fields
    /// possibly in it) looks to a reader at `now_ms` exactly like `dumped`,
    /// a logical dump's entry for the same key (`None`: absent) — one key's
    /// share of [`Model::same_as`].
    pub fn shows_as(stored: Option<&LogicalEntry>, now_ms: u64, dumped: Option<EntryView<'_>>) -> bool {
        let Some(entry) = stored.filter(|e| alive(e.expire_at_ms, now_ms)) else { return dumped.is_none() };
        match &entry.value {
            LogicalValue::Str(value) => dumped.is_some_and(|d| {
                d.expire_at_ms == entry.expire_at_ms && matches!(d.value, ValueView::Str(v) if v == value.as_slice())
            }),
            LogicalValue::Hash(fields) => {
                let mut live = fields
                    .iter()
                    .filter(|(_, (_, at))| alive(*at, now_ms))
                    .map(|(f, (v, at))| (f.as_slice(), v.as_slice(), *at))
                    .peekable();
                if live.peek().is_none() {
                    return dumped.is_none();
                }
                dumped.is_some_and(|d| {
                    d.expire_at_ms == entry.expire_at_ms
                        && matches!(d.value, ValueView::Hash(other) if live.eq(other.iter()))
                })
            }
        }
    }

    /// Compare a logical content that arrives one key at a time, in key
    /// order ([`ShowsInOrder::next`]), with what the model shows at
    /// `now_ms`: [`Model::same_as`] without the content ever being a map.
    pub fn shows_in_order(&self, now_ms: u64) -> ShowsInOrder<'_> {
        ShowsInOrder { ours: self.map.iter().peekable(), now_ms, differing: 0 }
    }

    /// [`Model::shows_in_order`] that counts: [`CountInOrder::finish`] is
    /// what [`Model::count_differing`] would say of the content as a map.
    pub fn count_in_order(&self, now_ms: u64) -> CountInOrder<'_> {
        CountInOrder(self.shows_in_order(now_ms))
    }

    /// How many keys (of either map) a reader at `now_ms` would see
    /// differently in `stored` (a model's map, or a FLUSHALL's [`Undo`](super::Undo))
    /// than in `dump`, counting up to `limit`: zero means `stored` shows
    /// exactly `dump`.
    pub fn count_differing(
        stored: &BTreeMap<Vec<u8>, LogicalEntry>,
        dump: &BTreeMap<Vec<u8>, LogicalEntry>,
        now_ms: u64,
        limit: usize,
    ) -> usize {
        let mut ours = stored.iter().peekable();
        let mut theirs = dump.iter().peekable();
        let mut differing = 0;
        while differing < limit {
            // One key per step, in order: ours, theirs, or both.
            let (mine, dumped) = match (ours.peek(), theirs.peek()) {
                (None, None) => break,
                (Some(_), None) => (ours.next(), None),
                (None, Some(_)) => (None, theirs.next()),
                (Some((k, _)), Some((j, _))) => match k.cmp(j) {
                    Ordering::Less => (ours.next(), None),
                    Ordering::Equal => (ours.next(), theirs.next()),
                    Ordering::Greater => (None, theirs.next()),
                },
            };
            if !Self::shows_as(mine.map(|(_, e)| e), now_ms, dumped.map(|(_, e)| e.view())) {
                differing += 1;
            }
        }
        differing
    }
}

/// [`Model::shows_in_order`].
#[derive(Debug)]
pub struct ShowsInOrder<'a> {
    ours: std::iter::Peekable<std::collections::btree_map::Iter<'a, Vec<u8>, LogicalEntry>>,
    now_ms: u64,
    /// Keys shown differently (or only on one side) so far.
    differing: usize,
}

impl ShowsInOrder<'_> {
    /// The content's next key (greater than every key before it) and its
    /// entry.
    pub fn next(&mut self, key: &[u8], entry: EntryView<'_>) {
        // The model's keys before `key` are absent from the content: they
        // must not show.
        while let Some((_, skipped)) = self.ours.next_if(|(k, _)| k.as_slice() < key) {
            self.differing += usize::from(!Model::shows_as(Some(skipped), self.now_ms, None));
        }
        let mine = self.ours.next_if(|(k, _)| k.as_slice() == key).map(|(_, e)| e);
        self.differing += usize::from(!Model::shows_as(mine, self.now_ms, Some(entry)));
    }

    /// The content ended: whether it was exactly what the model shows.
    pub fn finish(self) -> bool {
        self.count() == 0
    }

    fn count(mut self) -> usize {
        for (_, left) in self.ours.by_ref() {
            self.differing += usize::from(!Model::shows_as(Some(left), self.now_ms, None));
        }
        self.differing
    }
}

/// [`Model::count_in_order`].
#[derive(Debug)]
pub struct CountInOrder<'a>(ShowsInOrder<'a>);

impl CountInOrder<'_> {
    /// [`ShowsInOrder::next`].
    pub fn next(&mut self, key: &[u8], entry: EntryView<'_>) {
        self.0.next(key, entry);
    }

    /// The content ended: how many keys it shows differently from the
    /// model.
    pub fn finish(self) -> usize {
        self.0.count()
    }
}
