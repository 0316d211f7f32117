//! The VFS seam: the only door between the engine and a file system.
//!
//! Every byte the engine reads or writes, every fsync, rename, unlink,
//! directory listing and directory fsync goes through [`Vfs`]. Two things
//! follow from keeping this door narrow:
//!
//! - the simulator can swap in a disk that lives in memory, remembers which
//!   bytes are durable, and loses, tears or corrupts the rest at a crash;
//! - a reviewer can see every durability decision the engine makes by
//!   reading its calls to `sync` and `sync_dir` — nothing is hidden in a
//!   buffered writer or a `Drop` impl.
//!
//! The interface follows POSIX semantics, because that is what the engine
//! must survive on a real disk:
//!
//! - data written to a file is durable only after [`VfsFile::sync`];
//! - creating, renaming or unlinking a file changes its *directory*, and
//!   that change is durable only after [`Vfs::sync_dir`] on the parent;
//! - a rename is atomic (after a crash the name holds the old file or the
//!   new one, never a mix).
//!
//! Beside files, the seam carries one thing that is not on the disk: the
//! advisory lock a store holds on its directory ([`Vfs::lock`], `lock.rs`),
//! so a second opener is refused by the real and the simulated disk alike.
//!
//! Errors are plain [`std::io::Error`]s: an engine wraps them into its
//! own typed errors (segsim's `engine::Error::Io` names the operation and
//! the path).
//!
//! The seam is a crate of its own so that what depends on it depends on
//! nothing else: the segsim engine, the simulated disk and the target kit
//! a stranger's engine is tested with all share this one interface and
//! none of each other. Time goes through [`clock::Clock`] the same way.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod clock;
mod interpose;
mod lock;
mod mapping;
mod mem;
mod os;

use std::ffi::OsString;
use std::io;
use std::path::Path;

pub use interpose::Interpose;
pub use lock::{lock_conflict, Holders, LockGuard, LockMode, LockTable, LOCK_FILE};
pub use mapping::Mapping;
pub use mem::MemVfs;
pub use os::{OsVfs, MAP_READ_MIN_BYTES};

/// How [`Vfs::open`] treats an existing or missing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    Write,
    /// Read and write; create the file (empty) if it is missing.
    Create,
    /// Read and write; create the file, or cut an existing one to length 0.
    Truncate,
}

/// A file system as the engine sees it. Paths are absolute or relative to
/// the process (OS) or to the simulated disk's root (sim); the engine only
/// ever builds them by joining names onto the directory it was opened on.
pub trait Vfs: Send + Sync {
    /// Open (or create, per `mode`) the file at `path`.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>>;

    /// Atomically replace `to` with `from`. Durable after `sync_dir`. A
    /// directory renames with everything under it, replacing only an
    /// empty directory, as `rename(2)` does; into another directory too
    /// (durable after `sync_dir` of either parent on the simulated disk).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Remove the name `path`. Durable after `sync_dir`.
    fn unlink(&self, path: &Path) -> io::Result<()>;

    /// The names (not paths) of the regular files in `dir`, sorted
    /// bytewise so that every caller sees one order on every platform.
    /// Names are bytes, not text: a name another program wrote need not be
    /// UTF-8, and a caller that acts on a listed name (unlinks it, opens it)
    /// must act on exactly these bytes, never on a lossy rendering of them.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>>;

