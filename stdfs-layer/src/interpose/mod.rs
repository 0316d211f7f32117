//! The interposition itself: this binary's definitions of libc's file
//! functions, which the dynamic linker binds ahead of glibc's, so that
//! every call std (or an engine calling `libc` directly) makes through
//! them comes here first. Each one routes ([`crate::route`]): the layer's
//! paths and descriptors are served by the current thread's simulated
//! disk (`crate::serve_fd`, `crate::serve_path`);
//! everything else goes to glibc's own function, found with
//! `dlsym(RTLD_NEXT, …)` ([`real`]), untouched.
//!
//! The only unsafe code of this binary lives here: raw pointers from C
//! callers, `errno`, and the glibc function pointers. Every served call
//! runs under `catch_unwind`: a panic in the layer becomes `EIO` and a
//! refusal, never an unwind across the C boundary.
//!
//! On a thread serving a run, randomness and the time are the seed's too
//! (`entropy_calls`, [`crate::entropy`]).
//!
//! x86-64 glibc only: `open`, `openat` and `fcntl` are C-variadic, which
//! stable Rust cannot define; they are defined with their optional
//! argument as a fixed one, which the x86-64 System V convention passes
//! in the same register either way.

mod caller_errno;
mod copy_calls;
mod cstat;
mod dir_calls;
mod entropy_calls;
mod fd_calls;
pub mod fd_limit;
mod map_calls;
pub mod maps;
mod meta_calls;
mod name_calls;
mod path_calls;
mod raw_calls;
pub mod raw_trap;
mod real;
mod stdio_calls;
mod temp_calls;
mod thread_calls;

use std::cell::Cell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::errno::Errno;
use crate::session::{self, refuse, ROOT};
#[cfg(test)]
pub use caller_errno::clobber_for_test;
pub(crate) use caller_errno::inside as inside_interposed_call;
use caller_errno::{decide, CallerErrno};
pub(crate) use fd_calls::hold_low;
pub(crate) use stdio_calls::adopt_standard_stream;

#[cfg(not(all(target_os = "linux", target_arch = "x86_64", target_env = "gnu")))]
compile_error!("the stdfs layer interposes x86-64 glibc's functions only");

/// Served calls that may fail in a row on one thread, and served calls
/// one call of the engine may make ([`start_engine_call`]), before the
/// layer takes the program for one that loops forever: retrying a failing
/// call (persy does, STDFS.md finding 2) or walking a cycle in its own
/// bytes (finding 3). Both are counts, so the verdict is the same in every
/// run. No error the layer returns and no unwind can leave such a loop
/// from inside a C function, so the layer declares the livelock
/// (`session::declare_livelock`) and fails every later call of the
/// thread: a loop that stops at an error returns, and the adapter fails
/// the run for the livelock. A loop that ignores errors too (finding 2)
/// fails [`LIVELOCK_FAILURES`] more calls in a row; nothing can end it
/// then, so its thread hangs for good (`session::hang`: the engine
/// thread's waiter is told and the run fails), or, on a thread no one
/// waits for, the process aborts, saying why. The tests' build counts a hundredth, so that a
/// test can reach a livelock in a moment.
pub const LIVELOCK_FAILURES: u64 = if cfg!(test) { 2_000 } else { 200_000 };
/// See [`LIVELOCK_FAILURES`]. A seed's whole run serves a few thousand.
pub const LIVELOCK_CALLS: u64 = if cfg!(test) { 20_000 } else { 2_000_000 };

thread_local! {
    static FAILED_IN_A_ROW: Cell<u64> = const { Cell::new(0) };
    static CALLS_THIS_ENGINE_CALL: Cell<u64> = const { Cell::new(0) };
}

/// The engine's thread begins one call of the adapter's: the count of
/// [`LIVELOCK_CALLS`] starts again ([`crate::Worker`] calls it at every
/// call it hands the engine).
pub fn start_engine_call() {
    CALLS_THIS_ENGINE_CALL.set(0);
}

/// Count a served call's outcome; at a livelock, declare it (the first
/// time) or abort (a program that loops on after every call failed).
fn count_outcome(failed: bool) {
    let in_a_row = if failed { FAILED_IN_A_ROW.get() + 1 } else { 0 };
    FAILED_IN_A_ROW.set(in_a_row);
    let calls = CALLS_THIS_ENGINE_CALL.get() + 1;
    CALLS_THIS_ENGINE_CALL.set(calls);
    if in_a_row < LIVELOCK_FAILURES && calls < LIVELOCK_CALLS {
        return;
    }
    let seen = format!(
        "{in_a_row} served calls in a row failed, {calls} served in one call of the engine: the program loops forever"
    );
    if !session::livelocked() && session::declare_livelock(seen.clone()) {
        // Count the failures that follow afresh: the loop has that many
        // more to show it stops at an error.
        FAILED_IN_A_ROW.set(0);
        CALLS_THIS_ENGINE_CALL.set(0);
        return;
    }
    eprintln!("stdfs: livelock: {seen}, and no error ends it: the thread hangs for good, or the process aborts");
    session::hang(format!("{seen}, and every call failing did not end it"));
    eprintln!("stdfs: refused: a livelock on a thread no run waits for: the process aborts");
    std::process::abort();
}

