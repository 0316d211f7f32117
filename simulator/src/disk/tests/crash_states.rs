//! Snapshots and enumerated crash states: recording shares what did not
//! change, the first state is the strict power loss, every cut and torn
//! sector is there with exactly the bytes the model allows, and — the
//! property that ties the enumeration to the random crash modes — every
//! disk a `prefix` power loss of one file, or a `reorder` power loss of a
//! few directory changes, can leave is among the enumerated images.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use vfs::{OpenMode, Vfs};

use super::{contents, create_durable, dir, disk, disk_holding, listed, open_write, path, pattern, sector_sizes};
use crate::disk::{CrashMode, DiskConfig, DiskImage, DiskSnapshot, SimVfs};
use crate::trace::Trace;

fn images(snapshot: &DiskSnapshot) -> Vec<DiskImage> {
    let states = snapshot.crash_states(16);
    let images: Vec<DiskImage> = states.iter().map(|state| snapshot.image(state)).collect();
    for (state, image) in states.iter().zip(&images) {
        assert_eq!(snapshot.image_hash(state), image.hash(), "a state's hash is its image's");
    }
    images
}

/// Every file of `vfs` (which must have nothing pending) as an image hash.
fn disk_hash(vfs: &SimVfs) -> u64 {
    let snapshot = vfs.snapshot();
    assert_eq!(snapshot.pending_data_ops() + snapshot.pending_dir_changes(), 0);
    snapshot.image(&snapshot.crash_states(1)[0]).hash()
}

fn file_of<'a>(image: &'a DiskImage, name: &str) -> Option<&'a [u8]> {
    image.files().into_iter().find(|(p, _)| *p == path(name)).map(|(_, bytes)| bytes)
}

#[test]
fn the_first_state_is_the_strict_power_loss() {
    let history = |vfs: &SimVfs| {
        create_durable(vfs, "a", &pattern(1, 700));
        let mut a = open_write(vfs, "a");
        a.write_at(100, &pattern(2, 50)).unwrap();
        let mut b = vfs.open(&path("b"), OpenMode::Create).unwrap();
        b.write_at(0, b"new file").unwrap();
        b.sync().unwrap();
        vfs.rename(&path("a"), &path("c")).unwrap();
    };
    let explored = disk(CrashMode::Prefix, 512);
    history(&explored);
    let snapshot = explored.snapshot();
    let strict = snapshot.image(&snapshot.crash_states(16)[0]);
    let crashed = disk(CrashMode::Strict, 512);
    history(&crashed);
    crashed.power_loss(3);
    assert_eq!(strict.hash(), disk_hash(&crashed));
    assert_eq!(file_of(&strict, "a"), Some(&pattern(1, 700)[..]));
    assert_eq!(file_of(&strict, "b"), None, "its create was never made durable");
}

#[test]
fn every_write_boundary_every_sector_cut_and_a_garbage_sector() {
    let vfs = disk(CrashMode::Prefix, 512);
    create_durable(&vfs, "f", &[7; 100]);
    let mut f = open_write(&vfs, "f");
    f.write_at(100, &pattern(3, 1000)).unwrap(); // 100..1100: cuts at 512 and 1024
    f.set_len(50).unwrap();
    let snapshot = vfs.snapshot();
    let states = snapshot.crash_states(16);
    // Strict, all surviving, then for the write: 2 clean cuts, 3 garbage
    // variants (at its start and at each cut); it whole; the set_len whole;
    // then (family 5) the file grown to 512, 1024 and 1100 with none of it.
    assert_eq!(states.len(), 2 + 2 + 3 + 1 + 1 + 3);
    let files: Vec<Vec<u8>> = states.iter().map(|s| file_of(&snapshot.image(s), "f").unwrap().to_vec()).collect();
    let mut written = vec![7; 100];
    written.extend(pattern(3, 1000));
    assert_eq!(files[0], vec![7; 100]);
    assert_eq!(files[1], written[..50].to_vec(), "everything survives: cut to 50");
    assert_eq!(files[2], written[..512].to_vec(), "cut at the first sector boundary");
    assert_eq!(files[3], written[..1024].to_vec());
    // Garbage from the write's start to its sector's end, over bytes only
    // the write covered: the durable 0..100 stay.
    assert_eq!(files[4][..100], [7; 100]);
    assert_eq!(files[4].len(), 512);
    assert!(files[4][100..512] != written[100..512]);
    assert_eq!(files[5][..512], written[..512]);
    assert_eq!(files[5].len(), 1024);
    assert_eq!(files[6][..1024], written[..1024]);
    assert_eq!(files[6].len(), 1100, "the last sector's garbage ends where the write did");
    assert_eq!(files[7], written);
    assert_eq!(files[8], files[1]);
    for (grown, len) in files[9..].iter().zip([512, 1024, 1100]) {
        let mut zeros = vec![7; 100];
        zeros.resize(len, 0);
        assert_eq!(grown, &zeros, "the length went ahead of the data: zeros past the old end");
    }
    let grown = snapshot.describe(&states[10]);
    assert!(grown.contains("is 1024 bytes long but none of the write reached it"), "{grown}");
    let torn = snapshot.describe(&states[5]);
    assert!(torn.contains("f: the first 0 of its 2 unsynced ops survive"), "{torn}");
    assert!(torn.contains("torn: 100..512 survives, 512..1024 holds garbage"), "{torn}");
}

