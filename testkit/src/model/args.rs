//! Raw argument lists, read as Redis reads them: which ones Redis refuses
//! before running anything, and with what words. The simulator draws bad
//! input (wrong arity, misspelled integers, `SET` options that do not
//! read, a `WINDOW` that declares nothing) and holds the store's refusal
//! to this prediction.
//!
//! Written from Redis's command table and documentation, apart from the
//! store's parser (`engine::store::Command::parse`): the two must agree
//! on every list the simulator draws, or one of them is wrong.

use super::{redis_integer, NOT_AN_INTEGER};

/// Why Redis refuses an argument list, as the words the refusal must
/// contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgsRefusal {
    /// A name no command has.
    UnknownCommand,
    /// Too few or too many arguments for the command.
    WrongArity,
    /// An integer argument Redis does not spell so.
    NotAnInteger,
    /// A `SET` option that does not read, or two that conflict.
    SyntaxError,
    /// A `SET` TTL not above zero, or one whose milliseconds overflow.
    InvalidExpire,
    /// `WINDOW` with a negative span.
    NegativeSpan,
    /// `WINDOW` with an empty table name.
    EmptyTable,
}

impl ArgsRefusal {
    /// Words the store's refusal must contain.
    pub fn words(self) -> &'static str {
        match self {
            ArgsRefusal::UnknownCommand => "unknown command",
            ArgsRefusal::WrongArity => "wrong number of arguments",
            ArgsRefusal::NotAnInteger => NOT_AN_INTEGER,
            ArgsRefusal::SyntaxError => "syntax error",
            ArgsRefusal::InvalidExpire => "invalid expire time in 'set' command",
            ArgsRefusal::NegativeSpan => "negative",
            ArgsRefusal::EmptyTable => "empty",
        }
    }
}

/// Redis's arity rule for `name`: `Fixed(n)` arguments counting the name,
/// or `AtLeast(n)`; `HSET` also needs its field-value pairs whole.
enum Arity {
    Fixed(usize),
    AtLeast(usize),
}

fn arity_of(name: &[u8]) -> Option<Arity> {
    Some(match name {
        b"GET" | b"HGETALL" | b"PERSIST" | b"PTTL" | b"HLEN" => Arity::Fixed(2),
        b"HGET" | b"PEXPIREAT" | b"HEXISTS" => Arity::Fixed(3),
        b"HINCRBY" | b"HSETNX" | b"WINDOW" => Arity::Fixed(4),
        b"FLUSHALL" => Arity::Fixed(1),
        b"DEL" | b"EXISTS" => Arity::AtLeast(2),
        b"SET" | b"HDEL" | b"HMGET" => Arity::AtLeast(3),
        b"HSET" | b"HPEXPIREAT" => Arity::AtLeast(4),
        _ => return None,
    })
}

/// The refusal Redis gives `args` before running anything, or `None` if
/// the list reads as a command. Checked in Redis's order: the name, the
/// arity, then the arguments left to right.
pub fn refusal_of(args: &[Vec<u8>]) -> Option<ArgsRefusal> {
    let name = args.first()?.to_ascii_uppercase();
    let arity_ok = match arity_of(&name) {
        None => return Some(ArgsRefusal::UnknownCommand),
        Some(Arity::Fixed(n)) => args.len() == n,
        Some(Arity::AtLeast(n)) => args.len() >= n && (name != b"HSET" || args.len().is_multiple_of(2)),
    };
    if !arity_ok {
        return Some(ArgsRefusal::WrongArity);
    }
    if super::refuses_integer_in(args) {
        return Some(ArgsRefusal::NotAnInteger);
    }
    match name.as_slice() {
        b"WINDOW" if redis_integer(&args[3]).is_some_and(|span| span < 0) => Some(ArgsRefusal::NegativeSpan),
        b"WINDOW" if args[1].is_empty() => Some(ArgsRefusal::EmptyTable),
        b"SET" => set_options_refusal(&args[3..]),
        _ => None,
    }
}

