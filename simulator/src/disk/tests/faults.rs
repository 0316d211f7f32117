//! Injected faults do what the config promises, and nothing more.

use std::io;

use vfs::{read_whole, OpenMode, Vfs};

use super::{contents, create_durable, disk_with, open_write, path, pattern};
use crate::disk::{CrashMode, DiskConfig};
use crate::trace::FaultKind;

fn config(sector_bytes: u64, set: impl FnOnce(&mut DiskConfig)) -> DiskConfig {
    let mut config = DiskConfig::fault_free(CrashMode::Strict, sector_bytes);
    set(&mut config);
    config
}

#[test]
fn a_failed_fsync_drops_the_dirty_data_and_the_next_fsync_succeeds() {
    let vfs = disk_with(config(512, |c| c.p_fsync_eio = 1.0));
    vfs.set_faults_enabled(false);
    create_durable(&vfs, "f", b"durable");
    vfs.set_faults_enabled(true);
    let mut file = open_write(&vfs, "f");
    file.write_at(7, b" dirty").unwrap();
    vfs.begin_op(1);
    assert!(file.sync().is_err());
    assert!(vfs.faults_injected_this_op());
    assert_eq!(contents(&vfs, "f").unwrap(), b"durable", "reads see the durable image");
    assert_eq!(file.len().unwrap(), 7);
    file.sync().expect("the retry succeeds, having nothing left to lose");
    file.write_at(7, b" again").unwrap();
    assert!(file.sync().is_err(), "the one after that meets the fault again");
    assert_eq!(vfs.fault_counts()[&FaultKind::FsyncEio], 2);
    vfs.begin_op(2);
    assert!(!vfs.faults_injected_this_op());
}

#[test]
fn a_failed_write_leaves_nothing_or_a_sector_aligned_strict_prefix() {
    let data = pattern(5, 3000);
    for seed in 0..40 {
        let short = seed % 2 == 0;
        let vfs = disk_with(config(512, |c| {
            c.p_write_eio = 1.0;
            c.p_short_write = if short { 1.0 } else { 0.0 };
        }));
        let mut file = vfs.open(&path("f"), OpenMode::Create).unwrap();
        vfs.begin_op(seed);
        assert!(file.write_at(100, &data).is_err());
        let got = contents(&vfs, "f").unwrap();
        if short {
            assert!(got.len() > 100 && got.len() < 3100 && got.len().is_multiple_of(512), "len {}", got.len());
            assert_eq!(&got[100..], &data[..got.len() - 100]);
            assert_eq!(vfs.fault_counts()[&FaultKind::ShortWrite], 1);
        } else {
            assert!(got.is_empty());
            assert_eq!(vfs.fault_counts()[&FaultKind::WriteEio], 1);
        }
    }
}

#[test]
fn past_capacity_a_write_fails_cleanly_and_writes_nothing() {
    let vfs = disk_with(config(4096, |c| c.capacity_bytes = 1000));
    let mut file = vfs.open(&path("f"), OpenMode::Create).unwrap();
    file.write_at(0, &[1; 600]).unwrap();
    let err = file.write_at(600, &[2; 401]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    assert_eq!(file.len().unwrap(), 600);
    assert_eq!(file.set_len(1001).unwrap_err().kind(), io::ErrorKind::StorageFull);
    file.write_at(0, &[3; 600]).expect("an overwrite needs no space");
    file.write_at(600, &[4; 400]).expect("exactly full is fine");
    assert_eq!(vfs.volatile_bytes(), 1000);
    assert_eq!(vfs.fault_counts()[&FaultKind::NoSpace], 2);
    vfs.set_faults_enabled(false);
    file.write_at(1000, &[5; 10]).expect("with faults off there is no limit");
}

#[test]
fn bit_flips_are_transient_and_spare_mappings() {
    let vfs = disk_with(config(512, |c| c.p_bitflip = 1.0));
    let data = pattern(9, 2000);
    create_durable(&vfs, "f", &data);
    let file = vfs.open(&path("f"), OpenMode::Read).unwrap();
    for seed in 0..20 {
        vfs.begin_op(seed);
        let mut buf = vec![0u8; data.len()];
        assert_eq!(file.read_at(0, &mut buf).unwrap(), data.len());
        let flipped_bits: u32 = buf.iter().zip(&data).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert_eq!(flipped_bits, 1);
    }
    assert_eq!(&*vfs.map_readonly(&path("f")).unwrap(), &data[..]);
    vfs.set_faults_enabled(false);
    assert_eq!(read_whole(&vfs, &path("f")).unwrap(), data, "the disk itself is unchanged");
    assert_eq!(vfs.fault_counts()[&FaultKind::BitFlip], 20);
}

#[test]
fn read_eio_fails_reads_and_maps() {
    let vfs = disk_with(config(512, |c| c.p_read_eio = 1.0));
    create_durable(&vfs, "f", b"bytes");
    let file = vfs.open(&path("f"), OpenMode::Read).unwrap();
    assert!(file.read_at(0, &mut [0u8; 5]).is_err());
    assert!(vfs.map_readonly(&path("f")).is_err());
    assert_eq!(vfs.fault_counts()[&FaultKind::ReadEio], 2);
    assert_eq!(file.len().unwrap(), 5, "only reads and maps fail");
}

#[test]
fn media_corruption_changes_one_sector_of_one_durable_file_and_names_it() {
    for sector_bytes in [512u64, 4096] {
        for crash_seed in 0..30 {
            let vfs = disk_with(config(sector_bytes, |c| {
                c.p_media_corruption = 1.0;
                c.crash_mode = CrashMode::Reorder;
            }));
            let files = [("a", pattern(1, 10_000)), ("b", pattern(2, 700)), ("empty", Vec::new())];
            for (name, bytes) in &files {
                create_durable(&vfs, name, bytes);
            }
            let outcome = vfs.power_loss(crash_seed);
            assert_eq!(outcome.media_corrupted.len(), 1);
            let mut changed = Vec::new();
            for (name, before) in &files {
                let after = contents(&vfs, name).unwrap();
                assert_eq!(after.len(), before.len());
                let diffs: Vec<usize> = (0..after.len()).filter(|&i| after[i] != before[i]).collect();
                if let (Some(first), Some(last)) = (diffs.first(), diffs.last()) {
                    assert_eq!(*first as u64 / sector_bytes, *last as u64 / sector_bytes, "one sector");
                    changed.push(path(name).to_string_lossy().into_owned());
                }
            }
            assert_eq!(changed, outcome.media_corrupted, "seed {crash_seed}");
            assert_eq!(vfs.fault_counts()[&FaultKind::MediaCorruption], 1);
        }
    }
}

#[test]
fn disabled_faults_inject_nothing() {
    let vfs = disk_with(config(512, |c| {
        c.p_write_eio = 1.0;
        c.p_fsync_eio = 1.0;
        c.p_read_eio = 1.0;
        c.p_bitflip = 1.0;
        c.capacity_bytes = 0;
    }));
    vfs.set_faults_enabled(false);
    create_durable(&vfs, "f", b"fine");
    assert_eq!(contents(&vfs, "f").unwrap(), b"fine");
    assert!(vfs.fault_counts().is_empty());
    assert!(!vfs.faults_injected_this_op());
}
