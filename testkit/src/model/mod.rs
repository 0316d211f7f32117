//! The reference model: the store's logical behaviour as a plain map. Its
//! semantics — what each command reads, answers and leaves — live in this
//! file and nowhere else.
//!
//! It shares no code with the store beyond the command and value *types*
//! (and reads the borrowed views the store lends for comparison,
//! `engine::store::EntryView`, which filter fields by the store's expiry
//! rule, not this one's): no log, no segments, no eviction, no purge —
//! expiry is simply "hidden from view". Property tests and the simulator run the same commands
//! through both and demand equal replies and equal logical dumps, so a bug
//! has to be made twice, in two different shapes, to go unseen.
//!
//! Beside it is machinery that exists only for the simulator's checking
//! speed, and adds no meaning: writes that can be taken back exactly
//! (`undo.rs`), so a checker reaches earlier states without copying the
//! model; and comparisons over the store's borrowed views (`compare.rs`),
//! so a dump's entry or the store's own row is read where it lies, that say what comparing dumps would say without
//! building one. Writes change entries in place rather than copy them;
//! `tests.rs` holds that model to a copying one, and every undo and
//! comparison to the plain operations they stand for.

mod args;
mod compare;
#[cfg(test)]
mod tests;
mod undo;

use std::collections::BTreeMap;

use engine::store::{Command, LogicalEntry, LogicalFields, LogicalValue, Reply, SetCondition, SetOptions, SetTtl};
use engine::{Error, Result};

pub use args::{refusal_of, ArgsRefusal};
pub use compare::{CountInOrder, ShowsInOrder};
pub use undo::Undo;

/// Logical content, with expired keys and fields possibly still present
/// (they are filtered at every look).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    map: BTreeMap<Vec<u8>, LogicalEntry>,
}

/// Redis's expiry rule, written out for the model: a deadline still to
/// come or equal to the clock keeps the key; only a passed one hides it.
fn alive(at_ms: Option<u64>, now_ms: u64) -> bool {
    match at_ms {
        None => true,
        Some(at) => now_ms <= at,
    }
}

/// A deadline as the model stores it, or `None` if it is already due at
/// `now_ms` — at or before the clock, negative ones always: Redis then
/// deletes instead (`checkAlreadyExpired`: `when <= now`). A deadline
/// kept this way is strictly ahead, and [`alive`] keeps its key through
/// the millisecond it names.
fn future_deadline(at_ms: i64, now_ms: u64) -> Option<u64> {
    let at = u64::try_from(at_ms).ok()?;
    (at > now_ms).then_some(at)
}

/// Redis's reply to an integer it does not spell so.
pub const NOT_AN_INTEGER: &str = "value is not an integer or out of range";

/// Redis's integer spelling, written out for the model apart from the
/// store's parser: `0`, or an optional `-` and a digit string not
/// starting with `0`, whose value fits an i64 (checked in i128, which
/// twenty digits cannot overflow).
pub fn redis_integer(text: &[u8]) -> Option<i64> {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let canonical = text == b"0"
        || (!digits.is_empty() && digits.len() <= 20 && digits[0] != b'0' && digits.iter().all(u8::is_ascii_digit));
    if !canonical {
        return None;
    }
    let magnitude = digits.iter().fold(0i128, |n, d| n * 10 + i128::from(d - b'0'));
    let value = if digits.len() < text.len() { -magnitude } else { magnitude };
    i64::try_from(value).ok()
}

/// Where a command's integer argument sits, by the command's name (any
/// case), for the commands that take one.
fn integer_argument(args: &[Vec<u8>]) -> Option<&[u8]> {
    let name = args.first()?.to_ascii_uppercase();
    let at = match name.as_slice() {
        b"PEXPIREAT" | b"HPEXPIREAT" => 2,
        b"WINDOW" | b"HINCRBY" => 3,
        _ => return None,
    };
    args.get(at).map(Vec::as_slice)
}

