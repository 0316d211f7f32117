//! `prefix`: every outcome is a prefix of the unsynced operations, the
//! boundary write cut at a sector with at most one torn sector — checked
//! against every state the rule allows, over many crash seeds.

use std::collections::BTreeSet;

use proptest::prelude::*;
use vfs::{OpenMode, Vfs};

use super::{contents, data_op, dir, disk, listed, path, pattern, resized, sector_and_ops, with_pending};
use crate::disk::data::DataOp;
use crate::disk::sectors::{inner_cuts, sector_end};
use crate::disk::{CrashMode, DiskConfig};

/// Whether `got` is one of the states `prefix` allows.
fn allowed(got: &[u8], base: &[u8], ops: &[DataOp], sector_bytes: u64, garbage: bool) -> bool {
    let mut state = base.to_vec();
    for op in ops {
        if got == state.as_slice() {
            return true;
        }
        if let DataOp::Write { offset_bytes, data } = op {
            let end_bytes = offset_bytes + data.len() as u64;
            let cuts = inner_cuts(*offset_bytes..end_bytes, sector_bytes);
            let cut_points = std::iter::once(*offset_bytes).chain((0..cuts.count).map(|i| cuts.at(i)));
            for cut_bytes in cut_points {
                let mut partial = state.clone();
                let kept = (cut_bytes - offset_bytes) as usize;
                if kept > 0 {
                    DataOp::Write { offset_bytes: *offset_bytes, data: data[..kept].to_vec() }.apply(&mut partial);
                }
                if got == partial.as_slice() {
                    return true;
                }
                let torn_end = sector_end(cut_bytes, sector_bytes).min(end_bytes) as usize;
                let cut = cut_bytes as usize;
                if garbage && cut < torn_end {
                    let len = partial.len().max(torn_end);
                    let partial = resized(&partial, len);
                    if got.len() == len && got[..cut] == partial[..cut] && got[torn_end..] == partial[torn_end..] {
                        return true;
                    }
                }
            }
        }
        op.apply(&mut state);
    }
    got == state.as_slice()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_outcome_is_a_prefix_up_to_one_torn_sector(
        (sector_bytes, ops) in sector_and_ops(|s| data_op(3 * s, 2 * s + 100)),
        garbage in any::<bool>(),
        base_len in 0..5000usize,
    ) {
        let p_torn_garbage = if garbage { 0.5 } else { 0.0 };
        let config = DiskConfig { p_torn_garbage, ..DiskConfig::fault_free(CrashMode::Prefix, sector_bytes) };
        let base = pattern(200, base_len);
        for crash_seed in 0..24 {
            let vfs = with_pending(&config, &base, &ops);
            let outcome = vfs.power_loss(crash_seed);
            let got = contents(&vfs, "f").unwrap();
            prop_assert!(
                allowed(&got, &base, &ops, sector_bytes, garbage),
                "seed {}: {} bytes is no prefix state (outcome {:?})", crash_seed, got.len(), outcome
            );
            prop_assert!(outcome.torn_sectors <= 1);
            prop_assert!(garbage || outcome.torn_sectors == 0);
            prop_assert!(outcome.lost_writes <= ops.len() as u64);
        }
    }
}

#[test]
fn the_outcomes_span_nothing_to_everything_and_tears_in_between() {
    let base = pattern(1, 1000);
    let ops = [
        DataOp::Write { offset_bytes: 1000, data: pattern(2, 3000) },
        DataOp::Write { offset_bytes: 4000, data: pattern(3, 2000) },
    ];
    let volatile = {
        let mut image = base.clone();
        ops.iter().for_each(|op| op.apply(&mut image));
        image
    };
    let config = DiskConfig::fault_free(CrashMode::Prefix, 512);
    let mut lengths = BTreeSet::new();
    for crash_seed in 0..200 {
        let vfs = with_pending(&config, &base, &ops);
        vfs.power_loss(crash_seed);
        let got = contents(&vfs, "f").unwrap();
        assert!(allowed(&got, &base, &ops, 512, false));
        lengths.insert(got.len());
    }
    assert!(lengths.contains(&base.len()), "nothing survived, for some seed");
    assert!(lengths.contains(&volatile.len()), "everything survived, for some seed");
    assert!(lengths.iter().any(|len| len % 512 == 0 && *len > 1000 && *len < 6000), "a tear at a sector");
}

#[test]
fn directory_changes_survive_as_a_prefix() {
    // create a, create b, rename a -> c, unlink b: the five prefix states.
    let states: [&[&str]; 5] = [&[], &["a"], &["a", "b"], &["b", "c"], &["c"]];
    let mut seen = BTreeSet::new();
    for crash_seed in 0..100 {
        let vfs = disk(CrashMode::Prefix, 512);
        for name in ["a", "b"] {
            let mut file = vfs.open(&path(name), OpenMode::Create).unwrap();
            file.write_at(0, name.as_bytes()).unwrap();
            file.sync().unwrap();
        }
        vfs.rename(&path("a"), &path("c")).unwrap();
        vfs.unlink(&path("b")).unwrap();
        let outcome = vfs.power_loss(crash_seed);
        let names = listed(&vfs, dir());
        let position = states.iter().position(|state| *state == names.as_slice());
        let position = position.unwrap_or_else(|| panic!("seed {crash_seed}: {names:?} is no prefix state"));
        assert_eq!(outcome.lost_dir_changes, 4 - position as u64);
        if names.contains(&"c".to_string()) {
            assert_eq!(contents(&vfs, "c").unwrap(), b"a", "the renamed file keeps its data");
        }
        seen.insert(position);
    }
    assert_eq!(seen.len(), states.len(), "every prefix occurs for some seed");
}
