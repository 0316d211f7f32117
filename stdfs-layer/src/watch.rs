//! The session's disk as the layer's memory maps need to see it: every
//! file the layer opens is known by a [`FileId`] of its own (the inode,
//! as the layer can tell: a name keeps its number until it is unlinked or
//! renamed over, and a rename carries the number to the new name), and
//! every change made through a handle reaches the file's maps
//! (`interpose::maps::after_change`). The layer changes a file's bytes
//! only through a handle's `write_at` and `set_len`, and through an open
//! that truncates, so watching those three sees every write the process
//! makes: `write`, `pwrite`, vectored writes, `copy_file_range`,
//! `ftruncate`, `truncate`, `fallocate`, `O_TRUNC`.
//!
//! Everything else is the disk's own call, passed on unchanged: while no
//! file is mapped the wrapper adds no call of the disk, so a trace is the
//! same with it or without it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use simkit::vfs::{LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile};

use crate::interpose::maps::{self, Change, FileId};

/// File numbers: process-wide, so that no two sessions' files share one.
static NEXT_FILE: AtomicU64 = AtomicU64::new(1);

/// The file each open handle (by the address of the layer's box, never
/// shown) is open on: how `mmap` of a descriptor finds its file.
static HANDLES: Mutex<BTreeMap<usize, FileId>> = Mutex::new(BTreeMap::new());

/// `vfs` watched: the session's disk (`crate::session::install`).
pub fn watch(vfs: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    Arc::new(Watched { inner: vfs, names: Mutex::new(BTreeMap::new()) })
}

/// The file a handle of the session's disk is open on.
pub fn file_of(handle: &dyn VfsFile) -> Option<FileId> {
    let key = handle as *const dyn VfsFile as *const () as usize;
    HANDLES.lock().unwrap_or_else(|p| p.into_inner()).get(&key).copied()
}

struct Watched {
    inner: Arc<dyn Vfs>,
    /// The number of the file each name the layer opened names.
    names: Mutex<BTreeMap<PathBuf, FileId>>,
}

impl Watched {
    fn names(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, FileId>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct WatchedFile {
    inner: Box<dyn VfsFile>,
    file: FileId,
}

impl WatchedFile {
    fn boxed(inner: Box<dyn VfsFile>, file: FileId) -> Box<dyn VfsFile> {
        let boxed = Box::new(WatchedFile { inner, file });
        let key = &*boxed as *const WatchedFile as *const () as usize;
        HANDLES.lock().unwrap_or_else(|p| p.into_inner()).insert(key, file);
        boxed
    }

    /// After a write that failed (any prefix of it may be on the disk):
    /// the range as a read now returns it, or the file's bytes unknown.
    fn read_back(&self, at: u64, len_bytes: usize) -> io::Result<(Vec<u8>, u64)> {
        let len_after = self.inner.len()?;
        let want = len_after.saturating_sub(at).min(len_bytes as u64) as usize;
        let mut bytes = vec![0u8; want];
        let mut done = 0;
        while done < want {
            match self.inner.read_at(at + done as u64, &mut bytes[done..])? {
                0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                n => done += n,
            }
        }
        Ok((bytes, len_after))
    }
}

impl Drop for WatchedFile {
    fn drop(&mut self) {
        let key = self as *const WatchedFile as *const () as usize;
        HANDLES.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    }
}

impl VfsFile for WatchedFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset_bytes, buf)
    }

    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        let written = self.inner.write_at(offset_bytes, data);
        if maps::file_is_mapped(self.file) {
            match &written {
                Ok(()) => {
                    maps::after_change(self.file, Change::Bytes { at: offset_bytes, bytes: data, len_after: None })
                }
                Err(_) => match self.read_back(offset_bytes, data.len()) {
                    Ok((bytes, len_after)) => {
                        let change = Change::Bytes { at: offset_bytes, bytes: &bytes, len_after: Some(len_after) };
                        maps::after_change(self.file, change)
                    }
                    Err(_) => maps::after_change(self.file, Change::Unknown),
                },
            }
        }
        written
    }

    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        let done = self.inner.set_len(len_bytes);
        if done.is_ok() && maps::file_is_mapped(self.file) {
            maps::after_change(self.file, Change::Len { len_after: len_bytes });
        }
        done
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.inner.sync_data()
    }

    fn is_empty(&self) -> io::Result<bool> {
        self.inner.is_empty()
    }
}

impl Vfs for Watched {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let inner = self.inner.open(path, mode)?;
        let file = *self.names().entry(path.to_path_buf()).or_insert_with(|| NEXT_FILE.fetch_add(1, Ordering::Relaxed));
        if mode == OpenMode::Truncate && maps::file_is_mapped(file) {
            maps::after_change(file, Change::Len { len_after: 0 });
        }
        Ok(WatchedFile::boxed(inner, file))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)?;
        if from == to {
            return Ok(()); // POSIX: a rename onto itself changes nothing
        }
        let mut names = self.names();
        // A directory's rename carries its files' names with it.
        let moved: Vec<PathBuf> = names.keys().filter(|name| name.starts_with(from)).cloned().collect();
        names.retain(|name, _| !name.starts_with(to));
        for old in moved {
            let file = names.remove(&old).expect("listed just now");
            let rest = old.strip_prefix(from).expect("listed by this prefix");
            names.insert(if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) }, file);
        }
        Ok(())
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.inner.unlink(path)?;
        self.names().remove(path);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.remove_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        self.inner.list_dir(dir)
    }

    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        self.inner.list_subdirs(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        self.inner.map_readonly(path)
    }

    fn read_once(&self, path: &Path) -> io::Result<Mapping> {
        self.inner.read_once(path)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }

    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        self.inner.lock(dir, mode)
    }

    fn mark(&self, phase: &'static str) {
        self.inner.mark(phase)
    }

    fn act_as(&self, thread: u32) {
        self.inner.act_as(thread)
    }
}
