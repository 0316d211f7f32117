//! `stdfs`: an unmodified program's `std::fs` (and `libc`) file calls
//! under a reserved root ([`session::ROOT`], `/sim-db`) served by a seed's
//! simulated disk, in process and deterministically; every other file
//! call goes to the real system untouched (STDFS.md).
//!
//! The mechanism: this binary defines libc's file functions (`interpose`),
//! which the dynamic linker binds ahead of glibc's. That changes the whole
//! process, so it lives here, in a binary that opts in, and never in the
//! `sim` library or the `sim` binary. A thread serves a run once it
//! installs a session ([`session::install`]) over a simulated disk.
//!
//! What the layer cannot see, and what it does about each:
//! - memory-mapped I/O: `mmap` of a simulated descriptor is refused;
//! - a raw `syscall()` (or any function not defined here) on a simulated
//!   descriptor reaches the kernel, which has no such descriptor (they are
//!   numbered from 2^30): `EBADF`, never a real file; on a path under the
//!   root it reaches the real `/sim-db`, which must not exist (checked by
//!   `main` and the tests, [`interpose::real_root_is_absent`]);
//! - I/O from another thread: a call on a simulated descriptor from a
//!   thread other than its run's, or on a path under the root from a
//!   thread serving no run, is refused.
//!
//! Each refusal fails the call, says so on stderr, and is collected for
//! the run ([`session::SessionGuard::refusals`]).
//!
//! Run it: `cargo run -p sim --example stdfs` runs the demonstration
//! program ([`demo`]) on a simulated disk, cuts the power, and prints what
//! survived; `cargo test -p sim --example stdfs` runs the layer's tests.

#![deny(unsafe_code)]

#[cfg(test)]
mod cowkv;
mod demo;
mod dirstream;
mod entropy;
mod errno;
mod files;
#[allow(unsafe_code)]
mod interpose;
mod meta;
#[cfg(feature = "persy")]
mod persy_target;
mod plant;
mod route;
mod serve_fd;
mod serve_path;
mod session;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errno;
#[cfg(any(test, feature = "persy"))]
mod worker;

use std::process::ExitCode;

fn main() -> ExitCode {
    if !interpose::real_root_is_absent() {
        eprintln!(
            "stdfs: {} exists on the real disk; remove it first (the layer's root must not be real)",
            session::ROOT
        );
        return ExitCode::from(2);
    }
    if std::env::args().nth(1).as_deref() == Some("demo") {
        return demo_main();
    }
    target_main()
}

/// Without a first argument `demo`: persy on the kit (the simulator's
/// whole command line: `--seeds`, `explore`, `--shrink`, …).
#[cfg(feature = "persy")]
fn target_main() -> ExitCode {
    sim::kit::main(persy_target::PersyAdapter)
}

#[cfg(not(feature = "persy"))]
fn target_main() -> ExitCode {
    eprintln!("stdfs: built without the `persy` feature: only `stdfs demo` runs");
    ExitCode::from(2)
}

/// `stdfs demo`: the demonstration program on a simulated disk.
fn demo_main() -> ExitCode {
    match demo::run_and_cut_power() {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("stdfs demo failed: {message}");
            ExitCode::FAILURE
        }
    }
}
