//! `libstdfs_preload.so`: the stdfs layer (`stdfs-layer`) under a program
//! that is not ours, put there by `LD_PRELOAD` (`sim live`, LIVE.md).
//!
//! At load (`init`, from `.init_array`) the object reads `SIM_LIVE_ROOT`
//! (the directory the program was told, absolute) and `SIM_LIVE_SOCKET`
//! (where `sim live` listens), connects, and installs a layer session on
//! the main thread whose disk is `remote::RemoteVfs`: every call of the
//! disk crosses to `sim live`, which holds the seed's simulated disk for
//! every process of the run (a shell and each program it starts). Without
//! those variables it installs nothing and the program runs untouched.
//!
//! Defined here, beside the layer's calls:
//! - `fork`: served while the process holds no simulated descriptor (the
//!   child then opens a connection of its own at its first call), refused
//!   loudly otherwise: an open file description of the layer lives in this
//!   process's memory and cannot be shared with a child;
//! - `getpid`, `getppid` (and `kill` of either): the pids `sim live`
//!   answered the process's hello with, from the order the processes
//!   connect (an `exec`'d image keeps its pid), so a program that mixes its
//!   pid into what it writes (sqlite3's randomness) writes the same under
//!   one seed; `fork` still returns the child's real pid;
//! - `execve`, `execv`, `execvp`, `execvpe`: a simulated file at a low
//!   descriptor without close-on-exec (a shell's `cmd > FILE`) is passed
//!   to the new image, which opens it again (`stdfs_layer::live_exec`);
//!   glibc's other ways to exec (`posix_spawn`, `execl*`) call its internal
//!   `execve` and pass nothing: the new image finds the kernel's
//!   placeholder there, which fails every read and write with `EBADF`;
//! - the end of the process (`fini`, `.fini_array`): what the layer
//!   refused is reported to `sim live`, so the run fails for it.

#![deny(unsafe_op_in_unsafe_fn)]

mod remote;

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::Path;
use std::sync::Arc;

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn(c_int, *const *const c_char, *const *const c_char) = init;

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = fini;

extern "C" fn init(argc: c_int, argv: *const *const c_char, _envp: *const *const c_char) {
    let (Some(root), Some(socket)) = (std::env::var_os("SIM_LIVE_ROOT"), std::env::var_os("SIM_LIVE_SOCKET")) else {
        return;
    };
    let program = if argc > 0 && !argv.is_null() {
        // SAFETY: glibc passes `.init_array` functions the process's argv,
        // `argc` NUL-terminated strings.
        unsafe { CStr::from_ptr(*argv) }.to_bytes().to_vec()
    } else {
        Vec::new()
    };
    let root = root.to_str().expect("SIM_LIVE_ROOT is the UTF-8 path sim live set").to_string();
    remote::configure(Path::new(&socket), program);
    let entropy_seed = match remote::hello() {
        Ok(seed) => seed,
        Err(e) => {
            eprintln!("stdfs-preload: cannot reach sim live at {}: {e}", Path::new(&socket).display());
            // SAFETY: `_exit` ends the process at once; nothing to clean.
            unsafe { libc::_exit(125) };
        }
    };
    stdfs_layer::live::set_live_root(&root);
    let guard = stdfs_layer::install(Arc::new(remote::RemoteVfs), &[], entropy_seed, None);
    // The session lives as long as the process: its one run.
    std::mem::forget(guard);
    inherit_placed_files();
}

/// The simulated files the image before an `exec` had at low descriptors
/// (`stdfs_layer::live_exec`), placed again; one that cannot be is a
/// refusal, and the program stops before it runs.
fn inherit_placed_files() {
    let take = |var: &str| {
        let value = std::env::var_os(var)?;
        // Not the next image's: it inherits what this one has, afresh.
        std::env::remove_var(var);
        Some(value.to_string_lossy().into_owned())
    };
    let cwd = take(stdfs_layer::live_exec::CWD_VAR).map_or(Ok(()), |c| stdfs_layer::live_exec::restore_cwd(&c));
    let files = take(stdfs_layer::live_exec::INHERIT_VAR).map_or(Ok(()), |f| stdfs_layer::live_exec::restore(&f));
    if let Err(why) = cwd.and(files) {
        let what = format!("the simulated files an exec passed: {why}");
        eprintln!("stdfs-preload: refused: {what}");
        remote::report_refusal(&what);
        // SAFETY: `_exit` ends the process at once; nothing to clean.
        unsafe { libc::_exit(126) };
    }
}

