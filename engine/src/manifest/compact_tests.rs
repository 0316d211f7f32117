//! Tests of manifest compaction (`compact.rs`): the compacted ledger keeps
//! the live set and `next_seq`, a dropped seq stays refused, damage to a
//! compacted ledger's snapshot is refused rather than cut, failures poison,
//! and a process stopped or a power lost at each of compaction's phases
//! leaves a manifest that opens to the same state.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::record::{Record, HEADER_FRAME_BYTES, V2_HEADER_FRAME_BYTES};
use super::testing::{compacted_header, encode_records, entry, FaultyVfs, StopAt, APPENDED, V2};
use super::*;
use crate::vfs::{read_whole, MemVfs};
use crate::Phase;

fn dir() -> &'static Path {
    Path::new("/db")
}

fn manifest_path() -> PathBuf {
    dir().join(MANIFEST_FILE)
}

fn temp_path() -> PathBuf {
    dir().join(MANIFEST_TEMP_FILE)
}

fn mem() -> Arc<MemVfs> {
    let vfs = MemVfs::new();
    vfs.create_dir_all(dir()).unwrap();
    Arc::new(vfs)
}

/// Every file in the directory, by name.
fn files(vfs: &dyn Vfs) -> BTreeMap<String, Vec<u8>> {
    let names = vfs.list_dir(dir()).unwrap();
    names
        .into_iter()
        .map(|name| {
            let bytes = read_whole(vfs, &dir().join(&name)).unwrap();
            (name.into_string().expect("the engine writes UTF-8 names"), bytes)
        })
        .collect()
}

/// A fresh disk holding exactly `files`.
fn disk_with(files: &BTreeMap<String, Vec<u8>>) -> Arc<MemVfs> {
    let vfs = mem();
    for (name, bytes) in files {
        let mut file = vfs.open(&dir().join(name), OpenMode::Create).unwrap();
        file.write_at(0, bytes).unwrap();
    }
    vfs
}

fn live_seqs(manifest: &Manifest) -> Vec<u64> {
    manifest.live().map(|e| e.seq).collect()
}

/// Seqs 1..=20 added and all but 4 and 11 dropped: 38 records, 2 live,
/// and the highest seq ever registered (20) dropped, so `next_seq` is
/// above every live seq.
const KEPT: [u64; 2] = [4, 11];
const NEXT_SEQ: u64 = 21;

fn dead_heavy(vfs: Arc<dyn Vfs>) -> Manifest {
    let (mut manifest, _) = Manifest::open(vfs, dir()).unwrap();
    for seq in 1..NEXT_SEQ {
        assert_eq!(manifest.allocate_seq(), seq);
        manifest.add(entry(seq)).unwrap();
    }
    for seq in (1..NEXT_SEQ).filter(|seq| !KEPT.contains(seq)) {
        manifest.drop_seg(seq).unwrap();
    }
    assert_eq!(manifest.file_records(), 38);
    assert!(manifest.compaction_due());
    manifest
}

/// The bytes a compaction of [`dead_heavy`] must write.
fn compacted_image() -> Vec<u8> {
    let live_entries = KEPT.len() as u64;
    let recs = [
        compacted_header(NEXT_SEQ),
        Record::Compacted { next_seq: NEXT_SEQ, live_entries },
        Record::Add(entry(4)),
        Record::Add(entry(11)),
        Record::CompactedEnd { next_seq: NEXT_SEQ, live_entries },
    ];
    encode_records(&recs).0
}

/// The live set and next seq the manifest in `vfs` opens to, checking the
/// open cut nothing.
fn opened_state(vfs: Arc<dyn Vfs>) -> (Vec<u64>, u64, ManifestReport) {
    let (mut manifest, report) = Manifest::open(vfs, dir()).unwrap();
    assert_eq!(report.torn_tail_bytes, 0);
    let live = live_seqs(&manifest);
    (live, manifest.allocate_seq(), report)
}

