//! libc's calls naming a path (absolute, or relative to a directory
//! descriptor): the layer's ([`crate::route::route`]) are served by
//! [`crate::serve_path`]; the rest go to glibc. The plain forms (`open`,
//! `stat`, `rename`, …) pass on through their `*at` forms with
//! `AT_FDCWD`, which glibc defines to mean the same. On a thread serving
//! a run, a change outside the root is refused instead of passed on
//! ([`real_change`]).

use std::ffi::{c_char, c_int, c_uint};

use super::{c_bytes, cstat, real, served, CallerErrno};
use crate::errno::Errno;
use crate::meta::Meta;
use crate::route::{route, At};
use crate::session::is_fake_fd;
use crate::{serve_fd, serve_path};

/// The layer's path `(dirfd, path)`, if it is one.
///
/// # Safety
/// `path` is null or a valid C string.
pub(super) unsafe fn routed(dirfd: c_int, path: *const c_char) -> Option<At> {
    // SAFETY: the caller's contract.
    route(dirfd, unsafe { c_bytes(path) }?)
}

/// The refusal of a change to the real file system named by C string
/// `path`, when this thread serves a run
/// ([`crate::session::refuse_real_change`]).
///
/// # Safety
/// `path` is null or a valid C string.
pub(super) unsafe fn real_change(op: &str, path: *const c_char) -> Option<Errno> {
    // SAFETY: the caller's contract.
    crate::session::refuse_real_change(op, unsafe { c_bytes(path) }.unwrap_or_default())
}

/// Open flags that change a file or make one.
const CHANGING_OPEN: c_int = libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND;

