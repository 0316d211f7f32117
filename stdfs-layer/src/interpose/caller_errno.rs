//! `errno` as the caller left it, across the layer's own work.
//!
//! A C function that succeeds leaves `errno` alone, and callers count on
//! it: std's `read_dir` sets `errno` to 0, calls `readdir`, and takes a
//! null with a non-zero `errno` for an error, not the end of the listing.
//! The layer's own work between entry and return (a mutex whose wait
//! returns `EAGAIN` from the futex call, a `dlsym`, a line on stderr) may
//! leave any `errno`; under `--jobs 2` that was "os error 11" at the end
//! of a listing (issue 47). So every interposed function enters a
//! [`CallerErrno`] first: the `errno` it found is put back on return,
//! unless the call itself decided it — a served call's failure
//! ([`decide`]), or glibc's own function run for a call passed on
//! ([`before_real`]), which starts from the caller's `errno` and sets its
//! own as glibc does.
//!
//! Interposed functions nest (the layer's stderr line is a `write`, its
//! mutex wait a `syscall`), so each entry keeps the one it interrupts and
//! puts it back when it ends. A function that only hands over to another
//! of the layer's (`open` to `openat64`, `readdir` to `readdir64`) enters
//! none of its own: the inner one's `errno` is the call's, and an outer
//! entry would put the caller's back over a failure's.

use std::cell::Cell;

thread_local! {
    /// The `errno` the innermost interposed call found, `None` outside one.
    static CALLER: Cell<Option<i32>> = const { Cell::new(None) };
    /// Whether the innermost call has decided its `errno` already.
    static DECIDED: Cell<bool> = const { Cell::new(false) };
    /// The tests' stand-in for a contended mutex: every entry then leaves
    /// `errno` at `EAGAIN`, as the wait does now and then.
    #[cfg(test)]
    static CLOBBER: Cell<bool> = const { Cell::new(false) };
}

fn errno() -> i32 {
    // SAFETY: `__errno_location` returns the calling thread's errno slot,
    // valid for the thread's life.
    unsafe { *libc::__errno_location() }
}

fn set_errno(code: i32) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = code };
}

/// One interposed call under way: the call it interrupted, if any.
pub struct CallerErrno {
    outer: Option<i32>,
    outer_decided: bool,
}

impl CallerErrno {
    /// Take the caller's `errno`, first thing in an interposed function.
    pub fn enter() -> CallerErrno {
        let guard = CallerErrno { outer: CALLER.get(), outer_decided: DECIDED.get() };
        CALLER.set(Some(errno()));
        DECIDED.set(false);
        #[cfg(test)]
        if CLOBBER.get() {
            set_errno(libc::EAGAIN);
        }
        guard
    }
}

impl Drop for CallerErrno {
    fn drop(&mut self) {
        let caller = CALLER.get();
        debug_assert!(caller.is_some(), "a CallerErrno ends inside the call it began");
        if !DECIDED.get() {
            if let Some(code) = caller {
                set_errno(code);
            }
        }
        CALLER.set(self.outer);
        DECIDED.set(self.outer_decided);
    }
}

/// Whether an interposed call is under way on this thread: a call made
/// now is the layer's own work (its locks, its stderr), never the
/// engine's, and is not scheduled (`crate::sched`).
pub fn inside() -> bool {
    CALLER.get().is_some()
}

/// The served call's outcome sets `errno`: a failure's code, or, on
/// success (`None`), the caller's own, whatever the work in between left.
pub fn decide(failure: Option<i32>) {
    let caller = CALLER.get();
    debug_assert!(caller.is_some(), "a served call runs inside an interposed function's CallerErrno");
    if let Some(code) = failure.or(caller) {
        set_errno(code);
    }
    DECIDED.set(true);
}

/// glibc's own function is about to run for the call: it starts from the
/// caller's `errno`, and what it leaves is the call's. (Outside any
/// interposed call, the layer's own direct use of glibc, nothing changes.)
pub fn before_real() {
    if let Some(code) = CALLER.get() {
        set_errno(code);
        DECIDED.set(true);
    }
}

/// Make every interposed call on this thread leave `errno` at `EAGAIN`
/// from its own work (the tests' contended mutex), or stop.
#[cfg(test)]
pub fn clobber_for_test(on: bool) {
    CLOBBER.set(on);
}
