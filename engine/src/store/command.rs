//! Commands and replies: the store's language, parsed from binary-safe
//! argument lists.
//!
//! The same argument lists are what the AOF logs, so parsing is also how
//! replay reads the log back: a command that parses and applies live will
//! parse and apply identically at replay. Every error here is a caller
//! mistake and changes nothing.

use crate::{Error, Result};

/// One parsed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `SET key value`: a string; clears any TTL.
    Set {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `SET key value` with at least one of Redis's options (see
    /// [`SetOptions`]); a plain `SET key value` is [`Command::Set`]. The
    /// store decides the options live (`store/set.rs`) and logs what they
    /// came to: a plain `SET`, a `SET key value PXAT ms` with the deadline
    /// ahead of the clock, a `DEL`, or nothing.
    SetWith {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
        /// The options; never all absent.
        options: SetOptions,
    },
    /// `GET key`.
    Get {
        /// The key.
        key: Vec<u8>,
    },
    /// `DEL key [key ...]`.
    Del {
        /// The keys, in order.
        keys: Vec<Vec<u8>>,
    },
    /// `HSET key field value [field value ...]`.
    HSet {
        /// The key.
        key: Vec<u8>,
        /// Field-value pairs, applied in order (a repeated field: last wins).
        pairs: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// `HGET key field`.
    HGet {
        /// The key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
    },
    /// `HDEL key field [field ...]`.
    HDel {
        /// The key.
        key: Vec<u8>,
        /// The fields.
        fields: Vec<Vec<u8>>,
    },
    /// `HGETALL key`.
    HGetAll {
        /// The key.
        key: Vec<u8>,
    },
    /// `PEXPIREAT key unix_ms`: the key expires once the clock passes
    /// that instant; a deadline already due — at or before the clock,
    /// negative included — deletes it, as in Redis (the store logs a `DEL`).
    PExpireAt {
        /// The key.
        key: Vec<u8>,
        /// Absolute deadline, Unix milliseconds (may be negative: past).
        at_ms: i64,
    },
    /// `PERSIST key`: remove the key's TTL.
    Persist {
        /// The key.
        key: Vec<u8>,
    },
    /// `HPEXPIREAT key unix_ms field [field ...]`: field TTLs; a deadline
    /// at or before the clock deletes the fields (the store logs an `HDEL`).
    HPExpireAt {
        /// The key.
        key: Vec<u8>,
        /// Absolute deadline, Unix milliseconds (may be negative: past).
        at_ms: i64,
        /// The fields.
        fields: Vec<Vec<u8>>,
    },
    /// `FLUSHALL`: delete every key (window declarations stay).
    FlushAll,
    /// `EXISTS key [key ...]`: how many of the keys exist (a key named
    /// twice counts twice, as in Redis).
    Exists {
        /// The keys, in order.
        keys: Vec<Vec<u8>>,
    },
    /// `PTTL key`: milliseconds until the key expires (0 at its deadline);
    /// -1 if it has no TTL, -2 if there is no such key.
    PTtl {
        /// The key.
        key: Vec<u8>,
    },
    /// `HMGET key field [field ...]`: each field's value or nil.
    HMGet {
        /// The key.
        key: Vec<u8>,
        /// The fields, in order.
        fields: Vec<Vec<u8>>,
    },
    /// `HLEN key`: the number of live fields.
    HLen {
        /// The key.
        key: Vec<u8>,
    },
    /// `HEXISTS key field`: 1 if the field is there, else 0.
    HExists {
        /// The key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
    },
    /// `HINCRBY key field increment`: add to the field's integer value
    /// (an absent field counts 0), keeping the field's TTL; the reply is
    /// the new value.
    HIncrBy {
        /// The key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
        /// What to add (may be negative).
        by: i64,
    },
    /// `HSETNX key field value`: set the field only if it is absent;
    /// 1 if it was set, else 0.
    HSetNx {
        /// The key.
        key: Vec<u8>,
        /// The field.
        field: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// `WINDOW table column span`: declare a windowed table.
    Window {
        /// The table: rows are the hash keys `table:<anything>`.
        table: Vec<u8>,
        /// The numeric window column.
        column: Vec<u8>,
        /// Rows whose column is below `max_seen - span` are out of window.
        span: i64,
    },
}

/// `SET`'s options, as Redis spells them: `NX | XX`, `GET`, and one of
/// `EX s | PX ms | EXAT s | PXAT ms | KEEPTTL`, in any order and any case.
/// Seconds are kept as milliseconds (`EX 10` is `PX 10000`), so a command
/// prints back as `PX`/`PXAT` and parses to itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// `NX` (only if absent) or `XX` (only if present).
    pub condition: Option<SetCondition>,
    /// The key's TTL after the set; `None`: no TTL (Redis's default).
    pub ttl: Option<SetTtl>,
    /// `GET`: reply the old string value (or nil) instead of `OK`.
    pub get: bool,
}

/// `SET`'s `NX` / `XX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetCondition {
    /// Set only if the key is absent.
    Nx,
    /// Set only if the key is present.
    Xx,
}

