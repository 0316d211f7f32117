//! A store written by a previous on-disk format — AOF format 2, manifest
//! format 1 and segment format 1, from before every record was bound to
//! its place, and AOF format 3, whose frames were bound to their offset but
//! not to the log's generation — is refused with [`Error::OldFormat`],
//! naming the file and both versions, and the refused open changes nothing
//! (README, "Records bound to their place; format versions"). The old bytes
//! are built here as those releases wrote them: a frame's crc32 covered its
//! length, kind and payload only (format 2), or the log's tag and the
//! frame's offset before them (format 3).

mod support;

use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::manifest::MANIFEST_FILE;
use engine::seg::{Seg, SegBuilder};
use engine::store::{Options, Store, AOF_FILE};
use engine::vfs::{read_whole, Mapping, MemVfs, Vfs};
use engine::Error;
use support::{put_synced, vfs_files};

const NOW_MS: u64 = 1_700_000_000_000;
const DIR: &str = "/db";

/// One frame whose checksum covers `place` (an older format's idea of
/// it) before its length, kind and payload.
fn frame_covering(out: &mut Vec<u8>, place: &[u8], kind: u8, payload: &[u8]) {
    let len = (payload.len() as u32).to_le_bytes();
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(place);
    hasher.update(&len);
    hasher.update(&[kind]);
    hasher.update(payload);
    out.extend_from_slice(&len);
    out.extend_from_slice(&hasher.finalize().to_le_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
}

/// One frame as the formats before places wrote it: no place in the
/// checksum.
fn old_frame(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    frame_covering(out, &[], kind, payload);
}

/// A format-1 manifest: its header alone (a store with no segment yet).
fn old_manifest() -> Vec<u8> {
    let mut bytes = Vec::new();
    old_frame(&mut bytes, 1, &[b"SEGSMANI".as_slice(), &1u32.to_le_bytes()].concat());
    bytes
}

/// `SET k v` as a COMMAND frame's payload.
fn set_k_v() -> Vec<u8> {
    let mut command = 3u32.to_le_bytes().to_vec();
    for arg in [b"SET".as_slice(), b"k", b"v"] {
        command.extend_from_slice(&(arg.len() as u32).to_le_bytes());
        command.extend_from_slice(arg);
    }
    command
}

/// A format-2 log: its header (no snapshot), then `SET k v`.
fn old_log() -> Vec<u8> {
    let mut bytes = Vec::new();
    let header = [b"SEGS-AOF".as_slice(), &2u32.to_le_bytes(), &0u64.to_le_bytes()].concat();
    old_frame(&mut bytes, 1, &header);
    old_frame(&mut bytes, 2, &set_k_v());
    bytes
}

/// One frame as format 3 wrote it: the AOF's tag (1) and the frame's
/// offset in the checksum, no generation.
fn format_3_frame(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let place = [&[1u8][..], &(out.len() as u64).to_le_bytes()].concat();
    frame_covering(out, &place, kind, payload);
}

/// A format-3 log: its header (magic, version, snapshot end 0), then
/// `SET k v`.
fn format_3_log() -> Vec<u8> {
    let mut bytes = Vec::new();
    let header = [b"SEGS-AOF".as_slice(), &3u32.to_le_bytes(), &0u64.to_le_bytes()].concat();
    format_3_frame(&mut bytes, 1, &header);
    format_3_frame(&mut bytes, 2, &set_k_v());
    bytes
}

fn open(vfs: &Arc<MemVfs>) -> engine::Result<Store> {
    let clock = Arc::new(ManualClock::new(NOW_MS));
    Store::open(vfs.clone(), clock, Path::new(DIR), Options::default()).map(|(store, _)| store)
}

fn new_disk() -> Arc<MemVfs> {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(Path::new(DIR)).unwrap();
    vfs
}

#[test]
fn a_store_of_the_previous_format_is_refused_by_its_manifest_and_nothing_changes() {
    let vfs = new_disk();
    put_synced(vfs.as_ref(), &Path::new(DIR).join(MANIFEST_FILE), &old_manifest());
    put_synced(vfs.as_ref(), &Path::new(DIR).join(AOF_FILE), &old_log());
    let before = vfs_files(vfs.as_ref(), Path::new(DIR));
    match open(&vfs) {
        // Version 3 is the newest manifest format this build reads (it
        // reads version 2 too: its records were bound to their place).
        Err(Error::OldFormat { file, version: 1, reads: 3 }) => {
            assert_eq!(file, Path::new(DIR).join(MANIFEST_FILE));
        }
        other => panic!("expected OldFormat for the manifest, got {:?}", other.map(|_| "an open store")),
    }
    assert_eq!(vfs_files(vfs.as_ref(), Path::new(DIR)), before, "a refused open changed the directory");
}

#[test]
fn a_log_of_a_previous_format_is_refused_by_its_version_not_as_damage() {
    for (log, old_version) in [(old_log(), 2), (format_3_log(), 3)] {
        let vfs = new_disk();
        // A store of this format, closed cleanly; then its log replaced by
        // an older one (the manifest is the current format's).
        open(&vfs).unwrap().close().unwrap();
        put_synced(vfs.as_ref(), &Path::new(DIR).join(AOF_FILE), &log);
        let before = vfs_files(vfs.as_ref(), Path::new(DIR));
        let err = open(&vfs).err().expect("an old log is refused");
        match &err {
            Error::OldFormat { file, version, reads: 4 } if *version == old_version => {
                assert_eq!(file, &Path::new(DIR).join(AOF_FILE));
            }
            other => panic!("expected OldFormat {old_version} for the log, got {other}"),
        }
        let message = err.to_string();
        assert!(message.contains(&format!("format version {old_version}")) && message.contains("reads"), "{message}");
        assert_eq!(vfs_files(vfs.as_ref(), Path::new(DIR)), before, "a refused open changed the directory");
    }
}

#[test]
fn a_segment_of_the_previous_format_is_refused_by_its_version() {
    let vfs = new_disk();
    let path = Path::new(DIR).join("old.seg");
    let mut builder = SegBuilder::create(vfs.as_ref(), &path, 1).unwrap();
    builder.push(b"k", b"v").unwrap();
    builder.finish().unwrap();
    let mut bytes = read_whole(vfs.as_ref(), &path).unwrap();
    // The tail: version at 40, its crc at 44 over the 44 bytes before.
    let tail = bytes.len() - 56;
    bytes[tail + 40..tail + 44].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&bytes[tail..tail + 44]);
    bytes[tail + 44..tail + 48].copy_from_slice(&crc.to_le_bytes());
    match Seg::from_mapping(path.clone(), Mapping::from_vec(bytes)) {
        Err(Error::OldFormat { file, version: 1, reads: 2 }) => assert_eq!(file, path),
        other => panic!("expected OldFormat for the segment, got {:?}", other.map(|_| "an open segment")),
    }
}
