//! stdio's ways to a `FILE` on the layer's files: `fopen`, `fopen64` and
//! `fdopen` of a simulated descriptor; `freopen` onto one is refused.
//!
//! glibc's `fopen` opens, reads and writes through its internal aliases
//! (`__open`, `__read`, …), which no interposition reaches: a `FILE` it
//! made on a path under the root would read the real disk (where the root
//! does not exist). So a `FILE` of the layer's is a cookie stream
//! (`fopencookie`) whose read, write, seek and close are this layer's own
//! functions on the descriptor, opened by the layer's `openat64`. Its
//! `_fileno` is then set to that descriptor (glibc's cookie streams keep
//! -2 there and never use it for I/O: every read, write, seek and close
//! goes through the cookie's functions), so that `fileno(f)` answers the
//! descriptor and a program's `fsync(fileno(f))` or `fstat(fileno(f))`
//! is served like any other call on it. Where `_fileno` lies is glibc's
//! x86-64 layout (`struct _IO_FILE`), checked at each use through
//! `fileno`.
//!
//! A path that is not the layer's goes to glibc's `fopen` untouched.

use std::ffi::{c_char, c_int, c_void, CStr};

use super::{path_calls, real, served, CallerErrno};
use crate::errno::Errno;
use crate::session::{is_fake_fd, refuse};

/// glibc's `cookie_io_functions_t` (`stdio.h`, `_GNU_SOURCE`), which the
/// `libc` crate does not define.
#[repr(C)]
struct CookieFunctions {
    read: unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> isize,
    write: unsafe extern "C" fn(*mut c_void, *const c_char, usize) -> isize,
    seek: unsafe extern "C" fn(*mut c_void, *mut i64, c_int) -> c_int,
    close: unsafe extern "C" fn(*mut c_void) -> c_int,
}

extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, functions: CookieFunctions) -> *mut libc::FILE;
}

/// Where glibc's x86-64 `struct _IO_FILE` keeps `_fileno` (after `_flags`
/// and eleven buffer pointers, `_markers` and `_chain`).
const FILENO_OFFSET: usize = 112;

/// `open(2)`'s flags for an `fopen` mode string (`fopen(3)`): its first
/// letter, `+`, and glibc's `x` (exclusive) and `e` (close-on-exec);
/// `None` for a mode `fopen` rejects.
fn open_flags(mode: &[u8]) -> Option<c_int> {
    let (first, rest) = mode.split_first()?;
    let mut flags = match first {
        b'r' => libc::O_RDONLY,
        b'w' => libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
        b'a' => libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
        _ => return None,
    };
    for &c in rest.iter().take_while(|&&c| c != b',') {
        match c {
            b'+' => flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR,
            b'x' => flags |= libc::O_EXCL,
            b'e' => flags |= libc::O_CLOEXEC,
            _ => {}
        }
    }
    Some(flags)
}

/// End a call of this module's that made served calls of the layer's own
/// (each with its own `CallerErrno`): the caller's `errno` stays as it was
/// on success, and is the failed inner call's on failure.
pub(super) fn settle(failed: bool) {
    // SAFETY: errno is this thread's.
    let inner = unsafe { *libc::__errno_location() };
    super::decide(failed.then_some(inner));
}

/// The descriptor a cookie stands for.
fn fd_of(cookie: *mut c_void) -> c_int {
    let fd = cookie as usize as c_int;
    debug_assert!(is_fake_fd(fd), "a cookie stream of the layer's is on a simulated descriptor");
    fd
}

unsafe extern "C" fn cookie_read(cookie: *mut c_void, buf: *mut c_char, size: usize) -> isize {
    // SAFETY: stdio gives `size` writable bytes at `buf`.
    unsafe { super::fd_calls::read(fd_of(cookie), buf.cast(), size) }
}

