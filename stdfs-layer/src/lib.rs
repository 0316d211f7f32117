//! `stdfs-layer`: an unmodified program's `std::fs` (and `libc`) file
//! calls under a reserved root ([`ROOT`], `/sim-db`) served by a seed's
//! simulated disk, in process and deterministically; every other file
//! call goes to the real system untouched (STDFS.md, "Bring your own
//! std::fs engine").
//!
//! The mechanism: this crate defines libc's file functions (`interpose`),
//! which the linker binds ahead of glibc's. That changes the whole
//! process, so a binary opts in by calling the crate: [`main`] (a kit
//! target's whole command line) or [`install`] (a thread serving a run,
//! as a test does). rustc links a dependency into a binary only when the
//! binary names it, and both calls link every interposed function
//! (`interpose::link_all`), so a test or binary that never names this
//! crate keeps glibc's functions even when the crate is a dependency of
//! its package.
//!
//! The conventions, as defaults:
//! - the root: the kit's `Env::dir` on the simulated disk is
//!   [`db_path`]`(env.dir)` to the engine (`/sim-db/<dir>`);
//! - the engine on a thread of its own per open ([`Worker`], with
//!   [`Place::of`] for the kit's `Env`): what a process draws fresh from
//!   the operating system (std's `HashMap` keys, `rand`'s thread RNG) is
//!   then the seed's;
//! - the heap the seed's: once the layer is in use every allocation comes
//!   back zeroed ([`ZeroedHeap`], the process's allocator under the
//!   default feature `zeroed-heap`), so bytes an engine writes without
//!   initialising them do not carry what earlier runs left;
//! - a refusal fails the run: every answer of the worker is a
//!   [`Served`], which [`Served::unless_refused`] turns into the value or
//!   the kit's `refused` failure.
//!
//! What the layer cannot see, and what it does about each:
//! - memory-mapped I/O: `mmap` of a simulated descriptor is served as
//!   the layer's own read-only memory holding the file's bytes, which the
//!   layer rewrites at each write it serves (`interpose::maps`,
//!   `watch.rs`); a store through a map faults, and a writable
//!   shared map is refused unless the file is declared volatile
//!   ([`declare_volatile`]: a lock file, served as memory no crash
//!   keeps);
//! - a system call made without libc's function (rustix's `linux_raw`
//!   backend, inline assembly) on a run's thread is trapped by syscall
//!   user dispatch and served as its libc form, or refused loudly
//!   (`interpose::raw_trap`, `interpose::raw_calls`); libc's generic
//!   `syscall()` goes through the same table on any thread;
//! - what still escapes (an inline system call on a thread serving no
//!   run, a function not defined here) on a simulated descriptor reaches
//!   the kernel, which has no such descriptor (they are numbered from
//!   2^30): `EBADF`, never a real file; on a path under the root it
//!   reaches the real `/sim-db`, which must not exist (checked by [`main`]
//!   and the tests, [`real_root_is_absent`]);
//! - I/O from another thread: a call on a simulated descriptor from a
//!   thread other than its run's, or on a path under the root from a
//!   thread serving no run, is refused. The threads an engine starts are
//!   its run's: a deterministic scheduler (`sched`, STDFS.md "Threads")
//!   runs them one at a time, in an order the seed decides, and ends the
//!   run loudly at a deadlock, a blocking call it cannot model, or a
//!   thread that spins.
//!
//! Each refusal fails the call, says so on stderr, and is collected for
//! the run ([`SessionGuard::refusals`]).

#![deny(unsafe_code)]

mod attrs;
pub mod demo;
mod dirstream;
mod entropy;
mod errno;
mod files;
mod heap;
#[allow(unsafe_code)]
mod interpose;
pub mod live;
pub mod live_exec;
mod meta;
mod opt_in;
mod plant;
mod route;
mod sched;
mod serve_copy;
mod serve_dents;
mod serve_fd;
mod serve_map;
mod serve_meta;
mod serve_names;
mod serve_path;
mod serve_space;
mod session;
#[cfg(test)]
mod tests;
mod thread_seed;
mod volatile;
mod watch;
mod worker;

/// The target kit this layer serves (`simkit`), re-exported so that a
/// user's crate depends on `stdfs-layer` alone: its adapter is a
/// `stdfs_layer::kit::Adapter`, its tests `stdfs_layer::kit::Kit`
/// (STDFS.md, "Bring your own std::fs engine").
pub use simkit as kit;

pub use interpose::raw_trap::trapped_calls as raw_calls_trapped;
pub use interpose::{real_root_is_absent, start_engine_call, LIVELOCK_CALLS, LIVELOCK_FAILURES};
pub use opt_in::install;
pub use opt_in::{db_path, fail_sweep_on_orphans, main};
pub use plant::{LayerPlant, SCRATCH_SUFFIX};
pub use sched::{figures as scheduler_figures, set_spin_budget};
pub use session::{orphan_refusals, SessionGuard, ROOT};
pub use worker::{raise_refusals, Place, Served, Worker};

pub use heap::ZeroedHeap;
pub use volatile::declare_volatile;

/// The process's allocator: every allocation filled with zeros once the
/// layer is in use, so that bytes an engine never initialised read the
/// same in every run (`heap`, JAMMDB.md finding 4). Off with the default
/// feature `zeroed-heap` (a binary with an allocator of its own).
#[cfg(feature = "zeroed-heap")]
#[global_allocator]
static HEAP: ZeroedHeap = ZeroedHeap(std::alloc::System);
