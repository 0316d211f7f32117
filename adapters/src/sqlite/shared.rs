//! What the connections of one simulated process share about their
//! files: the file locks (`xLock` levels, os_unix's `unixInodeInfo`) and
//! the wal-index (`xShm*`: os_unix's `-shm` mapping, `unixShmNode`).
//!
//! Why it exists: with one connection, locks could be granted blindly and
//! WAL ran under `locking_mode=EXCLUSIVE` (its wal-index in heap memory).
//! Several connections — a writer and readers — need what os_unix gives
//! the connections of one process: a reader's `SHARED` lock that makes a
//! rollback-journal writer's `EXCLUSIVE` wait (`SQLITE_BUSY`), and one
//! wal-index every connection maps, whose eight lock slots keep a
//! checkpoint from overwriting pages a reader's snapshot still reads.
//!
//! One [`Shared`] lives as long as the adapter's database (the simulated
//! process): a crash or a clean close drops it, and the next open starts
//! with an empty wal-index, as os_unix's first connection truncates a
//! `-shm` file it finds (`unixLockSharedMemory`) — SQLite then rebuilds
//! the index from the WAL. So the wal-index never reaches the disk, and
//! no `-shm` file is created: nothing of it survives a crash in either.
//!
//! Every call runs under the adapter's process-wide gate (one thread at a
//! time); the mutex only makes the type `Sync`.

// The wal-index regions are memory SQLite reads and writes through raw
// pointers: `Region` owns one and frees it; nothing else here is unsafe.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use libsqlite3_sys as ffi;

/// os_unix's lock slots in the wal-index (`SQLITE_SHM_NLOCK`).
pub const SHM_LOCK_SLOTS: usize = 8;

/// What an `xLock` or `xShmLock` answers: granted, or held by another
/// connection (`SQLITE_BUSY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Granted.
    Ok,
    /// Another connection holds a conflicting lock.
    Busy,
}

impl Grant {
    /// SQLite's result code.
    pub fn code(self) -> c_int {
        match self {
            Grant::Ok => ffi::SQLITE_OK,
            Grant::Busy => ffi::SQLITE_BUSY,
        }
    }
}

/// A lock on one wal-index slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotLock {
    None,
    Shared,
    Exclusive,
}

/// One wal-index region: `bytes` zeroed bytes at a fixed address, handed
/// to SQLite, freed when the last connection unmaps.
struct Region {
    ptr: *mut u8,
    bytes: usize,
}

