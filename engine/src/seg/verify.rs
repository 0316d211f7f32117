//! Turning untrusted bytes into a trusted segment: [`verify`] checks the
//! tail, the key bounds and the index, and builds the in-memory index that
//! navigation runs on.
//!
//! Everything a lookup relies on to *find* a record is verified here, once:
//! the checksums of the tail, the bounds and the index; that the records
//! exactly tile the region between the head and the index (no gap, no
//! overlap, nothing past it); that the keys strictly ascend; that the
//! bounds match the first and the last key. Each checksum covers a range
//! whose ends come from bytes already verified, so crc32's guarantee
//! applies as stated: every error burst of up to 32 bits is caught, every
//! single bit flip included. The records themselves are verified on
//! every read instead (`Seg::get`), so that opening stays O(index), not
//! O(file).
//!
//! Nothing is allocated from a count read off the disk until that count is
//! checked against the bytes actually present.

use std::path::Path;

use super::format::{
    Tail, HEAD_BYTES, INDEX_ENTRY_FIXED_BYTES, MAGIC, MIN_FILE_BYTES, RECORD_CRC_BYTES, TAIL_BOUNDS_OFFSET_AT,
    TAIL_BYTES, TAIL_INDEX_OFFSET_AT, TAIL_RECORDS_AT,
};
use super::index::{common_prefix_bytes, IndexEntry, SegIndex};
use super::SegMeta;
use crate::codec::{ByteReader, DecodeError};
use crate::{Error, Result};

/// Verify `bytes` as a whole segment file named `file` (for errors only).
pub(super) fn verify(file: &Path, bytes: &[u8]) -> Result<(SegMeta, SegIndex)> {
    let len_bytes = bytes.len();
    if len_bytes < MIN_FILE_BYTES {
        return Err(Error::corrupt(
            file,
            len_bytes as u64,
            format!("{len_bytes} bytes is shorter than the smallest segment ({MIN_FILE_BYTES} bytes)"),
        ));
    }
    if bytes[..HEAD_BYTES] != MAGIC {
        return Err(Error::corrupt(file, 0, "no segment magic at the start of the file"));
    }
    let tail_offset = len_bytes - TAIL_BYTES;
    let tail = Tail::decode(file, &bytes[tail_offset..], tail_offset as u64)?;
    let tail_field = |field: usize| (tail_offset + field) as u64;
    let (index_offset, bounds_offset) = check_geometry(file, &tail, tail_offset)?;
    debug_assert!(HEAD_BYTES <= index_offset && index_offset <= bounds_offset && bounds_offset <= tail_offset);

    let bounds = &bytes[bounds_offset..tail_offset];
    if crc32fast::hash(bounds) != tail.bounds_crc {
        return Err(Error::corrupt(file, bounds_offset as u64, "segment key bounds checksum mismatch"));
    }
    let (min_key, max_key) = decode_bounds(bounds, bounds_offset as u64).map_err(|e| e.in_file(file))?;

    let index = &bytes[index_offset..bounds_offset];
    let max_records = (index.len() / INDEX_ENTRY_FIXED_BYTES) as u64;
    if tail.records > max_records {
        return Err(Error::corrupt(
            file,
            tail_field(TAIL_RECORDS_AT),
            format!("{} records cannot fit an index of {} bytes", tail.records, index.len()),
        ));
    }
    if crc32fast::hash(index) != tail.index_crc {
        return Err(Error::corrupt(file, index_offset as u64, "segment index checksum mismatch"));
    }
    // Bounded by max_records above, so the allocation is bounded by the
    // bytes present.
    let shared_prefix_bytes = common_prefix_bytes(min_key, max_key);
    let entries = decode_index(file, index, index_offset, tail.records as usize, shared_prefix_bytes)?;

    let (expected_min, expected_max): (&[u8], &[u8]) = match (entries.first(), entries.last()) {
        (Some(first), Some(last)) => (&bytes[first.key_range()], &bytes[last.key_range()]),
        _ => (&[], &[]),
    };
    if min_key != expected_min || max_key != expected_max {
        let why = "segment key bounds disagree with the first and last keys of the index";
        return Err(Error::corrupt(file, bounds_offset as u64, why));
    }
    let meta = SegMeta { seq: tail.seq, records: tail.records, min_key: min_key.to_vec(), max_key: max_key.to_vec() };
    let shared_prefix = min_key[..shared_prefix_bytes].to_vec();
    Ok((meta, SegIndex::new(entries, shared_prefix)))
}