#[test]
fn directory_subsets_are_all_taken_when_few_and_bounded_when_many() {
    let vfs = disk(CrashMode::Prefix, 512);
    for name in ["a", "b", "c"] {
        drop(vfs.open(&path(name), OpenMode::Create).unwrap());
    }
    let snapshot = vfs.snapshot();
    let states = snapshot.crash_states(2);
    assert_eq!(states.len(), 8, "all 2^3 subsets, whatever the bound, and no data to vary");
    let hashes: BTreeSet<u64> = states.iter().map(|s| snapshot.image(s).hash()).collect();
    assert_eq!(hashes.len(), 8);
    assert!(snapshot.describe(&states[1]).starts_with("3 of 3 unsynced directory changes applied"));

    for name in ["d", "e", "f"] {
        drop(vfs.open(&path(name), OpenMode::Create).unwrap());
    }
    let snapshot = vfs.snapshot();
    for (bound, expected) in [(1, 1), (16, 16), (40, 40), (64, 64), (100, 64)] {
        let states = snapshot.crash_states(bound);
        let hashes: BTreeSet<u64> = states.iter().map(|s| snapshot.image(s).hash()).collect();
        assert_eq!((states.len(), hashes.len()), (expected, expected), "bound {bound}");
    }
    let files = |state| snapshot.image(state).files().len();
    let states = snapshot.crash_states(16);
    assert_eq!((files(&states[0]), files(&states[1])), (0, 6), "none, then all");
}

#[test]
fn a_recording_shares_snapshots_while_nothing_changes() {
    let vfs = disk_holding(CrashMode::Strict, 512, "f", b"durable");
    vfs.start_recording();
    let first = vfs.io_count();
    let mut f = open_write(&vfs, "f"); // 0: an open changes nothing
    let mut buf = [0u8; 4];
    f.read_at(0, &mut buf).unwrap(); // 1: nor does a read
    f.write_at(7, b" and more").unwrap(); // 2
    f.len().unwrap(); // 3
    f.sync().unwrap(); // 4
    let recording = vfs.take_recording();
    assert_eq!(recording.io_indices(), first..first + 6);
    let at = |i: u64| recording.before_io(first + i).unwrap();
    assert!(Arc::ptr_eq(at(0), at(1)) && Arc::ptr_eq(at(1), at(2)));
    assert!(!Arc::ptr_eq(at(2), at(3)), "the write changed the disk");
    assert!(Arc::ptr_eq(at(3), at(4)));
    assert!(!Arc::ptr_eq(at(4), at(5)), "the sync changed what is durable");
    assert_eq!((at(3).pending_data_ops(), at(5).pending_data_ops()), (1, 0));
    assert!(recording.before_io(first + 6).is_none() && recording.before_io(first.wrapping_sub(1)).is_none());
}

