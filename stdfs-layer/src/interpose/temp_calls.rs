//! `mkstemp` and its kin on a template under the root: glibc's make the
//! name and open it through internal calls no interposition reaches (git's
//! `xmkstemp`, `git init`'s symlink probe), so a template of the layer's is
//! filled here, from the run's random stream (the seed's, so the names are
//! the same in every run), and opened `O_CREAT | O_EXCL` by the layer's
//! `openat64`, trying again on a name already taken, as glibc does. Any
//! other template goes to glibc's function.

use std::ffi::{c_char, c_int};

use super::stdio_calls::settle;
use super::{path_calls, real, served, CallerErrno};
use crate::errno::Errno;
use crate::session;

/// The letters a template's `XXXXXX` become (glibc's set).
const LETTERS: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// Names tried before giving up with `EEXIST` (glibc tries 62^3).
const ATTEMPTS: u32 = 1_000;

/// Fill the six `X`s ending at `end` of `template` and open the name, until
/// a name is free; the descriptor, or -1 with `errno` set.
///
/// # Safety
/// `template` is a writable C string.
unsafe fn make(template: *mut c_char, suffix_len: usize, flags: c_int) -> c_int {
    // SAFETY: the caller's writable C string.
    let len = unsafe { libc::strlen(template) };
    if len < 6 + suffix_len {
        return served(-1, || Err(Errno::EINVAL));
    }
    let start = len - 6 - suffix_len;
    // SAFETY: `len` bytes of the caller's string.
    let name = unsafe { std::slice::from_raw_parts_mut(template.cast::<u8>(), len) };
    if name[start..start + 6] != *b"XXXXXX" {
        return served(-1, || Err(Errno::EINVAL));
    }
    let open_flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
    for _ in 0..ATTEMPTS {
        let mut draw = [0u8; 6];
        if served(Err(()), || session::with_entropy(|e| e.fill(&mut draw)).map(Ok)).is_err() {
            return -1;
        }
        for (at, byte) in name[start..start + 6].iter_mut().zip(draw) {
            *at = LETTERS[usize::from(byte) % LETTERS.len()];
        }
        // SAFETY: the caller's C string, now a name; the layer's own open.
        let fd = unsafe { path_calls::openat64(libc::AT_FDCWD, template, open_flags, 0o600) };
        // SAFETY: errno is this thread's.
        if fd >= 0 || unsafe { *libc::__errno_location() } != libc::EEXIST {
            settle(fd < 0);
            return fd;
        }
    }
    served(-1, || Err(Errno(libc::EEXIST)))
}

/// Whether `template` is the layer's, on a thread serving a run.
///
/// # Safety
/// `template` is null or a C string.
unsafe fn ours(template: *const c_char) -> bool {
    // SAFETY: the caller's contract.
    session::has_session() && unsafe { path_calls::routed(libc::AT_FDCWD, template) }.is_some()
}

#[no_mangle]
pub unsafe extern "C" fn mkstemp(template: *mut c_char) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    if unsafe { !ours(template) } {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::mkostemps(template, 0, 0) };
    }
    // SAFETY: the caller's writable C string.
    unsafe { make(template, 0, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn mkstemp64(template: *mut c_char) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { mkstemp(template) }
}

#[no_mangle]
pub unsafe extern "C" fn mkostemp(template: *mut c_char, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    if unsafe { !ours(template) } {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::mkostemps(template, 0, flags) };
    }
    // SAFETY: the caller's writable C string.
    unsafe { make(template, 0, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn mkstemps(template: *mut c_char, suffix_len: c_int) -> c_int {
    // SAFETY: the caller's arguments, passed on.
    unsafe { mkostemps(template, suffix_len, 0) }
}

#[no_mangle]
pub unsafe extern "C" fn mkostemps(template: *mut c_char, suffix_len: c_int, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    if unsafe { !ours(template) } {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::mkostemps(template, suffix_len, flags) };
    }
    let Ok(suffix_len) = usize::try_from(suffix_len) else {
        return served(-1, || Err(Errno::EINVAL));
    };
    // SAFETY: the caller's writable C string.
    unsafe { make(template, suffix_len, flags) }
}

/// This module's functions, for `interpose::link_all`.
pub(super) fn interposed() -> [*const (); 5] {
    [mkstemp as *const (), mkstemp64 as *const (), mkostemp as *const (), mkstemps as *const (), mkostemps as *const ()]
}
