//! libc's directory streams: `opendir`/`fdopendir` of the layer's
//! directories hand out a `DIR *` of the layer's own ([`SimDir`]), which
//! `readdir`, `dirfd` and `closedir` recognise by its address (kept in
//! [`STREAMS`]); any other `DIR *` is glibc's and goes back to it.

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int};
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use super::{c_bytes, real, served, CallerErrno};
use crate::dirstream::Entry;
use crate::errno::Errno;
use crate::route::route;
use crate::session::is_fake_fd;
use crate::{serve_fd, serve_path};

/// A `DIR *` of the layer's: the stream's descriptor and the entry the
/// last `readdir` returned (valid until the next call on the stream).
struct SimDir {
    fd: c_int,
    entry: libc::dirent64,
}

/// The addresses of every live [`SimDir`].
static STREAMS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// The layer's stream at `dir`, if `dir` is one.
fn ours(dir: *mut libc::DIR) -> Option<*mut SimDir> {
    let streams = STREAMS.lock().unwrap_or_else(|p| p.into_inner());
    streams.contains(&(dir as usize)).then_some(dir.cast())
}

/// A new `DIR *` for the stream on `fd` (already started).
fn hand_out(fd: c_int) -> *mut libc::DIR {
    // SAFETY: `dirent64` is plain data; all-zero is a valid value of it.
    let entry: libc::dirent64 = unsafe { std::mem::zeroed() };
    let dir = Box::into_raw(Box::new(SimDir { fd, entry }));
    STREAMS.lock().unwrap_or_else(|p| p.into_inner()).insert(dir as usize);
    dir.cast()
}

#[no_mangle]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut libc::DIR {
    let _caller_errno = CallerErrno::enter();
    // SAFETY: the caller's C string.
    let Some(at) = (unsafe { c_bytes(path) }).and_then(|bytes| route(libc::AT_FDCWD, bytes)) else {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::opendir(path) };
    };
    served(std::ptr::null_mut(), || {
        let fd = serve_path::open(&at, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)?;
        serve_fd::fdopendir(fd)?;
        Ok(hand_out(fd))
    })
}

#[no_mangle]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut libc::DIR {
    let _caller_errno = CallerErrno::enter();
    if !is_fake_fd(fd) {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::fdopendir(fd) };
    }
    served(std::ptr::null_mut(), || serve_fd::fdopendir(fd).map(|()| hand_out(fd)))
}

/// Write `entry` into the stream's `dirent64`.
fn fill(dirent: &mut libc::dirent64, entry: &Entry) -> Result<(), Errno> {
    let name = entry.name.as_bytes();
    if name.len() >= dirent.d_name.len() {
        return Err(Errno::ENAMETOOLONG);
    }
    dirent.d_ino = entry.ino;
    dirent.d_off = 0;
    dirent.d_reclen = std::mem::size_of::<libc::dirent64>() as u16;
    dirent.d_type = if entry.is_dir { libc::DT_DIR } else { libc::DT_REG };
    for (slot, byte) in dirent.d_name.iter_mut().zip(name.iter().chain(std::iter::once(&0))) {
        *slot = *byte as c_char;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    let _caller_errno = CallerErrno::enter();
    let Some(sim) = ours(dir) else {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::readdir64(dir) };
    };
    // SAFETY: `sim` is a live `SimDir` (registered in STREAMS until
    // closedir), used by this one call.
    let sim = unsafe { &mut *sim };
    served(std::ptr::null_mut(), || match serve_fd::readdir(sim.fd)? {
        None => Ok(std::ptr::null_mut()),
        Some(entry) => {
            fill(&mut sim.entry, &entry)?;
            Ok(&mut sim.entry as *mut libc::dirent64)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // SAFETY: the same function on x86-64.
    unsafe { readdir64(dir) }
}

#[no_mangle]
pub unsafe extern "C" fn dirfd(dir: *mut libc::DIR) -> c_int {
    let _caller_errno = CallerErrno::enter();
    match ours(dir) {
        // SAFETY: a live `SimDir`, read once.
        Some(sim) => unsafe { (*sim).fd },
        // SAFETY: the caller's argument, passed on.
        None => unsafe { real::dirfd(dir) },
    }
}

#[no_mangle]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    let _caller_errno = CallerErrno::enter();
    let Some(sim) = ours(dir) else {
        // SAFETY: the caller's argument, passed on.
        return unsafe { real::closedir(dir) };
    };
    STREAMS.lock().unwrap_or_else(|p| p.into_inner()).remove(&(sim as usize));
    // SAFETY: `sim` came from `Box::into_raw` in `hand_out` and was just
    // unregistered, so this is its only release.
    let sim = unsafe { Box::from_raw(sim) };
    served(-1, || serve_fd::closedir(sim.fd).map(|()| 0))
}
