//! How the scheduler picks the next thread at a scheduling point: one
//! policy per run, drawn from the seed's stream (swarm testing: a seed
//! that always round-robins and a seed that starves one thread find
//! different interleavings), and every choice within it drawn from the
//! same stream, so a seed's interleaving is the same in every run.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A thread of the run, by creation order: 0 is the engine call's thread
/// (the layer's `Worker`), the others were started by the engine.
pub type Tid = usize;

/// A run's scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The running thread keeps the baton for `quantum` points, then the
    /// next runnable thread in creation order takes it.
    RoundRobin { quantum: u32 },
    /// At each point the running thread keeps the baton with probability
    /// `stay_per_mille`/1000; otherwise any runnable thread, uniformly.
    Random { stay_per_mille: u32 },
    /// The engine call's own thread (thread 0) runs whenever it can; the
    /// background threads only while it is blocked ("run the background
    /// thread last": a flusher that is always late).
    BackgroundLast,
    /// Thread `victim` is never picked in the first `for_points` points
    /// while another thread can run (a background thread starved for a
    /// while); otherwise as [`Policy::Random`] at one half.
    Starve { victim: Tid, for_points: u64 },
}

/// What a pick knows of the run.
pub struct Candidates<'a> {
    /// The runnable threads, in creation order; never empty.
    pub runnable: &'a [Tid],
    /// The thread that held the baton, if it can go on.
    pub current: Option<Tid>,
    /// The thread that held the baton, runnable or not.
    pub previous: Tid,
    /// Points the current thread has held the baton for.
    pub held_points: u32,
    /// Points of the run so far.
    pub points: u64,
}

impl Policy {
    /// A policy drawn from the seed's stream.
    pub fn draw(rng: &mut ChaCha8Rng) -> Policy {
        match rng.gen_range(0..4u32) {
            0 => Policy::RoundRobin { quantum: rng.gen_range(1..=8) },
            1 => Policy::Random { stay_per_mille: rng.gen_range(0..=900) },
            2 => Policy::BackgroundLast,
            _ => Policy::Starve { victim: rng.gen_range(1..=3), for_points: rng.gen_range(10..=2_000) },
        }
    }

    /// The next thread to run.
    pub fn choose(&self, rng: &mut ChaCha8Rng, c: &Candidates<'_>) -> Tid {
        debug_assert!(!c.runnable.is_empty(), "a pick has a runnable thread");
        let any = |rng: &mut ChaCha8Rng| c.runnable[rng.gen_range(0..c.runnable.len())];
        match *self {
            Policy::RoundRobin { quantum } => match c.current {
                Some(current) if c.held_points < quantum => current,
                _ => *c.runnable.iter().find(|&&t| t > c.previous).unwrap_or(&c.runnable[0]),
            },
            Policy::Random { stay_per_mille } => match c.current {
                Some(current) if rng.gen_range(0..1000) < stay_per_mille => current,
                _ => any(rng),
            },
            Policy::BackgroundLast => {
                if c.runnable.contains(&0) {
                    0
                } else {
                    c.current.unwrap_or_else(|| any(rng))
                }
            }
            Policy::Starve { victim, for_points } => {
                let others: Vec<Tid> = c.runnable.iter().copied().filter(|&t| t != victim).collect();
                if c.points < for_points && !others.is_empty() {
                    return others[rng.gen_range(0..others.len())];
                }
                match c.current {
                    Some(current) if rng.gen_bool(0.5) => current,
                    _ => any(rng),
                }
            }
        }
    }

    /// The policy's name and parameters, for a failure's message.
    pub fn describe(&self) -> String {
        match self {
            Policy::RoundRobin { quantum } => format!("round robin, {quantum} points each"),
            Policy::Random { stay_per_mille } => format!("random, staying {stay_per_mille}‰"),
            Policy::BackgroundLast => "background last".to_string(),
            Policy::Starve { victim, for_points } => format!("thread {victim} starved for {for_points} points"),
        }
    }
}
