//! An operation's line: how a [`PlannedOp`] prints (its index, its crash
//! point, then its words) and parses back. The line is the repro's unit:
//! `corpus/regressions/` and a shrunk `.ops` file hold such lines, so
//! every operation the generator can draw must print as a line that parses
//! back to it, arguments a line cannot hold (empty, 64 MiB) included.
//! Kept apart from the generator because the line is read back where no
//! generator runs (replays, the fuzz corpus).

use std::fmt;

use engine::store::Command;
use engine::Phase;

use super::{Op, PlannedOp};
use simulator::op_line::{parse_head, write_head};

impl fmt::Display for PlannedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_head(f, self.index, self.crash)?;
        match &self.op {
            Op::Cmd(command) => {
                for arg in command.to_args() {
                    write!(f, " {}", Shown(&arg))?;
                }
                Ok(())
            }
            Op::Args(args) => {
                write!(f, " ARGS")?;
                for arg in args {
                    write!(f, " {}", Shown(arg))?;
                }
                Ok(())
            }
            Op::Evict => write!(f, " EVICT"),
            Op::Rewrite => write!(f, " REWRITE"),
            Op::Sync => write!(f, " SYNC"),
            Op::Advance(ms) => write!(f, " ADVANCE {ms}"),
            Op::Crash => write!(f, " CRASH"),
            Op::Restart => write!(f, " RESTART"),
            Op::SecondOpen => write!(f, " SECOND-OPEN"),
            Op::Kill => write!(f, " KILL"),
            // As the command it stands for prints, without making it.
            Op::OversizedSet { key, value_bytes, byte } => {
                write!(f, " SET {} {}", Shown(key), Repeat(*value_bytes, *byte))
            }
        }
    }
}

/// An argument as an operation line prints it: as it is, but for the two
/// the line could not hold — an empty one (`@empty`) and a long run of one
/// byte (an oversized value: 64 MiB do not make a line; see [`Repeat`]).
/// Drawn tokens never start with `@`.
struct Shown<'a>(&'a [u8]);

/// A run of `count` bytes `byte` as a line prints it: `@zeros:<count>` for
/// zeros (a NUL would not print), else `@repeat:<count>:<byte>` (drawn
/// bytes are letters and digits).
struct Repeat(usize, u8);

impl fmt::Display for Repeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Repeat(count, 0) => write!(f, "@zeros:{count}"),
            Repeat(count, byte) => write!(f, "@repeat:{count}:{}", char::from(*byte)),
        }
    }
}

/// Runs at least this long print as `@repeat:...`.
const REPEAT_MIN_BYTES: usize = 64;

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => write!(f, "@empty"),
            [first @ (0 | 0x21..=0x7e), rest @ ..]
                if rest.len() + 1 >= REPEAT_MIN_BYTES && rest.iter().all(|b| b == first) =>
            {
                write!(f, "{}", Repeat(self.0.len(), *first))
            }
            bytes => write!(f, "{}", String::from_utf8_lossy(bytes)),
        }
    }
}

/// An argument of an operation line, as [`Shown`] printed it.
fn read_arg(word: &str) -> Result<Vec<u8>, String> {
    if word == "@empty" {
        return Ok(Vec::new());
    }
    match read_repeat(word)? {
        Some((count, byte)) => Ok(vec![byte; count]),
        None => Ok(word.as_bytes().to_vec()),
    }
}

/// The count and byte of a `@repeat:<count>:<byte>` or `@zeros:<count>`
/// word ([`Repeat`]), or `None` for any other word.
fn read_repeat(word: &str) -> Result<Option<(usize, u8)>, String> {
    let (count, byte) = if let Some(count) = word.strip_prefix("@zeros:") {
        (count, 0)
    } else if let Some(run) = word.strip_prefix("@repeat:") {
        let (count, byte) = run.split_once(':').ok_or(format!("bad repeat {word:?}"))?;
        // One printable byte: a zero run is spelled `@zeros:`.
        let &[byte @ 0x21..=0x7e] = byte.as_bytes() else { return Err(format!("bad repeat byte {word:?}")) };
        (count, byte)
    } else {
        return Ok(None);
    };
    let count: usize = count.parse().map_err(|_| format!("bad repeat count {word:?}"))?;
    // An oversized write is a little over the frame limit: never more.
    if count > 2 * engine::frame::MAX_FRAME_PAYLOAD_BYTES {
        return Err(format!("repeat too long {word:?}"));
    }
    Ok(Some((count, byte)))
}

