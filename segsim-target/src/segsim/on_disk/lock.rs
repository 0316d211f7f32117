//! A store directory on the simulated disk has one owner while the store
//! lives: a second open is refused and changes nothing. Power loss and
//! process restart end every lock, and a store from before them releases
//! nothing when it is dropped later. Locking is not an I/O operation: it
//! leaves the I/O count and the trace alone.

use std::io;
use std::sync::Arc;

use engine::aof::FsyncPolicy;
use engine::clock::ManualClock;
use engine::store::{Command, Options, Reply, Store};
use engine::Error;
use vfs::{Holders, LockMode, Vfs};

use super::{contents, dir, listed};
use simulator::disk::{CrashMode, CrashPoint, DiskConfig, SimVfs};
use simulator::trace::Trace;

fn disk(mode: CrashMode) -> Arc<SimVfs> {
    Arc::new(SimVfs::new(DiskConfig::fault_free(mode, 512), Trace::new(false)))
}

fn open(vfs: &Arc<SimVfs>, fsync: FsyncPolicy) -> engine::Result<Store> {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let vfs: Arc<dyn Vfs> = vfs.clone();
    Store::open(vfs, clock, dir(), Options { fsync, ..Options::default() }).map(|(store, _)| store)
}

fn open_read_only(vfs: &Arc<SimVfs>) -> engine::Result<Store> {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let vfs: Arc<dyn Vfs> = vfs.clone();
    Store::open_read_only(vfs, clock, dir()).map(|(store, _)| store)
}

fn set(store: &mut Store, key: &str, value: &str) {
    let command = Command::Set { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec() };
    assert_eq!(store.execute(&command).unwrap(), Reply::Ok);
}

fn get(store: &mut Store, key: &str) -> Reply {
    store.execute(&Command::Get { key: key.as_bytes().to_vec() }).unwrap()
}

fn assert_locked(result: engine::Result<Store>) {
    match result {
        Err(Error::Locked { dir: locked }) => assert_eq!(locked, dir()),
        Err(e) => panic!("expected Locked, got {e}"),
        Ok(_) => panic!("a second opener was let in"),
    }
}

const ONE_WRITER: Option<Holders> = Some(Holders { mode: LockMode::Exclusive, count: 1 });

/// Every file of the store directory with its bytes as reads see them.
fn files(vfs: &SimVfs) -> Vec<(String, Option<Vec<u8>>)> {
    let names = listed(vfs, dir());
    names.into_iter().map(|name| (name.clone(), contents(vfs, &name))).collect()
}

#[test]
fn a_second_open_of_a_live_store_is_refused_and_changes_nothing() {
    for mode in CrashMode::ALL {
        let vfs = disk(mode);
        // fsync `no`, so the disk holds pending writes a stray fsync,
        // cut or append by the refused opener would change.
        let mut first = open(&vfs, FsyncPolicy::No).unwrap();
        set(&mut first, "k1", "v1");
        let before = files(&vfs);
        let (changes, ios, pending) = (vfs.changes(), vfs.io_count(), vfs.snapshot().pending_data_ops());
        assert!(pending > 0);

        assert_locked(open(&vfs, FsyncPolicy::Always));
        assert_eq!(vfs.io_count(), ios + 1, "a refused writer only made sure the directory exists");
        assert_locked(open_read_only(&vfs));
        assert_eq!(vfs.io_count(), ios + 1, "a refused reader does no I/O at all");
        assert_eq!(vfs.changes(), changes, "{mode:?}: a refused opener changed the disk");
        assert_eq!(vfs.snapshot().pending_data_ops(), pending);
        assert_eq!(vfs.lock_holders(dir()), ONE_WRITER);
        assert_eq!(files(&vfs), before);

        set(&mut first, "k2", "v2");
        first.close().unwrap();
        assert_eq!(vfs.lock_holders(dir()), None, "closing released the lock");
        vfs.power_loss(3);
        let mut store = open(&vfs, FsyncPolicy::No).unwrap();
        assert_eq!(get(&mut store, "k1"), Reply::Bulk(b"v1".to_vec()));
        assert_eq!(get(&mut store, "k2"), Reply::Bulk(b"v2".to_vec()));
    }
}

