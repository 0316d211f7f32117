//! The head every operation line starts with, whatever the target: the
//! operation's index, then maybe where to cut the power inside it —
//! ` @ios=N` (after N I/O operations), ` @io=I` (at the run's I/O index I)
//! or ` @mark=PHASE` (when the engine marks that phase). Each target's
//! planned operation prints its head with [`write_head`], then its own
//! words, and parses a line back with [`parse_head`] (`.ops` files and
//! `corpus/regressions/` hold such lines).

use std::fmt;

use crate::disk::CrashPoint;

/// Write `index` and `crash` as the start of an operation's line.
pub fn write_head(f: &mut fmt::Formatter<'_>, index: u64, crash: Option<CrashPoint>) -> fmt::Result {
    write!(f, "{index}")?;
    match crash {
        None => Ok(()),
        Some(CrashPoint::AfterIos(n)) => write!(f, " @ios={n}"),
        Some(CrashPoint::AtIo(i)) => write!(f, " @io={i}"),
        Some(CrashPoint::AtMark(name)) => write!(f, " @mark={name}"),
    }
}

/// The index and the crash point [`write_head`] wrote at the start of
/// `line`, and the words after them, with `@mark=` naming one of `marks`
/// (the phases the target's system marks; none: `@mark=` is refused
/// whatever it names).
pub fn parse_head<'l>(
    line: &'l str,
    marks: &[&'static str],
) -> Result<(u64, Option<CrashPoint>, Vec<&'l str>), String> {
    let mut words = line.split_whitespace().peekable();
    let index: u64 = words.next().ok_or("empty line")?.parse().map_err(|_| format!("bad op index in {line:?}"))?;
    let mut crash = None;
    if let Some(word) = words.peek().filter(|w| w.starts_with('@')) {
        let (key, value) = word[1..].split_once('=').ok_or(format!("bad crash point {word:?}"))?;
        crash = Some(match key {
            "ios" => CrashPoint::AfterIos(value.parse().map_err(|_| format!("bad count {value:?}"))?),
            "io" => CrashPoint::AtIo(value.parse().map_err(|_| format!("bad index {value:?}"))?),
            "mark" => match marks.iter().find(|name| **name == value) {
                Some(name) => CrashPoint::AtMark(name),
                None if marks.is_empty() => return Err(format!("bad crash point {word:?} (this target has no marks)")),
                None => return Err(format!("unknown mark {value:?} (the marks: {})", marks.join(", "))),
            },
            _ => return Err(format!("bad crash point {word:?}")),
        });
        words.next();
    }
    Ok((index, crash, words.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head alone, printed by [`write_head`].
    struct Head(u64, Option<CrashPoint>);

    impl fmt::Display for Head {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write_head(f, self.0, self.1)
        }
    }

    #[test]
    fn every_head_prints_and_parses_back_with_the_words_after_it() {
        let crashes =
            [None, Some(CrashPoint::AfterIos(3)), Some(CrashPoint::AtIo(70)), Some(CrashPoint::AtMark("seal.built"))];
        for crash in crashes {
            let line = format!("{} SET a b", Head(12, crash));
            assert_eq!(parse_head(&line, &["seal.built"]), Ok((12, crash, vec!["SET", "a", "b"])), "{line}");
        }
    }

    #[test]
    fn bad_heads_are_refused_with_a_reason() {
        for line in ["", "x SET a b", "1 @mark=nowhere EVICT", "1 @ios=many SYNC", "1 @at=3 SYNC", "1 @ios SYNC"] {
            assert!(parse_head(line, &["seal.built"]).is_err(), "{line}");
        }
        let mark = "1 @mark=seal.built CRASH";
        assert!(parse_head(mark, &["seal.built"]).is_ok());
        assert!(parse_head(mark, &[]).unwrap_err().contains("no marks"), "a target without marks refuses one");
        let named = parse_head("3 @mark=synced CRASH", &["appended", "synced"]).unwrap();
        assert_eq!(named.1, Some(CrashPoint::AtMark("synced")));
        let line = Head(3, named.1).to_string();
        assert_eq!(line, "3 @mark=synced", "a named mark prints back");
        assert!(parse_head("3 @mark=other CRASH", &["synced"]).unwrap_err().contains("synced"));
    }
}
