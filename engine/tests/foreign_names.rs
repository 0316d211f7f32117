//! A name the engine never writes never stops a store, and is never
//! touched: on the real file system, where names are bytes.
//!
//! Found from outside (issue 32): a file named `x\xff.seg` in a store's
//! directory made every writable open fail. The listing turned the name
//! into text lossily, the sweep of stray segments then tried to unlink a
//! path that did not exist (`x\u{fffd}.seg`), and the open aborted on the
//! error. Here such names, and text names that only look like the
//! engine's, sit beside a store with a segment, a leftover of its own and
//! a quarantine copy; the writer opens, sweeps only its own leftover,
//! leaves every foreign file byte for byte, and says which it left.

mod support;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Reply, Store};
use engine::vfs::OsVfs;
use support::cmd;

const T0_MS: u64 = 1_700_000_000_000;

fn open(dir: &Path) -> (Store, engine::store::RecoveryReport) {
    Store::open(Arc::new(OsVfs), Arc::new(ManualClock::new(T0_MS)), dir, Options::default()).unwrap()
}

fn run(store: &mut Store, words: &[&str]) -> Reply {
    store.execute(&cmd(words)).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

/// Every file in `dir` by its exact name, with its bytes.
fn files(dir: &Path) -> BTreeMap<OsString, Vec<u8>> {
    let entries = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap());
    entries.map(|entry| (entry.file_name(), std::fs::read(entry.path()).unwrap())).collect()
}

fn name(bytes: &[u8]) -> OsString {
    OsString::from_vec(bytes.to_vec())
}

/// Names another program may leave: not UTF-8 (one ending like a segment,
/// one like the engine's temp file), and text that only resembles the
/// engine's names.
fn foreign_names() -> Vec<OsString> {
    vec![
        name(b"x\xff.seg"),
        name(b"appendonly.aof.rewrite\xfe"),
        name(b"\xc3\x28"),
        name(b"notes.seg"),
        name(b"row-74-05.seg"),
        name(b"MANIFEST.old"),
    ]
}

#[test]
fn foreign_names_are_left_untouched_and_reported_and_never_stop_an_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut store, _) = open(dir);
    run(&mut store, &["WINDOW", "t", "ts", "10"]);
    run(&mut store, &["HSET", "t:1", "ts", "1", "name", "alice"]);
    run(&mut store, &["HSET", "t:50", "ts", "50", "name", "zed"]);
    run(&mut store, &["SET", "greeting", "hello"]);
    assert_eq!(store.evict().unwrap().segments_sealed, 1);
    let content = store.logical_dump().unwrap();
    store.close().unwrap();

    for (i, foreign) in foreign_names().into_iter().enumerate() {
        std::fs::write(dir.join(&foreign), format!("someone else's file {i}")).unwrap();
    }
    // One leftover of the engine's own, so the sweep has work to do.
    std::fs::write(dir.join("row-74-99.seg"), b"an unregistered segment").unwrap();
    let mut expected = files(dir);
    expected.remove(&OsString::from("row-74-99.seg"));

    let (mut store, report) = open(dir);
    assert_eq!(store.logical_dump().unwrap(), content);
    assert_eq!(report.stray_files_swept, 1, "{report:?}");
    let mut reported = report.foreign_files.clone();
    reported.sort();
    let mut planted = foreign_names();
    planted.sort();
    assert_eq!(reported, planted, "the open reports exactly the names it left");
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    run(&mut store, &["SET", "after", "1"]);
    store.close().unwrap();

    let now = files(dir);
    for foreign in foreign_names() {
        assert_eq!(now.get(&foreign), expected.get(&foreign), "{foreign:?} was changed");
    }
    assert!(!now.contains_key(&OsString::from("row-74-99.seg")), "the engine's own leftover is swept");
}

#[test]
fn a_read_only_open_beside_foreign_names_reports_nothing_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut store, _) = open(dir);
    run(&mut store, &["SET", "k", "v"]);
    store.close().unwrap();
    std::fs::write(dir.join(name(b"x\xff.seg")), b"foreign").unwrap();
    let before = files(dir);

    let clock = Arc::new(ManualClock::new(T0_MS));
    let (mut reader, report) = Store::open_read_only(Arc::new(OsVfs), clock, dir).unwrap();
    assert!(report.foreign_files.is_empty(), "a read-only open sweeps nothing: {report:?}");
    assert_eq!(run(&mut reader, &["GET", "k"]), Reply::Bulk(b"v".to_vec()));
    assert!(reader.audit().is_empty(), "{:?}", reader.audit());
    reader.close().unwrap();
    assert_eq!(files(dir), before);
}
