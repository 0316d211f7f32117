//! `strict`: after power loss exactly the synced data under synced
//! directory entries remains.

use vfs::{OpenMode, Vfs};

use super::{contents, create_durable, dir, disk, disk_holding, listed, open_write, path};
use crate::disk::{CrashMode, CrashOutcome};

#[test]
fn fsynced_data_without_a_synced_entry_is_gone() {
    let vfs = disk(CrashMode::Strict, 512);
    let mut file = vfs.open(&path("f"), OpenMode::Create).unwrap();
    file.write_at(0, b"data").unwrap();
    file.sync().unwrap();
    let outcome = vfs.power_loss(1);
    assert_eq!(contents(&vfs, "f"), None);
    assert_eq!(outcome, CrashOutcome { lost_dir_changes: 1, ..CrashOutcome::default() });
    assert_eq!(vfs.volatile_bytes(), 0, "the unreachable inode is freed");
}

#[test]
fn a_synced_entry_keeps_exactly_the_synced_data() {
    let vfs = disk_holding(CrashMode::Strict, 512, "f", b"durable");
    let mut file = open_write(&vfs, "f");
    file.write_at(7, b" and volatile").unwrap();
    file.set_len(3).unwrap();
    assert_eq!(contents(&vfs, "f").unwrap(), b"dur");
    let outcome = vfs.power_loss(2);
    assert_eq!(contents(&vfs, "f").unwrap(), b"durable");
    assert_eq!(outcome.lost_writes, 2);
    assert_eq!(outcome.lost_dir_changes, 0);
}

#[test]
fn an_entry_synced_before_its_data_is_an_empty_file() {
    let vfs = disk(CrashMode::Strict, 4096);
    let mut file = vfs.open(&path("f"), OpenMode::Create).unwrap();
    vfs.sync_dir(dir()).unwrap();
    file.write_at(0, b"never synced").unwrap();
    vfs.power_loss(3);
    assert_eq!(contents(&vfs, "f").unwrap(), b"");
}

#[test]
fn a_rename_is_durable_only_after_sync_dir_and_then_whole() {
    let vfs = disk_holding(CrashMode::Strict, 512, "current", b"old");
    create_durable(&vfs, "temp", b"new");
    vfs.rename(&path("temp"), &path("current")).unwrap();
    assert_eq!(contents(&vfs, "current").unwrap(), b"new");
    vfs.power_loss(4);
    assert_eq!(contents(&vfs, "current").unwrap(), b"old");
    assert_eq!(contents(&vfs, "temp").unwrap(), b"new");

    vfs.rename(&path("temp"), &path("current")).unwrap();
    vfs.sync_dir(dir()).unwrap();
    vfs.power_loss(5);
    assert_eq!(contents(&vfs, "current").unwrap(), b"new");
    assert_eq!(contents(&vfs, "temp"), None);
    assert_eq!(listed(&vfs, dir()), vec!["current".to_string()]);
}

#[test]
fn an_unlink_is_durable_only_after_sync_dir() {
    let vfs = disk_holding(CrashMode::Strict, 512, "f", b"bytes");
    vfs.unlink(&path("f")).unwrap();
    assert_eq!(contents(&vfs, "f"), None);
    assert_eq!(vfs.volatile_bytes(), 5, "space is freed when the unlink is durable");
    vfs.power_loss(6);
    assert_eq!(contents(&vfs, "f").unwrap(), b"bytes");
    vfs.unlink(&path("f")).unwrap();
    vfs.sync_dir(dir()).unwrap();
    assert_eq!(vfs.volatile_bytes(), 0);
    vfs.power_loss(7);
    assert_eq!(contents(&vfs, "f"), None);
}

#[test]
fn an_unsynced_truncate_is_lost() {
    let vfs = disk_holding(CrashMode::Strict, 512, "f", b"keep me");
    drop(vfs.open(&path("f"), OpenMode::Truncate).unwrap());
    assert_eq!(contents(&vfs, "f").unwrap(), b"");
    vfs.power_loss(8);
    assert_eq!(contents(&vfs, "f").unwrap(), b"keep me");
}

#[test]
fn directories_are_durable_at_once() {
    let vfs = disk(CrashMode::Strict, 512);
    vfs.create_dir_all(std::path::Path::new("/db/sub/deeper")).unwrap();
    vfs.power_loss(9);
    assert!(vfs.exists(std::path::Path::new("/db/sub/deeper")).unwrap());
    assert!(listed(&vfs, std::path::Path::new("/db/sub")).is_empty());
}

#[test]
fn handles_die_at_power_loss_and_at_restart_but_only_power_loss_loses_data() {
    let vfs = disk_holding(CrashMode::Strict, 512, "f", b"base");
    let mut file = open_write(&vfs, "f");
    file.write_at(4, b"+cached").unwrap();
    assert!(vfs.process_restart().is_none(), "posix never shuts down: a plain restart");
    assert!(file.write_at(0, b"x").is_err(), "a handle from before the restart is dead");
    assert!(file.len().is_err());
    assert_eq!(contents(&vfs, "f").unwrap(), b"base+cached", "the page cache survives a restart");

    let mut file = open_write(&vfs, "f");
    vfs.power_loss(10);
    assert!(file.sync().is_err(), "a handle from before the power loss is dead");
    assert_eq!(contents(&vfs, "f").unwrap(), b"base");
    drop(file);
    assert_eq!(contents(&vfs, "f").unwrap(), b"base", "dropping a dead handle changes nothing");
}
