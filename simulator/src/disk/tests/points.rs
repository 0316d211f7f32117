//! Crash points fail exactly the operations from their point on; every
//! operation is traced with its index; the same seeds give the same trace.

use vfs::{OpenMode, Vfs};

use super::{contents, dir, disk, disk_holding, disk_with, open_write, path, pattern};
use crate::disk::{CrashMode, CrashPoint, DiskConfig, SimVfs};
use crate::trace::{Event, Trace};

/// Whether each of five `exists` calls succeeded.
fn five_ops(vfs: &SimVfs) -> Vec<bool> {
    (0..5).map(|_| vfs.exists(&path("f")).is_ok()).collect()
}

#[test]
fn after_ios_counts_from_begin_op() {
    let vfs = disk(CrashMode::Strict, 512);
    five_ops(&vfs);
    vfs.arm_crash(Some(CrashPoint::AfterIos(2)));
    vfs.begin_op(0);
    assert_eq!(five_ops(&vfs), [true, true, false, false, false]);
    assert!(vfs.crash_point_reached());
    vfs.begin_op(1);
    assert!(vfs.exists(&path("f")).is_err(), "still down: only power loss brings it back");
    vfs.power_loss(0);
    assert!(!vfs.crash_point_reached());
    assert_eq!(five_ops(&vfs), [true; 5], "power loss disarms");
}

#[test]
fn at_io_counts_globally() {
    let vfs = disk(CrashMode::Strict, 512);
    let start = vfs.io_count();
    vfs.arm_crash(Some(CrashPoint::AtIo(start + 3)));
    vfs.begin_op(0);
    assert_eq!(five_ops(&vfs), [true, true, true, false, false]);
    assert_eq!(vfs.io_count(), start + 5, "failed operations still take an index");
}

#[test]
fn at_mark_fails_everything_after_the_label() {
    let vfs = disk(CrashMode::Strict, 512);
    vfs.arm_crash(Some(CrashPoint::AtMark("seal.built")));
    vfs.begin_op(0);
    vfs.mark("frame.logged");
    assert_eq!(five_ops(&vfs), [true; 5]);
    vfs.mark("seal.built");
    assert!(vfs.crash_point_reached());
    assert_eq!(five_ops(&vfs), [false; 5]);
    assert_eq!(vfs.last_mark(), Some("seal.built"));
    assert_eq!(vfs.marks_this_op(), ["frame.logged", "seal.built"]);
    vfs.begin_op(1);
    assert_eq!(vfs.last_mark(), None);
}

#[test]
fn a_refused_operation_does_not_touch_the_disk() {
    let vfs = disk_holding(CrashMode::Strict, 512, "f", b"before");
    let mut file = open_write(&vfs, "f");
    vfs.arm_crash(Some(CrashPoint::AfterIos(0)));
    vfs.begin_op(0);
    assert!(file.write_at(0, b"AFTER!").is_err());
    assert!(vfs.unlink(&path("f")).is_err());
    vfs.arm_crash(None);
    assert!(vfs.crash_point_reached(), "disarming does not undo a reached point");
    assert!(vfs.process_restart().is_none(), "posix never shuts down: a plain restart");
    assert_eq!(contents(&vfs, "f").unwrap(), b"before");
}

#[test]
fn every_operation_is_traced_once_with_consecutive_indexes() {
    let vfs = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(true));
    vfs.create_dir_all(dir()).unwrap();
    let mut file = vfs.open(&path("f"), OpenMode::Create).unwrap();
    file.write_at(0, b"abc").unwrap();
    file.sync().unwrap();
    vfs.mark("open.done");
    assert!(vfs.open(&path("missing"), OpenMode::Read).is_err());
    let trace = vfs.take_trace();
    let indexes: Vec<(u64, bool)> = trace
        .all()
        .iter()
        .filter_map(|event| match *event {
            Event::Io { index, ok, .. } => Some((index, ok)),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, [(0, true), (1, true), (2, true), (3, true), (4, false)]);
    assert!(trace.all().contains(&Event::Mark { phase: "open.done" }));
    assert_eq!(vfs.io_count(), 5);
}

/// A small scripted run with every fault switched on; its trace hash.
fn scripted_run(config: &DiskConfig, seed: u64) -> u64 {
    let vfs = disk_with(config.clone());
    for round in 0..20u64 {
        vfs.begin_op(seed.wrapping_mul(1000) + round);
        let name = ["a", "b", "c"][round as usize % 3];
        if let Ok(mut file) = vfs.open(&path(name), OpenMode::Create) {
            let _ = file.write_at(round * 300, &pattern(round as u8, 700));
            let _ = file.sync();
            let _ = file.read_at(0, &mut [0u8; 900]);
        }
        let _ = vfs.rename(&path(name), &path("renamed"));
        let _ = vfs.sync_dir(dir());
        let _ = vfs.map_readonly(&path("renamed"));
        if round % 7 == 6 {
            vfs.power_loss(seed + round);
        }
    }
    vfs.take_trace().hash()
}

#[test]
fn the_same_seeds_give_the_same_trace() {
    for mode in CrashMode::ALL {
        let mut config = DiskConfig::fault_free(mode, 512);
        config.p_write_eio = 0.2;
        config.p_short_write = 0.5;
        config.p_fsync_eio = 0.2;
        config.p_read_eio = 0.1;
        config.p_bitflip = 0.2;
        config.capacity_bytes = 8000;
        config.p_media_corruption = 0.5;
        config.p_torn_garbage = 0.5;
        let first = scripted_run(&config, 7);
        assert_eq!(first, scripted_run(&config, 7), "{mode:?}");
        assert_ne!(first, scripted_run(&config, 8), "{mode:?}: another seed, another run");
    }
}
