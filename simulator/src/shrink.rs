//! Shrinking a failing seed to a short operation list (delta debugging,
//! Zeller's ddmin), for any [`Target`], and the `.ops` text file such a
//! list is saved in (`sim --shrink --save`) and replayed from
//! (`sim --replay`, and `cargo test` for `corpus/regressions/`).
//!
//! Each operation keeps its original index, and a target draws its faults
//! from streams keyed by that index, so a sub-list replays the same faults
//! for the operations it keeps. A candidate counts as failing when it
//! fails the same check as the original and, for a panic, panics at the
//! same place (`file:line`) with a message of the same shape (numbers,
//! hashes and quoted text aside): a list that panics elsewhere, or at the
//! same `unwrap` on another error, is another bug. (Seen on persy: one
//! `unwrap` at snapshot/data.rs:113 reached by an injected EIO and by a
//! read past the end of a file cut short are two findings, and a shrink
//! keyed by the place alone slid from the second to the first.)
//!
//! # The `.ops` file
//! `#` comment lines; `target NAME` unless the target is the default
//! (segsim: so every file written before there were targets still reads
//! as segsim's); `seed N`; the target's settings, one `key value` (or a
//! bare `key`) per line; then one operation per line, as the target
//! prints it (each begins with its index). Segsim's settings are `fsync
//! X`, `crash-mode Y`, `point-in-time` and `fs NAME` (a file-system profile
//! other than `posix`: every target writes it, so a repro replays under its
//! profile); a planted canary is not one —
//! `--replay` takes it from the command line.

use crate::failure::{panic_place, Check, Failure};
use crate::seam::Target;

/// Delta debugging over any list: the shortest sub-list found on which
/// `fails` still holds, and how many candidates were run. Deterministic:
/// same list, same predicate, same result.
pub fn ddmin<O: Clone>(ops: Vec<O>, mut fails: impl FnMut(&[O]) -> bool) -> (Vec<O>, u64) {
    let mut runs = 0u64;
    let mut current = ops;
    let mut chunks = 2usize;
    while current.len() >= 2 {
        let chunk_len = current.len().div_ceil(chunks);
        let mut reduced = false;
        let mut start = 0;
        while start < current.len() {
            let end = (start + chunk_len).min(current.len());
            let mut candidate = current[..start].to_vec();
            candidate.extend_from_slice(&current[end..]);
            // An empty list cannot fail; it is not run (nor counted).
            if !candidate.is_empty() {
                runs += 1;
                if fails(&candidate) {
                    current = candidate;
                    reduced = true;
                    chunks = (chunks - 1).max(2);
                    break;
                }
            }
            start = end;
        }
        if !reduced {
            if chunks >= current.len() {
                break;
            }
            chunks = (chunks * 2).min(current.len());
        }
    }
    (current, runs)
}

/// Shrink `ops` (of `seed`) to a shorter list on which `target` still
/// fails `check`; for a panic, the same `PanicIdentity` as the whole
/// list's (a panic the whole list raises with no place, such as an
/// engine's thread found hung, is kept by panics with no place); with the
/// number of candidate runs.
pub fn shrink<T: Target>(target: &T, seed: u64, ops: Vec<T::Op>, check: Check) -> (Vec<T::Op>, u64) {
    let wanted = match check {
        Check::Panic => target.run(seed, &ops, false).failure.map(|f| PanicIdentity::of(&f)),
        _ => None,
    };
    ddmin(ops, |candidate| {
        target.run(seed, candidate, false).failure.is_some_and(|f| same_failure(check, wanted.as_ref(), &f))
    })
}

/// What makes two panics the same bug: the place (`file:line`, exact) and
/// the message's shape ([`message_shape`]: the error kind an `unwrap`
/// names is kept, the numbers and paths in it are not).
#[derive(Debug, PartialEq, Eq)]
struct PanicIdentity {
    place: Option<String>,
    shape: String,
}

