//! libc's thread and blocking calls, for the scheduler ([`crate::sched`]):
//! on a thread running the engine's code (and not inside the layer's own
//! work, [`scheduled`]) thread creation and join, a futex wait or wake,
//! a sleep and a yield are scheduling points the seed decides; anywhere
//! else each is glibc's, untouched. A futex on a static word (a lock the
//! whole process shares) is a point only when the run's own threads
//! contend for it: threads outside the run do on their own time, not the
//! seed's (`Sched::let_go_outside`).
//!
//! Blocking calls the scheduler cannot model end the run, loudly
//! (`Sched::refuse_blocking`), when an engine thread makes one: `poll`
//! with descriptors (or on nothing, forever), `ppoll`, `select`,
//! `pselect`, `epoll_wait`, `epoll_pwait`, `pthread_cond_wait`,
//! `pthread_cond_timedwait`, `sem_wait`, `sem_timedwait`, a contended
//! `pthread_mutex_lock`, and a futex operation other than a wait or a
//! wake (requeue, `FUTEX_WAKE_OP`, priority inheritance). Each would block
//! the thread holding the baton for real, with every other thread of the
//! run waiting for it. A raw system call by inline assembly is not seen
//! at all: the spin watch (`crate::sched`) ends such a run.

use std::ffi::{c_int, c_long, c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Once};

use super::{caller_errno, decide, real, CallerErrno};
use crate::sched::{self, Blocked, Hooks, Sched, Tid, Wake};
use crate::session;

/// What the scheduler needs from this side: futex words, and a way to stop
/// a spinning thread.
const HOOKS: Hooks = Hooks { word: futex_word, stop: stop_thread, where_is, is_static };

/// Whether `addr` lies in a loaded object's image (`dladdr` finds one).
fn is_static(addr: usize) -> bool {
    // SAFETY: as in `where_is`.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as in `where_is`.
    unsafe { libc::dladdr(addr as *const c_void, &mut info) != 0 && !info.dli_fname.is_null() }
}

/// Where `addr` lives: in a loaded object's image (a static: the object
/// and the offset from its base, for `addr2line`), or elsewhere (the heap
/// or a stack).
fn where_is(addr: usize) -> String {
    // SAFETY: `dladdr` only reads the loader's tables; `info` is plain
    // data it fills.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let found = unsafe { libc::dladdr(addr as *const c_void, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return "(heap or stack)".to_string();
    }
    // SAFETY: `dladdr` gave a NUL-terminated name.
    let object = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    format!("(static data of {object} at offset {:#x})", addr - info.dli_fbase as usize)
}

fn futex_word(addr: usize) -> u32 {
    // SAFETY: `addr` is a futex word a thread of the run waits on: the
    // kernel's contract is that it stays mapped and aligned while waited on.
    unsafe { (*(addr as *const AtomicU32)).load(Ordering::SeqCst) }
}

/// The signal that parks a spinning thread for good.
fn park_signal() -> c_int {
    libc::SIGRTMIN() + 5
}

extern "C" fn park_on_signal(_signal: c_int) {
    loop {
        // SAFETY: `pause` is async-signal-safe and has no preconditions.
        unsafe { libc::pause() };
    }
}

fn stop_thread(handle: u64) {
    static HANDLER: Once = Once::new();
    HANDLER.call_once(|| {
        // SAFETY: a zeroed `sigaction` with a handler set is valid; the
        // handler only calls `pause`.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = park_on_signal as extern "C" fn(c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(park_signal(), &action, std::ptr::null_mut());
        }
    });
    // SAFETY: `handle` is the `pthread_t` of a live thread of the run (it
    // holds the baton, so it has not exited).
    unsafe { libc::pthread_kill(handle, park_signal()) };
}

/// Whether a call made now is the engine's, to be scheduled.
fn scheduled() -> bool {
    !caller_errno::inside() && sched::in_engine()
}

fn self_handle() -> u64 {
    // SAFETY: no preconditions.
    unsafe { libc::pthread_self() }
}

/// This thread's scheduler, started at thread 0's first need. Called
/// inside an interposed call only (a [`CallerErrno`] entered): starting a
/// scheduler is the layer's own work (its spin watch is a thread), which
/// must not be scheduled.
fn me_or_start() -> Option<(Arc<Sched>, Tid)> {
    debug_assert!(caller_errno::inside(), "the layer's own work runs inside an interposed call");
    sched::me_or_start(HOOKS, self_handle())
}

