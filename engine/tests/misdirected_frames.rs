//! Every whole frame of a short log, misdirected to the place of every
//! earlier frame of the same size, is damage there and never history: the
//! exhaustive form of what the simulator's misdirected writes sample.
//!
//! A store writes a log whose frames come in a few sizes (same-length
//! keys and values), closes, and then, for each pair of frames `j < i` of
//! equal size, the log is rebuilt as a drive that put write `i` at `j`'s
//! place would leave it: frame `i`'s bytes at `j`'s offset, zeros where
//! frame `i` belonged (what an append's place held before it), the rest
//! unchanged. The scan must stop at `j` with nothing after it replayed, and
//! the store must refuse the log (`Corrupt`, the directory unchanged) or —
//! only where no `SYNCED` mark still in place after `j` vouches that `j`
//! was durable, the one case no format can tell from a torn tail — open to
//! exactly the content of the log cut at `j`. With the previous
//! format's place-free checksum (the `aof-place-ignored` canary), the same
//! pairs replay the moved frame as if it had always been there.
//!
//! The manifest gets the same treatment: every record moved whole onto
//! every earlier record of its size is refused, or — only where no valid
//! record follows it, a torn tail to any format — cut there, and never
//! replayed.
//!
//! And across files: every frame of a rewrite's new log, and every write
//! the rewrite made, landed at the same offset of the log it replaces (the
//! two are open at once) is damage there — the header's included, which
//! format 3 accepted (the simulator's seeds 1014887 and 1046851).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use engine::aof::{scan_log, Record};
use engine::clock::ManualClock;
use engine::frame::{decode_frame, Place};
use engine::manifest::{Manifest, SegEntry, MANIFEST_FILE};
use engine::store::{LogicalEntry, Options, Store, AOF_FILE};
use engine::vfs::{read_whole, MemVfs, Vfs};
use engine::Error;
use support::{cmd, put_synced, vfs_files};

const NOW_MS: u64 = 1_700_000_000_000;
/// The AOF's durability mark frame kind (`engine/src/aof/mod.rs`).
const KIND_SYNCED: u8 = 5;
const DIR: &str = "/db";

fn open(vfs: Arc<MemVfs>) -> engine::Result<Store> {
    Store::open(vfs, Arc::new(ManualClock::new(NOW_MS)), Path::new(DIR), Options::default()).map(|(store, _)| store)
}

/// The log and the manifest of a store that ran a short workload whose
/// frames come in a few sizes, closed cleanly.
fn written_store() -> (Vec<u8>, Vec<u8>) {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    let mut store = open(vfs.clone()).unwrap();
    for round in 0..4 {
        for key in 0..4 {
            let (key, value) = (format!("k{key}"), format!("v{round}"));
            store.execute(&cmd(&["SET", &key, &value])).unwrap();
        }
        store.execute(&cmd(&["HSET", "h1", "f", &format!("{round}")])).unwrap();
        store.execute(&cmd(&["DEL", &format!("k{round}")])).unwrap();
    }
    store.close().unwrap();
    let log = read_whole(vfs.as_ref(), &Path::new(DIR).join(AOF_FILE)).unwrap();
    let manifest = read_whole(vfs.as_ref(), &Path::new(DIR).join(MANIFEST_FILE)).unwrap();
    (log, manifest)
}

/// Where a frame at `at` of a log of `generation` is bound: a header to
/// generation 0 (`aof/header.rs`).
fn aof_place(generation: u64, at: usize) -> Place {
    Place::aof(if at == 0 { 0 } else { generation }, at as u64)
}

/// Where each frame of `log`, the store's first (generation 1), starts and
/// ends.
fn frames(log: &[u8]) -> Vec<(usize, usize)> {
    frames_of(log, 1)
}

/// Where each frame of `log`, of `generation`, starts and ends.
fn frames_of(log: &[u8], generation: u64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < log.len() {
        let frame = decode_frame(&log[at..], aof_place(generation, at)).expect("a whole log");
        out.push((at, at + frame.total_bytes));
        at += frame.total_bytes;
    }
    out
}

