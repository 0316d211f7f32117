//! libc's memory-map calls. `mmap` of a simulated descriptor is served
//! ([`crate::serve_map`]); every other `mmap` (anonymous, a real file)
//! goes to glibc untouched, as do `munmap`, `mprotect`, `msync`,
//! `madvise` and `mremap` of memory that is no served map: the allocator
//! and std call them all the time, and while no map is served they cost
//! one atomic load more ([`maps::may_concern`]).
//!
//! On a served map (`maps`): `munmap` unmaps it (any part of it);
//! `msync` succeeds at once (nothing in a read-only map is dirty, and a
//! private copy is never written back); `madvise` hints succeed and
//! change nothing (`MADV_DONTNEED` on a read-only map too: the page it
//! would fetch again holds the same bytes); `mprotect` to `PROT_READ`
//! succeeds and changes nothing (the layer keeps the pages past the end
//! inaccessible). Anything else would let memory and the disk part ways,
//! and is refused: `mprotect` to writable, `madvise` that drops or
//! changes pages of a private copy, `mremap`.

use std::ffi::{c_int, c_void};

use super::maps;
use super::{real, served, CallerErrno};
use crate::errno::Errno;
use crate::serve_map::{self, Request};
use crate::session::{is_fake_fd, refuse};

#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    at: i64,
) -> *mut c_void {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) || flags & libc::MAP_ANONYMOUS != 0 {
        // SAFETY: the caller's arguments, passed on.
        let map = || unsafe { real::mmap64(addr, len, prot, flags, fd, at) };
        if flags & libc::MAP_FIXED != 0 && maps::may_concern() {
            // Maybe over a served map: what was there is gone, forgotten
            // in the same step (`maps::replace`).
            return maps::replace(addr as usize, len, |made| *made != libc::MAP_FAILED, map);
        }
        return map();
    }
    let request = Request { hint: addr as usize, len_bytes: len, prot, flags, offset_bytes: at };
    served(libc::MAP_FAILED, || serve_map::mmap(fd, &request).map(|at| at as *mut c_void))
}

#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    at: i64,
) -> *mut c_void {
    // SAFETY: the same function on x86-64.
    unsafe { mmap64(addr, len, prot, flags, fd, at) }
}

#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's arguments, passed on: unmapping a served map
    // unmaps the layer's memory behind it, as the kernel would the file's.
    let unmap = || unsafe { real::munmap(addr, len) };
    if maps::may_concern() {
        // The pages freed and their record forgotten as one step: another
        // thread the kernel gives them to meanwhile must not find them
        // still taken for a simulated file's map (`maps::replace`).
        return maps::replace(addr as usize, len, |done| *done == 0, unmap);
    }
    unmap()
}

/// The served map `[addr, addr + len)` overlaps, if any: (coherent, its
/// session's slot, its path).
fn served_map(addr: *mut c_void, len: usize) -> Option<(bool, usize, std::path::PathBuf)> {
    if maps::may_concern() {
        maps::overlap(addr as usize, len)
    } else {
        None
    }
}

fn refuse_on_map(slot: usize, errno: Errno, call: String, path: &std::path::Path) -> Errno {
    let what =
        format!("{call} on a map of simulated file {}: memory and the simulated disk would part ways", path.display());
    refuse(Some(slot), errno, what)
}

#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    match served_map(addr, len) {
        Some((true, slot, path)) => served(-1, || {
            if prot == libc::PROT_READ {
                return Ok(0);
            }
            Err(refuse_on_map(slot, Errno(libc::EACCES), format!("mprotect to {prot:#x}"), &path))
        }),
        // SAFETY: the caller's arguments, passed on (a private copy is
        // the caller's memory to protect as it likes).
        _ => unsafe { real::mprotect(addr, len, prot) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn msync(addr: *mut c_void, len: usize, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if served_map(addr, len).is_none() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::msync(addr, len, flags) };
    }
    let known = libc::MS_ASYNC | libc::MS_SYNC | libc::MS_INVALIDATE;
    let both = libc::MS_ASYNC | libc::MS_SYNC;
    served(-1, || {
        if flags & !known != 0 || flags & both == both || !(addr as usize).is_multiple_of(maps::PAGE_BYTES) {
            return Err(Errno::EINVAL);
        }
        Ok(0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    let Some((coherent, slot, path)) = served_map(addr, len) else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::madvise(addr, len, advice) };
    };
    served(-1, || match advice {
        libc::MADV_NORMAL | libc::MADV_RANDOM | libc::MADV_SEQUENTIAL | libc::MADV_WILLNEED => Ok(0),
        libc::MADV_DONTNEED if coherent => Ok(0),
        _ => Err(refuse_on_map(slot, Errno::EINVAL, format!("madvise {advice}"), &path)),
    })
}

/// `mremap(old, old_len, new_len, flags, ...)`: the optional new address
/// taken as a fixed argument (see the module doc of `interpose`).
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: usize,
    new_len: usize,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    let _caller_errno = CallerErrno::enter();
    match served_map(old, old_len) {
        Some((_, slot, path)) => {
            served(libc::MAP_FAILED, || Err(refuse_on_map(slot, Errno::EINVAL, "mremap".to_string(), &path)))
        }
        // SAFETY: the caller's arguments, passed on.
        None => unsafe { real::mremap(old, old_len, new_len, flags, new_addr) },
    }
}

/// This file's interposed functions, for `super::link_all`.
pub(super) fn interposed() -> [*const (); 7] {
    [
        mmap64 as *const (),
        mmap as *const (),
        munmap as *const (),
        mprotect as *const (),
        msync as *const (),
        madvise as *const (),
        mremap as *const (),
    ]
}