#[test]
fn the_threshold_needs_both_the_minimum_and_dead_records_dominating() {
    let vfs: Arc<dyn Vfs> = mem();
    let (mut manifest, _) = Manifest::open(vfs, dir()).unwrap();
    // Many records, all live: never due.
    for seq in 1..=COMPACT_MIN_RECORDS {
        manifest.add(entry(seq)).unwrap();
    }
    assert!(!manifest.compaction_due());
    // `n` live, `k` dropped: `n + k` records against `n - k` live entries,
    // due once `n + k >= 2 (n - k)`, that is `3k >= n`.
    let due_at = COMPACT_MIN_RECORDS.div_ceil(3);
    for seq in 1..due_at {
        manifest.drop_seg(seq).unwrap();
        assert!(!manifest.compaction_due(), "due after dropping {seq}");
    }
    manifest.drop_seg(due_at).unwrap();
    let live = manifest.live().count() as u64;
    assert!(manifest.file_records() >= COMPACT_RECORDS_PER_LIVE * live);
    assert!(manifest.compaction_due());

    // Dead records dominating a short file: not due below the minimum.
    let vfs: Arc<dyn Vfs> = mem();
    let (mut manifest, _) = Manifest::open(vfs, dir()).unwrap();
    let short = (COMPACT_MIN_RECORDS - 1) / 2;
    for seq in 1..=short {
        manifest.add(entry(seq)).unwrap();
        manifest.drop_seg(seq).unwrap();
    }
    assert!(manifest.file_records() < COMPACT_MIN_RECORDS);
    assert!(!manifest.compaction_due());
}

#[test]
fn compaction_keeps_the_live_set_and_next_seq() {
    let vfs = Arc::new(FaultyVfs::new());
    let mut manifest = dead_heavy(vfs.clone());
    let wasted = manifest.allocate_seq();
    assert_eq!(wasted, NEXT_SEQ, "handed out, never ADDed");
    vfs.faults.clear_log();

    manifest.compact(vfs.as_ref()).unwrap();
    assert_eq!(vfs.faults.log(), ["write", "sync", "sync_dir"], "temp written and fsynced, renamed, directory fsynced");
    assert_eq!(live_seqs(&manifest), KEPT);
    assert_eq!(manifest.file_records(), 2);
    assert!(!manifest.compaction_due());
    assert_eq!(read_whole(vfs.as_ref(), &manifest_path()).unwrap(), compacted_image(), "the layout of record.rs");
    assert!(!vfs.exists(&temp_path()).unwrap(), "the temp file became the manifest");
    let parsed = Manifest::parse(&manifest_path(), &compacted_image()).unwrap();
    assert_eq!(parsed.live.keys().copied().collect::<Vec<_>>(), KEPT);
    assert_eq!((parsed.next_seq, parsed.records, parsed.compacted), (NEXT_SEQ, 2, true));

    // This instance still skips the seq it handed out; appends go to the
    // new file.
    let seq = manifest.allocate_seq();
    assert_eq!(seq, NEXT_SEQ + 1);
    manifest.add(entry(seq)).unwrap();
    manifest.drop_seg(4).unwrap();
    assert_eq!(manifest.file_records(), 4);
    drop(manifest);

    let (mut reopened, report) = Manifest::open(vfs.clone(), dir()).unwrap();
    assert_eq!(report, ManifestReport { records_replayed: 4, torn_tail_bytes: 0 });
    assert_eq!(live_seqs(&reopened), [11, NEXT_SEQ + 1]);
    assert_eq!(reopened.allocate_seq(), NEXT_SEQ + 2);
}

#[test]
fn next_seq_survives_compacting_an_empty_live_set_and_compacting_again() {
    let vfs: Arc<dyn Vfs> = mem();
    let mut manifest = dead_heavy(vfs.clone());
    for seq in KEPT {
        manifest.drop_seg(seq).unwrap();
    }
    manifest.compact(vfs.as_ref()).unwrap();
    assert_eq!(manifest.file_records(), 0);
    manifest.compact(vfs.as_ref()).unwrap();
    drop(manifest);
    let (live, next, report) = opened_state(vfs.clone());
    assert_eq!((live, next, report.records_replayed), (vec![], NEXT_SEQ, 0));
    let bytes = read_whole(vfs.as_ref(), &manifest_path()).unwrap();
    let recs = [
        compacted_header(NEXT_SEQ),
        Record::Compacted { next_seq: NEXT_SEQ, live_entries: 0 },
        Record::CompactedEnd { next_seq: NEXT_SEQ, live_entries: 0 },
    ];
    assert_eq!(bytes, encode_records(&recs).0);
}