#[test]
fn a_disk_made_from_an_image_holds_exactly_it_durably() {
    let vfs = disk_holding(CrashMode::Prefix, 512, "kept", &pattern(5, 900));
    let mut f = vfs.open(&path("new"), OpenMode::Create).unwrap();
    f.write_at(0, b"unsynced").unwrap();
    let snapshot = vfs.snapshot();
    let states = snapshot.crash_states(16);
    let all = snapshot.image(&states[3]); // every dir change, every write
    assert_eq!(file_of(&all, "new"), Some(&b"unsynced"[..]));
    let restored = SimVfs::from_image(DiskConfig::fault_free(CrashMode::Strict, 512), &all, Trace::new(false));
    assert_eq!(listed(&restored, dir()), vec!["kept".to_string(), "new".to_string()]);
    restored.power_loss(1);
    assert_eq!(contents(&restored, "kept"), Some(pattern(5, 900)));
    assert_eq!(contents(&restored, "new"), Some(b"unsynced".to_vec()));
    assert_eq!(disk_hash(&restored), all.hash());
}

/// One change to a file, for the properties.
#[derive(Clone, Debug)]
enum FileStep {
    Write { offset_bytes: u64, len: usize, seed: u8 },
    SetLen(u64),
    Sync,
}

fn file_step() -> impl Strategy<Value = FileStep> {
    prop_oneof![
        4 => (0u64..3000, 0usize..1500, any::<u8>())
            .prop_map(|(offset_bytes, len, seed)| FileStep::Write { offset_bytes, len, seed }),
        1 => (0u64..3000).prop_map(FileStep::SetLen),
        1 => Just(FileStep::Sync),
    ]
}

fn apply_file_steps(vfs: &SimVfs, steps: &[FileStep]) {
    create_durable(vfs, "f", &pattern(9, 1200));
    let mut f = open_write(vfs, "f");
    for step in steps {
        match step {
            FileStep::Write { offset_bytes, len, seed } => f.write_at(*offset_bytes, &pattern(*seed, *len)).unwrap(),
            FileStep::SetLen(len) => f.set_len(*len).unwrap(),
            FileStep::Sync => f.sync().unwrap(),
        }
    }
}

/// One change to the directory, for the properties.
#[derive(Clone, Debug)]
enum DirStep {
    Create(usize),
    Rename(usize, usize),
    Unlink(usize),
}

fn dir_step() -> impl Strategy<Value = DirStep> {
    prop_oneof![
        (0usize..4).prop_map(DirStep::Create),
        (0usize..4, 0usize..4).prop_map(|(a, b)| DirStep::Rename(a, b)),
        (0usize..4).prop_map(DirStep::Unlink),
    ]
}

fn apply_dir_steps(vfs: &SimVfs, steps: &[DirStep]) {
    let name = |i: usize| ["w", "x", "y", "z"][i];
    create_durable(vfs, "w", b"durable w");
    create_durable(vfs, "x", b"durable x");
    for step in steps {
        // A step on a missing name fails as it would on a real file
        // system and changes nothing; the list stays short either way.
        let _ = match step {
            DirStep::Create(i) => vfs.open(&path(name(*i)), OpenMode::Create).map(drop),
            DirStep::Rename(a, b) => vfs.rename(&path(name(*a)), &path(name(*b))),
            DirStep::Unlink(i) => vfs.unlink(&path(name(*i))),
        };
    }
}

