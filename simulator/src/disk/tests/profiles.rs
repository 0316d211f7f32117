//! File-system profiles (`profile.rs`, `FILESYSTEMS.md`): each rule does
//! what its row says on the profiles that have it, and nothing on `posix`.

use std::collections::BTreeSet;

use vfs::{OpenMode, Vfs, VfsFile};

use super::{contents, create_durable, dir, disk_on, listed, path};
use crate::disk::{ArmedFault, CrashMode, DiskConfig, FsProfile, HazardHow, SimVfs};
use crate::trace::Trace;

/// Create `name` holding `bytes` and fsync it; no directory fsync.
fn create_and_fsync(vfs: &SimVfs, name: &str, bytes: &[u8]) -> Box<dyn VfsFile> {
    let mut file = vfs.open(&path(name), OpenMode::Create).unwrap();
    file.write_at(0, bytes).unwrap();
    file.sync().unwrap();
    file
}

/// Create `name`, empty, without any fsync.
fn create_only(vfs: &SimVfs, name: &str) {
    drop(vfs.open(&path(name), OpenMode::Create).unwrap());
}

#[test]
fn a_new_file_fsynced_without_a_directory_fsync_keeps_its_name_on_ext4_xfs_btrfs_not_posix() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Strict);
        drop(create_and_fsync(&vfs, "log", b"frame"));
        vfs.power_loss(1);
        let survived = contents(&vfs, "log");
        if fs.is_posix() {
            assert_eq!(survived, None, "posix: only a directory fsync makes a create durable");
        } else {
            assert_eq!(survived.as_deref(), Some(&b"frame"[..]), "{}: the fsync commits the name", fs.name);
        }
    }
}

#[test]
fn a_renamed_file_fsynced_keeps_its_new_name_on_the_journaled_and_logged_profiles() {
    for fs in [FsProfile::EXT4, FsProfile::XFS, FsProfile::BTRFS] {
        let vfs = disk_on(fs, CrashMode::Strict);
        create_durable(&vfs, "MANIFEST", b"old");
        let mut tmp = create_and_fsync(&vfs, "MANIFEST.tmp", b"new");
        vfs.rename(&path("MANIFEST.tmp"), &path("MANIFEST")).unwrap();
        tmp.sync().unwrap();
        vfs.power_loss(2);
        assert_eq!(listed(&vfs, dir()), ["MANIFEST"], "{}", fs.name);
        assert_eq!(contents(&vfs, "MANIFEST").as_deref(), Some(&b"new"[..]), "{}", fs.name);
    }
}

#[test]
fn a_journal_fsync_commits_the_earlier_changes_of_the_directory_and_a_log_tree_only_its_own() {
    for (fs, expected) in
        [(FsProfile::EXT4, vec!["a", "b"]), (FsProfile::XFS, vec!["a", "b"]), (FsProfile::BTRFS, vec!["b"])]
    {
        let vfs = disk_on(fs, CrashMode::Strict);
        create_only(&vfs, "a");
        let file = create_and_fsync(&vfs, "b", b"data");
        create_only(&vfs, "c");
        drop(file);
        vfs.power_loss(3);
        assert_eq!(listed(&vfs, dir()), expected, "{}: c came after and stays pending", fs.name);
    }
}

#[test]
fn on_btrfs_a_conflicting_earlier_change_leaves_the_names_pending() {
    let vfs = disk_on(FsProfile::BTRFS, CrashMode::Strict);
    create_durable(&vfs, "a", b"A");
    create_only(&vfs, "b");
    let mut a = vfs.open(&path("a"), OpenMode::Write).unwrap();
    vfs.rename(&path("a"), &path("b")).unwrap();
    a.sync().unwrap();
    vfs.power_loss(4);
    assert_eq!(listed(&vfs, dir()), ["a"], "the create of b came first: their order matters, nothing is committed");
}

#[test]
fn a_reorder_crash_keeps_a_prefix_of_directory_changes_on_ext4_and_any_subset_on_posix() {
    let names = ["a", "b", "c", "d", "e", "f"];
    let mut posix_out_of_order = false;
    for seed in 0..64 {
        for fs in [FsProfile::POSIX, FsProfile::EXT4, FsProfile::XFS] {
            let vfs = disk_on(fs, CrashMode::Reorder);
            for name in names {
                create_only(&vfs, name);
            }
            vfs.power_loss(seed);
            let kept = listed(&vfs, dir());
            let prefix = kept.iter().zip(names).all(|(kept, name)| kept == name);
            if fs.is_posix() {
                posix_out_of_order |= !prefix;
            } else {
                assert!(prefix, "{}: seed {seed} kept {kept:?}, not a prefix", fs.name);
            }
        }
    }
    assert!(posix_out_of_order, "posix's reorder mode keeps any subset");
}

