//! Properties of the segment format as a whole, against a `BTreeMap`
//! model: a built segment reads back as the map it was built from
//! ([`model`]); damaged bytes — flipped, truncated, overwritten — are
//! refused as `Corrupt`, never read as different data ([`damage`]); and
//! no bytes at all make the reader panic ([`fuzz`]). This file holds the
//! shared helpers and generators.

mod damage;
mod fuzz;
mod model;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

use super::format::{
    MIN_FILE_BYTES, TAIL_BOUNDS_CRC_AT, TAIL_BOUNDS_OFFSET_AT, TAIL_BYTES, TAIL_CRC_AT, TAIL_INDEX_CRC_AT,
    TAIL_INDEX_OFFSET_AT,
};
use super::{Seg, SegBuilder, SegMeta};
use crate::vfs::{Mapping, MemVfs, Vfs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const SEQ: u64 = 17;

fn build_on(vfs: &dyn Vfs, path: &Path, model: &Model) -> SegMeta {
    let mut builder = SegBuilder::create(vfs, path, SEQ).unwrap();
    for (key, value) in model {
        builder.push(key, value).unwrap();
    }
    builder.finish().unwrap()
}

/// The bytes of a segment built from `model` on a `MemVfs`.
fn build_bytes(model: &Model) -> Vec<u8> {
    let vfs = MemVfs::new();
    vfs.create_dir_all(Path::new("/db")).unwrap();
    let path = Path::new("/db/row-74-17.seg");
    build_on(&vfs, path, model);
    vfs.map_readonly(path).unwrap().to_vec()
}

fn open_bytes(bytes: Vec<u8>) -> crate::Result<Seg> {
    Seg::from_mapping(PathBuf::from("/db/test.seg"), Mapping::from_vec(bytes))
}

fn meta_of(model: &Model) -> SegMeta {
    SegMeta {
        seq: SEQ,
        records: model.len() as u64,
        min_key: model.keys().next().cloned().unwrap_or_default(),
        max_key: model.keys().next_back().cloned().unwrap_or_default(),
    }
}

/// The model's answer to `range(lo, hi)`.
fn model_range<'m>(model: &'m Model, lo: &[u8], hi: &[u8]) -> Vec<(&'m [u8], &'m [u8])> {
    if lo > hi {
        return Vec::new();
    }
    let bounds = (Bound::Included(lo.to_vec()), Bound::Included(hi.to_vec()));
    model.range(bounds).map(|(k, v)| (k.as_slice(), v.as_slice())).collect()
}

/// Assert that a walk yielded a prefix of `expected` and then either ended
/// exactly at its end or yielded one `Corrupt` and stopped. Returns
/// whether it hit an error.
fn walk_is_prefix_then_corrupt<'a>(
    walk: impl Iterator<Item = crate::Result<(&'a [u8], &'a [u8])>>,
    expected: &[(&[u8], &[u8])],
) -> bool {
    let mut seen = 0usize;
    for item in walk {
        match item {
            Ok((key, value)) => {
                assert!(seen < expected.len(), "walk yielded more records than the model holds");
                assert_eq!((key, value), expected[seen], "walk item {seen} differs from the model");
                seen += 1;
            }
            Err(e) => {
                assert!(e.is_corrupt(), "not corrupt: {e}");
                return true;
            }
        }
    }
    assert_eq!(seen, expected.len(), "walk ended early without an error");
    false
}

/// Open possibly damaged `bytes` of a segment built from `model` and read
/// everything. Every answer must be the original data or `Corrupt`.
/// Returns whether the damage was detected (open or some read failed).
fn never_different(bytes: Vec<u8>, model: &Model, probes: &[Vec<u8>]) -> bool {
    let seg = match open_bytes(bytes) {
        Ok(seg) => seg,
        Err(e) => {
            assert!(e.is_corrupt(), "open failed but not as corrupt: {e}");
            return true;
        }
    };
    assert_eq!(seg.meta(), &meta_of(model), "opened with a different meta");
    let mut detected = false;
    for (key, value) in model {
        match seg.get(key) {
            Ok(Some(got)) => assert_eq!(got, value.as_slice(), "get returned different data"),
            Ok(None) => panic!("get lost a key the segment holds"),
            Err(e) => {
                assert!(e.is_corrupt(), "get failed but not as corrupt: {e}");
                detected = true;
            }
        }
    }
    for probe in probes.iter().filter(|p| !model.contains_key(*p)) {
        assert!(matches!(seg.get(probe), Ok(None)), "an absent key was found");
    }
    let all: Vec<_> = model.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
    detected |= walk_is_prefix_then_corrupt(seg.iter(), &all);
    for pair in probes.windows(2) {
        let (lo, hi) = (&pair[0], &pair[1]);
        detected |= walk_is_prefix_then_corrupt(seg.range(lo, hi), &model_range(model, lo, hi));
    }
    detected
}

