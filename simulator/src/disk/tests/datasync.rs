//! fdatasync, ext4's `auto_da_alloc` and the complete enumeration
//! (`profile.rs`, `crash_product.rs`, FILESYSTEMS.md): an fdatasync makes
//! data and length durable everywhere and of the file's names what its
//! profile's rule says, never more than its fsync; a replacing rename
//! carries its file's delayed data on ext4 and nowhere else; and where the
//! model's states are few, the enumeration holds every one of them.

use std::collections::BTreeSet;

use vfs::{OpenMode, Vfs};

use super::{contents, create_durable, dir, disk_on, listed, path};
use crate::disk::{CrashMode, DiskSnapshot, FsProfile, SimVfs, StateOptions};

/// The program: cfg.tmp written and fdatasynced, renamed over
/// cfg, fdatasynced again; then the power goes, keeping nothing else.
fn replace_with_fdatasync(fs: FsProfile) -> SimVfs {
    let vfs = disk_on(fs, CrashMode::Strict);
    create_durable(&vfs, "cfg", b"old");
    let mut tmp = vfs.open(&path("cfg.tmp"), OpenMode::Create).unwrap();
    tmp.write_at(0, b"new").unwrap();
    tmp.sync_data().unwrap();
    vfs.rename(&path("cfg.tmp"), &path("cfg")).unwrap();
    tmp.sync_data().unwrap();
    drop(tmp);
    vfs.power_loss(1);
    vfs
}

#[test]
fn fdatasync_after_a_rename_keeps_the_rename_on_xfs_and_btrfs_not_on_ext4_or_posix() {
    for fs in FsProfile::ALL {
        let vfs = replace_with_fdatasync(fs);
        let names = listed(&vfs, dir());
        match fs.name {
            // ext4: the create went with the first fdatasync (the inode's
            // datasync transaction), the rename with neither.
            "ext4" | "ext4-noauto" => assert_eq!(names, ["cfg", "cfg.tmp"], "{}", fs.name),
            "xfs" | "btrfs" => {
                assert_eq!(names, ["cfg"], "{}", fs.name);
                assert_eq!(contents(&vfs, "cfg").as_deref(), Some(&b"new"[..]), "{}", fs.name);
            }
            _ => assert_eq!(names, ["cfg"], "posix: neither name is durable, the old cfg is"),
        }
        if fs.name != "xfs" && fs.name != "btrfs" {
            assert_eq!(contents(&vfs, "cfg").as_deref(), Some(&b"old"[..]), "{}", fs.name);
        }
    }
}

#[test]
fn an_fdatasync_makes_the_data_and_length_durable_on_every_profile() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Strict);
        create_durable(&vfs, "log", b"abcdef");
        let mut log = vfs.open(&path("log"), OpenMode::Write).unwrap();
        log.write_at(6, b"gh").unwrap();
        log.set_len(7).unwrap();
        log.sync_data().unwrap();
        drop(log);
        vfs.power_loss(2);
        assert_eq!(contents(&vfs, "log").as_deref(), Some(&b"abcdefg"[..]), "{}", fs.name);
    }
}

/// cfg.tmp written (no fsync) and renamed over cfg: the crash states a
/// snapshot after the rename allows, as (names, cfg's bytes).
fn states_after_replace(fs: FsProfile, writes: &[(u64, &[u8])]) -> BTreeSet<(Vec<String>, Option<Vec<u8>>)> {
    let vfs = disk_on(fs, CrashMode::Strict);
    create_durable(&vfs, "cfg", b"old");
    let mut tmp = vfs.open(&path("cfg.tmp"), OpenMode::Create).unwrap();
    for (offset, bytes) in writes {
        tmp.write_at(*offset, bytes).unwrap();
    }
    vfs.rename(&path("cfg.tmp"), &path("cfg")).unwrap();
    let snapshot = vfs.snapshot();
    let options = StateOptions { complete_up_to: u64::MAX, garbage: false, ..StateOptions::families(16) };
    let states = snapshot.crash_states_for(&options);
    states
        .iter()
        .filter(|state| state.explored(false))
        .map(|state| {
            let image = snapshot.image(state);
            let files = image.files();
            let names = files.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
            let cfg = files.iter().find(|(p, _)| p.ends_with("cfg")).map(|(_, bytes)| bytes.to_vec());
            (names, cfg)
        })
        .collect()
}