/// For a call the engine's code made ([`scheduled`]): the interposed call
/// entered, and this thread's scheduler. `None` for anyone else's call.
fn engine_call() -> Option<(CallerErrno, Arc<Sched>, Tid)> {
    if !scheduled() {
        return None;
    }
    let caller_errno = CallerErrno::enter();
    me_or_start().map(|(sched, me)| (caller_errno, sched, me))
}

/// A `timespec` in nanoseconds; `None` if it is not a valid one.
fn nanos(ts: &libc::timespec) -> Option<u64> {
    let seconds = u64::try_from(ts.tv_sec).ok()?;
    let nanoseconds = u64::try_from(ts.tv_nsec).ok().filter(|&n| n < 1_000_000_000)?;
    Some(seconds.saturating_mul(1_000_000_000).saturating_add(nanoseconds))
}

fn now_ns() -> u64 {
    session::with_entropy(|e| e.peek_ns()).expect("an engine thread holding the baton holds the session")
}

/// Sleep `me` until the clock reads `deadline_ns` (a point if it has).
fn sleep_until(sched: &Sched, me: Tid, deadline_ns: u64) {
    if deadline_ns <= now_ns() {
        sched.point(me, true);
    } else {
        let _ = sched.block(me, Blocked::Sleep { deadline_ns });
    }
}

struct Start {
    routine: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
    sched: Arc<Sched>,
    tid: Tid,
}

/// A scheduled thread's start: wait for its first turn, run the start
/// routine as engine code, hand the baton on.
extern "C" fn begin(start: *mut c_void) -> *mut c_void {
    // SAFETY: `start` is the `Box<Start>` `pthread_create` leaked for
    // this thread alone.
    let start = unsafe { Box::from_raw(start.cast::<Start>()) };
    sched::adopt(Arc::clone(&start.sched), start.tid);
    // The run's thread: its system calls made without libc are the run's.
    super::raw_trap::arm_thread();
    start.sched.first_turn(start.tid);
    let out = sched::engine_code(|| (start.routine)(start.arg));
    sched::thread_ended();
    out
}