#[test]
fn power_loss_and_restart_end_the_lock_and_an_older_store_releases_nothing_later() {
    for power_loss in [true, false] {
        let vfs = disk(CrashMode::Prefix);
        let mut old = open(&vfs, FsyncPolicy::Always).unwrap();
        set(&mut old, "a", "1");
        if power_loss {
            vfs.power_loss(1);
        } else {
            assert!(vfs.process_restart().is_none(), "posix never shuts down: a plain restart");
        }
        assert_eq!(vfs.lock_holders(dir()), None, "a dead process holds nothing");

        // The old store object still exists (its process is gone); the
        // next process opens the directory anyway.
        let mut new = open(&vfs, FsyncPolicy::Always).unwrap();
        drop(old);
        assert_eq!(vfs.lock_holders(dir()), ONE_WRITER, "the old guard released the new holder's lock");
        assert_locked(open(&vfs, FsyncPolicy::Always));
        assert_eq!(get(&mut new, "a"), Reply::Bulk(b"1".to_vec()));
        set(&mut new, "b", "2");
        drop(new);
        assert_eq!(vfs.lock_holders(dir()), None);
    }
}

#[test]
fn read_only_opens_share_the_directory_with_each_other_only() {
    let vfs = disk(CrashMode::Reorder);
    let mut writer = open(&vfs, FsyncPolicy::No).unwrap();
    set(&mut writer, "a", "1");
    drop(writer);
    // The writer's last append was never fsynced: a read-only open must
    // read it from the page cache and still not fsync it.
    let changes = vfs.changes();
    let readers = [open_read_only(&vfs).unwrap(), open_read_only(&vfs).unwrap()];
    assert_eq!(vfs.lock_holders(dir()), Some(Holders { mode: LockMode::Shared, count: 2 }));
    assert_locked(open(&vfs, FsyncPolicy::No));
    for mut reader in readers {
        assert_eq!(get(&mut reader, "a"), Reply::Bulk(b"1".to_vec()));
        let refused = reader.execute(&Command::Set { key: b"b".to_vec(), value: b"2".to_vec() });
        assert!(matches!(refused, Err(Error::ReadOnly { .. })), "{refused:?}");
    }
    assert_eq!(vfs.changes(), changes, "a read-only open changed the disk");
    assert_eq!(vfs.lock_holders(dir()), None);

    // A writer's open, by contrast, fsyncs what it replays.
    drop(open(&vfs, FsyncPolicy::No).unwrap());
    assert_ne!(vfs.changes(), changes);
}

#[test]
fn locking_is_not_an_io_operation_and_fails_like_one_only_when_the_process_is_dying() {
    let vfs = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(true));
    assert_eq!(vfs.lock(dir(), LockMode::Exclusive).unwrap_err().kind(), io::ErrorKind::NotFound);
    vfs.create_dir_all(dir()).unwrap();
    let (ios, hash, events) = (vfs.io_count(), vfs.with_trace(|t| t.hash()), vfs.with_trace(|t| t.event_count()));
    let guard = vfs.lock(dir(), LockMode::Exclusive).unwrap();
    assert_eq!(vfs.lock(dir(), LockMode::Shared).unwrap_err().kind(), io::ErrorKind::WouldBlock);
    drop(guard);
    drop(vfs.lock(dir(), LockMode::Shared).unwrap());
    assert_eq!(
        (vfs.io_count(), vfs.with_trace(|t| t.hash()), vfs.with_trace(|t| t.event_count())),
        (ios, hash, events)
    );

    vfs.arm_crash(Some(CrashPoint::AtIo(ios)));
    assert!(vfs.exists(dir()).is_err() && vfs.crash_point_reached());
    let dying = vfs.lock(dir(), LockMode::Exclusive).unwrap_err();
    assert!(dying.to_string().contains("power loss"), "{dying}");
    vfs.power_loss(0);
    drop(vfs.lock(dir(), LockMode::Exclusive).unwrap());
}