/// `SET`'s options read left to right: `NX` and `XX` exclude each other,
/// `GET` goes with anything, and at most one kind of TTL (`EX`, `PX`,
/// `EXAT`, `PXAT` followed by a number above zero — in milliseconds, an
/// i64 — or `KEEPTTL`), any of them repeatable.
fn set_options_refusal(options: &[Vec<u8>]) -> Option<ArgsRefusal> {
    let (mut condition, mut ttl_kind): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        let word = option.to_ascii_uppercase();
        match word.as_slice() {
            b"GET" => continue,
            b"NX" | b"XX" => {
                if condition.as_ref().is_some_and(|had| *had != word) {
                    return Some(ArgsRefusal::SyntaxError);
                }
                condition = Some(word);
                continue;
            }
            b"EX" | b"PX" | b"EXAT" | b"PXAT" => {
                let Some(number) = rest.next() else { return Some(ArgsRefusal::SyntaxError) };
                let Some(n) = redis_integer(number) else { return Some(ArgsRefusal::NotAnInteger) };
                let ms = if word.starts_with(b"E") { i128::from(n) * 1_000 } else { i128::from(n) };
                if n <= 0 || i64::try_from(ms).is_err() {
                    return Some(ArgsRefusal::InvalidExpire);
                }
            }
            b"KEEPTTL" => {}
            _ => return Some(ArgsRefusal::SyntaxError),
        }
        if ttl_kind.as_ref().is_some_and(|had| *had != word) {
            return Some(ArgsRefusal::SyntaxError);
        }
        ttl_kind = Some(word);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn refusals_are_redis_refusals_in_redis_order() {
        for (words, want) in [
            (&["FROB", "k"][..], Some(ArgsRefusal::UnknownCommand)),
            (&["GET"][..], Some(ArgsRefusal::WrongArity)),
            (&["GET", "k", "x"][..], Some(ArgsRefusal::WrongArity)),
            (&["HSET", "k", "f", "v", "g"][..], Some(ArgsRefusal::WrongArity)),
            (&["HSET", "k", "f", "v", "g", "w"][..], None),
            (&["DEL", "a", "b", "c"][..], None),
            (&["PEXPIREAT", "k", "+5", "x"][..], Some(ArgsRefusal::WrongArity)),
            (&["PEXPIREAT", "k", "+5"][..], Some(ArgsRefusal::NotAnInteger)),
            (&["WINDOW", "t", "ts", "-1"][..], Some(ArgsRefusal::NegativeSpan)),
            (&["WINDOW", "", "ts", "-1"][..], Some(ArgsRefusal::NegativeSpan)),
            (&["WINDOW", "", "ts", "1"][..], Some(ArgsRefusal::EmptyTable)),
            (&["WINDOW", "t", "", "1"][..], None),
            (&["SET", "", ""][..], None),
            (&["set", "k", "v", "nx", "get", "px", "5"][..], None),
            (&["SET", "k", "v", "NX", "XX"][..], Some(ArgsRefusal::SyntaxError)),
            (&["SET", "k", "v", "EX", "5", "PX", "5"][..], Some(ArgsRefusal::SyntaxError)),
            (&["SET", "k", "v", "EX"][..], Some(ArgsRefusal::SyntaxError)),
            (&["SET", "k", "v", "EX", "soon"][..], Some(ArgsRefusal::NotAnInteger)),
            (&["SET", "k", "v", "PXAT", "0"][..], Some(ArgsRefusal::InvalidExpire)),
            (&["SET", "k", "v", "EX", "9223372036854776"][..], Some(ArgsRefusal::InvalidExpire)),
            (&["SET", "k", "v", "LATER"][..], Some(ArgsRefusal::SyntaxError)),
        ] {
            assert_eq!(refusal_of(&args(words)), want, "{words:?}");
        }
    }
}