    /// The names of the directories in `dir`, sorted bytewise as
    /// [`Vfs::list_dir`]'s: for a caller that serves a program's whole
    /// listing of `dir` (the stdfs layer), which asks it right after
    /// `list_dir`. On the simulated disk it is no I/O of its own (the
    /// listing's one I/O is `list_dir`'s, which it rides with: traced and
    /// faulted there), so a program's listing costs the trace what it did
    /// when only files were listed. A file system that cannot say answers
    /// `Unsupported`, and the caller must refuse rather than list files only.
    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let _ = dir;
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Create `dir` and any missing parents. Durable after `sync_dir` of
    /// each parent; the engine calls this only for its own root.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Remove the empty directory `dir`, as `rmdir(2)`: durable after
    /// `sync_dir` of its parent. A file system that cannot answers
    /// `Unsupported`, and a caller serving a program must refuse loudly.
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let _ = dir;
        Err(io::ErrorKind::Unsupported.into())
    }

    /// Make the entry changes (create, rename, unlink; a subdirectory's
    /// removal or rename) in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// A read-only view of the whole file at `path`, for immutable files
    /// (segments). The engine never writes a file it has mapped.
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping>;

    /// The whole file at `path` as it is now, read once: for a reader that
    /// checks every byte against a checksum and rereads with [`read_whole`]
    /// when one does not check (recovery's first read of the log). The
    /// caller holds the store's lock and drops the bytes before anything
    /// shrinks the file.
    ///
    /// The default opens the file and reads it into memory, one read; this
    /// is what the simulator's disk and every interposer see, so a
    /// transient fault on the read path strikes it as it would any read. A
    /// real disk may map a large file instead ([`OsVfs`]): a fresh buffer
    /// the size of a large log costs a page fault per page to fill, which
    /// was a third of a 33 MB replay.
    fn read_once(&self, path: &Path) -> io::Result<Mapping> {
        let file = self.open(path, OpenMode::Read)?;
        let len_bytes = file.len()?;
        read_into_memory(file.as_ref(), len_bytes)
    }

    /// Whether `path` names an existing file.
    fn exists(&self, path: &Path) -> io::Result<bool>;

    /// Lock the directory `dir` (which must exist) in `mode`, without
    /// waiting, until the returned guard is dropped. A holder whose mode
    /// conflicts (`Exclusive` with anyone, `Shared` with an `Exclusive`),
    /// in this process or any other, makes it fail with kind
    /// [`io::ErrorKind::WouldBlock`] ([`lock_conflict`]); nothing changes
    /// then. Locks are not durable: a crash or restart of the holder
    /// releases them.
    ///
    /// There is deliberately no default: a file system that cannot lock
    /// must say so with an error, never hand out a guard that holds
    /// nothing, or two writers would share a store unnoticed.
    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard>;

    /// Names the phase of a multi-step protocol the engine just reached
    /// (segsim's `engine::Phase::as_str`, or a name a kit target declares).
    /// The simulator records it in the trace and can aim a crash at it; on
    /// a real disk it does nothing.
    fn mark(&self, _phase: &'static str) {}

    /// Names the engine's thread of control the next calls come from (0
    /// for the engine call's own; an interposition layer's scheduler says
    /// which of an engine's threads runs). The simulator's hazard watch
    /// takes an fsync as relying only on files its own thread synced; on a
    /// real disk it does nothing.
    fn act_as(&self, _thread: u32) {}

    /// The engine says another client's step may run here: it is about to
    /// make an I/O and holds none of its own locks (the kit's
    /// `--interleave` for an engine that holds a lock across its I/Os:
    /// `simkit`'s `pause_vfs.rs`). The disk and a real file system do
    /// nothing.
    fn pause_point(&self) {}
}

/// An open file. Reads and writes are positional: the engine tracks its
/// own offsets, so there is no hidden cursor to get out of step.
pub trait VfsFile: Send {
    /// Read up to `buf.len()` bytes at `offset_bytes`; returns how many
    /// were read (fewer only at end of file).
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// Write all of `data` at `offset_bytes`, extending the file if needed.
    /// On error, any prefix of `data` may have been written.
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()>;

    /// Cut or extend (with zeros) the file to `len_bytes`.
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()>;

    /// The file's current length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Make this file's data and length durable. After an error the
    /// file's unsynced data may be lost even if a later sync succeeds
    /// (fsyncgate), so the engine treats a failed sync as fatal.
    fn sync(&mut self) -> io::Result<()>;

