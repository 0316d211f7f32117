//! The in-memory meaning of each command: reads at the clock, and the
//! purge → check → promote → apply steps of a write (see `mod.rs`).
//!
//! `check` and `apply` never read the clock: replay runs them over the
//! logged commands at whatever time it happens to be, and must land on the
//! state the live store had. Expiry enters only through `purge_expired`,
//! which turns it into logged deletes.

use std::collections::{btree_map, BTreeMap};
use std::ops::Bound;

use super::accounting::promote_entry;
use super::command::{parse_int, Command, Reply, SetTtl};
use super::key::Key;
use super::row::{packed_bytes, Row};
use super::value::{Entry, Value};
use super::{Store, Window};
use crate::aof::Record;
use crate::{Error, Result};

pub(super) fn wrong_type(key: &[u8], want: &str) -> Error {
    Error::Invalid(format!("WRONGTYPE key {:?} does not hold a {want}", String::from_utf8_lossy(key)))
}

/// The reply of a write that turned out to change nothing.
pub(super) fn unchanged_reply(command: &Command) -> Reply {
    match command {
        Command::Window { .. } => Reply::Ok,
        _ => Reply::Int(0),
    }
}

/// A deadline `check` let through: never negative (see `past_deadline`).
fn logged_deadline(at_ms: i64) -> u64 {
    u64::try_from(at_ms).unwrap_or(0)
}

/// The write that `command` is at `now_ms` when its deadline is already
/// due — at or before the clock, negative included: Redis deletes the key
/// (`PEXPIREAT`, reply 1 if it was there) or the fields (`HPEXPIREAT`,
/// here the count of fields deleted), and so does the store, logging the
/// delete itself. Redis's `checkAlreadyExpired` is `when <= now`, while a
/// deadline set earlier keeps its key until the clock passes it
/// (`row::alive`, `now > when` expires): a deadline equal to the clock
/// deletes when it is *given*, not when it is reached. Replay never reads
/// the clock, so only the live path may decide that a deadline is due;
/// what it logs is a plain `DEL` or `HDEL`, and a logged `PEXPIREAT`
/// always names a deadline after the clock it was logged at.
pub(super) fn past_deadline(command: &Command, now_ms: u64) -> Option<Command> {
    let past = |at_ms: i64| {
        if canary!(ExpireAtNowKept) {
            // Planted: the old rule, a deadline equal to the clock kept.
            return i128::from(at_ms) < i128::from(now_ms);
        }
        i128::from(at_ms) <= i128::from(now_ms)
    };
    match command {
        Command::PExpireAt { key, at_ms } if past(*at_ms) => Some(Command::Del { keys: vec![key.clone()] }),
        Command::HPExpireAt { key, at_ms, fields } if past(*at_ms) => {
            Some(Command::HDel { key: key.clone(), fields: fields.clone() })
        }
        _ => None,
    }
}

/// The keys a write touches (whose expired state it must purge first).
/// A plain `SET` overwrites whatever was there, so it needs no purge; one
/// with options asks whether the key is there, and what it holds.
fn touched_keys(command: &Command) -> &[Vec<u8>] {
    match command {
        Command::Del { keys } => keys,
        Command::SetWith { key, .. }
        | Command::HSet { key, .. }
        | Command::HDel { key, .. }
        | Command::PExpireAt { key, .. }
        | Command::Persist { key }
        | Command::HPExpireAt { key, .. }
        | Command::HIncrBy { key, .. }
        | Command::HSetNx { key, .. } => std::slice::from_ref(key),
        _ => &[],
    }
}

