//! The baton: one run's threads are real threads, but only the holder of
//! the baton runs the engine's code, and the run's session (its disk, its
//! descriptors, its clock) travels with the baton. A thread that reaches
//! a scheduling point asks the bookkeeping (`super::state`) who goes
//! next; if another thread, it hands the session over, wakes the others,
//! and waits for its own turn.
//!
//! The waits here are std's `Mutex` and `Condvar`, whose futex calls
//! reach the layer's `syscall`: every one of them is made inside an
//! interposed call (or, on a new thread, before its engine code begins),
//! where the layer passes them to the kernel (`super::schedulable`), so
//! the scheduler's own locks are never scheduled.
//!
//! A run that cannot go on (a deadlock, a blocking call the layer does
//! not know, a thread that spins without reaching the layer) ends here:
//! [`Sched::fail`] tells the engine call's waiter (`session::end_run`,
//! the message its panic carries) and every thread of the run parks for
//! good; nothing can unwind out of the C function each is in.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread;

use super::state::{Blocked, Pick, State, Tid, Wake};
use crate::session::{self, Session};

/// How long a run whose threads all wait, one of them on a static of the
/// process, waits for a thread outside the run before it is a deadlock:
/// polls 100 µs apart (at least 2 s).
const OUTSIDE_GRACE_POLLS: u32 = 20_000;

/// What the scheduler needs from the unsafe side of the layer.
#[derive(Clone, Copy)]
pub struct Hooks {
    /// Read the futex word at an address (only while no other thread of
    /// the run runs).
    pub word: fn(usize) -> u32,
    /// Stop a thread that spins for good (a signal that parks it), by its
    /// `pthread_t`.
    pub stop: fn(u64),
    /// Where an address lives (the heap, or a static of which object at
    /// which offset), for a deadlock's message.
    pub where_is: fn(usize) -> String,
    /// Whether an address is a static of a loaded object (a lock the
    /// whole process shares: std's own, a library's).
    pub is_static: fn(usize) -> bool,
}

/// The scheduler's state under its lock.
pub struct Inner {
    state: State,
    /// The session on its way to the next holder of the baton.
    transit: Option<Session>,
    /// Why the run ended, once it did.
    failed: Option<String>,
}

/// One run's scheduler.
pub struct Sched {
    inner: Mutex<Inner>,
    turn: Condvar,
    /// The session's slot (whose waiter a failure tells).
    pub slot: usize,
    hooks: Hooks,
    /// Scheduling points so far, and polls of a wait for a thread outside
    /// the run (read by the spin watch without the lock).
    pub progress: AtomicU64,
    /// Thread 0 is inside an engine call: the run is going, not paused
    /// between the kit's calls.
    pub engine_running: AtomicBool,
    /// The session's entropy seed, which seeds each thread's generators
    /// (`crate::thread_seed`); `None` when the run plants their absence.
    pub thread_seed: Option<u64>,
}

impl Sched {
    /// A run whose only thread is the caller, thread 0.
    pub fn new(seed: u64, slot: usize, root_handle: u64, hooks: Hooks, thread_seed: Option<u64>) -> Sched {
        let inner = Inner { state: State::new(seed, root_handle), transit: None, failed: None };
        Sched {
            inner: Mutex::new(inner),
            turn: Condvar::new(),
            slot,
            hooks,
            progress: AtomicU64::new(0),
            engine_running: AtomicBool::new(true),
            thread_seed,
        }
    }