/// `SET`'s TTL option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTtl {
    /// `PX ms` (or `EX s`): the deadline is the clock plus this, above 0.
    AfterMs(i64),
    /// `PXAT ms` (or `EXAT s`): an absolute Unix deadline, above 0; at or
    /// before the clock it leaves no key (PEXPIREAT's rule).
    AtMs(i64),
    /// `KEEPTTL`: the key keeps the TTL it had.
    Keep,
}

/// Redis's reply to a `SET` option it cannot read, or two that conflict.
pub const SYNTAX_ERROR: &str = "syntax error";

/// Redis's reply to a `SET` TTL that is not above zero, or overflows.
pub const INVALID_EXPIRE: &str = "invalid expire time in 'set' command";

/// Parse `SET key value` options, `args` being everything after the
/// value (at least one). Errors name the argument (counted from 1 after
/// the command's name) and what is wrong with it.
fn parse_set_options<A: AsRef<[u8]>>(args: &[A]) -> Result<SetOptions> {
    assert!(!args.is_empty(), "a SET with options has at least one");
    let syntax = |at: usize, why: &str| Error::Invalid(format!("{SYNTAX_ERROR}: SET argument {}: {why}", at + 3));
    let mut options = SetOptions::default();
    // Which TTL word set `options.ttl` (Redis refuses two different ones,
    // `EX` then `PX` included, though both are kept in milliseconds).
    let mut ttl_word: Option<[u8; 7]> = None;
    let mut at = 0;
    while at < args.len() {
        let option_at = at;
        let mut word = [0u8; 7];
        let option = args[at].as_ref();
        let upper = match word.get_mut(..option.len()) {
            Some(word) => {
                word.copy_from_slice(option);
                word.make_ascii_uppercase();
                &word[..]
            }
            None => &[][..],
        };
        let condition = match upper {
            b"NX" => Some(SetCondition::Nx),
            b"XX" => Some(SetCondition::Xx),
            _ => None,
        };
        if let Some(condition) = condition {
            if options.condition.is_some_and(|had| had != condition) {
                return Err(syntax(at, "NX and XX together"));
            }
            options.condition = Some(condition);
            at += 1;
            continue;
        }
        if upper == b"GET" {
            options.get = true;
            at += 1;
            continue;
        }
        let ttl = match upper {
            b"KEEPTTL" => SetTtl::Keep,
            b"EX" | b"PX" | b"EXAT" | b"PXAT" => {
                let Some(number) = args.get(at + 1) else { return Err(syntax(at, "a TTL option without its number")) };
                let n = parse_i64(number.as_ref())?;
                let ms_per_unit = if upper[0] == b'E' { 1_000 } else { 1 };
                let ms = n.checked_mul(ms_per_unit).filter(|&ms| n > 0 && ms > 0);
                let ms = ms.ok_or_else(|| Error::Invalid(INVALID_EXPIRE.into()))?;
                at += 1;
                if upper.ends_with(b"AT") {
                    SetTtl::AtMs(ms)
                } else {
                    SetTtl::AfterMs(ms)
                }
            }
            _ => return Err(syntax(at, "not a SET option")),
        };
        if ttl_word.is_some_and(|had| had != word) {
            return Err(syntax(option_at, "two different TTL options"));
        }
        ttl_word = Some(word);
        options.ttl = Some(ttl);
        at += 1;
    }
    assert_ne!(options, SetOptions::default());
    Ok(options)
}