/// FILESYSTEMS.md's `size_ahead_of_data` row (Known discrepancies 8): a
/// random `reorder` crash may keep an append's length over sectors that
/// kept their old bytes (zeros) on posix and ext4, never on XFS or btrfs,
/// whose on-disk size moves when the growing write completes.
#[test]
fn a_reorder_crash_keeps_a_length_ahead_of_its_data_only_where_the_profile_allows() {
    for fs in FsProfile::ALL {
        let mut ahead = 0;
        let mut grown = 0;
        for seed in 0..200 {
            let vfs = disk_on(fs, CrashMode::Reorder);
            let mut log = vfs.open(&path("log"), OpenMode::Create).unwrap();
            vfs.sync_dir(dir()).unwrap();
            log.write_at(0, &[7; 512]).unwrap();
            log.sync().unwrap();
            // Three sectors appended, never fsynced.
            log.write_at(512, &[9; 1536]).unwrap();
            drop(log);
            vfs.power_loss(seed);
            let kept = contents(&vfs, "log").expect("a durable create");
            assert_eq!(&kept[..512], &[7; 512][..], "{}: seed {seed}: the fsynced sector", fs.name);
            if kept.len() > 512 {
                grown += 1;
                ahead += u32::from(kept[512..].iter().any(|&byte| byte != 9));
            }
        }
        assert!(grown > 0, "{}: some crash keeps the grown length", fs.name);
        if fs.size_ahead_of_data {
            assert!(ahead > 0, "{}: some grown length is ahead of its data ({grown} grown)", fs.name);
        } else {
            assert_eq!(ahead, 0, "{}: {ahead} of {grown} grown lengths ahead of their data", fs.name);
        }
    }
}

/// FILESYSTEMS.md's Known discrepancies 11: a file cut to nothing and
/// grown back (a TRUNCATE-mode journal, far soak seed 52748890), the power
/// loss keeping the grown length. On posix a regrown sector may show its
/// bytes from before the cut; on ext4, XFS and btrfs the freed block,
/// allocated again, holds the new bytes once the length that covers it is
/// kept, never the old ones.
#[test]
fn a_block_freed_by_a_kept_cut_and_grown_back_is_never_stale_but_on_posix() {
    for fs in FsProfile::ALL {
        let (mut stale, mut regrown) = (0, 0);
        for seed in 0..200 {
            let vfs = disk_on(fs, CrashMode::Reorder);
            let mut journal = vfs.open(&path("journal"), OpenMode::Create).unwrap();
            vfs.sync_dir(dir()).unwrap();
            journal.write_at(0, &[7; 1536]).unwrap();
            journal.sync().unwrap();
            journal.set_len(0).unwrap();
            journal.write_at(0, &[9; 1024]).unwrap();
            drop(journal);
            vfs.power_loss(seed);
            let kept = contents(&vfs, "journal").expect("a durable create");
            if kept.len() == 1024 {
                regrown += 1;
                stale += u32::from(kept.contains(&7));
            }
        }
        assert!(regrown > 0, "{}: some crash keeps the regrown length", fs.name);
        if fs.freed_blocks_stale {
            assert!(stale > 0, "{}: some regrown sector shows its old bytes ({regrown} regrown)", fs.name);
        } else {
            assert_eq!(stale, 0, "{}: {stale} of {regrown} regrown files show bytes from before the cut", fs.name);
        }
    }
}

#[test]
fn exploration_enumerates_only_prefixes_of_directory_changes_on_ext4() {
    for fs in [FsProfile::POSIX, FsProfile::EXT4] {
        let vfs = disk_on(fs, CrashMode::Strict);
        for name in ["a", "b", "c"] {
            create_only(&vfs, name);
        }
        let snapshot = vfs.snapshot();
        let kept: BTreeSet<Vec<String>> = snapshot
            .crash_states(16)
            .iter()
            .map(|state| {
                let image = snapshot.image(state);
                image.files().into_iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect()
            })
            .collect();
        let prefixes: BTreeSet<Vec<String>> =
            (0..=3).map(|n| ["a", "b", "c"][..n].iter().map(|s| s.to_string()).collect()).collect();
        if fs.is_posix() {
            assert_eq!(kept.len(), 8, "posix: every subset of three changes");
        } else {
            assert_eq!(kept, prefixes, "ext4: a journal replays a prefix");
        }
    }
}