fn flip_bit(bytes: &[u8], bit: usize) -> Vec<u8> {
    let mut flipped = bytes.to_vec();
    flipped[bit / 8] ^= 1 << (bit % 8);
    flipped
}

/// Recompute every checksum over whatever ranges the (possibly mutated)
/// tail states, so that mutations reach the checks behind the checksums.
fn reseal(bytes: &mut [u8]) {
    let len = bytes.len();
    if len < MIN_FILE_BYTES {
        return;
    }
    let tail = len - TAIL_BYTES;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let index_offset = u64_at(tail + TAIL_INDEX_OFFSET_AT);
    let bounds_offset = u64_at(tail + TAIL_BOUNDS_OFFSET_AT);
    if index_offset <= bounds_offset && bounds_offset <= tail as u64 {
        let (index_offset, bounds_offset) = (index_offset as usize, bounds_offset as usize);
        let index_crc = crc32fast::hash(&bytes[index_offset..bounds_offset]);
        let bounds_crc = crc32fast::hash(&bytes[bounds_offset..tail]);
        bytes[tail + TAIL_INDEX_CRC_AT..][..4].copy_from_slice(&index_crc.to_le_bytes());
        bytes[tail + TAIL_BOUNDS_CRC_AT..][..4].copy_from_slice(&bounds_crc.to_le_bytes());
    }
    let tail_crc = crc32fast::hash(&bytes[tail..tail + TAIL_CRC_AT]);
    bytes[tail + TAIL_CRC_AT..][..4].copy_from_slice(&tail_crc.to_le_bytes());
}

/// Read everything an opened segment offers; only panics matter here.
fn read_everything(seg: &Seg, probes: &[Vec<u8>]) {
    for probe in probes {
        if let Err(e) = seg.get(probe) {
            assert!(e.is_corrupt(), "{e}");
        }
    }
    for item in seg.iter() {
        if let Err(e) = item {
            assert!(e.is_corrupt(), "{e}");
        }
    }
    for pair in probes.windows(2) {
        for item in seg.range(&pair[0], &pair[1]) {
            if let Err(e) = item {
                assert!(e.is_corrupt(), "{e}");
            }
        }
    }
}

/// A small segment holding the edge cases: an empty key, an empty value,
/// a prefix pair and a high byte.
fn small_model() -> Model {
    [(&b""[..], &b"v0"[..]), (b"a", b""), (b"ab", b"value-ab"), (b"b\xff", b"x")]
        .into_iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

fn small_probes() -> Vec<Vec<u8>> {
    [&b""[..], b"a", b"aa", b"ab", b"b", b"b\xff", b"c", b"\xff\xff"].into_iter().map(<[u8]>::to_vec).collect()
}

// --- strategies ---

/// Keys biased towards collisions and shared prefixes (a four-letter
/// alphabet), with empty and long ones mixed in.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => vec(0u8..4, 0..6),
        3 => vec(any::<u8>(), 0..24),
        1 => vec(any::<u8>(), 0..3000),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..16),
        1 => vec(any::<u8>(), 0..4000),
    ]
}

/// Models whose keys sometimes all share a prefix, as a table's row keys
/// do (the index strips it before comparing key heads).
fn model(max_records: usize) -> impl Strategy<Value = Model> {
    let prefix = prop_oneof![
        2 => Just(Vec::new()),
        1 => vec(0u8..3, 1..12),
        1 => Just(b"user:0000000".to_vec()),
    ];
    (btree_map(key(), value(), 0..max_records), prefix).prop_map(|(model, prefix)| {
        model.into_iter().map(|(key, value)| ([prefix.as_slice(), &key].concat(), value)).collect()
    })
}