unsafe extern "C" fn cookie_write(cookie: *mut c_void, buf: *const c_char, size: usize) -> isize {
    // SAFETY: stdio gives `size` readable bytes at `buf`.
    let n = unsafe { super::fd_calls::write(fd_of(cookie), buf.cast(), size) };
    // A cookie's write answers 0 for an error (`fopencookie(3)`).
    n.max(0)
}

unsafe extern "C" fn cookie_seek(cookie: *mut c_void, at: *mut i64, whence: c_int) -> c_int {
    // SAFETY: stdio passes its offset to read and replace.
    let now = unsafe { super::fd_calls::lseek64(fd_of(cookie), *at, whence) };
    if now < 0 {
        return -1;
    }
    // SAFETY: as above.
    unsafe { *at = now };
    0
}

unsafe extern "C" fn cookie_close(cookie: *mut c_void) -> c_int {
    // SAFETY: the stream's own descriptor, closed with it.
    unsafe { super::fd_calls::close(fd_of(cookie)) }
}

/// A `FILE` over simulated descriptor `fd`, whose `fileno` is `fd`; null
/// (and `fd` left open: the caller's) if stdio cannot make one.
///
/// # Safety
/// `mode` is a valid C string.
unsafe fn cookie_stream(fd: c_int, mode: *const c_char) -> *mut libc::FILE {
    assert!(is_fake_fd(fd));
    let functions = CookieFunctions { read: cookie_read, write: cookie_write, seek: cookie_seek, close: cookie_close };
    // SAFETY: a valid mode string and the functions above, which take the
    // cookie for the descriptor it is.
    let stream = unsafe { fopencookie(fd as usize as *mut c_void, mode, functions) };
    if stream.is_null() {
        return stream;
    }
    // SAFETY: glibc's `FILE` is at least `FILENO_OFFSET + 4` bytes, an
    // `int` there aligned (`struct _IO_FILE`, x86-64).
    unsafe { *stream.cast::<u8>().add(FILENO_OFFSET).cast::<c_int>() = fd };
    // SAFETY: the stream just made.
    let seen = unsafe { libc::fileno(stream) };
    assert_eq!(seen, fd, "glibc's FILE keeps its descriptor at byte {FILENO_OFFSET}");
    stream
}

/// `fopen` on the layer's path `path`: opened by the layer, wrapped.
///
/// # Safety
/// `path` and `mode` are valid C strings.
unsafe fn open_stream(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    // SAFETY: the caller's C string.
    let Some(flags) = open_flags(unsafe { CStr::from_ptr(mode) }.to_bytes()) else {
        return served(std::ptr::null_mut(), || Err(Errno::EINVAL));
    };
    // SAFETY: the caller's C string; the layer's own `open`.
    let fd = unsafe { path_calls::openat64(libc::AT_FDCWD, path, flags, 0o666) };
    if fd < 0 {
        settle(true);
        return std::ptr::null_mut();
    }
    // SAFETY: the caller's mode string.
    let stream = unsafe { cookie_stream(fd, mode) };
    if stream.is_null() {
        // SAFETY: the descriptor opened above, not handed out.
        unsafe { super::fd_calls::close(fd) };
        return served(std::ptr::null_mut(), || Err(Errno(libc::ENOMEM)));
    }
    settle(false);
    stream
}

