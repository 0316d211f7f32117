//! A built segment answers `get`, `range` and `iter` exactly as the
//! `BTreeMap` it was built from, for any keys and values: empty, long,
//! sharing prefixes; on the in-memory disk and through a real memory map.

use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::*;
use crate::vfs::OsVfs;
use crate::Error;
use crate::IoOp;

/// Keys next to `key`: itself, just above, just below. Absent neighbours
/// share all but the end of a stored key, so their key heads tie with it.
fn neighbours(key: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![key.to_vec(), [key, &[0]].concat(), [key, &[0xFF]].concat()];
    if let Some((&last, rest)) = key.split_last() {
        out.push(rest.to_vec());
        out.push([rest, &[last.wrapping_add(1)]].concat());
        out.push([rest, &[last.wrapping_sub(1)]].concat());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn reads_equal_the_model(
        model in model(48),
        random_probes in vec(key(), 0..8),
        picks in vec(any::<Index>(), 0..8),
    ) {
        let seg = open_bytes(build_bytes(&model)).unwrap();
        prop_assert_eq!(seg.meta(), &meta_of(&model));
        for (key, value) in &model {
            prop_assert_eq!(seg.get(key).unwrap(), Some(value.as_slice()));
        }
        let all: Vec<_> = seg.iter().map(Result::unwrap).collect();
        let expected: Vec<_> = model.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
        prop_assert_eq!(all, expected);

        // Probes: random keys (mostly absent, often outside the keys'
        // shared prefix) and the neighbours of stored keys.
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let mut probes = random_probes;
        for pick in &picks {
            if !keys.is_empty() {
                probes.extend(neighbours(keys[pick.index(keys.len())]));
            }
        }
        for probe in &probes {
            prop_assert_eq!(seg.get(probe).unwrap(), model.get(probe).map(Vec::as_slice));
        }
        // Consecutive probes as bounds: on stored keys and between them,
        // lo > hi included.
        for pair in probes.windows(2) {
            let (lo, hi) = (&pair[0], &pair[1]);
            let got: Vec<_> = seg.range(lo, hi).map(Result::unwrap).collect();
            prop_assert_eq!(got, model_range(&model, lo, hi));
        }
    }
}

#[test]
fn empty_segment_is_valid_and_empty() {
    let model = Model::new();
    let seg = open_bytes(build_bytes(&model)).unwrap();
    assert_eq!(seg.meta(), &meta_of(&model));
    assert_eq!(seg.get(b"").unwrap(), None);
    assert_eq!(seg.iter().count(), 0);
    assert_eq!(seg.range(b"", b"\xff\xff").count(), 0);
}

#[test]
fn zero_and_hundred_kib_keys_and_values_on_the_real_file_system() {
    const BIG: usize = 100 << 10;
    let mut model = Model::new();
    model.insert(Vec::new(), vec![0xA5; BIG]);
    model.insert(b"small".to_vec(), Vec::new());
    model.insert(vec![b'k'; BIG], Vec::new());
    model.insert(vec![b'z'; BIG], (0..BIG).map(|i| (i % 251) as u8).collect());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("row-74-17.seg");
    let meta = build_on(&OsVfs, &path, &model);
    assert_eq!(meta, meta_of(&model));

    let seg = Seg::open(&OsVfs, &path).unwrap();
    assert_eq!(seg.path(), path);
    assert_eq!(seg.meta(), &meta);
    for (key, value) in &model {
        assert_eq!(seg.get(key).unwrap(), Some(value.as_slice()));
    }
    assert_eq!(seg.get(&vec![b'k'; BIG - 1]).unwrap(), None);
    assert_eq!(seg.get(&vec![b'k'; BIG + 1]).unwrap(), None);
    let all: Vec<_> = seg.iter().map(Result::unwrap).collect();
    let expected: Vec<_> = model.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
    assert_eq!(all, expected);
    // "small" sorts between the two long keys.
    let middle: Vec<usize> = seg.range(b"k", b"t").map(|r| r.unwrap().1.len()).collect();
    assert_eq!(middle, vec![0, 0]);
    let keys: Vec<usize> = seg.range(b"k", b"t").map(|r| r.unwrap().0.len()).collect();
    assert_eq!(keys, vec![BIG, b"small".len()]);
}

#[test]
fn opening_a_missing_file_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = Seg::open(&OsVfs, &dir.path().join("nope.seg")).unwrap_err();
    assert!(matches!(err, Error::Io { op: IoOp::Map, .. }), "{err}");
}

// --- pushes out of order ---

#[test]
fn unsorted_and_duplicate_pushes_are_invalid_and_write_nothing() {
    let vfs = MemVfs::new();
    vfs.create_dir_all(Path::new("/db")).unwrap();
    let path = Path::new("/db/row-74-17.seg");
    let mut builder = SegBuilder::create(&vfs, path, SEQ).unwrap();
    builder.push(b"b", b"1").unwrap();

    for (key, why) in [(&b"a"[..], "below the previous key"), (b"b", "duplicate key"), (b"", "below")] {
        let err = builder.push(key, b"refused").unwrap_err();
        let Error::Invalid(message) = &err else { panic!("not invalid: {err}") };
        assert!(message.contains("/db/row-74-17.seg"), "{message}");
        assert!(message.contains("record 1"), "{message}");
        assert!(message.contains(why), "{message}");
    }
    builder.push(b"c", b"2").unwrap();
    builder.finish().unwrap();

    // Byte for byte the file a builder that never saw the refused pushes
    // writes.
    let model: Model = [(b"b".to_vec(), b"1".to_vec()), (b"c".to_vec(), b"2".to_vec())].into();
    assert_eq!(vfs.map_readonly(path).unwrap().to_vec(), build_bytes(&model));
}
