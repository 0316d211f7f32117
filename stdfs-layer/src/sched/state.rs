//! The scheduler's bookkeeping, free of threads and locks: which of a
//! run's threads exist, which is runnable and which is blocked on what,
//! and the pick at a scheduling point (timers expired, the clock advanced
//! when every thread is blocked, a deadlock named). The baton
//! (`super::baton`) applies its decisions to real threads; this file is
//! what the unit tests drive directly.
//!
//! Time is the session's virtual clock (`crate::entropy`): a deadline is a
//! reading of it. A blocked thread's timer expires when the clock has
//! passed its deadline at a pick; when no thread can run, the pick moves
//! the clock to the earliest deadline (the caller applies the move to
//! the session's clock).

use std::fmt::Write as _;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use super::policy::Tid;
use super::policy::{Candidates, Policy};

/// What a blocked thread waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// A futex wait on `addr` while its word was `expected`; woken by a
    /// wake whose bitset meets `bitset`, or by its deadline. `order`: the
    /// waits in the order they began (wakes take the oldest first).
    Futex { addr: usize, expected: u32, bitset: u32, deadline_ns: Option<u64>, order: u64 },
    /// A sleep until the clock reads `deadline_ns`.
    Sleep { deadline_ns: u64 },
    /// A join of thread `target`.
    Join { target: Tid },
}

impl Blocked {
    fn deadline_ns(&self) -> Option<u64> {
        match self {
            Blocked::Futex { deadline_ns, .. } => *deadline_ns,
            Blocked::Sleep { deadline_ns } => Some(*deadline_ns),
            Blocked::Join { .. } => None,
        }
    }
}

/// A thread's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Runnable,
    Blocked(Blocked),
    Exited,
}

/// How a blocked thread's wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Woken (a futex wake, the joined thread's exit, the sleep's end).
    Woken,
    /// A futex wait's deadline passed first.
    TimedOut,
}

/// One thread of the run.
#[derive(Debug)]
pub struct Thread {
    pub status: Status,
    /// How its last wait ended.
    pub wake: Wake,
    /// Its `pthread_t` (0 until known).
    pub handle: u64,
    /// It yielded at the point under way: another runnable thread goes
    /// first.
    pub yielded: bool,
}

/// The outcome of a pick.
#[derive(Debug, PartialEq, Eq)]
pub enum Pick {
    /// `Tid` runs next; the clock first moves to the reading given, if one.
    Run(Tid, Option<u64>),
    /// No thread can run and none waits on a timer.
    Deadlock,
}

/// A run's threads and its seeded choices.
pub struct State {
    pub threads: Vec<Thread>,
    /// The thread holding the baton.
    pub current: Tid,
    pub policy: Policy,
    rng: ChaCha8Rng,
    /// Scheduling points so far, and how many the current thread has held.
    pub points: u64,
    held_points: u32,
    /// Futex waits begun so far (their order).
    waits: u64,
    /// Handovers of the baton so far.
    pub switches: u64,
}

impl State {
    /// A run whose only thread is thread 0, holding the baton; its policy
    /// and every pick drawn from `seed`.
    pub fn new(seed: u64, root_handle: u64) -> State {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let policy = Policy::draw(&mut rng);
        let root = Thread { status: Status::Runnable, wake: Wake::Woken, handle: root_handle, yielded: false };
        State { threads: vec![root], current: 0, policy, rng, points: 0, held_points: 0, waits: 0, switches: 0 }
    }

    /// A new runnable thread; its id.
    pub fn spawn(&mut self) -> Tid {
        self.threads.push(Thread { status: Status::Runnable, wake: Wake::Woken, handle: 0, yielded: false });
        self.threads.len() - 1
    }

    /// The thread whose `pthread_t` is `handle`, if it is this run's: the
    /// newest one, since glibc hands an ended and joined (or detached)
    /// thread's `pthread_t` to the next thread it starts. (The oldest,
    /// found before, made a join of the second a real join of a thread
    /// waiting for the baton: the run hung until the spin watch ended it.)
    pub fn by_handle(&self, handle: u64) -> Option<Tid> {
        self.threads.iter().rposition(|t| t.handle == handle && handle != 0)
    }

    /// `me` blocks on `what`.
    pub fn block(&mut self, me: Tid, what: Blocked) {
        debug_assert_eq!(self.threads[me].status, Status::Runnable, "only a running thread blocks");
        let what = match what {
            Blocked::Futex { addr, expected, bitset, deadline_ns, .. } => {
                self.waits += 1;
                Blocked::Futex { addr, expected, bitset, deadline_ns, order: self.waits }
            }
            other => other,
        };
        self.threads[me].status = Status::Blocked(what);
    }

