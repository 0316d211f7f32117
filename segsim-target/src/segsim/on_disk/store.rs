//! End to end: the engine's store runs on the simulated disk, and what it
//! synced survives power loss while what it did not is gone.

use std::sync::Arc;

use engine::aof::FsyncPolicy;
use engine::clock::ManualClock;
use engine::store::{Command, Options, Reply, Store};
use vfs::Vfs;

use super::dir;
use simulator::disk::{CrashMode, DiskConfig, SimVfs};
use simulator::trace::Trace;

fn open(vfs: &Arc<SimVfs>, fsync: FsyncPolicy) -> Store {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let vfs: Arc<dyn Vfs> = vfs.clone();
    Store::open(vfs, clock, dir(), Options { fsync, ..Options::default() }).expect("the store opens").0
}

fn set(key: &str, value: &str) -> Command {
    Command::Set { key: key.as_bytes().to_vec(), value: value.as_bytes().to_vec() }
}

fn get(store: &mut Store, key: &str) -> Reply {
    store.execute(&Command::Get { key: key.as_bytes().to_vec() }).unwrap()
}

#[test]
fn synced_writes_survive_power_loss() {
    for mode in CrashMode::ALL {
        let vfs = Arc::new(SimVfs::new(DiskConfig::fault_free(mode, 4096), Trace::new(false)));
        let mut store = open(&vfs, FsyncPolicy::No);
        store.execute(&set("k1", "v1")).unwrap();
        store.execute(&set("k2", "v2")).unwrap();
        store.sync().unwrap();
        vfs.power_loss(42);
        drop(store);
        let mut store = open(&vfs, FsyncPolicy::No);
        assert_eq!(get(&mut store, "k1"), Reply::Bulk(b"v1".to_vec()), "{mode:?}");
        assert_eq!(get(&mut store, "k2"), Reply::Bulk(b"v2".to_vec()), "{mode:?}");
        assert!(store.audit().is_empty());
    }
}

#[test]
fn unsynced_writes_are_gone_in_strict_mode() {
    let vfs = Arc::new(SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false)));
    let mut store = open(&vfs, FsyncPolicy::No);
    store.execute(&set("kept", "yes")).unwrap();
    store.sync().unwrap();
    store.execute(&set("lost", "never synced")).unwrap();
    assert_eq!(get(&mut store, "lost"), Reply::Bulk(b"never synced".to_vec()));
    let outcome = vfs.power_loss(7);
    assert!(outcome.lost_writes > 0);
    drop(store);
    let mut store = open(&vfs, FsyncPolicy::No);
    assert_eq!(get(&mut store, "lost"), Reply::Nil);
    assert_eq!(get(&mut store, "kept"), Reply::Bulk(b"yes".to_vec()));
}

#[test]
fn under_fsync_always_every_acknowledged_write_survives_every_mode() {
    for mode in CrashMode::ALL {
        for crash_seed in 0..8 {
            let mut config = DiskConfig::fault_free(mode, 512);
            config.p_torn_garbage = 0.5;
            let vfs = Arc::new(SimVfs::new(config, Trace::new(false)));
            let mut store = open(&vfs, FsyncPolicy::Always);
            for i in 0..20 {
                store.execute(&set(&format!("k{i}"), &format!("v{i}"))).unwrap();
            }
            vfs.power_loss(crash_seed);
            drop(store);
            let mut store = open(&vfs, FsyncPolicy::Always);
            for i in 0..20 {
                let want = Reply::Bulk(format!("v{i}").into_bytes());
                assert_eq!(get(&mut store, &format!("k{i}")), want, "{mode:?} seed {crash_seed}");
            }
        }
    }
}
