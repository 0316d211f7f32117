//! Table names as users choose them (issue 22): a segment's file name is
//! bounded whatever its table's name, so a 200-byte name evicts on the
//! real file system like any other; and one table whose eviction fails
//! does not starve the tables after it.

mod support;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Reply, Store};
use engine::vfs::{OsVfs, Vfs};
use support::{cmd, os_files, Faulty};

const T0_MS: u64 = 1_700_000_000_000;

fn open(vfs: Arc<dyn Vfs>, dir: &Path) -> Store {
    Store::open(vfs, Arc::new(ManualClock::new(T0_MS)), dir, Options::default()).expect("open").0
}

fn run(store: &mut Store, words: &[&str]) -> Reply {
    store.execute(&cmd(words)).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

/// Declare `tables` (span 5) and give each rows 0..4 at ts 0..4 and a
/// row at ts 100, which slides the window past the others.
fn populate(store: &mut Store, tables: &[&str]) {
    for table in tables {
        run(store, &["WINDOW", table, "ts", "5"]);
        for i in 0..4 {
            let (key, ts) = (format!("{table}:{i}"), i.to_string());
            run(store, &["HSET", &key, "ts", &ts, "v", &format!("row {i}")]);
        }
        run(store, &["HSET", &format!("{table}:top"), "ts", "100"]);
    }
}

fn hget(store: &mut Store, key: &str) -> Reply {
    run(store, &["HGET", key, "v"])
}

#[test]
fn a_200_byte_table_name_evicts_on_the_real_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let long = "t".repeat(200);
    let mut store = open(os.clone(), dir);
    populate(&mut store, &[&long, "zz"]);
    let report = store.evict().expect("every table evicts");
    assert_eq!((report.segments_sealed, report.rows_evicted), (2, 8));
    assert!(store.eviction_candidates().is_empty());
    for name in os_files(dir).keys() {
        assert!(name.len() <= 157, "{name} is {} bytes", name.len());
    }
    let key = format!("{long}:2");
    assert_eq!(hget(&mut store, &key), Reply::Bulk(b"row 2".to_vec()));
    store.close().unwrap();
    let mut store = open(os, dir);
    assert_eq!(hget(&mut store, &key), Reply::Bulk(b"row 2".to_vec()));
    assert_eq!(hget(&mut store, "zz:3"), Reply::Bulk(b"row 3".to_vec()));
    assert!(store.eviction_candidates().is_empty(), "the rows are still cold after a reopen");
    assert!(store.audit().is_empty(), "{:?}", store.audit());
}

#[test]
fn one_table_failing_to_evict_does_not_starve_the_tables_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let faulty = Faulty::new(Arc::new(OsVfs));
    let mut store = open(Arc::new(faulty.clone()), dir);
    populate(&mut store, &["aa", "zz"]);
    // The eviction's first write is table aa's segment: it fails.
    faulty.faults.fail_next_write_short.store(true, Ordering::SeqCst);
    store.evict().expect_err("aa's segment could not be written");
    assert!(store.poisoned().is_none(), "a failed write is no fsync failure");
    let left: Vec<Vec<u8>> = store.eviction_candidates();
    assert!(!left.is_empty() && left.iter().all(|key| key.starts_with(b"aa:")), "zz was evicted: {left:?}");
    // Nothing lost; the next eviction takes aa too.
    assert_eq!(hget(&mut store, "aa:1"), Reply::Bulk(b"row 1".to_vec()));
    let report = store.evict().expect("evict");
    assert_eq!((report.segments_sealed, report.rows_evicted), (1, 4));
    assert!(store.eviction_candidates().is_empty());
    assert!(store.audit().is_empty(), "{:?}", store.audit());
}
