//! Directory removal and directory renames (`state/tree.rs`): the kernel's
//! errors; a renamed tree is whole at its old name or whole at its new one
//! after any crash, in every mode, under every profile, in the random
//! power loss and in every enumerated crash state; a removal or rename is
//! durable after the parent's `sync_dir` and, without it, only as each
//! profile's fsync rule says.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use vfs::{read_whole, OpenMode, Vfs};

use super::{dir, disk_on, durable_file, listed, path};
use crate::disk::{CrashMode, DiskConfig, FsProfile, SimVfs};
use crate::trace::Trace;

/// `/db/tmp` holding `a`, `b` and `sub/c`, all durable.
fn durable_tree(vfs: &SimVfs) {
    vfs.create_dir_all(&path("tmp/sub")).unwrap();
    durable_file(vfs, &path("tmp/a"), b"A");
    durable_file(vfs, &path("tmp/b"), b"B");
    durable_file(vfs, &path("tmp/sub/c"), b"C");
}

/// Every file under `root` by its path below it, with its bytes; `None`
/// if `root` is not a directory.
fn tree(vfs: &SimVfs, root: &Path) -> Option<BTreeMap<PathBuf, Vec<u8>>> {
    if vfs.list_subdirs(root).is_err() {
        return None;
    }
    let mut files = BTreeMap::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let at = root.join(&rel);
        for name in vfs.list_dir(&at).unwrap() {
            files.insert(rel.join(&name), read_whole(vfs, &at.join(&name)).unwrap());
        }
        todo.extend(vfs.list_subdirs(&at).unwrap().into_iter().map(|name| rel.join(name)));
    }
    Some(files)
}

fn whole_tree() -> BTreeMap<PathBuf, Vec<u8>> {
    [("a", b"A"), ("b", b"B"), ("sub/c", b"C")].into_iter().map(|(p, b)| (PathBuf::from(p), b.to_vec())).collect()
}

#[test]
fn removal_and_rename_answer_the_kernels_errors() {
    let vfs = disk_on(FsProfile::POSIX, CrashMode::Strict);
    durable_tree(&vfs);
    vfs.create_dir_all(&path("empty")).unwrap();
    let kind = |result: std::io::Result<()>| result.unwrap_err().kind();
    assert_eq!(kind(vfs.remove_dir(&path("tmp"))), ErrorKind::DirectoryNotEmpty, "files in it");
    assert_eq!(kind(vfs.remove_dir(&path("tmp/sub"))), ErrorKind::DirectoryNotEmpty);
    assert_eq!(kind(vfs.remove_dir(&path("tmp/a"))), ErrorKind::NotADirectory);
    assert_eq!(kind(vfs.remove_dir(&path("missing"))), ErrorKind::NotFound);
    assert_eq!(kind(vfs.remove_dir(Path::new("/"))), ErrorKind::ResourceBusy, "the root");
    assert_eq!(kind(vfs.rename(&path("tmp"), &path("tmp/sub/x"))), ErrorKind::InvalidInput, "into itself");
    assert_eq!(
        kind(vfs.rename(&path("empty"), &path("tmp/sub"))),
        ErrorKind::DirectoryNotEmpty,
        "across, onto a full one"
    );
    assert_eq!(kind(vfs.rename(&path("empty"), &path("tmp/a"))), ErrorKind::NotADirectory, "a file, anywhere");
    durable_file(&vfs, &path("file"), b"f");
    assert_eq!(kind(vfs.rename(&path("empty"), &path("file"))), ErrorKind::NotADirectory);
    assert_eq!(kind(vfs.rename(&path("file"), &path("empty"))), ErrorKind::IsADirectory);
    assert_eq!(kind(vfs.rename(&path("empty"), &path("tmp"))), ErrorKind::DirectoryNotEmpty);
    assert_eq!(kind(vfs.rename(&path("missing"), &path("x"))), ErrorKind::NotFound);
    vfs.rename(&path("tmp"), &path("tmp")).unwrap();
    assert_eq!(tree(&vfs, &path("tmp")), Some(whole_tree()), "a rename onto itself changes nothing");
}

