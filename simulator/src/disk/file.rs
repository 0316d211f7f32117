//! [`SimFile`]: an open file on the simulated disk, and the faults its
//! reads, writes and fsyncs can meet.
//!
//! A handle is an inode number plus the epoch it was opened in. Power loss
//! and process restart bump the epoch, so every handle from before fails
//! from then on, as a real file descriptor dies with its process — the
//! engine cannot keep writing into a disk that has been rebuilt under it.

use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use vfs::VfsFile;

use super::data::{to_usize, InodeId, MAX_FILE_BYTES};
use super::faults::{ArmedFault, Faults, Targets, WriteFault};
use super::ops::Disk;
use super::silent::Fate;
use crate::trace::{FaultKind, IoKind};

pub(super) fn lock(disk: &Mutex<Disk>) -> MutexGuard<'_, Disk> {
    // A panic while holding the lock is a test failure already; the state
    // is plain data and stays readable for the report.
    disk.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An open file (see the module doc).
pub(super) struct SimFile {
    pub disk: Arc<Mutex<Disk>>,
    pub epoch: u64,
    pub inode: InodeId,
    /// The trace's id for the path it was opened by.
    pub name: u32,
    pub writable: bool,
}

fn stale() -> io::Error {
    io::Error::other("stale handle: the disk lost power or the process restarted since it was opened")
}

fn eio(what: &'static str) -> io::Error {
    io::Error::other(what)
}

fn read_only() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "file opened read-only")
}

/// The end of an extent, or `InvalidInput` past the disk's file size limit.
fn extent_end(offset_bytes: u64, len_bytes: u64) -> io::Result<u64> {
    match offset_bytes.checked_add(len_bytes) {
        Some(end) if end <= MAX_FILE_BYTES => Ok(end),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, "extent past the simulated disk's file size limit")),
    }
}

fn no_space() -> io::Error {
    io::Error::new(io::ErrorKind::StorageFull, "no space left on the simulated disk")
}

/// The bytes of `buf`, read at `offset_bytes`, that lie in `sector` hold
/// the bytes of the sector at `other_at` of `image` instead (zeros past
/// its end): a misdirected read.
fn misread_into(buf: &mut [u8], offset_bytes: u64, sector: Range<u64>, other_at: u64, image: &[u8]) {
    let start = sector.start.max(offset_bytes);
    let end = sector.end.min(offset_bytes + buf.len() as u64);
    for at in start..end {
        let from = other_at + (at - sector.start);
        buf[to_usize(at - offset_bytes)] = usize::try_from(from).ok().and_then(|i| image.get(i)).copied().unwrap_or(0);
    }
}

/// After a write to `inode` at `extent` (the file was `file_len_bytes`
/// long before it) succeeded: whether the drive will lose or misdirect it
/// when it writes it (`silent.rs`), drawn from the operation's stream.
/// Counted and traced now, but it does not mark the operation faulted:
/// nothing failed, which is the point.
fn draw_silent_write(disk: &mut Disk, index: u64, inode: InodeId, extent: Range<u64>, file_len_bytes: u64) {
    let len_bytes = extent.end - extent.start;
    let fate = match disk.faults.silent_write(&disk.config, len_bytes) {
        None => None,
        Some(false) => Some(Fate::Lost),
        Some(true) => {
            let recent_writes = disk.fs.inode(inode).silent.recent_writes.clone();
            let other_files: Vec<InodeId> = disk
                .fs
                .inodes
                .iter()
                .filter(|(id, i)| **id != inode && i.open_handles > 0)
                .map(|(id, _)| *id)
                .collect();
            let targets = Targets { recent_writes: &recent_writes, file_len_bytes, other_files: &other_files };
            Some(disk.faults.misdirect(&disk.config, extent.start, len_bytes, &targets))
        }
    };
    if disk.config.p_misdirected_write > 0.0 {
        disk.fs.inode_mut(inode).silent.note_write(extent.start, len_bytes);
    }
    if let Some(fate) = fate {
        disk.fs.set_fate(inode, fate);
        let kind = if fate == Fate::Lost { FaultKind::LostWrite } else { FaultKind::MisdirectedWrite };
        disk.note_fault(index, kind);
    }
}

impl SimFile {
    fn check_epoch(&self, disk: &Disk) -> io::Result<()> {
        if disk.epoch == self.epoch {
            Ok(())
        } else {
            Err(stale())
        }
    }

