//! The reference model: the store's logical behaviour as a plain map, in
//! as few lines as the semantics allow.
//!
//! It shares no code with the store beyond the command and value *types*:
//! no log, no segments, no eviction, no purge — expiry is simply "hidden
//! from view". Property tests and the simulator run the same commands
//! through both and demand equal replies and equal logical dumps, so a bug
//! has to be made twice, in two different shapes, to go unseen.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::store::{Command, LogicalEntry, LogicalFields, LogicalValue, Reply, Row};
use crate::{Error, Result};

/// Logical content, with expired keys and fields possibly still present
/// (they are filtered at every look).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    map: BTreeMap<Vec<u8>, LogicalEntry>,
}

/// What takes one write back ([`Model::execute_undoable`],
/// [`Model::undo`]): checkers keep one per acknowledged write, so any
/// earlier state is reachable without a copy of the whole model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo {
    /// Each key the write named, in the command's order, with the entry
    /// it held just before the write changed it (`None`: absent). Put back
    /// in reverse order, they restore the state before the write — a key
    /// named twice (`DEL a a`) gets its older entry back last.
    Keys(Vec<(Vec<u8>, Option<LogicalEntry>)>),
    /// FLUSHALL: the whole map before it.
    All(BTreeMap<Vec<u8>, LogicalEntry>),
}

/// A logical entry as its holder keeps it, borrowed — a logical dump's
/// entry, or the store's own row ([`crate::store::Store::logical_visit`])
/// — for [`Model::shows_as`] to compare without copying it.
#[derive(Clone, Copy, Debug)]
pub struct EntryView<'a> {
    /// The value.
    pub value: ValueView<'a>,
    /// The key's expiry in Unix ms, if it has one.
    pub expire_at_ms: Option<u64>,
}

/// A logical value, borrowed.
#[derive(Clone, Copy, Debug)]
pub enum ValueView<'a> {
    /// A string.
    Str(&'a [u8]),
    /// A hash (never empty).
    Hash(FieldsView<'a>),
}

/// A hash's logical fields, borrowed: iterate with [`FieldsView::iter`].
#[derive(Clone, Copy, Debug)]
pub struct FieldsView<'a>(FieldsSource<'a>);

#[derive(Clone, Copy, Debug)]
enum FieldsSource<'a> {
    /// A logical dump's fields, all of them.
    Logical(&'a LogicalFields),
    /// A store row's fields alive at `live_at_ms`, or all of them (`None`).
    Row { row: &'a Row, live_at_ms: Option<u64> },
}

impl<'a> FieldsView<'a> {
    /// A store row: only the fields alive at `live_at_ms` if given (a hot
    /// row read at the clock), else every field (a cold row as its segment
    /// holds it).
    pub fn of_row(row: &'a Row, live_at_ms: Option<u64>) -> Self {
        FieldsView(FieldsSource::Row { row, live_at_ms })
    }

    /// Field, value and field expiry, in field order.
    pub fn iter(self) -> FieldsIter<'a> {
        FieldsIter(match self.0 {
            FieldsSource::Logical(fields) => IterSource::Logical(fields.iter()),
            FieldsSource::Row { row, live_at_ms } => IterSource::Row { iter: row.into_iter(), live_at_ms },
        })
    }
}

/// [`FieldsView::iter`].
pub struct FieldsIter<'a>(IterSource<'a>);

enum IterSource<'a> {
    Logical(std::collections::btree_map::Iter<'a, Vec<u8>, (Vec<u8>, Option<u64>)>),
    Row { iter: <&'a Row as IntoIterator>::IntoIter, live_at_ms: Option<u64> },
}

impl<'a> Iterator for FieldsIter<'a> {
    type Item = (&'a [u8], &'a [u8], Option<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterSource::Logical(iter) => iter.next().map(|(f, (v, at))| (f.as_slice(), v.as_slice(), *at)),
            IterSource::Row { iter, live_at_ms } => iter
                .find(|(_, slot)| live_at_ms.is_none_or(|now_ms| alive(slot.expire_at_ms, now_ms)))
                .map(|(f, slot)| (f.as_slice(), slot.value.as_slice(), slot.expire_at_ms)),
        }
    }
}

