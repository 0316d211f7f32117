//! libc's calls about names: `realpath`, `chdir`/`fchdir`/`getcwd`,
//! `readlink`, `link` and `symlink` (and their `*at` forms). Paths the
//! layer owns are served or refused by [`crate::serve_names`]; a link
//! between the root and a real path is `EXDEV` (another device, as for a
//! rename). On a thread serving a run, a link or symbolic link made on
//! the real disk, and a `chdir`/`fchdir` to a real directory (which would
//! move every thread's working directory, the other runs' too), are
//! refused; elsewhere each goes to glibc.

use std::ffi::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;

use super::path_calls::{real_change, routed};
use super::{real, served, CallerErrno};
use crate::errno::Errno;
use crate::serve_names;
use crate::session::{is_fake_fd, refuse_real_change};

/// Copy `bytes` and a NUL into `out` (`capacity` bytes), or into memory
/// of `malloc`'s when `out` is null (`capacity` 0: as much as needed).
///
/// # Safety
/// `out` is null or valid for `capacity` bytes.
unsafe fn c_string_into(bytes: &[u8], out: *mut c_char, capacity: usize) -> Result<*mut c_char, Errno> {
    let needed = bytes.len() + 1;
    if capacity != 0 && capacity < needed {
        return Err(Errno(libc::ERANGE));
    }
    let out = if out.is_null() {
        // SAFETY: a plain allocation, freed by the caller as the C API says.
        let fresh = unsafe { libc::malloc(needed.max(capacity)) }.cast::<c_char>();
        if fresh.is_null() {
            return Err(Errno(libc::ENOMEM));
        }
        fresh
    } else {
        out
    };
    // SAFETY: `out` holds at least `needed` bytes (checked or allocated).
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out, bytes.len());
        *out.add(bytes.len()) = 0;
    }
    Ok(out)
}

#[no_mangle]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    let Some(at) = (unsafe { routed(libc::AT_FDCWD, path) }) else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::realpath(path, resolved) };
    };
    served(std::ptr::null_mut(), || {
        let full = serve_names::realpath(&at)?;
        let bytes = full.as_os_str().as_bytes();
        if bytes.len() >= libc::PATH_MAX as usize {
            return Err(Errno::ENAMETOOLONG);
        }
        let capacity = if resolved.is_null() { 0 } else { libc::PATH_MAX as usize };
        // SAFETY: a non-null `resolved` holds PATH_MAX bytes (realpath's contract).
        unsafe { c_string_into(bytes, resolved, capacity) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: usize) -> *mut c_char {
    let _caller_errno = CallerErrno::enter();
    let Some(dir) = serve_names::getcwd() else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::getcwd(buf, size) };
    };
    if !buf.is_null() && size == 0 {
        return served(std::ptr::null_mut(), || Err(Errno::EINVAL));
    }
    // SAFETY: `buf` is null or valid for `size` bytes (getcwd's contract).
    served(std::ptr::null_mut(), || unsafe { c_string_into(dir.as_os_str().as_bytes(), buf, size) })
}

#[no_mangle]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(libc::AT_FDCWD, path) } {
        Some(at) => served(-1, || serve_names::chdir(&at).map(|()| 0)),
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("chdir (the whole process's directory)", path) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's argument, passed on.
            None => unsafe { real::chdir(path) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn fchdir(fd: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if is_fake_fd(fd) {
        return served(-1, || serve_names::fchdir(fd).map(|()| 0));
    }
    let shown = format!("to real fd {fd}");
    match refuse_real_change("fchdir (the whole process's directory)", shown.as_bytes()) {
        Some(refused) => served(-1, || Err(refused)),
        // SAFETY: the caller's argument, passed on.
        None => unsafe { real::fchdir(fd) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn readlinkat(dirfd: c_int, path: *const c_char, buf: *mut c_char, size: usize) -> isize {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        Some(at) => served(-1, || serve_names::readlink(&at).map(|n| n as isize)),
        // SAFETY: the caller's arguments, passed on.
        None => unsafe { real::readlinkat(dirfd, path, buf, size) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn readlink(path: *const c_char, buf: *mut c_char, size: usize) -> isize {
    // SAFETY: `readlink` is `readlinkat` from the working directory.
    unsafe { readlinkat(libc::AT_FDCWD, path, buf, size) }
}

/// The bytes of C string `path` (empty for null), for a message.
///
/// # Safety
/// `path` is null or a valid C string.
unsafe fn shown<'a>(path: *const c_char) -> &'a [u8] {
    // SAFETY: the caller's contract.
    unsafe { super::c_bytes(path) }.unwrap_or_default()
}

#[no_mangle]
pub unsafe extern "C" fn linkat(
    olddirfd: c_int,
    old: *const c_char,
    newdirfd: c_int,
    new: *const c_char,
    flags: c_int,
) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C strings.
    match unsafe { (routed(olddirfd, old), routed(newdirfd, new)) } {
        // SAFETY: the caller's C string.
        (Some(_), Some(to)) => served(-1, || Err(serve_names::refuse_link("link", &to, unsafe { shown(old) }))),
        (Some(_), None) | (None, Some(_)) => served(-1, || Err(Errno::EXDEV)),
        // SAFETY: the caller's C string.
        (None, None) => match unsafe { real_change("link", new) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::linkat(olddirfd, old, newdirfd, new, flags) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn link(old: *const c_char, new: *const c_char) -> c_int {
    // SAFETY: `link` is `linkat` from the working directory.
    unsafe { linkat(libc::AT_FDCWD, old, libc::AT_FDCWD, new, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn symlinkat(target: *const c_char, newdirfd: c_int, linkpath: *const c_char) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(newdirfd, linkpath) } {
        // SAFETY: the caller's C string.
        Some(at) => served(-1, || Err(serve_names::refuse_link("symlink", &at, unsafe { shown(target) }))),
        // SAFETY: the caller's C string.
        None => match unsafe { real_change("symlink", linkpath) } {
            Some(refused) => served(-1, || Err(refused)),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::symlinkat(target, newdirfd, linkpath) },
        },
    }
}

#[no_mangle]
pub unsafe extern "C" fn symlink(target: *const c_char, linkpath: *const c_char) -> c_int {
    // SAFETY: `symlink` is `symlinkat` from the working directory.
    unsafe { symlinkat(target, libc::AT_FDCWD, linkpath) }
}

#[no_mangle]
pub unsafe extern "C" fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    match unsafe { routed(dirfd, path) } {
        Some(at) => served(-1, || serve_names::access(&at).map(|()| 0)),
        // SAFETY: the caller's arguments, passed on.
        None => unsafe { real::faccessat(dirfd, path, mode, flags) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: `access` is `faccessat` from the working directory.
    unsafe { faccessat(libc::AT_FDCWD, path, mode, 0) }
}

/// Every function this file defines, for `super::link_all`.
pub(super) fn interposed() -> [*const (); 12] {
    [
        realpath as *const (),
        getcwd as *const (),
        chdir as *const (),
        fchdir as *const (),
        readlinkat as *const (),
        readlink as *const (),
        linkat as *const (),
        link as *const (),
        symlinkat as *const (),
        symlink as *const (),
        faccessat as *const (),
        access as *const (),
    ]
}
