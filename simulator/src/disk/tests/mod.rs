//! Scenario tests of the simulated disk, one file per promise: it behaves
//! like a plain file system until power goes (`model.rs`), each crash mode
//! keeps exactly what it may (`strict.rs`, `prefix.rs`, `reorder.rs`),
//! faults do what the config says (`faults.rs`), crash points and traces
//! are exact and deterministic (`points.rs`), each file-system profile's rules hold where
//! it has them and nowhere else (`profiles.rs`; fdatasync and ext4's
//! `auto_da_alloc`, `datasync.rs`), snapshots enumerate exactly
//! the crash states the modes allow (`crash_states.rs`), and a lost or
//! misdirected write does what the disk's `silent.rs` says (`silent.rs`),
//! and a persistence hazard names its file by every name it bore
//! (`hazard_names.rs`); directories removed and renamed (`dirs.rs`), and
//! a store that publishes snapshots by renaming a directory into place,
//! swept with a planted bug (`snapshot_store.rs`); renames across
//! directories (`moves.rs`), and a store that moves its records between
//! directories, swept with a planted bug (`move_store.rs`).

mod crash_states;
mod datasync;
mod dirs;
mod faults;
mod hazard_names;
mod model;
mod move_store;
mod moves;
mod points;
mod prefix;
mod profiles;
mod reorder;
mod silent;
mod snapshot_store;
mod strict;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use vfs::{read_whole, OpenMode, Vfs, VfsFile};

use super::data::DataOp;
use super::{CrashMode, DiskConfig, FsProfile, SimVfs};
use crate::trace::Trace;

pub(super) fn dir() -> &'static Path {
    Path::new("/db")
}

pub(super) fn path(name: &str) -> PathBuf {
    dir().join(name)
}

/// A disk with `config` and the directory `/db`.
pub(super) fn disk_with(config: DiskConfig) -> SimVfs {
    let vfs = SimVfs::new(config, Trace::new(false));
    vfs.create_dir_all(dir()).unwrap();
    vfs
}

/// A fault-free disk of 512-byte sectors under profile `fs`, with the
/// directory `/db`.
pub(super) fn disk_on(fs: FsProfile, mode: CrashMode) -> SimVfs {
    disk_with(DiskConfig { fs, ..DiskConfig::fault_free(mode, 512) })
}

/// A fault-free disk with the directory `/db`.
pub(super) fn disk(mode: CrashMode, sector_bytes: u64) -> SimVfs {
    disk_with(DiskConfig::fault_free(mode, sector_bytes))
}

/// The names in `dir` as text (the simulated disk writes no other names).
pub(super) fn listed(vfs: &SimVfs, dir: &std::path::Path) -> Vec<String> {
    let names = vfs.list_dir(dir).unwrap();
    names.into_iter().map(|name| name.into_string().expect("a simulated name is UTF-8")).collect()
}

/// The file's bytes now, or `None` if it does not exist.
pub(super) fn contents(vfs: &SimVfs, name: &str) -> Option<Vec<u8>> {
    if !vfs.exists(&path(name)).unwrap() {
        return None;
    }
    Some(read_whole(vfs, &path(name)).unwrap())
}

/// Create `name` holding `bytes`, with its data and its entry durable.
pub(super) fn create_durable(vfs: &SimVfs, name: &str, bytes: &[u8]) {
    durable_file(vfs, &path(name), bytes);
}

/// Create `at` (in any directory) holding `bytes`, its data and its entry
/// durable.
pub(super) fn durable_file(vfs: &SimVfs, at: &Path, bytes: &[u8]) {
    let mut file = vfs.open(at, OpenMode::Truncate).unwrap();
    file.write_at(0, bytes).unwrap();
    file.sync().unwrap();
    vfs.sync_dir(at.parent().expect("a file in a directory")).unwrap();
}

/// A fault-free disk whose `/db/<name>` durably holds `bytes`: where most
/// crash scenarios start.
pub(super) fn disk_holding(mode: CrashMode, sector_bytes: u64, name: &str, bytes: &[u8]) -> SimVfs {
    let vfs = disk(mode, sector_bytes);
    create_durable(&vfs, name, bytes);
    vfs
}

/// A disk with `config` whose file `f` durably holds `base`, with `ops`
/// done on it since (written, not synced): what a power loss then cuts.
pub(super) fn with_pending(config: &DiskConfig, base: &[u8], ops: &[DataOp]) -> SimVfs {
    let vfs = disk_with(config.clone());
    create_durable(&vfs, "f", base);
    let mut file = open_write(&vfs, "f");
    for op in ops {
        match op {
            DataOp::Write { offset_bytes, data } => file.write_at(*offset_bytes, data).unwrap(),
            DataOp::SetLen { len_bytes, .. } => file.set_len(*len_bytes).unwrap(),
        }
    }
    vfs
}

/// Either sector size the simulated disk is drawn with.
pub(super) fn sector_sizes() -> impl Strategy<Value = u64> {
    prop_oneof![Just(512u64), Just(4096u64)]
}

/// A data op within the first `span_bytes` of a file: four times in five
/// a write of 1 to `max_write_bytes - 1` [`pattern`] bytes, else a resize.
pub(super) fn data_op(span_bytes: u64, max_write_bytes: u64) -> impl Strategy<Value = DataOp> {
    assert!(max_write_bytes > 1, "a write of at least one byte");
    prop_oneof![
        4 => (0..span_bytes, 1..max_write_bytes as usize, any::<u8>())
            .prop_map(|(offset_bytes, len, seed)| DataOp::Write { offset_bytes, data: pattern(seed, len) }),
        1 => (0..span_bytes).prop_map(|len_bytes| DataOp::SetLen { len_bytes, seq: 0 }),
    ]
}

/// A sector size and one to seven data ops drawn by `op` for it.
pub(super) fn sector_and_ops<S: Strategy<Value = DataOp>>(
    op: impl Fn(u64) -> S,
) -> impl Strategy<Value = (u64, Vec<DataOp>)> {
    sector_sizes()
        .prop_flat_map(move |sector_bytes| (Just(sector_bytes), prop::collection::vec(op(sector_bytes), 1..8)))
}

/// Open `name` for writing (it must exist).
pub(super) fn open_write(vfs: &SimVfs, name: &str) -> Box<dyn VfsFile> {
    vfs.open(&path(name), OpenMode::Write).unwrap()
}

/// `len` bytes that differ from their neighbours, starting at `seed`.
pub(super) fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i % 251) as u8).wrapping_mul(7) | 1).collect()
}

/// `image` cut or zero-extended to `len` bytes.
pub(super) fn resized(image: &[u8], len: usize) -> Vec<u8> {
    let mut out = image.to_vec();
    out.resize(len, 0);
    out
}

#[test]
fn list_subdirs_names_the_directories_and_is_no_io_of_its_own() {
    let vfs = disk(CrashMode::Strict, 512);
    vfs.create_dir_all(&path("b/deeper")).unwrap();
    vfs.create_dir_all(&path("a")).unwrap();
    vfs.open(&path("file"), OpenMode::Create).unwrap();
    let ios = vfs.io_count();
    let subdirs: Vec<_> = vfs.list_subdirs(dir()).unwrap();
    assert_eq!(subdirs, ["a", "b"], "children only, in name order, no file");
    assert_eq!(vfs.io_count(), ios, "rides with list_dir's I/O: traces and faults nothing");
    assert_eq!(listed(&vfs, dir()), ["file"], "list_dir still lists files only");
    assert_eq!(vfs.list_subdirs(&path("missing")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
}
