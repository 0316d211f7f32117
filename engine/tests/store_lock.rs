//! One store, one owner: a store holds its directory's lock for its whole
//! life, a second opener is refused with `Error::Locked` and changes
//! nothing, and a read-only opener shares the directory with other readers
//! only, changes no byte of it and refuses every write.
//!
//! Here in one process, on `MemVfs` and `OsVfs`; across real processes in
//! `two_processes.rs`; on the simulated disk in `simulator/src/disk/tests/lock.rs`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Reply, Store, AOF_FILE, REWRITE_TEMP_FILE};
use engine::vfs::{MemVfs, OsVfs, Vfs, LOCK_FILE};
use engine::{Error, IoOp, Phase};
use support::{cmd, os_files, vfs_files, CrashAfter, NoLock};

const T0_MS: u64 = 1_700_000_000_000;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0_MS))
}

fn open(vfs: Arc<dyn Vfs>, dir: &Path) -> engine::Result<Store> {
    Store::open(vfs, clock(), dir, Options::default()).map(|(store, _)| store)
}

fn open_read_only(vfs: Arc<dyn Vfs>, dir: &Path) -> engine::Result<Store> {
    Store::open_read_only(vfs, clock(), dir).map(|(store, _)| store)
}

fn run(store: &mut Store, words: &[&str]) -> Reply {
    store.execute(&cmd(words)).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn get(store: &mut Store, key: &str) -> Reply {
    run(store, &["GET", key])
}

fn bulk(value: &str) -> Reply {
    Reply::Bulk(value.as_bytes().to_vec())
}

/// A windowed table with two rows sealed cold in a segment, one hot row
/// and a string.
fn populate(store: &mut Store) {
    run(store, &["WINDOW", "t", "ts", "10"]);
    run(store, &["HSET", "t:1", "ts", "1", "name", "alice"]);
    run(store, &["HSET", "t:2", "ts", "2", "name", "bob"]);
    run(store, &["HSET", "t:50", "ts", "50", "name", "zed"]);
    run(store, &["SET", "greeting", "hello"]);
    let evicted = store.evict().unwrap();
    assert_eq!((evicted.rows_evicted, evicted.segments_sealed), (2, 1));
    assert_eq!(store.cold_count(), 2);
}

/// A fresh `MemVfs` with a store open on `/db`, [`populate`]d: what
/// most tests below start from.
fn populated_in_memory() -> (Arc<dyn Vfs>, &'static Path, Store) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let dir = Path::new("/db");
    let mut store = open(vfs.clone(), dir).unwrap();
    populate(&mut store);
    (vfs, dir, store)
}

fn assert_locked(result: engine::Result<Store>, dir: &Path) {
    match result {
        Err(Error::Locked { dir: locked }) => assert_eq!(locked, dir),
        Err(e) => panic!("expected Locked, got {e}"),
        Ok(_) => panic!("a second opener was let in"),
    }
}

#[test]
fn a_second_opener_is_refused_with_a_clear_error_and_touches_nothing() {
    let (vfs, dir, mut first) = populated_in_memory();
    let before = vfs_files(vfs.as_ref(), dir);

    let refused = open(vfs.clone(), dir);
    let message = refused.as_ref().err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("store directory is in use by another process"), "{message}");
    assert!(message.contains("/db"), "the message names the directory: {message}");
    assert_locked(refused, dir);
    assert_locked(open_read_only(vfs.clone(), dir), dir);
    assert_eq!(vfs_files(vfs.as_ref(), dir), before, "a refused opener changed the directory");

    // The first store is unharmed and still the one owner.
    run(&mut first, &["SET", "c", "3"]);
    assert_eq!(get(&mut first, "greeting"), bulk("hello"));
    first.close().unwrap();

    let mut next = open(vfs.clone(), dir).unwrap();
    assert_eq!((get(&mut next, "c"), get(&mut next, "greeting")), (bulk("3"), bulk("hello")));
    assert!(next.audit().is_empty());
}