impl Store {
    /// Answer a read at `now_ms`: expired keys and fields are absent, cold
    /// rows resolve through their segment without being promoted.
    pub(super) fn read(&self, command: &Command, now_ms: u64) -> Result<Reply> {
        match command {
            Command::Get { key } => match self.map.get(&key[..]) {
                Some(e) if !e.is_expired(now_ms) => match &e.value {
                    Value::Str(v) => Ok(Reply::Bulk(v.clone())),
                    // A hash whose every field has expired is no key at all.
                    Value::Hash(_) if self.visible_fields(key, now_ms)?.is_none() => Ok(Reply::Nil),
                    _ => Err(wrong_type(key, "string")),
                },
                _ => Ok(Reply::Nil),
            },
            Command::HGet { key, field } => match self.visible_fields(key, now_ms)? {
                None => Ok(Reply::Nil),
                Some(fields) => Ok(fields.get(field).map_or(Reply::Nil, |f| Reply::Bulk(f.value.to_vec()))),
            },
            Command::HGetAll { key } => {
                let pairs = self
                    .visible_fields(key, now_ms)?
                    .map(|fields| fields.iter().map(|(f, slot)| (f.to_vec(), slot.value.to_vec())).collect())
                    .unwrap_or_default();
                Ok(Reply::Pairs(pairs))
            }
            _ => self.read_more(command, now_ms),
        }
    }

    /// The reads issue 22 added, each on a cold row exactly as on a hot
    /// one: the stub resolves through its segment (`visible_fields`),
    /// never promoted.
    fn read_more(&self, command: &Command, now_ms: u64) -> Result<Reply> {
        match command {
            Command::Exists { keys } => {
                let mut count = 0;
                for key in keys {
                    count += i64::from(self.exists(key, now_ms)?);
                }
                Ok(Reply::Int(count))
            }
            Command::PTtl { key } => Ok(Reply::Int(match self.map.get(&key[..]) {
                _ if !self.exists(key, now_ms)? => -2,
                Some(Entry { expire_at_ms: Some(at), .. }) => i64::try_from(at - now_ms).unwrap_or(i64::MAX),
                _ => -1,
            })),
            Command::HMGet { key, fields } => {
                let row = self.visible_fields(key, now_ms)?;
                let value = |field: &Vec<u8>| row.as_ref().and_then(|row| row.get(field)).map(|f| f.value.to_vec());
                Ok(Reply::Array(fields.iter().map(value).collect()))
            }
            Command::HLen { key } => {
                if let Some(Entry { value: Value::Cold(stub), .. }) = self.map.get(&key[..]) {
                    if canary!(HlenStubWeight) {
                        // Planted: a cold row's field count read from the
                        // stub's accounting instead of its segment.
                        return Ok(Reply::Int(i64::try_from(stub.weight).unwrap_or(i64::MAX)));
                    }
                }
                let len = self.visible_fields(key, now_ms)?.map_or(0, |row| row.len());
                Ok(Reply::Int(len as i64))
            }
            Command::HExists { key, field } => {
                let row = self.visible_fields(key, now_ms)?;
                Ok(Reply::Int(i64::from(row.is_some_and(|row| row.contains_key(field)))))
            }
            _ => unreachable!("read() is called only for read commands"),
        }
    }

    /// Whether a reader at `now_ms` sees `key`: present, not expired, and
    /// (a hot hash) with a live field. A cold row always has fields and
    /// never a TTL, so its stub alone answers.
    fn exists(&self, key: &[u8], now_ms: u64) -> Result<bool> {
        Ok(match self.map.get(key) {
            None => false,
            Some(entry) if entry.is_expired(now_ms) => false,
            Some(Entry { value: Value::Hash(fields), .. }) => fields.values().any(|slot| !slot.is_expired(now_ms)),
            Some(_) => true,
        })
    }

    /// The live fields of the hash at `key`, or None if the key is absent,
    /// expired or has no live field. A string is a type error.
    pub(super) fn visible_fields(&self, key: &[u8], now_ms: u64) -> Result<Option<Row>> {
        let Some(entry) = self.map.get(key) else { return Ok(None) };
        if entry.is_expired(now_ms) {
            return Ok(None);
        }
        let fields = match &entry.value {
            Value::Str(_) => return Err(wrong_type(key, "hash")),
            Value::Cold(stub) => self.segments.read_row(key, *stub)?,
            Value::Hash(fields) => fields.iter().filter(|(_, slot)| !slot.is_expired(now_ms)).collect(),
        };
        Ok((!fields.is_empty()).then_some(fields))
    }