#[test]
fn auto_da_alloc_keeps_a_replacing_renames_data_on_ext4_only() {
    let writes: [(u64, &[u8]); 2] = [(0, b"new "), (4096, b"config")];
    let renamed_empty = (vec!["cfg".to_string()], Some(Vec::new()));
    let ext4 = states_after_replace(FsProfile::EXT4, &writes);
    assert!(!ext4.contains(&renamed_empty), "ext4: the rename carries the data: {ext4:?}");
    let renamed = |(names, cfg): &&(Vec<String>, Option<Vec<u8>>)| names == &["cfg"] && cfg.as_deref() != Some(b"old");
    assert!(ext4.iter().filter(renamed).all(|(_, cfg)| cfg.as_ref().is_some_and(|b| b.len() == 4102)), "{ext4:?}");
    for fs in [FsProfile::EXT4_NOAUTO, FsProfile::POSIX, FsProfile::XFS] {
        assert!(states_after_replace(fs, &writes).contains(&renamed_empty), "{}: the rename may come alone", fs.name);
    }
    // Two writes in one 4 KiB block: one written back between them would
    // hold the first's bytes only, so the rule claims nothing.
    let shared: [(u64, &[u8]); 2] = [(0, b"new "), (4, b"config")];
    assert!(states_after_replace(FsProfile::EXT4, &shared).contains(&renamed_empty));
}

#[test]
fn auto_da_alloc_holds_in_every_random_crash_of_ext4() {
    for mode in [CrashMode::Prefix, CrashMode::Reorder] {
        let mut renamed = 0;
        for seed in 0..200 {
            let vfs = disk_on(FsProfile::EXT4, mode);
            create_durable(&vfs, "cfg", b"old");
            let mut tmp = vfs.open(&path("cfg.tmp"), OpenMode::Create).unwrap();
            tmp.write_at(0, b"new config").unwrap();
            drop(tmp);
            vfs.rename(&path("cfg.tmp"), &path("cfg")).unwrap();
            vfs.power_loss(seed);
            let cfg = contents(&vfs, "cfg");
            if listed(&vfs, dir()) == ["cfg"] && cfg.as_deref() != Some(&b"old"[..]) {
                renamed += 1;
                assert_eq!(cfg.as_deref(), Some(&b"new config"[..]), "{mode:?} seed {seed}");
            }
        }
        assert!(renamed > 0, "{mode:?}: some crash kept the rename");
    }
}

#[test]
fn an_fsync_after_the_rename_leaves_the_rule_nothing_to_carry() {
    let vfs = disk_on(FsProfile::EXT4, CrashMode::Strict);
    create_durable(&vfs, "cfg", b"old");
    let mut tmp = vfs.open(&path("cfg.tmp"), OpenMode::Create).unwrap();
    tmp.write_at(0, b"new").unwrap();
    vfs.rename(&path("cfg.tmp"), &path("cfg")).unwrap();
    tmp.sync().unwrap();
    tmp.write_at(3, b" and more").unwrap();
    let snapshot = vfs.snapshot();
    let states = snapshot.crash_states_for(&StateOptions { complete_up_to: u64::MAX, ..StateOptions::families(16) });
    assert!(states.iter().all(|state| state.is_allowed()), "the carried ops were synced: nothing is ruled out");
}

/// Brute force: every (directory subset, each file's cut) the disk's
/// crash modes can leave, as images' hashes, for a small snapshot.
fn every_image(snapshot: &DiskSnapshot) -> BTreeSet<u64> {
    let options = StateOptions { complete_up_to: u64::MAX, garbage: false, ..StateOptions::families(1) };
    snapshot.crash_states_for(&options).iter().filter(|s| s.explored(false)).map(|s| snapshot.image(s).hash()).collect()
}

