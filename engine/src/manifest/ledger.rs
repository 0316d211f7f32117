//! The registry's rules, in one place for both of the manifest's writers
//! of state: replay (which reads records back) and the appends (which write
//! them). Replay turns a broken rule into `Corrupt` at the record's offset;
//! an append turns it into `Invalid` before a byte is written. Because both
//! go through the same checks, a ledger this code wrote always replays.
//!
//! The rules:
//!
//! - a seq names one segment for the life of the directory, because a
//!   stale `SEGMENTED` frame or stub naming a reused seq would silently
//!   resolve to the wrong rows. The ledger keeps `next_seq`, one more than
//!   the highest seq ever registered, and an ADD must be at or above it:
//!   seqs are registered in ascending order and never again, even after
//!   their segment is dropped. (Seqs are handed out ascending, so this is
//!   what the store always did; it needs no memory of which seqs were
//!   dropped, which is what lets compaction forget the DROPs.)
//! - seqs lie in `1..=MAX_SEQ`, so 0 never names a segment and `next_seq`
//!   can never overflow;
//! - only a live seq can be DROPped;
//! - a file name is a plain name inside the segment directory (the store
//!   joins it to the directory and may unlink it), not one of the
//!   manifest's own, and at most one live entry holds it;
//! - `min_key <= max_key`;
//! - a compacted ledger (`compact.rs`) may raise `next_seq` past its live
//!   set, never lower it.

use std::collections::BTreeMap;

use super::{SegEntry, MANIFEST_FILE, MANIFEST_TEMP_FILE};

/// The highest seq a segment may have. Half the u64 range: far more than a
/// directory will ever use, and it leaves `allocate_seq` room to count past
/// the last registered seq without overflow checks on every path.
pub(crate) const MAX_SEQ: u64 = (1 << 63) - 1;

/// The longest file name, in bytes, common file systems accept.
const MAX_FILE_NAME_BYTES: usize = 255;

/// The registry's state: the live segments and what is needed to keep
/// seqs unique.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Ledger {
    live: BTreeMap<u64, SegEntry>,
    /// The live entries' file names, so "is this file registered" is a
    /// lookup (the orphan sweep asks it of every file in the directory).
    live_files: BTreeMap<String, u64>,
    /// One more than the highest seq ever ADDed (or a compacted ledger's
    /// `next_seq`, if higher); 1 while none has been. Every live seq is
    /// below it, and no seq below it may be ADDed: that one number is the
    /// whole memory of dropped seqs.
    next_seq: u64,
}

impl Ledger {
    /// A ledger with nothing registered.
    pub(super) fn new() -> Self {
        Self { live: BTreeMap::new(), live_files: BTreeMap::new(), next_seq: 1 }
    }

    /// The live segments by seq.
    pub(super) fn live(&self) -> &BTreeMap<u64, SegEntry> {
        &self.live
    }

    /// Whether a live entry holds `file`.
    pub(super) fn is_live_file(&self, file: &str) -> bool {
        self.live_files.contains_key(file)
    }

    /// One more than the highest seq ever ADDed, live or dropped.
    pub(super) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Why `entry` may not be ADDed now, if it may not.
    pub(super) fn check_add(&self, entry: &SegEntry) -> Result<(), &'static str> {
        if entry.seq == 0 {
            return Err("seq 0 never names a segment");
        }
        if entry.seq > MAX_SEQ {
            return Err("seq beyond the highest allowed");
        }
        if self.live.contains_key(&entry.seq) {
            return Err("seq is already registered");
        }
        // Planted (with `allocate_seq`'s): a dropped seq is not remembered.
        if entry.seq < self.next_seq && !canary!(SeqFromLiveSet) {
            return Err("seq is below next_seq: a seq at or below it was registered before, and seqs are never reused");
        }
        check_file_name(&entry.file)?;
        if self.live_files.contains_key(&entry.file) {
            return Err("file is already registered under another seq");
        }
        if entry.min_key > entry.max_key {
            return Err("min_key sorts after max_key");
        }
        Ok(())
    }

    /// Register `entry`, which passed [`Ledger::check_add`].
    pub(super) fn apply_add(&mut self, entry: SegEntry) {
        assert_eq!(self.check_add(&entry), Ok(()), "apply_add of an unchecked entry");
        // `max`, not `entry.seq + 1`, only for the planted SeqFromLiveSet.
        self.next_seq = self.next_seq.max(entry.seq + 1);
        self.live_files.insert(entry.file.clone(), entry.seq);
        self.live.insert(entry.seq, entry);
    }

    /// Why `seq` may not be DROPped now, if it may not.
    pub(super) fn check_drop(&self, seq: u64) -> Result<(), &'static str> {
        if self.live.contains_key(&seq) {
            Ok(())
        } else if seq < self.next_seq {
            Err("seq is not live: it was dropped, or skipped and never registered")
        } else {
            Err("seq was never registered")
        }
    }

    /// Retire `seq`, which passed [`Ledger::check_drop`].
    pub(super) fn apply_drop(&mut self, seq: u64) {
        let entry = self.live.remove(&seq).expect("apply_drop of a seq that is not live");
        let removed = self.live_files.remove(&entry.file);
        assert_eq!(removed, Some(seq), "live_files out of step with live");
        assert!(seq < self.next_seq, "a dropped seq stays below next_seq");
    }

    /// Why `next_seq` may not be raised to `next_seq` now, if it may not:
    /// a compacted ledger's `COMPACTED` record, applied once its live
    /// entries are replayed.
    pub(super) fn check_raise_next_seq(&self, next_seq: u64) -> Result<(), &'static str> {
        if next_seq < self.next_seq {
            return Err("next_seq is not above every live seq");
        }
        if next_seq > MAX_SEQ + 1 {
            return Err("next_seq beyond the highest allowed seq");
        }
        Ok(())
    }

    /// Raise `next_seq`, which passed [`Ledger::check_raise_next_seq`].
    pub(super) fn raise_next_seq(&mut self, next_seq: u64) {
        assert_eq!(self.check_raise_next_seq(next_seq), Ok(()), "raise_next_seq of an unchecked value");
        self.next_seq = next_seq;
    }
}