/// Family 3: two files cut at once, each at every whole-operation point
/// (the combination where both keep everything is family 1's), with the
/// bytes a `prefix` power loss of each would leave; a file with many
/// pending operations is cut at a few evenly spaced points.
#[test]
fn two_files_are_cut_together_at_whole_operations() {
    let vfs = disk(CrashMode::Prefix, 512);
    create_durable(&vfs, "a", &[1; 10]);
    create_durable(&vfs, "b", &[2; 10]);
    let mut a = open_write(&vfs, "a");
    a.write_at(10, &[3; 5]).unwrap();
    a.write_at(15, &[4; 5]).unwrap();
    let mut b = open_write(&vfs, "b");
    b.write_at(10, &[5; 5]).unwrap();
    let snapshot = vfs.snapshot();
    let states = snapshot.crash_states(16);
    let two: Vec<_> = states.iter().filter(|s| s.cuts_two_files()).collect();
    // a after 1 op with b after 1; a after 2 with b after 1 is everything.
    assert_eq!(two.len(), 1);
    // After families 1 and 2, before family 5's three grown files (each
    // write grew its file).
    assert!(states.iter().position(|s| s.cuts_two_files()).unwrap() == states.len() - 4, "after families 1, 2");
    let image = snapshot.image(two[0]);
    let mut a_after_one = vec![1; 10];
    a_after_one.extend([3; 5]);
    let mut b_after_one = vec![2; 10];
    b_after_one.extend([5; 5]);
    assert_eq!(file_of(&image, "a"), Some(&a_after_one[..]));
    assert_eq!(file_of(&image, "b"), Some(&b_after_one[..]));
    let text = snapshot.describe(two[0]);
    assert!(text.contains("a: the first 1 of its 2 unsynced ops survive; b: the first 1 of its 1"), "{text}");

    // Many pending writes: a few cut points each, and a bound overall.
    for i in 0..20u64 {
        a.write_at(20 + i, &[6]).unwrap();
        b.write_at(15 + i, &[7]).unwrap();
    }
    let states = vfs.snapshot().crash_states(16);
    let two = states.iter().filter(|s| s.cuts_two_files()).count();
    assert_eq!(two, crate::disk::WHOLE_OP_CUTS * crate::disk::WHOLE_OP_CUTS - 1);
    assert!(two <= crate::disk::MAX_TWO_FILE_STATES);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever a `prefix` power loss keeps of one file (no garbage: the
    /// random mode's garbage is random bytes), the enumeration has it.
    #[test]
    fn every_prefix_crash_of_one_file_is_enumerated(
        steps in proptest::collection::vec(file_step(), 1..10),
        sector_bytes in sector_sizes(),
    ) {
        let explored = disk(CrashMode::Prefix, sector_bytes);
        apply_file_steps(&explored, &steps);
        let snapshot = explored.snapshot();
        let enumerated: BTreeSet<u64> = images(&snapshot).iter().map(DiskImage::hash).collect();
        for crash_seed in 0..24 {
            let crashed = disk(CrashMode::Prefix, sector_bytes);
            apply_file_steps(&crashed, &steps);
            crashed.power_loss(crash_seed);
            prop_assert!(enumerated.contains(&disk_hash(&crashed)), "crash seed {crash_seed}: {:?}", contents(&crashed, "f").map(|f| f.len()));
        }
    }

    /// Whatever a `reorder` power loss keeps of up to four directory
    /// changes, the enumeration has it.
    #[test]
    fn every_reorder_crash_of_a_few_directory_changes_is_enumerated(
        steps in proptest::collection::vec(dir_step(), 1..5),
    ) {
        let explored = disk(CrashMode::Reorder, 512);
        apply_dir_steps(&explored, &steps);
        let snapshot = explored.snapshot();
        prop_assume!(snapshot.pending_dir_changes() <= 4);
        let enumerated: BTreeSet<u64> = images(&snapshot).iter().map(DiskImage::hash).collect();
        for crash_seed in 0..24 {
            let crashed = disk(CrashMode::Reorder, 512);
            apply_dir_steps(&crashed, &steps);
            crashed.power_loss(crash_seed);
            prop_assert!(enumerated.contains(&disk_hash(&crashed)), "crash seed {crash_seed}");
        }
    }

    /// States are enumerated the same way every time, and each image keeps
    /// every file no state of the file varies at its durable bytes.
    #[test]
    fn the_enumeration_is_deterministic_and_varies_one_file_at_a_time(
        steps in proptest::collection::vec(file_step(), 1..8),
    ) {
        let vfs = disk_holding(CrashMode::Prefix, 512, "other", &pattern(4, 3000));
        let mut other = open_write(&vfs, "other");
        other.write_at(10, b"unsynced change to the other file").unwrap();
        apply_file_steps(&vfs, &steps);
        let snapshot = vfs.snapshot();
        let first: Vec<u64> = images(&snapshot).iter().map(DiskImage::hash).collect();
        let again: Vec<u64> = images(&vfs.snapshot()).iter().map(DiskImage::hash).collect();
        prop_assert_eq!(&first, &again);
        let durable_other = pattern(4, 3000);
        let states = snapshot.crash_states(16);
        let varied_other = states
            .iter()
            .filter(|s| !s.cuts_two_files())
            .filter(|s| file_of(&snapshot.image(s), "other") != Some(&durable_other[..]))
            .count();
        // Family 1's "all survive", then "other"'s own variants: whole and
        // one garbage sector (family 3 cuts it with "f").
        prop_assert_eq!(varied_other, 3);
    }
}
