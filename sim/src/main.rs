//! `sim`: the simulator's command line (`sim --help`; the code is
//! `sim::cli`).
//!
//! Exit status: 0 no failure, 1 a failure found, 2 bad usage.

use std::process::ExitCode;

fn main() -> ExitCode {
    pad_the_heap();
    sim::cli::main()
}

/// How far past a request glibc grows its heap, and what it keeps when it
/// trims the heap's free top (`M_TOP_PAD`; its default is 128 KiB).
const HEAP_PAD_BYTES: libc::c_int = 4 << 20;

/// A run grows large buffers and frees them again at every recovery (a
/// log read whole, a file's bytes, a transcript of the content). With
/// glibc's default pad the freed top of the heap goes back to the kernel
/// and the next buffer faults its pages in again: a sweep of seeds
/// 0..2000 took 14,686 minor page faults, 4,048 with this pad, at the
/// same peak RSS (BENCHMARKS.md, issue 51's seventh pass). Set in the
/// binary, not by `GLIBC_TUNABLES`, which every program `sim trace` and
/// `sim live` start would inherit.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn pad_the_heap() {
    // SAFETY: mallopt sets one of the allocator's parameters; it takes
    // the allocator's own lock and touches no memory of ours.
    let accepted = unsafe { libc::mallopt(libc::M_TOP_PAD, HEAP_PAD_BYTES) };
    debug_assert_eq!(accepted, 1, "glibc takes M_TOP_PAD");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn pad_the_heap() {}
