//! What a `crash-os` child tells its parent: one line on its standard
//! output per event — the engine opened (`ready`), an operation completed
//! with its answer (`ack`), or the engine failed (`failed`) — and how the
//! parent reads them back.
//!
//! Every line starts with [`TAG`], so anything else an engine prints on
//! standard output is ignored rather than misread. A line counts only once
//! its newline arrived: a kill can cut the last one short, and an
//! acknowledgement the parent never received whole is no acknowledgement
//! (the operation stays in flight). Answers are compact: a value in hex, a
//! scan and a reopened database's content as a count and a hash of their
//! `Debug` text (FNV, the trace's hash: the same in both processes), so a
//! line stays one `write` for all but the largest values.

use std::fmt;

use super::super::client::Reply;
use super::super::model::State;
use super::super::Rows;
use simulator::trace::hash_debug;

/// The first word of every line the child prints for its parent.
pub(super) const TAG: &str = "crash-os";

/// One event of the child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// The engine opened; operations follow.
    Ready,
    /// Operation `index` completed, answering `answer`.
    Ack {
        /// Its index in the workload.
        index: u64,
        /// What it answered.
        answer: Answer,
    },
    /// The engine failed with no fault injected: at operation `index`, or
    /// (`None`) while opening.
    Failed {
        /// The operation it failed in, if it had opened.
        index: Option<u64>,
        /// The error, on one line.
        message: String,
    },
}

/// What a completed operation answered, as the parent checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Nothing to check (a commit, an abort; a put or delete of an engine
    /// that does not say what it replaced).
    Done,
    /// A value, or its absence.
    Value(Option<Vec<u8>>),
    /// A scan: how many rows and the hash of them.
    Rows {
        /// Rows read.
        count: usize,
        /// `hash_debug` of the rows.
        hash: u64,
    },
    /// A clean close and reopen: the hash of the content it reopened to.
    Reopened {
        /// `hash_debug` of the whole committed content.
        hash: u64,
    },
}

impl Answer {
    /// The answer the engine's `reply` stands for.
    pub fn of_reply(reply: &Reply) -> Answer {
        match reply {
            Reply::Done => Answer::Done,
            Reply::Value(value) => Answer::Value(value.clone()),
            Reply::Rows(rows) => Answer::of_rows(rows),
            Reply::Busy => unreachable!("only a reader's step answers Busy, and crash-os carries those out itself"),
        }
    }

    /// A scan's answer.
    pub fn of_rows(rows: &Rows) -> Answer {
        Answer::Rows { count: rows.len(), hash: hash_debug(rows) }
    }

    /// A reopen's answer: the content it came back with.
    pub fn of_reopened(state: &State) -> Answer {
        Answer::Reopened { hash: hash_debug(state) }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Done => f.write_str("done"),
            Answer::Value(None) => f.write_str("value absent"),
            Answer::Value(Some(bytes)) if bytes.is_empty() => f.write_str("value empty"),
            Answer::Value(Some(bytes)) => {
                f.write_str("value ")?;
                bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Answer::Rows { count, hash } => write!(f, "rows {count} {hash:016x}"),
            Answer::Reopened { hash } => write!(f, "reopened {hash:016x}"),
        }
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Ready => write!(f, "{TAG} ready"),
            Line::Ack { index, answer } => write!(f, "{TAG} ack {index} {answer}"),
            Line::Failed { index, message } => {
                let at = index.map_or_else(|| "open".to_string(), |index| index.to_string());
                // One line, whatever the engine's message holds.
                let message = message.replace(['\n', '\r'], " / ");
                write!(f, "{TAG} failed {at} {message}")
            }
        }
    }
}

/// Read one whole line (its newline stripped): `None` if it is not the
/// child's (no [`TAG`]), else the event or what is wrong with it.
pub(super) fn parse(line: &str) -> Option<Result<Line, String>> {
    let rest = line.strip_prefix(TAG)?.strip_prefix(' ')?;
    let words: Vec<&str> = rest.splitn(3, ' ').collect();
    let parsed = match words.as_slice() {
        ["ready"] => Ok(Line::Ready),
        ["ack", index, answer] => {
            parse_index(index).and_then(|index| Ok(Line::Ack { index, answer: answer_of(answer)? }))
        }
        ["failed", "open", message] => Ok(Line::Failed { index: None, message: message.to_string() }),
        ["failed", index, message] => {
            parse_index(index).map(|index| Line::Failed { index: Some(index), message: message.to_string() })
        }
        _ => Err(String::new()),
    };
    Some(parsed.map_err(|why| format!("the child printed a line crash-os cannot read{why}: {line:?}")))
}

fn parse_index(word: &str) -> Result<u64, String> {
    word.parse().map_err(|_| format!(" (bad index {word:?})"))
}

fn answer_of(text: &str) -> Result<Answer, String> {
    let words: Vec<&str> = text.split(' ').collect();
    let hash = |word: &str| u64::from_str_radix(word, 16).map_err(|_| format!(" (bad hash {word:?})"));
    match words.as_slice() {
        ["done"] => Ok(Answer::Done),
        ["value", "absent"] => Ok(Answer::Value(None)),
        ["value", "empty"] => Ok(Answer::Value(Some(Vec::new()))),
        ["value", hex] => from_hex(hex).map(|bytes| Answer::Value(Some(bytes))),
        ["rows", count, word] => {
            let count = count.parse().map_err(|_| format!(" (bad row count {count:?})"))?;
            Ok(Answer::Rows { count, hash: hash(word)? })
        }
        ["reopened", word] => Ok(Answer::Reopened { hash: hash(word)? }),
        _ => Err(format!(" (unknown answer {text:?})")),
    }
}

fn from_hex(hex: &str) -> Result<Vec<u8>, String> {
    let bad = || format!(" (bad hex value of {} characters)", hex.len());
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return Err(bad());
    }
    (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(&hex[at..at + 2], 16).map_err(|_| bad())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_reads_back_as_itself() {
        let lines = [
            Line::Ready,
            Line::Ack { index: 0, answer: Answer::Done },
            Line::Ack { index: 7, answer: Answer::Value(None) },
            Line::Ack { index: 8, answer: Answer::Value(Some(Vec::new())) },
            Line::Ack { index: 9, answer: Answer::Value(Some(vec![0, 0xff, b'k', 3])) },
            Line::Ack { index: 10, answer: Answer::Rows { count: 3, hash: u64::MAX } },
            Line::Ack { index: u64::MAX, answer: Answer::Reopened { hash: 1 } },
            Line::Failed { index: None, message: "no such file".into() },
            Line::Failed { index: Some(4), message: "disk full".into() },
        ];
        for line in lines {
            assert_eq!(parse(&line.to_string()), Some(Ok(line.clone())), "{line}");
        }
        let multi = Line::Failed { index: Some(1), message: "a\nb".into() };
        assert_eq!(multi.to_string(), "crash-os failed 1 a / b");
    }

    #[test]
    fn foreign_lines_are_skipped_and_broken_ones_refused() {
        assert_eq!(parse("engine says hello"), None);
        assert_eq!(parse("crash-osx ready"), None);
        for broken in ["crash-os ack x done", "crash-os ack 1 value 0", "crash-os ack 1 rows 2", "crash-os nap"] {
            let error = parse(broken).expect("ours").unwrap_err();
            assert!(error.contains("cannot read") && error.contains(broken), "{error}");
        }
    }
}
