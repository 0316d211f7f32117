//! The reference model: the store's logical behaviour as a plain map, in
//! as few lines as the semantics allow.
//!
//! It shares no code with the store beyond the command and value *types*:
//! no log, no segments, no eviction, no purge — expiry is simply "hidden
//! from view". Property tests and the simulator run the same commands
//! through both and demand equal replies and equal logical dumps, so a bug
//! has to be made twice, in two different shapes, to go unseen.

use std::collections::BTreeMap;

use crate::store::{Command, LogicalEntry, LogicalFields, LogicalValue, Reply};
use crate::{Error, Result};

/// Logical content, with expired keys and fields possibly still present
/// (they are filtered at every look).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    map: BTreeMap<Vec<u8>, LogicalEntry>,
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
        let mut theirs = dump.iter();
        for (key, entry) in &self.map {
            if !alive(entry.expire_at_ms, now_ms) {
                continue;
            }
            let same = match &entry.value {
                LogicalValue::Str(value) => theirs.next().is_some_and(|(k, e)| {
                    k == key && e.expire_at_ms == entry.expire_at_ms && e.value == LogicalValue::Str(value.clone())
                }),
                LogicalValue::Hash(fields) => {
                    let mut live = fields.iter().filter(|(_, (_, at))| alive(*at, now_ms)).peekable();
                    if live.peek().is_none() {
                        continue;
                    }
                    theirs.next().is_some_and(|(k, e)| match &e.value {
                        LogicalValue::Hash(other) => {
                            k == key && e.expire_at_ms == entry.expire_at_ms && live.eq(other.iter())
                        }
                        LogicalValue::Str(_) => false,
                    })
                }
            };
            if !same {
                return false;
            }
        }
        theirs.next().is_none()
    }

    /// Replace the content (a checker resetting to a recovered prefix).
    pub fn from_dump(map: BTreeMap<Vec<u8>, LogicalEntry>) -> Self {
        Self { map }
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
                let entry = LogicalEntry { value: LogicalValue::Str(value.clone()), expire_at_ms: None };
                match self.map.get_mut(key.as_slice()) {
                    Some(slot) => *slot = entry,
                    None => {
                        self.map.insert(key.clone(), entry);
                    }
                }
                Reply::Ok
            }
            Command::Del { keys } => {
                let mut removed = 0;
                for key in keys {
                    if self.visible_ref(key, now_ms).is_some() {
                        removed += 1;
                    }
                    self.map.remove(key);
                }
                Reply::Int(removed)
            }
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

    #[test]
    fn wrong_type_changes_nothing() {
        let mut m = Model::new();
        m.execute(&cmd(&["SET", "s", "v"]), 0).unwrap();
        let before = m.clone();
        assert!(m.execute(&cmd(&["HSET", "s", "f", "v"]), 0).is_err());
        assert_eq!(m, before);
    }
}