/// `open(path, flags, mode)`: `mode` taken as a fixed argument (see the
/// module doc of `interpose`).
#[no_mangle]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        // SAFETY: the caller's C string.
        None if flags & CHANGING_OPEN != 0 => match unsafe { real_change("open for writing", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::openat64(dirfd, path, flags, mode) },
        },
        None => {
            // SAFETY: the caller's arguments, passed on.
            let fd = unsafe { real::openat64(dirfd, path, flags, mode) };
            // SAFETY: the caller's C string.
            if fd >= 0 && super::entropy_calls::is_random_device(unsafe { super::c_bytes(path) }.unwrap_or_default()) {
                super::entropy_calls::note_random_fd(fd);
            }
            fd
        }
        Some(at) => served(-1, || serve_path::open(&at, flags)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { openat64(dirfd, path, flags, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: `open` is `openat` from the working directory.
    unsafe { openat64(libc::AT_FDCWD, path, flags, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
    // SAFETY: `open` is `openat` from the working directory.
    unsafe { openat64(libc::AT_FDCWD, path, flags, mode) }
}

/// What a `stat` call names, when it is the layer's.
enum StatOf {
    /// `AT_EMPTY_PATH` on a fake descriptor: `fstat`.
    Fd(c_int),
    Path(At),
}

/// Whether `(dirfd, path, flags)` of a `stat` call is the layer's.
fn stat_route(dirfd: c_int, path: Option<&[u8]>, flags: c_int) -> Option<StatOf> {
    let path = path?;
    if path.is_empty() {
        return (is_fake_fd(dirfd) && flags & libc::AT_EMPTY_PATH != 0).then_some(StatOf::Fd(dirfd));
    }
    route(dirfd, path).map(StatOf::Path)
}

fn stat_served(of: &StatOf) -> Result<Meta, Errno> {
    match of {
        StatOf::Fd(fd) => serve_fd::fstat(*fd),
        StatOf::Path(at) => serve_path::stat(at),
    }
}

#[no_mangle]
pub unsafe extern "C" fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    let Some(of) = stat_route(dirfd, unsafe { c_bytes(path) }, flags) else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::fstatat64(dirfd, path, buf, flags) };
    };
    // SAFETY: the caller's `buf` is valid for one `stat64`.
    served(-1, || stat_served(&of).map(|m| unsafe { cstat::fill_stat64(m, buf) }).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn fstatat(dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { fstatat64(dirfd, path, buf, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn stat64(path: *const c_char, buf: *mut libc::stat64) -> c_int {
    // SAFETY: `stat` is `fstatat` from the working directory.
    unsafe { fstatat64(libc::AT_FDCWD, path, buf, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn stat(path: *const c_char, buf: *mut libc::stat64) -> c_int {
    // SAFETY: as `stat64`.
    unsafe { fstatat64(libc::AT_FDCWD, path, buf, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn lstat64(path: *const c_char, buf: *mut libc::stat64) -> c_int {
    // SAFETY: `lstat` is `fstatat` without following a last link.
    unsafe { fstatat64(libc::AT_FDCWD, path, buf, libc::AT_SYMLINK_NOFOLLOW) }
}

#[no_mangle]
pub unsafe extern "C" fn lstat(path: *const c_char, buf: *mut libc::stat64) -> c_int {
    // SAFETY: as `lstat64`.
    unsafe { fstatat64(libc::AT_FDCWD, path, buf, libc::AT_SYMLINK_NOFOLLOW) }
}

#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, buf: *mut libc::stat64) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::fstat64(fd, buf) };
    }
    // SAFETY: the caller's `buf` is valid for one `stat64`.
    served(-1, || serve_fd::fstat(fd).map(|m| unsafe { cstat::fill_stat64(m, buf) }).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat64) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { fstat64(fd, buf) }
}

#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    let Some(of) = stat_route(dirfd, unsafe { c_bytes(path) }, flags) else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::statx(dirfd, path, flags, mask, buf) };
    };
    // SAFETY: the caller's `buf` is valid for one `statx`.
    served(-1, || stat_served(&of).map(|m| unsafe { cstat::fill_statx(m, buf) }).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn renameat2(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C strings.
    let (from, to) = unsafe { (routed(olddirfd, old), routed(newdirfd, new)) };
    match (from, to) {
        // SAFETY: the caller's C string.
        (None, None) => match unsafe { real_change("rename", old) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::renameat2(olddirfd, old, newdirfd, new, flags) },
        },
        (Some(from), Some(to)) if flags & !libc::RENAME_NOREPLACE == 0 => {
            served(-1, || serve_path::rename(&from, &to, flags != 0).map(|()| 0))
        }
        (Some(_), Some(_)) => served(-1, || {
            Err(crate::session::refuse(
                None,
                Errno::ENOTSUP,
                format!("renameat2 with flags {flags:#x} under the root is not served"),
            ))
        }),
        // One side simulated, the other real: another device.
        _ => served(-1, || Err(Errno::EXDEV)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn renameat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char) -> c_int {
    // SAFETY: `renameat` is `renameat2` without flags.
    unsafe { renameat2(olddirfd, old, newdirfd, new, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: `rename` is `renameat` from the working directory.
    unsafe { renameat2(libc::AT_FDCWD, old, libc::AT_FDCWD, new, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("unlink", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::unlinkat(dirfd, path, flags) },
        },
        Some(at) => served(-1, || serve_path::unlink(&at, flags & libc::AT_REMOVEDIR != 0).map(|()| 0)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    // SAFETY: `unlink` is `unlinkat` from the working directory.
    unsafe { unlinkat(libc::AT_FDCWD, path, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn rmdir(path: *const c_char) -> c_int {
    // SAFETY: `rmdir` is `unlinkat` with AT_REMOVEDIR.
    unsafe { unlinkat(libc::AT_FDCWD, path, libc::AT_REMOVEDIR) }
}

#[no_mangle]
pub unsafe extern "C" fn mkdirat(dirfd: c_int, path: *const c_char, mode: libc::mode_t) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("mkdir", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::mkdirat(dirfd, path, mode) },
        },
        Some(at) => served(-1, || serve_path::mkdir(&at).map(|()| 0)),
    }
}

#[no_mangle]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: libc::mode_t) -> c_int {
    // SAFETY: `mkdir` is `mkdirat` from the working directory.
    unsafe { mkdirat(libc::AT_FDCWD, path, mode) }
}