    /// Step 1: delete, and log the delete of, expired state the command
    /// touches: an expired key becomes `DEL key`, expired fields become
    /// `HDEL key field...`.
    pub(super) fn purge_expired(&mut self, command: &Command, now_ms: u64) -> Result<()> {
        let mut purges = Vec::new();
        for key in touched_keys(command) {
            let Some(entry) = self.map.get(&key[..]) else { continue };
            if entry.is_expired(now_ms) {
                purges.push(Command::Del { keys: vec![key.clone()] });
                continue;
            }
            if let Value::Hash(fields) = &entry.value {
                let expired: Vec<Vec<u8>> =
                    fields.iter().filter(|(_, slot)| slot.is_expired(now_ms)).map(|(f, _)| f.to_vec()).collect();
                if !expired.is_empty() {
                    purges.push(Command::HDel { key: key.clone(), fields: expired });
                }
            }
        }
        if purges.is_empty() {
            return Ok(());
        }
        let records: Vec<Record> = purges.iter().map(|c| Record::Command(c.to_args())).collect();
        self.log(&records, now_ms)?;
        for purge in purges {
            self.apply(&purge)?;
        }
        Ok(())
    }

    /// Step 2: validate `command` against the current state (which the
    /// purge left free of expired parts). `Ok(false)`: valid, but it would
    /// change nothing, so it is neither logged nor applied.
    pub(super) fn check(&self, command: &Command) -> Result<bool> {
        let changes = match command {
            Command::Set { .. } | Command::FlushAll => true,
            Command::SetWith { options, .. } => {
                if !super::command::is_logged_set(options) {
                    // The live path decides the options and logs a plain
                    // write (`set.rs`): this is no write a log holds.
                    return Err(Error::Invalid(format!("SET options decided live were logged: {options:?}")));
                }
                true
            }
            Command::Del { keys } => keys.iter().any(|k| self.map.contains_key(&k[..])),
            Command::HSet { key, .. } => match self.map.get(&key[..]).map(|e| &e.value) {
                Some(Value::Str(_)) => return Err(wrong_type(key, "hash")),
                _ => true,
            },
            Command::PExpireAt { at_ms, .. } | Command::HPExpireAt { at_ms, .. } if *at_ms < 0 => {
                // The live path turns a past deadline into a delete
                // (`past_deadline`), so a logged one is never negative.
                return Err(Error::Invalid(format!("a logged deadline is negative: {at_ms}")));
            }
            Command::HDel { key, fields } | Command::HPExpireAt { key, fields, .. } => {
                match self.map.get(&key[..]).map(|e| &e.value) {
                    None => false,
                    Some(Value::Str(_)) => return Err(wrong_type(key, "hash")),
                    Some(Value::Hash(row)) => fields.iter().any(|f| row.contains_key(f)),
                    Some(Value::Cold(stub)) => {
                        let row = self.segments.read_row(key, *stub)?;
                        fields.iter().any(|f| row.contains_key(f))
                    }
                }
            }
            Command::PExpireAt { key, .. } => self.map.contains_key(&key[..]),
            Command::HIncrBy { key, field, by } => self.incremented(key, field, *by).map(|_| true)?,
            Command::HSetNx { key, field, .. } => match self.map.get(&key[..]).map(|e| &e.value) {
                None => true,
                Some(Value::Str(_)) => return Err(wrong_type(key, "hash")),
                Some(Value::Hash(row)) => !row.contains_key(field),
                Some(Value::Cold(stub)) => !self.segments.read_row(key, *stub)?.contains_key(field),
            },
            Command::Persist { key } => self.map.get(&key[..]).is_some_and(|e| e.expire_at_ms.is_some()),
            Command::Window { table, column, span } => {
                self.windows.get(table).is_none_or(|w| w.column != *column || w.span != *span)
            }
            _ => unreachable!("check() is called only for writes"),
        };
        Ok(changes)
    }

