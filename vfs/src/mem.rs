//! [`MemVfs`]: a fault-free file system in memory.
//!
//! Everything is durable the instant it is written, nothing ever fails and
//! nothing crashes. Directory locks are modelled in a [`LockTable`] (no
//! `LOCK` file appears): a second exclusive lock on a directory is refused
//! while the first guard lives, as it would be on a real disk. It exists for unit and property tests that want speed
//! rather than faults, and as the "bare engine" baseline the simulator's
//! overhead is measured against. The fault-injecting disk lives in `sim`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{LockGuard, LockMode, LockTable, Mapping, OpenMode, Vfs, VfsFile};

type Bytes = Arc<Mutex<Vec<u8>>>;

/// An in-memory file system (see the module doc).
#[derive(Debug, Default)]
pub struct MemVfs {
    state: Mutex<MemState>,
    /// Shared with every guard handed out, so a guard can release its lock
    /// without borrowing the file system.
    locks: Arc<Mutex<LockTable>>,
}

/// What a [`LockGuard`] of [`MemVfs`] holds: its place in the table.
struct MemLock {
    locks: Arc<Mutex<LockTable>>,
    dir: PathBuf,
    mode: LockMode,
}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).release(&self.dir, self.mode);
    }
}

#[derive(Debug, Default)]
struct MemState {
    files: BTreeMap<PathBuf, Bytes>,
    dirs: BTreeSet<PathBuf>,
}

impl MemState {
    /// Whether any file or directory is under `dir`.
    fn holds_anything(&self, dir: &Path) -> bool {
        let under = |p: &&PathBuf| p.starts_with(dir) && p.as_path() != dir;
        self.files.keys().any(|p| under(&p)) || self.dirs.iter().any(|p| under(&p))
    }

    /// `rename(2)` of the directory `from`: everything under it moves to
    /// `to`, which may be only an empty directory or nothing.
    fn rename_dir(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if from == to {
            return Ok(());
        }
        if to.starts_with(from) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: into itself", to.display())));
        }
        if self.files.contains_key(to) {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, format!("{}: a file", to.display())));
        }
        if self.dirs.contains(to) && self.holds_anything(to) {
            return Err(io::Error::new(io::ErrorKind::DirectoryNotEmpty, format!("{}: not empty", to.display())));
        }
        let moved = |p: &PathBuf| to.join(p.strip_prefix(from).expect("under from"));
        let dirs: Vec<PathBuf> = self.dirs.iter().filter(|p| p.starts_with(from)).cloned().collect();
        for dir in dirs {
            self.dirs.remove(&dir);
            self.dirs.insert(moved(&dir));
        }
        let files: Vec<PathBuf> = self.files.keys().filter(|p| p.starts_with(from)).cloned().collect();
        for file in files {
            let bytes = self.files.remove(&file).expect("listed above");
            self.files.insert(moved(&file), bytes);
        }
        Ok(())
    }
}

struct MemFile {
    bytes: Bytes,
    writable: bool,
}

impl MemVfs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, MemState> {
        // A panic while holding the lock is a test failure already; the
        // state is plain data and stays usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The names of the `paths` directly in `dir`, sorted bytewise: a
/// listing's files or its subdirectories.
fn names_in<'a>(dir: &Path, paths: impl Iterator<Item = &'a PathBuf>) -> Vec<OsString> {
    let mut names: Vec<OsString> =
        paths.filter(|p| p.parent() == Some(dir)).filter_map(|p| p.file_name().map(|n| n.to_os_string())).collect();
    names.sort();
    names
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))
}

fn lock(bytes: &Bytes) -> MutexGuard<'_, Vec<u8>> {
    bytes.lock().unwrap_or_else(|e| e.into_inner())
}

