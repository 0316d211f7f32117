//! The spin watch: a thread that holds the baton and never reaches a
//! call the layer schedules (a loop on an atomic, or a blocking call the
//! layer cannot see) stops every other thread of its run for good. No
//! count can see it — it makes no call — so real time does: one thread
//! of the process looks at every threaded run twice a second, and a run
//! whose engine call is under way and whose scheduling points have not
//! moved for the budget ([`set_spin_budget`], 20 s by default) fails
//! (`Sched::fail_spinning`).
//!
//! Real time here is a detector only, never an input to a scheduling
//! decision: it can end a seed that would otherwise hang, never change
//! which thread runs. The budget is far above any legitimate stretch of
//! engine code between two calls, so a seed it ends is a seed that
//! would not end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, Weak};
use std::thread;
use std::time::{Duration, Instant};

use super::Sched;

/// Real milliseconds a baton holder may go without a scheduling point.
static BUDGET_MS: AtomicU64 = AtomicU64::new(20_000);

/// The runs watched: each with the progress last seen and since when.
static RUNS: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

struct Watched {
    sched: Weak<Sched>,
    progress: u64,
    since: Option<Instant>,
}

/// Set the spin budget (a test's short one; the default is 20 s).
pub fn set_spin_budget(budget: Duration) {
    BUDGET_MS.store(u64::try_from(budget.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Watch `sched`'s run (from its scheduler's start).
pub fn watch(sched: &Arc<Sched>) {
    static START: Once = Once::new();
    START.call_once(|| {
        thread::Builder::new().name("stdfs-spin-watch".into()).spawn(watch_loop).expect("the spin watch starts");
    });
    let watched = Watched { sched: Arc::downgrade(sched), progress: u64::MAX, since: None };
    RUNS.lock().unwrap_or_else(|p| p.into_inner()).push(watched);
}

/// Stop watching `sched`'s run (its engine is gone).
pub fn unwatch(sched: &Arc<Sched>) {
    let me = Arc::downgrade(sched);
    RUNS.lock().unwrap_or_else(|p| p.into_inner()).retain(|w| !w.sched.ptr_eq(&me));
}

fn watch_loop() {
    loop {
        thread::sleep(Duration::from_millis(500));
        let budget = Duration::from_millis(BUDGET_MS.load(Ordering::Relaxed));
        let mut spinning = Vec::new();
        RUNS.lock().unwrap_or_else(|p| p.into_inner()).retain_mut(|w| {
            let Some(sched) = w.sched.upgrade() else { return false };
            let progress = sched.progress.load(Ordering::Relaxed);
            if !sched.engine_running.load(Ordering::Relaxed) || progress != w.progress {
                (w.progress, w.since) = (progress, None);
                return true;
            }
            let since = *w.since.get_or_insert_with(Instant::now);
            if since.elapsed() < budget {
                return true;
            }
            spinning.push((sched, since.elapsed().as_secs()));
            false
        });
        for (sched, seconds) in spinning {
            sched.fail_spinning(seconds);
        }
    }
}
