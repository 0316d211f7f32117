//! Scenario tests of the simulated disk, one file per promise: it behaves
//! like a plain file system until power goes (`model.rs`), each crash mode
//! keeps exactly what it may (`strict.rs`, `prefix.rs`, `reorder.rs`),
//! faults do what the config says (`faults.rs`), crash points and traces
//! are exact and deterministic (`points.rs`), the engine survives on it
//! (`store.rs`), a store directory has one owner while it lives and none
//! after a crash (`lock.rs`), and snapshots enumerate exactly the crash states the modes
//! allow (`crash_states.rs`).

mod crash_states;
mod faults;
mod lock;
mod model;
mod points;
mod prefix;
mod reorder;
mod store;
mod strict;

use std::path::{Path, PathBuf};

use engine::vfs::{read_whole, OpenMode, Vfs, VfsFile};

use super::{CrashMode, DiskConfig, SimVfs};
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

/// A fault-free disk with the directory `/db`.
pub(super) fn disk(mode: CrashMode, sector_bytes: u64) -> SimVfs {
    disk_with(DiskConfig::fault_free(mode, sector_bytes))
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
    let mut file = vfs.open(&path(name), OpenMode::Truncate).unwrap();
    file.write_at(0, bytes).unwrap();
    file.sync().unwrap();
    vfs.sync_dir(dir()).unwrap();
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