    /// What fails a read before it reads: a stale handle, an EIO.
    fn read_may_start(&self, disk: &mut Disk, index: u64) -> io::Result<()> {
        self.check_epoch(disk)?;
        if disk.faults.take_armed(index) || disk.faults.read(&disk.config) {
            disk.inject(index, FaultKind::ReadEio);
            return Err(eio("read failed (simulated EIO)"));
        }
        Ok(())
    }

    /// What changes the bytes a read at `offset_bytes` returned (`read`,
    /// all of them) on their way: a flipped bit, a misdirected sector.
    fn read_faults(&self, disk: &mut Disk, index: u64, offset_bytes: u64, read: &mut [u8]) {
        if let Some(bit) = disk.faults.bitflip(&disk.config, self.inode, offset_bytes, read.len()) {
            read[bit / 8] ^= 1 << (bit % 8);
            disk.inject(index, FaultKind::BitFlip);
        }
        let file_len_bytes = disk.fs.inode(self.inode).volatile.len() as u64;
        if let Some((sector_at, other_at)) =
            disk.faults.misread(&disk.config, self.inode, offset_bytes, read.len(), file_len_bytes)
        {
            let sector_bytes = disk.config.sector_bytes;
            let image = &disk.fs.inode(self.inode).volatile;
            misread_into(read, offset_bytes, sector_at..sector_at + sector_bytes, other_at, image);
            disk.inject(index, FaultKind::MisdirectedRead);
        }
    }

    /// The file's first `len_bytes`, read as [`vfs::read_exact_at`] reads
    /// them from offset 0 into a zeroed buffer — I/O for I/O, fault for
    /// fault, so the trace is the same — but built from the file's bytes
    /// with no zero-fill first: the log, read whole at every open.
    pub(super) fn read_whole(&self, len_bytes: u64) -> io::Result<Vec<u8>> {
        let len = usize::try_from(len_bytes).map_err(|_| io::Error::other("file too large"))?;
        let mut bytes = Vec::new();
        if len == 0 {
            // `read_exact_at` reads nothing into an empty buffer.
            return Ok(bytes);
        }
        let mut disk = lock(&self.disk);
        disk.next_detail.inode = Some(self.inode);
        let n = disk.run(IoKind::Read, self.name, 0, len_bytes, |disk, index| {
            self.read_may_start(disk, index)?;
            let image = &disk.fs.inode(self.inode).volatile;
            bytes.reserve_exact(len);
            bytes.extend_from_slice(&image[..len.min(image.len())]);
            self.read_faults(disk, index, 0, &mut bytes);
            Ok(bytes.len())
        })?;
        drop(disk);
        assert!(n <= len, "a read returns at most the bytes asked for");
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read"));
        }
        if n < len {
            // The file shrank since its length was taken: read on, as
            // `read_exact_at` would, until it says where the bytes ran out.
            bytes.resize(len, 0);
            vfs::read_exact_at(self, n as u64, &mut bytes[n..])?;
        }
        debug_assert_eq!(bytes.len(), len);
        Ok(bytes)
    }

    fn check_writable(&self, disk: &Disk) -> io::Result<()> {
        self.check_epoch(disk)?;
        if self.writable {
            Ok(())
        } else {
            Err(read_only())
        }
    }
}

