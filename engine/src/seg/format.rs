//! The segment file's byte layout: its constants, the fixed tail and the
//! record checksum. The builder and the verifier both speak through this
//! file, so the two ends of the format cannot drift apart silently.
//!
//! The layout itself is drawn in the module doc of [`crate::seg`].

use std::path::Path;

use crate::{Error, Result};

/// The first and the last eight bytes of every segment file. Checked
/// literally: it names the file type, and the trailing copy says that the
/// writer got all the way to the end.
pub(super) const MAGIC: [u8; 8] = *b"SEGSIMRS";

/// The layout version in the tail. A reader refuses any other; an older
/// one with [`Error::OldFormat`]. Version 1's record checksum did not
/// cover the record's place (its segment and index).
pub(super) const FORMAT_VERSION: u32 = 2;

/// Bytes of the head: the leading magic.
pub(super) const HEAD_BYTES: usize = 8;

/// Bytes of a record's trailing checksum.
pub(super) const RECORD_CRC_BYTES: usize = 4;

/// Bytes of an index entry before its key: key_len u32, value_offset u64,
/// value_len u32. Also the smallest entry, which bounds how many records
/// an index of a given size can describe.
pub(super) const INDEX_ENTRY_FIXED_BYTES: usize = 16;

/// Bytes of the fixed tail at the end of the file.
pub(super) const TAIL_BYTES: usize = 56;

/// The smallest well-formed file: head, empty bounds (two zero lengths)
/// and tail.
pub(super) const MIN_FILE_BYTES: usize = HEAD_BYTES + 8 + TAIL_BYTES;

// Where each tail field starts, relative to the tail. Errors about a field
// name its absolute offset, so a reader of the report can find the byte.
pub(super) const TAIL_SEQ_AT: usize = 0;
pub(super) const TAIL_RECORDS_AT: usize = 8;
pub(super) const TAIL_INDEX_OFFSET_AT: usize = 16;
pub(super) const TAIL_BOUNDS_OFFSET_AT: usize = 24;
pub(super) const TAIL_INDEX_CRC_AT: usize = 32;
pub(super) const TAIL_BOUNDS_CRC_AT: usize = 36;
pub(super) const TAIL_VERSION_AT: usize = 40;
pub(super) const TAIL_CRC_AT: usize = 44;
pub(super) const TAIL_MAGIC_AT: usize = 48;

/// The fixed-size tail: where everything else is, and the checksums that
/// make it trustworthy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tail {
    pub seq: u64,
    pub records: u64,
    pub index_offset_bytes: u64,
    pub bounds_offset_bytes: u64,
    pub index_crc: u32,
    pub bounds_crc: u32,
}

impl Tail {
    /// The tail's bytes, its own checksum and the magic included.
    pub fn encode(&self) -> [u8; TAIL_BYTES] {
        let mut out = [0u8; TAIL_BYTES];
        out[TAIL_SEQ_AT..][..8].copy_from_slice(&self.seq.to_le_bytes());
        out[TAIL_RECORDS_AT..][..8].copy_from_slice(&self.records.to_le_bytes());
        out[TAIL_INDEX_OFFSET_AT..][..8].copy_from_slice(&self.index_offset_bytes.to_le_bytes());
        out[TAIL_BOUNDS_OFFSET_AT..][..8].copy_from_slice(&self.bounds_offset_bytes.to_le_bytes());
        out[TAIL_INDEX_CRC_AT..][..4].copy_from_slice(&self.index_crc.to_le_bytes());
        out[TAIL_BOUNDS_CRC_AT..][..4].copy_from_slice(&self.bounds_crc.to_le_bytes());
        out[TAIL_VERSION_AT..][..4].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crc32fast::hash(&out[..TAIL_CRC_AT]);
        out[TAIL_CRC_AT..][..4].copy_from_slice(&crc.to_le_bytes());
        out[TAIL_MAGIC_AT..].copy_from_slice(&MAGIC);
        out
    }

    /// Decode and verify the tail `bytes`, which start at `tail_offset_bytes`
    /// of `file`. Checks the magic first (a torn or foreign file fails
    /// there, with the clearest message), then the tail's checksum, then
    /// the version: only a checksummed version number means anything.
    pub fn decode(file: &Path, bytes: &[u8], tail_offset_bytes: u64) -> Result<Tail> {
        assert_eq!(bytes.len(), TAIL_BYTES, "the caller slices exactly one tail");
        let at = |field: usize| tail_offset_bytes + field as u64;
        if bytes[TAIL_MAGIC_AT..] != MAGIC {
            return Err(Error::corrupt(
                file,
                at(TAIL_MAGIC_AT),
                "no segment magic at the end of the file (torn, truncated or not a segment)",
            ));
        }
        if crc32fast::hash(&bytes[..TAIL_CRC_AT]) != u32_at(bytes, TAIL_CRC_AT) {
            return Err(Error::corrupt(file, at(TAIL_CRC_AT), "segment tail checksum mismatch"));
        }
        let version = u32_at(bytes, TAIL_VERSION_AT);
        if version < FORMAT_VERSION {
            return Err(Error::OldFormat { file: file.to_path_buf(), version, reads: FORMAT_VERSION });
        }
        if version != FORMAT_VERSION {
            return Err(Error::corrupt(
                file,
                at(TAIL_VERSION_AT),
                format!("segment format version {version}, this build reads only {FORMAT_VERSION}"),
            ));
        }
        Ok(Tail {
            seq: u64_at(bytes, TAIL_SEQ_AT),
            records: u64_at(bytes, TAIL_RECORDS_AT),
            index_offset_bytes: u64_at(bytes, TAIL_INDEX_OFFSET_AT),
            bounds_offset_bytes: u64_at(bytes, TAIL_BOUNDS_OFFSET_AT),
            index_crc: u32_at(bytes, TAIL_INDEX_CRC_AT),
            bounds_crc: u32_at(bytes, TAIL_BOUNDS_CRC_AT),
        })
    }
}

