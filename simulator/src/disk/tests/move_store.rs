//! A tiny spool that takes each record in `incoming/` (written and
//! fsynced there) and acknowledges it once it is moved into `done/`
//! (a rename across directories; a batch is a directory moved the same
//! way), swept over crash seeds under every profile: the honest spool
//! (the destination fsynced before the acknowledgement) always finds
//! every acknowledged record in `done/`, whole, and never a record in
//! both directories; the planted bug (acknowledged with no fsync of
//! either parent) is caught.

use std::path::Path;

use vfs::{read_whole, OpenMode, Vfs};

use super::{disk_with, listed, path};
use crate::disk::{CrashMode, DiskConfig, FsProfile, SimVfs};

fn record(n: u64) -> Vec<u8> {
    format!("record {n}").into_bytes()
}

fn write_synced(vfs: &SimVfs, at: &Path, bytes: &[u8]) {
    let mut file = vfs.open(at, OpenMode::Truncate).unwrap();
    file.write_at(0, bytes).unwrap();
    file.sync().unwrap();
}

/// Take record `n`: its file in `incoming/`, its batch directory
/// `incoming/batch-n` (one file), both fsynced with their directories,
/// then both moved into `done/` and (unless `planted`) `done/` fsynced:
/// only then acknowledged.
fn take(vfs: &SimVfs, n: u64, planted: bool) {
    let batch = path(&format!("incoming/batch-{n}"));
    vfs.create_dir_all(&batch).unwrap();
    write_synced(vfs, &batch.join("part"), &record(n));
    vfs.sync_dir(&batch).unwrap();
    write_synced(vfs, &path(&format!("incoming/rec-{n}")), &record(n));
    vfs.sync_dir(&path("incoming")).unwrap();
    vfs.rename(&path(&format!("incoming/rec-{n}")), &path(&format!("done/rec-{n}"))).unwrap();
    vfs.rename(&batch, &path(&format!("done/batch-{n}"))).unwrap();
    if !planted {
        vfs.sync_dir(&path("done")).unwrap();
    }
}

/// After a crash: every record up to `acknowledged` in `done/` whole
/// (file and batch), and nothing named in both directories; else what is
/// wrong.
fn check(vfs: &SimVfs, acknowledged: u64) -> Result<(), String> {
    let (incoming, done) = (listed(vfs, &path("incoming")), listed(vfs, &path("done")));
    let subdirs = |at: &str| -> Vec<String> {
        vfs.list_subdirs(&path(at)).unwrap().into_iter().map(|name| name.into_string().unwrap()).collect()
    };
    let (incoming_batches, done_batches) = (subdirs("incoming"), subdirs("done"));
    for n in 0..=acknowledged {
        let (name, batch) = (format!("rec-{n}"), format!("batch-{n}"));
        if incoming.contains(&name) || incoming_batches.contains(&batch) {
            return Err(format!("record {n} still (or also) in incoming: {incoming:?} {incoming_batches:?}"));
        }
        let read = |at: String| read_whole(vfs, &path(&at)).map_err(|e| format!("{at}: {e}"));
        if read(format!("done/{name}"))? != record(n) || read(format!("done/{batch}/part"))? != record(n) {
            return Err(format!("record {n} not whole in done"));
        }
    }
    let in_both = done.iter().find(|name| incoming.contains(name));
    let batch_in_both = done_batches.iter().find(|name| incoming_batches.contains(name));
    match in_both.or(batch_in_both) {
        Some(name) => Err(format!("{name} in both directories")),
        None => Ok(()),
    }
}

/// Sweep crash seeds: each takes 1 to 4 records, loses power, checks.
fn sweep(fs: FsProfile, mode: CrashMode, planted: bool) -> Vec<(u64, String)> {
    let mut failing = Vec::new();
    for seed in 0..150u64 {
        let vfs = disk_with(DiskConfig { fs, ..DiskConfig::fault_free(mode, 512) });
        vfs.create_dir_all(&path("incoming")).unwrap();
        vfs.create_dir_all(&path("done")).unwrap();
        let last = seed % 4;
        for n in 0..=last {
            take(&vfs, n, planted);
        }
        vfs.power_loss(seed);
        if let Err(wrong) = check(&vfs, last) {
            failing.push((seed, wrong));
        }
    }
    failing
}

#[test]
fn the_honest_spool_keeps_every_acknowledged_record_under_every_profile() {
    for fs in FsProfile::ALL {
        for mode in [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder] {
            assert_eq!(sweep(fs, mode, false), [], "{} {mode:?}", fs.name);
        }
    }
}

#[test]
fn the_sweep_catches_a_record_acknowledged_before_any_parents_fsync() {
    for fs in FsProfile::ALL {
        for mode in [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder] {
            let failing = sweep(fs, mode, true);
            assert!(!failing.is_empty(), "{} {mode:?}: the planted bug went unseen", fs.name);
        }
    }
}