/// A disk on `fs` where every metadata operation fails while faults are
/// on, whose directory fsync just failed so (a drawn fault, as the random
/// mode draws them), with `f` durably holding "x" and open, "y" written
/// over it since. Faults are on when it returns.
fn failed_sync_dir(fs: FsProfile) -> (SimVfs, Box<dyn VfsFile>) {
    let vfs = SimVfs::new(
        DiskConfig { fs, p_meta_eio: 1.0, ..DiskConfig::fault_free(CrashMode::Strict, 512) },
        Trace::new(false),
    );
    vfs.set_faults_enabled(false);
    vfs.create_dir_all(dir()).unwrap();
    create_durable(&vfs, "f", b"x");
    let mut file = vfs.open(&path("f"), OpenMode::Write).unwrap();
    file.write_at(0, b"y").unwrap();
    vfs.set_faults_enabled(true);
    vfs.begin_op(11);
    assert!(vfs.sync_dir(dir()).is_err(), "p_meta_eio 1 fails the directory fsync");
    (vfs, file)
}

/// `f`'s bytes as a read sees them, looked at with faults off.
fn contents_fault_free(vfs: &SimVfs) -> Option<Vec<u8>> {
    vfs.set_faults_enabled(false);
    let bytes = contents(vfs, "f");
    vfs.set_faults_enabled(true);
    bytes
}

#[test]
fn after_a_failed_directory_fsync_ext4_xfs_and_btrfs_fail_every_later_fsync_until_a_remount() {
    for fs in [FsProfile::EXT4, FsProfile::XFS, FsProfile::BTRFS] {
        let (vfs, mut file) = failed_sync_dir(fs);
        assert!(file.sync().is_err(), "{}: the file system shut down", fs.name);
        assert!(vfs.is_shut_down());
        let again = vfs.sync_dir(dir()).unwrap_err().to_string();
        assert!(again.contains("shut down"), "{}: directory fsyncs fail as shut down: {again}", fs.name);
        assert_eq!(contents_fault_free(&vfs).as_deref(), Some(&b"y"[..]), "{}: dirty pages kept", fs.name);
        vfs.set_faults_enabled(false);
        let mut unsynced = vfs.open(&path("g"), OpenMode::Create).unwrap();
        unsynced.write_at(0, b"page cache only").unwrap();
        vfs.set_faults_enabled(true);
        drop((file, unsynced));
        // No process restart brings it back: the restart is a remount,
        // which keeps what a power loss keeps (not the page cache's `g`).
        assert!(vfs.process_restart().is_some(), "{}: the restart is a remount", fs.name);
        assert!(!vfs.is_shut_down());
        vfs.set_faults_enabled(false);
        assert_eq!(contents(&vfs, "g"), None, "{}: the unsynced new file is gone", fs.name);
        assert_eq!(contents(&vfs, "f").as_deref(), Some(&b"x"[..]), "{}: the unsynced `y` is gone", fs.name);
        let mut file = vfs.open(&path("f"), OpenMode::Write).unwrap();
        vfs.set_faults_enabled(true);
        file.sync().expect("the remount brought the file system back");
    }
    let (_vfs, mut file) = failed_sync_dir(FsProfile::POSIX);
    file.sync().expect("posix: a failed directory fsync says nothing of later fsyncs");
}

#[test]
fn a_shut_down_file_system_is_up_again_after_power_loss_and_fails_nothing_with_faults_off() {
    let (vfs, mut file) = failed_sync_dir(FsProfile::EXT4);
    vfs.set_faults_enabled(false);
    file.sync().expect("with faults off no fault strikes, a shut-down file system's neither");
    vfs.set_faults_enabled(true);
    assert!(file.sync().is_err());
    drop(file);
    vfs.power_loss(5);
    vfs.set_faults_enabled(false);
    let mut file = vfs.open(&path("f"), OpenMode::Write).unwrap();
    file.write_at(0, b"z").unwrap();
    vfs.set_faults_enabled(true);
    file.sync().unwrap();
    assert_eq!(contents_fault_free(&vfs).as_deref(), Some(&b"z"[..]));
}

#[test]
fn exploration_s_armed_fault_shuts_nothing_down() {
    let vfs = disk_on(FsProfile::EXT4, CrashMode::Strict);
    create_durable(&vfs, "f", b"x");
    let mut file = vfs.open(&path("f"), OpenMode::Write).unwrap();
    vfs.arm_fault_at(vfs.io_count(), ArmedFault::Eio);
    assert!(vfs.sync_dir(dir()).is_err(), "the armed fault fails the directory fsync");
    file.write_at(0, b"y").unwrap();
    file.sync().expect("the fault spent, the next fsync succeeds, as exploration's checks hold it to");
}