impl PanicIdentity {
    fn of(failure: &Failure) -> PanicIdentity {
        let place = panic_place(&failure.detail).map(str::to_string);
        let message = match &place {
            // The place is the detail's suffix " (panicked at PLACE)".
            Some(place) => failure.detail.strip_suffix(&format!(" (panicked at {place})")).unwrap_or(&failure.detail),
            None => &failure.detail,
        };
        PanicIdentity { place, shape: message_shape(message) }
    }
}

/// Whether `failure` is the one being shrunk: the same check and, when
/// `wanted` is given (a panic), the same identity.
fn same_failure(check: Check, wanted: Option<&PanicIdentity>, failure: &Failure) -> bool {
    failure.check == check && wanted.is_none_or(|wanted| PanicIdentity::of(failure) == *wanted)
}

/// `message` with every quoted string made `"…"`, every hexadecimal word
/// of 8 or more digits `H` and every other run of decimal digits `N` (the
/// soak summary's failure classes, scripts/soak-summary.py, read the same).
fn message_shape(message: &str) -> String {
    let mut shape = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            shape.push_str("\"…\"");
            rest = rest[1..].split_once('"').map_or("", |(_, after)| after);
        } else if c.is_ascii_hexdigit() {
            let word_bytes = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len());
            let word = &rest[..word_bytes];
            if word_bytes >= 8 && word.chars().all(|c| c.is_ascii_hexdigit()) {
                shape.push('H');
                rest = &rest[word_bytes..];
            } else {
                let digits_bytes = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
                if digits_bytes > 0 {
                    shape.push('N');
                    rest = &rest[digits_bytes..];
                } else {
                    shape.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        } else {
            shape.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    shape
}

/// The `.ops` file of `ops` (see the module doc), `comment` first.
pub fn ops_file<T: Target>(target: &T, seed: u64, ops: &[T::Op], comment: &str) -> String {
    let mut out = String::new();
    for line in comment.lines() {
        out.push_str(&format!("# {line}\n"));
    }
    if !target.is_default() {
        out.push_str(&format!("target {}\n", target.name()));
    }
    out.push_str(&format!("seed {seed}\n"));
    for (key, value) in target.settings() {
        match value.as_str() {
            "" => out.push_str(&format!("{key}\n")),
            _ => out.push_str(&format!("{key} {value}\n")),
        }
    }
    for op in ops {
        out.push_str(&format!("{op}\n"));
    }
    out
}

/// The name on an `.ops` file's `target` line, if it has one (any target,
/// built in or a user's own).
pub fn ops_file_name(text: &str) -> Result<Option<String>, String> {
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        return Ok(line.strip_prefix("target ").map(|name| name.trim().to_string()));
    }
    Ok(None)
}

