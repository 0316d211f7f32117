//! `reorder`: the length is old or new, every sector is old, new or (when
//! allowed) garbage on bytes that were written, and every directory change
//! is whole — for both sector sizes, over many crash seeds.

use std::collections::BTreeSet;

use proptest::prelude::*;
use vfs::{OpenMode, Vfs};

use super::{
    contents, data_op, dir, disk_holding, listed, open_write, path, pattern, resized, sector_and_ops, with_pending,
};
use crate::disk::data::DataOp;
use crate::disk::{CrashMode, DiskConfig};

/// The volatile image after `changes`, and which of its bytes (up to the
/// largest length the file reached) any change touched. Worked out here,
/// not with `DataOp`'s own methods, so the oracle is not the code under
/// test.
fn replay(base: &[u8], changes: &[DataOp]) -> (Vec<u8>, Vec<bool>) {
    let mut image = base.to_vec();
    let mut touched = vec![false; base.len()];
    for change in changes {
        let len_before = image.len();
        let range = match change {
            DataOp::Write { offset_bytes, data } => {
                let start = *offset_bytes as usize;
                let end = start + data.len();
                image.resize(image.len().max(end), 0);
                image[start..end].copy_from_slice(data);
                start.min(len_before)..end
            }
            DataOp::SetLen { len_bytes, .. } => {
                image.resize(*len_bytes as usize, 0);
                len_before.min(image.len())..len_before.max(image.len())
            }
        };
        if touched.len() < range.end {
            touched.resize(range.end, false);
        }
        touched[range].fill(true);
    }
    (image, touched)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_sector_is_old_new_or_garbage_on_written_bytes(
        (sector_bytes, changes) in sector_and_ops(|s| data_op(4 * s, 2 * s)),
        garbage in any::<bool>(),
        base_len in 0..10_000usize,
    ) {
        let p_torn_garbage = if garbage { 0.3 } else { 0.0 };
        let config = DiskConfig { p_torn_garbage, ..DiskConfig::fault_free(CrashMode::Reorder, sector_bytes) };
        let base = pattern(99, base_len);
        let (volatile, touched) = replay(&base, &changes);
        let sector = sector_bytes as usize;
        for crash_seed in 0..24 {
            let vfs = with_pending(&config, &base, &changes);
            let outcome = vfs.power_loss(crash_seed);
            let got = contents(&vfs, "f").unwrap();
            prop_assert!(got.len() == base.len() || got.len() == volatile.len(), "length {}", got.len());
            let old = resized(&base, got.len());
            // New bytes up to the volatile end; past it (the old length
            // survived a cut that did not) the old bytes stay, as the
            // blocks the cut would have freed do on a real file system.
            let mut new = resized(&volatile, got.len().min(volatile.len()));
            new.extend_from_slice(&old[new.len()..]);
            let mut garbage_sectors = 0u64;
            for start in (0..got.len()).step_by(sector) {
                let end = (start + sector).min(got.len());
                if got[start..end] == old[start..end] || got[start..end] == new[start..end] {
                    continue;
                }
                prop_assert!(garbage, "seed {}: sector at {} is neither old nor new", crash_seed, start);
                garbage_sectors += 1;
                for i in start..end {
                    prop_assert!(
                        touched.get(i).copied().unwrap_or(false) || got[i] == old[i],
                        "seed {}: garbage on untouched durable byte {}", crash_seed, i
                    );
                }
            }
            prop_assert!(garbage_sectors <= outcome.torn_sectors);
            prop_assert!(outcome.lost_writes <= changes.len() as u64);
        }
    }
}

#[test]
fn sectors_survive_independently() {
    // Eight sectors rewritten in one pending write: over seeds, some
    // outcomes mix old and new sectors — the write is not kept as a unit.
    for sector_bytes in [512u64, 4096] {
        let len = 8 * sector_bytes as usize;
        let base = pattern(1, len);
        let new = pattern(2, len);
        let mut mixed = 0;
        for crash_seed in 0..20 {
            let vfs = disk_holding(CrashMode::Reorder, sector_bytes, "f", &base);
            open_write(&vfs, "f").write_at(0, &new).unwrap();
            vfs.power_loss(crash_seed);
            let got = contents(&vfs, "f").unwrap();
            let new_sectors = got.chunks(sector_bytes as usize).zip(new.chunks(sector_bytes as usize));
            let count = new_sectors.filter(|(a, b)| a == b).count();
            if count > 0 && count < 8 {
                mixed += 1;
            }
        }
        assert!(mixed > 10, "sector {sector_bytes}: only {mixed} of 20 crashes mixed old and new sectors");
    }
}

#[test]
fn a_rename_is_old_or_new_never_both_or_neither() {
    let mut seen = BTreeSet::new();
    for crash_seed in 0..64 {
        let vfs = disk_holding(CrashMode::Reorder, 512, "a", b"payload");
        vfs.rename(&path("a"), &path("b")).unwrap();
        vfs.power_loss(crash_seed);
        let names = listed(&vfs, dir());
        assert!(names == ["a"] || names == ["b"], "seed {crash_seed}: {names:?}");
        assert_eq!(contents(&vfs, &names[0]).unwrap(), b"payload");
        seen.insert(names);
    }
    assert_eq!(seen.len(), 2, "both outcomes occur");
}

#[test]
fn a_replacing_rename_never_loses_the_target() {
    // The rewrite pattern: create temp, fsync it, rename over the live
    // file. Whatever subset of (create, rename) survives, the live name
    // holds the old or the new file, and a rename never applies without
    // the create it depends on.
    let mut seen = BTreeSet::new();
    for crash_seed in 0..64 {
        let vfs = disk_holding(CrashMode::Reorder, 4096, "live", b"old");
        let mut temp = vfs.open(&path("temp"), OpenMode::Create).unwrap();
        temp.write_at(0, b"new").unwrap();
        temp.sync().unwrap();
        vfs.rename(&path("temp"), &path("live")).unwrap();
        vfs.power_loss(crash_seed);
        let live = contents(&vfs, "live").expect("the live name always exists");
        let temp = contents(&vfs, "temp");
        assert!(live == b"old" || (live == b"new" && temp.is_none()), "seed {crash_seed}: {live:?} {temp:?}");
        seen.insert((live, temp));
    }
    assert_eq!(seen.len(), 3, "old, old + temp, and new all occur: {seen:?}");
}