    /// `me` has exited: its joiners can run.
    pub fn exit(&mut self, me: Tid) {
        self.threads[me].status = Status::Exited;
        for thread in &mut self.threads {
            if thread.status == Status::Blocked(Blocked::Join { target: me }) {
                thread.status = Status::Runnable;
                thread.wake = Wake::Woken;
            }
        }
    }

    /// Wake up to `count` futex waiters on `addr` whose bitset meets
    /// `bitset`, oldest wait first: how many were woken.
    pub fn wake_futex(&mut self, addr: usize, count: usize, bitset: u32) -> usize {
        let mut waiting: Vec<(u64, Tid)> = (self.threads.iter().enumerate())
            .filter_map(|(tid, t)| match t.status {
                Status::Blocked(Blocked::Futex { addr: a, bitset: b, order, .. }) if a == addr && b & bitset != 0 => {
                    Some((order, tid))
                }
                _ => None,
            })
            .collect();
        waiting.sort_unstable();
        waiting.truncate(count);
        for &(_, tid) in &waiting {
            self.threads[tid].status = Status::Runnable;
            self.threads[tid].wake = Wake::Woken;
        }
        waiting.len()
    }

    /// Expire every timer due at `now_ns`.
    fn expire(&mut self, now_ns: u64) {
        for thread in &mut self.threads {
            let Status::Blocked(what) = &thread.status else { continue };
            if what.deadline_ns().is_some_and(|d| d <= now_ns) {
                thread.wake = if matches!(what, Blocked::Futex { .. }) { Wake::TimedOut } else { Wake::Woken };
                thread.status = Status::Runnable;
            }
        }
    }

    fn runnable(&self) -> Vec<Tid> {
        (0..self.threads.len()).filter(|&t| self.threads[t].status == Status::Runnable).collect()
    }

    /// Futex waiters whose word no longer holds what they waited on: woken
    /// as the kernel may wake any waiter spuriously. Asked only when no
    /// thread could run otherwise, so that a wake made by a thread outside
    /// the run (a lock shared with another run, as stderr's) is not taken
    /// for a deadlock. `word` reads a futex word.
    fn wake_changed(&mut self, word: &dyn Fn(usize) -> u32) {
        self.wake_changed_where(word, &|_| true);
    }

    /// [`State::wake_changed`] for the waiters on words `which` accepts.
    fn wake_changed_where(&mut self, word: &dyn Fn(usize) -> u32, which: &dyn Fn(usize) -> bool) {
        for thread in &mut self.threads {
            if let Status::Blocked(Blocked::Futex { addr, expected, .. }) = thread.status {
                if which(addr) && word(addr) != expected {
                    thread.status = Status::Runnable;
                    thread.wake = Wake::Woken;
                }
            }
        }
    }

    /// The futex words threads wait on, each once.
    pub fn futex_words(&self) -> Vec<usize> {
        let mut words: Vec<usize> = (self.threads.iter())
            .filter_map(|t| match t.status {
                Status::Blocked(Blocked::Futex { addr, .. }) => Some(addr),
                _ => None,
            })
            .collect();
        words.sort_unstable();
        words.dedup();
        words
    }

    /// After a [`Pick::Deadlock`]: wake the futex waiters whose word
    /// moved since (a thread outside the run let go of a lock the run
    /// shares with it, such as one of std's own); whether any woke.
    pub fn woken_from_outside(&mut self, word: &dyn Fn(usize) -> u32) -> bool {
        self.wake_changed(word);
        self.threads.iter().any(|t| t.status == Status::Runnable)
    }

    /// The scheduling point of the current thread: who runs next.
    /// `word` reads a futex word; `shared` says whether one is a static of
    /// the process, which threads outside the run take too.
    pub fn pick(&mut self, now_ns: u64, word: &dyn Fn(usize) -> u32, shared: &dyn Fn(usize) -> bool) -> Pick {
        self.points += 1;
        self.expire(now_ns);
        let mut clock_to = None;
        let mut runnable = self.runnable();
        if runnable.is_empty()
            && self.threads.iter().any(|t| matches!(t.status, Status::Blocked(Blocked::Futex { .. })))
        {
            // A thread outside the run that let go of a lock the whole
            // process shares (std's `thread_info::LOCK`, taken at every
            // thread's start and end; a waiter here only once the grace
            // of `Sched::let_go_outside` passed) woke no one here: its
            // wake went to the kernel. Before the clock moves, such a
            // waiter whose word moved wakes (spuriously, as futex
            // allows), or a sleeper's polling loop (fjall's drop, waiting
            // for its worker) moves the clock for ever while the waiter
            // never runs (FJALL.md).
            self.wake_changed_where(word, shared);
            runnable = self.runnable();
        }
        if runnable.is_empty() {
            let earliest = self.threads.iter().filter_map(|t| match &t.status {
                Status::Blocked(what) => what.deadline_ns(),
                _ => None,
            });
            if let Some(deadline_ns) = earliest.min() {
                let to = deadline_ns.max(now_ns);
                self.expire(to);
                clock_to = Some(to);
            } else {
                self.wake_changed(word);
            }
            runnable = self.runnable();
        }
        if runnable.is_empty() {
            return Pick::Deadlock;
        }
        Pick::Run(self.choose(runnable), clock_to)
    }

