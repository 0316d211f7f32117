//! Fail-stop: a failed fsync poisons the store until it is reopened; a
//! failed or short write leaves no partial frame behind; a full disk fails
//! the write cleanly and leaves the store readable.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Reply, Store};
use engine::vfs::{OsVfs, Vfs};
use engine::Error;
use support::{cmd, Faulty};

fn setup() -> (tempfile::TempDir, Arc<Faulty>, Arc<ManualClock>, Store) {
    let dir = tempfile::tempdir().unwrap();
    let faulty = Arc::new(Faulty::new(Arc::new(OsVfs)));
    let clock = Arc::new(ManualClock::new(1_000_000));
    let (store, _) = Store::open(faulty.clone(), clock.clone(), dir.path(), Options::default()).unwrap();
    (dir, faulty, clock, store)
}

fn reopen(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Store {
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    let (store, _) = Store::open(vfs, clock.clone(), dir, Options::default()).unwrap();
    store
}

#[test]
fn a_failed_fsync_poisons_every_later_write_until_reopen() {
    let (dir, faulty, clock, mut store) = setup();
    store.execute(&cmd(&["SET", "a", "1"])).unwrap();
    faulty.faults.fail_next_sync.store(true, Ordering::SeqCst);
    assert!(matches!(store.execute(&cmd(&["SET", "b", "2"])), Err(Error::Io { .. })));
    // The sync would succeed now, but the dirty pages may be gone: refuse.
    for command in [cmd(&["SET", "c", "3"]), cmd(&["DEL", "a"]), cmd(&["HSET", "h", "f", "v"])] {
        assert!(matches!(store.execute(&command), Err(Error::Poisoned { .. })), "{command:?}");
    }
    assert!(matches!(store.evict(), Err(Error::Poisoned { .. })));
    assert!(matches!(store.rewrite(), Err(Error::Poisoned { .. })));
    assert!(matches!(store.sync(), Err(Error::Poisoned { .. })));
    // Reads still work.
    assert_eq!(store.execute(&cmd(&["GET", "a"])).unwrap(), Reply::Bulk(b"1".to_vec()));
    assert!(store.poisoned().is_some());
    drop(store);
    let mut store = reopen(dir.path(), &clock);
    assert_eq!(store.execute(&cmd(&["GET", "a"])).unwrap(), Reply::Bulk(b"1".to_vec()));
    // The unacknowledged write may or may not have reached the disk.
    let b = store.execute(&cmd(&["GET", "b"])).unwrap();
    assert!(b == Reply::Nil || b == Reply::Bulk(b"2".to_vec()), "{b:?}");
    store.execute(&cmd(&["SET", "c", "3"])).unwrap();
    assert!(store.audit().is_empty());
}

#[test]
fn a_short_write_leaves_no_partial_frame() {
    let (dir, faulty, clock, mut store) = setup();
    store.execute(&cmd(&["SET", "a", "1"])).unwrap();
    faulty.faults.fail_next_write_short.store(true, Ordering::SeqCst);
    assert!(store.execute(&cmd(&["SET", "b", "a-long-value-so-half-is-a-torn-frame"])).is_err());
    assert!(store.poisoned().is_none(), "a write cut back cleanly does not poison");
    // The next append must land where the failed one started.
    store.execute(&cmd(&["SET", "c", "3"])).unwrap();
    drop(store);
    let mut store = reopen(dir.path(), &clock);
    assert_eq!(store.execute(&cmd(&["GET", "b"])).unwrap(), Reply::Nil);
    assert_eq!(store.execute(&cmd(&["GET", "c"])).unwrap(), Reply::Bulk(b"3".to_vec()));
    assert!(store.audit().is_empty());
}

#[test]
fn a_full_disk_fails_writes_cleanly_and_stays_readable() {
    let (dir, faulty, clock, mut store) = setup();
    store.execute(&cmd(&["WINDOW", "t", "ts", "1"])).unwrap();
    for i in 0..10 {
        store.execute(&cmd(&["HSET", &format!("t:{i}"), "ts", &i.to_string()])).unwrap();
    }
    faulty.faults.fail_writes_no_space.store(true, Ordering::SeqCst);
    assert!(store.execute(&cmd(&["SET", "x", "1"])).is_err());
    assert!(store.evict().is_err(), "sealing a segment needs space too");
    assert!(store.rewrite().is_err());
    assert_eq!(store.execute(&cmd(&["HGET", "t:3", "ts"])).unwrap(), Reply::Bulk(b"3".to_vec()));
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    faulty.faults.fail_writes_no_space.store(false, Ordering::SeqCst);
    store.execute(&cmd(&["SET", "x", "1"])).unwrap();
    let report = store.evict().unwrap();
    assert_eq!(report.rows_evicted, 8);
    drop(store);
    let mut store = reopen(dir.path(), &clock);
    assert_eq!(store.execute(&cmd(&["GET", "x"])).unwrap(), Reply::Bulk(b"1".to_vec()));
    assert_eq!(store.cold_count(), 8);
    assert!(store.audit().is_empty());
}
