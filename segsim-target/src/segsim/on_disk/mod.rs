//! The segsim store on the simulated disk, end to end: what it synced
//! survives power loss and what it did not is gone (`store.rs`), and a
//! store directory has one owner while it lives and none after a crash
//! (`lock.rs`). The disk's own promises are tested beside it, in the
//! `simulator` crate; these need the engine, so they live with its target.

mod lock;
mod store;

use std::path::Path;

use vfs::{read_whole, Vfs};

use simulator::disk::SimVfs;

pub(super) fn dir() -> &'static Path {
    Path::new("/db")
}

/// The names in `dir` as text (the simulated disk writes no other names).
pub(super) fn listed(vfs: &SimVfs, dir: &Path) -> Vec<String> {
    let names = vfs.list_dir(dir).unwrap();
    names.into_iter().map(|name| name.into_string().expect("a simulated name is UTF-8")).collect()
}

/// The file's bytes now, or `None` if it does not exist.
pub(super) fn contents(vfs: &SimVfs, name: &str) -> Option<Vec<u8>> {
    let path = dir().join(name);
    if !vfs.exists(&path).unwrap() {
        return None;
    }
    Some(read_whole(vfs, &path).unwrap())
}