/// The tail's offsets, checked: head ≤ index ≤ bounds ≤ tail, so each
/// region is a slice of the file. Checked in u64, before any conversion,
/// so a huge offset cannot wrap. Returns the index's and the bounds'
/// offsets.
fn check_geometry(file: &Path, tail: &Tail, tail_offset: usize) -> Result<(usize, usize)> {
    let tail_field = |field: usize| (tail_offset + field) as u64;
    let index_offset = tail.index_offset_bytes;
    let bounds_offset = tail.bounds_offset_bytes;
    if index_offset < HEAD_BYTES as u64 || index_offset > bounds_offset {
        return Err(Error::corrupt(
            file,
            tail_field(TAIL_INDEX_OFFSET_AT),
            format!("index offset {index_offset} outside the file's body (bounds at {bounds_offset})"),
        ));
    }
    if bounds_offset > tail_offset as u64 {
        return Err(Error::corrupt(
            file,
            tail_field(TAIL_BOUNDS_OFFSET_AT),
            format!("key bounds offset {bounds_offset} runs into the tail at {tail_offset}"),
        ));
    }
    // Both are ≤ tail_offset, which is a usize.
    Ok((index_offset as usize, bounds_offset as usize))
}

/// `[min_key_len u32][min_key][max_key_len u32][max_key]`, nothing after.
fn decode_bounds(bounds: &[u8], offset_bytes: u64) -> std::result::Result<(&[u8], &[u8]), DecodeError> {
    let mut reader = ByteReader::new(bounds, offset_bytes);
    let min_key = reader.len_prefixed()?;
    let max_key = reader.len_prefixed()?;
    reader.finish()?;
    Ok((min_key, max_key))
}

/// Decode `records` index entries from `index` (at `index_offset` in the
/// file), checking order and tiling as it goes.
fn decode_index(
    file: &Path,
    index: &[u8],
    index_offset: usize,
    records: usize,
    shared_prefix_bytes: usize,
) -> Result<Vec<IndexEntry>> {
    assert!(records <= index.len() / INDEX_ENTRY_FIXED_BYTES, "the caller bounds the count");
    let mut reader = ByteReader::new(index, index_offset as u64);
    let mut entries = Vec::with_capacity(records);
    let mut previous_key: Option<&[u8]> = None;
    // The records region starts right after the head and ends where the
    // index begins; each record must start where the previous one ended.
    let mut expected_value_offset = HEAD_BYTES as u64;
    for record in 0..records {
        let entry_at = reader.offset_bytes();
        let RawEntry { key, value_offset, value_len } = RawEntry::decode(&mut reader).map_err(|e| e.in_file(file))?;

        if value_offset != expected_value_offset {
            return Err(Error::corrupt(
                file,
                entry_at + 4,
                format!(
                    "record {record}: value at {value_offset}, but the previous record ends at {expected_value_offset}"
                ),
            ));
        }
        // No overflow: value_offset ≤ index_offset (checked on the previous
        // turn) and value_len is a u32.
        debug_assert!(value_offset <= index_offset as u64);
        let record_end = value_offset + u64::from(value_len) + RECORD_CRC_BYTES as u64;
        if record_end > index_offset as u64 {
            return Err(Error::corrupt(
                file,
                entry_at + 12,
                format!("record {record}: ends at {record_end}, past the records region ({index_offset})"),
            ));
        }
        if previous_key.is_some_and(|previous| key <= previous) {
            return Err(Error::corrupt(
                file,
                entry_at,
                format!("record {record}: key does not sort above the previous one"),
            ));
        }
        previous_key = Some(key);

        // Both fit a usize: they lie inside `bytes`.
        let key_start = entry_at as usize + INDEX_ENTRY_FIXED_BYTES;
        let value_start = value_offset as usize;
        entries.push(IndexEntry::new(key_start, key, value_start, value_len, shared_prefix_bytes));
        expected_value_offset = record_end;
    }
    check_index_end(file, &reader, index_offset, expected_value_offset)?;
    Ok(entries)
}

/// After the last entry: nothing left in the index, and the last record
/// ends where the index starts (`records_end_bytes`), so the records tile
/// their region exactly.
fn check_index_end(file: &Path, reader: &ByteReader<'_>, index_offset: usize, records_end_bytes: u64) -> Result<()> {
    if reader.remaining() != 0 {
        return Err(Error::corrupt(
            file,
            reader.offset_bytes(),
            format!("{} bytes in the index after its last entry", reader.remaining()),
        ));
    }
    if records_end_bytes != index_offset as u64 {
        return Err(Error::corrupt(
            file,
            records_end_bytes,
            format!(
                "{} unindexed bytes between the last record and the index",
                index_offset as u64 - records_end_bytes
            ),
        ));
    }
    Ok(())
}

/// One index entry as stored, before its meaning is checked.
struct RawEntry<'a> {
    key: &'a [u8],
    value_offset: u64,
    value_len: u32,
}

impl<'a> RawEntry<'a> {
    /// `[key_len u32][value_offset u64][value_len u32][key]`.
    fn decode(reader: &mut ByteReader<'a>) -> std::result::Result<RawEntry<'a>, DecodeError> {
        let key_len = reader.u32()?;
        let value_offset = reader.u64()?;
        let value_len = reader.u32()?;
        let key = reader.bytes(key_len as usize)?;
        Ok(RawEntry { key, value_offset, value_len })
    }
}
