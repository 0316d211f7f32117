//! Directory locks on the simulated disk: a store's one-owner rule, as a
//! process on a real machine would meet it.
//!
//! The disk keeps an [`vfs::LockTable`] (the engine's conflict
//! rules as data), and each [`LockGuard`] it hands out holds a `SimLock`:
//! the disk, the directory, the mode, and the *epoch* it was taken in.
//!
//! - While the guard lives, a conflicting lock on the same directory is
//!   refused with `WouldBlock`, so a second `Store::open` gets
//!   `Error::Locked`.
//! - Locks are not durable and a dead process holds nothing: power loss
//!   and process restart clear the table (and bump the epoch).
//! - A guard from an older epoch releases nothing when it is dropped
//!   later: by then the table may hold a newer holder's lock on the same
//!   directory, and that one must stay.
//!
//! Taking a lock is not an I/O operation of the disk: it has no index, is
//! not traced, cannot be aimed at by a crash point and draws no fault. A
//! lock is kernel state about a process, not a byte on the disk; no power
//! loss can see it, and tracing it would change every seed's trace for
//! nothing a crash could observe. It only fails, as every I/O does, once
//! an armed crash point has been reached (the process is dying).
//!
//! No `LOCK` file appears on the simulated disk: the file is how `OsVfs`
//! holds the lock, and the engine never reads or names it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use vfs::{LockGuard, LockMode};

use super::file::lock;
use super::ops::{power_lost, Disk};
use crate::trace::FaultKind;

/// What a guard handed out by the simulated disk holds (see the module
/// doc).
pub(super) struct SimLock {
    disk: Arc<Mutex<Disk>>,
    dir: PathBuf,
    mode: LockMode,
    epoch: u64,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut disk = lock(&self.disk);
        // An older epoch's locks were all forgotten at the crash or
        // restart; what the table holds now is someone else's.
        if disk.epoch == self.epoch {
            disk.locks.release(&self.dir, self.mode);
        }
    }
}

/// Take `dir`'s lock in `mode` on `shared` (whose guard `disk` is): refused
/// with `WouldBlock` on a conflict, `NotFound` if the directory does not
/// exist, and a power loss error once the crash point has been reached.
pub(super) fn acquire(shared: &Arc<Mutex<Disk>>, disk: &mut Disk, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
    if disk.crash_reached {
        return Err(power_lost());
    }
    if !disk.fs.is_dir(dir) {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("{}: no such directory", dir.display())));
    }
    // Not an I/O (no index): only the seeded stream can fail it, and it
    // is counted with the other failed metadata operations.
    if disk.faults.meta(&disk.config) {
        let index = disk.io_index;
        disk.inject(index, FaultKind::MetaEio);
        return Err(io::Error::other("lock failed (simulated EIO)"));
    }
    disk.locks.acquire(dir, mode)?;
    let held = SimLock { disk: shared.clone(), dir: dir.to_path_buf(), mode, epoch: disk.epoch };
    Ok(LockGuard::new(dir, mode, held))
}
