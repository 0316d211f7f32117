//! What the operating system hands every process fresh, made the seed's:
//! random bytes (`getrandom`, `getentropy`, the `getrandom` system call
//! through `syscall()`) and the time (`clock_gettime`), for a thread that
//! serves a run.
//!
//! An engine that draws either could write different bytes, or do
//! different I/O, from one run of a seed to the next: persy mixes
//! `rand::random` into every segment id it writes (`segment_hash`,
//! `src/address/segment.rs`), std seeds each thread's `HashMap` keys from
//! `getrandom`, and persy's page cache ages its entries by `Instant`
//! (`src/allocator/cache.rs`). A session answers both from its own state:
//! the bytes from a ChaCha8 stream of the session's seed, the time from a
//! virtual clock that starts at [`CLOCK_START_S`] and advances
//! [`CLOCK_STEP_NS`] at every reading (monotonic, and the same in every
//! run). A thread with no session gets the real ones (glibc's).
//!
//! `time()` and `gettimeofday()`, which glibc answers from the vDSO
//! without calling `clock_gettime`'s symbol, and reads of a descriptor
//! opened on `/dev/urandom` or `/dev/random`, are served from the same
//! clock and stream (`interpose::entropy_calls`). Not seen: a `getrandom`
//! system call made by inline assembly, the `rdrand` instruction, and
//! glibc's internal callers (`mkstemp` outside the root). None is used by
//! persy or std on this target.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The virtual clock's first reading, in seconds (every clock id reads
/// the same counter: 2023-11-14 as wall time, plausible for a program
/// that prints it).
pub const CLOCK_START_S: u64 = 1_700_000_000;
/// How far the virtual clock moves at each reading.
pub const CLOCK_STEP_NS: u64 = 1_000;

/// A session's random stream and clock.
pub struct Entropy {
    /// The seed the stream was made from (the run's scheduler draws its
    /// own stream from it too, `crate::sched`).
    pub seed: u64,
    rng: ChaCha8Rng,
    clock_ns: u64,
    /// Random bytes served so far (for tests and reports).
    pub served_bytes: u64,
}

impl Entropy {
    /// The stream of `seed`, the clock at its start.
    pub fn new(seed: u64) -> Entropy {
        Entropy { seed, rng: ChaCha8Rng::seed_from_u64(seed), clock_ns: CLOCK_START_S * 1_000_000_000, served_bytes: 0 }
    }

    /// Fill `buf` from the stream.
    pub fn fill(&mut self, buf: &mut [u8]) {
        self.rng.fill_bytes(buf);
        self.served_bytes += buf.len() as u64;
    }

    /// The clock's next reading, in nanoseconds: strictly later than the
    /// one before.
    pub fn now_ns(&mut self) -> u64 {
        let before = self.clock_ns;
        self.clock_ns = before.checked_add(CLOCK_STEP_NS).expect("the virtual clock does not overflow in a run");
        assert!(self.clock_ns > before);
        self.clock_ns
    }

    /// The clock's last reading, without moving it: a deadline's base (the
    /// scheduler), a time the layer records (`crate::attrs`: which must not
    /// change what the program reads).
    pub fn peek_ns(&self) -> u64 {
        self.clock_ns
    }

    /// Move the clock forward to `ns` (the scheduler, when every thread
    /// sleeps: time passes only then). Never backward.
    pub fn advance_to(&mut self, ns: u64) {
        self.clock_ns = self.clock_ns.max(ns);
    }
}
