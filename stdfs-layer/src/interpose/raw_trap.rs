//! System calls made without libc, caught: Linux's syscall user dispatch
//! turned on for each thread that serves a run, over this executable's
//! own code.
//!
//! Code compiled into the executable can make a system call itself
//! (rustix's default `linux_raw` backend on x86-64 does, with inline
//! assembly: `tempfile`'s `persist` and `reopen`, fjall's file
//! replacement), and such a call never meets the functions this layer
//! defines. With dispatch on in its inclusive mode
//! (`PR_SYS_DISPATCH_INCLUSIVE_ON`, Linux 6.16), every `syscall`
//! instruction inside the executable's text raises `SIGSYS` instead of
//! entering the kernel; the handler here decodes the call from the
//! interrupted registers, serves it as the same call through libc would
//! be served ([`super::raw_calls`]), and puts the kernel's kind of answer
//! (a negative errno) in `RAX`. libc, the dynamic loader and the vDSO lie
//! outside the region, so their system calls (the layer's own among
//! them) enter the kernel as ever.
//!
//! Why dispatch and not a seccomp trap: dispatch is a thread's, switched
//! on where a run begins (`session::install`, a scheduled thread's start)
//! and off where it ends, so a thread serving no run, the harness, a
//! forked or exec'd child (neither inherits it: checked) are untouched;
//! a seccomp filter is the whole process's for good, is inherited across
//! `execve` (an `--isolate` child would meet its parent's addresses) and
//! without `CAP_SYS_ADMIN` needs `no_new_privs`. On a kernel without the
//! inclusive mode the exclusive one is used, over libc's text instead
//! (every call from outside libc traps, the loader's and the vDSO's too,
//! each passed on as it came); without either, the layer says so once on
//! stderr and a raw call reaches the kernel unseen, as before.

use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Once, OnceLock};

/// `prctl` option and modes (`linux/prctl.h`; the inclusive mode is newer
/// than the `libc` crate).
const PR_SET_SYSCALL_USER_DISPATCH: c_int = 59;
const PR_SYS_DISPATCH_OFF: c_long = 0;
const PR_SYS_DISPATCH_EXCLUSIVE_ON: c_long = 1;
const PR_SYS_DISPATCH_INCLUSIVE_ON: c_long = 2;
/// `si_code` of a `SIGSYS` raised by dispatch (`SYS_USER_DISPATCH`).
const SYS_USER_DISPATCH: c_int = 2;

/// The selector the kernel reads at each call: always "block" (dispatch
/// on); a thread is switched off with `prctl`, not through it.
static SELECTOR: AtomicU8 = AtomicU8::new(1);

/// How this process traps: the mode and the region, found once.
#[derive(Clone, Copy)]
struct Region {
    mode: c_long,
    start: usize,
    len: usize,
}

static REGION: OnceLock<Option<Region>> = OnceLock::new();
/// Calls trapped in this process so far (a figure for reports and
/// probes; never part of a trace).
static TRAPPED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Calls trapped on this thread so far (the tests' look).
    static TRAPPED_HERE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
static HANDLER: Once = Once::new();
/// The `SIGSYS` action found before the layer's, for a `SIGSYS` that is
/// not dispatch's (a seccomp filter of someone else's).
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// The executable text of the loaded object `wanted` picks by name (the
/// main program's is empty), as one range `(start, len)`.
fn text_of(wanted: fn(&[u8]) -> bool) -> Option<(usize, usize)> {
    struct Search {
        wanted: fn(&[u8]) -> bool,
        found: Option<(usize, usize)>,
    }
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: `data` is the `Search` below; `info` is the loader's,
        // valid for this call, its headers `dlpi_phnum` long.
        let (search, info) = unsafe { (&mut *data.cast::<Search>(), &*info) };
        let name = if info.dlpi_name.is_null() {
            &[][..]
        } else {
            // SAFETY: a non-null name is a C string of the loader's.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        if search.found.is_some() || !(search.wanted)(name) {
            return 0;
        }
        // SAFETY: as above.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
        let text = headers.iter().filter(|h| h.p_type == libc::PT_LOAD && h.p_flags & libc::PF_X != 0);
        let (lo, hi) = text.fold((usize::MAX, 0), |(lo, hi), h| {
            let at = info.dlpi_addr as usize + h.p_vaddr as usize;
            (lo.min(at), hi.max(at + h.p_memsz as usize))
        });
        if lo < hi {
            search.found = Some((lo, hi - lo));
        }
        i32::from(search.found.is_some())
    }
    let mut search = Search { wanted, found: None };
    // SAFETY: `visit` reads only what the loader hands it and `search`.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut search).cast()) };
    search.found
}

/// Switch dispatch on for this thread over `region`.
fn switch_on(region: Region) -> bool {
    // SAFETY: `prctl` with the documented arguments; the selector is a
    // static, valid for the process's life.
    let rc =
        unsafe { libc::prctl(PR_SET_SYSCALL_USER_DISPATCH, region.mode, region.start, region.len, SELECTOR.as_ptr()) };
    rc == 0
}