    /// Make this file's data and length durable, and not necessarily
    /// anything else about it (`fdatasync(2)`): on some file systems its
    /// own new name is not durable after it where it would be after
    /// [`VfsFile::sync`] (the simulator's profiles, FILESYSTEMS.md). A
    /// failure is as fatal as [`VfsFile::sync`]'s. By default a full
    /// [`VfsFile::sync`], which promises at least as much.
    fn sync_data(&mut self) -> io::Result<()> {
        self.sync()
    }

    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// How many times [`read_stable`] reads before giving up on agreement.
pub const STABLE_READ_ATTEMPTS: usize = 6;

/// Read the whole file at `path` into memory, with [`read_stable`]. The
/// size comes from the file system, not from bytes inside the file, so it
/// is not an unchecked length.
pub fn read_whole(vfs: &dyn Vfs, path: &Path) -> io::Result<Vec<u8>> {
    let file = vfs.open(path, OpenMode::Read)?;
    let len_bytes = file.len()?;
    read_stable(file.as_ref(), len_bytes)
}

/// The first `len_bytes` of `file`, read into memory: [`Vfs::read_once`]
/// as a file system that does not map a file does it. The length comes
/// from the file system, not from bytes inside the file.
pub(crate) fn read_into_memory(file: &dyn VfsFile, len_bytes: u64) -> io::Result<Mapping> {
    let len = usize::try_from(len_bytes).map_err(|_| io::Error::other("file too large"))?;
    let mut bytes = vec![0u8; len];
    read_exact_at(file, 0, &mut bytes)?;
    Ok(Mapping::from_vec(bytes))
}

/// Read the first `len_bytes` of `file` until two reads in a row agree —
/// three, once any two have disagreed.
///
/// Recovery *acts* on what it reads: an invalid frame in the log is taken
/// for a torn tail and cut off, an invalid header for damage. A transient
/// fault on the read path (a bit flipped on the bus, a bad DMA) must
/// therefore not be mistaken for bytes on the disk, or a healthy log would
/// lose its tail or be refused. Bytes that read the same twice are the
/// disk's, unless reads have been seen to flip: then two flips of the same
/// bit in a row could agree (in a small file, one time in `8 × len`), and
/// a third read must agree too. Bytes that never settle are an I/O error.
pub fn read_stable(file: &dyn VfsFile, len_bytes: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len_bytes).map_err(|_| io::Error::other("file too large"))?;
    let mut bytes = vec![0u8; len];
    read_exact_at(file, 0, &mut bytes)?;
    let mut piece = vec![0u8; len.min(STABLE_PIECE_BYTES)];
    let mut agreeing_needed = 1;
    let mut agreeing = 0;
    for _ in 1..STABLE_READ_ATTEMPTS {
        if reread_agrees(file, &mut bytes, &mut piece)? {
            agreeing += 1;
            if agreeing == agreeing_needed {
                return Ok(bytes);
            }
        } else {
            (agreeing_needed, agreeing) = (2, 0);
        }
    }
    Err(io::Error::other(format!("{STABLE_READ_ATTEMPTS} reads of the same bytes never agreed")))
}

/// Rereads after the first compare in pieces of this size, so checking a
/// file costs one buffer of this size rather than a second copy of it.
const STABLE_PIECE_BYTES: usize = 1 << 20;

/// Read `bytes.len()` bytes of `file` again, piece by piece, and say
/// whether every piece equals `bytes`. Either way `bytes` then holds this
/// latest read (a piece that differs replaces its part), so the next
/// attempt compares two consecutive whole reads, as a single pair of full
/// buffers would.
fn reread_agrees(file: &dyn VfsFile, bytes: &mut [u8], piece: &mut [u8]) -> io::Result<bool> {
    assert!(!piece.is_empty() || bytes.is_empty());
    let mut agreed = true;
    let mut at_bytes = 0usize;
    while at_bytes < bytes.len() {
        let len = piece.len().min(bytes.len() - at_bytes);
        let fresh = &mut piece[..len];
        read_exact_at(file, at_bytes as u64, fresh)?;
        let held = &mut bytes[at_bytes..at_bytes + len];
        if held != fresh {
            held.copy_from_slice(fresh);
            agreed = false;
        }
        at_bytes += len;
    }
    Ok(agreed)
}

