//! Tests of the open manifest: creation, appends, reopen, misuse, failed
//! I/O, and a cut at any byte. Byte-level replay properties (bit flips,
//! arbitrary bytes) live beside replay in `replay.rs`.

use std::sync::atomic::Ordering;

use proptest::prelude::*;

use super::testing::{entry, FaultyVfs, Model, Op};
use super::*;
use crate::vfs::{read_whole, MemVfs, OsVfs};

fn dir() -> &'static Path {
    Path::new("/db")
}

fn mem_vfs() -> Arc<dyn Vfs> {
    let vfs = MemVfs::new();
    vfs.create_dir_all(dir()).unwrap();
    Arc::new(vfs)
}

fn manifest_bytes(vfs: &dyn Vfs) -> Vec<u8> {
    read_whole(vfs, &dir().join(MANIFEST_FILE)).unwrap()
}

fn live_seqs(manifest: &Manifest) -> Vec<u64> {
    manifest.live().map(|e| e.seq).collect()
}

#[test]
fn a_new_manifest_is_created_with_a_durable_header() {
    let vfs = Arc::new(FaultyVfs::new());
    let (mut manifest, report) = Manifest::open(vfs.clone(), dir()).unwrap();
    assert_eq!(report, ManifestReport::default());
    assert_eq!(manifest.path(), dir().join(MANIFEST_FILE));
    assert_eq!(vfs.faults.log(), ["write", "sync", "sync_dir"]);
    assert_eq!(manifest_bytes(vfs.as_ref()).len() as u64, record::HEADER_FRAME_BYTES);
    assert_eq!(manifest.live().count(), 0);
    assert_eq!(manifest.allocate_seq(), 1);
}

#[test]
fn a_read_only_manifest_replays_what_is_there_writes_nothing_and_refuses_appends() {
    let vfs = Arc::new(FaultyVfs::new());
    let path = dir().join(MANIFEST_FILE);
    let (mut manifest, report) = Manifest::open_read_only(vfs.as_ref(), dir()).unwrap();
    assert_eq!(report, ManifestReport::default());
    assert!(!vfs.exists(&path).unwrap(), "a missing manifest stays missing");
    assert!(matches!(manifest.add(entry(1)), Err(Error::ReadOnly { .. })));

    let (mut writer, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    writer.add(entry(1)).unwrap();
    writer.add(entry(2)).unwrap();
    drop(writer);
    let whole = manifest_bytes(vfs.as_ref());
    let torn = &whole[..whole.len() - 3];
    vfs.open(&path, OpenMode::Write).unwrap().set_len(torn.len() as u64).unwrap();
    vfs.faults.clear_log();

    let (mut manifest, report) = Manifest::open_read_only(vfs.as_ref(), dir()).unwrap();
    assert_eq!(live_seqs(&manifest), [1]);
    assert_eq!(report, ManifestReport { records_replayed: 1, torn_tail_bytes: torn.len() as u64 - report_valid(torn) });
    assert!(matches!(manifest.add(entry(3)), Err(Error::ReadOnly { .. })));
    assert!(matches!(manifest.drop_seg(1), Err(Error::ReadOnly { .. })));
    assert_eq!(manifest.allocate_seq(), 2, "the torn ADD of seq 2 never counted");
    assert!(vfs.faults.log().is_empty(), "a read-only manifest wrote: {:?}", vfs.faults.log());
    assert_eq!(manifest_bytes(vfs.as_ref()), torn, "the torn tail stays");
}

/// Where the valid records of `bytes` end.
fn report_valid(bytes: &[u8]) -> u64 {
    Manifest::parse(&dir().join(MANIFEST_FILE), bytes).unwrap().valid_len_bytes
}

#[test]
fn a_missing_directory_is_an_io_error() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let err = Manifest::open(vfs, Path::new("/nowhere")).unwrap_err();
    assert!(matches!(err, Error::Io { op: IoOp::Create | IoOp::Stat, .. }), "{err}");
}

#[test]
fn adds_and_drops_are_each_one_fsynced_append() {
    let vfs = Arc::new(FaultyVfs::new());
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    vfs.faults.clear_log();
    manifest.add(entry(1)).unwrap();
    manifest.add(entry(2)).unwrap();
    manifest.drop_seg(1).unwrap();
    assert_eq!(vfs.faults.log(), ["write", "sync", "write", "sync", "write", "sync"]);
    assert_eq!(live_seqs(&manifest), [2]);
    assert_eq!(manifest.get(2), Some(&entry(2)));
    assert_eq!(manifest.get(1), None);
    assert!(manifest.is_live_file(&entry(2).file));
    assert!(!manifest.is_live_file(&entry(1).file));

    let parsed = Manifest::parse(manifest.path(), &manifest_bytes(vfs.as_ref())).unwrap();
    assert_eq!(parsed.live.values().collect::<Vec<_>>(), manifest.live().collect::<Vec<_>>());
    assert_eq!((parsed.next_seq, parsed.records), (3, 3));
}