    /// Step 3: a command that writes into a cold row promotes it first.
    /// `SET` and `DEL` replace or remove the row whole, so they only
    /// strand its record (in `apply`).
    pub(super) fn promote_for(&mut self, command: &Command) -> Result<()> {
        match command {
            Command::HSet { key, .. }
            | Command::HDel { key, .. }
            | Command::PExpireAt { key, .. }
            | Command::HPExpireAt { key, .. }
            | Command::HIncrBy { key, .. }
            | Command::HSetNx { key, .. } => self.promote(key),
            _ => Ok(()),
        }
    }

    /// Make the cold row at `key` hot again (no-op for a hot key). The
    /// segment read happens before anything changes, so a refused read
    /// leaves the store as it was.
    pub(super) fn promote(&mut self, key: &[u8]) -> Result<()> {
        let Some(entry) = self.map.get_mut(key) else { return Ok(()) };
        promote_entry(&mut self.segments, &mut self.used_memory, key, entry)
    }

    /// Step 5: change memory. Never reads the clock; after a passing
    /// `check` and `promote_for` it cannot fail (replay relies on it).
    /// Borrows the command and copies into the map only what it keeps
    /// (for HSET, through `apply_hset`, a short key not even that): the
    /// live path's command is the caller's, and cloning it whole to move
    /// it in cost every argument's allocation. Replay applies HSET, most
    /// of any log, from the log's own bytes; its other commands are parsed
    /// into a `Command` first and so copied twice.
    pub(super) fn apply(&mut self, command: &Command) -> Result<Reply> {
        let reply = match command {
            Command::Set { key, value } => self.apply_set(key, value, None),
            Command::SetWith { key, value, options } => {
                let Some(SetTtl::AtMs(at_ms)) = options.ttl else { unreachable!("check() passed a logged form") };
                self.apply_set(key, value, Some(logged_deadline(at_ms)))
            }
            Command::Del { keys } => {
                let removed = keys.iter().filter(|k| self.remove_key(k)).count();
                Reply::Int(removed as i64)
            }
            Command::HSet { key, pairs } => {
                let added = self.apply_hset(key, pairs.iter().map(|(f, v)| (f.as_slice(), v.as_slice())))?;
                Reply::Int(added)
            }
            Command::HDel { key, fields } => {
                let removed = self.apply_hdel(key, fields)?;
                Reply::Int(removed)
            }
            Command::PExpireAt { key, at_ms } => match self.map.get_mut(&key[..]) {
                None => Reply::Int(0),
                Some(entry) => {
                    assert!(!matches!(entry.value, Value::Cold(_)), "a stub never carries a TTL");
                    entry.expire_at_ms = Some(logged_deadline(*at_ms));
                    Reply::Int(1)
                }
            },
            Command::Persist { key } => {
                let had = self.map.get_mut(&key[..]).and_then(|e| e.expire_at_ms.take()).is_some();
                Reply::Int(i64::from(had))
            }
            Command::HPExpireAt { key, at_ms, fields } => {
                let mut set = 0;
                if let Some(Entry { value: Value::Hash(row), .. }) = self.map.get_mut(&key[..]) {
                    for field in fields {
                        if row.set_expiry(field, Some(logged_deadline(*at_ms))) {
                            set += 1;
                        }
                    }
                }
                Reply::Int(set)
            }
            Command::FlushAll => {
                self.remove_all();
                for window in self.windows.values_mut() {
                    window.max_seen = None;
                }
                Reply::Ok
            }
            Command::Window { table, column, span } => {
                let max_seen = self.scan_max_seen(table, column);
                self.windows.insert(table.clone(), Window { column: column.clone(), span: *span, max_seen });
                Reply::Ok
            }
            Command::HIncrBy { key, field, by } => Reply::Int(self.apply_hincrby(key, field, *by)?),
            Command::HSetNx { key, field, value } => Reply::Int(self.apply_hsetnx(key, field, value)?),
            _ => unreachable!("apply() is called only for writes"),
        };
        Ok(reply)
    }

