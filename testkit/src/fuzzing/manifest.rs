//! [`manifest_open`]: arbitrary bytes as a manifest.
//!
//! [`Manifest::parse`] (no I/O) and [`Manifest::open`] (on a disk holding
//! the bytes) must agree: both refuse with `Corrupt`, open then changing
//! nothing, or both accept the same live set, open cutting exactly the torn
//! tail parse reported. After an accepting open, a fresh seq is above every
//! seq the file ever held, and an ADD and a DROP appended to the cut file
//! are exactly what a reopen reads back. Then [`Manifest::compact`] keeps
//! exactly that live set and `next_seq`: the compacted file parses and
//! reopens to them, and a seq below `next_seq` is still refused.

use std::collections::BTreeMap;

use super::{dir, disk_with, path_of, read, resealed_frames, with_resealed};
use engine::frame::Log;
use engine::manifest::{Manifest, ManifestState, SegEntry, MANIFEST_FILE, MANIFEST_TEMP_FILE};
use engine::store::segment_file_name;
use engine::vfs::{MemVfs, Vfs};
use engine::{Error, Result};
use std::sync::Arc;

/// Parse and open the bytes as a manifest and append after the open (see
/// the module doc), as given and with their frames resealed (see [the
/// parent](super)). Panics on any broken property: that is a finding.
pub fn manifest_open(data: &[u8]) {
    with_resealed(data, |data, how| resealed_frames(data, Log::Manifest, how), check_all);
}

fn check_all(data: &[u8]) {
    let parsed = Manifest::parse(&path_of(MANIFEST_FILE), data);
    if let Ok(state) = &parsed {
        check_state(data, state);
    }

    let vfs = disk_with(&[(MANIFEST_FILE, data)]);
    let (mut manifest, report) = match (&parsed, Manifest::open(vfs.clone(), dir())) {
        (Err(parse_error), Err(error)) => {
            assert!(error.refuses_bytes(), "open refused a manifest with something other than Corrupt: {error}");
            assert_eq!(error.to_string(), parse_error.to_string(), "open refused for another reason than parse");
            assert_eq!(read(vfs.as_ref(), MANIFEST_FILE), data, "a refused manifest was changed");
            return;
        }
        (Ok(_), Ok(opened)) => opened,
        (Ok(state), Err(error)) => panic!("parse accepted the manifest ({state:?}) but open failed: {error}"),
        (Err(error), Ok(_)) => panic!("parse refused the manifest ({error}) but open accepted it"),
    };
    let state = parsed.expect("matched above");
    assert_eq!(live(&manifest), state.live, "open and parse disagree on the live set");
    assert_eq!(report.records_replayed, state.records);
    assert_eq!(report.torn_tail_bytes, data.len() as u64 - state.valid_len_bytes);
    let file = read(vfs.as_ref(), MANIFEST_FILE);
    if state.valid_len_bytes > 0 {
        assert_eq!(file, data[..state.valid_len_bytes as usize], "open did not cut exactly the torn tail");
    } else {
        let fresh = Manifest::parse(&path_of(MANIFEST_FILE), &file).expect("a fresh header parses");
        assert!(fresh.valid_len_bytes > 0 && fresh.live.is_empty(), "open wrote no fresh header");
    }

    let seq = manifest.allocate_seq();
    assert!(seq >= state.next_seq, "seq {seq} handed out again (next_seq {})", state.next_seq);
    let entry = SegEntry {
        seq,
        file: segment_file_name(b"fuzz", seq),
        table: b"fuzz".to_vec(),
        min_key: b"fuzz:a".to_vec(),
        max_key: b"fuzz:z".to_vec(),
        records: 2,
    };
    expect_ok_or_invalid(manifest.add(entry), "an ADD after open");
    if let Some(&first) = state.live.keys().next() {
        manifest.drop_seg(first).expect("a DROP of a live seq after open");
    }
    let expected = live(&manifest);
    drop(manifest);

    let (mut reopened, report) = Manifest::open(vfs.clone(), dir()).expect("a manifest reopens after its own appends");
    assert_eq!(report.torn_tail_bytes, 0, "appends after open left a torn tail");
    assert_eq!(live(&reopened), expected, "a reopen reads back another live set than was appended");

    check_compaction(&vfs, &mut reopened, &expected);
}