#[test]
fn seqs_are_never_reused_across_reopen() {
    let vfs = mem_vfs();
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    let a = manifest.allocate_seq();
    let wasted = manifest.allocate_seq();
    let b = manifest.allocate_seq();
    assert!(a < wasted && wasted < b);
    manifest.add(entry(a)).unwrap();
    manifest.add(entry(b)).unwrap();
    manifest.drop_seg(b).unwrap();
    drop(manifest);

    let (mut manifest, report) = Manifest::open(vfs, dir()).unwrap();
    assert_eq!(report, ManifestReport { records_replayed: 3, torn_tail_bytes: 0 });
    assert_eq!(live_seqs(&manifest), [a]);
    assert_eq!(manifest.allocate_seq(), b + 1, "the dropped seq {b} still counts");
    assert!(matches!(manifest.add(entry(b)), Err(Error::Invalid(_))));
}

#[test]
fn misuse_is_invalid_and_changes_nothing() {
    let vfs = mem_vfs();
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    manifest.add(entry(1)).unwrap();
    manifest.add(entry(2)).unwrap();
    manifest.drop_seg(2).unwrap();
    let before = manifest_bytes(vfs.as_ref());

    let mut same_file = entry(3);
    same_file.file = entry(1).file;
    let mut unordered = entry(4);
    std::mem::swap(&mut unordered.min_key, &mut unordered.max_key);
    let mut huge = entry(5);
    huge.max_key = vec![b'z'; MAX_FRAME_PAYLOAD_BYTES];
    for bad in [entry(1), entry(2), entry(0), same_file, unordered, huge] {
        let seq = bad.seq;
        let err = manifest.add(bad).unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "add of seq {seq}: {err}");
    }
    for seq in [2, 3, 0] {
        let err = manifest.drop_seg(seq).unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "drop of seq {seq}: {err}");
    }
    assert_eq!(manifest_bytes(vfs.as_ref()), before);
    assert_eq!(live_seqs(&manifest), [1]);
    manifest.add(entry(3)).unwrap();
}

#[test]
fn a_failed_sync_poisons_the_manifest() {
    let vfs = Arc::new(FaultyVfs::new());
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    manifest.add(entry(1)).unwrap();
    vfs.faults.fail_sync.store(true, Ordering::SeqCst);
    let err = manifest.add(entry(2)).unwrap_err();
    assert!(matches!(err, Error::Io { op: IoOp::Sync, .. }), "{err}");
    assert_eq!(live_seqs(&manifest), [1], "a failed add registers nothing in memory");

    // Retrying the sync would not bring dropped pages back: stay refused.
    vfs.faults.fail_sync.store(false, Ordering::SeqCst);
    assert!(matches!(manifest.add(entry(3)), Err(Error::Poisoned { .. })));
    assert!(matches!(manifest.drop_seg(1), Err(Error::Poisoned { .. })));
    assert_eq!(manifest.get(1), Some(&entry(1)), "reads still work");
    drop(manifest);

    // On this disk the unsynced ADD happens to have survived; a caller
    // must expect either outcome after a failed call.
    let (manifest, report) = Manifest::open(vfs, dir()).unwrap();
    assert_eq!(report, ManifestReport { records_replayed: 2, torn_tail_bytes: 0 });
    assert_eq!(live_seqs(&manifest), [1, 2]);
}

#[test]
fn a_failed_short_write_poisons_and_is_cut_at_reopen() {
    let vfs = Arc::new(FaultyVfs::new());
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    manifest.add(entry(1)).unwrap();
    let valid_len = manifest_bytes(vfs.as_ref()).len() as u64;
    vfs.faults.fail_write.store(true, Ordering::SeqCst);
    let err = manifest.drop_seg(1).unwrap_err();
    assert!(matches!(err, Error::Io { op: IoOp::Write, .. }), "{err}");
    vfs.faults.fail_write.store(false, Ordering::SeqCst);
    assert!(matches!(manifest.add(entry(2)), Err(Error::Poisoned { .. })));
    drop(manifest);

    let torn_len = manifest_bytes(vfs.as_ref()).len() as u64;
    assert!(torn_len > valid_len, "the injected failure wrote half a record");
    let (manifest, report) = Manifest::open(vfs.clone(), dir()).unwrap();
    assert_eq!(report, ManifestReport { records_replayed: 1, torn_tail_bytes: torn_len - valid_len });
    assert_eq!(live_seqs(&manifest), [1]);
    assert_eq!(manifest_bytes(vfs.as_ref()).len() as u64, valid_len);
}

