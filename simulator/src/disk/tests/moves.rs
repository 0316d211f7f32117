//! Renames across directories (`state/moves.rs`, `disk/moves.rs`): the
//! kernel's errors; a moved file or directory is named in exactly one of
//! its two parents after any crash, in every mode, under every profile,
//! in the random power loss and in every enumerated crash state; the
//! move is durable after either parent's `sync_dir`, and after the moved
//! file's fsync only where the profile's fsync rule commits its names.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use vfs::{read_whole, OpenMode, Vfs};

use super::{disk_on, durable_file, listed, path};
use crate::disk::{CrashMode, DiskConfig, FsProfile, SimVfs};
use crate::trace::Trace;

/// `/db/a` holding the file `f` and the directory `sub` (with `x`), and
/// the directory `/db/b` holding `keep`, all durable: the probe's
/// (`probes/xdir_rename.py`) initial tree.
fn two_dirs(vfs: &SimVfs) {
    vfs.create_dir_all(&path("a/sub")).unwrap();
    vfs.create_dir_all(&path("b")).unwrap();
    durable_file(vfs, &path("a/f"), b"F");
    durable_file(vfs, &path("a/sub/x"), b"X");
    durable_file(vfs, &path("b/keep"), b"K");
}

/// Where the file `f` and the directory `sub` (with its `x`) are: 'a',
/// 'b', or a failed assertion naming what is wrong (both, neither, half).
fn whereabouts(vfs: &SimVfs, what: &str) -> (char, char) {
    let named = |parent: &str| listed(vfs, &path(parent)).contains(&"f".to_string());
    let file = match (named("a"), named("b")) {
        (true, false) => 'a',
        (false, true) => 'b',
        both => panic!("{what}: the file named in (a, b) = {both:?}"),
    };
    let dir_in = |parent: &str| vfs.list_subdirs(&path(parent)).unwrap().iter().any(|name| name == "sub");
    let dir = match (dir_in("a"), dir_in("b")) {
        (true, false) => 'a',
        (false, true) => 'b',
        both => panic!("{what}: the directory named in (a, b) = {both:?}"),
    };
    let file_bytes = read_whole(vfs, &path(&format!("{file}/f"))).unwrap();
    let x = read_whole(vfs, &path(&format!("{dir}/sub/x"))).unwrap();
    assert_eq!((file_bytes.as_slice(), x.as_slice()), (&b"F"[..], &b"X"[..]), "{what}: moved whole");
    (file, dir)
}

fn move_both(vfs: &SimVfs) {
    vfs.rename(&path("a/f"), &path("b/f")).unwrap();
    vfs.rename(&path("a/sub"), &path("b/sub")).unwrap();
}

#[test]
fn a_move_across_directories_answers_the_kernels_errors() {
    let vfs = disk_on(FsProfile::POSIX, CrashMode::Strict);
    two_dirs(&vfs);
    vfs.create_dir_all(&path("b/full")).unwrap();
    durable_file(&vfs, &path("b/full/y"), b"Y");
    vfs.create_dir_all(&path("b/empty")).unwrap();
    let kind = |result: std::io::Result<()>| result.unwrap_err().kind();
    assert_eq!(kind(vfs.rename(&path("a"), &path("a/sub/deeper"))), ErrorKind::InvalidInput, "into its own subtree");
    assert_eq!(kind(vfs.rename(&path("a/sub"), &path("b/full"))), ErrorKind::DirectoryNotEmpty);
    assert_eq!(kind(vfs.rename(&path("a/sub"), &path("b/keep"))), ErrorKind::NotADirectory, "onto a file");
    assert_eq!(kind(vfs.rename(&path("a/f"), &path("b/empty"))), ErrorKind::IsADirectory, "a file onto a directory");
    assert_eq!(kind(vfs.rename(&path("a/f"), &path("nowhere/f"))), ErrorKind::NotFound, "no such parent");
    assert_eq!(kind(vfs.rename(&path("a/sub"), &path("nowhere/sub"))), ErrorKind::NotFound);
    assert_eq!(kind(vfs.rename(&path("b/sub"), &path("a/sub"))), ErrorKind::NotFound, "no such source");
    assert_eq!(whereabouts(&vfs, "after the errors"), ('a', 'a'), "nothing moved");
    vfs.rename(&path("a/sub"), &path("b/empty")).unwrap();
    assert_eq!(read_whole(&vfs, &path("b/empty/x")).unwrap(), b"X", "the empty directory replaced");
    vfs.rename(&path("b/keep"), &path("a/f")).unwrap();
    assert_eq!(read_whole(&vfs, &path("a/f")).unwrap(), b"K", "a file replaced");
    assert_eq!(listed(&vfs, &path("b")), Vec::<String>::new());
}

#[test]
fn a_moved_directory_is_a_directory_of_its_new_parent() {
    let vfs = disk_on(FsProfile::POSIX, CrashMode::Strict);
    two_dirs(&vfs);
    move_both(&vfs);
    assert_eq!(whereabouts(&vfs, "at once"), ('b', 'b'));
    durable_file(&vfs, &path("b/sub/new"), b"N");
    vfs.rename(&path("b/sub"), &path("b/renamed")).unwrap();
    vfs.rename(&path("b/renamed"), &path("sub")).unwrap();
    vfs.sync_dir(&path("b")).unwrap();
    vfs.power_loss(0);
    assert_eq!(listed(&vfs, &path("sub")), ["new", "x"], "moved twice, then within and out again");
    vfs.unlink(&path("sub/new")).unwrap();
    vfs.unlink(&path("sub/x")).unwrap();
    vfs.remove_dir(&path("sub")).unwrap();
    assert!(!vfs.exists(&path("sub")).unwrap());
}