#[test]
fn the_lock_goes_with_the_store_however_it_ends() {
    let (vfs, dir, store) = populated_in_memory();
    let other = Path::new("/other");
    // Another directory is another store.
    drop(open(vfs.clone(), other).unwrap());
    drop(store);
    drop(open(vfs.clone(), dir).unwrap());

    // An open that fails after taking the lock gives it back: here the
    // manifest registers a segment whose file is gone (damage, refused).
    let segment = vfs
        .list_dir(dir)
        .unwrap()
        .into_iter()
        .find(|name| name.to_str().is_some_and(|name| name.ends_with(".seg")))
        .unwrap();
    vfs.unlink(&dir.join(&segment)).unwrap();
    for _ in 0..2 {
        let refused = open(vfs.clone(), dir).err().expect("a missing registered segment is refused");
        assert!(refused.is_corrupt(), "the second refusal is the damage again, not the lock: {refused}");
    }
}

#[test]
fn read_only_openers_share_the_directory_with_each_other_and_not_with_a_writer() {
    let (vfs, dir, writer) = populated_in_memory();
    drop(writer);

    let mut first = open_read_only(vfs.clone(), dir).unwrap();
    let mut second = open_read_only(vfs.clone(), dir).unwrap();
    assert!(first.is_read_only() && second.is_read_only());
    assert_eq!((get(&mut first, "greeting"), get(&mut second, "greeting")), (bulk("hello"), bulk("hello")));
    assert_locked(open(vfs.clone(), dir), dir);
    drop(first);
    assert_locked(open(vfs.clone(), dir), dir);
    second.close().unwrap();

    let writer = open(vfs.clone(), dir).unwrap();
    assert!(!writer.is_read_only());
    assert_locked(open_read_only(vfs.clone(), dir), dir);
    drop(writer);
    drop(open_read_only(vfs, dir).unwrap());
}

#[test]
fn a_read_only_store_serves_reads_and_refuses_every_write() {
    let (vfs, dir, writer) = populated_in_memory();
    let written = writer.logical_dump().unwrap();
    drop(writer);
    let before = vfs_files(vfs.as_ref(), dir);

    let mut store = open_read_only(vfs.clone(), dir).unwrap();
    assert_eq!(store.logical_dump().unwrap(), written);
    let cold = run(&mut store, &["HGETALL", "t:1"]);
    assert_eq!(cold, Reply::Pairs(vec![(b"name".to_vec(), b"alice".to_vec()), (b"ts".to_vec(), b"1".to_vec())]));
    assert_eq!(run(&mut store, &["HGET", "t:2", "name"]), bulk("bob"));
    assert_eq!((store.key_count(), store.cold_count(), store.segment_count()), (4, 2, 1));
    assert!(store.audit().is_empty(), "{:?}", store.audit());

    let writes: [&[&str]; 10] = [
        &["SET", "greeting", "bye"],
        &["SET", "new", "1"],
        &["DEL", "greeting"],
        &["HSET", "t:1", "name", "alicia"],
        &["HDEL", "t:50", "name"],
        &["PEXPIREAT", "greeting", "1"],
        &["PERSIST", "greeting"],
        &["HPEXPIREAT", "t:50", "1", "name"],
        &["WINDOW", "u", "ts", "5"],
        &["FLUSHALL"],
    ];
    let is_read_only = |error: Option<Error>| matches!(error, Some(Error::ReadOnly { dir: d }) if d == dir);
    for words in writes {
        let result = store.execute(&cmd(words));
        assert!(matches!(&result, Err(Error::ReadOnly { dir: d }) if d == dir), "{words:?}: {result:?}");
    }
    let message = store.execute(&cmd(&["SET", "a", "1"])).unwrap_err().to_string();
    assert!(message.contains("read-only") && message.contains("/db"), "{message}");
    assert!(is_read_only(store.evict().err()));
    assert!(is_read_only(store.rewrite().err()));
    assert!(is_read_only(store.sync().err()));
    store.tick().unwrap();

    assert_eq!(store.logical_dump().unwrap(), written, "a refused write changed memory");
    store.close().unwrap();
    assert_eq!(vfs_files(vfs.as_ref(), dir), before, "a read-only store changed the directory");
}

/// Bytes that look like the start of a frame and end before its header
/// does: a torn tail.
const TORN_TAIL: &[u8] = &[0x20, 0, 0, 0, 0xde, 0xad];