/// `log` as it is after frame `i`'s write landed at frame `j`'s place.
fn misdirected(log: &[u8], (j_at, j_end): (usize, usize), (i_at, i_end): (usize, usize)) -> Vec<u8> {
    let mut image = log.to_vec();
    image[j_at..j_end].copy_from_slice(&log[i_at..i_end]);
    image[i_at..i_end].fill(0);
    image
}

/// The logical content a store over `manifest` and `log` opens to, or the
/// error it refuses with (and the directory after the refusal).
fn open_on(manifest: &[u8], log: &[u8]) -> Result<BTreeMap<Vec<u8>, LogicalEntry>, (Error, bool)> {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    put_synced(vfs.as_ref(), &Path::new(DIR).join(MANIFEST_FILE), manifest);
    put_synced(vfs.as_ref(), &Path::new(DIR).join(AOF_FILE), log);
    let before = vfs_files(vfs.as_ref(), Path::new(DIR));
    match open(vfs.clone()) {
        Ok(store) => Ok(store.logical_dump().unwrap()),
        Err(e) => Err((e, vfs_files(vfs.as_ref(), Path::new(DIR)) == before)),
    }
}

/// Whether a `SYNCED` mark of `log` after `earlier`, other than `moved`
/// (whose bytes are no longer in place), vouches that `earlier` was durable.
fn vouched(log: &[u8], earlier: (usize, usize), moved: (usize, usize)) -> bool {
    frames(log).into_iter().filter(|f| f.0 > earlier.0 && *f != moved).any(|(at, _)| {
        let frame = decode_frame(&log[at..], aof_place(1, at)).expect("a whole log");
        let mark = frame.payload.try_into().map(u64::from_le_bytes);
        frame.kind == KIND_SYNCED && mark.is_ok_and(|durable_len| durable_len > earlier.0 as u64)
    })
}

/// Every same-size pair `j < i` of `log`'s frames after the header.
fn pairs(log: &[u8]) -> Vec<((usize, usize), (usize, usize))> {
    let frames = frames(log);
    let mut out = Vec::new();
    for (i, later) in frames.iter().enumerate().skip(1) {
        for earlier in &frames[1..i] {
            if later.1 - later.0 == earlier.1 - earlier.0 {
                out.push((*earlier, *later));
            }
        }
    }
    out
}

#[test]
fn a_whole_frame_misdirected_to_an_earlier_same_size_frame_is_damage_never_history() {
    let (log, manifest) = written_store();
    let original: Vec<Record> = scan_log(Path::new("/db/appendonly.aof"), &log).unwrap().records;
    let pairs = pairs(&log);
    assert!(pairs.len() >= 20, "the workload must give many same-size pairs, not {}", pairs.len());
    let (mut refused, mut cut) = (0, 0);
    for (earlier, later) in pairs {
        let image = misdirected(&log, earlier, later);
        let scan = scan_log(Path::new("/db/appendonly.aof"), &image).unwrap();
        assert_eq!(scan.invalid.map(|(at, _)| at), Some(earlier.0 as u64), "pair {earlier:?} {later:?}");
        assert!(original.starts_with(&scan.records), "pair {earlier:?} {later:?}: replayed {:?}", scan.records);
        match open_on(&manifest, &image) {
            Err((e, unchanged)) => {
                assert!(e.is_corrupt() && unchanged, "pair {earlier:?} {later:?}: {e} (unchanged: {unchanged})");
                refused += 1;
            }
            Ok(content) => {
                assert!(!vouched(&log, earlier, later), "pair {earlier:?} {later:?}: vouched damage was cut");
                let at_the_cut = open_on(&manifest, &log[..earlier.0]).expect("a log cut at a frame opens");
                assert_eq!(content, at_the_cut, "pair {earlier:?} {later:?}: other content than the log cut there");
                cut += 1;
            }
        }
    }
    eprintln!("log: {refused} misdirected frames refused, {cut} cut as a torn tail");
    // Only the close's own mark, moved onto the mark before it, leaves
    // nothing in place to vouch: the rest is refused.
    assert!(refused > 0 && cut <= 1, "{refused} refused, {cut} cut");
}

