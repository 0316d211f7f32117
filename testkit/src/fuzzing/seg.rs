//! [`seg_read`]: arbitrary bytes as a segment file.
//!
//! Opening verifies or refuses with `Corrupt`. A segment that opens must
//! then agree with itself: the walk yields strictly ascending keys, as many
//! as the footer says, bounded by its min and max keys; a point lookup of
//! every walked key returns the walked value; a range scan returns exactly
//! the walked records between its ends; and a probe key that is not walked
//! is not found. Records are verified when read, so the walk may stop at a
//! damaged record with `Corrupt`; the checks then cover what came before.

use std::ops::RangeInclusive;

use super::{path_of, with_resealed, Reseal};
use engine::seg::Seg;
use engine::vfs::Mapping;
use engine::Result;

/// Probe keys cut from the input: a few of its leading slices, so the
/// fuzzer steers lookups by the same bytes it writes the index with.
const PROBE_LENGTHS: [usize; 4] = [0, 1, 5, 12];

/// Open the bytes as a segment and cross-check every read path (see the
/// module doc), as given and with their checksums resealed (see
/// `resealed` below). Panics on any broken property: that is a finding.
pub fn seg_read(data: &[u8]) {
    with_resealed(data, resealed, check_all);
}

fn check_all(data: &[u8]) {
    let seg = match Seg::from_mapping(path_of("fuzz.seg"), Mapping::from_vec(data.to_vec())) {
        Ok(seg) => seg,
        Err(e) => {
            assert!(e.refuses_bytes(), "a segment failed to open with something other than Corrupt: {e}");
            return;
        }
    };
    let (records, whole) = walk(seg.iter());
    let meta = seg.meta();
    assert!(records.len() as u64 <= meta.records, "the walk yielded more records than the footer holds");
    for pair in records.windows(2) {
        assert!(pair[0].0 < pair[1].0, "the walk is not in strictly ascending key order");
    }
    if whole {
        assert_eq!(records.len() as u64, meta.records, "the walk ended early without an error");
        let bounds = records.first().zip(records.last()).map(|(first, last)| (first.0, last.0));
        assert_eq!(bounds.unwrap_or((&[], &[])), (meta.min_key.as_slice(), meta.max_key.as_slice()));
    }

    for (key, value) in &records {
        assert_eq!(seg.get(key).expect("a walked record reads again"), Some(*value), "get disagrees with the walk");
    }

    let mut probes: Vec<Vec<u8>> = PROBE_LENGTHS.iter().map(|&len| data[..len.min(data.len())].to_vec()).collect();
    for (key, _) in records.iter().take(4) {
        let mut above = key.to_vec();
        above.push(0);
        probes.push(above);
        probes.push(key[..key.len().saturating_sub(1)].to_vec());
    }
    probes.push(meta.min_key.clone());
    probes.push(meta.max_key.clone());
    for probe in &probes {
        check_get(&seg, &records, whole, probe);
    }
    for lo in &probes {
        for hi in probes.iter().take(4) {
            check_range(&seg, &records, whole, lo..=hi);
        }
    }
    check_range(&seg, &records, whole, &meta.min_key..=&meta.max_key);
}

type Walked<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The records an iterator yields before its first error, and whether it
/// ended without one.
fn walk<'a>(items: impl Iterator<Item = Result<(&'a [u8], &'a [u8])>>) -> (Walked<'a>, bool) {
    let mut records = Vec::new();
    for item in items {
        match item {
            Ok(record) => records.push(record),
            Err(e) => {
                assert!(e.refuses_bytes(), "a segment read failed with something other than Corrupt: {e}");
                return (records, false);
            }
        }
    }
    (records, true)
}