/// Compact `manifest` (open on `vfs`, holding `expected`) and check the
/// compacted ledger means exactly what the appended one did.
fn check_compaction(vfs: &Arc<MemVfs>, manifest: &mut Manifest, expected: &BTreeMap<u64, SegEntry>) {
    let path = path_of(MANIFEST_FILE);
    let before = Manifest::parse(&path, &read(vfs.as_ref(), MANIFEST_FILE)).expect("an appended manifest parses");
    manifest.compact(vfs.as_ref()).expect("a compaction on a fault-free disk");
    assert!(!manifest.compaction_due(), "a compacted ledger is due again");
    assert_eq!(&live(manifest), expected, "compaction changed the live set in memory");
    let after = Manifest::parse(&path, &read(vfs.as_ref(), MANIFEST_FILE)).expect("a compacted manifest parses");
    assert!(after.compacted);
    assert_eq!(after.live, before.live, "compaction changed the live set on disk");
    assert_eq!(after.next_seq, before.next_seq, "compaction changed next_seq");
    assert_eq!(after.records, after.live.len() as u64, "a compacted ledger holds one record per live entry");
    assert!(!vfs.exists(&path_of(MANIFEST_TEMP_FILE)).unwrap(), "the temp file was left behind");
    if before.next_seq > 1 {
        let old = before.next_seq - 1;
        let entry = SegEntry {
            seq: old,
            file: segment_file_name(b"old", old),
            table: b"old".to_vec(),
            min_key: b"old:a".to_vec(),
            max_key: b"old:z".to_vec(),
            records: 1,
        };
        assert!(matches!(manifest.add(entry), Err(Error::Invalid(_))), "seq {old} registered again");
    }
    let (reopened, report) = Manifest::open(vfs.clone(), dir()).expect("a compacted manifest reopens");
    assert_eq!(report.records_replayed, after.records);
    assert_eq!(&live(&reopened), expected, "a compacted manifest reopens to another live set");
}

fn check_state(data: &[u8], state: &ManifestState) {
    assert!(state.valid_len_bytes <= data.len() as u64);
    assert!(state.next_seq >= 1);
    assert!(state.live.len() as u64 <= state.records);
    for (seq, entry) in &state.live {
        assert_eq!(*seq, entry.seq);
        assert!(entry.seq < state.next_seq, "a live seq at or above next_seq");
        assert!(entry.min_key <= entry.max_key);
    }
}

fn live(manifest: &Manifest) -> BTreeMap<u64, SegEntry> {
    manifest.live().map(|entry| (entry.seq, entry.clone())).collect()
}

/// An append the ledger may refuse (a fresh seq past the highest allowed,
/// a file name the input already registered), but not fail otherwise.
fn expect_ok_or_invalid(result: Result<()>, what: &str) {
    match result {
        Ok(()) | Err(Error::Invalid(_)) => {}
        Err(e) => panic!("{what} failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::fixture;
    use crate::fuzzing::flips::{byte_flips, flipped};
    use proptest::prelude::*;

    fn fixture_manifest() -> Vec<u8> {
        fixture().files.iter().find(|(name, _)| name == MANIFEST_FILE).expect("a manifest").1.clone()
    }

    #[test]
    fn the_fixture_manifest_and_every_cut_of_it_pass() {
        let manifest = fixture_manifest();
        for cut in 0..=manifest.len() {
            manifest_open(&manifest[..cut]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn flipped_bytes_in_the_fixture_manifest_never_break_a_property(
            flips in byte_flips(),
        ) {
            manifest_open(&flipped(fixture_manifest(), &flips));
        }
    }
}
