//! `errno` across the layer's own work (issue 47): a call that succeeds
//! leaves the caller's `errno` as it was, whatever the layer's mutexes,
//! `dlsym` or stderr lines did to it meanwhile; std's `read_dir` counts on
//! that to tell the end of a listing from an error.
//!
//! The deterministic tests make every interposed call's own work leave
//! `EAGAIN` (`interpose::clobber_for_test`, what a contended mutex's wait
//! does now and then); the stress test meets the real thing, and is run
//! by hand (`--ignored`) because it is a matter of chance.

use std::fs::{self, File};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::demo::strict_disk;
use crate::{interpose, session};

/// Every entry of the listing of `dir`, or the first error.
fn listing(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

#[allow(unsafe_code)]
fn errno_slot() -> *mut i32 {
    // SAFETY: the calling thread's errno slot, valid for the thread's life.
    unsafe { libc::__errno_location() }
}

#[test]
fn a_listing_ends_at_its_end_whatever_errno_the_layers_own_work_leaves() {
    let real = tempfile::tempdir().unwrap();
    fs::write(real.path().join("real"), b"x").unwrap();
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/simulated", b"x").unwrap();
    interpose::clobber_for_test(true);
    let simulated = listing(Path::new("/sim-db/db"));
    let passed_on = listing(real.path());
    interpose::clobber_for_test(false);
    assert_eq!(simulated.expect("a served listing ends without an error"), ["simulated"]);
    assert_eq!(passed_on.expect("glibc's listing, through the layer, ends without an error"), ["real"]);
    assert!(guard.refusals().is_empty());
}

#[test]
#[allow(unsafe_code)]
fn a_call_that_succeeds_leaves_the_callers_errno_and_one_that_fails_sets_its_own() {
    let real = tempfile::tempfile().unwrap();
    let _guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let file = File::create("/sim-db/db/file").unwrap();
    interpose::clobber_for_test(true);
    let mut seen = Vec::new();
    for fd in [file.as_raw_fd(), real.as_raw_fd()] {
        // SAFETY: the thread's errno slot; `fsync` of an open descriptor.
        let outcome = unsafe {
            *errno_slot() = libc::ENOMSG;
            (libc::fsync(fd), *errno_slot())
        };
        seen.push(outcome);
    }
    // SAFETY: `fsync` of a descriptor that is not open fails, by design.
    let failed = unsafe { (libc::fsync(-1), *errno_slot()) };
    interpose::clobber_for_test(false);
    assert_eq!(seen, [(0, libc::ENOMSG), (0, libc::ENOMSG)], "served, then passed on: errno as the caller left it");
    assert_eq!(failed, (-1, libc::EBADF), "a failing call's errno is its own");
}

/// Listings from `threads` threads at once, each serving its own run,
/// `rounds` each: how many ended in an error.
fn listing_errors(threads: usize, rounds: usize) -> usize {
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let _guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
                for name in ["a", "b", "c"] {
                    fs::write(Path::new("/sim-db/db").join(name), b"x").unwrap();
                }
                let mut errors = 0;
                for _ in 0..rounds {
                    interpose::start_engine_call();
                    errors += usize::from(listing(Path::new("/sim-db/db")).is_err());
                }
                errors
            })
        })
        .collect();
    workers.into_iter().map(|w| w.join().unwrap()).sum()
}

/// By hand: `cargo test -p stdfs-layer --lib listings_from_several -- --ignored`.
/// (Without the fix: 3 runs in 5 of 4 × 200,000 listings failed, with 7,
/// 2 and 1 errors; with it, none in 5.)
#[test]
#[ignore = "a stress test, run by hand: a matter of chance, and long"]
fn listings_from_several_threads_at_once_end_without_an_error() {
    let rounds: usize = std::env::var("STDFS_STRESS_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(200_000);
    assert_eq!(listing_errors(4, rounds), 0);
}