/// A command's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Done.
    Ok,
    /// No such key or field.
    Nil,
    /// A count or a flag.
    Int(i64),
    /// A value.
    Bulk(Vec<u8>),
    /// A hash's fields and values, in field order.
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
    /// Values or nils, one per field asked (`HMGET`).
    Array(Vec<Option<Vec<u8>>>),
}

fn arity(name: &str, argc: usize, ok: bool) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid(format!("wrong number of arguments for '{name}' ({} given)", argc - 1)))
    }
}

/// The longest command name; a longer first argument names no command.
const NAME_MAX_BYTES: usize = 10;

/// Redis's reply to an argument that is not an integer as it spells them.
pub const NOT_AN_INTEGER: &str = "value is not an integer or out of range";

/// Parse an integer as Redis does (`string2ll`): an optional `-`, then
/// decimal digits with no leading zero (`0` alone is fine, `-0` is not),
/// in i64 range. No `+`, no spaces, no leading zeros: Rust's own parser
/// takes `+5` and `007`, which Redis refuses.
pub fn parse_int(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    match digits {
        [] => return None,
        [b'0'] => return (!negative).then_some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    let mut value: i64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        // Accumulate negatively: i64::MIN has no positive twin.
        value = value.checked_mul(10)?.checked_sub(i64::from(digit - b'0'))?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

/// [`parse_int`] for a command's argument: refused with Redis's text.
pub fn parse_i64(bytes: &[u8]) -> Result<i64> {
    parse_int(bytes).ok_or_else(|| Error::Invalid(NOT_AN_INTEGER.into()))
}

/// A command parsed but for an `HSET`, whose arguments stay borrowed:
/// what replay applies, since most of a log is `HSET`s and copying each
/// field and value into its own `Vec` only to pack them into a row was
/// most of replay's allocations.
#[derive(Debug)]
pub(super) enum Parsed<'a, A> {
    /// `HSET key field value [field value ...]`, its arity checked.
    HSet {
        /// The key.
        key: &'a [u8],
        /// Fields and values alternating, an even number of them.
        pairs: &'a [A],
    },
    /// Any other command.
    Other(Command),
}

/// Append the argument list of `HSET key field value …` to `args`: the
/// one place its layout is spelled, for [`Command::with_args`] and for a
/// rewrite that logs a row's fields straight from the row.
pub(super) fn hset_args<'a>(
    key: &'a [u8],
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    args: &mut Vec<&'a [u8]>,
) {
    args.extend([&b"HSET"[..], key]);
    for (field, value) in pairs {
        args.extend([field, value]);
    }
}

/// `name` in capitals, written into `buf`: empty (no command's name) when
/// it is longer than any, so a long name costs no allocation either.
fn upper_name<'b>(name: &[u8], buf: &'b mut [u8; NAME_MAX_BYTES]) -> &'b [u8] {
    match buf.get_mut(..name.len()) {
        Some(upper) => {
            upper.copy_from_slice(name);
            upper.make_ascii_uppercase();
            upper
        }
        None => &[],
    }
}

/// `WINDOW table column span`: a negative span or an empty table name is
/// refused.
fn parse_window<A: AsRef<[u8]>>(args: &[A]) -> Result<Command> {
    let n = args.len();
    let arg = |i: usize| args[i].as_ref();
    arity("WINDOW", n, n == 4)?;
    let span = parse_i64(arg(3))?;
    if span < 0 {
        return Err(Error::Invalid(format!("window span is negative: {span}")));
    }
    if arg(1).is_empty() {
        return Err(Error::Invalid("window table name is empty".into()));
    }
    Ok(Command::Window { table: arg(1).to_vec(), column: arg(2).to_vec(), span })
}