#[no_mangle]
pub unsafe extern "C" fn fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    if mode.is_null() || unsafe { path_calls::routed(libc::AT_FDCWD, path) }.is_none() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::fopen64(path, mode) };
    }
    // SAFETY: the caller's C strings.
    unsafe { open_stream(path, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn fopen(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
    // SAFETY: the same function on x86-64.
    unsafe { fopen64(path, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut libc::FILE {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) || mode.is_null() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::fdopen(fd, mode) };
    }
    // SAFETY: the caller's mode string.
    let stream = unsafe { cookie_stream(fd, mode) };
    if stream.is_null() {
        return served(std::ptr::null_mut(), || Err(Errno(libc::ENOMEM)));
    }
    settle(false);
    stream
}

/// `freopen` onto a path of the layer's, or of a stream of the layer's:
/// refused (glibc reopens through its internal calls, on the stream's
/// own descriptor); any other passes to glibc.
#[no_mangle]
pub unsafe extern "C" fn freopen64(
    path: *const c_char,
    mode: *const c_char,
    stream: *mut libc::FILE,
) -> *mut libc::FILE {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: a stream the caller holds (or null, checked).
    let on_ours = !stream.is_null() && is_fake_fd(unsafe { libc::fileno(stream) });
    // SAFETY: the caller's C string.
    if on_ours || unsafe { path_calls::routed(libc::AT_FDCWD, path) }.is_some() {
        return served(std::ptr::null_mut(), || {
            Err(refuse(None, Errno(libc::ENOSYS), "freopen onto or of a simulated file is not served".to_string()))
        });
    }
    // SAFETY: the caller's arguments, passed on.
    unsafe { real::freopen64(path, mode, stream) }
}

#[no_mangle]
pub unsafe extern "C" fn freopen(path: *const c_char, mode: *const c_char, stream: *mut libc::FILE) -> *mut libc::FILE {
    // SAFETY: the same function on x86-64.
    unsafe { freopen64(path, mode, stream) }
}

extern "C" {
    static mut stdin: *mut libc::FILE;
    static mut stdout: *mut libc::FILE;
    static mut stderr: *mut libc::FILE;
}

/// A new program image found a simulated file at standard descriptor `fd`
/// (0, 1 or 2: a shell's `cmd > FILE`, `crate::live_exec`): glibc's
/// `stdin`, `stdout` or `stderr` would read and write it through internal
/// calls the layer never sees (the kernel's placeholder there answers
/// `EBADF`), so the variable is pointed at a cookie stream of the
/// layer's on it instead, before the program has used the old one (glibc's
/// `printf`, `putchar` and `fwrite(stdout, …)` read the variable). `stderr`
/// stays unbuffered, as it was.
pub(crate) fn adopt_standard_stream(fd: c_int, writable: bool) -> Result<(), Errno> {
    assert!((0..=2).contains(&fd) && is_fake_fd(fd));
    let mode = if fd == 0 {
        c"r"
    } else if writable {
        c"w"
    } else {
        c"r"
    };
    // SAFETY: a valid mode string.
    let stream = unsafe { cookie_stream(fd, mode.as_ptr()) };
    if stream.is_null() {
        return Err(Errno(libc::ENOMEM));
    }
    // SAFETY: glibc's own stream variables, assigned before the program
    // runs (from the preloaded object's constructor), on its one thread.
    unsafe {
        match fd {
            0 => stdin = stream,
            1 => stdout = stream,
            _ => {
                libc::setvbuf(stream, std::ptr::null_mut(), libc::_IONBF, 0);
                stderr = stream;
            }
        }
    }
    Ok(())
}

/// This module's functions, for `interpose::link_all`.
pub(super) fn interposed() -> [*const (); 5] {
    [fopen64 as *const (), fopen as *const (), fdopen as *const (), freopen64 as *const (), freopen as *const ()]
}

#[cfg(test)]
mod tests {
    use super::open_flags;

    #[test]
    fn modes_map_to_open_flags() {
        assert_eq!(open_flags(b"r"), Some(libc::O_RDONLY));
        assert_eq!(open_flags(b"rb+"), Some(libc::O_RDWR));
        assert_eq!(open_flags(b"we"), Some(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC));
        assert_eq!(open_flags(b"a+"), Some(libc::O_RDWR | libc::O_CREAT | libc::O_APPEND));
        assert_eq!(open_flags(b"wx,ccs=UTF-8"), Some(libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL));
        assert_eq!(open_flags(b"q"), None);
        assert_eq!(open_flags(b""), None);
    }
}