#[test]
fn a_complete_enumeration_holds_every_state_and_the_count_matches() {
    let vfs = disk_on(FsProfile::POSIX, CrashMode::Strict);
    create_durable(&vfs, "a", b"0123");
    let mut a = vfs.open(&path("a"), OpenMode::Write).unwrap();
    a.write_at(0, &[7u8; 1024]).unwrap();
    let mut b = vfs.open(&path("b"), OpenMode::Create).unwrap();
    b.write_at(0, &[9u8; 1024]).unwrap();
    vfs.rename(&path("b"), &path("c")).unwrap();
    let snapshot = vfs.snapshot();
    // 2 changes: 4 subsets; a: none, torn at 512, whole, grown to 512 or
    // 1024 with none of it (5 cuts); b likewise: 4 * 5 * 5.
    let complete = StateOptions { complete_up_to: 100, garbage: false, ..StateOptions::families(16) };
    let coverage = snapshot.coverage(&complete);
    assert_eq!((coverage.allowed, coverage.exact, coverage.complete), (100, true, true));
    let states = snapshot.crash_states_for(&complete);
    assert_eq!(states.iter().filter(|s| s.explored(false)).count(), 100, "each point of the product once");
    let sampled = StateOptions { complete_up_to: 99, ..complete };
    assert!(!snapshot.coverage(&sampled).complete);
    let from_families: BTreeSet<u64> = snapshot
        .crash_states_for(&sampled)
        .iter()
        .filter(|s| s.explored(false))
        .map(|s| snapshot.image(s).hash())
        .collect();
    let all = every_image(&snapshot);
    assert!(from_families.is_subset(&all));
    assert!(from_families.len() < all.len(), "the families are a sample: a torn a with b's rename is not among them");
    drop((a, b));
}

#[test]
fn a_replacing_rename_made_durable_by_another_files_fsync_carries_its_data_on_ext4() {
    for fs in [FsProfile::EXT4, FsProfile::EXT4_NOAUTO] {
        let vfs = disk_on(fs, CrashMode::Strict);
        create_durable(&vfs, "cfg", b"old");
        let mut tmp = vfs.open(&path("cfg.tmp"), OpenMode::Create).unwrap();
        tmp.write_at(0, b"new config").unwrap();
        drop(tmp);
        vfs.rename(&path("cfg.tmp"), &path("cfg")).unwrap();
        let mut marker = vfs.open(&path("marker"), OpenMode::Create).unwrap();
        marker.sync().unwrap();
        drop(marker);
        vfs.power_loss(3);
        assert_eq!(listed(&vfs, dir()), ["cfg", "marker"], "{}: the journal prefix holds the rename", fs.name);
        let expected: &[u8] = if fs.auto_da_alloc { b"new config" } else { b"" };
        assert_eq!(contents(&vfs, "cfg").as_deref(), Some(expected), "{}", fs.name);
    }
}

#[test]
fn only_posix_and_ext4_grow_a_file_ahead_of_its_data() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Strict);
        create_durable(&vfs, "log", b"abc");
        let mut log = vfs.open(&path("log"), OpenMode::Write).unwrap();
        log.write_at(3, &[9u8; 1000]).unwrap();
        let snapshot = vfs.snapshot();
        let grown_with_zeros = snapshot.crash_states_for(&StateOptions::families(16)).iter().any(|state| {
            let image = snapshot.image(state);
            let files = image.files();
            let bytes = &files.iter().find(|(p, _)| p.ends_with("log")).expect("log").1;
            bytes.len() > 3 && bytes[3..].iter().all(|b| *b == 0)
        });
        assert_eq!(grown_with_zeros, fs.size_ahead_of_data, "{}", fs.name);
        drop(log);
    }
}
