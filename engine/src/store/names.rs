//! The names in a store's directory, and whose each one is.
//!
//! The engine writes a small, fixed set of names (the log, its rewrite
//! temp and quarantine copies, the manifest and its compaction temp, the
//! lock, segment files), all plain text. Anything else in the directory
//! belongs to someone else — an operator's notes, an editor's backup, a
//! name that is not even UTF-8 — and the open's sweep must neither act on
//! it nor let it stop the store: it is left where it is and reported
//! ([`RecoveryReport::foreign_files`](super::RecoveryReport::foreign_files)).
//!
//! Deciding by the exact patterns the engine writes, not by a suffix,
//! matters: a sweep that unlinked every `*.seg` it did not register would
//! delete an outsider's file that merely ends the same way, and one that
//! turned names into text lossily would try to unlink a path that does not
//! exist and abort the open.

use std::ffi::OsStr;

use super::segments::seq_of_file_name;
use super::{AOF_FILE, REWRITE_TEMP_FILE};
use crate::aof::quarantine_number_text;
use crate::manifest::{MANIFEST_FILE, MANIFEST_TEMP_FILE};
use crate::vfs::LOCK_FILE;

/// Whose one listed name is, and what the sweep does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Listed<'a> {
    /// A file the store keeps: the log, the manifest, the lock, a
    /// quarantine copy, a registered segment.
    Kept,
    /// A segment file of the engine's naming that the manifest does not
    /// register: a seal's leftover, unlinked by the sweep.
    UnregisteredSegment(&'a str),
    /// A rewrite's or a manifest compaction's temp file, left by a crash
    /// before its rename: unlinked by the sweep.
    LeftoverTemp(&'a str),
    /// A name the engine never writes: left untouched and reported.
    Foreign,
}

/// Classify `name` (a name listed in the store's directory), given which
/// segment files the manifest registers.
pub(super) fn classify(name: &OsStr, is_registered: impl Fn(&str) -> bool) -> Listed<'_> {
    // Every name the engine writes is UTF-8, so one that is not is foreign.
    let Some(text) = name.to_str() else {
        return Listed::Foreign;
    };
    if seq_of_file_name(text).is_some() {
        return if is_registered(text) { Listed::Kept } else { Listed::UnregisteredSegment(text) };
    }
    if text == REWRITE_TEMP_FILE || text == MANIFEST_TEMP_FILE {
        return Listed::LeftoverTemp(text);
    }
    if text == AOF_FILE
        || text == MANIFEST_FILE
        || text == LOCK_FILE
        || quarantine_number_text(text, AOF_FILE).is_some()
    {
        return Listed::Kept;
    }
    Listed::Foreign
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use super::*;
    use crate::store::segments::segment_file_name;

    fn of(name: &str) -> Listed<'_> {
        classify(OsStr::new(name), |file| file == "row-74-1.seg")
    }

    #[test]
    fn the_engines_own_names_are_kept_or_swept() {
        assert_eq!(segment_file_name(b"t", 1), "row-74-1.seg");
        for kept in ["appendonly.aof", "MANIFEST", "LOCK", "appendonly.aof.quarantine.3", "row-74-1.seg"] {
            assert_eq!(of(kept), Listed::Kept, "{kept}");
        }
        assert_eq!(of("row-74-2.seg"), Listed::UnregisteredSegment("row-74-2.seg"));
        assert_eq!(of("appendonly.aof.rewrite"), Listed::LeftoverTemp("appendonly.aof.rewrite"));
        assert_eq!(of("MANIFEST.tmp"), Listed::LeftoverTemp("MANIFEST.tmp"));
    }

    #[test]
    fn anything_else_is_foreign_even_when_it_looks_close() {
        let close = [
            "notes.seg",
            "row-74-05.seg",
            "row-zz-5.seg",
            "row-74-5.seg.bak",
            "appendonly.aof.quarantine.",
            "appendonly.aof.quarantine.x",
            "MANIFEST.old",
            "stray-0001.bin",
        ];
        for name in close {
            assert_eq!(of(name), Listed::Foreign, "{name}");
        }
    }

    #[test]
    fn a_name_that_is_not_utf8_is_foreign() {
        let name = OsString::from_vec(b"x\xff.seg".to_vec());
        assert_eq!(classify(&name, |_| true), Listed::Foreign);
        let name = OsString::from_vec(b"row-74-1.seg\xff".to_vec());
        assert_eq!(classify(&name, |_| true), Listed::Foreign);
    }
}
