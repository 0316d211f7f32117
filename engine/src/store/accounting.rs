//! Accounting: the one place where `used_memory` and the segments'
//! live/dead record counts change.
//!
//! Both are derived numbers that the audit recounts from scratch
//! (`audit.rs`), and both are changed by many paths: a write, a delete, a
//! promotion, an eviction's commit, replay's stitch, a FLUSHALL. When each
//! path kept its own arithmetic, one forgotten line (a promotion that did
//! not count its record dead) was a bug only the audit could see. Here
//! every change of an entry's *kind* (absent, hot, cold) is one helper that
//! moves both numbers together, and the field-level edits of a hot row
//! (`apply.rs`) go through [`Store::charge`] and [`Store::refund`], which
//! refuse to wrap.
//!
//! The rule each helper keeps: `used_memory` is the sum of every key's
//! length plus every hot value's weight (a stub costs only its key), and a
//! segment's `live` is the number of stubs pointing into it.

use super::key::Key;
use super::segments::Segments;
use super::value::{entry_weight, value_weight, Entry, Stub, Value};
use super::Store;
use crate::Result;

impl Store {
    /// Hot bytes were added (a field, a value grown, a new key).
    pub(super) fn charge(&mut self, bytes: u64) {
        self.used_memory = self.used_memory.checked_add(bytes).expect("used_memory overflows u64");
    }

    /// Hot bytes were removed.
    pub(super) fn refund(&mut self, bytes: u64) {
        self.used_memory = self.used_memory.checked_sub(bytes).expect("used_memory refunds more than was charged");
    }

    /// Put `entry` at `key`, which must be absent (or already removed
    /// through [`Store::remove_key`]).
    pub(super) fn insert_entry(&mut self, key: &[u8], entry: Entry) {
        assert!(!matches!(entry.value, Value::Cold(_)), "stubs enter through insert_stub");
        self.charge(entry_weight(key, &entry));
        let previous = self.map.insert(Key::new(key), entry);
        assert!(previous.is_none(), "insert_entry over a present key");
    }

    /// Remove `key` whole: its bytes are refunded, and if it was a stub its
    /// segment record is stranded.
    pub(super) fn remove_key(&mut self, key: &[u8]) -> bool {
        let Some(entry) = self.map.remove(key) else { return false };
        self.refund(entry_weight(key, &entry));
        if let Value::Cold(stub) = entry.value {
            self.segments.note_dead(stub.seq);
        }
        true
    }

    /// FLUSHALL: every key goes, every stub's record is stranded.
    pub(super) fn remove_all(&mut self) {
        self.map.clear();
        self.used_memory = 0;
        self.segments.strand_all();
    }

    /// A stub for `key`, absent until now, pointing into `stub.seq`.
    pub(super) fn insert_stub(&mut self, key: &[u8], stub: Stub) {
        self.charge(key.len() as u64);
        let previous = self.map.insert(Key::new(key), Entry { value: Value::Cold(stub), expire_at_ms: None });
        assert!(previous.is_none(), "insert_stub over a present key");
        self.segments.note_live(stub.seq, 1);
    }

    /// Demote the hot row at `key` to a stub into segment `seq` (which
    /// holds the same row): its value's bytes are refunded and the record
    /// counts live.
    pub(super) fn demote(&mut self, key: &[u8], seq: u64) {
        let entry = self.map.get_mut(key).expect("a demoted row is present");
        assert!(matches!(entry.value, Value::Hash(_)), "only a hot row is demoted");
        let weight = value_weight(&entry.value);
        entry.value = Value::Cold(Stub { seq, weight });
        self.refund(weight);
        self.segments.note_live(seq, 1);
    }

    /// [`Store::demote`] each of `keys`.
    pub(super) fn demote_all(&mut self, keys: &[Vec<u8>], seq: u64) {
        for key in keys {
            self.demote(key, seq);
        }
    }

    /// Move the stub at `key` into segment `seq` (a cold row sealed again):
    /// the old record is stranded, the new one counts live.
    pub(super) fn restub(&mut self, key: &[u8], seq: u64) {
        let entry = self.map.get_mut(key).expect("a re-stubbed row is present");
        let Value::Cold(old) = entry.value else { panic!("only a stub is re-stubbed") };
        entry.value = Value::Cold(Stub { seq, weight: old.weight });
        self.segments.note_dead(old.seq);
        self.segments.note_live(seq, 1);
    }
}

/// Make `entry`, the entry of `key`, hot if it is a stub: its row is read
/// from the segment (before anything changes, so a refused read leaves
/// the store as it was), its value's bytes are charged, and its record is
/// stranded. A free function over the two numbers it moves, so a caller
/// holding an entry of the map (`apply_hset`) can use it.
pub(super) fn promote_entry(
    segments: &mut Segments,
    used_memory: &mut u64,
    key: &[u8],
    entry: &mut Entry,
) -> Result<()> {
    let Value::Cold(stub) = entry.value else { return Ok(()) };
    let row = segments.read_row(key, stub)?;
    let value = Value::Hash(row);
    *used_memory = used_memory.checked_add(value_weight(&value)).expect("used_memory overflows u64");
    entry.value = value;
    if !canary!(PromoteNotDead) {
        segments.note_dead(stub.seq);
    }
    Ok(())
}
