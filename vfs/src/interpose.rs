//! [`Interpose`]: a file system that is another one with a few calls
//! stepped in on.
//!
//! Tests that fail a write, count fsyncs or make an fsync a no-op all want
//! the same thing: the disk underneath, unchanged, except at one or two
//! calls. Implement [`Interpose`] for a small type that names the disk
//! underneath and overrides only the calls it cares about; that type is
//! then a [`Vfs`]. Every other call, and every call of every file it opens,
//! goes straight through, so the fault is the only difference a test sees
//! (after Pebble's `errorfs`: faults composed from small pieces).
//!
//! The hooks are plain code over the caller's own state: switched on and
//! off by the test, never drawn at random, so every fault is deterministic.
//! Each file keeps a clone of the interposer, so a hook sees the same
//! state whichever file it runs for; keep that state behind an `Arc`.

use std::ffi::OsString;
use std::io;
use std::path::Path;

use super::{LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile};

/// Steps in on some calls to an inner [`Vfs`]; a type implementing it is a
/// `Vfs`. Each `on_*` method stands for the call of that name and by
/// default just makes it; override it to fail, count, record or skip the
/// call. `on_read_at`, `on_write_at`, `on_set_len`, `on_sync` and
/// `on_sync_data` run for every file opened through this interposer, with
/// `file` the inner file.
///
/// The `Vfs` comes from a blanket impl, so a type implements either this
/// trait or `Vfs` by hand, never both.
pub trait Interpose: Clone + Send + Sync + 'static {
    /// The file system underneath, which every call goes on to.
    fn inner(&self) -> &dyn Vfs;

    /// [`VfsFile::read_at`].
    fn on_read_at(&self, file: &dyn VfsFile, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        file.read_at(offset_bytes, buf)
    }

    /// [`VfsFile::write_at`].
    fn on_write_at(&self, file: &mut dyn VfsFile, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        file.write_at(offset_bytes, data)
    }

    /// [`VfsFile::set_len`].
    fn on_set_len(&self, file: &mut dyn VfsFile, len_bytes: u64) -> io::Result<()> {
        file.set_len(len_bytes)
    }

    /// [`VfsFile::sync`].
    fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        file.sync()
    }

    /// [`VfsFile::sync_data`]: the inner file's own, not `on_sync` (an
    /// interposer that steps in on syncs overrides both).
    fn on_sync_data(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        file.sync_data()
    }

    /// [`Vfs::sync_dir`].
    fn on_sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner().sync_dir(dir)
    }

    /// [`Vfs::lock`]. Forwarded by default: the lock is the inner file
    /// system's, so two interposers over one disk conflict as two openers
    /// of it would.
    fn on_lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        self.inner().lock(dir, mode)
    }
}

impl<T: Interpose> Vfs for T {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let inner = self.inner().open(path, mode)?;
        Ok(Box::new(Interposed { hooks: self.clone(), inner }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner().rename(from, to)
    }
    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.inner().unlink(path)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner().remove_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        self.inner().list_dir(dir)
    }
    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        self.inner().list_subdirs(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner().create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.on_sync_dir(dir)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        self.inner().map_readonly(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner().exists(path)
    }
    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        self.on_lock(dir, mode)
    }
    fn mark(&self, phase: &'static str) {
        self.inner().mark(phase)
    }
}

/// A file opened through an interposer: the inner file, and the hooks its
/// writes, cuts and syncs pass through.
struct Interposed<T> {
    hooks: T,
    inner: Box<dyn VfsFile>,
}

