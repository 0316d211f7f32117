//! Spreading independent work over threads without letting the threads
//! change the result: items are handed out by an atomic counter, and the
//! results are put back in item order, so `--jobs 4` returns exactly what
//! `--jobs 1` returns, only sooner.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// `f` over every item, on `jobs` threads, results in item order. With a
/// `progress` label, a line on stderr about once a second says how far it is.
pub(crate) fn map_in_order<T, R>(items: &[T], jobs: usize, progress: Option<&str>, f: impl Fn(&T) -> R + Sync) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    assert!(jobs >= 1);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let collected: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
    let f = &f;
    // Each worker holds a sender; the channel disconnects when the last
    // one finishes, which wakes the progress loop at once.
    let (finished_tx, finished_rx) = mpsc::channel::<()>();
    thread::scope(|scope| {
        for _ in 0..jobs {
            let finished_tx = finished_tx.clone();
            scope.spawn(|| {
                let _finished_tx = finished_tx;
                let mut mine = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { break };
                    mine.push((index, f(item)));
                    done.fetch_add(1, Ordering::Relaxed);
                }
                collected.lock().unwrap_or_else(PoisonError::into_inner).extend(mine);
            });
        }
        drop(finished_tx);
        let Some(label) = progress else { return };
        let started = Instant::now();
        while let Err(RecvTimeoutError::Timeout) = finished_rx.recv_timeout(Duration::from_secs(1)) {
            let done = done.load(Ordering::Relaxed);
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            eprintln!("sim explore: {label}: {done}/{} ({rate:.0}/s)", items.len());
        }
    });
    let mut results = collected.into_inner().unwrap_or_else(PoisonError::into_inner);
    assert_eq!(results.len(), items.len(), "every item was mapped once");
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_item_order_whatever_the_thread_count() {
        let items: Vec<u64> = (0..500).collect();
        let square = |x: &u64| x * x;
        let one = map_in_order(&items, 1, None, square);
        let three = map_in_order(&items, 3, None, square);
        assert_eq!(one, three);
        assert_eq!(one[499], 499 * 499);
        assert!(map_in_order(&[] as &[u64], 2, None, square).is_empty());
    }
}
