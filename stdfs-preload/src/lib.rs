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
//! - the end of the process (`fini`, `.fini_array`): what the layer
//!   refused is reported to `sim live`, so the run fails for it.

#![deny(unsafe_op_in_unsafe_fn)]

mod remote;

use std::ffi::{c_char, c_int, CStr};
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