impl EntryView<'_> {
    /// An owned copy.
    pub fn to_entry(&self) -> LogicalEntry {
        let value = match self.value {
            ValueView::Str(bytes) => LogicalValue::Str(bytes.to_vec()),
            ValueView::Hash(fields) => {
                LogicalValue::Hash(fields.iter().map(|(f, v, at)| (f.to_vec(), (v.to_vec(), at))).collect())
            }
        };
        LogicalEntry { value, expire_at_ms: self.expire_at_ms }
    }
}

impl LogicalEntry {
    /// This entry as an [`EntryView`].
    pub fn view(&self) -> EntryView<'_> {
        let value = match &self.value {
            LogicalValue::Str(bytes) => ValueView::Str(bytes),
            LogicalValue::Hash(fields) => ValueView::Hash(FieldsView(FieldsSource::Logical(fields))),
        };
        EntryView { value, expire_at_ms: self.expire_at_ms }
    }
}

fn alive(at_ms: Option<u64>, now_ms: u64) -> bool {
    at_ms.is_none_or(|at| at > now_ms)
}

fn wrong_type() -> Error {
    Error::Invalid("WRONGTYPE".into())
}

impl Model {
    /// An empty model.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entry at `key` as a reader at `now_ms` sees it: `None` if the
    /// key is expired or is a hash with no live field.
    pub fn visible(&self, key: &[u8], now_ms: u64) -> Option<LogicalEntry> {
        let entry = self.map.get(key)?;
        if !alive(entry.expire_at_ms, now_ms) {
            return None;
        }
        match &entry.value {
            LogicalValue::Str(_) => Some(entry.clone()),
            LogicalValue::Hash(fields) => {
                let live: BTreeMap<_, _> = fields
                    .iter()
                    .filter(|(_, (_, at))| alive(*at, now_ms))
                    .map(|(f, v)| (f.clone(), v.clone()))
                    .collect();
                let expire_at_ms = entry.expire_at_ms;
                (!live.is_empty()).then_some(LogicalEntry { value: LogicalValue::Hash(live), expire_at_ms })
            }
        }
    }

    /// Everything visible at `now_ms`: comparable with
    /// [`crate::store::Store::logical_dump`].
    pub fn dump(&self, now_ms: u64) -> BTreeMap<Vec<u8>, LogicalEntry> {
        self.map.keys().filter_map(|k| self.visible(k, now_ms).map(|e| (k.clone(), e))).collect()
    }

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
    /// differently in `stored` (a model's map, or a FLUSHALL's [`Undo`])
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

    /// The stored entry at `key`, expired or not (see [`Model::shows_as`]).
    pub fn stored(&self, key: &[u8]) -> Option<&LogicalEntry> {
        self.map.get(key)
    }

    /// The whole stored map, expired entries included.
    pub fn stored_map(&self) -> &BTreeMap<Vec<u8>, LogicalEntry> {
        &self.map
    }

    /// Replace the content (a checker resetting to a recovered prefix).
    pub fn from_dump(map: BTreeMap<Vec<u8>, LogicalEntry>) -> Self {
        Self { map }
    }

    /// The keys `command` may read or change: every command names its
    /// keys, except FLUSHALL (all of them, `None`) and WINDOW (none).
    /// [`Model::execute`] looks at no other entry — what lets an [`Undo`]
    /// hold just these.
    pub fn keys_of(command: &Command) -> Option<&[Vec<u8>]> {
        Some(match command {
            Command::Set { key, .. }
            | Command::Get { key }
            | Command::HSet { key, .. }
            | Command::HGet { key, .. }
            | Command::HDel { key, .. }
            | Command::HGetAll { key }
            | Command::PExpireAt { key, .. }
            | Command::Persist { key }
            | Command::HPExpireAt { key, .. } => std::slice::from_ref(key),
            Command::Del { keys } => keys.as_slice(),
            Command::Window { .. } => &[],
            Command::FlushAll => return None,
        })
    }

