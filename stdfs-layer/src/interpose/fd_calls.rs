//! libc's calls on a file descriptor: a fake one (the layer's, from
//! `FAKE_FD_BASE` up) is served ([`crate::serve_fd`]); any other goes to
//! glibc (`mmap` is `map_calls`'). A fake descriptor the layer did not
//! define a function for reaches the kernel, which has no such
//! descriptor: `EBADF`, never a real file.

use std::ffi::{c_int, c_long, c_void};

use super::{real, served, CallerErrno};
use crate::errno::Errno;
use crate::serve_fd;
use crate::session::{is_fake_fd, refuse};

/// The `count` bytes at `buf`, or an empty slice when `count` is 0.
///
/// # Safety
/// `buf` is valid for `count` bytes (any pointer when `count` is 0).
unsafe fn bytes_mut<'a>(buf: *mut c_void, count: usize) -> &'a mut [u8] {
    if count == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(buf.cast(), count) }
}

/// # Safety
/// As [`bytes_mut`], read-only.
unsafe fn bytes<'a>(buf: *const c_void, count: usize) -> &'a [u8] {
    if count == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(buf.cast(), count) }
}

fn offset(at: i64) -> Result<Option<u64>, Errno> {
    u64::try_from(at).map(Some).map_err(|_| Errno::EINVAL)
}

#[no_mangle]
pub unsafe extern "C" fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::read(fd, buf, count) };
    }
    // SAFETY: the caller gives `count` writable bytes at `buf`.
    let buf = unsafe { bytes_mut(buf, count) };
    served(-1, || serve_fd::read(fd, buf, None).map(|n| n as isize))
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: usize) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::write(fd, buf, count) };
    }
    // SAFETY: the caller gives `count` readable bytes at `buf`.
    let data = unsafe { bytes(buf, count) };
    served(-1, || serve_fd::write(fd, data, None).map(|n| n as isize))
}

#[no_mangle]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, count: usize, at: i64) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::pread64(fd, buf, count, at) };
    }
    // SAFETY: the caller gives `count` writable bytes at `buf`.
    let buf = unsafe { bytes_mut(buf, count) };
    served(-1, || serve_fd::read(fd, buf, offset(at)?).map(|n| n as isize))
}

#[no_mangle]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, count: usize, at: i64) -> isize {
    // SAFETY: the same function on x86-64 (64-bit `off_t`).
    unsafe { pread64(fd, buf, count, at) }
}

#[no_mangle]
pub unsafe extern "C" fn pwrite64(fd: c_int, buf: *const c_void, count: usize, at: i64) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::pwrite64(fd, buf, count, at) };
    }
    // SAFETY: the caller gives `count` readable bytes at `buf`.
    let data = unsafe { bytes(buf, count) };
    served(-1, || serve_fd::write(fd, data, offset(at)?).map(|n| n as isize))
}

#[no_mangle]
pub unsafe extern "C" fn pwrite(fd: c_int, buf: *const c_void, count: usize, at: i64) -> isize {
    // SAFETY: the same function on x86-64 (64-bit `off_t`).
    unsafe { pwrite64(fd, buf, count, at) }
}

/// The buffers of an `iovec` array.
///
/// # Safety
/// `iov` holds `iovcnt` valid `iovec`s, each valid for its length.
unsafe fn iovecs<'a>(iov: *const libc::iovec, iovcnt: c_int) -> Result<Vec<&'a mut [u8]>, Errno> {
    let count = usize::try_from(iovcnt).map_err(|_| Errno::EINVAL)?;
    if count > libc::UIO_MAXIOV as usize {
        return Err(Errno::EINVAL);
    }
    // SAFETY: the caller's contract; `count` is at most UIO_MAXIOV.
    let list = if count == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(iov, count) } };
    // SAFETY: each `iovec` is valid for its length (the caller's contract).
    Ok(list.iter().map(|v| unsafe { bytes_mut(v.iov_base, v.iov_len) }).collect())
}

/// A vectored read: each buffer in turn, stopping at a short one.
fn read_vectored(fd: c_int, buffers: Vec<&mut [u8]>, at: Option<u64>) -> Result<isize, Errno> {
    let mut done = 0usize;
    for buf in buffers {
        let want = buf.len();
        let n = serve_fd::read(fd, buf, at.map(|a| a + done as u64))?;
        done += n;
        if n < want {
            break;
        }
    }
    Ok(done as isize)
}

/// A vectored write: the buffers gathered into one write of the disk.
fn write_vectored(fd: c_int, buffers: Vec<&mut [u8]>, at: Option<u64>) -> Result<isize, Errno> {
    let data: Vec<u8> = buffers.concat();
    serve_fd::write(fd, &data, at).map(|n| n as isize)
}