#[test]
fn a_move_is_in_one_parent_after_any_crash_under_every_profile() {
    for fs in FsProfile::ALL {
        for mode in [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder] {
            let mut seen = BTreeMap::new();
            for seed in 0..48 {
                let vfs = disk_on(fs, mode);
                two_dirs(&vfs);
                move_both(&vfs);
                // Changes around the moves in both parents settle on their own.
                vfs.open(&path("a/later"), OpenMode::Create).unwrap();
                vfs.unlink(&path("b/keep")).unwrap();
                vfs.power_loss(seed);
                *seen.entry(whereabouts(&vfs, &format!("{} {mode:?} seed {seed}", fs.name))).or_insert(0) += 1;
            }
            assert!(seen.contains_key(&('a', 'a')), "{} {mode:?}: unsynced moves may be lost", fs.name);
            let kept = seen.keys().any(|place| *place != ('a', 'a'));
            assert_eq!(kept, mode != CrashMode::Strict, "{} {mode:?}: kept only where a crash keeps", fs.name);
        }
    }
}

#[test]
fn every_enumerated_crash_state_names_each_moved_thing_once() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Reorder);
        two_dirs(&vfs);
        vfs.open(&path("a/sub/pending"), OpenMode::Create).unwrap();
        move_both(&vfs);
        vfs.open(&path("b/after"), OpenMode::Create).unwrap();
        let snapshot = vfs.snapshot();
        let mut seen = BTreeMap::new();
        for state in snapshot.crash_states(256) {
            let image = snapshot.image(&state);
            let config = DiskConfig::fault_free(CrashMode::Strict, 512);
            let restored = SimVfs::from_image(config, &image, Trace::new(false));
            let dirs: Vec<PathBuf> = image.dir_paths().into_iter().map(Path::to_path_buf).collect();
            *seen.entry(whereabouts(&restored, &format!("{}: {dirs:?}", fs.name))).or_insert(0) += 1;
        }
        // Each move kept or lost on its own; where a directory's changes
        // survive in order, the directory's move (second in both parents)
        // never without the file's.
        let expected = if fs.dir_changes_in_order { 3 } else { 4 };
        assert_eq!(seen.len(), expected, "{}: {seen:?}", fs.name);
        assert_eq!(seen.contains_key(&('a', 'b')), !fs.dir_changes_in_order, "{}: {seen:?}", fs.name);
    }
}

#[test]
fn either_parents_sync_dir_makes_the_move_durable() {
    for fs in FsProfile::ALL {
        for synced in ["a", "b"] {
            for mode in [CrashMode::Strict, CrashMode::Reorder] {
                let vfs = disk_on(fs, mode);
                two_dirs(&vfs);
                // A create before the moves in each parent: a journal
                // commits it with the move.
                vfs.open(&path("a/before"), OpenMode::Create).unwrap();
                vfs.open(&path("b/before"), OpenMode::Create).unwrap();
                move_both(&vfs);
                vfs.sync_dir(&path(synced)).unwrap();
                vfs.power_loss(5);
                assert_eq!(whereabouts(&vfs, fs.name), ('b', 'b'), "{} {mode:?}: {synced} synced", fs.name);
            }
        }
    }
}

#[test]
fn the_moved_files_fsync_makes_the_move_durable_only_where_it_commits_names() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Strict);
        two_dirs(&vfs);
        vfs.rename(&path("a/f"), &path("b/f")).unwrap();
        vfs.open(&path("b/f"), OpenMode::Write).unwrap().sync().unwrap();
        vfs.power_loss(1);
        let (file, _) = whereabouts(&vfs, fs.name);
        // ext4 and XFS commit their journal; btrfs logs the file's own
        // changes, both halves of its move; posix promises nothing.
        assert_eq!(file == 'b', fs.name != "posix", "{}: the move's fate", fs.name);
    }
}

#[test]
fn moves_there_and_back_leave_one_name_after_any_reorder_crash() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let vfs = disk_on(FsProfile::POSIX, CrashMode::Reorder);
        two_dirs(&vfs);
        vfs.rename(&path("a/f"), &path("b/f")).unwrap();
        vfs.rename(&path("b/f"), &path("a/g")).unwrap();
        vfs.rename(&path("a/sub"), &path("b/sub")).unwrap();
        vfs.rename(&path("b/sub"), &path("a/sub2")).unwrap();
        vfs.power_loss(seed);
        let names: Vec<String> = ["a", "b"]
            .iter()
            .flat_map(|parent| listed(&vfs, &path(parent)).into_iter().map(move |name| format!("{parent}/{name}")))
            .filter(|name| !name.ends_with("keep"))
            .collect();
        assert_eq!(names.len(), 1, "seed {seed}: the file's names {names:?}");
        let subs: Vec<String> = ["a", "b"]
            .iter()
            .flat_map(|parent| {
                vfs.list_subdirs(&path(parent)).unwrap().into_iter().map(move |n| format!("{parent}/{n:?}"))
            })
            .collect();
        assert_eq!(subs.len(), 1, "seed {seed}: the directory's names {subs:?}");
        seen.insert((names, subs));
    }
    assert!(seen.len() >= 4, "the crash keeps different moves: {seen:?}");
}