    /// [`Model::execute`], also returning what takes the write back
    /// exactly ([`Model::undo`]): the stored entries of its keys as they
    /// were. A refused command changes nothing and returns no undo.
    pub fn execute_undoable(&mut self, command: &Command, now_ms: u64) -> Result<(Reply, Undo)> {
        // Writes that replace or remove whole entries: what they displace
        // is the undo, moved rather than copied.
        match command {
            Command::FlushAll => {
                let before = std::mem::take(&mut self.map);
                let reply = self.execute(command, now_ms)?;
                return Ok((reply, Undo::All(before)));
            }
            Command::Set { key, value } => {
                let before = self.set(key, value);
                return Ok((Reply::Ok, Undo::Keys(vec![(key.clone(), before)])));
            }
            Command::Del { keys } => {
                let mut before = Vec::with_capacity(keys.len());
                let visible = self.del(keys, now_ms, |key, entry| before.push((key.clone(), entry)));
                return Ok((Reply::Int(visible), Undo::Keys(before)));
            }
            _ => {}
        }
        let keys = Self::keys_of(command).expect("only FLUSHALL names every key");
        let before = keys.iter().map(|key| (key.clone(), self.map.get(key).cloned())).collect();
        let reply = self.execute(command, now_ms)?;
        Ok((reply, Undo::Keys(before)))
    }