#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
) -> c_int {
    let Some((_caller_errno, sched, _)) = engine_call() else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::pthread_create(thread, attr, routine, arg) };
    };
    let tid = sched.spawn();
    let start = Box::into_raw(Box::new(Start { routine, arg, sched: Arc::clone(&sched), tid }));
    // SAFETY: the caller's `thread` and `attr`; `begin` takes `start`.
    let rc = unsafe { real::pthread_create(thread, attr, begin, start.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not made: `start` is still ours.
        drop(unsafe { Box::from_raw(start) });
        sched.started(tid, None);
        return rc;
    }
    // SAFETY: `pthread_create` filled `thread`.
    sched.started(tid, Some(unsafe { *thread }));
    let (_, me) = sched::me().expect("the creator is a thread of the run");
    sched.point(me, false);
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_join(thread: libc::pthread_t, retval: *mut *mut c_void) -> c_int {
    if let Some((sched, me)) = scheduled().then(sched::me).flatten() {
        // Entered before the scheduler's lock is taken: taken from the
        // engine's code, its futex calls were the run's, and a parked
        // thread re-checking its turn meanwhile made the lock's release a
        // scheduling point of real time's choosing (tlog seed 86 under
        // load: the target exited in between, and t0 joined it for good).
        let _caller_errno = CallerErrno::enter();
        if let Some((target, exited)) = sched.thread_of(thread) {
            if exited {
                sched.point(me, false);
            } else {
                let _ = sched.block(me, Blocked::Join { target });
            }
        }
    }
    // SAFETY: the caller's arguments, passed on: the thread has ended its
    // engine code, and glibc waits for the rest of its end.
    unsafe { real::pthread_join(thread, retval) }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_exit(retval: *mut c_void) -> ! {
    if scheduled() && sched::me().is_some_and(|(_, me)| me != 0) {
        sched::thread_ended();
    }
    // SAFETY: the caller's argument, passed on.
    unsafe { real::pthread_exit(retval) }
}

/// `syscall(SYS_futex, …)` from the engine's code: the scheduler's.
///
/// # Safety
/// The arguments are a futex call's, as the kernel takes them.
pub unsafe fn futex(addr: c_long, op: c_long, val: c_long, timeout: c_long, a5: c_long, val3: c_long) -> c_long {
    let _caller_errno = CallerErrno::enter();
    let command = (op as c_int) & !(libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME);
    match command {
        libc::FUTEX_WAIT | libc::FUTEX_WAIT_BITSET => {
            let bitset = if command == libc::FUTEX_WAIT { u32::MAX } else { val3 as u32 };
            // SAFETY: the caller's timeout, null or a valid `timespec`.
            let timeout = unsafe { (timeout as *const libc::timespec).as_ref() };
            futex_wait(addr as usize, val as u32, bitset, timeout, command == libc::FUTEX_WAIT)
        }
        libc::FUTEX_WAKE | libc::FUTEX_WAKE_BITSET => {
            let bitset = if command == libc::FUTEX_WAKE { u32::MAX } else { val3 as u32 };
            let count = usize::try_from(val).unwrap_or(0);
            let woken = sched::me().map_or(0, |(sched, _)| sched.wake(addr as usize, count, bitset));
            // Waiters outside the run (none, unless the word is shared
            // with the layer or another run) are the kernel's.
            // SAFETY: the caller's arguments, passed on.
            let outside = unsafe { real::syscall(libc::SYS_futex, addr, op, val, timeout, a5, val3) }.max(0);
            // A wake on a static word that woke none of the run's threads
            // let go of a lock shared with threads outside the run, which
            // had to wake only if one of them wanted it: their timing, not
            // the seed's, so not a point (`Sched::let_go_outside`).
            if let Some((sched, me)) = sched::me() {
                if woken > 0 || !is_static(addr as usize) {
                    sched.point(me, false);
                }
            }
            decide(None);
            woken as c_long + outside
        }
        _ => match me_or_start() {
            Some((sched, me)) => sched.refuse_blocking(me, &format!("futex with operation {op:#x}")),
            // SAFETY: the caller's arguments, passed on.
            None => unsafe { real::syscall(libc::SYS_futex, addr, op, val, timeout, a5, val3) },
        },
    }
}

/// A futex wait: `EAGAIN` at once when the word is not `expected`; on a
/// static word, 0 once a thread outside the run lets go of it
/// (`Sched::let_go_outside`); otherwise (or if no outsider lets go)
/// blocked until a wake (0) or the deadline (`ETIMEDOUT`): the
/// relative `timeout` of `FUTEX_WAIT`, or the absolute one of
/// `FUTEX_WAIT_BITSET`, on the session's clock (every clock id is one).
fn futex_wait(addr: usize, expected: u32, bitset: u32, timeout: Option<&libc::timespec>, relative: bool) -> c_long {
    let Some((sched, me)) = me_or_start() else {
        unreachable!("the caller checked the thread runs engine code on a session");
    };
    if bitset == 0 {
        decide(Some(libc::EINVAL));
        return -1;
    }
    if futex_word(addr) != expected {
        decide(Some(libc::EAGAIN));
        return -1;
    }
    let deadline_ns = match timeout.map(nanos) {
        None => None,
        Some(None) => {
            decide(Some(libc::EINVAL));
            return -1;
        }
        Some(Some(ns)) if relative => Some(now_ns().saturating_add(ns)),
        Some(Some(ns)) => Some(ns),
    };
    if is_static(addr) && sched.let_go_outside(addr, expected) {
        decide(None);
        return 0;
    }
    match sched.block(me, Blocked::Futex { addr, expected, bitset, deadline_ns, order: 0 }) {
        Wake::Woken => {
            decide(None);
            0
        }
        Wake::TimedOut => {
            decide(Some(libc::ETIMEDOUT));
            -1
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int {
    let Some((_caller_errno, sched, me)) = engine_call() else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::nanosleep(req, rem) };
    };
    // SAFETY: the caller's `timespec`, null or valid.
    let Some(ns) = unsafe { req.as_ref() }.and_then(nanos) else {
        decide(Some(libc::EINVAL));
        return -1;
    };
    sleep_until(&sched, me, now_ns().saturating_add(ns));
    if !rem.is_null() {
        // SAFETY: the caller's `timespec` to fill.
        unsafe { *rem = libc::timespec { tv_sec: 0, tv_nsec: 0 } };
    }
    decide(None);
    0
}

#[no_mangle]
pub unsafe extern "C" fn clock_nanosleep(
    clock: libc::clockid_t,
    flags: c_int,
    req: *const libc::timespec,
    rem: *mut libc::timespec,
) -> c_int {
    let Some((_caller_errno, sched, me)) = engine_call() else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::clock_nanosleep(clock, flags, req, rem) };
    };
    // SAFETY: the caller's `timespec`, null or valid.
    let Some(ns) = unsafe { req.as_ref() }.and_then(nanos) else { return libc::EINVAL };
    let deadline_ns = if flags & libc::TIMER_ABSTIME != 0 { ns } else { now_ns().saturating_add(ns) };
    sleep_until(&sched, me, deadline_ns);
    0
}

#[no_mangle]
pub unsafe extern "C" fn usleep(microseconds: c_uint) -> c_int {
    let ts = libc::timespec {
        tv_sec: libc::time_t::from(microseconds / 1_000_000),
        tv_nsec: c_long::from(microseconds % 1_000_000) * 1_000,
    };
    // SAFETY: a valid `timespec`; no remainder asked.
    unsafe { nanosleep(&ts, std::ptr::null_mut()) }
}

#[no_mangle]
pub unsafe extern "C" fn sleep(seconds: c_uint) -> c_uint {
    let ts = libc::timespec { tv_sec: libc::time_t::from(seconds), tv_nsec: 0 };
    // SAFETY: a valid `timespec`; no remainder asked.
    match unsafe { nanosleep(&ts, std::ptr::null_mut()) } {
        0 => 0,
        _ => seconds,
    }
}

#[no_mangle]
pub unsafe extern "C" fn sched_yield() -> c_int {
    match scheduled().then(sched::me).flatten() {
        Some((sched, me)) => {
            let _caller_errno = CallerErrno::enter();
            sched.point(me, true);
            0
        }
        // SAFETY: no arguments.
        None => unsafe { real::sched_yield() },
    }
}

#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut libc::pollfd, nfds: libc::nfds_t, timeout_ms: c_int) -> c_int {
    let Some((_caller_errno, sched, me)) = engine_call() else {
        // SAFETY: the caller's arguments, passed on.
        return unsafe { real::poll(fds, nfds, timeout_ms) };
    };
    match (nfds, u64::try_from(timeout_ms)) {
        (0, Ok(ms)) => {
            sleep_until(&sched, me, now_ns().saturating_add(ms * 1_000_000));
            0
        }
        (0, Err(_)) => sched.refuse_blocking(me, "poll on no descriptor with no timeout (forever)"),
        (n, _) => sched.refuse_blocking(me, &format!("poll on {n} descriptor(s)")),
    }
}