/// Why `file` is not a plain name of a segment inside the directory.
fn check_file_name(file: &str) -> Result<(), &'static str> {
    if file.is_empty() || file == "." || file == ".." {
        return Err("file name is empty, '.' or '..'");
    }
    if file.len() > MAX_FILE_NAME_BYTES {
        return Err("file name is longer than 255 bytes");
    }
    if file.contains(['/', '\\', '\0']) {
        return Err("file name holds a path separator or NUL");
    }
    if file == MANIFEST_FILE || file == MANIFEST_TEMP_FILE {
        return Err("file name is the manifest's own");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, file: &str) -> SegEntry {
        SegEntry {
            seq,
            file: file.to_owned(),
            table: b"t".to_vec(),
            min_key: b"t:a".to_vec(),
            max_key: b"t:b".to_vec(),
            records: 2,
        }
    }

    #[test]
    fn next_seq_tracks_the_highest_seq_ever_added() {
        let mut ledger = Ledger::new();
        assert_eq!(ledger.next_seq(), 1);
        ledger.apply_add(entry(3, "b.seg"));
        ledger.apply_add(entry(5, "a.seg"));
        assert_eq!(ledger.next_seq(), 6);
        ledger.apply_drop(5);
        assert_eq!(ledger.next_seq(), 6, "a drop must not give the seq back");
        assert_eq!(ledger.live().keys().copied().collect::<Vec<_>>(), vec![3]);
        assert!(ledger.is_live_file("b.seg"));
        assert!(!ledger.is_live_file("a.seg"));
    }

    #[test]
    fn a_seq_is_registered_at_most_once() {
        let mut ledger = Ledger::new();
        ledger.apply_add(entry(4, "a.seg"));
        assert_eq!(ledger.check_add(&entry(4, "other.seg")), Err("seq is already registered"));
        ledger.apply_drop(4);
        let reused = "seq is below next_seq: a seq at or below it was registered before, and seqs are never reused";
        assert_eq!(ledger.check_add(&entry(4, "a.seg")), Err(reused));
        // Below a registered seq, even one never registered itself: seqs
        // are registered in ascending order.
        assert_eq!(ledger.check_add(&entry(2, "b.seg")), Err(reused));
        assert_eq!(ledger.check_drop(4), Err("seq is not live: it was dropped, or skipped and never registered"));
        assert_eq!(ledger.check_drop(9), Err("seq was never registered"));
        assert_eq!(ledger.check_add(&entry(5, "a.seg")), Ok(()));
    }

    #[test]
    fn a_compacted_next_seq_only_ever_raises_and_stays_in_range() {
        let mut ledger = Ledger::new();
        ledger.apply_add(entry(4, "a.seg"));
        assert_eq!(ledger.check_raise_next_seq(4), Err("next_seq is not above every live seq"));
        assert_eq!(ledger.check_raise_next_seq(MAX_SEQ + 2), Err("next_seq beyond the highest allowed seq"));
        assert_eq!(ledger.check_raise_next_seq(MAX_SEQ + 1), Ok(()));
        ledger.raise_next_seq(9);
        assert_eq!(ledger.next_seq(), 9);
        assert!(ledger.check_add(&entry(8, "b.seg")).is_err(), "a seq below a raised next_seq");
        assert_eq!(ledger.check_add(&entry(9, "b.seg")), Ok(()));
        assert_eq!(ledger.check_drop(6), Err("seq is not live: it was dropped, or skipped and never registered"));
    }

    #[test]
    fn seqs_stay_in_range() {
        let ledger = Ledger::new();
        assert_eq!(ledger.check_add(&entry(0, "a.seg")), Err("seq 0 never names a segment"));
        assert_eq!(ledger.check_add(&entry(MAX_SEQ + 1, "a.seg")), Err("seq beyond the highest allowed"));
        assert_eq!(ledger.check_add(&entry(MAX_SEQ, "a.seg")), Ok(()));
    }

    #[test]
    fn a_live_file_name_is_held_once_and_reusable_after_a_drop() {
        let mut ledger = Ledger::new();
        ledger.apply_add(entry(1, "a.seg"));
        assert_eq!(ledger.check_add(&entry(2, "a.seg")), Err("file is already registered under another seq"));
        ledger.apply_drop(1);
        assert_eq!(ledger.check_add(&entry(2, "a.seg")), Ok(()));
    }

    #[test]
    fn file_names_stay_inside_the_directory() {
        let ledger = Ledger::new();
        let long = "x".repeat(256);
        for bad in
            ["", ".", "..", "../a.seg", "d/a.seg", "a\\b", "a\0b", MANIFEST_FILE, MANIFEST_TEMP_FILE, long.as_str()]
        {
            assert!(ledger.check_add(&entry(1, bad)).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(ledger.check_add(&entry(1, &"x".repeat(255))), Ok(()));
    }

    #[test]
    fn keys_must_be_ordered() {
        let ledger = Ledger::new();
        let mut e = entry(1, "a.seg");
        e.min_key = b"t:z".to_vec();
        assert_eq!(ledger.check_add(&e), Err("min_key sorts after max_key"));
        e.max_key = e.min_key.clone();
        assert_eq!(ledger.check_add(&e), Ok(()));
    }
}
