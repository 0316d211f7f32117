//! [`VfsBackend`]: redb's `StorageBackend` over one file of our [`Vfs`],
//! so that every byte redb reads or writes, every `set_len` and every
//! `sync_data` goes through the simulated disk with its whole fault model.
//!
//! The seam is thin on purpose: each trait method is one [`VfsFile`] call
//! (a read is a loop of them until the buffer is full), and every
//! `io::Error` the disk returns reaches redb unchanged — its kind and its
//! message — because redb's own handling (latching the first I/O failure,
//! `PreviousIo` afterwards) is part of what is under test. Nothing here
//! retries, caches or reorders.
//!
//! redb demands `Send + Sync` and calls the backend through `&self`; a
//! [`VfsFile`] is `Send` and writes through `&mut self`. A `Mutex` bridges
//! the two. The simulator runs one seed on one thread, so the lock is never
//! contended and imposes no order of its own: the order of I/O is the order
//! redb issues it in. With `--interleave` a reader's step runs on that same
//! thread inside redb's commit, so it may run only where no lock is held:
//! before the `sync_data` of a commit's flush, which follows a write of the
//! header (offset 0), takes this one (`Vfs::pause_point`, announced to the
//! disk the file came from, [`VfsBackend::announcing_to`]). Not before
//! every `sync_data`: redb 4.6 also syncs when it grows the file
//! (`TransactionalMemory::grow`), under its `state` lock, which a reader's
//! `begin_read` takes (`latest_committed_snapshot`).
//!
//! The planted bugs of the redb target ([`Plant`]; the adapter names them)
//! live here too, as switches on the one backend type: redb takes the
//! backend by value, so a wrapper would be a second type everywhere.

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use redb::StorageBackend;
use vfs::{read_exact_at, Vfs, VfsFile};

/// A bug planted under redb (`--plant redb-no-sync`, `redb-late-write`),
/// or in the application's use of it (`redb-reader-unpinned`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plant {
    /// `sync_data` returns `Ok` and syncs nothing: every commit redb calls
    /// durable stays in the page cache, and a power loss takes it.
    NoSync,
    /// Each write is held back until the next backend call, and a
    /// `sync_data` syncs first and only then issues the write it held: the
    /// last write before every sync lands after it (in redb's 1-phase
    /// commit, that is a header write). Reads see held writes, as a page
    /// cache would.
    LateWrite,
    /// Not in the backend: the adapter serves each read of a reader from a
    /// read transaction of its own, begun for that read, instead of the one
    /// the reader began — read committed, not a snapshot: the mistake of an
    /// application (or a connection pool) that takes a transaction per
    /// query. redb's MVCC lives above the backend (readers pin a root in
    /// memory; a freed page is reused only after every reader that could
    /// reference it ended), so no page a backend could serve wrongly breaks
    /// a reader alone: the writer reads the same pages.
    ReaderUnpinned,
}

/// A write a [`Plant::LateWrite`] backend holds back.
struct HeldWrite {
    offset_bytes: u64,
    data: Vec<u8>,
}

/// The open file, or nothing once redb has closed the backend.
struct Inner {
    file: Option<Box<dyn VfsFile>>,
    held: Option<HeldWrite>,
    /// The header was written since the last `sync_data`: the next one is
    /// a commit's flush (see the module doc).
    header_written: bool,
}

/// redb's storage: one file of the simulated disk (see the module doc).
pub struct VfsBackend {
    inner: Mutex<Inner>,
    plant: Option<Plant>,
    /// For `Debug` (redb formats its backend into log lines).
    path: String,
    /// Where each `sync_data` announces a pause point before it locks.
    announce: Option<Arc<dyn Vfs>>,
}

impl fmt::Debug for VfsBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VfsBackend").field("path", &self.path).field("plant", &self.plant).finish()
    }
}

fn closed() -> io::Error {
    io::Error::other("the redb backend was closed")
}

impl VfsBackend {
    /// A backend over `file` (opened for writing), named `path` in debug
    /// output, with `plant` switched on if given.
    pub fn new(file: Box<dyn VfsFile>, path: &str, plant: Option<Plant>) -> Self {
        let inner = Mutex::new(Inner { file: Some(file), held: None, header_written: false });
        VfsBackend { inner, plant, path: path.to_string(), announce: None }
    }

    /// Announce a pause point to `vfs` (the disk the file came from)
    /// before each `sync_data` of a commit's flush, where redb and this
    /// backend hold no lock a reader takes (see the module doc).
    pub fn announcing_to(mut self, vfs: Arc<dyn Vfs>) -> Self {
        self.announce = Some(vfs);
        self
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic in redb while it held this lock is a failure the run
        // reports already; the file handle inside is still usable.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    fn file(&mut self) -> io::Result<&mut Box<dyn VfsFile>> {
        self.file.as_mut().ok_or_else(closed)
    }

    /// Issue the held write, if any (a `LateWrite` backend's next call).
    fn release_held(&mut self) -> io::Result<()> {
        if let Some(held) = self.held.take() {
            self.file()?.write_at(held.offset_bytes, &held.data)?;
        }
        Ok(())
    }
}