impl Command {
    /// Parse `args` (the first is the command name, any case). Each
    /// argument the command keeps is copied once; nothing else allocates.
    pub fn parse<A: AsRef<[u8]>>(args: &[A]) -> Result<Command> {
        Ok(match Command::parse_borrowed(args)? {
            Parsed::HSet { key, pairs } => Command::HSet {
                key: key.to_vec(),
                pairs: pairs.chunks_exact(2).map(|p| (p[0].as_ref().to_vec(), p[1].as_ref().to_vec())).collect(),
            },
            Parsed::Other(command) => command,
        })
    }

    /// [`Command::parse`], leaving an `HSET` borrowed from `args`.
    pub(super) fn parse_borrowed<A: AsRef<[u8]>>(args: &[A]) -> Result<Parsed<'_, A>> {
        let Some(name) = args.first().map(AsRef::as_ref) else {
            return Err(Error::Invalid("empty command".into()));
        };
        let mut upper = [0u8; NAME_MAX_BYTES];
        let upper = upper_name(name, &mut upper);
        let n = args.len();
        let arg = |i: usize| args[i].as_ref();
        let a = |i: usize| arg(i).to_vec();
        let all_from = |i: usize| args[i..].iter().map(|arg| arg.as_ref().to_vec()).collect::<Vec<_>>();
        let command = match upper {
            b"SET" => {
                arity("SET", n, n >= 3)?;
                match &args[3..] {
                    [] => Command::Set { key: a(1), value: a(2) },
                    more => Command::SetWith { key: a(1), value: a(2), options: parse_set_options(more)? },
                }
            }
            b"GET" => {
                arity("GET", n, n == 2)?;
                Command::Get { key: a(1) }
            }
            b"DEL" => {
                arity("DEL", n, n >= 2)?;
                Command::Del { keys: all_from(1) }
            }
            b"HSET" => {
                arity("HSET", n, n >= 4 && n.is_multiple_of(2))?;
                return Ok(Parsed::HSet { key: arg(1), pairs: &args[2..] });
            }
            b"HGET" => {
                arity("HGET", n, n == 3)?;
                Command::HGet { key: a(1), field: a(2) }
            }
            b"HDEL" => {
                arity("HDEL", n, n >= 3)?;
                Command::HDel { key: a(1), fields: all_from(2) }
            }
            b"HGETALL" => {
                arity("HGETALL", n, n == 2)?;
                Command::HGetAll { key: a(1) }
            }
            b"PEXPIREAT" => {
                arity("PEXPIREAT", n, n == 3)?;
                Command::PExpireAt { key: a(1), at_ms: parse_i64(arg(2))? }
            }
            b"PERSIST" => {
                arity("PERSIST", n, n == 2)?;
                Command::Persist { key: a(1) }
            }
            b"HPEXPIREAT" => {
                arity("HPEXPIREAT", n, n >= 4)?;
                Command::HPExpireAt { key: a(1), at_ms: parse_i64(arg(2))?, fields: all_from(3) }
            }
            b"FLUSHALL" => {
                arity("FLUSHALL", n, n == 1)?;
                Command::FlushAll
            }
            b"WINDOW" => parse_window(args)?,
            _ => Command::parse_more(upper, name, args)?,
        };
        Ok(Parsed::Other(command))
    }

    /// The commands issue 22 added (`upper`: the name in capitals), or
    /// an unknown command.
    fn parse_more<A: AsRef<[u8]>>(upper: &[u8], name: &[u8], args: &[A]) -> Result<Command> {
        let n = args.len();
        let arg = |i: usize| args[i].as_ref();
        let a = |i: usize| arg(i).to_vec();
        let all_from = |i: usize| args[i..].iter().map(|arg| arg.as_ref().to_vec()).collect::<Vec<_>>();
        Ok(match upper {
            b"EXISTS" => {
                arity("EXISTS", n, n >= 2)?;
                Command::Exists { keys: all_from(1) }
            }
            b"PTTL" => {
                arity("PTTL", n, n == 2)?;
                Command::PTtl { key: a(1) }
            }
            b"HMGET" => {
                arity("HMGET", n, n >= 3)?;
                Command::HMGet { key: a(1), fields: all_from(2) }
            }
            b"HLEN" => {
                arity("HLEN", n, n == 2)?;
                Command::HLen { key: a(1) }
            }
            b"HEXISTS" => {
                arity("HEXISTS", n, n == 3)?;
                Command::HExists { key: a(1), field: a(2) }
            }
            b"HINCRBY" => {
                arity("HINCRBY", n, n == 4)?;
                Command::HIncrBy { key: a(1), field: a(2), by: parse_i64(arg(3))? }
            }
            b"HSETNX" => {
                arity("HSETNX", n, n == 4)?;
                Command::HSetNx { key: a(1), field: a(2), value: a(3) }
            }
            _ => {
                let name = String::from_utf8_lossy(name).to_ascii_uppercase();
                return Err(Error::Invalid(format!("unknown command '{name}'")));
            }
        })
    }

    /// Whether the command may change state (and so is logged).
    pub fn is_write(&self) -> bool {
        !matches!(
            self,
            Command::Get { .. }
                | Command::HGet { .. }
                | Command::HGetAll { .. }
                | Command::Exists { .. }
                | Command::PTtl { .. }
                | Command::HMGet { .. }
                | Command::HLen { .. }
                | Command::HExists { .. }
        )
    }

    /// The argument list that parses back to this command: what the AOF
    /// stores.
    pub fn to_args(&self) -> Vec<Vec<u8>> {
        self.with_args(|args| args.iter().map(|arg| arg.to_vec()).collect())
    }

    /// Call `f` with the argument list that parses back to this command,
    /// borrowed from the command (one allocation: the list of slices), so
    /// the live write path can log a command without copying it.
    pub fn with_args<R>(&self, f: impl FnOnce(&[&[u8]]) -> R) -> R {
        // The one argument that is not bytes the command holds: a number.
        let number = match self {
            Command::PExpireAt { at_ms, .. } | Command::HPExpireAt { at_ms, .. } => at_ms.to_string(),
            Command::Window { span, .. } => span.to_string(),
            Command::SetWith {
                options: SetOptions { ttl: Some(SetTtl::AfterMs(ms) | SetTtl::AtMs(ms)), .. }, ..
            } => ms.to_string(),
            Command::HIncrBy { by, .. } => by.to_string(),
            _ => String::new(),
        };
        let mut args: Vec<&[u8]> = Vec::with_capacity(self.arg_count());
        match self {
            Command::Set { key, value } => args.extend([&b"SET"[..], key, value]),
            Command::SetWith { key, value, options } => set_args(key, value, options, number.as_bytes(), &mut args),
            Command::Get { key } => args.extend([&b"GET"[..], key]),
            Command::Del { keys } => {
                args.push(b"DEL");
                args.extend(keys.iter().map(Vec::as_slice));
            }
            Command::HSet { key, pairs } => {
                hset_args(key, pairs.iter().map(|(field, value)| (field.as_slice(), value.as_slice())), &mut args);
            }
            Command::HGet { key, field } => args.extend([&b"HGET"[..], key, field]),
            Command::HDel { key, fields } => {
                args.extend([&b"HDEL"[..], key]);
                args.extend(fields.iter().map(Vec::as_slice));
            }
            Command::HGetAll { key } => args.extend([&b"HGETALL"[..], key]),
            Command::PExpireAt { key, .. } => args.extend([&b"PEXPIREAT"[..], key, number.as_bytes()]),
            Command::Persist { key } => args.extend([&b"PERSIST"[..], key]),
            Command::HPExpireAt { key, fields, .. } => {
                args.extend([&b"HPEXPIREAT"[..], key, number.as_bytes()]);
                args.extend(fields.iter().map(Vec::as_slice));
            }
            Command::FlushAll => args.push(b"FLUSHALL"),
            Command::Exists { keys } => {
                args.push(b"EXISTS");
                args.extend(keys.iter().map(Vec::as_slice));
            }
            Command::PTtl { key } => args.extend([&b"PTTL"[..], key]),
            Command::HMGet { key, fields } => {
                args.extend([&b"HMGET"[..], key]);
                args.extend(fields.iter().map(Vec::as_slice));
            }
            Command::HLen { key } => args.extend([&b"HLEN"[..], key]),
            Command::HExists { key, field } => args.extend([&b"HEXISTS"[..], key, field]),
            Command::HIncrBy { key, field, .. } => args.extend([&b"HINCRBY"[..], key, field, number.as_bytes()]),
            Command::HSetNx { key, field, value } => args.extend([&b"HSETNX"[..], key, field, value]),
            Command::Window { table, column, .. } => {
                args.extend([&b"WINDOW"[..], table, column, number.as_bytes()]);
            }
        }
        assert_eq!(args.len(), self.arg_count());
        f(&args)
    }

    /// The length of the command's argument list, its name included.
    fn arg_count(&self) -> usize {
        match self {
            Command::Set { .. } | Command::HGet { .. } | Command::PExpireAt { .. } | Command::HExists { .. } => 3,
            Command::Get { .. }
            | Command::HGetAll { .. }
            | Command::Persist { .. }
            | Command::PTtl { .. }
            | Command::HLen { .. } => 2,
            Command::HIncrBy { .. } | Command::HSetNx { .. } => 4,
            Command::Del { keys } | Command::Exists { keys } => 1 + keys.len(),
            Command::HMGet { fields, .. } => 2 + fields.len(),
            Command::HSet { pairs, .. } => 2 + 2 * pairs.len(),
            Command::HDel { fields, .. } => 2 + fields.len(),
            Command::HPExpireAt { fields, .. } => 3 + fields.len(),
            Command::FlushAll => 1,
            Command::Window { .. } => 4,
            Command::SetWith { options, .. } => {
                let ttl_words = match options.ttl {
                    None => 0,
                    Some(SetTtl::Keep) => 1,
                    Some(SetTtl::AfterMs(_) | SetTtl::AtMs(_)) => 2,
                };
                3 + usize::from(options.condition.is_some()) + usize::from(options.get) + ttl_words
            }
        }
    }
}