    /// Take back the write `undo` was made for, which must be the last
    /// one not yet taken back: the map is then exactly as it was before it.
    pub fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::All(before) => self.map = before,
            // Reverse order: a key named twice gets its older entry back
            // last (see `Undo::Keys`).
            Undo::Keys(before) => {
                for (key, entry) in before.into_iter().rev() {
                    match entry {
                        Some(entry) => {
                            self.map.insert(key, entry);
                        }
                        None => {
                            self.map.remove(&key);
                        }
                    }
                }
            }
        }
    }

    /// The entry at `key` as a reader at `now_ms` sees it, borrowed: `None`
    /// if the key is expired or is a hash with no live field. A hash's dead
    /// fields are still in it: look at its fields through [`alive`].
    fn visible_ref(&self, key: &[u8], now_ms: u64) -> Option<&LogicalEntry> {
        let entry = self.map.get(key)?;
        if !alive(entry.expire_at_ms, now_ms) {
            return None;
        }
        match &entry.value {
            LogicalValue::Str(_) => Some(entry),
            LogicalValue::Hash(fields) => fields.values().any(|(_, at)| alive(*at, now_ms)).then_some(entry),
        }
    }

    /// The entry at `key`, first made exactly what [`Model::visible`]
    /// returns (a hash's dead fields dropped), for a write to change in
    /// place; `None`, changing nothing, if no reader at `now_ms` sees it.
    fn visible_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut LogicalEntry> {
        let entry = self.map.get_mut(key)?;
        if !alive(entry.expire_at_ms, now_ms) {
            return None;
        }
        if let LogicalValue::Hash(fields) = &mut entry.value {
            if !fields.values().any(|(_, at)| alive(*at, now_ms)) {
                return None;
            }
            fields.retain(|_, (_, at)| alive(*at, now_ms));
        }
        Some(entry)
    }

    /// The one refusal the model knows, the store's too: a command that
    /// meets a visible key of the other type (WRONGTYPE).
    fn refusal(&self, command: &Command, now_ms: u64) -> Option<Error> {
        let (key, wants_hash) = match command {
            Command::Get { key } => (key, false),
            Command::HGet { key, .. }
            | Command::HGetAll { key }
            | Command::HSet { key, .. }
            | Command::HDel { key, .. }
            | Command::HPExpireAt { key, .. } => (key, true),
            Command::Set { .. }
            | Command::Del { .. }
            | Command::PExpireAt { .. }
            | Command::Persist { .. }
            | Command::FlushAll
            | Command::Window { .. } => return None,
        };
        let is_hash = matches!(self.visible_ref(key, now_ms)?.value, LogicalValue::Hash(_));
        (is_hash != wants_hash).then(wrong_type)
    }

    /// Whether [`Model::execute`] would refuse `command` at `now_ms`,
    /// asked without running it (and without copying the model).
    pub fn refuses(&self, command: &Command, now_ms: u64) -> bool {
        self.refusal(command, now_ms).is_some()
    }

    /// Run `command` at `now_ms`. Errors are the same cases the store
    /// refuses (a wrong type); the model changes nothing on error.
    ///
    /// Writes change the map in place and leave it exactly as putting back
    /// the [`Model::visible`] entry would (a hash a write touches keeps
    /// only its live fields): the per-write copy of a whole entry was most
    /// of the simulator's model time.
    pub fn execute(&mut self, command: &Command, now_ms: u64) -> Result<Reply> {
        if let Some(refused) = self.refusal(command, now_ms) {
            return Err(refused);
        }
        // Past this point a visible key has the type the command wants.
        let reply = match command {
            Command::Get { key } => match self.visible_ref(key, now_ms).map(|e| &e.value) {
                None => Reply::Nil,
                Some(LogicalValue::Str(v)) => Reply::Bulk(v.clone()),
                Some(LogicalValue::Hash(_)) => unreachable!("refusal() checked the type"),
            },
            Command::HGet { key, field } => match self.live_fields(key, now_ms) {
                None => Reply::Nil,
                Some(fields) => match fields.get(field) {
                    Some((v, at)) if alive(*at, now_ms) => Reply::Bulk(v.clone()),
                    _ => Reply::Nil,
                },
            },
            Command::HGetAll { key } => Reply::Pairs(self.live_fields(key, now_ms).map_or_else(Vec::new, |fields| {
                fields
                    .iter()
                    .filter(|(_, (_, at))| alive(*at, now_ms))
                    .map(|(f, (v, _))| (f.clone(), v.clone()))
                    .collect()
            })),
            Command::Set { key, value } => {
                self.set(key, value);
                Reply::Ok
            }
            Command::Del { keys } => Reply::Int(self.del(keys, now_ms, |_, _| {})),
            Command::HSet { key, pairs } => {
                // Not visible (absent, expired, or a hash with no live
                // field): a fresh hash with no TTL replaces whatever is
                // stored.
                if self.visible_mut(key, now_ms).is_none() {
                    let fresh = LogicalEntry { value: LogicalValue::Hash(BTreeMap::new()), expire_at_ms: None };
                    self.map.insert(key.clone(), fresh);
                }
                let fields = self.hash_mut(key);
                let mut added = 0;
                for (field, value) in pairs {
                    if fields.insert(field.clone(), (value.clone(), None)).is_none() {
                        added += 1;
                    }
                }
                Reply::Int(added)
            }
            Command::HDel { key, fields } => {
                if self.visible_mut(key, now_ms).is_none() {
                    return Ok(Reply::Int(0));
                }
                let live = self.hash_mut(key);
                let removed = fields.iter().filter(|f| live.remove(*f).is_some()).count();
                // No fields left means no key.
                if live.is_empty() {
                    self.map.remove(key.as_slice());
                }
                Reply::Int(removed as i64)
            }
            Command::HPExpireAt { key, at_ms, fields } => {
                if self.visible_mut(key, now_ms).is_none() {
                    return Ok(Reply::Int(0));
                }
                let live = self.hash_mut(key);
                let mut set = 0;
                for field in fields {
                    if let Some(slot) = live.get_mut(field) {
                        slot.1 = Some(*at_ms);
                        set += 1;
                    }
                }
                assert!(!live.is_empty(), "a visible hash keeps its fields when their TTLs change");
                Reply::Int(set)
            }
            Command::PExpireAt { key, at_ms } => match self.visible_mut(key, now_ms) {
                None => Reply::Int(0),
                Some(entry) => {
                    entry.expire_at_ms = Some(*at_ms);
                    Reply::Int(1)
                }
            },
            Command::Persist { key } => {
                // A key with no TTL is left untouched, dead fields and all.
                if self.visible_ref(key, now_ms).is_some_and(|e| e.expire_at_ms.is_some()) {
                    let entry = self.visible_mut(key, now_ms).expect("visible a moment ago");
                    entry.expire_at_ms = None;
                    Reply::Int(1)
                } else {
                    Reply::Int(0)
                }
            }
            Command::FlushAll => {
                self.map.clear();
                Reply::Ok
            }
            Command::Window { .. } => Reply::Ok,
        };
        Ok(reply)
    }

    /// SET: a string with no TTL replaces whatever `key` held, which is
    /// returned (`None`: absent).
    fn set(&mut self, key: &[u8], value: &[u8]) -> Option<LogicalEntry> {
        let entry = LogicalEntry { value: LogicalValue::Str(value.to_vec()), expire_at_ms: None };
        match self.map.get_mut(key) {
            Some(slot) => Some(std::mem::replace(slot, entry)),
            None => {
                self.map.insert(key.to_vec(), entry);
                None
            }
        }
    }

    /// DEL: remove each of `keys` in order, handing each key and what it
    /// held to `removed`; the reply counts the keys a reader saw.
    fn del(&mut self, keys: &[Vec<u8>], now_ms: u64, mut removed: impl FnMut(&Vec<u8>, Option<LogicalEntry>)) -> i64 {
        let mut visible = 0;
        for key in keys {
            if self.visible_ref(key, now_ms).is_some() {
                visible += 1;
            }
            removed(key, self.map.remove(key));
        }
        visible
    }

    /// The fields of the hash at `key` if a reader at `now_ms` sees it,
    /// dead ones included (filter with [`alive`]). The caller has ruled
    /// out a string ([`Model::refusal`]).
    fn live_fields(&self, key: &[u8], now_ms: u64) -> Option<&LogicalFields> {
        match &self.visible_ref(key, now_ms)?.value {
            LogicalValue::Hash(fields) => Some(fields),
            LogicalValue::Str(_) => unreachable!("refusal() checked the type"),
        }
    }

    /// The fields of the stored hash at `key`, which the caller just made
    /// visible or created.
    fn hash_mut(&mut self, key: &[u8]) -> &mut LogicalFields {
        match self.map.get_mut(key).map(|e| &mut e.value) {
            Some(LogicalValue::Hash(fields)) => fields,
            _ => unreachable!("the caller made a hash at this key"),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(words: &[&str]) -> Command {
        Command::parse(&words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn expiry_hides_keys_and_fields() {
        let mut m = Model::new();
        m.execute(&cmd(&["HSET", "h", "a", "1", "b", "2"]), 0).unwrap();
        m.execute(&cmd(&["HPEXPIREAT", "h", "100", "a"]), 0).unwrap();
        assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), 99).unwrap(), Reply::Bulk(b"1".to_vec()));
        assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), 100).unwrap(), Reply::Nil);
        m.execute(&cmd(&["PEXPIREAT", "h", "200"]), 100).unwrap();
        assert_eq!(m.dump(150).len(), 1);
        assert!(m.dump(200).is_empty());
        // A write after expiry starts a fresh key with no TTL.
        assert_eq!(m.execute(&cmd(&["HSET", "h", "c", "3"]), 300).unwrap(), Reply::Int(1));
        assert_eq!(m.dump(10_000).get(b"h".as_slice()).unwrap().expire_at_ms, None);
    }

    #[test]
    fn same_as_agrees_with_comparing_dumps() {
        let mut m = Model::new();
        m.execute(&cmd(&["HSET", "h", "a", "1", "b", "2"]), 0).unwrap();
        m.execute(&cmd(&["HPEXPIREAT", "h", "100", "a"]), 0).unwrap();
        m.execute(&cmd(&["SET", "s", "v"]), 0).unwrap();
        m.execute(&cmd(&["HSET", "gone", "x", "1"]), 0).unwrap();
        m.execute(&cmd(&["HPEXPIREAT", "gone", "50", "x"]), 0).unwrap();
        for now in [0, 50, 100, 200] {
            assert!(m.same_as(&m.dump(now), now));
            let mut other = m.clone();
            other.execute(&cmd(&["SET", "s", "w"]), now).unwrap();
            assert!(!m.same_as(&other.dump(now), now));
            assert!(!other.same_as(&m.dump(now), now));
            let mut fewer = m.dump(now);
            fewer.remove(b"s".as_slice());
            assert!(!m.same_as(&fewer, now));
        }
    }

    /// A small deterministic stream of commands over few keys and fields,
    /// with TTLs near the clock, so types clash and things expire.
    struct Commands(u64);

    impl Commands {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn word(&mut self, prefix: &str, n: u64) -> String {
            format!("{prefix}{}", self.below(n))
        }

        fn next(&mut self, now_ms: u64) -> Command {
            let key = self.word("k", 5);
            let field = self.word("f", 3);
            let at = (now_ms + self.below(40)).saturating_sub(10).to_string();
            let words: Vec<String> = match self.below(14) {
                0 | 1 => vec!["SET".into(), key, self.word("v", 3)],
                2 => vec!["GET".into(), key],
                3 => vec!["DEL".into(), key, self.word("k", 5), self.word("k", 5)],
                4..=6 => vec!["HSET".into(), key, field, self.word("v", 3), self.word("f", 3), "w".into()],
                7 => vec!["HGET".into(), key, field],
                8 => vec!["HDEL".into(), key, field, self.word("f", 3)],
                9 => vec!["HGETALL".into(), key],
                10 => vec!["PEXPIREAT".into(), key, at],
                11 => vec!["PERSIST".into(), key],
                12 => vec!["HPEXPIREAT".into(), key, at, field],
                _ if self.below(4) == 0 => vec!["FLUSHALL".into()],
                _ => vec!["WINDOW".into(), "t".into(), "ts".into(), "10".into()],
            };
            Command::parse(&words).unwrap()
        }
    }

    /// The model as it was before writes changed entries in place: every
    /// write copies the visible entry, changes the copy, puts it back.
    fn execute_by_copy(map: &mut BTreeMap<Vec<u8>, LogicalEntry>, command: &Command, now_ms: u64) -> Result<Reply> {
        let model = Model { map: map.clone() };
        let hash = |key: &[u8]| match model.visible(key, now_ms).map(|e| e.value) {
            None => Ok(None),
            Some(LogicalValue::Hash(fields)) => Ok(Some(fields)),
            Some(LogicalValue::Str(_)) => Err(wrong_type()),
        };
        let put_hash = |map: &mut BTreeMap<Vec<u8>, LogicalEntry>, key: &[u8], fields: LogicalFields| {
            if fields.is_empty() {
                map.remove(key);
            } else {
                let expire_at_ms = model.visible(key, now_ms).and_then(|e| e.expire_at_ms);
                map.insert(key.to_vec(), LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms });
            }
        };
        Ok(match command {
            Command::Get { key } => match model.visible(key, now_ms).map(|e| e.value) {
                None => Reply::Nil,
                Some(LogicalValue::Str(v)) => Reply::Bulk(v),
                Some(LogicalValue::Hash(_)) => return Err(wrong_type()),
            },
            Command::HGet { key, field } => match hash(key)? {
                None => Reply::Nil,
                Some(fields) => fields.get(field).map_or(Reply::Nil, |(v, _)| Reply::Bulk(v.clone())),
            },
            Command::HGetAll { key } => {
                Reply::Pairs(hash(key)?.map(|f| f.into_iter().map(|(f, (v, _))| (f, v)).collect()).unwrap_or_default())
            }
            Command::Set { key, value } => {
                map.insert(key.clone(), LogicalEntry { value: LogicalValue::Str(value.clone()), expire_at_ms: None });
                Reply::Ok
            }
            Command::Del { keys } => {
                let mut removed = 0;
                for key in keys {
                    if (Model { map: map.clone() }).visible(key, now_ms).is_some() {
                        removed += 1;
                    }
                    map.remove(key);
                }
                Reply::Int(removed)
            }
            Command::HSet { key, pairs } => {
                let (mut fields, expire_at_ms) = match model.visible(key, now_ms) {
                    None => (BTreeMap::new(), None),
                    Some(LogicalEntry { value: LogicalValue::Hash(f), expire_at_ms }) => (f, expire_at_ms),
                    Some(_) => return Err(wrong_type()),
                };
                let mut added = 0;
                for (field, value) in pairs {
                    if fields.insert(field.clone(), (value.clone(), None)).is_none() {
                        added += 1;
                    }
                }
                map.insert(key.clone(), LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms });
                Reply::Int(added)
            }
            Command::HDel { key, fields } => {
                let Some(mut live) = hash(key)? else { return Ok(Reply::Int(0)) };
                let removed = fields.iter().filter(|f| live.remove(*f).is_some()).count();
                put_hash(map, key, live);
                Reply::Int(removed as i64)
            }
            Command::HPExpireAt { key, at_ms, fields } => {
                let Some(mut live) = hash(key)? else { return Ok(Reply::Int(0)) };
                let mut set = 0;
                for field in fields {
                    if let Some(slot) = live.get_mut(field) {
                        slot.1 = Some(*at_ms);
                        set += 1;
                    }
                }
                put_hash(map, key, live);
                Reply::Int(set)
            }
            Command::PExpireAt { key, at_ms } => match model.visible(key, now_ms) {
                None => Reply::Int(0),
                Some(mut entry) => {
                    entry.expire_at_ms = Some(*at_ms);
                    map.insert(key.clone(), entry);
                    Reply::Int(1)
                }
            },
            Command::Persist { key } => match model.visible(key, now_ms) {
                Some(mut entry) if entry.expire_at_ms.is_some() => {
                    entry.expire_at_ms = None;
                    map.insert(key.clone(), entry);
                    Reply::Int(1)
                }
                _ => Reply::Int(0),
            },
            Command::FlushAll => {
                map.clear();
                Reply::Ok
            }
            Command::Window { .. } => Reply::Ok,
        })
    }

    #[test]
    fn in_place_writes_leave_what_copying_writes_left() {
        for seed in 1..=200u64 {
            let mut commands = Commands(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut model = Model::new();
            let mut reference = BTreeMap::new();
            let mut now_ms = 0;
            for _ in 0..300 {
                now_ms += commands.below(4);
                let command = commands.next(now_ms);
                let want = execute_by_copy(&mut reference, &command, now_ms);
                let refused = model.refuses(&command, now_ms);
                let got = model.execute(&command, now_ms);
                assert_eq!(got.as_ref().ok(), want.as_ref().ok(), "seed {seed}: {command:?}");
                assert_eq!(refused, want.is_err(), "seed {seed}: {command:?}");
                assert_eq!(model.map, reference, "seed {seed}: the maps differ after {command:?}");
            }
        }
    }

    #[test]
    fn undo_takes_a_write_back_exactly() {
        for seed in 1..=200u64 {
            let mut commands = Commands(seed.wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1);
            let mut model = Model::new();
            let mut now_ms = 0;
            let mut states = vec![model.clone()];
            let mut undos = Vec::new();
            for _ in 0..200 {
                now_ms += commands.below(4);
                let command = commands.next(now_ms);
                let mut plain = model.clone();
                let want = plain.execute(&command, now_ms);
                match model.execute_undoable(&command, now_ms) {
                    Ok((reply, undo)) => {
                        assert_eq!(Some(&reply), want.as_ref().ok(), "seed {seed}: {command:?}");
                        states.push(model.clone());
                        undos.push(undo);
                    }
                    Err(_) => assert!(want.is_err(), "seed {seed}: {command:?}"),
                }
                assert_eq!(model, plain, "seed {seed}: {command:?}");
            }
            while let Some(undo) = undos.pop() {
                states.pop();
                model.undo(undo);
                assert_eq!(&model, states.last().unwrap(), "seed {seed}: undo {}", undos.len());
            }
        }
    }

    #[test]
    fn every_comparison_agrees_with_comparing_dumps() {
        for seed in 1..=100u64 {
            let mut commands = Commands(seed.wrapping_mul(0x94d0_49bb_1331_11eb) | 1);
            let (mut ours, mut theirs) = (Model::new(), Model::new());
            let mut now_ms = 0;
            for step in 0..200 {
                now_ms += commands.below(4);
                // Mostly the same writes, now and then one side alone.
                let command = commands.next(now_ms);
                match commands.below(8) {
                    0 => drop(ours.execute(&command, now_ms)),
                    1 => drop(theirs.execute(&command, now_ms)),
                    _ => {
                        let _ = ours.execute(&command, now_ms);
                        let _ = theirs.execute(&command, now_ms);
                    }
                }
                let look_ms = now_ms + commands.below(20);
                let (mine, dump) = (ours.dump(look_ms), theirs.dump(look_ms));
                let differing = mine.keys().chain(dump.keys()).collect::<std::collections::BTreeSet<_>>();
                let differing = differing.into_iter().filter(|k| mine.get(*k) != dump.get(*k)).count();
                assert_eq!(Model::count_differing(&ours.map, &dump, look_ms, usize::MAX), differing, "{seed}/{step}");
                assert_eq!(ours.same_as(&dump, look_ms), mine == dump, "{seed}/{step}");
                let mut in_order = ours.shows_in_order(look_ms);
                let mut counting = ours.count_in_order(look_ms);
                for (key, entry) in &dump {
                    in_order.next(key, entry.view());
                    counting.next(key, entry.view());
                    assert_eq!(entry.view().to_entry(), *entry);
                }
                assert_eq!(in_order.finish(), mine == dump, "{seed}/{step}");
                assert_eq!(counting.finish(), differing, "{seed}/{step}");
            }
        }
    }

    #[test]
    fn wrong_type_changes_nothing() {
        let mut m = Model::new();
        m.execute(&cmd(&["SET", "s", "v"]), 0).unwrap();
        let before = m.clone();
        assert!(m.execute(&cmd(&["HSET", "s", "f", "v"]), 0).is_err());
        assert_eq!(m, before);
    }
}
