//! What trapping a system call made without libc costs (STDFS.md, "System
//! calls made without libc"): the same `pwrite` of 8 bytes, timed as
//!
//! - `libc, simulated fd`: std's `write_at`, through the layer's `pwrite64`
//!   (no trap; the served call's own cost);
//! - `raw, simulated fd`: rustix's `pwrite`, an inline `syscall` trapped by
//!   dispatch, decoded and served by the same function;
//! - `raw, real fd, run thread`: rustix's `pwrite` to a real temporary file
//!   from a run's thread: trapped, then made for real through glibc;
//! - `raw, real fd, no run`: the same from a thread serving no run (not
//!   trapped: the kernel's own cost).
//!
//! A measurement, not a test: `cargo run --release -p stdfs-layer
//! --example raw_trap_cost [CALLS]`. Wall time on the calling thread, read
//! from the kernel's clock.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use stdfs_layer::demo::strict_disk;

/// The real monotonic clock, in nanoseconds: asked of the kernel through
/// `syscall()`, since `clock_gettime` on a run's thread is the seed's
/// virtual clock (STDFS.md, "Randomness and time").
fn now_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid `timespec` for the kernel to fill.
    let rc = unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

fn per_call_ns(calls: u64, mut call: impl FnMut(u64)) -> f64 {
    let start = now_ns();
    for i in 0..calls {
        call(i);
    }
    (now_ns() - start) as f64 / calls as f64
}

fn main() {
    let calls: u64 = std::env::args().nth(1).map_or(200_000, |n| n.parse().expect("CALLS is a number"));
    let real_dir = std::env::temp_dir().join(format!("raw-trap-cost-{}", std::process::id()));
    std::fs::create_dir_all(&real_dir).unwrap();
    let real = File::create(real_dir.join("bench")).unwrap();
    let kernel = per_call_ns(calls, |i| {
        rustix::io::pwrite(&real, b"8 bytes!", (i % 512) * 8).unwrap();
    });
    let guard = stdfs_layer::install(strict_disk(), &[Path::new("/db")], 0, None);
    let sim = File::create("/sim-db/db/bench").expect("created on the simulated disk");
    let libc_sim = per_call_ns(calls, |i| sim.write_all_at(b"8 bytes!", (i % 512) * 8).unwrap());
    let trapped_before = stdfs_layer::raw_calls_trapped();
    let raw_sim = per_call_ns(calls, |i| {
        rustix::io::pwrite(&sim, b"8 bytes!", (i % 512) * 8).unwrap();
    });
    let raw_real = per_call_ns(calls, |i| {
        rustix::io::pwrite(&real, b"8 bytes!", (i % 512) * 8).unwrap();
    });
    let trapped = stdfs_layer::raw_calls_trapped() - trapped_before;
    assert!(guard.refusals().is_empty());
    drop((sim, guard));
    std::fs::remove_dir_all(&real_dir).unwrap();
    println!("{calls} calls each; {trapped} trapped");
    println!("libc, simulated fd:        {libc_sim:8.0} ns/call");
    println!("raw, simulated fd:         {raw_sim:8.0} ns/call");
    println!("raw, real fd, run thread:  {raw_real:8.0} ns/call");
    println!("raw, real fd, no run:      {kernel:8.0} ns/call");
}