#[test]
fn mid_file_damage_is_refused_and_left_untouched() {
    let vfs = mem_vfs();
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    for seq in 1..=3 {
        manifest.add(entry(seq)).unwrap();
    }
    drop(manifest);
    let mut bytes = manifest_bytes(vfs.as_ref());
    let damaged_at = record::HEADER_FRAME_BYTES as usize + 11;
    bytes[damaged_at] ^= 0x40;
    let mut file = vfs.open(&dir().join(MANIFEST_FILE), OpenMode::Write).unwrap();
    file.write_at(0, &bytes).unwrap();

    let err = Manifest::open(vfs.clone(), dir()).unwrap_err();
    match err {
        Error::Corrupt { file, offset_bytes, .. } => {
            assert_eq!(file, dir().join(MANIFEST_FILE));
            assert_eq!(offset_bytes, record::HEADER_FRAME_BYTES);
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    assert_eq!(manifest_bytes(vfs.as_ref()), bytes, "a refused open must not cut anything");
}

/// A history written through `Manifest`, with the registry after each
/// whole record: the ground truth for cutting the file anywhere.
struct Written {
    bytes: Vec<u8>,
    /// (end offset of a record, live set and next_seq once it is replayed)
    boundaries: Vec<(u64, BTreeMap<u64, SegEntry>, u64)>,
}

fn write_history(ops: &[Op]) -> Written {
    let vfs = mem_vfs();
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    let snapshot = |m: &Manifest| (m.append_offset_bytes, m.ledger.live().clone(), m.ledger.next_seq());
    let mut boundaries = vec![snapshot(&manifest)];
    for op in ops {
        let appended = match op {
            Op::Add { table, min_key, max_suffix, records } => {
                let seq = manifest.allocate_seq();
                manifest.add(Model::entry_for(seq, table, min_key, max_suffix, *records)).is_ok()
            }
            Op::Drop(pick) => {
                let live = live_seqs(&manifest);
                !live.is_empty() && manifest.drop_seg(live[pick % live.len()]).is_ok()
            }
            _ => false,
        };
        if appended {
            boundaries.push(snapshot(&manifest));
        }
    }
    Written { bytes: manifest_bytes(vfs.as_ref()), boundaries }
}

/// Put `bytes` in a fresh disk's manifest, open it, and check that exactly
/// the whole records before the end survive and the cut is durable.
fn check_open_of_prefix(written: &Written, cut: usize) -> std::result::Result<(), TestCaseError> {
    let vfs = Arc::new(FaultyVfs::new());
    let mut file = vfs.open(&dir().join(MANIFEST_FILE), OpenMode::Create).unwrap();
    file.write_at(0, &written.bytes[..cut]).unwrap();
    drop(file);
    vfs.faults.clear_log();

    let (manifest, report) = Manifest::open(vfs.clone(), dir()).unwrap();
    let whole = written.boundaries.iter().enumerate().rev().find(|(_, b)| b.0 <= cut as u64);
    let (kept, expected_len, live, next_seq) = match whole {
        Some((i, (end, live, next_seq))) => (i as u64, *end, live.clone(), *next_seq),
        // Not even the header is whole: a fresh manifest.
        None => (0, 0, BTreeMap::new(), 1),
    };
    prop_assert_eq!(report.records_replayed, kept);
    prop_assert_eq!(report.torn_tail_bytes, cut as u64 - expected_len);
    prop_assert_eq!(&manifest.ledger.live().clone(), &live);
    prop_assert_eq!(manifest.ledger.next_seq(), next_seq);

    let after = manifest_bytes(vfs.as_ref());
    let log = vfs.faults.log();
    if expected_len == 0 {
        prop_assert_eq!(after.len() as u64, record::HEADER_FRAME_BYTES);
        prop_assert_eq!(log.last().map(String::as_str), Some("sync_dir"));
    } else {
        prop_assert_eq!(&after[..], &written.bytes[..expected_len as usize]);
        if cut as u64 > expected_len {
            prop_assert_eq!(log, vec!["set_len".to_owned(), "sync".to_owned()], "the cut must be made durable");
        } else {
            // A clean open writes nothing, but fsyncs what it replayed (it
            // may be a dead process's unsynced page cache).
            prop_assert_eq!(log, vec!["sync".to_owned()], "a clean open only fsyncs");
        }
    }
    Ok(())
}

#[test]
fn a_cut_at_every_offset_of_one_history_opens_to_its_whole_records() {
    let ops: Vec<Op> = (0..4)
        .map(|i| Op::Add { table: vec![i], min_key: vec![b'k', i], max_suffix: vec![i], records: u64::from(i) })
        .chain([Op::Drop(1), Op::Drop(2)])
        .collect();
    let written = write_history(&ops);
    assert_eq!(written.boundaries.len(), 7, "header, four ADDs, two DROPs");
    for cut in 0..=written.bytes.len() {
        check_open_of_prefix(&written, cut).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
    }
}

/// Apply a generated history to a manifest in `dir` on `vfs`, checking it
/// against the model after every step and across every reopen.
fn run_history(vfs: Arc<dyn Vfs>, dir: &Path, ops: &[Op]) -> std::result::Result<(), TestCaseError> {
    let mut model = Model::default();
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir).unwrap();
    let mut highest_handed_out = 0u64;
    for op in ops {
        match op {
            Op::Add { table, min_key, max_suffix, records } => {
                let seq = manifest.allocate_seq();
                prop_assert!(seq > highest_handed_out && model.ever_added.last().is_none_or(|&s| seq > s));
                highest_handed_out = seq;
                let entry = Model::entry_for(seq, table, min_key, max_suffix, *records);
                manifest.add(entry.clone()).unwrap();
                model.live.insert(seq, entry);
                model.ever_added.insert(seq);
                model.records += 1;
            }
            Op::Drop(pick) => {
                let live: Vec<u64> = model.live.keys().copied().collect();
                if !live.is_empty() {
                    let seq = live[pick % live.len()];
                    manifest.drop_seg(seq).unwrap();
                    model.live.remove(&seq);
                    model.records += 1;
                }
            }
            Op::Waste => {
                let seq = manifest.allocate_seq();
                prop_assert!(seq > highest_handed_out);
                highest_handed_out = seq;
            }
            Op::AddReused(pick) => {
                let ever: Vec<u64> = model.ever_added.iter().copied().collect();
                if !ever.is_empty() {
                    let seq = ever[pick % ever.len()];
                    let mut again = Model::entry_for(seq, b"again", b"a", b"", 1);
                    again.file = format!("again-{seq}.seg");
                    prop_assert!(matches!(manifest.add(again), Err(Error::Invalid(_))));
                }
            }
            Op::DropNotLive(pick) => {
                let seq = model.not_live(*pick);
                prop_assert!(matches!(manifest.drop_seg(seq), Err(Error::Invalid(_))));
            }
            Op::Reopen => {
                drop(manifest);
                let (reopened, report) = Manifest::open(vfs.clone(), dir).unwrap();
                prop_assert_eq!(report, ManifestReport { records_replayed: model.records, torn_tail_bytes: 0 });
                manifest = reopened;
                highest_handed_out = 0;
            }
            Op::Compact => {
                manifest.compact(vfs.as_ref()).unwrap();
                model.records = model.live.len() as u64;
                prop_assert!(!manifest.compaction_due());
            }
        }
        prop_assert_eq!(manifest.file_records(), model.records);
        prop_assert!(manifest.live().eq(model.live.values()));
        for entry in model.live.values() {
            prop_assert!(manifest.is_live_file(&entry.file));
        }
        let expected_next = model.ever_added.last().map_or(1, |seq| seq + 1);
        prop_assert_eq!(manifest.ledger.next_seq(), expected_next);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn random_histories_survive_reopen(ops in proptest::collection::vec(super::testing::op(), 0..60)) {
        run_history(mem_vfs(), dir(), &ops)?;
    }

    #[test]
    fn a_cut_at_any_offset_opens_to_the_whole_records_before_it(
        ops in proptest::collection::vec(super::testing::op(), 0..30),
        cut in any::<prop::sample::Index>(),
    ) {
        let written = write_history(&ops);
        check_open_of_prefix(&written, cut.index(written.bytes.len() + 1))?;
    }
}

proptest! {
    // Real files and fsyncs are slow: few cases, but the same property.
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_histories_survive_reopen_on_disk(ops in proptest::collection::vec(super::testing::op(), 0..40)) {
        let tmp = tempfile::tempdir().unwrap();
        run_history(Arc::new(OsVfs), tmp.path(), &ops)?;
    }
}

/// Put `bytes` as the manifest of a fresh disk.
fn disk_holding(bytes: &[u8]) -> Arc<dyn Vfs> {
    let vfs = mem_vfs();
    vfs.open(&dir().join(MANIFEST_FILE), OpenMode::Create).unwrap().write_at(0, bytes).unwrap();
    vfs
}

/// Read compatibility: a version-2 manifest — appended, or compacted by an
/// older segsim — replays exactly as version 2 did, takes appends as it
/// stands (its records are version 3's), and the first compaction rewrites
/// it as version 3.
#[test]
fn a_version_2_manifest_still_opens_takes_appends_and_compacts_to_version_3() {
    use super::record::{Header, Record};
    use super::testing::{encode_records, V2};
    let (add, drop_seq) = (|seq| Record::Add(entry(seq)), Record::Drop);
    let compacted = |next_seq, live_entries| Record::Compacted { next_seq, live_entries };
    let end = |next_seq, live_entries| Record::CompactedEnd { next_seq, live_entries };
    let appended = [V2, add(1), add(2), drop_seq(1)];
    let older_compacted = [V2, compacted(9, 1), add(2), end(9, 1), add(9), drop_seq(2)];
    for (recs, live, next_seq, was_compacted) in [(&appended[..], 2, 3, false), (&older_compacted[..], 9, 10, true)] {
        let (bytes, _) = encode_records(recs);
        let path = dir().join(MANIFEST_FILE);
        let state = Manifest::parse(&path, &bytes).unwrap();
        assert_eq!((state.version, state.compacted, state.next_seq), (2, was_compacted, next_seq));
        assert_eq!(state.live.keys().copied().collect::<Vec<_>>(), [live]);

        let vfs = disk_holding(&bytes);
        let (mut manifest, report) = Manifest::open(vfs.clone(), dir()).unwrap();
        assert_eq!(report.torn_tail_bytes, 0);
        assert_eq!(manifest.allocate_seq(), next_seq);
        manifest.add(entry(next_seq)).unwrap();
        let grown = manifest_bytes(vfs.as_ref());
        assert_eq!(grown[..bytes.len()], bytes[..], "an append to a version-2 file leaves it as it was");
        let reread = Manifest::parse(&path, &grown).unwrap();
        assert_eq!((reread.version, reread.next_seq, reread.live.len()), (2, next_seq + 1, 2));

        manifest.compact(vfs.as_ref()).unwrap();
        drop(manifest);
        let rewritten = manifest_bytes(vfs.as_ref());
        let after = Manifest::parse(&path, &rewritten).unwrap();
        assert_eq!((after.version, after.compacted, after.next_seq), (3, true, next_seq + 1));
        assert_eq!(after.live, reread.live);
        let mut header = Vec::new();
        record::encode_header(&mut header, Header::Compacted { next_seq: next_seq + 1 });
        assert_eq!(rewritten[..header.len()], header[..], "the compacted header carries next_seq");
    }
}

#[test]
fn a_manifest_of_an_unknown_version_is_refused_by_its_version_and_left_untouched() {
    for version in [0u32, 1, 4, u32::MAX] {
        let mut payload = b"SEGSMANI".to_vec();
        payload.extend_from_slice(&version.to_le_bytes());
        payload.extend_from_slice(&0u64.to_le_bytes());
        let mut bytes = Vec::new();
        crate::frame::encode_frame(&mut bytes, crate::frame::Place::manifest(0), 1, &payload);
        let vfs = disk_holding(&bytes);
        match Manifest::open(vfs.clone(), dir()) {
            Err(err @ Error::UnknownFormat { .. }) => {
                let Error::UnknownFormat { file, version: named, reads } = &err else { unreachable!() };
                assert_eq!((file.as_path(), *named, *reads), (dir().join(MANIFEST_FILE).as_path(), version, 3));
                assert!(err.refuses_bytes() && !err.is_corrupt());
                assert!(err.to_string().contains(&format!("format version {version}")), "{err}");
            }
            other => panic!("version {version}: expected UnknownFormat, got {other:?}"),
        }
        assert_eq!(manifest_bytes(vfs.as_ref()), bytes, "a refused open changed the manifest");
    }
}