/// Read an `.ops` file written by [`ops_file`]: the target with the
/// file's settings applied, the seed and the operations. Errors name the
/// line.
pub fn parse_ops_file<T: Target>(mut target: T, text: &str) -> Result<(T, u64, Vec<T::Op>), String> {
    let mut seed = None;
    let mut ops = Vec::new();
    let mut in_header = true;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        let at = |e: String| format!("line {}: {e}", number + 1);
        if line.is_empty() || line.starts_with('#') || line.starts_with("target ") {
            continue;
        }
        if let Some(value) = line.strip_prefix("seed ") {
            seed = Some(value.trim().parse().map_err(|_| at(format!("bad seed {value:?}")))?);
            continue;
        }
        // Before the first operation, a line that does not begin with an
        // index is a setting.
        let first = line.split_whitespace().next().unwrap_or("");
        if in_header && first.parse::<u64>().is_err() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            target = target.with_setting(key, value.trim()).map_err(at)?;
            continue;
        }
        in_header = false;
        ops.push(target.parse_op(line).map_err(at)?);
    }
    let seed = seed.ok_or("no `seed N` line")?;
    Ok((target, seed, ops))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_culprits() {
        let ops: Vec<u32> = (0..100).collect();
        let (minimal, runs) = ddmin(ops, |c| c.contains(&17) && c.contains(&71));
        assert_eq!(minimal, vec![17, 71]);
        assert!(runs > 0);
    }

    fn failure(check: Check, detail: &str) -> Failure {
        let (recent, repro) = (Vec::new(), String::new());
        Failure { seed: 1, op_index: 2, check, detail: detail.to_string(), recent, repro, drew: None }
    }

    #[test]
    fn a_panic_elsewhere_is_another_failure() {
        let at_here = failure(Check::Panic, "index out of bounds: len 5 (panicked at persy-1.8.1/src/device.rs:178)");
        let here = Some(PanicIdentity::of(&at_here));
        let here_other_numbers =
            failure(Check::Panic, "index out of bounds: len 77 (panicked at persy-1.8.1/src/device.rs:178)");
        let elsewhere = failure(Check::Panic, "index out of bounds: len 5 (panicked at persy-1.8.1/src/device.rs:99)");
        let nowhere = failure(Check::Panic, "livelock: its thread is parked for good");
        let unplaced = Some(PanicIdentity::of(&nowhere));
        assert!(same_failure(Check::Panic, here.as_ref(), &at_here));
        assert!(same_failure(Check::Panic, here.as_ref(), &here_other_numbers));
        assert!(!same_failure(Check::Panic, here.as_ref(), &elsewhere));
        assert!(!same_failure(Check::Panic, here.as_ref(), &nowhere));
        assert!(same_failure(Check::Panic, unplaced.as_ref(), &nowhere));
        assert!(!same_failure(Check::Panic, unplaced.as_ref(), &at_here));
        // Checks other than a panic compare the check alone.
        assert!(same_failure(Check::Durability, None, &failure(Check::Durability, "lost (panicked at x.rs:1)")));
        assert!(!same_failure(Check::Durability, None, &at_here));
    }

    #[test]
    fn the_same_unwrap_on_another_error_is_another_failure() {
        // The persy seed that slid from one finding to another while shrinking.
        let place = " (panicked at persy-1.8.1/src/snapshot/data.rs:113)";
        let eio = "called `Result::unwrap()` on an `Err` value: Io { from: Os { code: 5, kind: Uncategorized, message: \"Input/output error\" } }";
        let eof = "called `Result::unwrap()` on an `Err` value: Io { from: Error { kind: UnexpectedEof, message: \"failed to fill whole buffer\" } }";
        let wanted = PanicIdentity::of(&failure(Check::Panic, &format!("{eof}{place}")));
        assert!(same_failure(Check::Panic, Some(&wanted), &failure(Check::Panic, &format!("{eof}{place}"))));
        assert!(!same_failure(Check::Panic, Some(&wanted), &failure(Check::Panic, &format!("{eio}{place}"))));
    }

    #[test]
    fn a_message_shape_keeps_words_and_drops_values() {
        assert_eq!(message_shape("seq 8 was row-7431-8.seg"), "seq N was row-N-N.seg");
        assert_eq!(message_shape("hash deadbeef12345678 at byte 4"), "hash H at byte N");
        assert_eq!(message_shape("kind: UnexpectedEof, message: \"x 1\" }"), "kind: UnexpectedEof, message: \"…\" }");
        assert_eq!(message_shape("a face 0x1f and café"), "a face NxNf and café");
        assert_eq!(message_shape("unterminated \"quote"), "unterminated \"…\"");
    }

    #[test]
    fn the_target_line_names_the_target() {
        assert_eq!(ops_file_name("# x\n\ntarget redb\nseed 1\n"), Ok(Some("redb".to_string())));
        assert_eq!(ops_file_name("seed 1\n0 EVICT\n"), Ok(None));
        assert_eq!(ops_file_name("target sqlite\n"), Ok(Some("sqlite".to_string())));
    }
}