#[test]
fn a_rename_moves_the_tree_and_a_removal_empties_the_name_at_once() {
    let vfs = disk_on(FsProfile::POSIX, CrashMode::Strict);
    durable_tree(&vfs);
    vfs.create_dir_all(&path("snap")).unwrap();
    vfs.rename(&path("tmp"), &path("snap")).unwrap();
    assert_eq!(tree(&vfs, &path("snap")), Some(whole_tree()), "the empty snap replaced");
    assert_eq!(tree(&vfs, &path("tmp")), None);
    assert_eq!(vfs.list_subdirs(dir()).unwrap(), ["snap"]);
    vfs.open(&path("snap/sub/d"), OpenMode::Create).unwrap();
    vfs.unlink(&path("snap/sub/d")).unwrap();
    vfs.unlink(&path("snap/sub/c")).unwrap();
    vfs.remove_dir(&path("snap/sub")).unwrap();
    assert!(!vfs.exists(&path("snap/sub")).unwrap());
    assert!(vfs.list_subdirs(&path("snap")).unwrap().is_empty());
    vfs.create_dir_all(&path("snap/sub")).unwrap();
    assert!(listed(&vfs, &path("snap/sub")).is_empty(), "a new directory, not the removed one");
}

#[test]
fn a_renamed_tree_is_whole_at_one_name_after_any_crash_under_every_profile() {
    for fs in FsProfile::ALL {
        for mode in [CrashMode::Strict, CrashMode::Prefix, CrashMode::Reorder] {
            let mut seen = [false, false];
            for seed in 0..40 {
                let vfs = disk_on(fs, mode);
                durable_tree(&vfs);
                vfs.create_dir_all(&path("snap")).unwrap();
                vfs.rename(&path("tmp"), &path("snap")).unwrap();
                vfs.power_loss(seed);
                let (old, new) = (tree(&vfs, &path("tmp")), tree(&vfs, &path("snap")));
                let moved = new.as_ref() == Some(&whole_tree());
                if moved {
                    assert_eq!(old, None, "{} {mode:?} seed {seed}: both names", fs.name);
                } else {
                    assert_eq!(old, Some(whole_tree()), "{} {mode:?} seed {seed}: half a tree", fs.name);
                    assert_eq!(new, Some(BTreeMap::new()), "{} {mode:?}: the replaced empty snap is back", fs.name);
                }
                seen[usize::from(moved)] = true;
            }
            assert!(seen[0], "{} {mode:?}: an unsynced rename may be lost", fs.name);
            assert_eq!(seen[1], mode != CrashMode::Strict, "{} {mode:?}: kept only where a crash keeps", fs.name);
        }
    }
}

#[test]
fn every_enumerated_crash_state_holds_the_tree_whole_at_one_name() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Reorder);
        durable_tree(&vfs);
        // A pending change inside the tree too: it settles on its own.
        vfs.open(&path("tmp/sub/new"), OpenMode::Create).unwrap();
        vfs.rename(&path("tmp"), &path("snap")).unwrap();
        let snapshot = vfs.snapshot();
        let mut at = BTreeMap::new();
        for state in snapshot.crash_states(64) {
            let image = snapshot.image(&state);
            let dirs: Vec<PathBuf> = image.dir_paths().into_iter().map(Path::to_path_buf).collect();
            let config = DiskConfig::fault_free(CrashMode::Strict, 512);
            let restored = SimVfs::from_image(config, &image, Trace::new(false));
            let (old, new) = (tree(&restored, &path("tmp")), tree(&restored, &path("snap")));
            assert!(old.is_some() != new.is_some(), "{}: one name, {dirs:?}", fs.name);
            let files = old.or(new).unwrap();
            for (name, bytes) in whole_tree() {
                assert_eq!(files.get(&name), Some(&bytes), "{}: {dirs:?}", fs.name);
            }
            *at.entry(dirs.iter().any(|d| d.ends_with("snap/sub"))).or_insert(0) += 1;
        }
        assert_eq!(at.len(), 2, "{}: states at both names", fs.name);
    }
}