extern "C" fn fini() {
    if !stdfs_layer::live::is_live() {
        return;
    }
    for what in stdfs_layer::live::take_refusals() {
        remote::report_refusal(&what);
    }
}

/// `fork(2)`, served while this process holds no simulated descriptor.
#[no_mangle]
pub extern "C" fn fork() -> libc::pid_t {
    if stdfs_layer::live::is_live() {
        let open = stdfs_layer::live::open_descriptors();
        if open > 0 {
            let what = format!(
                "fork with {open} simulated descriptor(s) open: their open file descriptions live in this process and cannot be shared with a child"
            );
            eprintln!("stdfs-preload: refused: {what}");
            remote::report_refusal(&what);
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = libc::ENOSYS };
            return -1;
        }
    }
    let pid = remote::real_fork();
    if pid == 0 {
        remote::forget_connection_after_fork();
    }
    pid
}

/// Set `errno` and answer -1, the way a failed libc call does.
fn fail(errno: c_int) -> c_int {
    // SAFETY: errno is this thread's.
    unsafe { *libc::__errno_location() = errno };
    -1
}

/// This process's simulated pid and its parent's, in a live process that
/// reaches `sim live`.
fn sim_pids() -> Option<(u32, u32)> {
    if !stdfs_layer::live::is_live() {
        return None;
    }
    remote::sim_pids()
}

/// `getpid(2)`: the simulated pid in a live process.
#[no_mangle]
pub extern "C" fn getpid() -> libc::pid_t {
    match sim_pids() {
        Some((pid, _)) => pid as libc::pid_t,
        None => remote::real_pid(c"getpid") as libc::pid_t,
    }
}

/// `getppid(2)`: the simulated parent's pid in a live process.
#[no_mangle]
pub extern "C" fn getppid() -> libc::pid_t {
    match sim_pids() {
        Some((_, ppid)) => ppid as libc::pid_t,
        None => remote::real_pid(c"getppid") as libc::pid_t,
    }
}

/// `kill(2)`: a simulated pid of this process or its parent is sent to
/// the real one; every other pid passes as it came.
#[no_mangle]
pub extern "C" fn kill(pid: libc::pid_t, signal: c_int) -> c_int {
    let real = match sim_pids() {
        Some((me, _)) if pid == me as libc::pid_t => remote::real_pid(c"getpid") as libc::pid_t,
        Some((_, parent)) if pid == parent as libc::pid_t => remote::real_pid(c"getppid") as libc::pid_t,
        _ => pid,
    };
    // SAFETY: glibc's `kill`, of type `int (pid_t, int)`.
    unsafe {
        let at = libc::dlsym(libc::RTLD_NEXT, c"kill".as_ptr());
        assert!(!at.is_null(), "glibc has kill");
        let f: extern "C" fn(libc::pid_t, c_int) -> c_int = std::mem::transmute(at);
        f(real, signal)
    }
}