impl<T: Interpose> VfsFile for Interposed<T> {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.hooks.on_read_at(self.inner.as_ref(), offset_bytes, buf)
    }
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.hooks.on_write_at(self.inner.as_mut(), offset_bytes, data)
    }
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        self.hooks.on_set_len(self.inner.as_mut(), len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.hooks.on_sync(self.inner.as_mut())
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.hooks.on_sync_data(self.inner.as_mut())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{read_whole, MemVfs};

    /// Notes each hooked call; fails `set_len` while `refuse_cuts` is on.
    #[derive(Clone, Default)]
    struct Probe {
        inner: Arc<MemVfs>,
        seen: Arc<Mutex<Vec<&'static str>>>,
        refuse_cuts: Arc<AtomicBool>,
    }

    impl Probe {
        fn saw(&self, call: &'static str) {
            self.seen.lock().unwrap().push(call);
        }
    }

    impl Interpose for Probe {
        fn inner(&self) -> &dyn Vfs {
            self.inner.as_ref()
        }
        fn on_write_at(&self, file: &mut dyn VfsFile, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
            self.saw("write_at");
            file.write_at(offset_bytes, data)
        }
        fn on_set_len(&self, file: &mut dyn VfsFile, len_bytes: u64) -> io::Result<()> {
            self.saw("set_len");
            if self.refuse_cuts.load(Ordering::SeqCst) {
                return Err(io::Error::other("cut refused"));
            }
            file.set_len(len_bytes)
        }
        fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
            self.saw("sync");
            file.sync()
        }
        fn on_sync_dir(&self, dir: &Path) -> io::Result<()> {
            self.saw("sync_dir");
            self.inner.sync_dir(dir)
        }
    }

    #[test]
    fn every_call_reaches_the_inner_vfs_and_the_hooks_see_theirs() {
        let probe = Probe::default();
        let (dir, a, b) = (Path::new("/d"), Path::new("/d/a"), Path::new("/d/b"));
        probe.create_dir_all(dir).unwrap();
        let mut file = probe.open(a, OpenMode::Create).unwrap();
        file.write_at(0, b"hello world").unwrap();
        file.set_len(5).unwrap();
        file.sync().unwrap();
        assert_eq!(file.len().unwrap(), 5);
        let mut buf = [0u8; 5];
        assert_eq!(file.read_at(0, &mut buf).unwrap(), 5);
        assert_eq!(&buf, b"hello");
        probe.rename(a, b).unwrap();
        probe.sync_dir(dir).unwrap();
        probe.mark("open.done");
        assert_eq!(probe.list_dir(dir).unwrap(), [OsString::from("b")]);
        assert!(probe.exists(b).unwrap() && !probe.exists(a).unwrap());
        assert_eq!(read_whole(probe.inner.as_ref(), b).unwrap(), b"hello");
        assert_eq!(&probe.map_readonly(b).unwrap()[..], b"hello");
        probe.unlink(b).unwrap();
        assert!(!probe.inner.exists(b).unwrap());
        assert_eq!(*probe.seen.lock().unwrap(), ["write_at", "set_len", "sync", "sync_dir"]);

        // The lock is the inner disk's: held through the interposer, it
        // shuts out an opener of the disk underneath, and the other way.
        let held = probe.lock(dir, LockMode::Exclusive).unwrap();
        assert_eq!(probe.inner.lock(dir, LockMode::Shared).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        drop(held);
        let held = probe.inner.lock(dir, LockMode::Shared).unwrap();
        assert_eq!(probe.lock(dir, LockMode::Exclusive).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        drop(held);
        drop(probe.lock(dir, LockMode::Exclusive).unwrap());
    }

    #[test]
    fn a_hook_can_fail_a_call_before_it_reaches_the_inner_file() {
        let probe = Probe::default();
        let path = Path::new("/d/a");
        probe.create_dir_all(Path::new("/d")).unwrap();
        let mut file = probe.open(path, OpenMode::Create).unwrap();
        file.write_at(0, b"kept").unwrap();
        probe.refuse_cuts.store(true, Ordering::SeqCst);
        assert_eq!(file.set_len(0).unwrap_err().to_string(), "cut refused");
        assert_eq!(read_whole(probe.inner.as_ref(), path).unwrap(), b"kept");
        probe.refuse_cuts.store(false, Ordering::SeqCst);
        file.set_len(0).unwrap();
        assert_eq!(read_whole(probe.inner.as_ref(), path).unwrap(), b"");
    }
}