fn check_get(seg: &Seg, records: &Walked<'_>, whole: bool, probe: &[u8]) {
    let walked = records.iter().find(|(key, _)| *key == probe).map(|(_, value)| *value);
    match seg.get(probe) {
        Ok(found) if walked.is_some() => assert_eq!(found, walked, "get disagrees with the walk"),
        Ok(Some(_)) if whole => panic!("get found a key the walk never yielded"),
        Ok(_) => {}
        Err(e) => assert!(e.refuses_bytes(), "get failed with something other than Corrupt: {e}"),
    }
}

fn check_range(seg: &Seg, records: &Walked<'_>, whole: bool, bounds: RangeInclusive<&Vec<u8>>) {
    let (lo, hi) = (bounds.start().as_slice(), bounds.end().as_slice());
    let (scanned, scanned_whole) = walk(seg.range(lo, hi));
    let expected: Walked<'_> = records.iter().copied().filter(|(key, _)| lo <= *key && *key <= hi).collect();
    if whole {
        assert!(scanned_whole, "range [{lo:?}, {hi:?}] failed on a record the walk read");
        assert_eq!(scanned, expected, "range [{lo:?}, {hi:?}] disagrees with the walk");
    } else {
        // Past a damaged record neither side knows more: compare what both saw.
        let known = expected.len().min(scanned.len());
        assert_eq!(scanned[..known], expected[..known], "range [{lo:?}, {hi:?}] disagrees with the walk");
    }
}

// The segment layout, as drawn in the module doc of `crate::seg` (whose
// `format.rs` is private to it). A drift here would only make resealing
// miss; the tests below reseal real segments to catch that.
const HEAD_BYTES: usize = 8;
const TAIL_BYTES: usize = 56;
const INDEX_ENTRY_FIXED_BYTES: usize = 16;
const RECORD_CRC_BYTES: usize = 4;
const TAIL_SEQ_AT: usize = 0;
const TAIL_INDEX_OFFSET_AT: usize = 16;
const TAIL_BOUNDS_OFFSET_AT: usize = 24;
const TAIL_INDEX_CRC_AT: usize = 32;
const TAIL_BOUNDS_CRC_AT: usize = 36;
const TAIL_CRC_AT: usize = 44;

/// `bytes` with every checksum its own offsets locate recomputed: each
/// record's (where its index entry says it lies, bound to the tail's seq
/// and the entry's index — or, `Elsewhere`, to the next seq, as a record a
/// misdirected write carried over from another segment), the index's, the
/// key bounds', the tail's.
pub fn resealed(bytes: &[u8], how: Reseal) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if out.len() < HEAD_BYTES + TAIL_BYTES {
        return out;
    }
    let tail = out.len() - TAIL_BYTES;
    let index_offset = u64_at(&out, tail + TAIL_INDEX_OFFSET_AT);
    let bounds_offset = u64_at(&out, tail + TAIL_BOUNDS_OFFSET_AT);
    if index_offset <= bounds_offset && bounds_offset <= tail as u64 {
        let (index_offset, bounds_offset) = (index_offset as usize, bounds_offset as usize);
        let seq = u64_at(&out, tail + TAIL_SEQ_AT).wrapping_add(u64::from(how == Reseal::Elsewhere));
        reseal_records(&mut out, seq, index_offset, bounds_offset);
        let index_crc = crc32fast::hash(&out[index_offset..bounds_offset]);
        put_u32_at(&mut out, tail + TAIL_INDEX_CRC_AT, index_crc);
        let bounds_crc = crc32fast::hash(&out[bounds_offset..tail]);
        put_u32_at(&mut out, tail + TAIL_BOUNDS_CRC_AT, bounds_crc);
    }
    let tail_crc = crc32fast::hash(&out[tail..tail + TAIL_CRC_AT]);
    put_u32_at(&mut out, tail + TAIL_CRC_AT, tail_crc);
    out
}