/// The environment an `exec` passes the new image: `envp` as it came
/// when no simulated file sits at a low descriptor without close-on-exec;
/// else `envp` with `stdfs_layer::live_exec::INHERIT_VAR` naming them, so
/// the new image's layer places them again (`None`: one cannot pass, the
/// `exec` is refused, said on stderr and to `sim live`).
///
/// # Safety
/// `envp` is a null-terminated array of C strings; `program` null or one.
unsafe fn exec_env(program: *const c_char, envp: *const *const c_char) -> Option<Option<Vec<CString>>> {
    if !stdfs_layer::live::is_live() {
        return Some(None);
    }
    let mut extra = Vec::new();
    let kept = stdfs_layer::live::low_descriptors_kept_on_exec();
    if !kept.is_empty() {
        match stdfs_layer::live_exec::encode(&kept) {
            Ok(encoded) => extra.push(format!("{}={encoded}", stdfs_layer::live_exec::INHERIT_VAR)),
            Err(why) => {
                // SAFETY: the caller's C string, if any.
                let name = if program.is_null() {
                    String::new()
                } else {
                    unsafe { CStr::from_ptr(program) }.to_string_lossy().into_owned()
                };
                let what = format!("exec of {name} with simulated file(s) at fd {kept:?}: {why}");
                eprintln!("stdfs-preload: refused: {what}");
                remote::report_refusal(&what);
                return None;
            }
        }
    }
    if let Some(cwd) = stdfs_layer::live_exec::cwd_to_pass() {
        extra.push(format!("{}={cwd}", stdfs_layer::live_exec::CWD_VAR));
    }
    if extra.is_empty() {
        return Some(None);
    }
    let ours = [stdfs_layer::live_exec::INHERIT_VAR, stdfs_layer::live_exec::CWD_VAR].map(|v| format!("{v}="));
    let mut env = Vec::new();
    let mut at = envp;
    // SAFETY: a null-terminated array of C strings (the caller's).
    while !at.is_null() && unsafe { !(*at).is_null() } {
        // SAFETY: as above.
        let entry = unsafe { CStr::from_ptr(*at) };
        if !ours.iter().any(|var| entry.to_bytes().starts_with(var.as_bytes())) {
            env.push(entry.to_owned());
        }
        // SAFETY: within the array, before its null.
        at = unsafe { at.add(1) };
    }
    env.extend(extra.into_iter().map(|e| CString::new(e).expect("no NUL in the encoding")));
    Some(Some(env))
}

/// A null-terminated array of pointers to `env`'s strings.
fn pointers(env: &[CString]) -> Vec<*const c_char> {
    env.iter().map(|e| e.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
}

/// glibc's function `name`.
fn real_exec(name: &CStr) -> usize {
    // SAFETY: a symbol glibc defines.
    let at = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    assert!(!at.is_null(), "glibc has {name:?}");
    at as usize
}

type ExecEnv = unsafe extern "C" fn(*const c_char, *const *const c_char, *const *const c_char) -> c_int;

extern "C" {
    static environ: *const *const c_char;
}

/// `name` (`execve` or `execvpe`) with `envp`, the placed files added.
///
/// # Safety
/// glibc's contract for `name`.
unsafe fn exec_with(
    name: &CStr,
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(env) = (unsafe { exec_env(program, envp) }) else {
        return fail(libc::ENOSYS);
    };
    let f = real_exec(name);
    // SAFETY: glibc's `execve`/`execvpe`, which share this type.
    let f = unsafe { std::mem::transmute::<usize, ExecEnv>(f) };
    match env {
        // SAFETY: the caller's arguments.
        None => unsafe { f(program, argv, envp) },
        Some(env) => {
            let list = pointers(&env);
            // SAFETY: the caller's arguments, and `list`, alive for the call.
            unsafe { f(program, argv, list.as_ptr()) }
        }
    }
}

/// `execve(2)`, passing the simulated files at low descriptors.
///
/// # Safety
/// glibc's contract for `execve`.
#[no_mangle]
pub unsafe extern "C" fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { exec_with(c"execve", path, argv, envp) }
}

/// `execvpe(3)`, as [`execve`].
///
/// # Safety
/// glibc's contract for `execvpe`.
#[no_mangle]
pub unsafe extern "C" fn execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { exec_with(c"execvpe", file, argv, envp) }
}

/// `execv(3)`: `execve` with this process's environment.
///
/// # Safety
/// glibc's contract for `execv`.
#[no_mangle]
pub unsafe extern "C" fn execv(path: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: the caller's contract; `environ` is glibc's.
    unsafe { exec_with(c"execve", path, argv, environ) }
}

/// `execvp(3)`: `execvpe` with this process's environment.
///
/// # Safety
/// glibc's contract for `execvp`.
#[no_mangle]
pub unsafe extern "C" fn execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
    // SAFETY: the caller's contract; `environ` is glibc's.
    unsafe { exec_with(c"execvpe", file, argv, environ) }
}