impl Vfs for MemVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let mut state = self.state();
        let existing = state.files.get(path).cloned();
        let bytes = match (mode, existing) {
            (OpenMode::Read | OpenMode::Write, None) => return Err(not_found(path)),
            (OpenMode::Read | OpenMode::Write | OpenMode::Create, Some(bytes)) => bytes,
            (OpenMode::Truncate, Some(bytes)) => {
                lock(&bytes).clear();
                bytes
            }
            (OpenMode::Create | OpenMode::Truncate, None) => {
                let parent = path.parent().unwrap_or(Path::new(""));
                if !parent.as_os_str().is_empty() && !state.dirs.contains(parent) {
                    return Err(not_found(parent));
                }
                let bytes = Bytes::default();
                state.files.insert(path.to_path_buf(), bytes.clone());
                bytes
            }
        };
        Ok(Box::new(MemFile { bytes, writable: mode != OpenMode::Read }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state();
        if state.dirs.contains(from) {
            return state.rename_dir(from, to);
        }
        let bytes = state.files.remove(from).ok_or_else(|| not_found(from))?;
        state.files.insert(to.to_path_buf(), bytes);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        if state.holds_anything(dir) {
            return Err(io::Error::new(io::ErrorKind::DirectoryNotEmpty, format!("{}: not empty", dir.display())));
        }
        state.dirs.remove(dir);
        Ok(())
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.state().files.remove(path).map(|_| ()).ok_or_else(|| not_found(path))
    }

    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let state = self.state();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(names_in(dir, state.dirs.iter()))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let state = self.state();
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(names_in(dir, state.files.keys()))
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.state();
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() {
                state.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.state().dirs.contains(dir) {
            Ok(())
        } else {
            Err(not_found(dir))
        }
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        let bytes = self.state().files.get(path).cloned().ok_or_else(|| not_found(path))?;
        let copy = lock(&bytes).clone();
        Ok(Mapping::from_vec(copy))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = self.state();
        Ok(state.files.contains_key(path) || state.dirs.contains(path))
    }

    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        if !self.state().dirs.contains(dir) {
            return Err(not_found(dir));
        }
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).acquire(dir, mode)?;
        let held = MemLock { locks: self.locks.clone(), dir: dir.to_path_buf(), mode };
        Ok(LockGuard::new(dir, mode, held))
    }
}