/// `SET key @repeat:<count>:<byte>` (or `@zeros:<count>`) over the frame
/// limit, read as the recipe [`Op::OversizedSet`] (what the generator draws), not made.
fn read_oversized_set(key: &str, value: &str) -> Result<Option<Op>, String> {
    let Some((value_bytes, byte)) = read_repeat(value)? else { return Ok(None) };
    let key = read_arg(key)?;
    Ok(super::oversized::is_oversized(key.len(), value_bytes).then_some(Op::OversizedSet { key, value_bytes, byte }))
}

impl PlannedOp {
    /// Parse a line printed by `Display`.
    pub fn parse(line: &str) -> Result<PlannedOp, String> {
        let (index, crash, rest) = parse_head(line, &Phase::NAMES)?;
        let op = match rest.as_slice() {
            ["EVICT"] => Op::Evict,
            ["REWRITE"] => Op::Rewrite,
            ["SYNC"] => Op::Sync,
            ["CRASH"] => Op::Crash,
            ["RESTART"] => Op::Restart,
            ["SECOND-OPEN"] => Op::SecondOpen,
            ["KILL"] => Op::Kill,
            ["ADVANCE", ms] => Op::Advance(ms.parse().map_err(|_| format!("bad advance {ms:?}"))?),
            ["ARGS", args @ ..] if !args.is_empty() => {
                Op::Args(args.iter().map(|a| read_arg(a)).collect::<Result<_, _>>()?)
            }
            args => {
                if let ["SET", key, value] = args {
                    if let Some(op) = read_oversized_set(key, value)? {
                        return Ok(PlannedOp { index, op, crash });
                    }
                }
                let args: Vec<Vec<u8>> = args.iter().map(|a| read_arg(a)).collect::<Result<_, _>>()?;
                Op::Cmd(Command::parse(&args).map_err(|e| format!("{line:?}: {e}"))?)
            }
        };
        Ok(PlannedOp { index, op, crash })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Overrides};
    use crate::workload::generate;

    #[test]
    fn every_op_prints_and_parses_back() {
        for seed in 0..32 {
            let config = Config::from_seed(seed, Overrides::default());
            for planned in generate(&config) {
                let line = planned.to_string();
                assert_eq!(PlannedOp::parse(&line).unwrap(), planned, "{line}");
            }
        }
    }

    /// An oversized value prints as its run, zeros (what the generator
    /// draws) as `@zeros:` and another byte (lines saved before) as
    /// `@repeat:`, and both read back as the recipe; a run of a byte a
    /// line cannot hold is refused.
    #[test]
    fn oversized_values_print_as_their_run_and_read_back() {
        let value_bytes = crate::workload::oversized::one_over_value_bytes(2);
        for (byte, word) in [(0, format!("@zeros:{value_bytes}")), (b'x', format!("@repeat:{value_bytes}:x"))] {
            let planned =
                PlannedOp { index: 3, op: Op::OversizedSet { key: b"k0".to_vec(), value_bytes, byte }, crash: None };
            assert_eq!(planned.to_string(), format!("3 SET k0 {word}"));
            assert_eq!(PlannedOp::parse(&planned.to_string()), Ok(planned));
        }
        for word in ["@repeat:70:", "@repeat:70:xy", "@repeat:70:\u{7f}", "@zeros:", "@zeros:x"] {
            assert!(read_repeat(word).is_err(), "{word}");
        }
        assert_eq!(read_arg("@zeros:64"), Ok(vec![0u8; 64]));
    }

    #[test]
    fn bad_lines_are_refused_with_a_reason() {
        for line in ["", "x SET a b", "1 @mark=nowhere EVICT", "1 ADVANCE soon", "1 FROB"] {
            assert!(PlannedOp::parse(line).is_err(), "{line}");
        }
    }
}
