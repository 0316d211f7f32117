//! libc's calls that copy between descriptors or size a file in place:
//! `copy_file_range`, `sendfile`, `fallocate`, `posix_fallocate`,
//! `truncate` (by path: on a real path from a run's thread, refused). Between
//! two fake descriptors a copy is served ([`crate::serve_copy`]), and so
//! is a fake descriptor's allocation ([`crate::serve_space`]); a copy
//! with one side simulated and the other real is refused, with `EIO`: not
//! one of the errors (`EXDEV`, `EINVAL`, `EBADF`, …) std's `io::copy`
//! takes for its cue to copy by `read` and `write` instead, so the copy
//! fails as a whole and no byte crosses between the run and the real
//! disk. Real descriptors on both sides go to glibc.

use std::ffi::c_int;

use super::{real, served, CallerErrno};
use crate::errno::Errno;
use crate::session::{is_fake_fd, refuse};
use crate::{serve_copy, serve_space};

/// The offset `*at` names, if `at` is not null.
///
/// # Safety
/// `at` is null or valid for one `i64`.
unsafe fn offset_of(at: *const i64) -> Result<Option<u64>, Errno> {
    if at.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract.
    u64::try_from(unsafe { *at }).map(Some).map_err(|_| Errno::EINVAL)
}

/// Move `*at` on by `n`, if `at` is not null.
///
/// # Safety
/// `at` is null or valid for one `i64`.
unsafe fn advance(at: *mut i64, n: usize) {
    if !at.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *at += n as i64 };
    }
}

fn refuse_mixed(op: &str, fd_in: c_int, fd_out: c_int) -> Errno {
    let what = format!("{op} from fd {fd_in} to fd {fd_out}: one simulated and one real descriptor (the run's bytes would cross the real disk)");
    refuse(None, Errno::EIO, what)
}

#[no_mangle]
pub unsafe extern "C" fn copy_file_range(
    fd_in: c_int,
    off_in: *mut i64,
    fd_out: c_int,
    off_out: *mut i64,
    len: usize,
    flags: libc::c_uint,
) -> isize {
    let _caller_errno = CallerErrno::enter();
    match (is_fake_fd(fd_in), is_fake_fd(fd_out)) {
        // SAFETY: the caller's arguments, passed on.
        (false, false) => unsafe { real::copy_file_range(fd_in, off_in, fd_out, off_out, len, flags) },
        (true, true) => served(-1, || {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            // SAFETY: the caller's offsets: null or valid.
            let (from, to) = unsafe { (offset_of(off_in)?, offset_of(off_out)?) };
            let n = serve_copy::copy(fd_in, from, fd_out, to, len)?;
            // SAFETY: as above.
            unsafe { (advance(off_in, n), advance(off_out, n)) };
            Ok(n as isize)
        }),
        _ => served(-1, || Err(refuse_mixed("copy_file_range", fd_in, fd_out))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn sendfile64(fd_out: c_int, fd_in: c_int, offset: *mut i64, count: usize) -> isize {
    let _caller_errno = CallerErrno::enter();
    match (is_fake_fd(fd_in), is_fake_fd(fd_out)) {
        // SAFETY: the caller's arguments, passed on.
        (false, false) => unsafe { real::sendfile64(fd_out, fd_in, offset, count) },
        (true, true) => served(-1, || {
            // SAFETY: the caller's offset: null or valid.
            let from = unsafe { offset_of(offset)? };
            let n = serve_copy::copy(fd_in, from, fd_out, None, count)?;
            // SAFETY: as above.
            unsafe { advance(offset, n) };
            Ok(n as isize)
        }),
        _ => served(-1, || Err(refuse_mixed("sendfile", fd_in, fd_out))),
    }
}

#[no_mangle]
pub unsafe extern "C" fn sendfile(fd_out: c_int, fd_in: c_int, offset: *mut i64, count: usize) -> isize {
    // SAFETY: the same function on x86-64 (64-bit `off_t`).
    unsafe { sendfile64(fd_out, fd_in, offset, count) }
}

#[no_mangle]
pub unsafe extern "C" fn fallocate64(fd: c_int, mode: c_int, offset: i64, len: i64) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::fallocate64(fd, mode, offset, len) };
    }
    served(-1, || serve_space::fallocate(fd, mode, offset, len).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn fallocate(fd: c_int, mode: c_int, offset: i64, len: i64) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { fallocate64(fd, mode, offset, len) }
}

/// `posix_fallocate`: `fallocate` mode 0, whose failure is its return
/// value (`errno` is left as it was, as glibc's does).
#[no_mangle]
pub unsafe extern "C" fn posix_fallocate64(fd: c_int, offset: i64, len: i64) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::posix_fallocate64(fd, offset, len) };
    }
    let code = served(-1, || serve_space::fallocate(fd, 0, offset, len).map(|()| 0));
    if code == 0 {
        return 0;
    }
    // SAFETY: the calling thread's errno slot, just set by `served`.
    let failure = unsafe { *libc::__errno_location() };
    super::caller_errno::decide(None);
    failure
}

#[no_mangle]
pub unsafe extern "C" fn posix_fallocate(fd: c_int, offset: i64, len: i64) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { posix_fallocate64(fd, offset, len) }
}

#[no_mangle]
pub unsafe extern "C" fn truncate64(path: *const std::ffi::c_char, len: i64) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { super::path_calls::routed(libc::AT_FDCWD, path) } {
        Some(at) => served(-1, || serve_space::truncate_path(&at, len).map(|()| 0)),
        // SAFETY: the caller's C string.
        None => match unsafe { super::path_calls::real_change("truncate", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::truncate64(path, len) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn truncate(path: *const std::ffi::c_char, len: i64) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { truncate64(path, len) }
}

/// Every function this file defines, for `super::link_all`.
pub(super) fn interposed() -> [*const (); 9] {
    [
        copy_file_range as *const (),
        sendfile64 as *const (),
        sendfile as *const (),
        fallocate64 as *const (),
        fallocate as *const (),
        posix_fallocate64 as *const (),
        posix_fallocate as *const (),
        truncate64 as *const (),
        truncate as *const (),
    ]
}
