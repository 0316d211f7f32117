//! libc's calls that change a name's metadata: `chmod`, `fchmod`,
//! `fchmodat`, `utimensat`, `futimens`, and the older `utimes`/`futimes`
//! (glibc's own call their system call directly, never the exported
//! `utimensat`, so each is defined here). The layer's paths and descriptors
//! are served into the session's record ([`crate::serve_meta`]); on a
//! thread serving a run, the same calls on a real path or a real
//! descriptor are refused (a change to the real disk); elsewhere they go
//! to glibc.

use std::ffi::{c_char, c_int};

use super::path_calls::{real_change, routed};
use super::{c_bytes, real, served, CallerErrno};
use crate::errno::Errno;
use crate::serve_meta::{self, TimeSet};
use crate::session::{is_fake_fd, refuse_real_change};

#[no_mangle]
pub unsafe extern "C" fn fchmodat(dirfd: c_int, path: *const c_char, mode: libc::mode_t, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        Some(at) => served(-1, || serve_meta::chmod(&at, mode).map(|()| 0)),
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("chmod", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::fchmodat(dirfd, path, mode, flags) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn chmod(path: *const c_char, mode: libc::mode_t) -> c_int {
    // SAFETY: `chmod` is `fchmodat` from the working directory.
    unsafe { fchmodat(libc::AT_FDCWD, path, mode, 0) }
}

/// The refusal of a change to what real descriptor `fd` names, when this
/// thread serves a run.
fn real_fd_change(op: &str, fd: c_int) -> Option<Errno> {
    refuse_real_change(op, format!("of real fd {fd}").as_bytes())
}

#[no_mangle]
pub unsafe extern "C" fn fchmod(fd: c_int, mode: libc::mode_t) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if is_fake_fd(fd) {
        return served(-1, || serve_meta::fchmod(fd, mode).map(|()| 0));
    }
    match real_fd_change("fchmod", fd) {
        Some(refused) => served(-1, || Err(refused)),
        // SAFETY: the caller's arguments, passed on.
        None => unsafe { real::fchmod(fd, mode) },
    }
}

/// `utimensat`'s `times` (null: both now), each `[access, modification]`.
///
/// # Safety
/// `times` is null or valid for two `timespec`s.
unsafe fn time_sets(op: &str, times: *const libc::timespec) -> Result<[TimeSet; 2], Errno> {
    if times.is_null() {
        return Ok([TimeSet::Now, TimeSet::Now]);
    }
    // SAFETY: the caller's contract: two `timespec`s.
    let pair = unsafe { std::slice::from_raw_parts(times, 2) };
    let mut sets = [TimeSet::Omit; 2];
    for (set, t) in sets.iter_mut().zip(pair) {
        *set = match t.tv_nsec {
            libc::UTIME_NOW => TimeSet::Now,
            libc::UTIME_OMIT => TimeSet::Omit,
            ns if !(0..1_000_000_000).contains(&ns) => return Err(Errno::EINVAL),
            ns => {
                let secs = u64::try_from(t.tv_sec).map_err(|_| serve_meta::refuse_before_epoch(op, "times"))?;
                TimeSet::At(secs.saturating_mul(1_000_000_000).saturating_add(ns as u64))
            }
        };
    }
    Ok(sets)
}

#[no_mangle]
pub unsafe extern "C" fn utimensat(
    dirfd: c_int,
    path: *const c_char,
    times: *const libc::timespec,
    flags: c_int,
) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    let empty = unsafe { c_bytes(path) }.is_some_and(<[u8]>::is_empty);
    if empty && flags & libc::AT_EMPTY_PATH != 0 && is_fake_fd(dirfd) {
        // SAFETY: the caller's `times`.
        return served(-1, || serve_meta::futimens(dirfd, unsafe { time_sets("futimens", times) }?).map(|()| 0));
    }
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        // SAFETY: the caller's `times`.
        Some(at) => served(-1, || serve_meta::utimens(&at, unsafe { time_sets("utimensat", times) }?).map(|()| 0)),
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("utimensat", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::utimensat(dirfd, path, times, flags) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn futimens(fd: c_int, times: *const libc::timespec) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if is_fake_fd(fd) {
        // SAFETY: the caller's `times`.
        return served(-1, || serve_meta::futimens(fd, unsafe { time_sets("futimens", times) }?).map(|()| 0));
    }
    match real_fd_change("futimens", fd) {
        Some(refused) => served(-1, || Err(refused)),
        // SAFETY: the caller's arguments, passed on.
        None => unsafe { real::futimens(fd, times) },
    }
}

/// `utimes`' `times` (null: both now) as `utimensat`'s.
///
/// # Safety
/// `times` is null or valid for two `timeval`s.
unsafe fn timeval_sets(times: *const libc::timeval) -> Result<[TimeSet; 2], Errno> {
    if times.is_null() {
        return Ok([TimeSet::Now, TimeSet::Now]);
    }
    // SAFETY: the caller's contract: two `timeval`s.
    let pair = unsafe { std::slice::from_raw_parts(times, 2) };
    let mut sets = [TimeSet::Omit; 2];
    for (set, t) in sets.iter_mut().zip(pair) {
        if !(0..1_000_000).contains(&t.tv_usec) {
            return Err(Errno::EINVAL);
        }
        let secs = u64::try_from(t.tv_sec).map_err(|_| serve_meta::refuse_before_epoch("utimes", "times"))?;
        *set = TimeSet::At(secs.saturating_mul(1_000_000_000).saturating_add(t.tv_usec as u64 * 1_000));
    }
    Ok(sets)
}

/// `utimes`/`lutimes` (no symbolic links on the disk: the same).
#[no_mangle]
pub unsafe extern "C" fn utimes(path: *const c_char, times: *const libc::timeval) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(libc::AT_FDCWD, path) } {
        // SAFETY: the caller's `times`.
        Some(at) => served(-1, || serve_meta::utimens(&at, unsafe { timeval_sets(times) }?).map(|()| 0)),
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("utimes", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::utimes(path, times) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn futimes(fd: c_int, times: *const libc::timeval) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if is_fake_fd(fd) {
        // SAFETY: the caller's `times`.
        return served(-1, || serve_meta::futimens(fd, unsafe { timeval_sets(times) }?).map(|()| 0));
    }
    match real_fd_change("futimes", fd) {
        Some(refused) => served(-1, || Err(refused)),
        // SAFETY: the caller's arguments, passed on.
        None => unsafe { real::futimes(fd, times) },
    }
}

/// Every function this file defines, for `super::link_all`.
pub(super) fn interposed() -> [*const (); 7] {
    [
        fchmodat as *const (),
        chmod as *const (),
        fchmod as *const (),
        utimensat as *const (),
        futimens as *const (),
        utimes as *const (),
        futimes as *const (),
    ]
}