#[cfg(feature = "canaries")]
#[test]
fn with_the_place_left_out_of_the_checksum_a_misdirected_frame_replays() {
    engine::canary::set(Some(engine::canary::Canary::AofPlaceIgnored));
    let (log, _) = written_store();
    let original = scan_log(Path::new("/db/appendonly.aof"), &log).unwrap().records;
    let replayed = pairs(&log).into_iter().any(|(earlier, later)| {
        let scan = scan_log(Path::new("/db/appendonly.aof"), &misdirected(&log, earlier, later)).unwrap();
        !original.starts_with(&scan.records)
    });
    engine::canary::set(None);
    assert!(replayed, "no misdirected frame replayed: the test could not fail");
}

/// A manifest whose records come in a few sizes: ADDs of same-length
/// names, DROPs (all one size).
fn written_manifest() -> Vec<u8> {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    let (mut manifest, _) = Manifest::open(vfs.clone(), Path::new(DIR)).unwrap();
    let entry = |seq: u64| SegEntry {
        seq,
        file: format!("row-74-{seq}.seg"),
        table: b"t".to_vec(),
        min_key: b"t:a".to_vec(),
        max_key: b"t:z".to_vec(),
        records: 3,
    };
    for seq in 1..=6 {
        manifest.add(entry(seq)).unwrap();
        if seq % 2 == 0 {
            manifest.drop_seg(seq - 1).unwrap();
        }
    }
    // Two ADDs last: the newest moved onto the one before it would, with a
    // checksum that ignored the place, register seq 8 without seq 7 — a
    // ledger no prefix of the history holds, which its rules cannot see.
    manifest.add(entry(7)).unwrap();
    manifest.add(entry(8)).unwrap();
    drop(manifest);
    read_whole(vfs.as_ref(), &Path::new(DIR).join(MANIFEST_FILE)).unwrap()
}

/// Where each record of a manifest starts and ends.
fn manifest_frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let frame = decode_frame(&bytes[at..], Place::manifest(at as u64)).expect("a whole manifest");
        out.push((at, at + frame.total_bytes));
        at += frame.total_bytes;
    }
    out
}

#[test]
fn a_whole_manifest_record_misdirected_to_an_earlier_same_size_record_is_never_replayed() {
    let bytes = written_manifest();
    let path = Path::new(DIR).join(MANIFEST_FILE);
    let frames = manifest_frames(&bytes);
    let (mut refused, mut cut) = (0, 0);
    for (i, later) in frames.iter().enumerate().skip(1) {
        for earlier in frames[1..i].iter().filter(|f| f.1 - f.0 == later.1 - later.0) {
            let image = misdirected(&bytes, *earlier, *later);
            match Manifest::parse(&path, &image) {
                Err(e) => {
                    assert!(e.is_corrupt(), "{earlier:?} {later:?}: {e}");
                    refused += 1;
                }
                Ok(state) => {
                    // Cut at the moved record: only if nothing valid follows.
                    assert_eq!(state.valid_len_bytes, earlier.0 as u64, "{earlier:?} {later:?}");
                    assert_eq!(*later, *frames.last().unwrap(), "{earlier:?} {later:?}: a valid record followed");
                    let at_the_cut = Manifest::parse(&path, &bytes[..earlier.0]).unwrap();
                    assert_eq!(state.live, at_the_cut.live, "{earlier:?} {later:?}");
                    cut += 1;
                }
            }
        }
    }
    eprintln!("manifest: {refused} misdirected records refused, {cut} cut as a torn tail");
    assert!(refused >= 5, "{refused} refused, {cut} cut: the manifest must give same-size pairs");
}