impl VfsFile for SimFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut disk = lock(&self.disk);
        disk.next_detail.inode = Some(self.inode);
        disk.run(IoKind::Read, self.name, offset_bytes, buf.len() as u64, |disk, index| {
            self.read_may_start(disk, index)?;
            let n = disk.fs.read(self.inode, offset_bytes, buf);
            self.read_faults(disk, index, offset_bytes, &mut buf[..n]);
            Ok(n)
        })
    }

    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.next_detail.inode = Some(self.inode);
        disk.trace.note_written(offset_bytes, data);
        disk.run(IoKind::Write, self.name, offset_bytes, data.len() as u64, |disk, index| {
            self.check_writable(disk)?;
            let end_bytes = extent_end(offset_bytes, data.len() as u64)?;
            let growth_bytes = disk.fs.growth_bytes(self.inode, end_bytes);
            let armed = disk.faults.take_armed_write(index);
            let full = disk.faults.no_space(&disk.config, disk.fs.volatile_bytes(), growth_bytes);
            if full || armed == Some(ArmedFault::NoSpace) {
                disk.inject(index, FaultKind::NoSpace);
                return Err(no_space());
            }
            let fault = match armed {
                Some(kind) => Faults::armed_write(&disk.config, kind, offset_bytes, data.len() as u64),
                None => disk.faults.write(&disk.config, offset_bytes, data.len() as u64),
            };
            match fault {
                WriteFault::None => {
                    let file_len_bytes = disk.fs.inode(self.inode).volatile.len() as u64;
                    disk.fs.write(self.inode, offset_bytes, data);
                    draw_silent_write(disk, index, self.inode, offset_bytes..end_bytes, file_len_bytes);
                    Ok(())
                }
                WriteFault::Eio => {
                    disk.inject(index, FaultKind::WriteEio);
                    Err(eio("write failed (simulated EIO)"))
                }
                WriteFault::Short { keep_bytes } => {
                    let kept = usize::try_from(keep_bytes).expect("a prefix of an in-memory slice");
                    disk.fs.write(self.inode, offset_bytes, &data[..kept]);
                    disk.inject(index, FaultKind::ShortWrite);
                    Err(eio("write failed after a short write (simulated EIO)"))
                }
            }
        })
    }

    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        let mut disk = lock(&self.disk);
        disk.next_detail.inode = Some(self.inode);
        disk.run(IoKind::SetLen, self.name, 0, len_bytes, |disk, index| {
            self.check_writable(disk)?;
            extent_end(len_bytes, 0)?;
            let growth_bytes = disk.fs.growth_bytes(self.inode, len_bytes);
            if disk.faults.no_space(&disk.config, disk.fs.volatile_bytes(), growth_bytes) {
                disk.inject(index, FaultKind::NoSpace);
                return Err(no_space());
            }
            disk.fs.set_len(self.inode, len_bytes);
            Ok(())
        })
    }

    fn len(&self) -> io::Result<u64> {
        let mut disk = lock(&self.disk);
        disk.next_detail.inode = Some(self.inode);
        disk.run(IoKind::Len, self.name, 0, 0, |disk, _| {
            self.check_epoch(disk)?;
            Ok(disk.fs.inode(self.inode).volatile.len() as u64)
        })
    }

    fn sync(&mut self) -> io::Result<()> {
        self.sync_as(IoKind::Sync)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.sync_as(IoKind::SyncData)
    }
}

impl SimFile {
    /// An fsync (`IoKind::Sync`) or an fdatasync (`IoKind::SyncData`): the
    /// same faults and the same data made durable; of the file's names,
    /// what the profile's rule for that kind says (`profile.rs`).
    fn sync_as(&mut self, kind: IoKind) -> io::Result<()> {
        debug_assert!(matches!(kind, IoKind::Sync | IoKind::SyncData));
        let mut disk = lock(&self.disk);
        disk.next_detail.inode = Some(self.inode);
        disk.run(kind, self.name, 0, 0, |disk, index| {
            self.check_epoch(disk)?;
            if disk.shut_down && disk.faults.active() {
                // A shut-down file system writes nothing back and leaves
                // the file's dirty pages as they are, readable until the
                // remount drops the page cache (ext4's writepages and XFS's
                // discard both return at once once shut down:
                // `FILESYSTEMS.md`); every later fsync fails too.
                disk.inject(index, FaultKind::FsyncEio);
                return Err(eio("fsync failed: the file system shut down after a failed directory fsync"));
            }
            // fsyncgate: after a failure the next fsync succeeds — having
            // lost the dirty data, it has nothing left to fail on.
            let retry = std::mem::take(&mut disk.fs.inode_mut(self.inode).fsync_failed);
            if !retry && (disk.faults.take_armed(index) || disk.faults.fsync(&disk.config)) {
                disk.fs.drop_dirty(self.inode);
                disk.dirty_drops += 1;
                disk.fs.inode_mut(self.inode).fsync_failed = true;
                disk.inject(index, FaultKind::FsyncEio);
                return Err(eio("fsync failed (simulated EIO); the file's dirty data was dropped"));
            }
            let set_len_seq = disk.fs.newest_pending_set_len(self.inode);
            disk.fs.sync(self.inode);
            let profile = disk.config.fs;
            let rule = if kind == IoKind::Sync { profile.fsync_names } else { profile.fdatasync_names };
            disk.fs.persist_names(self.inode, rule);
            // The journal commit that made the file's length durable made
            // every metadata change before it durable too.
            if let Some(seq) = set_len_seq.filter(|_| disk.config.fs.set_len_journaled) {
                disk.fs.persist_dir_changes_before(seq);
            }
            disk.note_fsync(self.inode, index);
            Ok(())
        })
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut disk = lock(&self.disk);
        // A handle from an older epoch was already forgotten.
        if disk.epoch == self.epoch {
            disk.fs.close(self.inode);
        }
    }
}