/// The little-endian u32 at `at` of a slice the caller has bounded.
pub(super) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("a 4-byte slice"))
}

/// The little-endian u64 at `at` of a slice the caller has bounded.
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("an 8-byte slice"))
}

/// The checksum stored after a record's value. It covers the key as well
/// as the value, so a record can only verify under the key it was written
/// for: a wrong offset (or a record moved to another slot) cannot hand one
/// row's value out as another's. The key's length goes first so that the
/// split between key and value is covered too (`"ab" ‖ ""` and
/// `"a" ‖ "b"` checksum differently). It also covers the record's place,
/// its segment's seq and its index there: a record a misdirected write
/// carried into another segment, or to another slot of its own, is damage,
/// not a row.
pub(super) fn record_crc(seq: u64, record: u64, key: &[u8], value: &[u8]) -> u32 {
    assert!(key.len() <= u32::MAX as usize, "key lengths are bounded on push");
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&seq.to_le_bytes());
    hasher.update(&record.to_le_bytes());
    hasher.update(&(key.len() as u32).to_le_bytes());
    hasher.update(key);
    hasher.update(value);
    hasher.finalize()
}

/// Append one index entry: `[key_len u32][value_offset u64][value_len u32][key]`.
pub(super) fn put_index_entry(out: &mut Vec<u8>, key: &[u8], value_offset_bytes: u64, value_len: u32) {
    assert!(key.len() <= u32::MAX as usize, "key lengths are bounded on push");
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(&value_offset_bytes.to_le_bytes());
    out.extend_from_slice(&value_len.to_le_bytes());
    out.extend_from_slice(key);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Tail {
        Tail {
            seq: 7,
            records: 3,
            index_offset_bytes: 100,
            bounds_offset_bytes: 200,
            index_crc: 0xDEAD_BEEF,
            bounds_crc: 0x0123_4567,
        }
    }

    #[test]
    fn tail_round_trips() {
        let bytes = sample().encode();
        assert_eq!(Tail::decode(Path::new("t"), &bytes, 0).unwrap(), sample());
    }

    #[test]
    fn every_tail_bit_flip_is_caught_and_located() {
        let bytes = sample().encode();
        for bit in 0..TAIL_BYTES * 8 {
            let mut flipped = bytes;
            flipped[bit / 8] ^= 1 << (bit % 8);
            let err = Tail::decode(Path::new("t"), &flipped, 1000).unwrap_err();
            let Error::Corrupt { offset_bytes, .. } = err else { panic!("not corrupt: {err}") };
            // The magic is checked before the checksum, the checksum before
            // anything it covers.
            let expected = if bit / 8 >= TAIL_MAGIC_AT { TAIL_MAGIC_AT } else { TAIL_CRC_AT };
            assert_eq!(offset_bytes, 1000 + expected as u64, "bit {bit}");
        }
    }

    #[test]
    fn another_version_is_refused_even_with_a_good_checksum() {
        let mut bytes = sample().encode();
        bytes[TAIL_VERSION_AT..][..4].copy_from_slice(&3u32.to_le_bytes());
        let crc = crc32fast::hash(&bytes[..TAIL_CRC_AT]);
        bytes[TAIL_CRC_AT..][..4].copy_from_slice(&crc.to_le_bytes());
        let err = Tail::decode(Path::new("t"), &bytes, 0).unwrap_err();
        assert!(err.to_string().contains("version 3"), "{err}");
    }

    #[test]
    fn an_older_version_is_refused_as_old_format() {
        let mut bytes = sample().encode();
        bytes[TAIL_VERSION_AT..][..4].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32fast::hash(&bytes[..TAIL_CRC_AT]);
        bytes[TAIL_CRC_AT..][..4].copy_from_slice(&crc.to_le_bytes());
        let err = Tail::decode(Path::new("t"), &bytes, 0).unwrap_err();
        assert!(matches!(err, Error::OldFormat { version: 1, reads: 2, .. }), "{err}");
    }

    #[test]
    fn record_crc_covers_the_split_between_key_and_value() {
        assert_ne!(record_crc(1, 0, b"ab", b""), record_crc(1, 0, b"a", b"b"));
        assert_ne!(record_crc(1, 0, b"", b"ab"), record_crc(1, 0, b"a", b"b"));
        assert_ne!(record_crc(1, 0, b"k1", b"v"), record_crc(1, 0, b"k2", b"v"));
    }

    #[test]
    fn record_crc_covers_the_segment_and_the_index() {
        let crc = record_crc(7, 3, b"k", b"v");
        assert_ne!(crc, record_crc(8, 3, b"k", b"v"), "another segment");
        assert_ne!(crc, record_crc(7, 4, b"k", b"v"), "another slot");
    }

    #[test]
    fn index_entry_layout() {
        let mut out = Vec::new();
        put_index_entry(&mut out, b"key", 0x0102_0304_0506_0708, 9);
        assert_eq!(out.len(), INDEX_ENTRY_FIXED_BYTES + 3);
        assert_eq!(&out[0..4], &3u32.to_le_bytes());
        assert_eq!(&out[4..12], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(&out[12..16], &9u32.to_le_bytes());
        assert_eq!(&out[16..], b"key");
    }
}
