//! libc's sources of fresh randomness and time: on a thread serving a run
//! they answer from the session's seed ([`crate::entropy`]); on any other
//! thread, glibc's own. `syscall()` is defined too, so that a raw
//! `getrandom` system call made through it (the `getrandom` crate's 0.2
//! line does that) is served like the function; every other system call
//! passes to glibc's `syscall` with its six argument registers as they
//! came (x86-64 passes a variadic call's integer arguments in the same
//! registers as a fixed one's).

use std::collections::BTreeSet;
use std::ffi::{c_int, c_long, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{real, served, CallerErrno};
use crate::errno::Errno;
use crate::session;

/// The `len` bytes at `buf` as a slice, empty when `len` is 0.
///
/// # Safety
/// `buf` is valid for `len` writable bytes (any pointer when `len` is 0).
unsafe fn out<'a>(buf: *mut c_void, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(buf.cast(), len) }
}

/// Fill `buf` from the session's stream: the byte count, as `getrandom`
/// answers.
fn serve_random(buf: &mut [u8]) -> Result<isize, Errno> {
    session::with_entropy(|entropy| entropy.fill(buf))?;
    Ok(isize::try_from(buf.len()).expect("a slice's length fits isize"))
}

#[no_mangle]
pub unsafe extern "C" fn getrandom(buf: *mut c_void, len: usize, flags: c_uint) -> isize {
    let _caller_errno = CallerErrno::enter();
    if !session::has_session() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::getrandom(buf, len, flags) };
    }
    // SAFETY: the caller gives `len` writable bytes at `buf`.
    let buf = unsafe { out(buf, len) };
    served(-1, || serve_random(buf))
}

#[no_mangle]
pub unsafe extern "C" fn getentropy(buf: *mut c_void, len: usize) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !session::has_session() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::getentropy(buf, len) };
    }
    if len > 256 {
        return served(-1, || Err(Errno::EIO));
    }
    // SAFETY: the caller gives `len` writable bytes at `buf`.
    let buf = unsafe { out(buf, len) };
    served(-1, || serve_random(buf).map(|_| 0))
}

#[no_mangle]
pub unsafe extern "C" fn syscall(
    n: c_long,
    a1: c_long,
    a2: c_long,
    a3: c_long,
    a4: c_long,
    a5: c_long,
    a6: c_long,
) -> c_long {
    // SAFETY: the caller's arguments, of call `n`.
    if let Some(answer) = unsafe { super::raw_calls::file_call(n, [a1, a2, a3, a4, a5, a6]) } {
        return answer;
    }
    if n == libc::SYS_futex && !super::caller_errno::inside() && crate::sched::in_engine() {
        // SAFETY: a futex call's arguments, as the caller gave them.
        return unsafe { super::thread_calls::futex(a1, a2, a3, a4, a5, a6) };
    }
    let _caller_errno = CallerErrno::enter();
    if n != libc::SYS_getrandom || !session::has_session() {
        // SAFETY: the caller's arguments, passed on as they came.
        return unsafe { real::syscall(n, a1, a2, a3, a4, a5, a6) };
    }
    let len = usize::try_from(a2).unwrap_or(0);
    // SAFETY: `getrandom(buf, len, flags)`: the caller gives `len`
    // writable bytes at `buf`.
    let buf = unsafe { out(a1 as *mut c_void, len) };
    served(-1, || serve_random(buf).map(|n| n as c_long))
}

#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clock: libc::clockid_t, tp: *mut libc::timespec) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !session::has_session() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::clock_gettime(clock, tp) };
    }
    if tp.is_null() {
        return served(-1, || Err(Errno::EINVAL));
    }
    served(-1, || {
        let now_ns = session::with_entropy(|entropy| entropy.now_ns())?;
        let seconds = libc::time_t::try_from(now_ns / 1_000_000_000).expect("the virtual clock fits time_t");
        let nanoseconds = (now_ns % 1_000_000_000) as libc::c_long;
        // SAFETY: non-null, and the caller's `timespec` to fill.
        unsafe { *tp = libc::timespec { tv_sec: seconds, tv_nsec: nanoseconds } };
        Ok(0)
    })
}