impl Region {
    fn zeroed(bytes: usize) -> Region {
        let ptr = Box::into_raw(vec![0u8; bytes].into_boxed_slice()) as *mut u8;
        Region { ptr, bytes }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::into_raw` of a boxed slice of
        // `bytes` bytes in `zeroed`, and is freed once, here.
        unsafe { drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.bytes))) };
    }
}

/// One database's wal-index: its regions and who holds which slot.
#[derive(Default)]
struct ShmNode {
    regions: Vec<Region>,
    /// Per mapping connection, its lock on each slot.
    locks: BTreeMap<u64, [SlotLock; SHM_LOCK_SLOTS]>,
}

/// Everything shared, by file path.
#[derive(Default)]
struct Inner {
    next_handle: u64,
    /// Per file, each open handle's `xLock` level (`SQLITE_LOCK_*`).
    file_locks: BTreeMap<PathBuf, BTreeMap<u64, c_int>>,
    /// Per database file, its wal-index.
    shm: BTreeMap<PathBuf, ShmNode>,
    /// Regions the planted `xShmUnmap` discarded while connections still
    /// map them: kept alive (their addresses stay valid) until the process
    /// ends, never handed out again.
    discarded: Vec<Region>,
}

/// `xShmUnmap` calls with the delete flag while another connection of the
/// process still mapped the wal-index, over the whole test binary: what
/// the planted `sqlite-shm-unmap-discards-shared` needs, and SQLite never
/// does (SQLITE.md, *Clients that overlap*). A diagnostic, never part of
/// a run's outcome.
static DELETES_BESIDE_OTHERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many `xShmUnmap(delete)` calls found other connections mapping
/// (see [`DELETES_BESIDE_OTHERS`]).
#[cfg(test)]
pub fn deletes_beside_others() -> u64 {
    DELETES_BESIDE_OTHERS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The locks and wal-indexes of one simulated process (see the module doc).
#[derive(Default)]
pub struct Shared {
    inner: Mutex<Inner>,
}

// SAFETY: the raw region pointers are only handed to SQLite, whose calls
// the adapter serialises through its process-wide gate; `Shared` never
// reads or writes through them.
unsafe impl Send for Shared {}
// SAFETY: as `Send`: every access to `Inner` goes through the mutex.
unsafe impl Sync for Shared {}

impl Shared {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh id for an open file (its locks are held under it).
    pub fn new_handle(&self) -> u64 {
        let mut inner = self.inner();
        inner.next_handle += 1;
        inner.next_handle
    }

    /// `xLock`: raise `handle`'s lock on `path` to `level`, as os_unix's
    /// `unixLock` does between the connections of one process. `SHARED`
    /// waits for no `PENDING` or `EXCLUSIVE` of another; `RESERVED` for no
    /// other `RESERVED` or above; `EXCLUSIVE` first takes `PENDING` (so no
    /// new `SHARED` is granted) and then needs every other handle at
    /// `NONE` — refused, the handle keeps `PENDING`. `others_ignored` is the
    /// planted bug: POSIX advisory locks taken as they are, which never
    /// conflict within one process (what `unixInodeInfo` exists to fix);
    /// `shared_over_pending` another: `SHARED` refused only by another's
    /// `EXCLUSIVE`, not by its `PENDING`.
    pub fn lock(
        &self,
        path: &Path,
        handle: u64,
        level: c_int,
        others_ignored: bool,
        shared_over_pending: bool,
    ) -> Grant {
        let mut inner = self.inner();
        let levels = inner.file_locks.entry(path.to_path_buf()).or_default();
        let own = levels.get(&handle).copied().unwrap_or(ffi::SQLITE_LOCK_NONE);
        if level <= own {
            return Grant::Ok;
        }
        let others_max = levels.iter().filter(|(h, _)| **h != handle && !others_ignored).map(|(_, l)| *l).max();
        let others_max = others_max.unwrap_or(ffi::SQLITE_LOCK_NONE);
        let granted = match level {
            ffi::SQLITE_LOCK_SHARED if shared_over_pending => others_max < ffi::SQLITE_LOCK_EXCLUSIVE,
            ffi::SQLITE_LOCK_SHARED => others_max < ffi::SQLITE_LOCK_PENDING,
            ffi::SQLITE_LOCK_RESERVED => {
                debug_assert!(own >= ffi::SQLITE_LOCK_SHARED, "SQLite reserves only over its own SHARED lock");
                others_max < ffi::SQLITE_LOCK_RESERVED
            }
            ffi::SQLITE_LOCK_EXCLUSIVE => {
                debug_assert!(own >= ffi::SQLITE_LOCK_SHARED, "SQLite asks EXCLUSIVE only over its own SHARED lock");
                if others_max >= ffi::SQLITE_LOCK_PENDING {
                    return Grant::Busy;
                }
                levels.insert(handle, ffi::SQLITE_LOCK_PENDING);
                others_max < ffi::SQLITE_LOCK_SHARED
            }
            other => panic!("SQLite asks xLock only for SHARED, RESERVED or EXCLUSIVE, not {other}"),
        };
        if !granted {
            return Grant::Busy;
        }
        levels.insert(handle, level);
        Grant::Ok
    }

    /// `xUnlock`: lower `handle`'s lock on `path` to `level` (`SHARED` or
    /// `NONE`). `keeps_pending` is the planted bug: a handle at `PENDING`
    /// or above stays at `PENDING` (a port of `unixUnlock` that forgets to
    /// release the pending byte), so no other handle gets `SHARED` again.
    pub fn unlock(&self, path: &Path, handle: u64, level: c_int, keeps_pending: bool) {
        debug_assert!(level <= ffi::SQLITE_LOCK_SHARED, "SQLite unlocks to SHARED or NONE, not {level}");
        let mut inner = self.inner();
        let Some(levels) = inner.file_locks.get_mut(path) else { return };
        match levels.get(&handle).copied() {
            Some(own) if keeps_pending && own >= ffi::SQLITE_LOCK_PENDING => {
                levels.insert(handle, ffi::SQLITE_LOCK_PENDING);
            }
            Some(_) if level == ffi::SQLITE_LOCK_NONE => {
                levels.remove(&handle);
            }
            Some(own) => {
                levels.insert(handle, own.min(level));
            }
            None => {}
        }
        if levels.is_empty() {
            inner.file_locks.remove(path);
        }
    }

    /// `xCheckReservedLock`: whether any handle of the process holds
    /// `RESERVED` or above on `path` (os_unix asks its inode, its own
    /// handles included).
    pub fn reserved(&self, path: &Path) -> bool {
        let inner = self.inner();
        inner.file_locks.get(path).is_some_and(|levels| levels.values().any(|l| *l >= ffi::SQLITE_LOCK_RESERVED))
    }

    /// The strongest lock any handle of the process holds on `path`
    /// (`SQLITE_LOCK_NONE` if none): what the adapter reports as the
    /// writer's lock (`ReaderPool::writer_lock`).
    pub fn strongest_lock(&self, path: &Path) -> c_int {
        let inner = self.inner();
        let levels = inner.file_locks.get(path);
        levels.and_then(|levels| levels.values().copied().max()).unwrap_or(ffi::SQLITE_LOCK_NONE)
    }

    /// Whether any connection holds wal-index slot `slot` of `path`'s
    /// wal-index exclusively (slot 0: the WAL's write lock).
    pub fn shm_slot_exclusive(&self, path: &Path, slot: usize) -> bool {
        let inner = self.inner();
        let node = inner.shm.get(path);
        node.is_some_and(|node| node.locks.values().any(|locks| locks[slot] == SlotLock::Exclusive))
    }

    /// `handle`'s own lock on `path` (what the planted
    /// `xCheckReservedLock` asks instead of every handle's).
    pub fn own_lock(&self, path: &Path, handle: u64) -> c_int {
        let inner = self.inner();
        let level = inner.file_locks.get(path).and_then(|levels| levels.get(&handle).copied());
        level.unwrap_or(ffi::SQLITE_LOCK_NONE)
    }

    /// `handle` closed: whatever it still held is released (os_unix
    /// releases a closing file's locks).
    pub fn closed(&self, path: &Path, handle: u64) {
        self.unlock(path, handle, ffi::SQLITE_LOCK_NONE, false);
        self.shm_unmap(path, handle, false, false);
    }

    /// `xShmMap`: region `index` of `path`'s wal-index, `region_bytes`
    /// long, for connection `handle` (which maps it from now on). A missing
    /// region is created zeroed if `extend`, else `None` (SQLite then knows
    /// the index is shorter).
    pub fn shm_map(
        &self,
        path: &Path,
        handle: u64,
        index: usize,
        region_bytes: usize,
        extend: bool,
    ) -> Option<*mut u8> {
        let mut inner = self.inner();
        let node = inner.shm.entry(path.to_path_buf()).or_default();
        node.locks.entry(handle).or_insert([SlotLock::None; SHM_LOCK_SLOTS]);
        if let Some(region) = node.regions.first() {
            assert_eq!(region.bytes, region_bytes, "SQLite maps every region of one wal-index at one size");
        }
        while node.regions.len() <= index {
            if !extend {
                return None;
            }
            node.regions.push(Region::zeroed(region_bytes));
        }
        Some(node.regions[index].ptr)
    }

    /// `xShmLock`: lock (`shared` or exclusive) or unlock slots
    /// `first..first + count` of `path`'s wal-index for `handle`, as
    /// os_unix's `unixShmLock` does between connections: a shared lock
    /// waits for no other's exclusive, an exclusive one for no other's
    /// lock of either kind, all slots or none. `exclusive_lies` is the
    /// planted bug: an exclusive lock ignores the others' shared locks;
    /// `unlock_all` another: an unlock releases every slot the handle
    /// holds, not only the ones named.
    #[allow(clippy::too_many_arguments)]
    pub fn shm_lock(
        &self,
        path: &Path,
        handle: u64,
        first: usize,
        count: usize,
        op: ShmOp,
        exclusive_lies: bool,
        unlock_all: bool,
    ) -> Grant {
        assert!(first + count <= SHM_LOCK_SLOTS && count >= 1, "slots {first}+{count} of {SHM_LOCK_SLOTS}");
        let mut inner = self.inner();
        let node = inner.shm.get_mut(path).expect("SQLite locks a wal-index only after mapping it");
        let slots = first..first + count;
        let conflict = |own: u64, slot: usize, with_shared: bool| {
            node.locks.iter().filter(|(h, _)| **h != own).any(|(_, locks)| match locks[slot] {
                SlotLock::Exclusive => true,
                SlotLock::Shared => with_shared,
                SlotLock::None => false,
            })
        };
        let want = match op {
            ShmOp::Unlock => SlotLock::None,
            ShmOp::Shared => {
                debug_assert_eq!(count, 1, "SQLite takes shared wal-index locks one slot at a time");
                if slots.clone().any(|slot| conflict(handle, slot, false)) {
                    return Grant::Busy;
                }
                SlotLock::Shared
            }
            ShmOp::Exclusive => {
                if slots.clone().any(|slot| conflict(handle, slot, !exclusive_lies)) {
                    return Grant::Busy;
                }
                SlotLock::Exclusive
            }
        };
        let locks = node.locks.get_mut(&handle).expect("a connection locks the wal-index it mapped");
        let slots = if unlock_all && op == ShmOp::Unlock { 0..SHM_LOCK_SLOTS } else { slots };
        for slot in slots {
            locks[slot] = want;
        }
        Grant::Ok
    }

    /// `xShmUnmap`: `handle` no longer maps `path`'s wal-index (its slot
    /// locks released); the last connection to unmap frees it. `delete`
    /// is SQLite's flag (the closing connection got `EXCLUSIVE` and
    /// deleted the WAL); one raised while others still map is counted
    /// ([`deletes_beside_others`]).
    /// `discard_shared` is the planted bug: the regions go now, whoever
    /// still maps them (kept alive in `discarded`, so their addresses stay
    /// valid for the connections that hold them).
    pub fn shm_unmap(&self, path: &Path, handle: u64, delete: bool, discard_shared: bool) {
        let mut inner = self.inner();
        let Some(node) = inner.shm.get_mut(path) else { return };
        node.locks.remove(&handle);
        if delete && !node.locks.is_empty() {
            DELETES_BESIDE_OTHERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let regions = match discard_shared && !node.locks.is_empty() {
            true => std::mem::take(&mut node.regions),
            false => Vec::new(),
        };
        if node.locks.is_empty() {
            inner.shm.remove(path);
        }
        inner.discarded.extend(regions);
    }
}

/// What an `xShmLock` call asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmOp {
    /// Release the slots.
    Unlock,
    /// A shared lock on one slot.
    Shared,
    /// An exclusive lock on every slot of the range.
    Exclusive,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DB: &str = "/db/data.sqlite";

    #[test]
    fn a_shared_lock_makes_an_exclusive_one_wait() {
        let shared = Shared::default();
        let (writer, reader) = (shared.new_handle(), shared.new_handle());
        let path = Path::new(DB);
        assert_eq!(shared.lock(path, reader, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Ok);
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Ok);
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_RESERVED, false, false), Grant::Ok);
        assert!(shared.reserved(path));
        assert_eq!(
            shared.lock(path, writer, ffi::SQLITE_LOCK_EXCLUSIVE, false, false),
            Grant::Busy,
            "the reader holds SHARED"
        );
        // The writer now holds PENDING: no new SHARED is granted.
        let late = shared.new_handle();
        assert_eq!(shared.lock(path, late, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Busy);
        shared.unlock(path, reader, ffi::SQLITE_LOCK_NONE, false);
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_EXCLUSIVE, false, false), Grant::Ok);
        shared.unlock(path, writer, ffi::SQLITE_LOCK_SHARED, false);
        assert!(!shared.reserved(path));
        assert_eq!(shared.lock(path, late, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Ok);
    }

    /// The planted `xUnlock` keeps the writer's `PENDING` lock: after a
    /// commit (`EXCLUSIVE`, then down to `SHARED` and `NONE`) no reader
    /// gets `SHARED`; the writer itself goes on.
    #[test]
    fn the_planted_unlock_keeps_pending_and_refuses_readers() {
        let shared = Shared::default();
        let (writer, reader) = (shared.new_handle(), shared.new_handle());
        let path = Path::new(DB);
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Ok);
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_RESERVED, false, false), Grant::Ok);
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_EXCLUSIVE, false, false), Grant::Ok);
        shared.unlock(path, writer, ffi::SQLITE_LOCK_SHARED, true);
        shared.unlock(path, writer, ffi::SQLITE_LOCK_NONE, true);
        assert_eq!(shared.lock(path, reader, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Busy, "PENDING was kept");
        assert_eq!(shared.lock(path, writer, ffi::SQLITE_LOCK_EXCLUSIVE, false, false), Grant::Ok);
        shared.unlock(path, writer, ffi::SQLITE_LOCK_NONE, false);
        assert_eq!(shared.lock(path, reader, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Ok, "the honest unlock");
    }

    #[test]
    fn one_reserved_lock_at_a_time() {
        let shared = Shared::default();
        let (a, b) = (shared.new_handle(), shared.new_handle());
        let path = Path::new(DB);
        for h in [a, b] {
            assert_eq!(shared.lock(path, h, ffi::SQLITE_LOCK_SHARED, false, false), Grant::Ok);
        }
        assert_eq!(shared.lock(path, a, ffi::SQLITE_LOCK_RESERVED, false, false), Grant::Ok);
        assert_eq!(shared.lock(path, b, ffi::SQLITE_LOCK_RESERVED, false, false), Grant::Busy);
        shared.closed(path, a);
        assert_eq!(shared.lock(path, b, ffi::SQLITE_LOCK_RESERVED, false, false), Grant::Ok);
    }

    /// The planted unlock releases every slot the handle holds: the
    /// writer's write lock (slot 0) goes with the read marks it unlocks,
    /// and another connection takes it; the honest unlock keeps it.
    #[test]
    fn the_planted_shm_unlock_releases_the_write_lock_too() {
        for unlock_all in [false, true] {
            let shared = Shared::default();
            let (writer, other) = (shared.new_handle(), shared.new_handle());
            let path = Path::new(DB);
            shared.shm_map(path, writer, 0, 32768, true).expect("created");
            shared.shm_map(path, other, 0, 32768, false).expect("mapped");
            assert_eq!(shared.shm_lock(path, writer, 0, 1, ShmOp::Exclusive, false, unlock_all), Grant::Ok);
            assert_eq!(shared.shm_lock(path, writer, 4, 4, ShmOp::Exclusive, false, unlock_all), Grant::Ok);
            assert_eq!(shared.shm_lock(path, writer, 4, 4, ShmOp::Unlock, false, unlock_all), Grant::Ok);
            let second = shared.shm_lock(path, other, 0, 1, ShmOp::Exclusive, false, false);
            assert_eq!(second, if unlock_all { Grant::Ok } else { Grant::Busy }, "unlock_all {unlock_all}");
        }
    }

    #[test]
    fn wal_index_regions_are_shared_and_slots_conflict() {
        let shared = Shared::default();
        let (writer, reader) = (shared.new_handle(), shared.new_handle());
        let path = Path::new(DB);
        assert_eq!(shared.shm_map(path, reader, 0, 32768, false), None, "no region yet");
        let region = shared.shm_map(path, writer, 0, 32768, true).expect("created");
        assert_eq!(shared.shm_map(path, reader, 0, 32768, false), Some(region), "one region for both");
        assert_eq!(shared.shm_lock(path, reader, 3, 1, ShmOp::Shared, false, false), Grant::Ok);
        assert_eq!(shared.shm_lock(path, writer, 3, 1, ShmOp::Shared, false, false), Grant::Ok, "shared with shared");
        assert_eq!(shared.shm_lock(path, writer, 2, 3, ShmOp::Exclusive, false, false), Grant::Busy);
        assert_eq!(shared.shm_lock(path, writer, 2, 3, ShmOp::Exclusive, true, false), Grant::Ok, "the plant lies");
        assert_eq!(shared.shm_lock(path, reader, 2, 1, ShmOp::Shared, false, false), Grant::Busy, "held exclusive");
        assert_eq!(shared.shm_lock(path, writer, 2, 3, ShmOp::Unlock, false, false), Grant::Ok);
        assert_eq!(shared.shm_lock(path, reader, 2, 1, ShmOp::Shared, false, false), Grant::Ok);
        shared.shm_unmap(path, reader, false, false);
        assert_eq!(shared.shm_lock(path, writer, 2, 3, ShmOp::Exclusive, false, false), Grant::Ok, "the reader left");
        shared.shm_unmap(path, writer, false, false);
        assert_eq!(shared.shm_map(path, writer, 0, 32768, false), None, "freed with the last mapping");
    }
}
