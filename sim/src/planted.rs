//! Bugs planted *under* the engine, for tests that prove the checker can
//! fail without building the engine's `canaries` feature.
//!
//! [`skip_fsync`] wraps a disk so every file fsync reports success and
//! syncs nothing: acknowledged writes then vanish at the next power loss,
//! and the simulator (`run_ops_with`) and the explorer (`explore_with`)
//! must both say so.

use std::io;
use std::path::Path;
use std::sync::Arc;

use engine::vfs::{Mapping, OpenMode, Vfs, VfsFile};

/// `disk`, except that every file fsync silently does nothing.
pub fn skip_fsync(disk: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    Arc::new(SkipFsync(disk))
}

struct SkipFsync(Arc<dyn Vfs>);
struct SkipFsyncFile(Box<dyn VfsFile>);

impl Vfs for SkipFsync {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(SkipFsyncFile(self.0.open(path, mode)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.0.unlink(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.sync_dir(dir)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        self.0.map_readonly(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.0.exists(path)
    }
    fn mark(&self, label: &'static str) {
        self.0.mark(label)
    }
}

impl VfsFile for SkipFsyncFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(offset_bytes, buf)
    }
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_at(offset_bytes, data)
    }
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        self.0.set_len(len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}