    /// The policy's pick among `runnable` (not empty).
    fn choose(&mut self, mut runnable: Vec<Tid>) -> Tid {
        let yielder = Some(self.current).filter(|&c| self.threads[c].yielded && runnable.len() > 1);
        if let Some(yielder) = yielder {
            runnable.retain(|&t| t != yielder);
        }
        self.threads[self.current].yielded = false;
        let current = Some(self.current).filter(|c| runnable.contains(c));
        let c = Candidates {
            runnable: &runnable,
            current,
            previous: self.current,
            held_points: self.held_points,
            points: self.points,
        };
        let next = self.policy.choose(&mut self.rng, &c);
        debug_assert!(runnable.contains(&next), "the policy picks a runnable thread");
        if next == self.current {
            self.held_points += 1;
        } else {
            self.held_points = 0;
            self.switches += 1;
            self.current = next;
        }
        next
    }

    /// The pick after [`State::woken_from_outside`] woke a thread.
    pub fn pick_woken(&mut self) -> Tid {
        let runnable = self.runnable();
        assert!(!runnable.is_empty(), "a thread was woken");
        self.choose(runnable)
    }

    /// Every thread's state, for a failure's message; `where_is` says
    /// where a futex word lives.
    pub fn describe(&self, where_is: &dyn Fn(usize) -> String) -> String {
        let mut out = format!("policy {}; ", self.policy.describe());
        for (tid, thread) in self.threads.iter().enumerate() {
            let who = if tid == 0 { "t0 (the engine call's)".to_string() } else { format!("t{tid}") };
            let what = match &thread.status {
                Status::Runnable if tid == self.current => "running".to_string(),
                Status::Runnable => "runnable".to_string(),
                Status::Exited => "exited".to_string(),
                Status::Blocked(Blocked::Futex { addr, expected, deadline_ns, .. }) => {
                    let until = deadline_ns.map_or("no timeout".to_string(), |d| format!("until {d} ns"));
                    format!("futex wait on {addr:#x} {} (word {expected}, {until})", where_is(*addr))
                }
                Status::Blocked(Blocked::Sleep { deadline_ns }) => format!("sleeping until {deadline_ns} ns"),
                Status::Blocked(Blocked::Join { target }) => format!("joining t{target}"),
            };
            let _ = write!(out, "{}{who}: {what}", if tid == 0 { "" } else { "; " });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word reader for runs whose futex words never move.
    fn still(_addr: usize) -> u32 {
        0
    }

    /// No futex word is shared with threads outside the run.
    fn unshared(_addr: usize) -> bool {
        false
    }

    fn futex(addr: usize, deadline_ns: Option<u64>) -> Blocked {
        Blocked::Futex { addr, expected: 0, bitset: u32::MAX, deadline_ns, order: 0 }
    }

    #[test]
    fn every_thread_asleep_moves_the_clock_to_the_earliest_deadline() {
        let mut state = State::new(1, 0);
        let sleeper = state.spawn();
        state.block(sleeper, Blocked::Sleep { deadline_ns: 5_000 });
        state.block(0, futex(64, Some(9_000)));
        assert_eq!(state.pick(100, &still, &unshared), Pick::Run(sleeper, Some(5_000)));
        assert_eq!(state.threads[sleeper].wake, Wake::Woken);
        state.block(sleeper, Blocked::Join { target: 0 });
        assert_eq!(state.pick(5_001, &still, &unshared), Pick::Run(0, Some(9_000)));
        assert_eq!(state.threads[0].wake, Wake::TimedOut, "the futex wait's deadline passed first");
    }

    /// FJALL.md, "the explore stall": t0 polls with sleeps (fjall's drop,
    /// waiting for its worker) while t1 waits on std's process-wide
    /// `thread_info::LOCK`, which a thread outside the run held and let
    /// go (its wake reached the kernel, not this run). Without the wake
    /// before the clock moves, t0 ran at every pick for ever.
    #[test]
    fn a_waiter_on_a_shared_word_that_moved_wakes_before_the_clock_moves() {
        let mut state = State::new(4, 0);
        let worker = state.spawn();
        let lock = Blocked::Futex { addr: 64, expected: 2, bitset: u32::MAX, deadline_ns: None, order: 0 };
        state.block(worker, lock.clone());
        state.block(0, Blocked::Sleep { deadline_ns: 10_000 });
        let let_go = |_addr: usize| 0;
        assert_eq!(state.pick(100, &let_go, &|addr| addr == 64), Pick::Run(worker, None), "no clock move");
        assert_eq!(state.threads[worker].wake, Wake::Woken);
        // A word of the run's own (heap) that moved waits for its wake:
        // the sleeper runs first, as before.
        let mut state = State::new(4, 0);
        let worker = state.spawn();
        state.block(worker, lock);
        state.block(0, Blocked::Sleep { deadline_ns: 10_000 });
        assert_eq!(state.pick(100, &let_go, &unshared), Pick::Run(0, Some(10_000)));
    }

    #[test]
    fn a_handle_names_the_newest_thread_that_has_it() {
        let mut state = State::new(5, 0);
        let (first, second) = (state.spawn(), state.spawn());
        state.threads[first].handle = 0x7000;
        state.exit(first);
        state.threads[second].handle = 0x7000;
        assert_eq!(state.by_handle(0x7000), Some(second), "glibc reused the ended thread's pthread_t");
        assert_eq!(state.by_handle(0), None, "a thread not yet named is no one's");
    }

    #[test]
    fn no_runnable_thread_and_no_timer_is_a_deadlock() {
        let mut state = State::new(2, 0);
        let other = state.spawn();
        state.block(other, futex(8, None));
        state.block(0, Blocked::Join { target: other });
        assert_eq!(state.pick(0, &still, &unshared), Pick::Deadlock);
        let described = state.describe(&|_| String::new());
        assert!(
            described.contains("t0 (the engine call's): joining t1") && described.contains("t1: futex wait on 0x8")
        );
        // A word that moved (a thread outside the run let go) wakes its waiter.
        assert!(state.woken_from_outside(&|_| 1));
        assert_eq!(state.pick_woken(), other);
    }

    #[test]
    fn a_wake_takes_the_oldest_waiters_whose_bitset_meets_it() {
        let mut state = State::new(3, 0);
        let (a, b, c) = (state.spawn(), state.spawn(), state.spawn());
        state.block(b, futex(16, None));
        state.block(a, futex(16, None));
        state.block(c, Blocked::Futex { addr: 16, expected: 0, bitset: 0b10, deadline_ns: None, order: 0 });
        assert_eq!(state.wake_futex(16, 1, 0b01), 1);
        assert_eq!(state.threads[b].status, Status::Runnable, "b waited first");
        assert!(matches!(state.threads[a].status, Status::Blocked(_)));
        assert_eq!(state.wake_futex(16, 5, 0b01), 1, "c's bitset does not meet the wake's");
        assert!(matches!(state.threads[c].status, Status::Blocked(_)));
        assert_eq!(state.wake_futex(32, 5, u32::MAX), 0, "no waiter on another word");
    }

    #[test]
    fn a_yielding_thread_lets_another_go_first_and_an_exit_frees_its_joiner() {
        for seed in 0..50 {
            let mut state = State::new(seed, 0);
            let other = state.spawn();
            state.threads[0].yielded = true;
            assert_eq!(state.pick(0, &still, &unshared), Pick::Run(other, None), "seed {seed}: {:?}", state.policy);
            state.block(other, Blocked::Join { target: 0 });
            state.exit(0);
            assert_eq!(state.threads[other].status, Status::Runnable);
        }
    }

    #[test]
    fn the_same_seed_picks_alike_and_every_pick_is_runnable() {
        let picks = |seed: u64| {
            let mut state = State::new(seed, 0);
            for _ in 0..3 {
                state.spawn();
            }
            let mut picked = Vec::new();
            for point in 0..500u64 {
                let blocked = (point % 4) as usize;
                if blocked != state.current && state.threads[blocked].status == Status::Runnable && point % 7 == 0 {
                    state.block(blocked, Blocked::Sleep { deadline_ns: point + 3 });
                }
                let Pick::Run(next, _) = state.pick(point, &still, &unshared) else { panic!("sleepers wake") };
                assert_eq!(state.threads[next].status, Status::Runnable);
                picked.push(next);
            }
            (picked, state.policy)
        };
        let mut policies = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let (first, policy) = picks(seed);
            assert_eq!(picks(seed).0, first, "seed {seed}");
            policies.insert(format!("{:?}", std::mem::discriminant(&policy)));
        }
        assert_eq!(policies.len(), 4, "forty seeds draw every policy");
    }
}
