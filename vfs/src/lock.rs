//! Directory locks: how a store makes sure it has one owner.
//!
//! Two writers on one store directory would each append at their own idea
//! of the log's end, and acknowledged writes of one would vanish under the
//! other's. So a store's open (segsim's `Store::open`) first takes an
//! advisory lock on the directory through [`Vfs::lock`](super::Vfs::lock)
//! and holds the [`LockGuard`] for the store's life. This module owns the
//! pieces every file system shares:
//!
//! - [`LockMode`]: a writer's lock is `Exclusive`; a read-only opener's is
//!   `Shared`, so inspectors coexist with each other but never with a
//!   writer;
//! - [`LockGuard`]: the held lock, released when dropped, whatever the file
//!   system needs to keep to hold it boxed inside;
//! - [`LockTable`]: the conflict rules as plain data, for file systems that
//!   live in memory ([`MemVfs`](super::MemVfs), the simulator's disk). The
//!   real one ([`OsVfs`](super::OsVfs)) gets the same rules from the kernel.
//!
//! A conflict is an `io::Error` of kind [`io::ErrorKind::WouldBlock`]: a lock
//! is only ever tried, never waited for, and the store turns that kind into
//! its own error (segsim's `Error::Locked`).
//!
//! Locks are not durable. They belong to the process (the open file, the
//! simulated process) that took them, and a crash or restart of it
//! releases them all.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// The name of the file `OsVfs` locks inside a store directory. It is
/// created if missing and never deleted (deleting it would let two openers
/// lock two different files of the same name); it holds no bytes. The
/// in-memory file systems model the lock without a file.
pub const LOCK_FILE: &str = "LOCK";

/// What kind of lock [`Vfs::lock`](super::Vfs::lock) takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    /// One holder and no other: a store opened to write.
    Exclusive,
    /// Any number of shared holders and no exclusive one: a store opened
    /// read-only.
    Shared,
}

impl LockMode {
    /// Whether a holder in `self` mode and one in `other` mode can hold the
    /// same directory at once.
    pub fn compatible_with(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }
}

/// A lock held on a directory; dropping the guard releases it.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    dir: PathBuf,
    mode: LockMode,
    /// Whatever the file system keeps to hold the lock (an open file, a
    /// handle on an in-memory table). Its own `Drop` releases the lock.
    _held: Box<dyn Send + Sync>,
}

impl LockGuard {
    /// A guard for the lock on `dir` in `mode`, held by `held`: the lock
    /// must be released exactly when `held` is dropped.
    pub fn new(dir: &Path, mode: LockMode, held: impl Send + Sync + 'static) -> Self {
        LockGuard { dir: dir.to_path_buf(), mode, _held: Box::new(held) }
    }

    /// The directory locked.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The mode it is held in.
    pub fn mode(&self) -> LockMode {
        self.mode
    }
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard").field("dir", &self.dir).field("mode", &self.mode).finish_non_exhaustive()
    }
}

/// The error [`Vfs::lock`](super::Vfs::lock) returns when another holder's
/// lock on `dir` conflicts: kind [`io::ErrorKind::WouldBlock`].
pub fn lock_conflict(dir: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::WouldBlock, format!("{} is locked by another opener", dir.display()))
}

/// Who holds one directory's lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holders {
    /// The mode every holder holds it in.
    pub mode: LockMode,
    /// How many holders (1 for `Exclusive`).
    pub count: u64,
}

/// Directory locks as data: which directories are held, how, and by how
/// many. `BTreeMap`, so nothing about it depends on hashing order.
#[derive(Debug, Default)]
pub struct LockTable {
    held: BTreeMap<PathBuf, Holders>,
}

impl LockTable {
    /// A table with no lock held.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the lock on `dir` in `mode`, or fail with [`lock_conflict`] if a
    /// holder's mode is not compatible. Nothing changes on failure.
    pub fn acquire(&mut self, dir: &Path, mode: LockMode) -> io::Result<()> {
        match self.held.get_mut(dir) {
            None => {
                self.held.insert(dir.to_path_buf(), Holders { mode, count: 1 });
                Ok(())
            }
            Some(holders) if mode.compatible_with(holders.mode) => {
                assert!(holders.count > 0);
                holders.count += 1;
                Ok(())
            }
            Some(_) => Err(lock_conflict(dir)),
        }
    }

    /// Give back one hold on `dir` in `mode`, which must be held so.
    pub fn release(&mut self, dir: &Path, mode: LockMode) {
        let holders = self.held.get_mut(dir).expect("a released lock was held");
        assert_eq!(holders.mode, mode, "a lock is released in the mode it was taken in");
        assert!(holders.count > 0);
        holders.count -= 1;
        if holders.count == 0 {
            self.held.remove(dir);
        }
    }

    /// Who holds `dir`, if anyone.
    pub fn holders(&self, dir: &Path) -> Option<Holders> {
        self.held.get(dir).copied()
    }

    /// Forget every lock: the holders are gone (a crash, a restart).
    pub fn clear(&mut self) {
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXCLUSIVE: LockMode = LockMode::Exclusive;
    const SHARED: LockMode = LockMode::Shared;

    #[test]
    fn only_shared_locks_coexist() {
        assert!(SHARED.compatible_with(SHARED));
        assert!(!SHARED.compatible_with(EXCLUSIVE));
        assert!(!EXCLUSIVE.compatible_with(SHARED));
        assert!(!EXCLUSIVE.compatible_with(EXCLUSIVE));
    }

    #[test]
    fn the_table_refuses_conflicts_and_counts_shared_holders() {
        let (a, b) = (Path::new("/a"), Path::new("/b"));
        let mut table = LockTable::new();
        table.acquire(a, EXCLUSIVE).unwrap();
        let err = table.acquire(a, EXCLUSIVE).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(err.to_string().contains("/a is locked"), "{err}");
        assert_eq!(table.acquire(a, SHARED).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        table.acquire(b, SHARED).unwrap();
        table.acquire(b, SHARED).unwrap();
        assert_eq!(table.holders(b), Some(Holders { mode: SHARED, count: 2 }));
        assert_eq!(table.acquire(b, EXCLUSIVE).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        table.release(b, SHARED);
        assert_eq!(table.acquire(b, EXCLUSIVE).unwrap_err().kind(), io::ErrorKind::WouldBlock, "one reader left");
        table.release(b, SHARED);
        assert_eq!(table.holders(b), None);
        table.acquire(b, EXCLUSIVE).unwrap();
        table.release(a, EXCLUSIVE);
        table.acquire(a, SHARED).unwrap();
        table.clear();
        assert_eq!((table.holders(a), table.holders(b)), (None, None));
    }

    #[test]
    #[should_panic(expected = "released in the mode it was taken in")]
    fn a_release_in_the_wrong_mode_is_a_bug() {
        let mut table = LockTable::new();
        table.acquire(Path::new("/a"), SHARED).unwrap();
        table.release(Path::new("/a"), EXCLUSIVE);
    }
}
