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
        let upper = match upper.get_mut(..name.len()) {
            Some(upper) => {
                upper.copy_from_slice(name);
                upper.make_ascii_uppercase();
                &upper[..]
            }
            None => &[][..],
        };
        let n = args.len();
        let arg = |i: usize| args[i].as_ref();
        let a = |i: usize| arg(i).to_vec();
        let all_from = |i: usize| args[i..].iter().map(|arg| arg.as_ref().to_vec()).collect::<Vec<_>>();
        let command = match upper {
            b"SET" => {
                arity("SET", n, n == 3)?;
                Command::Set { key: a(1), value: a(2) }
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
            b"WINDOW" => {
                arity("WINDOW", n, n == 4)?;
                let span = parse_i64(arg(3))?;
                if span < 0 {
                    return Err(Error::Invalid(format!("window span is negative: {span}")));
                }
                if arg(1).is_empty() {
                    return Err(Error::Invalid("window table name is empty".into()));
                }
                Command::Window { table: a(1), column: a(2), span }
            }
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
            Command::HIncrBy { by, .. } => by.to_string(),
            _ => String::new(),
        };
        let mut args: Vec<&[u8]> = Vec::with_capacity(self.arg_count());
        match self {
            Command::Set { key, value } => args.extend([&b"SET"[..], key, value]),
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
        }
    }
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
    fn names_are_case_insensitive() {
        assert_eq!(Command::parse(&args(&["get", "k"])).unwrap(), Command::Get { key: b"k".to_vec() });
    }

    fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..8)
    }

    fn keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
        proptest::collection::vec(arb_bytes(), 1..4)
    }

    fn arb_command() -> impl Strategy<Value = Command> {
        prop_oneof![
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
