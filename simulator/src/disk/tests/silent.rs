//! Silent write faults through the file system (`silent.rs`): a lost or
//! misdirected write keeps its place's old bytes and the page cache's
//! copy, is announced once at the power loss, heals under a later durable
//! write, and vouches for nothing.

use std::path::Path;

use vfs::OpenMode;

use crate::disk::config::{Damage, DamageKind};
use crate::disk::crash::{announce, open_scars};
use crate::disk::data::InodeId;
use crate::disk::silent::Fate;
use crate::disk::state::FileSystem;

fn announced(fs: &mut FileSystem) -> Vec<Damage> {
    let open = open_scars(fs);
    announce(fs, open)
}

fn file_with(fs: &mut FileSystem, bytes: &[u8]) -> InodeId {
    fs.create_dir_all(Path::new("/db"));
    let id = fs.open(Path::new("/db/f"), OpenMode::Create).unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
    fs.write(id, 0, bytes);
    fs.sync(id);
    id
}

#[test]
fn a_lost_write_keeps_the_old_bytes_and_the_new_length_and_is_announced_once() {
    let mut fs = FileSystem::default();
    let id = file_with(&mut fs, b"aaaa");
    fs.write(id, 2, b"bbbb");
    fs.set_fate(id, Fate::Lost);
    fs.sync(id);
    assert_eq!(fs.inode(id).durable, b"aaaa\0\0", "the place keeps its old bytes");
    assert_eq!(fs.inode(id).volatile, b"aabbbb", "the page cache holds the write");
    let open = open_scars(&fs);
    let damage = announce(&mut fs, open);
    assert_eq!(damage.len(), 1);
    assert_eq!((damage[0].kind, damage[0].offset_bytes, damage[0].path.as_str()), (DamageKind::LostWrite, 2, "/db/f"));
    assert!(announced(&mut fs).is_empty(), "announced once");
}

#[test]
fn a_misdirected_write_scars_its_place_and_where_it_landed() {
    let mut fs = FileSystem::default();
    let id = file_with(&mut fs, b"0123456789");
    fs.write(id, 6, b"xy");
    fs.set_fate(id, Fate::Elsewhere { offset_bytes: 2 });
    fs.sync(id);
    assert_eq!(fs.inode(id).durable, b"01xy456789");
    let offsets: Vec<u64> = announced(&mut fs).iter().map(|d| d.offset_bytes).collect();
    assert_eq!(offsets, vec![6, 2]);
}

#[test]
fn a_later_durable_write_over_a_scar_heals_it() {
    let mut fs = FileSystem::default();
    let id = file_with(&mut fs, b"aaaa");
    fs.write(id, 0, b"bb");
    fs.set_fate(id, Fate::Lost);
    fs.sync(id);
    fs.write(id, 0, b"cc");
    fs.sync(id);
    assert!(announced(&mut fs).is_empty());
}

#[test]
fn a_failed_fsync_keeps_the_clean_pages_a_silent_fault_left_wrong_on_disk() {
    let mut fs = FileSystem::default();
    let id = file_with(&mut fs, b"aaaa");
    fs.write(id, 4, b"bbbb");
    fs.set_fate(id, Fate::Lost);
    fs.sync(id);
    fs.write(id, 8, b"cccc");
    fs.drop_dirty(id);
    assert_eq!(fs.inode(id).volatile, b"aaaabbbb", "the dirty write dropped, the lost one still cached");
}

/// Two writes of other files land over one file's first bytes, the second
/// over the first's garbage: the file's page cache stays right through a
/// failed fsync (only dirty pages drop), and a power loss announces the
/// damage from the first byte (seed 2335719: the second landing took the
/// first one's garbage for the bytes the file should hold, and the failed
/// fsync's patch put the garbage back into the cache).
#[test]
fn a_landing_over_an_earlier_landing_keeps_the_right_bytes_as_intended() {
    let mut fs = FileSystem::default();
    let log = file_with(&mut fs, b"the log's header and frames");
    let right = fs.inode(log).volatile.clone();
    for (name, garbage) in [("/db/a", &b"AAAAAAAAA"[..]), ("/db/b", b"BBBBBBBBBBBBBBBBB")] {
        let other = fs.open(Path::new(name), OpenMode::Create).unwrap();
        fs.write(other, 0, garbage);
        fs.set_fate(other, Fate::OtherFile { inode: log });
        fs.sync(other);
    }
    assert_eq!(&fs.inode(log).durable[..17], b"BBBBBBBBBBBBBBBBB", "both landed, the second over the first");
    fs.write(log, right.len() as u64, b"dirty");
    fs.drop_dirty(log);
    assert_eq!(fs.inode(log).volatile, right, "the clean pages stay right, the dirty ones drop");
    let damage = announced(&mut fs);
    assert!(damage.iter().any(|d| d.path == "/db/f" && d.offset_bytes == 0), "{damage:?}");
}

#[test]
fn a_lost_write_vouches_for_nothing() {
    let mut fs = FileSystem::default();
    let id = file_with(&mut fs, b"aaaa");
    fs.write(id, 4, b"bbbb");
    fs.sync(id);
    // The first write after that fsync would vouch for bytes 4..8.
    fs.write(id, 8, b"cccc");
    fs.set_fate(id, Fate::Lost);
    fs.sync(id);
    assert!(!fs.inode(id).vouched(4..8));
}
