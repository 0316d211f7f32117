//! Integers spelled as Redis refuses to read them (`+5`, `05`, `-0`):
//! the workload draws them as bad input ([`super::Op::Args`]) and the fuzz
//! plan names them, so both spell and read them here, in one place.

use arbitrary::Arbitrary;
use engine::store::Command;

/// A way to spell an integer that Rust's parser may take and Redis
/// refuses (`value is not an integer or out of range`): the workload's
/// [`Op::Args`] draw one, and the fuzz plan names one.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misspelling {
    /// `+n`.
    Plus,
    /// One leading zero: `0n`, `-0n`.
    Zero,
    /// Two leading zeros.
    ZeroZero,
    /// `-0`, whatever the number.
    MinusZero,
}

impl Misspelling {
    /// Every misspelling, in declaration order.
    pub const ALL: [Misspelling; 4] =
        [Misspelling::Plus, Misspelling::Zero, Misspelling::ZeroZero, Misspelling::MinusZero];

    /// `n` spelled this way.
    pub fn spell(self, n: i64) -> Vec<u8> {
        let sign = if n < 0 { "-" } else { "" };
        let digits = n.unsigned_abs();
        match self {
            Misspelling::Plus => format!("+{n}"),
            Misspelling::Zero => format!("{sign}0{digits}"),
            Misspelling::ZeroZero => format!("{sign}00{digits}"),
            Misspelling::MinusZero => "-0".to_string(),
        }
        .into_bytes()
    }

    /// The first misspelling, and a number, that [`Misspelling::spell`]
    /// to exactly `text`, if any does.
    pub fn read(text: &[u8]) -> Option<(Misspelling, i64)> {
        let text = std::str::from_utf8(text).ok()?;
        Self::ALL.into_iter().find_map(|how| {
            let n = match how {
                Misspelling::Plus => text.strip_prefix('+')?.parse().ok()?,
                Misspelling::Zero | Misspelling::ZeroZero => {
                    let (sign, rest) = text.strip_prefix('-').map_or(("", text), |rest| ("-", rest));
                    let zeros = if how == Misspelling::Zero { 1 } else { 2 };
                    format!("{sign}{}", rest.get(zeros..)?).parse().ok()?
                }
                Misspelling::MinusZero => 0,
            };
            (how.spell(n) == text.as_bytes()).then_some((how, n))
        })
    }
}

/// The arguments of `command` (a `PEXPIREAT`, `HPEXPIREAT` or `HINCRBY`;
/// `None` for any other) with its integer argument spelled `how`.
pub fn misspelled(command: &Command, how: Misspelling) -> Option<Vec<Vec<u8>>> {
    let (at, n) = match command {
        Command::PExpireAt { at_ms, .. } | Command::HPExpireAt { at_ms, .. } => (2, *at_ms),
        Command::HIncrBy { by, .. } => (3, *by),
        _ => return None,
    };
    let mut args = command.to_args();
    args[at] = how.spell(n);
    Some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_misspelling_reads_back_and_redis_refuses_it() {
        for n in [0, 5, -5, 1_700_000_000_000, -1, i64::MAX, i64::MIN, i64::MIN + 1] {
            for how in Misspelling::ALL {
                let text = how.spell(n);
                let (read, m) = Misspelling::read(&text).unwrap();
                assert_eq!(read.spell(m), text);
                assert_eq!(testkit::model::redis_integer(&text), None, "{}", String::from_utf8_lossy(&text));
            }
        }
    }
}
