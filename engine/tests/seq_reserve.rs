//! A seq that named a file in the store's directory is never handed out
//! again, even when the manifest never registered it.
//!
//! A seal allocates its seq in memory, builds the file and only then ADDs
//! it; a seal that fails or crashes before the ADD leaves debris whose seq
//! no durable record remembers. The open's sweep removes such debris —
//! after raising the manifest's `next_seq` past it durably, or a restart
//! would hand the same seq to another table's file (the simulator's seed
//! 1007537 did, after a clean restart). A point-in-time open removes
//! nothing, so its first seal looks at the directory instead.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Store};
use engine::vfs::MemVfs;
use support::{cmd, put_synced, vfs_files};

const T0_MS: u64 = 1_700_000_000_000;
const DIR: &str = "/db";

fn open(vfs: &Arc<MemVfs>, options: Options) -> (Store, engine::store::RecoveryReport) {
    let clock = Arc::new(ManualClock::new(T0_MS));
    Store::open(vfs.clone(), clock, Path::new(DIR), options).expect("open")
}

/// Rows of table `t` (hex `74`) far out of its window, then an eviction:
/// one segment sealed.
fn seal_rows(store: &mut Store, first: u32) {
    store.execute(&cmd(&["WINDOW", "t", "ts", "10"])).unwrap();
    for i in first..first + 3 {
        store.execute(&cmd(&["HSET", &format!("t:{i}"), "ts", &i.to_string()])).unwrap();
    }
    store.execute(&cmd(&["HSET", "t:high", "ts", "1000"])).unwrap();
    store.evict().expect("evict");
}

/// The seqs of the segment files in the directory, by file name.
fn segment_files(vfs: &Arc<MemVfs>) -> BTreeMap<String, u64> {
    vfs_files(vfs.as_ref(), Path::new(DIR))
        .into_keys()
        .filter_map(|name| {
            let seq = engine::store::seq_of_file_name(&name)?;
            Some((name, seq))
        })
        .collect()
}

#[test]
fn debris_swept_at_open_keeps_its_seq_reserved_across_restarts() {
    let vfs = Arc::new(MemVfs::new());
    let (mut store, _) = open(&vfs, Options::default());
    seal_rows(&mut store, 1);
    assert_eq!(segment_files(&vfs).into_values().collect::<Vec<_>>(), vec![1]);
    drop(store);
    // A seal of table `u` (hex 75) that failed before its ADD left seq 2.
    put_synced(vfs.as_ref(), &Path::new(DIR).join("row-75-2.seg"), b"half a segment");

    let (store, report) = open(&vfs, Options::default());
    assert_eq!(report.seqs_reserved_through, Some(2), "{report:?}");
    assert!(report.manifest_compacted);
    assert!(!segment_files(&vfs).contains_key("row-75-2.seg"), "the sweep removed the debris");
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    // The next restart finds no debris: the manifest alone remembers.
    drop(store);
    let (mut store, report) = open(&vfs, Options::default());
    assert_eq!(report.seqs_reserved_through, None);
    seal_rows(&mut store, 10);
    let seqs: Vec<u64> = segment_files(&vfs).into_values().collect();
    assert_eq!(seqs, vec![1, 3], "seq 2 named a file once: never again");
    assert!(store.audit().is_empty(), "{:?}", store.audit());
}

/// A crashed compaction's temp file beside the debris: the reservation's
/// own compaction writes under that name and renames it away, and the
/// sweep does not then trip over the name it listed.
#[test]
fn debris_beside_a_crashed_compactions_temp_file() {
    let vfs = Arc::new(MemVfs::new());
    let (mut store, _) = open(&vfs, Options::default());
    seal_rows(&mut store, 1);
    drop(store);
    put_synced(vfs.as_ref(), &Path::new(DIR).join("row-75-2.seg"), b"half a segment");
    put_synced(vfs.as_ref(), &Path::new(DIR).join("MANIFEST.tmp"), b"a compaction cut short");
    let (store, report) = open(&vfs, Options::default());
    assert_eq!(report.seqs_reserved_through, Some(2), "{report:?}");
    assert_eq!(report.stray_files_swept, 1, "the debris; the temp file became the manifest");
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    assert!(!vfs_files(vfs.as_ref(), Path::new(DIR)).contains_key("MANIFEST.tmp"));
}

#[test]
fn debris_below_the_manifests_next_seq_costs_no_compaction() {
    let vfs = Arc::new(MemVfs::new());
    let (mut store, _) = open(&vfs, Options::default());
    seal_rows(&mut store, 1);
    seal_rows(&mut store, 10);
    drop(store);
    // A crash between a DROP and its unlink leaves a file whose seq the
    // manifest already covers.
    put_synced(vfs.as_ref(), &Path::new(DIR).join("row-75-1.seg"), b"retired");
    let (_store, report) = open(&vfs, Options::default());
    assert_eq!(report.seqs_reserved_through, None);
    assert!(!report.manifest_compacted);
    assert_eq!(report.stray_files_swept, 1);
}

#[test]
fn a_point_in_time_open_seals_above_the_debris_it_leaves_in_place() {
    let vfs = Arc::new(MemVfs::new());
    let (mut store, _) = open(&vfs, Options::default());
    seal_rows(&mut store, 1);
    drop(store);
    put_synced(vfs.as_ref(), &Path::new(DIR).join("row-75-5.seg"), b"half a segment");

    let point_in_time = Options { point_in_time: true, ..Options::default() };
    let (mut store, report) = open(&vfs, point_in_time);
    assert!(report.sweep_skipped);
    seal_rows(&mut store, 10);
    let files = segment_files(&vfs);
    assert_eq!(files.get("row-75-5.seg"), Some(&5), "nothing is removed after a point-in-time open");
    assert_eq!(files.get("row-74-6.seg"), Some(&6), "sealed above the debris: {files:?}");
    drop(store);
    // The next default open sweeps the debris; seq 6 is registered, so
    // the manifest already covers seq 5.
    let (_store, report) = open(&vfs, Options::default());
    assert_eq!(report.seqs_reserved_through, None);
    assert_eq!(report.stray_files_swept, 1);
}

#[test]
fn a_name_with_seq_zero_or_past_the_seq_space_is_not_the_engines() {
    let vfs = Arc::new(MemVfs::new());
    let (store, _) = open(&vfs, Options::default());
    drop(store);
    let beyond = format!("row-74-{}.seg", 1u64 << 63);
    for name in ["row-74-0.seg", beyond.as_str()] {
        put_synced(vfs.as_ref(), &Path::new(DIR).join(name), b"someone else's");
    }
    let (mut store, report) = open(&vfs, Options::default());
    assert_eq!(report.foreign_files.len(), 2, "{report:?}");
    assert_eq!(report.seqs_reserved_through, None);
    seal_rows(&mut store, 1);
    assert_eq!(segment_files(&vfs).get("row-74-1.seg"), Some(&1));
}