/// A directory a read-write open would change in every way it can: a torn
/// log tail, a torn manifest tail, a registered segment no frame names (a
/// crash between seal and frame), an unregistered segment file and a
/// leftover rewrite temp file.
fn damaged_store(dir: &Path) -> BTreeMap<Vec<u8>, engine::store::LogicalEntry> {
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut store = open(os.clone(), dir).unwrap();
    populate(&mut store);
    let seg = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    store.close().unwrap();

    // Crash right after the manifest ADD, before the SEGMENTED frame.
    let crash = Arc::new(CrashAfter::new(os, Phase::SealRegistered));
    let mut store = open(crash.clone(), dir).unwrap();
    run(&mut store, &["HSET", "t:60", "ts", "60"]);
    run(&mut store, &["HSET", "t:90", "ts", "90"]);
    let content = store.logical_dump().unwrap();
    assert!(store.evict().is_err() && crash.crashed());
    drop(store);

    let append = |name: &str, bytes: &[u8]| {
        let mut all = std::fs::read(dir.join(name)).unwrap_or_default();
        all.extend_from_slice(bytes);
        std::fs::write(dir.join(name), all).unwrap();
    };
    append(AOF_FILE, TORN_TAIL);
    append("MANIFEST", &[7, 0, 0]);
    std::fs::copy(&seg, dir.join("row-74-99.seg")).unwrap();
    std::fs::write(dir.join(REWRITE_TEMP_FILE), b"half a rewrite").unwrap();
    content
}

#[test]
fn a_read_only_open_of_a_damaged_store_changes_no_byte_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let content = damaged_store(dir);
    let before = os_files(dir);
    assert!(before.contains_key(LOCK_FILE) && before.contains_key("row-74-99.seg"), "{:?}", before.keys());

    let (mut store, report) = Store::open_read_only(Arc::new(OsVfs), clock(), dir).unwrap();
    assert_eq!(report.aof.dropped_bytes, TORN_TAIL.len() as u64, "{report:?}");
    assert_eq!(report.manifest_torn_bytes, 3, "{report:?}");
    assert_eq!(report.aof.quarantine_file, None);
    assert_eq!((report.orphan_segments_swept, report.stray_files_swept), (0, 0));
    assert_eq!(store.logical_dump().unwrap(), content);
    assert_eq!(get(&mut store, "greeting"), bulk("hello"));
    assert!(matches!(store.execute(&cmd(&["SET", "x", "1"])), Err(Error::ReadOnly { .. })));
    // The audit says what a writer would sweep; it changes nothing either.
    let violations = store.audit().into_iter().map(|v| v.0).collect::<Vec<_>>();
    assert!(violations.iter().any(|v| v.contains("row-74-99.seg")), "{violations:?}");
    store.close().unwrap();
    assert_eq!(os_files(dir), before, "a read-only open changed the directory");

    // The same directory opened to write: everything above was real, and
    // a writer changes it (so the comparison above could have failed).
    let (store, report) = Store::open(Arc::new(OsVfs), clock(), dir, Options::default()).unwrap();
    assert_eq!(store.logical_dump().unwrap(), content);
    assert!(report.aof.quarantine_file.is_some(), "{report:?}");
    assert_eq!((report.orphan_segments_swept, report.stray_files_swept), (1, 2), "{report:?}");
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    assert_ne!(os_files(dir), before);
}

#[test]
fn a_read_only_open_creates_no_directory_and_reads_a_missing_log_as_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    match open_read_only(Arc::new(OsVfs), &missing) {
        Err(Error::Io { op: IoOp::Lock, path, .. }) => assert_eq!(path, missing),
        other => panic!("expected an I/O error on the lock, got {:?}", other.map(|_| "a store")),
    }
    assert!(!missing.exists(), "a read-only open created the directory");

    // An empty directory is an empty store; the LOCK file is the one thing
    // a reader may create (there must be something to hold a lock on).
    let (store, report) = Store::open_read_only(Arc::new(OsVfs), clock(), tmp.path()).unwrap();
    assert_eq!((store.key_count(), report.frames_replayed, report.aof.dropped_bytes), (0, 0, 0));
    drop(store);
    assert_eq!(os_files(tmp.path()).into_keys().collect::<Vec<_>>(), [LOCK_FILE]);
}