/// The seed's clock, read once: its seconds and nanoseconds.
fn seed_now() -> Result<(libc::time_t, libc::c_long), Errno> {
    let now_ns = session::with_entropy(|entropy| entropy.now_ns())?;
    let seconds = libc::time_t::try_from(now_ns / 1_000_000_000).expect("the virtual clock fits time_t");
    Ok((seconds, (now_ns % 1_000_000_000) as libc::c_long))
}

/// `gettimeofday`: glibc's reads the vDSO itself, never `clock_gettime`'s
/// symbol, so it is defined here too. The time zone (obsolete) is left
/// as the caller gave it.
#[no_mangle]
pub unsafe extern "C" fn gettimeofday(tv: *mut libc::timeval, tz: *mut c_void) -> c_int {
    let _caller_errno = CallerErrno::enter();
    if !session::has_session() {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::gettimeofday(tv, tz) };
    }
    served(-1, || {
        let (seconds, nanoseconds) = seed_now()?;
        if !tz.is_null() {
            // SAFETY: non-null, the caller's `struct timezone` (two ints):
            // UTC, no daylight saving, as glibc reports on Linux.
            unsafe { tz.cast::<[c_int; 2]>().write([0, 0]) };
        }
        if !tv.is_null() {
            // SAFETY: non-null, the caller's `timeval` to fill.
            unsafe { *tv = libc::timeval { tv_sec: seconds, tv_usec: nanoseconds / 1_000 } };
        }
        Ok(0)
    })
}

/// `time`: glibc's reads the vDSO itself, as [`gettimeofday`].
#[no_mangle]
pub unsafe extern "C" fn time(t: *mut libc::time_t) -> libc::time_t {
    let _caller_errno = CallerErrno::enter();
    if !session::has_session() {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::time(t) };
    }
    served(-1, || {
        let (seconds, _) = seed_now()?;
        if !t.is_null() {
            // SAFETY: non-null, the caller's `time_t` to fill.
            unsafe { *t = seconds };
        }
        Ok(seconds)
    })
}

/// Real descriptors a thread serving a run opened on `/dev/urandom` or
/// `/dev/random`: their reads are the seed's stream (sqlite3 seeds its
/// generator there). `ANY_RANDOM_FD` keeps every other read to one load.
static RANDOM_FDS: Mutex<BTreeSet<c_int>> = Mutex::new(BTreeSet::new());
static ANY_RANDOM_FD: AtomicBool = AtomicBool::new(false);

/// Whether real path `path` is a random device whose reads the seed serves.
pub(super) fn is_random_device(path: &[u8]) -> bool {
    session::has_session() && matches!(path, b"/dev/urandom" | b"/dev/random")
}

/// Real descriptor `fd` was opened on a random device by a thread serving
/// a run.
pub(super) fn note_random_fd(fd: c_int) {
    assert!(fd >= 0);
    RANDOM_FDS.lock().unwrap_or_else(|p| p.into_inner()).insert(fd);
    ANY_RANDOM_FD.store(true, Ordering::Release);
}

/// Real descriptor `fd` is closed: its number is no random device's now.
pub(super) fn forget_random_fd(fd: c_int) {
    if ANY_RANDOM_FD.load(Ordering::Acquire) {
        RANDOM_FDS.lock().unwrap_or_else(|p| p.into_inner()).remove(&fd);
    }
}

/// Serve a `read` of `fd` from the seed's stream if it is a random
/// device's, on a thread serving a run; `None`: a read for glibc.
pub(super) fn read_random(fd: c_int, buf: *mut c_void, count: usize) -> Option<isize> {
    if !ANY_RANDOM_FD.load(Ordering::Acquire) || !session::has_session() {
        return None;
    }
    if !RANDOM_FDS.lock().unwrap_or_else(|p| p.into_inner()).contains(&fd) {
        return None;
    }
    // The number may have been closed behind the layer's back (a raw
    // call, `close_range`) and reused for a real file, whose bytes must
    // never be replaced: it is served only while still a random device.
    // SAFETY: `stat64` is plain data; a valid one to fill.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's descriptor and the `stat64` above.
    let known = unsafe { real::fstat64(fd, &mut st) } == 0;
    if !known || st.st_mode & libc::S_IFMT != libc::S_IFCHR || libc::major(st.st_rdev) != 1 {
        forget_random_fd(fd);
        return None;
    }
    // SAFETY: the reader gives `count` writable bytes at `buf`.
    let buf = unsafe { out(buf, count) };
    Some(served(-1, || serve_random(buf)))
}