/// A blocking call the scheduler cannot model: refused on an engine
/// thread (the run ends), glibc's anywhere else.
macro_rules! refused_when_scheduled {
    ($( fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; )*) => { $(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            if let Some((_caller_errno, sched, me)) = engine_call() {
                sched.refuse_blocking(me, stringify!($name));
            }
            // SAFETY: the caller's arguments, passed on.
            unsafe { real::$name($($arg),*) }
        }
    )* };
}

refused_when_scheduled! {
    fn ppoll(fds: *mut libc::pollfd, nfds: libc::nfds_t, ts: *const libc::timespec, mask: *const libc::sigset_t) -> c_int;
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *mut libc::timeval) -> c_int;
    fn pselect(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *const libc::timespec, m: *const libc::sigset_t) -> c_int;
    fn epoll_wait(epfd: c_int, events: *mut libc::epoll_event, max: c_int, timeout: c_int) -> c_int;
    fn epoll_pwait(epfd: c_int, events: *mut libc::epoll_event, max: c_int, timeout: c_int, mask: *const libc::sigset_t) -> c_int;
    fn pthread_cond_wait(cond: *mut libc::pthread_cond_t, mutex: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_cond_timedwait(cond: *mut libc::pthread_cond_t, mutex: *mut libc::pthread_mutex_t, at: *const libc::timespec) -> c_int;
    fn sem_wait(sem: *mut libc::sem_t) -> c_int;
    fn sem_timedwait(sem: *mut libc::sem_t, at: *const libc::timespec) -> c_int;
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(mutex: *mut libc::pthread_mutex_t) -> c_int {
    if let Some((_caller_errno, sched, me)) = engine_call() {
        // SAFETY: the caller's mutex.
        match unsafe { real::pthread_mutex_trylock(mutex) } {
            libc::EBUSY => sched.refuse_blocking(me, "pthread_mutex_lock (contended)"),
            taken => return taken,
        }
    }
    // SAFETY: the caller's mutex.
    unsafe { real::pthread_mutex_lock(mutex) }
}

/// Every function of this file, by address (`super::link_all`).
pub fn link_all() -> [*const (); 21] {
    [
        pthread_create as *const (),
        pthread_join as *const (),
        pthread_exit as *const (),
        nanosleep as *const (),
        clock_nanosleep as *const (),
        usleep as *const (),
        sleep as *const (),
        sched_yield as *const (),
        poll as *const (),
        ppoll as *const (),
        select as *const (),
        pselect as *const (),
        epoll_wait as *const (),
        epoll_pwait as *const (),
        pthread_cond_wait as *const (),
        pthread_cond_timedwait as *const (),
        sem_wait as *const (),
        sem_timedwait as *const (),
        pthread_mutex_lock as *const (),
        futex as *const (),
        begin as *const (),
    ]
}