    /// `SET` in its logged forms: the key's old entry, whatever it held,
    /// replaced by the string, with the deadline the live path decided.
    fn apply_set(&mut self, key: &[u8], value: &[u8], expire_at_ms: Option<u64>) -> Reply {
        self.remove_key(key);
        self.insert_entry(key, Entry { value: Value::Str(value.to_vec()), expire_at_ms });
        Reply::Ok
    }

    /// `HSETNX`: the field set only if the hash does not hold it yet; 1 if
    /// it was set.
    fn apply_hsetnx(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<i64> {
        let present =
            matches!(self.map.get(key), Some(Entry { value: Value::Hash(row), .. }) if row.contains_key(field));
        if present {
            return Ok(0);
        }
        self.apply_hset(key, std::iter::once((field, value)))
    }

    /// The value `HINCRBY key field by` leaves in the field, or why it is
    /// refused, in Redis's words: a string key, a field value that is not
    /// an integer as Redis spells them, a sum out of i64 range. An absent
    /// key or field counts 0. A cold row is read from its segment.
    fn incremented(&self, key: &[u8], field: &[u8], by: i64) -> Result<i64> {
        let current = match self.map.get(key).map(|e| &e.value) {
            None => None,
            Some(Value::Str(_)) => return Err(wrong_type(key, "hash")),
            Some(Value::Hash(row)) => row.get(field).map(|f| f.value.to_vec()),
            Some(Value::Cold(stub)) => self.segments.read_row(key, *stub)?.get(field).map(|f| f.value.to_vec()),
        };
        let current = match current {
            None => 0,
            Some(text) => parse_int(&text).ok_or_else(|| Error::Invalid("hash value is not an integer".into()))?,
        };
        current.checked_add(by).ok_or_else(|| Error::Invalid("increment or decrement would overflow".into()))
    }

    /// HINCRBY after a passing `check` and `promote_for`: the field takes
    /// the sum (through `apply_hset`, which also raises a window's mark
    /// when the field is its column) and keeps its TTL, as in Redis.
    fn apply_hincrby(&mut self, key: &[u8], field: &[u8], by: i64) -> Result<i64> {
        let value = self.incremented(key, field, by)?;
        let ttl = match self.map.get(key) {
            Some(Entry { value: Value::Hash(row), .. }) => row.get(field).and_then(|f| f.expire_at_ms),
            _ => None,
        };
        let text = value.to_string();
        self.apply_hset(key, std::iter::once((field, text.as_bytes())))?;
        if let (Some(at), Some(Entry { value: Value::Hash(row), .. })) = (ttl, self.map.get_mut(key)) {
            row.set_expiry(field, Some(at));
        }
        Ok(value)
    }

    /// HSET with one map lookup. It refuses a string and promotes a cold
    /// row itself, so replay can skip `check` and `promote_for` for it
    /// (the live path still runs them first, to refuse before logging).
    /// The key and pairs are borrowed, so replay can pass them straight
    /// from the log: a new row is then the row's allocation and, for a key
    /// longer than a `Key` holds inline, the key's, no more.
    pub(super) fn apply_hset<'p>(
        &mut self,
        key: &[u8],
        pairs: impl Iterator<Item = (&'p [u8], &'p [u8])> + Clone,
    ) -> Result<i64> {
        let mut entry = self.map.entry(Key::new(key));
        if let btree_map::Entry::Occupied(occupied) = &mut entry {
            match occupied.get().value {
                Value::Str(_) => return Err(wrong_type(occupied.key(), "hash")),
                Value::Cold(_) => {
                    // Rare, and it reads a segment anyway: the copy of the
                    // key (the entry cannot lend it and itself at once) is
                    // noise.
                    let key = occupied.key().to_vec();
                    promote_entry(&mut self.segments, &mut self.used_memory, &key, occupied.get_mut())?;
                }
                Value::Hash(_) => {}
            }
        }
        for (field, value) in pairs.clone() {
            note_window_value(&mut self.windows, entry.key(), field, value);
        }
        // Bytes charged and refunded, settled once the entry is let go.
        let mut charged_bytes = 0u64;
        let mut refunded_bytes = 0u64;
        let row = match entry {
            btree_map::Entry::Vacant(vacant) => {
                charged_bytes += vacant.key().len() as u64;
                let size_bytes = pairs.clone().map(|(field, value)| packed_bytes(field, value)).sum();
                let row = Row::with_capacity_bytes(size_bytes);
                let entry = vacant.insert(Entry { value: Value::Hash(row), expire_at_ms: None });
                let Value::Hash(row) = &mut entry.value else { unreachable!("inserted as a hash") };
                row
            }
            btree_map::Entry::Occupied(occupied) => {
                let Value::Hash(row) = &mut occupied.into_mut().value else { unreachable!("checked above") };
                row
            }
        };
        let mut added = 0;
        for (field, value) in pairs {
            let value_len_bytes = value.len() as u64;
            let field_len_bytes = field.len() as u64;
            match row.insert(field, value, None) {
                Some(old_value_len_bytes) => {
                    refunded_bytes += old_value_len_bytes as u64;
                    charged_bytes += value_len_bytes;
                }
                None => {
                    charged_bytes += field_len_bytes + value_len_bytes;
                    added += 1;
                }
            }
        }
        self.charge(charged_bytes);
        self.refund(refunded_bytes);
        Ok(added)
    }