/// Whether Redis refuses `args` for an integer it does not spell so
/// (`+5`, `007`, `-0`, out of range): the reply is then Redis's
/// `value is not an integer or out of range` and nothing changes.
pub fn refuses_integer_in(args: &[Vec<u8>]) -> bool {
    integer_argument(args).is_some_and(|text| redis_integer(text).is_none())
}

/// The one limit the engine declares on what a write may carry: its log
/// record, `4 + Σ (4 + argument bytes)` counting the name, must fit a
/// frame (`engine::frame::MAX_FRAME_PAYLOAD_BYTES`, 64 MiB). For the writes
/// the store logs as they are given (`SET`, `HSET`), the record's bytes if
/// they are over it: the store refuses such a write and changes nothing.
/// (The simulator draws oversized writes of these two only; a write the
/// store logs in another shape is not predicted here.)
fn oversized_write(command: &Command) -> Option<u64> {
    // Summed from the lengths, with no argument list made: the model asks
    // this of every SET and HSET.
    let arg_bytes = |arg: &[u8]| 4 + arg.len() as u64;
    let bytes = match command {
        Command::Set { key, value } => 4 + arg_bytes(b"SET") + arg_bytes(key) + arg_bytes(value),
        Command::HSet { key, pairs } => {
            let pair_bytes: u64 = pairs.iter().map(|(field, value)| arg_bytes(field) + arg_bytes(value)).sum();
            4 + arg_bytes(b"HSET") + arg_bytes(key) + pair_bytes
        }
        _ => return None,
    };
    (bytes > engine::frame::MAX_FRAME_PAYLOAD_BYTES as u64).then_some(bytes)
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
    /// [`engine::store::Store::logical_dump`].
    pub fn dump(&self, now_ms: u64) -> BTreeMap<Vec<u8>, LogicalEntry> {
        self.map.keys().filter_map(|k| self.visible(k, now_ms).map(|e| (k.clone(), e))).collect()
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

    /// The refusals the model knows, the store's too: a command that
    /// meets a visible key of the other type (WRONGTYPE), and an
    /// `HINCRBY` whose field holds no integer or whose sum overflows.
    fn refusal(&self, command: &Command, now_ms: u64) -> Option<Error> {
        if let Some(bytes) = oversized_write(command) {
            return Some(Error::Invalid(format!("a write of {bytes} bytes is over the log's frame limit")));
        }
        if let Command::SetWith { key, options, .. } = command {
            return self.set_refusal(key, options, now_ms);
        }
        let (key, wants_hash) = match command {
            Command::Get { key } => (key, false),
            Command::HGet { key, .. }
            | Command::HGetAll { key }
            | Command::HSet { key, .. }
            | Command::HDel { key, .. }
            | Command::HPExpireAt { key, .. }
            | Command::HMGet { key, .. }
            | Command::HLen { key }
            | Command::HExists { key, .. }
            | Command::HIncrBy { key, .. }
            | Command::HSetNx { key, .. } => (key, true),
            Command::Set { .. }
            | Command::SetWith { .. }
            | Command::Del { .. }
            | Command::PExpireAt { .. }
            | Command::Persist { .. }
            | Command::FlushAll
            | Command::Window { .. }
            | Command::Exists { .. }
            | Command::PTtl { .. } => return None,
        };
        let is_hash = matches!(self.visible_ref(key, now_ms)?.value, LogicalValue::Hash(_));
        if is_hash != wants_hash {
            return Some(wrong_type());
        }
        let Command::HIncrBy { field, by, .. } = command else { return None };
        self.increment(key, field, *by, now_ms).err()
    }

    /// Why Redis refuses `SET key value options` at `now_ms`: a relative
    /// TTL whose deadline overflows an i64 (Redis's `invalid expire time`),
    /// or `GET` of a key that holds a hash (WRONGTYPE); else `None`.
    fn set_refusal(&self, key: &[u8], options: &SetOptions, now_ms: u64) -> Option<Error> {
        if let Some(SetTtl::AfterMs(ms)) = options.ttl {
            if i64::try_from(i128::from(now_ms) + i128::from(ms)).is_err() {
                return Some(Error::Invalid(engine::store::INVALID_EXPIRE.into()));
            }
        }
        let holds_hash =
            matches!(self.visible_ref(key, now_ms), Some(LogicalEntry { value: LogicalValue::Hash(_), .. }));
        (options.get && holds_hash).then(wrong_type)
    }

    /// `SET key value options`, after [`Model::set_refusal`] passed, as
    /// Redis means it: `NX`/`XX` look at the visible key; `GET` answers
    /// its old string (nil if none), set or not; the TTL is the clock plus
    /// `PX`, or `PXAT`, or the visible key's own (`KEEPTTL`), or none. An
    /// explicit deadline at or before the clock leaves no key, as
    /// `PEXPIREAT`'s does; a kept one is the key's, which was alive.
    fn set_with(&mut self, key: &[u8], value: &[u8], options: &SetOptions, now_ms: u64) -> Reply {
        let visible = self.visible_ref(key, now_ms);
        let old = match visible {
            Some(LogicalEntry { value: LogicalValue::Str(old), .. }) => Reply::Bulk(old.clone()),
            _ => Reply::Nil,
        };
        let go = match options.condition {
            None => true,
            Some(SetCondition::Nx) => visible.is_none(),
            Some(SetCondition::Xx) => visible.is_some(),
        };
        let reply = if options.get { old } else { Reply::Ok };
        if !go {
            return if options.get { reply } else { Reply::Nil };
        }
        let (deadline, due) = match options.ttl {
            None => (None, false),
            Some(SetTtl::Keep) => (visible.and_then(|e| e.expire_at_ms), false),
            Some(SetTtl::AfterMs(ms)) => {
                let at = i128::from(now_ms) + i128::from(ms);
                (u64::try_from(at).ok(), at <= i128::from(now_ms))
            }
            Some(SetTtl::AtMs(at)) => (u64::try_from(at).ok(), i128::from(at) <= i128::from(now_ms)),
        };
        if due {
            self.map.remove(key);
        } else {
            let entry = LogicalEntry { value: LogicalValue::Str(value.to_vec()), expire_at_ms: deadline };
            self.map.insert(key.to_vec(), entry);
        }
        reply
    }

    /// The value `HINCRBY` leaves in `field` of the visible hash at `key`
    /// (an absent key or field counts 0), or Redis's refusal: a value that
    /// is not an integer as Redis spells them, or a sum out of i64 range
    /// (summed in i128, which two i64s cannot overflow).
    fn increment(&self, key: &[u8], field: &[u8], by: i64, now_ms: u64) -> Result<i64> {
        let current = match self.live_fields(key, now_ms).and_then(|fields| fields.get(field)) {
            Some((value, at)) if alive(*at, now_ms) => {
                redis_integer(value).ok_or_else(|| Error::Invalid("hash value is not an integer".into()))?
            }
            _ => 0,
        };
        i64::try_from(i128::from(current) + i128::from(by))
            .map_err(|_| Error::Invalid("increment or decrement would overflow".into()))
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
            Command::Get { key } => self.get(key, now_ms),
            Command::HGet { key, field } => self.hget(key, field, now_ms),
            Command::HGetAll { key } => self.hgetall(key, now_ms),
            Command::Set { key, value } => {
                self.set(key, value);
                Reply::Ok
            }
            Command::SetWith { key, value, options } => self.set_with(key, value, options, now_ms),
            Command::Del { keys } => Reply::Int(self.del(keys, now_ms, |_, _| {})),
            Command::HSet { key, pairs } => self.hset(key, pairs, now_ms),
            Command::HDel { key, fields } => self.hdel(key, fields, now_ms),
            Command::HPExpireAt { key, at_ms, fields } => self.hpexpireat(key, *at_ms, fields, now_ms),
            Command::PExpireAt { key, at_ms } => self.pexpireat(key, *at_ms, now_ms),
            Command::Persist { key } => self.persist(key, now_ms),
            Command::FlushAll => {
                self.map.clear();
                Reply::Ok
            }
            Command::Window { .. } => Reply::Ok,
            _ => self.execute_more(command, now_ms)?,
        };
        Ok(reply)
    }

    /// GET, after [`Model::refusal`] ruled out a hash.
    fn get(&self, key: &[u8], now_ms: u64) -> Reply {
        match self.visible_ref(key, now_ms).map(|e| &e.value) {
            None => Reply::Nil,
            Some(LogicalValue::Str(v)) => Reply::Bulk(v.clone()),
            Some(LogicalValue::Hash(_)) => unreachable!("refusal() checked the type"),
        }
    }

    /// HGET: the field's value while both the hash and the field live.
    fn hget(&self, key: &[u8], field: &[u8], now_ms: u64) -> Reply {
        match self.live_fields(key, now_ms) {
            None => Reply::Nil,
            Some(fields) => match fields.get(field) {
                Some((v, at)) if alive(*at, now_ms) => Reply::Bulk(v.clone()),
                _ => Reply::Nil,
            },
        }
    }

    /// HGETALL: every live field, in field order.
    fn hgetall(&self, key: &[u8], now_ms: u64) -> Reply {
        Reply::Pairs(self.live_fields(key, now_ms).map_or_else(Vec::new, |fields| {
            fields.iter().filter(|(_, (_, at))| alive(*at, now_ms)).map(|(f, (v, _))| (f.clone(), v.clone())).collect()
        }))
    }

    /// HSET: the fields set, with no TTL; the reply counts the new ones.
    fn hset(&mut self, key: &[u8], pairs: &[(Vec<u8>, Vec<u8>)], now_ms: u64) -> Reply {
        // Not visible (absent, expired, or a hash with no live field): a
        // fresh hash with no TTL replaces whatever is stored.
        let fields = self.hash_for_write(key, now_ms);
        let mut added = 0;
        for (field, value) in pairs {
            if fields.insert(field.clone(), (value.clone(), None)).is_none() {
                added += 1;
            }
        }
        Reply::Int(added)
    }

    /// HDEL: the reply counts the fields removed; a hash left with no
    /// field is no key.
    fn hdel(&mut self, key: &[u8], fields: &[Vec<u8>], now_ms: u64) -> Reply {
        if self.visible_mut(key, now_ms).is_none() {
            return Reply::Int(0);
        }
        let live = self.hash_mut(key);
        let removed = fields.iter().filter(|f| live.remove(*f).is_some()).count();
        if live.is_empty() {
            self.map.remove(key);
        }
        Reply::Int(removed as i64)
    }

    /// PERSIST: a visible key's TTL removed. A key with no TTL is left
    /// untouched, dead fields and all.
    fn persist(&mut self, key: &[u8], now_ms: u64) -> Reply {
        if self.visible_ref(key, now_ms).is_some_and(|e| e.expire_at_ms.is_some()) {
            let entry = self.visible_mut(key, now_ms).expect("visible a moment ago");
            entry.expire_at_ms = None;
            Reply::Int(1)
        } else {
            Reply::Int(0)
        }
    }

    /// PEXPIREAT: the visible key takes the deadline, or (a deadline
    /// already past, negative included) is deleted, as Redis does.
    fn pexpireat(&mut self, key: &[u8], at_ms: i64, now_ms: u64) -> Reply {
        match (self.visible_mut(key, now_ms), future_deadline(at_ms, now_ms)) {
            (None, _) => Reply::Int(0),
            (Some(entry), Some(at)) => {
                entry.expire_at_ms = Some(at);
                Reply::Int(1)
            }
            (Some(_), None) => {
                self.map.remove(key);
                Reply::Int(1)
            }
        }
    }

    /// HPEXPIREAT: each live field named takes the deadline, or (a
    /// deadline already past) is deleted; the reply counts them.
    fn hpexpireat(&mut self, key: &[u8], at_ms: i64, fields: &[Vec<u8>], now_ms: u64) -> Reply {
        if self.visible_mut(key, now_ms).is_none() {
            return Reply::Int(0);
        }
        let live = self.hash_mut(key);
        let mut set = 0;
        for field in fields {
            match (live.get_mut(field), future_deadline(at_ms, now_ms)) {
                (None, _) => {}
                (Some(slot), Some(at)) => {
                    slot.1 = Some(at);
                    set += 1;
                }
                (Some(_), None) => {
                    live.remove(field);
                    set += 1;
                }
            }
        }
        if live.is_empty() {
            self.map.remove(key);
        }
        Reply::Int(set)
    }

    /// The commands issue 22 added, after [`Model::refusal`] passed.
    fn execute_more(&mut self, command: &Command, now_ms: u64) -> Result<Reply> {
        let live =
            |fields: &LogicalFields, field: &[u8]| fields.get(field).filter(|(_, at)| alive(*at, now_ms)).cloned();
        Ok(match command {
            Command::Exists { keys } => {
                Reply::Int(keys.iter().filter(|key| self.visible_ref(key, now_ms).is_some()).count() as i64)
            }
            Command::PTtl { key } => Reply::Int(match self.visible_ref(key, now_ms) {
                None => -2,
                Some(LogicalEntry { expire_at_ms: None, .. }) => -1,
                Some(LogicalEntry { expire_at_ms: Some(at), .. }) => (i128::from(*at) - i128::from(now_ms)) as i64,
            }),
            Command::HMGet { key, fields } => {
                let found =
                    |field: &Vec<u8>| self.live_fields(key, now_ms).and_then(|f| live(f, field)).map(|(v, _)| v);
                Reply::Array(fields.iter().map(found).collect())
            }
            Command::HLen { key } => Reply::Int(
                self.live_fields(key, now_ms).map_or(0, |f| f.values().filter(|(_, at)| alive(*at, now_ms)).count())
                    as i64,
            ),
            Command::HExists { key, field } => {
                Reply::Int(i64::from(self.live_fields(key, now_ms).and_then(|f| live(f, field)).is_some()))
            }
            Command::HIncrBy { key, field, by } => {
                let value = self.increment(key, field, *by, now_ms)?;
                let ttl = self.live_fields(key, now_ms).and_then(|f| live(f, field)).and_then(|(_, at)| at);
                self.hash_for_write(key, now_ms).insert(field.clone(), (value.to_string().into_bytes(), ttl));
                Reply::Int(value)
            }
            Command::HSetNx { key, field, value } => {
                if self.live_fields(key, now_ms).and_then(|f| live(f, field)).is_some() {
                    return Ok(Reply::Int(0));
                }
                self.hash_for_write(key, now_ms).insert(field.clone(), (value.clone(), None));
                Reply::Int(1)
            }
            _ => unreachable!("execute() answers every other command"),
        })
    }

    /// The fields of the hash at `key` for a write at `now_ms`: the
    /// visible hash, its dead fields dropped, or (not visible: absent,
    /// expired, no live field) a fresh hash with no TTL in its place.
    fn hash_for_write(&mut self, key: &[u8], now_ms: u64) -> &mut LogicalFields {
        if self.visible_mut(key, now_ms).is_none() {
            let fresh = LogicalEntry { value: LogicalValue::Hash(BTreeMap::new()), expire_at_ms: None };
            self.map.insert(key.to_vec(), fresh);
        }
        self.hash_mut(key)
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