impl VfsFile for MemFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        let bytes = lock(&self.bytes);
        let Ok(start) = usize::try_from(offset_bytes) else { return Ok(0) };
        if start >= bytes.len() {
            return Ok(0);
        }
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }

    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "file opened read-only"));
        }
        let start = usize::try_from(offset_bytes).map_err(|_| io::Error::other("offset too large"))?;
        let mut bytes = lock(&self.bytes);
        let end = start + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[start..end].copy_from_slice(data);
        Ok(())
    }

    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "file opened read-only"));
        }
        let len = usize::try_from(len_bytes).map_err(|_| io::Error::other("length too large"))?;
        lock(&self.bytes).resize(len, 0);
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(lock(&self.bytes).len() as u64)
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_removed_empty_and_renamed_whole() {
        let vfs = MemVfs::new();
        vfs.create_dir_all(Path::new("/db/tmp/sub")).unwrap();
        vfs.open(Path::new("/db/tmp/sub/f"), OpenMode::Create).unwrap();
        vfs.create_dir_all(Path::new("/db/snap")).unwrap();
        let kind = |r: io::Result<()>| r.unwrap_err().kind();
        assert_eq!(kind(vfs.remove_dir(Path::new("/db/tmp"))), io::ErrorKind::DirectoryNotEmpty);
        assert_eq!(kind(vfs.rename(Path::new("/db/snap"), Path::new("/db/tmp"))), io::ErrorKind::DirectoryNotEmpty);
        assert_eq!(kind(vfs.rename(Path::new("/db/tmp"), Path::new("/db/tmp/x"))), io::ErrorKind::InvalidInput);
        vfs.rename(Path::new("/db/tmp"), Path::new("/db/snap")).unwrap();
        assert_eq!(vfs.list_subdirs(Path::new("/db")).unwrap(), ["snap"]);
        assert_eq!(vfs.list_dir(Path::new("/db/snap/sub")).unwrap(), ["f"]);
        vfs.unlink(Path::new("/db/snap/sub/f")).unwrap();
        vfs.remove_dir(Path::new("/db/snap/sub")).unwrap();
        assert!(vfs.list_subdirs(Path::new("/db/snap")).unwrap().is_empty());
        assert_eq!(kind(vfs.remove_dir(Path::new("/db/snap/sub"))), io::ErrorKind::NotFound);
    }

    #[test]
    fn files_behave_like_files() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).unwrap();
        let path = dir.join("a");
        assert!(vfs.open(&path, OpenMode::Read).is_err());
        let mut f = vfs.open(&path, OpenMode::Create).unwrap();
        f.write_at(3, b"xyz").unwrap();
        assert_eq!(f.len().unwrap(), 6);
        let mut buf = [9u8; 8];
        assert_eq!(f.read_at(0, &mut buf).unwrap(), 6);
        assert_eq!(&buf[..6], b"\0\0\0xyz");
        vfs.rename(&path, &dir.join("b")).unwrap();
        assert_eq!(vfs.list_dir(dir).unwrap(), vec![OsString::from("b")]);
        assert_eq!(&*vfs.map_readonly(&dir.join("b")).unwrap(), b"\0\0\0xyz");
        vfs.unlink(&dir.join("b")).unwrap();
        assert!(vfs.list_dir(dir).unwrap().is_empty());
    }

    #[test]
    fn a_directory_lock_lives_as_long_as_its_guard() {
        let vfs = MemVfs::new();
        let (dir, other) = (Path::new("/db"), Path::new("/other"));
        assert_eq!(vfs.lock(dir, LockMode::Exclusive).unwrap_err().kind(), io::ErrorKind::NotFound);
        vfs.create_dir_all(dir).unwrap();
        vfs.create_dir_all(other).unwrap();

        let writer = vfs.lock(dir, LockMode::Exclusive).unwrap();
        assert_eq!((writer.dir(), writer.mode()), (dir, LockMode::Exclusive));
        for mode in [LockMode::Exclusive, LockMode::Shared] {
            assert_eq!(vfs.lock(dir, mode).unwrap_err().kind(), io::ErrorKind::WouldBlock, "{mode:?}");
        }
        let elsewhere = vfs.lock(other, LockMode::Exclusive).unwrap();
        drop(writer);
        assert!(vfs.list_dir(dir).unwrap().is_empty(), "no LOCK file is modelled");

        let readers = [vfs.lock(dir, LockMode::Shared).unwrap(), vfs.lock(dir, LockMode::Shared).unwrap()];
        assert_eq!(vfs.lock(dir, LockMode::Exclusive).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        drop(readers);
        drop(vfs.lock(dir, LockMode::Exclusive).unwrap());
        drop(elsewhere);
        drop(vfs.lock(other, LockMode::Exclusive).unwrap());
    }

    #[test]
    fn list_subdirs_names_the_directories_and_list_dir_the_files() {
        let vfs = MemVfs::new();
        vfs.create_dir_all(Path::new("/db/b/deeper")).unwrap();
        vfs.create_dir_all(Path::new("/db/a")).unwrap();
        vfs.open(Path::new("/db/file"), OpenMode::Create).unwrap();
        assert_eq!(vfs.list_subdirs(Path::new("/db")).unwrap(), ["a", "b"]);
        assert_eq!(vfs.list_dir(Path::new("/db")).unwrap(), ["file"]);
    }

    #[test]
    fn create_needs_the_directory() {
        let vfs = MemVfs::new();
        assert!(vfs.open(Path::new("/nowhere/f"), OpenMode::Create).is_err());
    }
}