#[test]
fn a_removal_and_a_rename_are_durable_after_the_parents_sync_dir() {
    for fs in FsProfile::ALL {
        for mode in [CrashMode::Strict, CrashMode::Reorder] {
            let vfs = disk_on(fs, mode);
            durable_tree(&vfs);
            vfs.create_dir_all(&path("gone")).unwrap();
            vfs.remove_dir(&path("gone")).unwrap();
            vfs.rename(&path("tmp"), &path("snap")).unwrap();
            vfs.sync_dir(dir()).unwrap();
            vfs.power_loss(7);
            assert_eq!(vfs.list_subdirs(dir()).unwrap(), ["snap"], "{} {mode:?}", fs.name);
            assert_eq!(tree(&vfs, &path("snap")), Some(whole_tree()));
        }
    }
}

#[test]
fn a_removal_without_sync_dir_is_durable_only_as_the_profiles_fsync_rule_says() {
    for fs in FsProfile::ALL {
        let vfs = disk_on(fs, CrashMode::Strict);
        vfs.create_dir_all(&path("gone")).unwrap();
        vfs.remove_dir(&path("gone")).unwrap();
        // A later file's create, fsynced: a journal commits the earlier
        // changes of its directory with it; a log tree and posix do not.
        let mut later = vfs.open(&path("later"), OpenMode::Create).unwrap();
        later.sync().unwrap();
        vfs.power_loss(1);
        let back = vfs.list_subdirs(dir()).unwrap() == ["gone"];
        let journal = fs.name.starts_with("ext4") || fs.name == "xfs";
        assert_eq!(back, !journal, "{}: the removal's fate", fs.name);
    }
}

#[test]
fn a_removed_directory_comes_back_with_any_subset_of_its_unsynced_unlinks() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..64 {
        let vfs = disk_on(FsProfile::POSIX, CrashMode::Reorder);
        durable_tree(&vfs);
        vfs.unlink(&path("tmp/a")).unwrap();
        vfs.unlink(&path("tmp/b")).unwrap();
        vfs.unlink(&path("tmp/sub/c")).unwrap();
        vfs.remove_dir(&path("tmp/sub")).unwrap();
        vfs.power_loss(seed);
        let files = tree(&vfs, &path("tmp")).expect("tmp was never removed");
        let sub = vfs.exists(&path("tmp/sub")).unwrap();
        for (name, bytes) in &files {
            assert_eq!(whole_tree().get(name), Some(bytes), "only what was there: {files:?}");
            assert!(sub || !name.starts_with("sub"), "a removed directory holds nothing");
        }
        seen.insert((files.keys().cloned().collect::<Vec<_>>(), sub));
    }
    assert!(seen.len() >= 6, "the crash keeps different subsets: {seen:?}");
}

#[test]
fn a_new_directory_at_a_removed_ones_name_commits_the_removal_first() {
    let vfs = disk_on(FsProfile::POSIX, CrashMode::Strict);
    durable_tree(&vfs);
    vfs.unlink(&path("tmp/sub/c")).unwrap();
    vfs.sync_dir(&path("tmp/sub")).unwrap();
    vfs.remove_dir(&path("tmp/sub")).unwrap();
    vfs.create_dir_all(&path("tmp/sub")).unwrap();
    durable_file(&vfs, &path("tmp/sub/fresh"), b"F");
    vfs.power_loss(3);
    assert_eq!(listed(&vfs, &path("tmp/sub")), ["fresh"], "the new directory, durable at once");
}