/// Append the argument list of `SET key value options…` to `args`, the
/// TTL's number spelled in `number`: `NX`/`XX`, then `GET`, then the TTL
/// as `PX`, `PXAT` or `KEEPTTL`.
fn set_args<'a>(key: &'a [u8], value: &'a [u8], options: &SetOptions, number: &'a [u8], args: &mut Vec<&'a [u8]>) {
    assert_ne!(*options, SetOptions::default(), "a SET without options is Command::Set");
    args.extend([&b"SET"[..], key, value]);
    match options.condition {
        Some(SetCondition::Nx) => args.push(b"NX"),
        Some(SetCondition::Xx) => args.push(b"XX"),
        None => {}
    }
    if options.get {
        args.push(b"GET");
    }
    match options.ttl {
        Some(SetTtl::AfterMs(_)) => args.extend([&b"PX"[..], number]),
        Some(SetTtl::AtMs(_)) => args.extend([&b"PXAT"[..], number]),
        Some(SetTtl::Keep) => args.push(b"KEEPTTL"),
        None => {}
    }
}

/// Whether `SET` options are in the one form a log holds (a lone `PXAT`
/// above zero).
pub(super) fn is_logged_set(options: &SetOptions) -> bool {
    matches!(options, SetOptions { condition: None, get: false, ttl: Some(SetTtl::AtMs(at_ms)) } if *at_ms > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn bad_commands_are_refused_with_a_reason() {
        for (words, needle) in [
            (&["SET", "k"][..], "wrong number"),
            (&["HSET", "k", "f"][..], "wrong number"),
            (&["PEXPIREAT", "k", "soon"][..], NOT_AN_INTEGER),
            (&["PEXPIREAT", "k", "+5"][..], NOT_AN_INTEGER),
            (&["PEXPIREAT", "k", "007"][..], NOT_AN_INTEGER),
            (&["HPEXPIREAT", "k", "-0", "f"][..], NOT_AN_INTEGER),
            (&["WINDOW", "t", "ts", "01"][..], NOT_AN_INTEGER),
            (&["HINCRBY", "k", "f", "+1"][..], NOT_AN_INTEGER),
            (&["HINCRBY", "k", "f"][..], "wrong number"),
            (&["HSETNX", "k", "f"][..], "wrong number"),
            (&["HMGET", "k"][..], "wrong number"),
            (&["EXISTS"][..], "wrong number"),
            (&["PTTL", "a", "b"][..], "wrong number"),
            (&["HLEN"][..], "wrong number"),
            (&["HEXISTS", "k"][..], "wrong number"),
            (&["WINDOW", "t", "ts", "-1"][..], "negative"),
            (&["FROB"][..], "unknown command"),
            (&["SET", "k", "v", "NX", "XX"][..], "syntax error: SET argument 4: NX and XX"),
            (&["SET", "k", "v", "EX", "1", "PX", "1"][..], "two different TTL options"),
            (&["SET", "k", "v", "KEEPTTL", "PXAT", "5"][..], "two different TTL options"),
            (&["SET", "k", "v", "EX"][..], "without its number"),
            (&["SET", "k", "v", "SOON"][..], "syntax error: SET argument 3: not a SET option"),
            (&["SET", "k", "v", "EX", "0"][..], INVALID_EXPIRE),
            (&["SET", "k", "v", "PXAT", "-5"][..], INVALID_EXPIRE),
            (&["SET", "k", "v", "EX", "9223372036854776"][..], INVALID_EXPIRE),
            (&["SET", "k", "v", "EX", "+5"][..], NOT_AN_INTEGER),
        ] {
            let err = Command::parse(&args(words)).unwrap_err().to_string();
            assert!(err.contains(needle), "{words:?}: {err}");
        }
        assert!(Command::parse::<&[u8]>(&[]).is_err());
        // No command name is longer than ten bytes, and none is accepted.
        let err = Command::parse(&args(&["HPEXPIREATX", "k"])).unwrap_err().to_string();
        assert!(err.contains("unknown command 'HPEXPIREATX'"), "{err}");
    }

    #[test]
    fn integers_parse_as_redis_parses_them() {
        for (text, want) in [
            ("0", Some(0)),
            ("5", Some(5)),
            ("-5", Some(-5)),
            ("10", Some(10)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("+5", None),
            ("007", None),
            ("00", None),
            ("-0", None),
            ("-007", None),
            ("", None),
            ("-", None),
            (" 5", None),
            ("5 ", None),
            ("5x", None),
            ("1e3", None),
        ] {
            assert_eq!(parse_int(text.as_bytes()), want, "{text:?}");
        }
        // A negative deadline is a deadline in the past, not a refusal.
        let parsed = Command::parse(&args(&["PEXPIREAT", "k", "-1"])).unwrap();
        assert_eq!(parsed, Command::PExpireAt { key: b"k".to_vec(), at_ms: -1 });
    }

    proptest! {
        #[test]
        fn canonical_integers_round_trip(n in any::<i64>()) {
            prop_assert_eq!(parse_int(n.to_string().as_bytes()), Some(n));
        }

        #[test]
        fn parse_int_never_takes_a_non_canonical_spelling(text in "[-+0-9 ]{0,22}") {
            if let Some(n) = parse_int(text.as_bytes()) {
                prop_assert_eq!(n.to_string(), text);
            }
        }
    }

    #[test]
    fn borrowed_and_owned_arguments_parse_alike() {
        let owned = args(&["hPexpireat", "k", "17", "f", "g"]);
        let borrowed: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let command = Command::parse(&borrowed).unwrap();
        assert_eq!(command, Command::parse(&owned).unwrap());
        assert_eq!(
            command,
            Command::HPExpireAt { key: b"k".to_vec(), at_ms: 17, fields: vec![b"f".to_vec(), b"g".to_vec()] }
        );
    }

    #[test]
    fn set_options_parse_as_redis_spells_them() {
        let set = |words: &[&str]| match Command::parse(&args(words)).unwrap() {
            Command::SetWith { options, .. } => options,
            other => panic!("{words:?}: {other:?}"),
        };
        assert_eq!(
            Command::parse(&args(&["SET", "k", "v"])).unwrap(),
            Command::Set { key: b"k".to_vec(), value: b"v".to_vec() }
        );
        let nx_get_ex = SetOptions { condition: Some(SetCondition::Nx), ttl: Some(SetTtl::AfterMs(10_000)), get: true };
        assert_eq!(set(&["SET", "k", "v", "ex", "10", "Get", "nx"]), nx_get_ex);
        assert_eq!(set(&["SET", "k", "v", "PX", "10000", "GET", "NX", "NX"]), nx_get_ex);
        assert_eq!(set(&["SET", "k", "v", "EXAT", "2"]).ttl, Some(SetTtl::AtMs(2_000)));
        assert_eq!(set(&["SET", "k", "v", "PX", "1", "PX", "2"]).ttl, Some(SetTtl::AfterMs(2)), "the last wins");
        assert_eq!(set(&["SET", "k", "v", "KEEPTTL", "XX"]).ttl, Some(SetTtl::Keep));
        // EX in seconds prints back as PX in milliseconds, and parses to itself.
        let command = Command::parse(&args(&["SET", "k", "v", "EX", "3"])).unwrap();
        assert_eq!(command.to_args(), args(&["SET", "k", "v", "PX", "3000"]));
    }

    #[test]
    fn names_are_case_insensitive() {
        assert_eq!(Command::parse(&args(&["get", "k"])).unwrap(), Command::Get { key: b"k".to_vec() });
    }

    fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..8)
    }

    fn keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
        proptest::collection::vec(arb_bytes(), 1..4)
    }

    fn arb_set_options() -> impl Strategy<Value = SetOptions> {
        let condition = prop_oneof![Just(None), Just(Some(SetCondition::Nx)), Just(Some(SetCondition::Xx))];
        let ttl = prop_oneof![
            Just(None),
            Just(Some(SetTtl::Keep)),
            (1i64..i64::MAX).prop_map(|ms| Some(SetTtl::AfterMs(ms))),
            (1i64..i64::MAX).prop_map(|ms| Some(SetTtl::AtMs(ms))),
        ];
        (condition, ttl, any::<bool>())
            .prop_map(|(condition, ttl, get)| SetOptions { condition, ttl, get })
            .prop_filter("some option", |options| *options != SetOptions::default())
    }

    fn arb_command() -> impl Strategy<Value = Command> {
        prop_oneof![
            (arb_bytes(), arb_bytes(), arb_set_options()).prop_map(|(key, value, options)| Command::SetWith {
                key,
                value,
                options
            }),
            (arb_bytes(), arb_bytes()).prop_map(|(key, value)| Command::Set { key, value }),
            keys().prop_map(|keys| Command::Del { keys }),
            (arb_bytes(), proptest::collection::vec((arb_bytes(), arb_bytes()), 1..4))
                .prop_map(|(key, pairs)| Command::HSet { key, pairs }),
            (arb_bytes(), keys()).prop_map(|(key, fields)| Command::HDel { key, fields }),
            (arb_bytes(), any::<i64>()).prop_map(|(key, at_ms)| Command::PExpireAt { key, at_ms }),
            (arb_bytes(), -(1i64 << 50)..1 << 50, keys()).prop_map(|(key, at_ms, fields)| Command::HPExpireAt {
                key,
                at_ms,
                fields
            }),
            arb_bytes().prop_map(|key| Command::Persist { key }),
            Just(Command::FlushAll),
            keys().prop_map(|keys| Command::Exists { keys }),
            arb_bytes().prop_map(|key| Command::PTtl { key }),
            (arb_bytes(), keys()).prop_map(|(key, fields)| Command::HMGet { key, fields }),
            arb_bytes().prop_map(|key| Command::HLen { key }),
            (arb_bytes(), arb_bytes()).prop_map(|(key, field)| Command::HExists { key, field }),
            (arb_bytes(), arb_bytes(), any::<i64>()).prop_map(|(key, field, by)| Command::HIncrBy { key, field, by }),
            (arb_bytes(), arb_bytes(), arb_bytes()).prop_map(|(key, field, value)| Command::HSetNx {
                key,
                field,
                value
            }),
            (arb_bytes().prop_filter("non-empty", |t| !t.is_empty()), arb_bytes(), 0i64..1000)
                .prop_map(|(table, column, span)| Command::Window { table, column, span }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn to_args_parses_back(command in arb_command()) {
            prop_assert_eq!(Command::parse(&command.to_args()).unwrap(), command);
        }
    }
}