/// The region this kernel takes: the inclusive mode over the executable's
/// text if it can, else the exclusive one over libc's; `None` if neither
/// (said once on stderr).
fn find_region() -> Option<Region> {
    let exe = text_of(<[u8]>::is_empty).map(|(start, len)| Region { mode: PR_SYS_DISPATCH_INCLUSIVE_ON, start, len });
    let is_libc = |name: &[u8]| name.windows(8).any(|w| w == b"libc.so.");
    let libc_text = text_of(is_libc).map(|(start, len)| Region { mode: PR_SYS_DISPATCH_EXCLUSIVE_ON, start, len });
    for region in [exe, libc_text].into_iter().flatten() {
        if switch_on(region) {
            switch_off();
            return Some(region);
        }
    }
    eprintln!(
        "stdfs: raw system calls cannot be trapped here (syscall user dispatch refused): a call made without libc reaches the kernel unseen"
    );
    None
}

fn switch_off() {
    // SAFETY: `prctl` turning dispatch off takes no pointer.
    unsafe { libc::prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0) };
}

/// Install the `SIGSYS` handler, once for the process.
fn install_handler() {
    HANDLER.call_once(|| {
        // SAFETY: `sigaction` is plain data; all-zero is a valid value.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigsys as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: as above.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to two `sigaction`s.
        let rc = unsafe { libc::sigaction(libc::SIGSYS, &action, &mut previous) };
        assert_eq!(rc, 0, "sigaction(SIGSYS) failed");
        let _ = PREVIOUS.set(previous);
    });
}

/// Trap this thread's raw system calls from now on: a thread beginning to
/// serve a run (`session::install`) or a thread of a run's engine (the
/// scheduler's `begin`). Whether they are trapped.
pub fn arm_thread() -> bool {
    install_handler();
    let Some(region) = *REGION.get_or_init(find_region) else {
        return false;
    };
    let on = switch_on(region);
    debug_assert!(on, "dispatch was switched on for this process's first thread");
    on
}

/// How many system calls the process has trapped so far (all threads).
pub fn trapped_calls() -> u64 {
    TRAPPED.load(Ordering::Relaxed)
}

/// How many system calls this thread has had trapped so far.
#[cfg(test)]
pub fn trapped_here() -> u64 {
    TRAPPED_HERE.get()
}

/// Stop trapping this thread's raw calls (its session ended).
pub fn disarm_thread() {
    if let Some(Some(_)) = REGION.get() {
        switch_off();
    }
}

/// Pass a `SIGSYS` that is not dispatch's to the handler found before the
/// layer's, or end the process saying why.
///
/// # Safety
/// The arguments of a signal handler.
unsafe fn not_ours(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let previous = PREVIOUS.get().map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    if previous != libc::SIG_DFL && previous != libc::SIG_IGN {
        // SAFETY: a handler installed with SA_SIGINFO takes these three.
        let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = unsafe { std::mem::transmute(previous) };
        handler(sig, info, ctx);
        return;
    }
    // SAFETY: `info` is the kernel's.
    let code = unsafe { (*info).si_code };
    eprintln!("stdfs: refused: a SIGSYS the layer did not ask for (si_code {code}): the process aborts");
    // SAFETY: no preconditions.
    unsafe { libc::abort() };
}

/// The `SIGSYS` handler: the trapped call is in the interrupted registers
/// (`RAX` the number, the System V syscall registers its arguments); its
/// answer goes back in `RAX`, and the caller's `errno` is left as it was
/// (a raw call never sets it).
extern "C" fn on_sigsys(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: `info` is the kernel's, valid for the handler.
    if unsafe { (*info).si_code } != SYS_USER_DISPATCH {
        // SAFETY: the handler's own arguments.
        return unsafe { not_ours(sig, info, ctx) };
    }
    TRAPPED.fetch_add(1, Ordering::Relaxed);
    TRAPPED_HERE.set(TRAPPED_HERE.get() + 1);
    // SAFETY: an SA_SIGINFO handler's third argument is the ucontext.
    let regs = unsafe { &mut (*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    let nr = regs[libc::REG_RAX as usize];
    let args = [libc::REG_RDI, libc::REG_RSI, libc::REG_RDX, libc::REG_R10, libc::REG_R8, libc::REG_R9]
        .map(|r| regs[r as usize]);
    // SAFETY: errno's slot is the thread's.
    let errno_before = unsafe { *libc::__errno_location() };
    let outcome = std::panic::catch_unwind(|| {
        // SAFETY: the arguments are the trapped call's, as its caller
        // gave them to the kernel.
        unsafe { super::raw_calls::trapped(nr, args) }
    });
    let answer = outcome.unwrap_or_else(|_| {
        eprintln!("stdfs: refused: a panic serving a trapped system call: the process aborts");
        std::process::abort()
    });
    regs[libc::REG_RAX as usize] = answer;
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno_before };
}