/// Recompute the checksum of each record an index entry in
/// `[index_offset, bounds_offset)` places wholly before the index.
fn reseal_records(out: &mut [u8], seq: u64, index_offset: usize, bounds_offset: usize) {
    let mut at = index_offset;
    let mut record = 0u64;
    while bounds_offset - at >= INDEX_ENTRY_FIXED_BYTES {
        let key_len = u32_at(out, at) as usize;
        let value_offset = u64_at(out, at + 4);
        let value_len = u32_at(out, at + 12) as usize;
        let key_start = at + INDEX_ENTRY_FIXED_BYTES;
        if key_len > bounds_offset - key_start {
            return;
        }
        let key_end = key_start + key_len;
        let value_end = usize::try_from(value_offset).ok().and_then(|start| start.checked_add(value_len));
        if let Some(value_end) = value_end.filter(|end| end.saturating_add(RECORD_CRC_BYTES) <= index_offset) {
            let value_start = value_end - value_len;
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(&seq.to_le_bytes());
            hasher.update(&record.to_le_bytes());
            hasher.update(&(key_len as u32).to_le_bytes());
            hasher.update(&out[key_start..key_end]);
            hasher.update(&out[value_start..value_end]);
            put_u32_at(out, value_end, hasher.finalize());
        }
        at = key_end;
        record += 1;
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

fn put_u32_at(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::fixture;
    use crate::fuzzing::flips::{byte_flips, flipped};
    use proptest::prelude::*;

    fn fixture_segment() -> Vec<u8> {
        fixture().files.iter().find(|(name, _)| name.ends_with(".seg")).expect("a segment").1.clone()
    }

    #[test]
    fn the_fixture_segment_and_every_cut_of_it_pass() {
        let segment = fixture_segment();
        for cut in 0..=segment.len() {
            seg_read(&segment[..cut]);
        }
    }

    fn open(bytes: Vec<u8>) -> Result<Seg> {
        Seg::from_mapping(path_of("fuzz.seg"), Mapping::from_vec(bytes))
    }

    #[test]
    fn resealing_knows_the_layout() {
        let segment = fixture_segment();
        let resealed = |bytes: &[u8]| resealed(bytes, Reseal::InPlace);
        assert_eq!(resealed(&segment), segment, "a valid segment reseals to itself");

        // A changed seq (tail), a changed value byte (a record) and a
        // changed key byte (the index, the bounds): each opens once
        // resealed, so each checksum is where this file thinks it is.
        let tail = segment.len() - TAIL_BYTES;
        let mut seq = segment.clone();
        seq[tail] = 99;
        assert!(open(seq.clone()).is_err());
        assert_eq!(open(resealed(&seq)).unwrap().meta().seq, 99);

        let mut value = segment.clone();
        value[HEAD_BYTES + 2] ^= 0x01;
        let seg = open(resealed(&value)).unwrap();
        let (records, whole) = walk(seg.iter());
        assert!(whole && !records.is_empty());
        assert!(open(value).unwrap().iter().any(|item| item.is_err()), "the flip was inside a record");

        let index_offset = u64_at(&segment, tail + TAIL_INDEX_OFFSET_AT) as usize;
        let mut key = segment.clone();
        let last_key_byte = index_offset + INDEX_ENTRY_FIXED_BYTES + u32_at(&segment, index_offset) as usize - 1;
        key[last_key_byte] = 0;
        let err = open(resealed(&key)).unwrap_err().to_string();
        assert!(!err.contains("checksum"), "resealing missed a checksum: {err}");
    }

    #[test]
    fn records_resealed_for_another_segment_are_refused_on_read() {
        let elsewhere = resealed(&fixture_segment(), Reseal::Elsewhere);
        let seg = open(elsewhere).expect("the tail, index and bounds are this file's own");
        assert!(seg.iter().all(|item| item.is_err()), "a record bound to another segment was served");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn flipped_bytes_in_the_fixture_segment_never_break_a_property(
            flips in byte_flips(),
        ) {
            seg_read(&flipped(fixture_segment(), &flips));
        }
    }
}
