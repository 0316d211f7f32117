//! [`SegIndex`]: an open segment's in-memory index, and the key search
//! that point lookups and range scans run on.
//!
//! A lookup in a large segment is bound by cache misses, not by compares:
//! each step of a binary search lands on a cold entry and then on a cold
//! key in the mapping. So each entry carries a *key head*, the first 8
//! bytes of its key after the prefix every key in the segment shares, as
//! a big-endian integer. Most steps compare heads and never touch the
//! mapping; only keys whose heads tie are compared in full.
//!
//! Why stripping the shared prefix is sound: keys sort bytewise, and every
//! key between `min_key` and `max_key` starts with their common prefix
//! (a key that left it would sort below `min_key` or above `max_key`).
//! Without stripping, a table's row keys (`user:000000001`, ...) would
//! all have the same head and the heads would buy nothing.

use std::cmp::Ordering;
use std::ops::Range;

use super::format::RECORD_CRC_BYTES;

/// Where one record's parts sit in the file. `verify` checked every range
/// against the file, so slicing the mapping with them cannot panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct IndexEntry {
    key_start: usize,
    value_start: usize,
    key_len: u32,
    value_len: u32,
    /// See the module doc.
    key_head: u64,
}

impl IndexEntry {
    /// An entry for `key` (at `key_start` in the file), in a segment whose
    /// keys share their first `shared_prefix_bytes` bytes.
    pub fn new(key_start: usize, key: &[u8], value_start: usize, value_len: u32, shared_prefix_bytes: usize) -> Self {
        assert!(key.len() <= u32::MAX as usize, "key lengths are u32 on disk");
        // A key shorter than the shared prefix can only come from a corrupt
        // index, which `verify` refuses once it compares the bounds; until
        // then the entry must still build without panicking.
        let rest = key.get(shared_prefix_bytes..).unwrap_or(&[]);
        IndexEntry { key_start, value_start, key_len: key.len() as u32, value_len, key_head: key_head(rest) }
    }

    pub fn key_range(self) -> Range<usize> {
        self.key_start..self.key_start + self.key_len as usize
    }

    pub fn value_range(self) -> Range<usize> {
        self.value_start..self.value_start + self.value_len as usize
    }

    /// The record's checksum, right after its value.
    pub fn crc_range(self) -> Range<usize> {
        let value_end = self.value_start + self.value_len as usize;
        value_end..value_end + RECORD_CRC_BYTES
    }
}

/// The entries of a verified segment, in key order, and how to search
/// them.
#[derive(Debug)]
pub(super) struct SegIndex {
    entries: Vec<IndexEntry>,
    /// The prefix every key shares (the common prefix of the bounds).
    shared_prefix: Vec<u8>,
}

impl SegIndex {
    /// `entries` must be in strictly ascending key order and all start
    /// with `shared_prefix` (`verify` establishes both).
    pub fn new(entries: Vec<IndexEntry>, shared_prefix: Vec<u8>) -> Self {
        SegIndex { entries, shared_prefix }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn entry(&self, record: usize) -> IndexEntry {
        self.entries[record]
    }

    /// Binary search for `key` over the keys in `bytes` (the segment's
    /// mapping): `Ok(record)` if it is present, else `Err` of where it
    /// would go, as [`slice::binary_search`].
    pub fn search(&self, bytes: &[u8], key: &[u8]) -> Result<usize, usize> {
        if !key.starts_with(&self.shared_prefix) {
            // Every stored key starts with the prefix, so a key that does
            // not sorts either before all of them (it is below the prefix:
            // a proper prefix of it, or smaller where they first differ)
            // or after all of them.
            return if key < self.shared_prefix.as_slice() { Err(0) } else { Err(self.entries.len()) };
        }
        let head = key_head(&key[self.shared_prefix.len()..]);
        // Ordering by (head, key) is ordering by key: heads are the keys'
        // leading bytes past the shared prefix, zero-padded, so a smaller
        // head means a smaller key, and equal heads defer to the key.
        self.entries.binary_search_by(|entry| match entry.key_head.cmp(&head) {
            Ordering::Equal => bytes[entry.key_range()].cmp(key),
            unequal => unequal,
        })
    }
}

/// The length of the common prefix of `a` and `b`.
pub(super) fn common_prefix_bytes(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The first 8 bytes of `rest`, zero-padded, as a big-endian integer:
/// integer order agrees with bytewise order wherever it is strict.
fn key_head(rest: &[u8]) -> u64 {
    let mut head = [0u8; 8];
    let n = rest.len().min(8);
    head[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    #[test]
    fn heads_pad_with_zeros_so_ties_go_to_the_full_key() {
        assert_eq!(key_head(b"ab"), key_head(b"ab\0"));
        assert!(key_head(b"ab") < key_head(b"ab\x01"));
        assert_eq!(key_head(b"12345678"), key_head(b"123456789"));
        assert_eq!(key_head(b""), 0);
    }

    /// A search over `keys` laid out back to back, as in a mapping.
    fn search_all(keys: &[Vec<u8>], probe: &[u8]) -> Result<usize, usize> {
        let bytes: Vec<u8> = keys.concat();
        let shared = match (keys.first(), keys.last()) {
            (Some(min), Some(max)) => min[..common_prefix_bytes(min, max)].to_vec(),
            _ => Vec::new(),
        };
        let mut entries = Vec::new();
        let mut at = 0usize;
        for key in keys {
            entries.push(IndexEntry::new(at, key, 0, 0, shared.len()));
            at += key.len();
        }
        SegIndex::new(entries, shared).search(&bytes, probe)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn search_agrees_with_a_plain_binary_search(
            prefix in vec(0u8..3, 0..12),
            suffixes in proptest::collection::btree_set(vec(0u8..3, 0..12), 0..40),
            probe in vec(0u8..3, 0..24),
        ) {
            // Keys sharing a long prefix and differing past 8 bytes of it,
            // with zero bytes that pad like nothing at all.
            let keys: Vec<Vec<u8>> = suffixes.iter().map(|s| [prefix.as_slice(), s].concat()).collect();
            let prefixed_probe = [prefix.as_slice(), &probe].concat();
            for probe in keys.iter().chain([&probe, &prefixed_probe]) {
                prop_assert_eq!(search_all(&keys, probe), keys.binary_search(probe));
            }
        }
    }
}