/// With the manifest's place left out of its checksum (the
/// `manifest-place-ignored` canary), the newest ADD moved onto the ADD
/// before it parses: seq 8 registered without seq 7, a ledger no prefix of
/// the manifest held. The test above could fail.
#[cfg(feature = "canaries")]
#[test]
fn with_the_place_left_out_of_the_manifest_checksum_a_misdirected_record_replays() {
    engine::canary::set(Some(engine::canary::Canary::ManifestPlaceIgnored));
    let bytes = written_manifest();
    let path = Path::new(DIR).join(MANIFEST_FILE);
    let frames = manifest_frames(&bytes);
    let (earlier, later) = (frames[frames.len() - 2], frames[frames.len() - 1]);
    assert_eq!(earlier.1 - earlier.0, later.1 - later.0, "the two last ADDs are one size");
    let parsed = Manifest::parse(&path, &misdirected(&bytes, earlier, later));
    engine::canary::set(None);
    let state = parsed.expect("the moved ADD parses where it landed");
    assert_eq!(state.valid_len_bytes, later.0 as u64, "replayed through the moved record");
    let prefixes: Vec<_> = frames.iter().map(|f| Manifest::parse(&path, &bytes[..f.1]).unwrap().live).collect();
    assert!(!prefixes.contains(&state.live), "a ledger no prefix held: {:?}", state.live);
}

/// A store's log, and the log a rewrite then wrote to replace it (the
/// next generation), each as it stood once durable: the two files a
/// rewrite holds open at once.
fn a_log_and_its_rewrite() -> (Vec<u8>, Vec<u8>) {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    let mut store = open(vfs.clone()).unwrap();
    for key in 0..12 {
        store.execute(&cmd(&["SET", &format!("k{key}"), &format!("v{key}")])).unwrap();
        store.execute(&cmd(&["HSET", "h", &format!("f{key}"), "x"])).unwrap();
    }
    let log = read_whole(vfs.as_ref(), &Path::new(DIR).join(AOF_FILE)).unwrap();
    store.rewrite().unwrap();
    let rewritten = read_whole(vfs.as_ref(), &Path::new(DIR).join(AOF_FILE)).unwrap();
    (log, rewritten)
}

/// Each frame of the rewrite's log, and each of its two writes (the
/// header, then the snapshot batch with its end), landed whole at the same
/// offset of the old log: the old log's scan stops at or before the
/// landing, or refuses — never a byte the rewrite wrote is replayed as the
/// old log's. The header's landing is refused outright: it declares a
/// snapshot of another generation that the old log's frames are not.
#[test]
fn a_rewrites_write_landing_in_the_log_it_replaces_is_damage_there() {
    let (log, rewritten) = a_log_and_its_rewrite();
    let path = Path::new("/db/appendonly.aof");
    let frames = frames_of(&rewritten, 2);
    let header = frames[0];
    let writes = [header, (header.1, rewritten.len())];
    let (mut refused, mut cut) = (0, 0);
    for (at, end) in frames.iter().copied().chain(writes) {
        let mut image = log.clone();
        if image.len() < end {
            image.resize(end, 0);
        }
        image[at..end].copy_from_slice(&rewritten[at..end]);
        match scan_log(path, &image) {
            Err(e) => {
                assert!(e.is_corrupt(), "{at}..{end}: {e}");
                refused += 1;
            }
            Ok(scan) => {
                // The header's landing is damage the open refuses: a
                // rewrite's snapshot with no end under the generation its
                // header declares. Any other ends the walk at the landing.
                if at == 0 {
                    assert!(scan.damage.is_some(), "the rewrite's header landed and was accepted: {scan:?}");
                } else {
                    let replayed = scan.valid_len_bytes;
                    assert!(replayed <= at as u64, "{at}..{end}: replayed through {replayed}");
                }
                if scan.damage.is_some() {
                    refused += 1;
                } else {
                    cut += 1;
                }
            }
        }
    }
    eprintln!("a rewrite's writes in the old log: {refused} refused, {cut} ended the scan at the landing");
    assert!(refused >= 1, "the header's landing at least is refused");
}
