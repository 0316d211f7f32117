//! The time seam: the engine reads time only through [`Clock`].
//!
//! TTLs and the `everysec` fsync policy are the only uses of time. Keeping
//! them behind a trait lets the simulator run a whole day of expiries in a
//! millisecond of real time, and makes every run of a seed see the same
//! instants. This module and `os.rs` are the only places allowed to read
//! the wall clock (a test enforces it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> u64;
}

/// The machine's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        // A clock before 1970 is a broken machine; time 0 keeps the engine
        // running (everything with a TTL simply looks unexpired).
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to: tests and the simulator.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    /// A clock standing at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self { now_ms: AtomicU64::new(now_ms) }
    }

    /// Move forward by `delta_ms` (saturating).
    pub fn advance(&self, delta_ms: u64) {
        let now = self.now_ms.load(Ordering::Relaxed);
        self.now_ms.store(now.saturating_add(delta_ms), Ordering::Relaxed);
    }

    /// Stand at `now_ms`. Time may not run backwards.
    pub fn set(&self, now_ms: u64) {
        assert!(now_ms >= self.now_ms.load(Ordering::Relaxed), "ManualClock: time ran backwards");
        self.now_ms.store(now_ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        assert_eq!(clock.now_ms(), 1_000);
        clock.advance(250);
        assert_eq!(clock.now_ms(), 1_250);
        clock.set(5_000);
        assert_eq!(clock.now_ms(), 5_000);
    }

    #[test]
    #[should_panic(expected = "time ran backwards")]
    fn manual_clock_refuses_to_run_backwards() {
        ManualClock::new(10).set(9);
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_ms() > 1_577_836_800_000);
    }
}