#[no_mangle]
pub unsafe extern "C" fn readv(fd: c_int, iov: *const libc::iovec, iovcnt: c_int) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::readv(fd, iov, iovcnt) };
    }
    // SAFETY: the caller's `iovec`s.
    served(-1, || read_vectored(fd, unsafe { iovecs(iov, iovcnt) }?, None))
}

#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const libc::iovec, iovcnt: c_int) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::writev(fd, iov, iovcnt) };
    }
    // SAFETY: the caller's `iovec`s.
    served(-1, || write_vectored(fd, unsafe { iovecs(iov, iovcnt) }?, None))
}

#[no_mangle]
pub unsafe extern "C" fn preadv64(fd: c_int, iov: *const libc::iovec, iovcnt: c_int, at: i64) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::preadv64(fd, iov, iovcnt, at) };
    }
    // SAFETY: the caller's `iovec`s.
    served(-1, || read_vectored(fd, unsafe { iovecs(iov, iovcnt) }?, offset(at)?))
}

#[no_mangle]
pub unsafe extern "C" fn preadv(fd: c_int, iov: *const libc::iovec, iovcnt: c_int, at: i64) -> isize {
    // SAFETY: the same function on x86-64.
    unsafe { preadv64(fd, iov, iovcnt, at) }
}

#[no_mangle]
pub unsafe extern "C" fn pwritev64(fd: c_int, iov: *const libc::iovec, iovcnt: c_int, at: i64) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::pwritev64(fd, iov, iovcnt, at) };
    }
    // SAFETY: the caller's `iovec`s.
    served(-1, || write_vectored(fd, unsafe { iovecs(iov, iovcnt) }?, offset(at)?))
}

#[no_mangle]
pub unsafe extern "C" fn pwritev(fd: c_int, iov: *const libc::iovec, iovcnt: c_int, at: i64) -> isize {
    // SAFETY: the same function on x86-64.
    unsafe { pwritev64(fd, iov, iovcnt, at) }
}

#[no_mangle]
pub unsafe extern "C" fn lseek64(fd: c_int, at: i64, whence: c_int) -> i64 {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::lseek64(fd, at, whence) };
    }
    served(-1, || serve_fd::lseek(fd, at, whence).map(|c| c as i64))
}

#[no_mangle]
pub unsafe extern "C" fn lseek(fd: c_int, at: i64, whence: c_int) -> i64 {
    // SAFETY: the same function on x86-64.
    unsafe { lseek64(fd, at, whence) }
}

#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::fsync(fd) };
    }
    served(-1, || serve_fd::sync(fd, false).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::fdatasync(fd) };
    }
    served(-1, || serve_fd::sync(fd, true).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn ftruncate64(fd: c_int, len: i64) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::ftruncate64(fd, len) };
    }
    served(-1, || serve_fd::truncate(fd, len).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn ftruncate(fd: c_int, len: i64) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { ftruncate64(fd, len) }
}

#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::close(fd) };
    }
    served(-1, || serve_fd::close(fd).map(|()| 0))
}

#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::dup(fd) };
    }
    served(-1, || serve_fd::dup(fd, false))
}

/// `dup2`/`dup3` naming a fake descriptor on either side: refused (the
/// layer cannot place a descriptor at a number the caller picks).
fn refuse_dup_onto(old: c_int, new: c_int) -> Errno {
    refuse(
        None,
        Errno::EINVAL,
        format!("dup2/dup3 from fd {old} onto fd {new}: a simulated fd on either side is not served"),
    )
}

#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(old) && !is_fake_fd(new) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::dup2(old, new) };
    }
    served(-1, || Err(refuse_dup_onto(old, new)))
}

#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(old) && !is_fake_fd(new) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::dup3(old, new, flags) };
    }
    served(-1, || Err(refuse_dup_onto(old, new)))
}

/// `fcntl(fd, cmd, ...)`: the optional argument taken as a fixed `long`
/// (see the module doc of `interpose`).
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::fcntl64(fd, cmd, arg) };
    }
    let answer = served(-1, || serve_fd::fcntl(fd, cmd, arg));
    if answer == 0 && matches!(cmd, libc::F_GETLK | libc::F_OFD_GETLK) {
        // SAFETY: a served `F_GETLK`'s argument is the caller's `struct
        // flock` (served only in a live process, `serve_fd::fcntl`).
        unsafe { (*(arg as *mut libc::flock)).l_type = libc::F_UNLCK as libc::c_short };
    }
    answer
}

#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    // SAFETY: the same function on x86-64.
    unsafe { fcntl64(fd, cmd, arg) }
}

#[no_mangle]
pub unsafe extern "C" fn flock(fd: c_int, operation: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::flock(fd, operation) };
    }
    served(-1, || serve_fd::flock(fd, operation).map(|()| 0))
}