#[test]
fn a_file_fsynced_under_a_new_name_is_a_hazard_on_posix_only() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Strict);
        vfs.begin_op(7);
        drop(create_and_fsync(&vfs, "seg", b"rows"));
        let hazards = vfs.end_op_hazards();
        if fs.is_posix() {
            assert_eq!(hazards.len(), 1, "{hazards:?}");
            assert_eq!(hazards[0].how, HazardHow::Acknowledged);
        } else {
            assert!(hazards.is_empty(), "{}: the fsync made the name durable: {hazards:?}", fs.name);
        }
    }
}

/// SQLite's VACUUM in DELETE mode (SQLITE.md, finding 4): the journal's
/// unlink, then the database cut shorter, neither synced. `db` holds 8
/// bytes durably, `journal` exists durably; what each crash left: whether
/// the journal is still there and the database's length.
fn unlink_then_cut(fs: FsProfile, mode: CrashMode, crash_seed: u64, fsync_after: bool) -> (bool, usize) {
    let vfs = disk_on(fs, mode);
    create_durable(&vfs, "db", b"12345678");
    create_durable(&vfs, "journal", b"hot");
    vfs.unlink(&path("journal")).unwrap();
    let mut db = vfs.open(&path("db"), OpenMode::Write).unwrap();
    db.set_len(6).unwrap();
    if fsync_after {
        db.sync().unwrap();
    }
    drop(db);
    vfs.power_loss(crash_seed);
    (contents(&vfs, "journal").is_some(), contents(&vfs, "db").expect("the database survives").len())
}

#[test]
fn on_ext4_and_xfs_a_cut_survives_a_crash_only_with_the_directory_changes_made_before_it() {
    for mode in [CrashMode::Prefix, CrashMode::Reorder] {
        let mut posix_cut_outlives_unlink = false;
        for seed in 0..64 {
            for fs in FsProfile::ALL {
                let (journal_back, db_bytes) = unlink_then_cut(fs, mode, seed, false);
                let cut_outlives_unlink = journal_back && db_bytes == 6;
                if fs.set_len_journaled {
                    assert!(!cut_outlives_unlink, "{} {mode:?} seed {seed}: the cut outlived the unlink", fs.name);
                } else if fs.is_posix() {
                    posix_cut_outlives_unlink |= cut_outlives_unlink;
                }
            }
        }
        assert!(posix_cut_outlives_unlink, "{mode:?}: posix keeps lengths and names apart");
    }
    const { assert!(FsProfile::EXT4.set_len_journaled && FsProfile::XFS.set_len_journaled) };
}

#[test]
fn on_ext4_and_xfs_an_fsync_that_makes_a_cut_durable_commits_the_directory_changes_before_it() {
    for fs in FsProfile::ALL {
        for seed in 0..16 {
            let (journal_back, db_bytes) = unlink_then_cut(fs, CrashMode::Reorder, seed, true);
            assert_eq!(db_bytes, 6, "{}: the fsync made the cut durable", fs.name);
            if fs.set_len_journaled {
                assert!(!journal_back, "{} seed {seed}: the journal commit took the unlink along", fs.name);
            }
        }
    }
    // And posix leaves the unlink to a directory fsync.
    assert!((0..16).any(|seed| unlink_then_cut(FsProfile::POSIX, CrashMode::Strict, seed, true).0));
}

#[test]
fn exploration_leaves_out_a_cut_that_outlives_an_earlier_lost_unlink_on_ext4() {
    for fs in [FsProfile::POSIX, FsProfile::EXT4] {
        let vfs = disk_on(fs, CrashMode::Strict);
        create_durable(&vfs, "db", b"12345678");
        create_durable(&vfs, "journal", b"hot");
        vfs.unlink(&path("journal")).unwrap();
        vfs.open(&path("db"), OpenMode::Write).unwrap().set_len(6).unwrap();
        let snapshot = vfs.snapshot();
        // A state the profile rules out stays in the list, marked not
        // explored (`CrashState::explored`).
        let outcomes: BTreeSet<(bool, usize)> = snapshot
            .crash_states(16)
            .iter()
            .filter(|state| state.explored(true))
            .map(|state| {
                let image = snapshot.image(state);
                let files = image.files();
                let named = |name: &str| files.iter().find(|(p, _)| p.file_name().unwrap() == name);
                (named("journal").is_some(), named("db").expect("the database").1.len())
            })
            .collect();
        let expected: BTreeSet<(bool, usize)> = match fs.is_posix() {
            true => [(true, 8), (true, 6), (false, 8), (false, 6)].into(),
            false => [(true, 8), (false, 8), (false, 6)].into(),
        };
        assert_eq!(outcomes, expected, "{}", fs.name);
    }
}
