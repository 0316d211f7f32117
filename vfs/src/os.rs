//! [`OsVfs`]: the real file system, through `std::fs`, with segments read
//! through a read-only memory map, and a store directory's lock held as an
//! advisory lock on the directory itself (and on its `LOCK` file).
//!
//! Why the directory: a lock on a file *by name* is only as good as the
//! name. An operator or a cleanup script that deletes `LOCK` under a
//! running store leaves the owner holding a lock on an unlinked inode, and
//! the next opener creates a new `LOCK` and locks it freely: two writers,
//! and an acknowledged write lost (issue 22). The directory cannot be
//! deleted while it holds the store's files, nor swapped without moving
//! them with it, so its lock stays the owner's.
//!
//! This module and `clock` are the only places in the engine allowed to
//! touch `std::fs`, `memmap2` or the wall clock (a test enforces it).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::{lock_conflict, read_into_memory, LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile, LOCK_FILE};

/// Files at least this long are mapped by [`OsVfs`]'s `read_once` rather
/// than read into a fresh buffer; below it, one `pread` costs less than a
/// map and its unmap.
pub const MAP_READ_MIN_BYTES: u64 = 1 << 20;

/// The operating system's file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsVfs;

struct OsFile {
    file: File,
}

/// The open directory and `LOCK` file a [`LockGuard`] of [`OsVfs`] holds.
struct OsLock {
    dir: File,
    file: File,
}

impl Drop for OsLock {
    fn drop(&mut self) {
        // Closing the files releases the locks too; unlocking first also
        // releases them if a descriptor was ever duplicated (a fork).
        let _ = self.file.unlock();
        let _ = self.dir.unlock();
    }
}

/// Take `mode`'s lock on `file` without waiting: a holder is a conflict.
fn try_lock(file: &File, mode: LockMode, dir: &Path) -> io::Result<()> {
    let locked = match mode {
        LockMode::Exclusive => file.try_lock(),
        LockMode::Shared => file.try_lock_shared(),
    };
    match locked {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(lock_conflict(dir)),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

impl Vfs for OsVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let mut options = OpenOptions::new();
        options.read(true);
        match mode {
            OpenMode::Read => {}
            OpenMode::Write => {
                options.write(true);
            }
            OpenMode::Create => {
                options.write(true).create(true);
            }
            OpenMode::Truncate => {
                options.write(true).create(true).truncate(true);
            }
        }
        Ok(Box::new(OsFile { file: options.open(path)? }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir(dir)
    }

    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                names.push(entry.file_name());
            }
        }
        names.sort();
        Ok(names)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            // The name's own bytes, UTF-8 or not: the engine never wrote a
            // name that is not text, but it must be able to name (and
            // leave alone) one that another program wrote.
            names.push(entry.file_name());
        }
        // `OsString` orders by its bytes on Unix.
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        let file = File::open(path)?;
        if file.metadata()?.len() == 0 {
            // mmap of an empty file is an error on Linux; an empty
            // mapping is the honest answer.
            return Ok(Mapping::from_vec(Vec::new()));
        }
        // SAFETY: the engine maps only immutable files (sealed segments),
        // which it never writes, truncates or reuses the name of while a
        // mapping is alive. Another process modifying the file would be
        // outside the engine's contract, as for any embedded database.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Mapping::new(Arc::new(map)))
    }

    /// A file of [`MAP_READ_MIN_BYTES`] or more is mapped rather than read:
    /// its pages come straight from the page cache, where a read would
    /// first fault in and zero a fresh buffer of the same size (the
    /// default). Smaller files are read, one `pread`.
    fn read_once(&self, path: &Path) -> io::Result<Mapping> {
        let file = OsFile { file: File::open(path)? };
        let len_bytes = file.len()?;
        if len_bytes < MAP_READ_MIN_BYTES {
            return read_into_memory(&file, len_bytes);
        }
        // SAFETY: the caller holds the store's lock (`Vfs::read_once`), so
        // no store writes the file while the mapping is read; the engine
        // reads it (recovery's check and replay) before its own recovery
        // cuts the file, and only ever appends to it otherwise. Another
        // process shrinking the file would be outside the engine's
        // contract, as for segments.
        match unsafe { memmap2::Mmap::map(&file.file) } {
            Ok(map) => Ok(Mapping::new(Arc::new(map))),
            // A file system that cannot map a file (some network and FUSE
            // ones) can still read it: the same bytes, the slower way.
            Err(_) => read_into_memory(&file, len_bytes),
        }
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    /// An advisory lock (`flock` on Unix, through `File::try_lock`) on the
    /// directory itself, then on `dir/LOCK`. Each lock belongs to its open
    /// file, not the process, so a second open in this same process
    /// conflicts too, and it dies with the process however it ends.
    ///
    /// The directory's lock is the one that decides (see the module doc):
    /// it is taken first, so a refused opener has created nothing. `LOCK`
    /// is locked too, so an opener that locks only `LOCK` (this engine
    /// before issue 22) is still kept out while `LOCK` is in place. `LOCK`
    /// is created if missing and never deleted or written. A shared lock
    /// opens an existing `LOCK` read-only (so a read-only opener works
    /// where it may not write) and creates it only if it is missing.
    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        let dir_file = File::open(dir)?;
        try_lock(&dir_file, mode, dir)?;
        let path = dir.join(LOCK_FILE);
        // Never truncated: another opener may hold a lock on this file.
        let create = || OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path);
        let file = match mode {
            LockMode::Exclusive => create()?,
            LockMode::Shared => match File::open(&path) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => create()?,
                other => other?,
            },
        };
        try_lock(&file, mode, dir)?;
        Ok(LockGuard::new(dir, mode, OsLock { dir: dir_file, file }))
    }
}

impl VfsFile for OsFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.file.read_at(buf, offset_bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset_bytes)
    }

    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        self.file.set_len(len_bytes)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::OsVfs;
    use crate::{OpenMode, Vfs};

    /// The real disk's listing splits as the simulated one's does: files
    /// in `list_dir`, directories in `list_subdirs` (here, the one module
    /// of `vfs` allowed to touch `std::fs`, for the cleanup).
    #[test]
    fn list_subdirs_names_the_directories_and_list_dir_the_files() {
        let os = OsVfs;
        let real = std::env::temp_dir().join(format!("vfs-subdirs-{}", std::process::id()));
        os.create_dir_all(&real.join("sub")).unwrap();
        os.open(&real.join("file"), OpenMode::Create).unwrap();
        assert_eq!(os.list_subdirs(&real).unwrap(), ["sub"]);
        assert_eq!(os.list_dir(&real).unwrap(), ["file"]);
        assert!(os.list_subdirs(Path::new("/no/such/dir")).is_err());
        std::fs::remove_dir_all(&real).unwrap();
    }
}