impl StorageBackend for VfsBackend {
    fn len(&self) -> io::Result<u64> {
        let mut inner = self.lock();
        let len_bytes = inner.file()?.len()?;
        let held_end = inner.held.as_ref().map_or(0, |h| h.offset_bytes + h.data.len() as u64);
        Ok(len_bytes.max(held_end))
    }

    fn read(&self, offset_bytes: u64, out: &mut [u8]) -> io::Result<()> {
        let mut inner = self.lock();
        let Inner { file, held, .. } = &mut *inner;
        let file = file.as_ref().ok_or_else(closed)?;
        let Some(held) = held else {
            // The trait asks for an error when the range runs past the
            // end; `read_exact_at` fails with `UnexpectedEof` there.
            return read_exact_at(file.as_ref(), offset_bytes, out);
        };
        // A held write is served from memory, as a page cache would, even
        // where it lies past the file's end (a hole before it reads as
        // zeros).
        let file_len_bytes = file.len()?;
        let end_bytes = offset_bytes + out.len() as u64;
        if end_bytes > file_len_bytes.max(held.offset_bytes + held.data.len() as u64) {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the file"));
        }
        let from_file = file_len_bytes.saturating_sub(offset_bytes).min(out.len() as u64) as usize;
        read_exact_at(file.as_ref(), offset_bytes, &mut out[..from_file])?;
        out[from_file..].fill(0);
        overlay(out, offset_bytes, held);
        Ok(())
    }

    fn set_len(&self, len_bytes: u64) -> io::Result<()> {
        let mut inner = self.lock();
        inner.release_held()?;
        inner.file()?.set_len(len_bytes)
    }

    fn sync_data(&self) -> io::Result<()> {
        let header_written = std::mem::take(&mut self.lock().header_written);
        if let (Some(vfs), true) = (&self.announce, header_written) {
            vfs.pause_point();
        }
        let mut inner = self.lock();
        match self.plant {
            Some(Plant::NoSync) => Ok(()),
            Some(Plant::LateWrite) => {
                inner.file()?.sync_data()?;
                inner.release_held()
            }
            // redb's own file backend calls `File::sync_data`: fdatasync.
            Some(Plant::ReaderUnpinned) | None => inner.file()?.sync_data(),
        }
    }

    fn write(&self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        let mut inner = self.lock();
        inner.header_written |= offset_bytes == 0;
        if self.plant == Some(Plant::LateWrite) {
            inner.release_held()?;
            inner.file()?;
            inner.held = Some(HeldWrite { offset_bytes, data: data.to_vec() });
            return Ok(());
        }
        inner.file()?.write_at(offset_bytes, data)
    }

    fn close(&self) -> io::Result<()> {
        let mut inner = self.lock();
        let released = inner.release_held();
        // Dropping the handle is the close; the simulated disk forgets it.
        inner.file = None;
        released
    }
}

/// Copy the part of `held` that overlaps `out` (read at `offset_bytes`)
/// over it.
fn overlay(out: &mut [u8], offset_bytes: u64, held: &HeldWrite) {
    let start = offset_bytes.max(held.offset_bytes);
    let end = (offset_bytes + out.len() as u64).min(held.offset_bytes + held.data.len() as u64);
    if start < end {
        let (out_at, held_at, len) =
            ((start - offset_bytes) as usize, (start - held.offset_bytes) as usize, (end - start) as usize);
        out[out_at..out_at + len].copy_from_slice(&held.data[held_at..held_at + len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use vfs::{MemVfs, OpenMode, Vfs};

    fn backend(plant: Option<Plant>) -> (MemVfs, VfsBackend) {
        let vfs = MemVfs::new();
        vfs.create_dir_all(Path::new("/db")).unwrap();
        let file = vfs.open(Path::new("/db/f"), OpenMode::Create).unwrap();
        (vfs, VfsBackend::new(file, "/db/f", plant))
    }

    #[test]
    fn reads_writes_and_lengths_pass_through() {
        let (_vfs, b) = backend(None);
        b.set_len(8).unwrap();
        b.write(2, b"abc").unwrap();
        let mut out = [0u8; 8];
        b.read(0, &mut out).unwrap();
        assert_eq!(&out, b"\0\0abc\0\0\0");
        assert_eq!(b.len().unwrap(), 8);
        let err = b.read(6, &mut [0u8; 4]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "a read past the end is an error, as redb asks");
        b.sync_data().unwrap();
        b.close().unwrap();
        assert!(b.len().is_err(), "a closed backend refuses");
    }

    #[test]
    fn a_late_write_backend_serves_its_held_write_and_issues_it_after_the_sync() {
        let (vfs, b) = backend(Some(Plant::LateWrite));
        b.write(0, b"head").unwrap();
        let mut out = [0u8; 4];
        b.read(0, &mut out).unwrap();
        assert_eq!(&out, b"head", "a held write is visible");
        assert_eq!(b.len().unwrap(), 4);
        b.write(4, b"tail").unwrap();
        let on_disk = vfs::read_whole(&vfs, Path::new("/db/f")).unwrap();
        assert_eq!(on_disk, b"head", "the earlier write was released by the later one");
        b.sync_data().unwrap();
        let on_disk = vfs::read_whole(&vfs, Path::new("/db/f")).unwrap();
        assert_eq!(on_disk, b"headtail", "the held write lands after the sync");
    }
}