    fn apply_hdel(&mut self, key: &[u8], fields: &[Vec<u8>]) -> Result<i64> {
        let Some(entry) = self.map.get_mut(key) else { return Ok(0) };
        let Value::Hash(row) = &mut entry.value else {
            return Err(wrong_type(key, "hash"));
        };
        let mut removed = 0;
        let mut refunded_bytes = 0u64;
        for field in fields {
            if let Some(old_value_len_bytes) = row.remove(field) {
                refunded_bytes += (field.len() + old_value_len_bytes) as u64;
                removed += 1;
            }
        }
        let emptied = row.is_empty();
        self.refund(refunded_bytes);
        if emptied {
            // The last field gone: the key goes too (no empty hashes).
            self.remove_key(key);
        }
        Ok(removed)
    }

    /// The highest window-column value among the hot rows of `table`.
    fn scan_max_seen(&self, table: &[u8], column: &[u8]) -> Option<i64> {
        let prefix = table_prefix(table);
        self.map
            .range::<[u8], _>((Bound::Included(&prefix[..]), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(_, e)| match &e.value {
                Value::Hash(row) => row.get(column).and_then(|f| parse_int(f.value)),
                _ => None,
            })
            .max()
    }
}

/// Raise the high-water mark of every window whose table holds `key` and
/// whose column is `field`. A free function over the windows alone, so
/// `apply_hset` can call it while it holds an entry of the map.
fn note_window_value(windows: &mut BTreeMap<Vec<u8>, Window>, key: &[u8], field: &[u8], value: &[u8]) {
    for (table, window) in windows.iter_mut() {
        if window.column == field && table_holds(table, key) {
            if let Some(v) = parse_int(value) {
                window.max_seen = Some(window.max_seen.map_or(v, |m| m.max(v)));
            }
        }
    }
}

/// `table:` — the key prefix of a table's rows.
pub(super) fn table_prefix(table: &[u8]) -> Vec<u8> {
    let mut prefix = table.to_vec();
    prefix.push(b':');
    prefix
}

/// Whether `key` is a row of `table`.
pub(super) fn table_holds(table: &[u8], key: &[u8]) -> bool {
    key.len() > table.len() && key.starts_with(table) && key[table.len()] == b':'
}
