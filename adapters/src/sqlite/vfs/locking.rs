//! The locking and shared-memory methods of the VFS's files: `xLock`,
//! `xUnlock`, `xCheckReservedLock` and the `xShm*` family. Each routes to
//! the process's `Shared` (`shared.rs`, whose module doc says what of
//! os_unix it mirrors); a file that lives in memory locks alone. Kept apart from
//! `vfs.rs` because they are the connections' business with each other,
//! where the rest of the VFS is a connection's business with the disk.

// SQLite calls these through C pointers, as the rest of the VFS
// (`vfs.rs` says why the crate allows `unsafe` here).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::Ordering;

use libsqlite3_sys as ffi;

use super::super::shared::ShmOp;
use super::{with_file, VfsPlant};

pub(super) unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(file, ffi::SQLITE_IOERR_LOCK, |state| {
            if !state.on_disk() {
                state.lock = state.lock.max(level);
                return ffi::SQLITE_OK;
            }
            let plant = state.context().options.plant;
            let per_process = plant == Some(VfsPlant::LocksPerProcess);
            let over_pending = plant == Some(VfsPlant::SharedOverPending);
            state.context().shared.lock(&state.path, state.handle, level, per_process, over_pending).code()
        })
    }
}

pub(super) unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(file, ffi::SQLITE_IOERR_UNLOCK, |state| {
            if state.on_disk() {
                let keeps_pending = state.context().options.plant == Some(VfsPlant::UnlockKeepsPending);
                state.context().shared.unlock(&state.path, state.handle, level, keeps_pending);
            } else {
                state.lock = state.lock.min(level);
            }
            ffi::SQLITE_OK
        })
    }
}

pub(super) unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: as `file_state`, with an out pointer.
    unsafe {
        *out = 0;
        with_file(file, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, |state| {
            let own_only = state.context().options.plant == Some(VfsPlant::ReservedOwnOnly);
            let reserved = match state.on_disk() {
                true if own_only => {
                    state.context().shared.own_lock(&state.path, state.handle) >= ffi::SQLITE_LOCK_RESERVED
                }
                true => state.context().shared.reserved(&state.path),
                false => state.lock >= ffi::SQLITE_LOCK_RESERVED,
            };
            *out = c_int::from(reserved);
            ffi::SQLITE_OK
        })
    }
}

pub(super) unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    region_bytes: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: as `file_state`, with an out pointer.
    unsafe {
        *out = ptr::null_mut();
        with_file(file, ffi::SQLITE_IOERR_SHMMAP, |state| {
            let (Ok(region), Ok(region_bytes)) = (usize::try_from(region), usize::try_from(region_bytes)) else {
                return ffi::SQLITE_IOERR_SHMMAP;
            };
            let shared = &state.context().shared;
            if let Some(bytes) = shared.shm_map(&state.path, state.handle, region, region_bytes, extend != 0) {
                *out = bytes.cast();
            }
            ffi::SQLITE_OK
        })
    }
}

pub(super) unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    first: c_int,
    count: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(file, ffi::SQLITE_IOERR_SHMLOCK, |state| {
            let op = if flags & ffi::SQLITE_SHM_UNLOCK != 0 {
                ShmOp::Unlock
            } else if flags & ffi::SQLITE_SHM_SHARED != 0 {
                ShmOp::Shared
            } else {
                ShmOp::Exclusive
            };
            let (Ok(first), Ok(count)) = (usize::try_from(first), usize::try_from(count)) else {
                return ffi::SQLITE_IOERR_SHMLOCK;
            };
            let plant = state.context().options.plant;
            let lies = plant == Some(VfsPlant::ShmExclusiveLies);
            let unlock_all = plant == Some(VfsPlant::ShmUnlockReleasesAll);
            let shared = &state.context().shared;
            shared.shm_lock(&state.path, state.handle, first, count, op, lies, unlock_all).code()
        })
    }
}

/// Nothing to catch: one thread runs SQLite at a time (the adapter's
/// gate), so a fence is all a barrier needs to be.
pub(super) unsafe extern "C" fn x_shm_barrier(_file: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(Ordering::SeqCst);
}

pub(super) unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(file, ffi::SQLITE_IOERR, |state| {
            let plant = state.context().options.plant;
            let discard = delete != 0 && plant == Some(VfsPlant::ShmUnmapDiscardsShared);
            state.context().shared.shm_unmap(&state.path, state.handle, delete != 0, discard);
            ffi::SQLITE_OK
        })
    }
}