    /// The scheduler's own lock, never a scheduling point: taken only
    /// where its futex calls go to the kernel (inside an interposed call,
    /// or outside the engine's code). Threads parked for their turn take
    /// it at every handover, so a release from the engine's code would be
    /// a point whenever one of them was re-checking, which is real time's
    /// choice, not the seed's.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        if cfg!(debug_assertions) && super::in_engine() && !crate::interpose::inside_interposed_call() {
            // An assertion, said and ended here: a panic cannot unwind out
            // of the C function (`pthread_join`, …) its caller is in.
            eprintln!("stdfs: bug: the scheduler's lock taken from the engine's scheduled code");
            std::process::abort();
        }
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new thread of the run, runnable, waiting for its first turn.
    pub fn spawn(&self) -> Tid {
        self.lock().state.spawn()
    }

    /// Name thread `tid`'s `pthread_t`, or, with `None`, forget a thread
    /// that was never started.
    pub fn started(&self, tid: Tid, handle: Option<u64>) {
        let mut inner = self.lock();
        match handle {
            Some(handle) => inner.state.threads[tid].handle = handle,
            None => inner.state.exit(tid),
        }
    }

    /// The run's thread whose `pthread_t` is `handle`, and whether it has
    /// exited.
    pub fn thread_of(&self, handle: u64) -> Option<(Tid, bool)> {
        let inner = self.lock();
        let tid = inner.state.by_handle(handle)?;
        Some((tid, inner.state.threads[tid].status == super::state::Status::Exited))
    }

    /// A scheduling point of `me`, the holder: the seed picks who runs on.
    /// `yielded`: `me` asked another thread to go first.
    pub fn point(&self, me: Tid, yielded: bool) {
        super::seed_started_thread(self, me);
        let mut inner = self.lock();
        inner.state.threads[me].yielded = yielded;
        drop(self.pick_and_wait(inner, me));
    }

    /// `me` blocks on `what` until woken: how its wait ended.
    pub fn block(&self, me: Tid, what: Blocked) -> Wake {
        super::seed_started_thread(self, me);
        let mut inner = self.lock();
        inner.state.block(me, what);
        let inner = self.pick_and_wait(inner, me);
        inner.state.threads[me].wake
    }

    /// Wake up to `count` futex waiters on `addr` (bitset `bitset`): how
    /// many.
    pub fn wake(&self, addr: usize, count: usize, bitset: u32) -> usize {
        self.lock().state.wake_futex(addr, count, bitset)
    }

    /// `me` has ended: its joiners may run, and the baton goes on.
    pub fn exit(&self, me: Tid) {
        let mut inner = self.lock();
        inner.state.exit(me);
        drop(self.pick(inner, me));
    }

    /// Pick the next thread; if it is not `me`, hand it the baton and wait
    /// for `me`'s next turn.
    fn pick_and_wait<'a>(&'a self, inner: MutexGuard<'a, Inner>, me: Tid) -> MutexGuard<'a, Inner> {
        let inner = self.pick(inner, me);
        self.wait_turn(inner, me)
    }

    /// Pick the next thread and hand it the baton (with the session).
    fn pick<'a>(&'a self, mut inner: MutexGuard<'a, Inner>, me: Tid) -> MutexGuard<'a, Inner> {
        debug_assert_eq!(inner.state.current, me, "only the baton's holder picks");
        let now_ns = session::with_entropy(|e| e.peek_ns()).expect("the baton's holder holds the session");
        let (word, shared) = (self.hooks.word, self.hooks.is_static);
        let picked = match inner.state.pick(now_ns, &word, &shared) {
            Pick::Deadlock => (self.outside_grace(&mut inner), None),
            Pick::Run(next, clock_to) => (Some(next), clock_to),
        };
        match picked {
            (None, _) => {
                let states = inner.state.describe(&self.hooks.where_is);
                let message =
                    format!("deadlock: every thread of the engine is blocked and none waits on a timer ({states})");
                self.fail(inner, message)
            }
            (Some(next), clock_to) => {
                if let Some(to) = clock_to {
                    session::with_entropy(|e| e.advance_to(to)).expect("the baton's holder holds the session");
                }
                self.progress.fetch_add(1, Ordering::Relaxed);
                if next != me {
                    inner.transit = Some(session::take_current());
                    self.turn.notify_all();
                }
                inner
            }
        }
    }

    /// Every thread is blocked and none on a timer. If one waits on a
    /// static of the process (std's own locks are shared by every thread,
    /// other runs' and the harness's), a thread outside the run may hold
    /// it and let go in real time: wait for that, up to [`OUTSIDE_GRACE_POLLS`],
    /// before taking it for a deadlock. Real time decides only whether the
    /// run goes on, never which of its threads runs: the pick after a wake
    /// is the seed's. The next thread, if one woke.
    fn outside_grace(&self, inner: &mut Inner) -> Option<Tid> {
        let shared = inner.state.futex_words().into_iter().any(self.hooks.is_static);
        let woke = shared && self.wait_for_outsider(|| inner.state.woken_from_outside(&self.hooks.word));
        woke.then(|| inner.state.pick_woken())
    }

    /// Poll `moved` until it holds (`true`) or [`OUTSIDE_GRACE_POLLS`]
    /// polls 100 µs apart have passed (`false`): the real-time wait for a
    /// thread outside the run to let go of a lock the process shares.
    fn wait_for_outsider(&self, mut moved: impl FnMut() -> bool) -> bool {
        // Counted in sleeps, not read from a clock: on this thread the
        // clock is the session's, and reading it is a served call.
        for _ in 0..OUTSIDE_GRACE_POLLS {
            if moved() {
                return true;
            }
            // A wait bounded by its grace, not a spin: the spin watch
            // (whose budget a test lowers to 2 s) sees it move.
            self.progress.fetch_add(1, Ordering::Relaxed);
            thread::sleep(std::time::Duration::from_micros(100));
        }
        false
    }

    /// A futex wait of the holder on a static word (`Hooks::is_static`),
    /// the word still `expected`: a lock the whole process shares, such as
    /// std's `thread_info::LOCK`, taken at every thread's start and end.
    /// Found held, it is held by a thread outside the run (another run's
    /// under `--jobs 2`, the harness's), whose timing no seed decides, or
    /// by a thread of the run across a scheduling point. Scheduling the
    /// wait would let that timing choose the run's interleaving (a lock
    /// found held is a pick, found free is none), so the holder keeps the
    /// baton and waits, in real time, for the word to move: `true` when it
    /// did (the wait ends as if the lock had been free), `false` after
    /// [`OUTSIDE_GRACE_POLLS`] (a thread of the run holds it: the wait is
    /// scheduled as any other, the same in every run).
    pub fn let_go_outside(&self, addr: usize, expected: u32) -> bool {
        debug_assert!((self.hooks.is_static)(addr), "only a static word is shared with threads outside the run");
        self.wait_for_outsider(|| (self.hooks.word)(addr) != expected)
    }

    /// Wait until the baton is `me`'s, then take the session it carries.
    /// A run that failed meanwhile parks the thread for good.
    fn wait_turn<'a>(&'a self, mut inner: MutexGuard<'a, Inner>, me: Tid) -> MutexGuard<'a, Inner> {
        while inner.state.current != me || inner.transit.is_none() && !session::has_session() {
            if inner.failed.is_some() {
                drop(inner);
                park_forever();
            }
            inner = self.turn.wait(inner).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(session) = inner.transit.take() {
            session::put_current(session);
            // The disk's hazard watch asks which thread an fsync is of.
            session::act_as(me);
        }
        inner
    }

    /// A new thread's first turn.
    pub fn first_turn(&self, me: Tid) {
        drop(self.wait_turn(self.lock(), me));
    }

    /// End the run for good from the baton's holder (see the module doc).
    fn fail(&self, inner: MutexGuard<'_, Inner>, message: String) -> ! {
        self.fail_with(inner, message);
        park_forever()
    }

    /// A blocking call of `me` the layer cannot schedule ends the run.
    pub fn refuse_blocking(&self, me: Tid, call: &str) -> ! {
        let inner = self.lock();
        let states = inner.state.describe(&self.hooks.where_is);
        let message = format!(
            "unknown blocking call: t{me} called {call}, which the layer's scheduler cannot model (it would block the \
             thread holding the baton for real); the run ends ({states})"
        );
        self.fail(inner, message)
    }

    /// The spin watch's verdict: the holder has not reached the layer for
    /// `seconds` of real time. Stops the holder (it cannot be reached
    /// otherwise) and ends the run. `false` if the run ended already.
    pub fn fail_spinning(&self, seconds: u64) -> bool {
        let inner = self.lock();
        if inner.failed.is_some() {
            return false;
        }
        let holder = inner.state.current;
        let handle = inner.state.threads[holder].handle;
        let message = format!(
            "spinning thread: t{holder} held the baton for {seconds} s of real time without reaching a call the \
             layer schedules (a loop on memory alone, or a blocking call the layer does not see); the thread is \
             stopped and the run ends ({})",
            inner.state.describe(&self.hooks.where_is)
        );
        self.fail_with(inner, message);
        (self.hooks.stop)(handle);
        true
    }

    fn fail_with(&self, mut inner: MutexGuard<'_, Inner>, message: String) {
        if inner.failed.is_some() {
            return;
        }
        inner.failed = Some(message.clone());
        self.turn.notify_all();
        drop(inner);
        eprintln!("stdfs: threads: {message}");
        if !session::end_run(self.slot, message) {
            eprintln!("stdfs: refused: a threaded run no one waits for cannot go on: the process aborts");
            std::process::abort();
        }
    }

    /// Threads of the run not yet exited, other than thread 0: described.
    pub fn left_running(&self) -> Option<String> {
        let inner = self.lock();
        let alive = (inner.state.threads.iter().skip(1)).filter(|t| t.status != super::state::Status::Exited).count();
        (alive > 0)
            .then(|| format!("{alive} thread(s) outlived the engine ({})", inner.state.describe(&self.hooks.where_is)))
    }

    /// The run's figures: scheduling points, handovers, the policy.
    pub fn figures(&self) -> (u64, u64, String) {
        let inner = self.lock();
        (inner.state.points, inner.state.switches, inner.state.policy.describe())
    }
}

/// Park this thread for good (its run ended; see the module doc).
fn park_forever() -> ! {
    loop {
        thread::park();
    }
}