/// Run a served call: its value with the caller's `errno` as it was
/// ([`caller_errno`]), or `fail` with `errno` set. A panic is
/// caught here and refused as `EIO`. On a thread taken for a livelock
/// every call fails with `EIO`, unserved.
fn served<T>(fail: T, call: impl FnOnce() -> Result<T, Errno>) -> T {
    crate::sched::point();
    let outcome = if session::livelocked() { Ok(Err(Errno::EIO)) } else { catch_unwind(AssertUnwindSafe(call)) };
    count_outcome(!matches!(outcome, Ok(Ok(_))));
    match outcome {
        Ok(Ok(value)) => {
            decide(None);
            value
        }
        Ok(Err(Errno(code))) => {
            decide(Some(code));
            fail
        }
        Err(_) => {
            let Errno(code) = refuse(None, Errno::EIO, "a panic in the stdfs layer (see above)".to_string());
            decide(Some(code));
            fail
        }
    }
}

/// The bytes of C string `path`, `None` for a null pointer.
///
/// # Safety
/// `path` is null or a NUL-terminated string valid for the call.
unsafe fn c_bytes<'a>(path: *const c_char) -> Option<&'a [u8]> {
    if path.is_null() {
        return None;
    }
    // SAFETY: non-null, and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(path) }.to_bytes())
}

/// The process's real working directory, from glibc's `getcwd` (the
/// interposed one would answer a served working directory), for
/// `crate::live`; `None` if it cannot be read.
pub(crate) fn real_cwd() -> Option<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` holds PATH_MAX writable bytes.
    let got = unsafe { real::getcwd(buf.as_mut_ptr().cast(), buf.len()) };
    if got.is_null() {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0)?;
    buf.truncate(len);
    Some(buf)
}

/// Whether the real file system has nothing at [`ROOT`], asked of glibc
/// directly (a `stat` through this layer would be served): a call the
/// layer cannot see (a raw `syscall()`) on a path under the root then
/// fails there with `ENOENT` instead of reaching real files.
pub fn real_root_is_absent() -> bool {
    let root = std::ffi::CString::new(ROOT).expect("the root has no NUL");
    // SAFETY: `stat64` is plain data; all-zero is a valid value of it.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a valid `stat64` to fill.
    let found = unsafe { real::fstatat64(libc::AT_FDCWD, root.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    found != 0
}

/// Every function this layer defines, by address, so that a binary which
/// calls this links them all, whatever its linker and however rustc cut
/// the crate into objects: a linker pulls an object out of an rlib only
/// for a symbol it needs, and a symbol std needs (`read`) it may already
/// have found in glibc. [`crate::main`] and [`crate::install`] call it:
/// the ways in to the layer are the opt-in.
pub fn link_all() {
    let interposed = [
        dir_calls::opendir as *const (),
        dir_calls::fdopendir as *const (),
        dir_calls::readdir64 as *const (),
        dir_calls::readdir as *const (),
        dir_calls::dirfd as *const (),
        dir_calls::closedir as *const (),
        entropy_calls::getrandom as *const (),
        entropy_calls::getentropy as *const (),
        entropy_calls::syscall as *const (),
        entropy_calls::clock_gettime as *const (),
        entropy_calls::gettimeofday as *const (),
        entropy_calls::time as *const (),
        fd_calls::read as *const (),
        fd_calls::write as *const (),
        fd_calls::pread64 as *const (),
        fd_calls::pread as *const (),
        fd_calls::pwrite64 as *const (),
        fd_calls::pwrite as *const (),
        fd_calls::readv as *const (),
        fd_calls::writev as *const (),
        fd_calls::preadv64 as *const (),
        fd_calls::preadv as *const (),
        fd_calls::pwritev64 as *const (),
        fd_calls::pwritev as *const (),
        fd_calls::lseek64 as *const (),
        fd_calls::lseek as *const (),
        fd_calls::fsync as *const (),
        fd_calls::fdatasync as *const (),
        fd_calls::ftruncate64 as *const (),
        fd_calls::ftruncate as *const (),
        fd_calls::close as *const (),
        fd_calls::dup as *const (),
        fd_calls::dup2 as *const (),
        fd_calls::dup3 as *const (),
        fd_calls::fcntl64 as *const (),
        fd_calls::fcntl as *const (),
        fd_calls::flock as *const (),
        path_calls::openat64 as *const (),
        path_calls::openat as *const (),
        path_calls::open64 as *const (),
        path_calls::open as *const (),
        path_calls::fstatat64 as *const (),
        path_calls::fstatat as *const (),
        path_calls::stat64 as *const (),
        path_calls::stat as *const (),
        path_calls::lstat64 as *const (),
        path_calls::lstat as *const (),
        path_calls::fstat64 as *const (),
        path_calls::fstat as *const (),
        path_calls::statx as *const (),
        path_calls::renameat2 as *const (),
        path_calls::renameat as *const (),
        path_calls::rename as *const (),
        path_calls::unlinkat as *const (),
        path_calls::unlink as *const (),
        path_calls::rmdir as *const (),
        path_calls::mkdirat as *const (),
        path_calls::mkdir as *const (),
    ];
    std::hint::black_box((interposed, copy_calls::interposed(), meta_calls::interposed(), name_calls::interposed()));
    std::hint::black_box(thread_calls::link_all());
    std::hint::black_box(map_calls::interposed());
    std::hint::black_box(stdio_calls::interposed());
    std::hint::black_box(temp_calls::interposed());
}