#[test]
fn on_the_real_disk_a_second_open_in_the_same_process_is_refused_and_the_lock_file_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut store = open(os.clone(), dir).unwrap();
    populate(&mut store);
    let before = os_files(dir);
    assert_eq!(before.get(LOCK_FILE).map(Vec::len), Some(0), "an empty LOCK file: {:?}", before.keys());
    assert_locked(open(os.clone(), dir), dir);
    assert_locked(open_read_only(os.clone(), dir), dir);
    assert_eq!(os_files(dir), before);

    // The sweep, the audit, rewrite and FLUSHALL all leave LOCK alone.
    store.rewrite().unwrap();
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    run(&mut store, &["FLUSHALL"]);
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    run(&mut store, &["SET", "after", "flush"]);
    store.close().unwrap();
    assert!(dir.join(LOCK_FILE).exists());

    let mut store = open(os.clone(), dir).unwrap();
    assert_eq!(get(&mut store, "after"), bulk("flush"));
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    assert!(dir.join(LOCK_FILE).exists());
}

/// Issue 22: `LOCK` deleted, or replaced by another file, under a running
/// store. The owner's lock is on the directory itself, so every later
/// opener is refused all the same and changes nothing; once the owner
/// closes, the directory opens again (and `LOCK` is back).
#[test]
fn on_the_real_disk_deleting_or_replacing_lock_admits_no_second_opener() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut store = open(os.clone(), dir).unwrap();
    populate(&mut store);
    std::fs::remove_file(dir.join(LOCK_FILE)).unwrap();
    let before = os_files(dir);
    assert_locked(open(os.clone(), dir), dir);
    assert_locked(open_read_only(os.clone(), dir), dir);
    assert_eq!(os_files(dir), before, "a refused opener recreated LOCK or wrote");
    std::fs::write(dir.join("LOCK.new"), b"").unwrap();
    std::fs::rename(dir.join("LOCK.new"), dir.join(LOCK_FILE)).unwrap();
    assert_locked(open(os.clone(), dir), dir);
    run(&mut store, &["SET", "still", "mine"]);
    store.close().unwrap();
    let mut store = open(os.clone(), dir).unwrap();
    assert_eq!(get(&mut store, "still"), bulk("mine"));
    assert!(store.audit().is_empty(), "{:?}", store.audit());
}

/// What the lock is for, shown by taking it away: two writers that both
/// get in (a `Vfs` whose lock holds nothing) each append at their own idea
/// of the log's end, and one's acknowledged write is overwritten by the
/// other's. With the lock the second writer never gets in.
#[test]
fn without_the_lock_two_writers_lose_an_acknowledged_write() {
    for locked in [false, true] {
        let mem: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let vfs: Arc<dyn Vfs> = if locked { mem.clone() } else { Arc::new(NoLock::new(mem.clone())) };
        let dir = Path::new("/db");
        let mut acknowledged = Vec::new();

        let mut a = open(vfs.clone(), dir).unwrap();
        assert_eq!(run(&mut a, &["SET", "a", "1"]), Reply::Ok);
        acknowledged.push(("a", "1"));
        match open(vfs.clone(), dir) {
            Ok(mut b) => {
                assert_eq!(run(&mut b, &["SET", "b", "2"]), Reply::Ok);
                acknowledged.push(("b", "2"));
                b.close().unwrap();
            }
            Err(e) => assert!(locked && matches!(e, Error::Locked { .. }), "{e}"),
        }
        assert_eq!(run(&mut a, &["SET", "c", "3"]), Reply::Ok);
        acknowledged.push(("c", "3"));
        a.close().unwrap();

        let mut reopened = open(vfs, dir).unwrap();
        let lost: Vec<_> =
            acknowledged.iter().filter(|(key, value)| get(&mut reopened, key) != bulk(value)).copied().collect();
        if locked {
            assert_eq!(lost, [], "with the lock");
        } else {
            assert_eq!(lost, [("b", "2")], "without the lock the second writer's write is overwritten");
        }
    }
}
