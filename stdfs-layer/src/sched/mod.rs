//! Deterministic scheduling of an engine's own threads (issue 48,
//! STDFS.md "Threads"): the engine's threads are real threads, but only
//! one runs at a time, and the seed decides which at every scheduling
//! point, so a seed's interleaving, and its trace, are the same in every
//! run.
//!
//! The points are the calls the layer interposes
//! (`crate::interpose::thread_calls`): a thread's creation and join and
//! end, a futex wait or wake (std's `Mutex`, `Condvar`, `park`), a sleep,
//! a yield, and every call the layer serves. Time is the session's
//! virtual clock: a sleeper wakes when the clock passes its deadline, and
//! the clock moves there only when every thread is blocked.
//!
//! Which code is scheduled: the engine's, only. Thread 0 (the `Worker`'s
//! thread, serving the run's session) runs engine code inside
//! [`engine_code`]; a thread the engine starts runs its start routine as
//! engine code. The layer's own waits (its locks, the worker's channels,
//! the scheduler's own `Mutex`) happen outside engine code or inside an
//! interposed call, and go to the kernel. A run gets a scheduler at its
//! first thread, sleep or futex wait; a run without one (persy, cowkv)
//! pays one thread-local read per served call.

mod baton;
pub mod policy;
pub mod state;
mod watchdog;

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use baton::{Hooks, Sched};
pub use state::{Blocked, Tid, Wake};
pub use watchdog::set_spin_budget;

use crate::plant::LayerPlant;
use crate::session;

/// Mixed into the session's entropy seed for the scheduler's own stream,
/// so that picks and the engine's random bytes are independent draws.
const SCHED_SALT: u64 = 0x5c4e_d01e_7b47_0a11;

thread_local! {
    /// This thread's run and its id there, once it has a scheduler.
    static ME: RefCell<Option<(Arc<Sched>, Tid)>> = const { RefCell::new(None) };
    /// This thread is running the engine's code.
    static ENGINE: Cell<bool> = const { Cell::new(false) };
    /// This thread's generators are seeded from its run (`crate::thread_seed`).
    static SEEDED: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is running the engine's code (not the layer's,
/// not the harness's).
pub fn in_engine() -> bool {
    ENGINE.try_with(Cell::get).unwrap_or(false)
}

/// This thread's scheduler and id, if its run has one.
pub fn me() -> Option<(Arc<Sched>, Tid)> {
    ME.try_with(|m| m.borrow().clone()).ok().flatten()
}

/// This thread's scheduler and id; thread 0 gets one at its first need
/// (a thread started, a sleep, a futex wait). `None` outside engine code
/// or on a thread holding no session.
pub fn me_or_start(hooks: Hooks, handle: u64) -> Option<(Arc<Sched>, Tid)> {
    if let Some(found) = me() {
        return Some(found);
    }
    if !in_engine() {
        return None;
    }
    let slot = session::current_slot()?;
    let entropy_seed = session::with_entropy(|e| e.seed).ok()?;
    let thread_seed = (session::plant() != Some(LayerPlant::FastrandUnseeded)).then_some(entropy_seed);
    let sched = Arc::new(Sched::new(entropy_seed ^ SCHED_SALT, slot, handle, hooks, thread_seed));
    watchdog::watch(&sched);
    ME.with(|m| *m.borrow_mut() = Some((Arc::clone(&sched), 0)));
    Some((sched, 0))
}

/// A thread the engine started: its run and id, before its first turn.
pub fn adopt(sched: Arc<Sched>, tid: Tid) {
    SEEDED.set(false);
    ME.with(|m| *m.borrow_mut() = Some((sched, tid)));
}

/// At a scheduling point of thread `me` (the baton's holder): a thread
/// the engine started has its generators seeded from the run at its
/// first (`crate::thread_seed` says why not sooner), with the session put
/// aside meanwhile so that the run's clock does not move.
fn seed_started_thread(sched: &Sched, me: Tid) {
    if me == 0 || SEEDED.replace(true) || !in_engine() || !session::has_session() {
        return;
    }
    if let Some(entropy_seed) = sched.thread_seed {
        let session = session::take_current();
        crate::thread_seed::seed_thread(entropy_seed, me);
        session::put_current(session);
    }
}

/// Run `f` as the engine's code, on thread 0 of a run (the `Worker`'s
/// thread, at each call it hands the engine) or on a thread the engine
/// started (its start routine).
pub fn engine_code<R>(f: impl FnOnce() -> R) -> R {
    let was = ENGINE.replace(true);
    let running = |on: bool| {
        if let Some((sched, 0)) = me() {
            sched.engine_running.store(on, Ordering::Relaxed);
        }
    };
    running(true);
    let out = f();
    running(false);
    ENGINE.set(was);
    out
}

/// Thread 0's engine is gone (dropped): the run's scheduler ends with it.
/// Threads that outlived it are left waiting for a turn that never comes
/// (parked, leaked), and said so on stderr.
pub fn engine_gone() {
    let Some((sched, tid)) = ME.with(|m| m.borrow_mut().take()) else { return };
    debug_assert_eq!(tid, 0, "the engine is dropped on thread 0");
    if let Some(left) = sched.left_running() {
        eprintln!("stdfs: threads: {left}; they stay parked");
    }
    watchdog::unwatch(&sched);
}

/// A scheduling point of the current thread, if its run has a scheduler
/// (a call the layer serves).
pub fn point() {
    if !in_engine() {
        return;
    }
    if let Some((sched, me)) = me() {
        sched.point(me, false);
    }
}

/// The run's figures so far, asked from the engine's code (a test, a
/// benchmark): scheduling points, handovers, the policy; `None` on a
/// thread whose run has no scheduler.
pub fn figures() -> Option<(u64, u64, String)> {
    // Read as the layer's own work, not the engine's: the scheduler's lock
    // is never a scheduling point (`Sched::lock`).
    let was = ENGINE.replace(false);
    let figures = me().map(|(sched, _)| sched.figures());
    ENGINE.set(was);
    figures
}

/// A thread of the run ended (its start routine returned, or it called
/// `pthread_exit`): the baton goes on without it.
pub fn thread_ended() {
    let Some((sched, tid)) = ME.with(|m| m.borrow_mut().take()) else { return };
    ENGINE.set(false);
    sched.exit(tid);
}
