//! A tiny store that publishes each snapshot by renaming a directory into
//! place (`tmp-N` to `snap-N`) and drops the one before with a removal,
//! swept over crash seeds under posix and ext4: the honest store (the
//! parent fsynced before a publish is acknowledged) always recovers the
//! last acknowledged snapshot whole; the planted bug (no parent fsync)
//! is caught.

use std::path::PathBuf;

use vfs::{read_whole, OpenMode, Vfs};

use super::{dir, disk_with, path};
use crate::disk::{CrashMode, DiskConfig, FsProfile, SimVfs};

/// The snapshot of generation `generation`: two files whose bytes name it.
fn files_of(generation: u64) -> [(&'static str, Vec<u8>); 2] {
    [("data", format!("data of {generation}").into_bytes()), ("index", format!("index {generation}").into_bytes())]
}

/// Publish `generation`: written and fsynced under `tmp-N`, the directory
/// fsynced, renamed to `snap-N`, then (unless `planted`) the parent
/// fsynced: only then is it acknowledged. The previous snapshot is removed
/// after.
fn publish(vfs: &SimVfs, generation: u64, planted: bool) {
    let tmp = path(&format!("tmp-{generation}"));
    vfs.create_dir_all(&tmp).unwrap();
    for (name, bytes) in files_of(generation) {
        let mut file = vfs.open(&tmp.join(name), OpenMode::Truncate).unwrap();
        file.write_at(0, &bytes).unwrap();
        file.sync().unwrap();
    }
    vfs.sync_dir(&tmp).unwrap();
    vfs.rename(&tmp, &path(&format!("snap-{generation}"))).unwrap();
    if !planted {
        vfs.sync_dir(dir()).unwrap();
    }
    if generation > 0 {
        let old = path(&format!("snap-{}", generation - 1));
        for (name, _) in files_of(generation - 1) {
            vfs.unlink(&old.join(name)).unwrap();
        }
        vfs.remove_dir(&old).unwrap();
    }
}

/// The newest snapshot after a crash, which must be whole: its
/// generation, or an error naming what is wrong (a snapshot missing a
/// file or holding another's bytes is refused, never read as another
/// generation). An older one may be half removed: it is garbage.
fn recover(vfs: &SimVfs) -> Result<Option<u64>, String> {
    let names = vfs.list_subdirs(dir()).unwrap().into_iter().map(|name| name.into_string().unwrap());
    let newest = names.filter_map(|name| name.strip_prefix("snap-").and_then(|n| n.parse::<u64>().ok())).max();
    let Some(generation) = newest else { return Ok(None) };
    let at: PathBuf = path(&format!("snap-{generation}"));
    for (file, bytes) in files_of(generation) {
        let read = read_whole(vfs, &at.join(file)).map_err(|e| format!("snap-{generation}/{file}: {e}"))?;
        if read != bytes {
            return Err(format!("snap-{generation}/{file} holds {read:?}"));
        }
    }
    Ok(Some(generation))
}

/// Sweep crash seeds: each publishes 1 to 4 snapshots, loses power, and
/// recovers. The seeds whose recovery lost an acknowledged snapshot or
/// found a broken one.
fn sweep(fs: FsProfile, mode: CrashMode, planted: bool) -> Vec<(u64, String)> {
    let mut failing = Vec::new();
    for seed in 0..200u64 {
        let vfs = disk_with(DiskConfig { fs, ..DiskConfig::fault_free(mode, 512) });
        let last = seed % 4;
        for generation in 0..=last {
            publish(&vfs, generation, planted);
        }
        vfs.power_loss(seed);
        match recover(&vfs) {
            Ok(Some(found)) if found >= last => {}
            Ok(found) => failing.push((seed, format!("acknowledged {last}, recovered {found:?}"))),
            Err(broken) => failing.push((seed, broken)),
        }
    }
    failing
}

#[test]
fn the_honest_snapshot_store_survives_every_crash_under_posix_and_ext4() {
    for fs in [FsProfile::POSIX, FsProfile::EXT4] {
        for mode in [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder] {
            assert_eq!(sweep(fs, mode, false), [], "{} {mode:?}", fs.name);
        }
    }
}

#[test]
fn the_sweep_catches_a_publish_acknowledged_before_its_parents_fsync() {
    for fs in [FsProfile::POSIX, FsProfile::EXT4] {
        for mode in [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder] {
            let failing = sweep(fs, mode, true);
            assert!(!failing.is_empty(), "{} {mode:?}: the planted bug went unseen", fs.name);
        }
    }
}