#[test]
fn an_old_seq_is_refused_after_compaction_by_an_append_and_by_replay() {
    let vfs: Arc<dyn Vfs> = mem();
    let mut manifest = dead_heavy(vfs.clone());
    manifest.compact(vfs.as_ref()).unwrap();
    let before = read_whole(vfs.as_ref(), &manifest_path()).unwrap();
    // Dropped before the compaction, and never registered (below a live seq).
    for seq in [NEXT_SEQ - 1, 5, 2] {
        match manifest.add(entry(seq)) {
            Err(Error::Invalid(why)) => assert!(why.contains("below next_seq"), "{why}"),
            other => panic!("ADD of old seq {seq}: {other:?}"),
        }
    }
    assert_eq!(read_whole(vfs.as_ref(), &manifest_path()).unwrap(), before, "a refused ADD writes nothing");

    // The same ADD written by hand after the snapshot is damage, at its offset.
    let mut bytes = compacted_image();
    let at = bytes.len() as u64;
    super::record::encode_add(&mut bytes, 0, &entry(NEXT_SEQ - 1));
    match Manifest::parse(&manifest_path(), &bytes) {
        Err(Error::Corrupt { offset_bytes, reason, .. }) => {
            assert_eq!(offset_bytes, at);
            assert!(reason.starts_with(&format!("ADD of seq {}: seq is below next_seq", NEXT_SEQ - 1)), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// `bytes` must be refused as corrupt at `offset_bytes` with a reason
/// containing `why`.
fn refused(bytes: &[u8], offset_bytes: u64, why: &str) {
    match Manifest::parse(&manifest_path(), bytes) {
        Err(Error::Corrupt { offset_bytes: at, reason, .. }) => {
            assert_eq!(at, offset_bytes, "{reason}");
            assert!(reason.contains(why), "{reason:?} does not say {why:?}");
        }
        other => panic!("expected Corrupt ({why}), got {other:?}"),
    }
}

#[test]
fn a_version_2_compacted_ledger_that_breaks_its_rules_is_refused() {
    let open = |next_seq, live_entries| Record::Compacted { next_seq, live_entries };
    let end = |next_seq, live_entries| Record::CompactedEnd { next_seq, live_entries };
    let add = |seq| Record::Add(entry(seq));
    let h = V2_HEADER_FRAME_BYTES;

    // COMPACTED only right after the header, and once.
    let (bytes, ends) = encode_records(&[V2, add(1), open(5, 0), end(5, 0)]);
    refused(&bytes, ends[1] as u64, "not right after the header");
    let (bytes, ends) = encode_records(&[V2, open(5, 0), end(5, 0), open(5, 0), end(5, 0)]);
    refused(&bytes, ends[2] as u64, "not right after the header");
    let (bytes, ends) = encode_records(&[V2, open(5, 0), open(5, 0)]);
    refused(&bytes, ends[1] as u64, "not right after the header");
    let (bytes, _) = encode_records(&[open(5, 0), end(5, 0)]);
    refused(&bytes, 0, "the first record is not the manifest header");
    // COMPACTED_END only closing a snapshot.
    let (bytes, ends) = encode_records(&[V2, add(1), end(5, 0)]);
    refused(&bytes, ends[1] as u64, "a COMPACTED_END outside a compacted ledger's snapshot");
    let (bytes, ends) = encode_records(&[V2, open(5, 0), end(5, 0), end(5, 0)]);
    refused(&bytes, ends[2] as u64, "a COMPACTED_END outside");

    // next_seq in range, and room below it for the announced entries.
    let (bytes, _) = encode_records(&[V2, open(0, 0), end(0, 0)]);
    refused(&bytes, h, "next_seq is not above every live seq");
    let (bytes, _) = encode_records(&[V2, open(ledger_max_seq() + 2, 0), end(ledger_max_seq() + 2, 0)]);
    refused(&bytes, h, "beyond the highest allowed seq");
    let (bytes, _) = encode_records(&[V2, open(3, 3)]);
    refused(&bytes, h, "announces 3 live entries below next_seq 3");
    let (bytes, _) = encode_records(&[V2, open(u64::MAX, u64::MAX)]);
    refused(&bytes, h, "COMPACTED with next_seq");

    the_snapshot_s_own_rules_are_checked(V2, h);
}

/// Inside a snapshot of `next_seq` 9 opened after `header` (whose frame
/// takes `h` bytes): exactly its ADDs, ascending, below next_seq, then an
/// end that matches; after it, an appended ledger. The same rules in
/// version 2 and 3.
fn the_snapshot_s_own_rules_are_checked(header: Record, h: u64) {
    let open = |next_seq, live_entries| Record::Compacted { next_seq, live_entries };
    let end = |next_seq, live_entries| Record::CompactedEnd { next_seq, live_entries };
    let add = |seq| Record::Add(entry(seq));
    let with = |recs: &[Record]| encode_records(&[[header.clone()].as_slice(), recs].concat());
    let (bytes, ends) = with(&[open(9, 2), add(2), Record::Drop(2)]);
    refused(&bytes, ends[2] as u64, "DROP of seq 2 inside a compacted ledger's snapshot");
    let (bytes, ends) = with(&[open(9, 2), add(2), add(9)]);
    refused(&bytes, ends[2] as u64, "at or above its next_seq 9");
    let (bytes, ends) = with(&[open(9, 2), add(5), add(2)]);
    refused(&bytes, ends[2] as u64, "ADD of seq 2: seq is below next_seq");
    let (bytes, ends) = with(&[open(9, 1), add(5), add(6), end(9, 1)]);
    refused(&bytes, ends[2] as u64, "past the compacted ledger's 1 live entries");
    let (bytes, ends) = with(&[open(9, 2), add(5), end(9, 2)]);
    refused(&bytes, ends[2] as u64, "COMPACTED_END after 1 of the snapshot's 2 live entries");
    let (bytes, ends) = with(&[open(9, 1), add(5), end(10, 1)]);
    refused(&bytes, ends[2] as u64, &format!("does not match its COMPACTED at byte {h}"));
    let (bytes, ends) = with(&[open(9, 2), add(5), Record::Header(super::record::Header::Appended)]);
    refused(&bytes, ends[2] as u64, "a second manifest header");

    // After the snapshot, an appended ledger: ADDs from next_seq on.
    let (bytes, _) = with(&[open(9, 1), add(5), end(9, 1), add(9), Record::Drop(5)]);
    let state = Manifest::parse(&manifest_path(), &bytes).unwrap();
    let live: Vec<u64> = state.live.keys().copied().collect();
    assert_eq!((live, state.next_seq, state.records, state.compacted), (vec![9], 10, 3, true));
    let (bytes, ends) = with(&[open(9, 1), add(5), end(9, 1), add(8)]);
    refused(&bytes, ends[3] as u64, "ADD of seq 8: seq is below next_seq");
}

#[test]
fn a_version_3_header_says_whether_a_snapshot_follows_and_is_held_to_it() {
    let open = |next_seq, live_entries| Record::Compacted { next_seq, live_entries };
    let end = |next_seq, live_entries| Record::CompactedEnd { next_seq, live_entries };
    let add = |seq| Record::Add(entry(seq));
    let h = HEADER_FRAME_BYTES;

    // "Compacted": the snapshot, with the header's next_seq, comes first.
    for (after, why) in [
        (add(1), "yet the record after it is not its snapshot's COMPACTED"),
        (end(5, 0), "yet the record after it is not its snapshot's COMPACTED"),
        (Record::Drop(1), "yet the record after it is not its snapshot's COMPACTED"),
        (open(6, 0), "COMPACTED with next_seq 6, yet the header says the snapshot's is 5"),
        (open(4, 0), "COMPACTED with next_seq 4, yet the header says the snapshot's is 5"),
    ] {
        let (bytes, _) = encode_records(&[compacted_header(5), after, end(5, 0)]);
        refused(&bytes, h, why);
    }
    let (bytes, _) = encode_records(&[compacted_header(5)]);
    refused(&bytes, h, "no valid record follows it");
    let mut garbage = bytes.clone();
    garbage.extend([0xAB; 40]);
    refused(&garbage, h, "where the header says the compacted ledger's snapshot (next_seq 5) starts");
    let (bytes, ends) = encode_records(&[compacted_header(5), open(5, 0), end(5, 0), open(5, 0), end(5, 0)]);
    refused(&bytes, ends[2] as u64, "not right after the header");
    let (bytes, _) = encode_records(&[compacted_header(u64::MAX), open(u64::MAX, 0), end(u64::MAX, 0)]);
    refused(&bytes, h, "COMPACTED with next_seq");

    // "Never compacted": no snapshot anywhere.
    let (bytes, _) = encode_records(&[APPENDED, open(5, 0), end(5, 0)]);
    refused(&bytes, h, "a COMPACTED record in a ledger whose header says it was never compacted");
    let (bytes, ends) = encode_records(&[APPENDED, add(1), open(5, 0), end(5, 0)]);
    refused(&bytes, ends[1] as u64, "not right after the header");

    the_snapshot_s_own_rules_are_checked(compacted_header(9), h);
    let (bytes, _) = encode_records(&[compacted_header(9), open(9, 1), add(5), end(9, 1)]);
    let state = Manifest::parse(&manifest_path(), &bytes).unwrap();
    assert_eq!((state.version, state.compacted, state.next_seq), (3, true, 9));
}

fn ledger_max_seq() -> u64 {
    super::ledger::MAX_SEQ
}

#[test]
fn a_compacted_snapshot_is_never_cut_as_a_torn_tail() {
    let bytes = compacted_image();
    for cut in 0..=bytes.len() {
        let result = Manifest::parse(&manifest_path(), &bytes[..cut]);
        if cut < HEADER_FRAME_BYTES as usize {
            // Not even the header is whole: to any format that is the torn
            // header of a file being created. A compacted file was whole
            // when it was renamed into place, so only damage to the whole
            // file gets here; it reads as an empty ledger, and the store
            // refuses a headerless manifest beside a written log.
            let state = result.unwrap();
            assert!(state.live.is_empty() && state.next_seq == 1 && !state.compacted, "cut at {cut}");
            assert_eq!(state.valid_len_bytes, 0, "cut at {cut}");
        } else if cut < bytes.len() {
            // The header says a snapshot follows: any cut of it is damage,
            // even one that leaves nothing valid after the header.
            let err = result.unwrap_err();
            assert!(err.is_corrupt(), "cut at {cut}: {err}");
        } else {
            assert_eq!(result.unwrap().live.len(), 2);
        }
    }
    // A tail torn after the snapshot is an appended record's, and cut.
    let mut appended = bytes.clone();
    appended.extend(encode_records(&[Record::Add(entry(NEXT_SEQ))]).0);
    let state = Manifest::parse(&manifest_path(), &appended[..appended.len() - 3]).unwrap();
    assert_eq!(state.valid_len_bytes, bytes.len() as u64);
    assert_eq!(state.next_seq, NEXT_SEQ);
}

/// The open finding `manifest-compacted-cut-seq-reuse` in general: a
/// compacted ledger's bytes destroyed from offset `k` on, for every `k`
/// from the end of its header to the end of its snapshot — cut there,
/// zeroed, or overwritten with junk — with or without appends after the
/// snapshot, and with an empty live set (the finding's: nothing but the
/// two brackets after the header). Every one is refused as `Corrupt` at
/// the record `k` falls in, and an open changes nothing; none replays to
/// a ledger that forgot `next_seq`.
#[test]
fn a_compacted_ledger_whose_snapshot_is_destroyed_from_any_offset_is_refused() {
    let snapshot = |live: &[u64]| {
        let live_entries = live.len() as u64;
        let mut recs = vec![compacted_header(NEXT_SEQ), Record::Compacted { next_seq: NEXT_SEQ, live_entries }];
        recs.extend(live.iter().map(|&seq| Record::Add(entry(seq))));
        recs.push(Record::CompactedEnd { next_seq: NEXT_SEQ, live_entries });
        recs
    };
    let mut with_appends = snapshot(&KEPT);
    with_appends.extend([Record::Add(entry(NEXT_SEQ)), Record::Drop(4)]);
    let mut checked = 0;
    for recs in [snapshot(&KEPT), snapshot(&[]), with_appends] {
        let (bytes, ends) = encode_records(&recs);
        let snapshot_end = ends[recs.iter().position(|r| matches!(r, Record::CompactedEnd { .. })).unwrap()];
        for k in HEADER_FRAME_BYTES as usize..snapshot_end {
            let destroyed = [
                bytes[..k].to_vec(),
                [&bytes[..k], &vec![0u8; bytes.len() - k][..]].concat(),
                [&bytes[..k], &vec![0xAB; bytes.len() - k + 7][..]].concat(),
            ];
            for damaged in destroyed {
                // Refused at the record holding the first byte that changed
                // (zeros written over zeros change nothing).
                let changed = (k..bytes.len()).find(|&i| damaged.get(i) != Some(&bytes[i]));
                let Some(changed) = changed.filter(|&changed| changed < snapshot_end) else {
                    // Zeros over the snapshot's last zero bytes: the
                    // snapshot is whole, and what follows it appends.
                    continue;
                };
                let record_start = ends.iter().copied().filter(|&end| end <= changed).max().unwrap() as u64;
                match Manifest::parse(&manifest_path(), &damaged) {
                    Err(Error::Corrupt { offset_bytes, .. }) => assert_eq!(offset_bytes, record_start, "k {k}"),
                    other => panic!("destroyed from {k}: expected Corrupt, got {other:?}"),
                }
                checked += 1;
            }
        }
        // And an open refuses it too, changing nothing.
        let damaged = bytes[..HEADER_FRAME_BYTES as usize].to_vec();
        let vfs = disk_with(&BTreeMap::from([(MANIFEST_FILE.to_owned(), damaged.clone())]));
        assert!(Manifest::open(vfs.clone(), dir()).unwrap_err().is_corrupt());
        assert_eq!(read_whole(vfs.as_ref(), &manifest_path()).unwrap(), damaged);
    }
    assert!(checked > 300, "{checked} destroyed images");
}

/// What version 2 could not tell, kept as it was (read compatibility): a
/// version-2 snapshot destroyed with nothing valid after its header reads
/// as a torn first record, and is cut. Compaction rewrites such a file in
/// version 3, which refuses it (above).
#[test]
fn a_version_2_snapshot_destroyed_whole_is_still_read_as_a_torn_tail() {
    let live_entries = KEPT.len() as u64;
    let mut recs = vec![V2, Record::Compacted { next_seq: NEXT_SEQ, live_entries }];
    recs.extend(KEPT.iter().map(|&seq| Record::Add(entry(seq))));
    recs.push(Record::CompactedEnd { next_seq: NEXT_SEQ, live_entries });
    let (bytes, ends) = encode_records(&recs);
    let whole = Manifest::parse(&manifest_path(), &bytes).unwrap();
    assert_eq!((whole.version, whole.compacted, whole.next_seq, whole.records), (2, true, NEXT_SEQ, 2));
    for cut in V2_HEADER_FRAME_BYTES as usize..ends[1] {
        let state = Manifest::parse(&manifest_path(), &bytes[..cut]).unwrap();
        assert_eq!((state.version, state.next_seq, state.valid_len_bytes), (2, 1, V2_HEADER_FRAME_BYTES), "{cut}");
    }
    for cut in ends[1]..bytes.len() {
        assert!(Manifest::parse(&manifest_path(), &bytes[..cut]).unwrap_err().is_corrupt(), "cut at {cut}");
    }
}

/// As `every_single_bit_flip_is_refused_or_cuts_only_the_last_record` in
/// `replay.rs`, for compacted ledgers: a flip anywhere in the snapshot is
/// refused at the record it hit — even with nothing after the snapshot,
/// even with an empty live set: the file was renamed into place whole, so
/// none of it can be a torn write — and after it only the last appended
/// record is ever cut.
#[test]
fn every_single_bit_flip_of_a_compacted_ledger_is_refused_or_cuts_only_the_last_append() {
    let snapshot = |next_seq, live: &[u64]| {
        let live_entries = live.len() as u64;
        let mut recs = vec![compacted_header(next_seq), Record::Compacted { next_seq, live_entries }];
        recs.extend(live.iter().map(|&seq| Record::Add(entry(seq))));
        recs.push(Record::CompactedEnd { next_seq, live_entries });
        recs
    };
    let mut with_appends = snapshot(7, &[3, 5]);
    with_appends.extend([Record::Add(entry(7)), Record::Drop(3)]);
    for (recs, cut_last) in [(snapshot(7, &[3, 5]), false), (snapshot(7, &[]), false), (with_appends, true)] {
        let (bytes, ends) = encode_records(&recs);
        let last_start = ends[ends.len() - 2];
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let byte = bit / 8;
            let result = Manifest::parse(&manifest_path(), &flipped);
            if cut_last && byte >= last_start {
                let state = result.unwrap_or_else(|e| panic!("flip of bit {bit}: {e}"));
                assert_eq!(state.live.keys().copied().collect::<Vec<_>>(), [3, 5, 7], "flip of bit {bit}");
                assert_eq!(state.valid_len_bytes, last_start as u64);
                continue;
            }
            let record_start = ends.iter().copied().filter(|&end| end <= byte).max().unwrap_or(0);
            match result {
                Err(Error::Corrupt { offset_bytes, .. }) => {
                    assert_eq!(offset_bytes, record_start as u64, "{recs:?}: flip of bit {bit}")
                }
                other => panic!("{recs:?}: flip of bit {bit}: expected Corrupt, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_failed_compaction_poisons_and_the_manifest_reopens_to_the_same_state() {
    for (fault, op) in [("write", "write"), ("sync", "sync"), ("sync_dir", "sync_dir")] {
        let vfs = Arc::new(FaultyVfs::new());
        let mut manifest = dead_heavy(vfs.clone());
        let flag = match fault {
            "write" => &vfs.faults.fail_write,
            "sync" => &vfs.faults.fail_sync,
            _ => &vfs.faults.fail_sync_dir,
        };
        flag.store(true, Ordering::SeqCst);
        match manifest.compact(vfs.as_ref()) {
            Err(Error::Io { op: failed, .. }) => assert_eq!(failed.name(), op, "{fault}"),
            other => panic!("{fault}: expected an I/O error, got {other:?}"),
        }
        flag.store(false, Ordering::SeqCst);
        assert!(matches!(manifest.add(entry(NEXT_SEQ)), Err(Error::Poisoned { .. })), "{fault}");
        assert!(matches!(manifest.compact(vfs.as_ref()), Err(Error::Poisoned { .. })), "{fault}");
        assert_eq!(live_seqs(&manifest), KEPT, "{fault}: reads still work");
        drop(manifest);

        // Before the rename the old ledger is the manifest (and the temp is
        // left); after it, the new one. Either opens to the same state.
        let renamed = fault == "sync_dir";
        assert_eq!(vfs.exists(&temp_path()).unwrap(), !renamed, "{fault}");
        let (live, next, report) = opened_state(vfs.clone());
        assert_eq!((live, next), (KEPT.to_vec(), NEXT_SEQ), "{fault}");
        assert_eq!(report.records_replayed, if renamed { 2 } else { 38 }, "{fault}");
    }
}

#[test]
fn a_read_only_manifest_refuses_to_compact_and_writes_nothing() {
    let vfs = Arc::new(FaultyVfs::new());
    drop(dead_heavy(vfs.clone()));
    let before = files(vfs.as_ref());
    vfs.faults.clear_log();
    let (mut manifest, _) = Manifest::open_read_only(vfs.as_ref(), dir()).unwrap();
    assert!(manifest.compaction_due(), "due, yet not allowed");
    assert!(matches!(manifest.compact(vfs.as_ref()), Err(Error::ReadOnly { .. })));
    assert!(vfs.faults.log().is_empty());
    assert_eq!(files(vfs.as_ref()), before);
}

#[test]
#[should_panic(expected = "a manifest append before opening's writes are done")]
fn compacting_before_opening_s_writes_are_done_is_a_bug() {
    let vfs: Arc<dyn Vfs> = mem();
    drop(dead_heavy(vfs.clone()));
    let read = Manifest::read(vfs.as_ref(), dir()).unwrap();
    let mut manifest = read.open(vfs.clone()).unwrap();
    let _ = manifest.compact(vfs.as_ref());
}

#[test]
fn a_stale_temp_file_is_never_read_and_compaction_overwrites_it() {
    let vfs = mem();
    drop(dead_heavy(vfs.clone()));
    // Longer than the compacted ledger, and a valid-looking ledger itself.
    let (stale, _) = encode_records(&[APPENDED, Record::Add(entry(1)), Record::Add(entry(2))]);
    let mut garbage = stale.clone();
    garbage.extend(vec![0xAB; 4096]);
    vfs.open(&temp_path(), OpenMode::Create).unwrap().write_at(0, &garbage).unwrap();

    let (live, next, report) = opened_state(vfs.clone());
    assert_eq!((live, next, report.records_replayed), (KEPT.to_vec(), NEXT_SEQ, 38), "the temp file is ignored");
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    manifest.compact(vfs.as_ref()).unwrap();
    assert_eq!(
        read_whole(vfs.as_ref(), &manifest_path()).unwrap(),
        compacted_image(),
        "nothing of the stale file left"
    );
    assert!(!vfs.exists(&temp_path()).unwrap());
}

/// The disks a power loss at `phase` may leave (see `compact.rs`), given
/// the files before the compaction (`old`) and the compacted ledger.
fn power_loss_images(phase: Phase, old: &BTreeMap<String, Vec<u8>>) -> Vec<BTreeMap<String, Vec<u8>>> {
    let with = |manifest: Vec<u8>, temp: Option<Vec<u8>>| {
        let mut files = old.clone();
        files.insert(MANIFEST_FILE.to_owned(), manifest);
        if let Some(temp) = temp {
            files.insert(MANIFEST_TEMP_FILE.to_owned(), temp);
        }
        files
    };
    let old_manifest = old[MANIFEST_FILE].clone();
    match phase {
        // Fsynced, not renamed: the temp's name may or may not be durable.
        Phase::ManifestCompactSynced => {
            vec![with(old_manifest.clone(), None), with(old_manifest, Some(compacted_image()))]
        }
        // Renamed, not durably: either binding of the name.
        Phase::ManifestCompactRenamed => {
            vec![with(old_manifest, Some(compacted_image())), with(compacted_image(), None)]
        }
        Phase::ManifestCompactDirSynced => vec![with(compacted_image(), None)],
        other => panic!("{other} is not a compaction phase"),
    }
}

#[test]
fn a_crash_at_each_compaction_phase_leaves_a_manifest_that_opens_to_the_same_state() {
    for phase in Phase::MANIFEST_COMPACT {
        let vfs = mem();
        drop(dead_heavy(vfs.clone()));
        let old = files(vfs.as_ref());

        // The process stops right after `phase`.
        let stop = Arc::new(StopAt::new(vfs.clone(), phase));
        let (mut manifest, _) = Manifest::open(stop.clone(), dir()).unwrap();
        let result = manifest.compact(stop.as_ref());
        assert!(stop.stopped(), "{phase} was never reached");
        assert_eq!(result.is_ok(), phase == Phase::ManifestCompactDirSynced, "{phase}: {result:?}");
        assert!(manifest.add(entry(NEXT_SEQ)).is_err(), "{phase}: the process is gone");
        drop(manifest);

        // What the process left is one of the disks a power loss may leave,
        // and every one of them opens to the same state, with the dropped
        // seqs still refused and appends still working.
        let images = power_loss_images(phase, &old);
        assert!(images.contains(&files(stop.inner.as_ref())), "{phase}: the process left another disk");
        for image in images {
            let disk = disk_with(&image);
            let (live, next, _) = opened_state(disk.clone());
            assert_eq!((live, next), (KEPT.to_vec(), NEXT_SEQ), "{phase}: {:?}", image.keys());
            let (mut manifest, _) = Manifest::open(disk.clone(), dir()).unwrap();
            assert!(matches!(manifest.add(entry(NEXT_SEQ - 1)), Err(Error::Invalid(_))), "{phase}");
            manifest.add(entry(NEXT_SEQ)).unwrap();
            manifest.compact(disk.as_ref()).unwrap();
            drop(manifest);
            let (live, next, _) = opened_state(disk.clone());
            assert_eq!((live, next), ([4, 11, NEXT_SEQ].to_vec(), NEXT_SEQ + 1), "{phase}");
            assert!(!disk.exists(&temp_path()).unwrap(), "{phase}: a later compaction replaces the temp");
        }
    }
}

#[test]
fn a_long_lived_manifest_that_compacts_when_due_replays_about_its_live_set() {
    let vfs: Arc<dyn Vfs> = mem();
    let (mut manifest, _) = Manifest::open(vfs.clone(), dir()).unwrap();
    let mut written = 0u64;
    let mut compactions = 0u64;
    // A store that keeps about five segments and replaces one per round.
    for round in 0..2_000u64 {
        let seq = manifest.allocate_seq();
        manifest.add(entry(seq)).unwrap();
        written += 1;
        if round >= 5 {
            let oldest = manifest.live().next().unwrap().seq;
            manifest.drop_seg(oldest).unwrap();
            written += 1;
        }
        if manifest.compaction_due() {
            manifest.compact(vfs.as_ref()).unwrap();
            compactions += 1;
        }
    }
    drop(manifest);
    let (live, next, report) = opened_state(vfs.clone());
    assert_eq!(live.len(), 5);
    assert_eq!(next, 2_001);
    assert!(written > 3_990 && compactions > 100, "{written} records, {compactions} compactions");
    assert!(report.records_replayed < COMPACT_MIN_RECORDS, "replayed {} of {written} records", report.records_replayed);
}