/// Fill `buf` from `offset_bytes`, or fail with `UnexpectedEof`.
pub fn read_exact_at(file: &dyn VfsFile, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()> {
    let mut done = 0usize;
    while done < buf.len() {
        let n = file.read_at(offset_bytes + done as u64, &mut buf[done..])?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read"));
        }
        done += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A file whose read calls number `0..noisy_calls` return the byte at
    /// `noisy_at` with one bit flipped (a different bit each call): a
    /// transient fault on the read path.
    struct Noisy {
        bytes: Vec<u8>,
        noisy_at: usize,
        /// Read calls `first_noisy..noisy_calls` flip a bit.
        first_noisy: u64,
        noisy_calls: u64,
        /// Flip the same bit every time (else a different bit per call).
        same_bit: bool,
        calls: Cell<u64>,
    }

    impl Noisy {
        fn new(len: usize, noisy_at: usize, noisy_calls: u64) -> Noisy {
            let bytes = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            Noisy { bytes, noisy_at, first_noisy: 0, noisy_calls, same_bit: false, calls: Cell::new(0) }
        }
    }

    impl VfsFile for Noisy {
        fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
            let call = self.calls.get();
            self.calls.set(call + 1);
            let start = offset_bytes as usize;
            let len = buf.len().min(self.bytes.len().saturating_sub(start));
            buf[..len].copy_from_slice(&self.bytes[start..start + len]);
            let noisy = (self.first_noisy..self.noisy_calls).contains(&call);
            if noisy && (start..start + len).contains(&self.noisy_at) {
                buf[self.noisy_at - start] ^= 1 << if self.same_bit { 3 } else { call % 8 };
            }
            Ok(len)
        }
        fn write_at(&mut self, _: u64, _: &[u8]) -> io::Result<()> {
            unreachable!("read-only")
        }
        fn set_len(&mut self, _: u64) -> io::Result<()> {
            unreachable!("read-only")
        }
        fn len(&self) -> io::Result<u64> {
            Ok(self.bytes.len() as u64)
        }
        fn sync(&mut self) -> io::Result<()> {
            unreachable!("read-only")
        }
    }

    const LEN: usize = 2 * STABLE_PIECE_BYTES + 12_345;

    #[test]
    fn a_quiet_file_reads_in_two_passes() {
        let file = Noisy::new(LEN, 0, 0);
        assert_eq!(read_stable(&file, LEN as u64).unwrap(), file.bytes);
        assert_eq!(file.calls.get(), 1 + 3, "one whole read, then three pieces");
        let empty = Noisy::new(0, 0, 0);
        assert_eq!(read_stable(&empty, 0).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn a_transient_flip_anywhere_is_read_past() {
        // Noisy in the first read only, in the first, middle or last piece.
        for noisy_at in [0, STABLE_PIECE_BYTES + 7, LEN - 1] {
            let file = Noisy::new(LEN, noisy_at, 1);
            assert_eq!(read_stable(&file, LEN as u64).unwrap(), file.bytes, "flip at {noisy_at}");
        }
        // Noisy in the whole read and in the piece of the first reread
        // that holds it: two rereads later, two reads agree.
        let file = Noisy::new(LEN, STABLE_PIECE_BYTES + 7, 3);
        assert_eq!(read_stable(&file, LEN as u64).unwrap(), file.bytes);
    }

    #[test]
    fn two_reads_flipping_the_same_bit_do_not_pass_for_the_disk() {
        // A small file: the first read is clean, the next two flip the
        // same bit and agree with each other. Once reads have disagreed,
        // a third must agree too.
        let len = 21;
        let file = Noisy { first_noisy: 1, noisy_calls: 3, same_bit: true, ..Noisy::new(len, 5, 0) };
        assert_eq!(read_stable(&file, len as u64).unwrap(), file.bytes);
    }

    #[test]
    fn bytes_that_never_settle_are_an_error() {
        let file = Noisy::new(LEN, LEN / 2, u64::MAX);
        let err = read_stable(&file, LEN as u64).unwrap_err();
        assert!(err.to_string().contains("never agreed"), "{err}");
    }
}
