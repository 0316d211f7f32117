//! libc's calls on a file descriptor: a fake one (the layer's, from
//! `FAKE_FD_BASE` up) is served ([`crate::serve_fd`]); any other goes to
//! glibc (`mmap` is `map_calls`'). A fake descriptor the layer did not
//! define a function for reaches the kernel, which has no such
//! descriptor: `EBADF`, never a real file.

use std::ffi::{c_int, c_long, c_void};

use super::{real, served, CallerErrno};
use crate::errno::Errno;
use crate::serve_fd;
use crate::session::{forget_low, is_fake_fd, place_low, refuse, FAKE_FD_BASE};

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
        if let Some(served_random) = super::entropy_calls::read_random(fd, buf, count) {
            return served_random;
        }
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
        super::entropy_calls::forget_random_fd(fd);
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::close(fd) };
    }
    let closed = served(-1, || serve_fd::close(fd).map(|()| 0));
    if fd < FAKE_FD_BASE && closed == 0 {
        // A low number `dup2` placed a simulated file at: the kernel's
        // placeholder there goes too, as the kernel would close the file.
        forget_low(fd);
        // SAFETY: the placeholder descriptor this layer put at `fd`.
        unsafe { real::close(fd) };
    }
    closed
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

/// `dup2`/`dup3` naming a fake descriptor the layer cannot serve: onto a
/// number in the layer's own range, or anywhere outside a preloaded
/// program (an engine in the harness's process has no reason to).
fn refuse_dup_onto(old: c_int, new: c_int) -> Errno {
    refuse(
        None,
        Errno::EINVAL,
        format!("dup2/dup3 from fd {old} onto fd {new}: a simulated fd on either side is not served"),
    )
}

/// A kernel descriptor that holds a low number while a simulated file is
/// placed there, so no real `open` is handed that number: `/dev/null`
/// opened `O_PATH`, which fails every read and write with `EBADF` — a
/// call that bypasses the layer (an `exec`'d program's, a raw one) meets
/// an error, never a real file.
fn placeholder() -> Result<c_int, Errno> {
    // SAFETY: a NUL-terminated path and plain flags.
    let fd = unsafe { real::openat64(libc::AT_FDCWD, c"/dev/null".as_ptr(), libc::O_PATH | libc::O_CLOEXEC, 0) };
    if fd < 0 {
        return Err(Errno(libc::EMFILE));
    }
    Ok(fd)
}

/// Put a placeholder at low number `low` (the kernel closes what was
/// there), for a simulated file about to be placed there.
pub(crate) fn hold_low(low: c_int, cloexec: bool) -> Result<(), Errno> {
    let hold = placeholder()?;
    if hold == low {
        // The number was free (a shell closes fd 1 before its `dup2`), so
        // the kernel handed it to the placeholder itself.
        let flags = if cloexec { libc::FD_CLOEXEC } else { 0 };
        // SAFETY: the placeholder just opened, its descriptor flags.
        unsafe { real::fcntl64(low, libc::F_SETFD, c_long::from(flags)) };
        return Ok(());
    }
    // SAFETY: the placeholder onto the number the caller picked.
    let held = unsafe { real::dup3(hold, low, if cloexec { libc::O_CLOEXEC } else { 0 }) };
    // SAFETY: the placeholder's own number, now copied to `low`.
    unsafe { real::close(hold) };
    if held != low {
        return Err(Errno::EBADF);
    }
    Ok(())
}

/// `dup2(old, new)`/`dup3` where either side is simulated, in a preloaded
/// program (`crate::live`): a simulated `old` onto a low `new` places it
/// there (`session::place_low`), the kernel's `new` replaced by a
/// placeholder as the kernel would close it; a real `old` onto a placed
/// `new` lets the simulated file go and puts the real one there.
fn serve_dup_onto(old: c_int, new: c_int, cloexec: bool) -> Result<c_int, Errno> {
    if old == new {
        return serve_fd::fcntl(old, libc::F_GETFD, 0).map(|_| new);
    }
    if !crate::live::is_live() || !(0..FAKE_FD_BASE).contains(&new) {
        return Err(refuse_dup_onto(old, new));
    }
    if !is_fake_fd(old) {
        serve_fd::close(new)?;
        forget_low(new);
        // SAFETY: two real descriptors; the flags are the caller's.
        let placed = unsafe { real::dup3(old, new, if cloexec { libc::O_CLOEXEC } else { 0 }) };
        return if placed < 0 {
            Err(Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EBADF)))
        } else {
            Ok(new)
        };
    }
    // The kernel closes what was at `new`, as `dup2` would.
    hold_low(new, cloexec)?;
    place_low(old, new, cloexec)?;
    Ok(new)
}

#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(old) && !is_fake_fd(new) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::dup2(old, new) };
    }
    served(-1, || serve_dup_onto(old, new, false))
}

#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(old) && !is_fake_fd(new) {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::dup3(old, new, flags) };
    }
    if old == new {
        return served(-1, || Err(Errno::EINVAL));
    }
    served(-1, || serve_dup_onto(old, new, flags & libc::O_CLOEXEC != 0))
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
