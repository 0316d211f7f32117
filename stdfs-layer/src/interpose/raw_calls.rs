//! A system call made without libc's named function, served as that
//! function would be: a call trapped by [`super::raw_trap`] (an
//! instruction in the executable's own code, rustix's `linux_raw`
//! backend) and a call through libc's generic `syscall()`, both decoded
//! by number into the same exported function libc's caller would have
//! reached (`openat`, `renameat2`, `fstat`, …), so a raw call is served,
//! refused and recorded exactly as its libc form.
//!
//! A file call that names nothing of the layer's (no simulated
//! descriptor, no path under the root), on a thread serving no run, is
//! made for real through glibc's `syscall()`, as it came: outside a run
//! nothing changes. On a run's thread it goes to the same function as
//! its libc form, which passes reads of real files on and refuses changes
//! to them. A file call the layer has no function for, naming one of its
//! descriptors or paths, is refused loudly ([`refuse_unserved`]); one that
//! cannot be made by proxy (a raw `clone`) is refused too.

// libc's names of the system calls are `SYS_read`, … (not upper case).
#![allow(non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_long, c_uint, c_void};

use super::{copy_calls, entropy_calls, fd_calls, map_calls, meta_calls, name_calls, path_calls};
use super::{real, served, thread_calls, CallerErrno};
use crate::errno::Errno;
use crate::serve_dents;
use crate::session::{self, is_fake_fd, refuse, FAKE_FD_BASE};

/// A call's six argument registers, in the System V syscall order.
pub type Args = [c_long; 6];

/// `AT_FDCWD` as an argument index: a path of a call with no directory
/// descriptor.
const CWD: usize = usize::MAX;

/// What a file call names: descriptors (argument indexes) and paths
/// (the index of their directory descriptor, or [`CWD`], and of the
/// path); `served`: whether the layer has a function for it.
struct Shape {
    fds: &'static [usize],
    paths: &'static [(usize, usize)],
    served: bool,
}

const fn shape(fds: &'static [usize], paths: &'static [(usize, usize)], served: bool) -> Shape {
    Shape { fds, paths, served }
}

/// The shape of file call `nr`; `None` for any other call.
fn shape_of(nr: c_long) -> Option<Shape> {
    use libc::*;
    const FD0: &[usize] = &[0];
    const AT: &[(usize, usize)] = &[(0, 1)];
    const PATH0: &[(usize, usize)] = &[(CWD, 0)];
    Some(match nr {
        SYS_read | SYS_write | SYS_pread64 | SYS_pwrite64 | SYS_readv | SYS_writev | SYS_preadv | SYS_pwritev
        | SYS_preadv2 | SYS_pwritev2 | SYS_close | SYS_fstat | SYS_lseek | SYS_dup | SYS_fcntl | SYS_flock
        | SYS_fsync | SYS_fdatasync | SYS_ftruncate | SYS_fchmod | SYS_fchdir | SYS_fallocate | SYS_getdents64
        | SYS_fadvise64 => shape(FD0, &[], true),
        SYS_dup2 | SYS_dup3 | SYS_sendfile => shape(&[0, 1], &[], true),
        SYS_copy_file_range => shape(&[0, 2], &[], true),
        SYS_mmap => shape(&[4], &[], true),
        SYS_open | SYS_creat | SYS_stat | SYS_lstat | SYS_access | SYS_truncate | SYS_chdir | SYS_mkdir | SYS_rmdir
        | SYS_unlink | SYS_readlink | SYS_chmod | SYS_utimes => shape(&[], PATH0, true),
        SYS_rename | SYS_link => shape(&[], &[(CWD, 0), (CWD, 1)], true),
        SYS_symlink => shape(&[], &[(CWD, 1)], true),
        SYS_openat | SYS_newfstatat | SYS_unlinkat | SYS_mkdirat | SYS_readlinkat | SYS_fchmodat | SYS_faccessat
        | SYS_faccessat2 | SYS_fchmodat2 | SYS_utimensat | SYS_statx | SYS_openat2 => shape(FD0, AT, true),
        SYS_renameat | SYS_renameat2 | SYS_linkat => shape(&[0, 2], &[(0, 1), (2, 3)], true),
        SYS_symlinkat => shape(&[1], &[(1, 2)], true),
        SYS_getcwd | SYS_munmap | SYS_mprotect | SYS_madvise | SYS_mremap | SYS_msync => shape(&[], &[], true),
        SYS_ioctl
        | SYS_getdents
        | SYS_fchown
        | SYS_fstatfs
        | SYS_readahead
        | SYS_fsetxattr
        | SYS_fgetxattr
        | SYS_flistxattr
        | SYS_fremovexattr
        | SYS_sync_file_range
        | SYS_syncfs
        | SYS_vmsplice
        | SYS_open_by_handle_at => shape(FD0, &[], false),
        SYS_splice => shape(&[0, 2], &[], false),
        SYS_tee => shape(&[0, 1], &[], false),
        SYS_chown | SYS_lchown | SYS_utime | SYS_mknod | SYS_statfs | SYS_setxattr | SYS_lsetxattr | SYS_getxattr
        | SYS_lgetxattr | SYS_listxattr | SYS_llistxattr | SYS_removexattr | SYS_lremovexattr => {
            shape(&[], PATH0, false)
        }
        SYS_inotify_add_watch => shape(&[], &[(CWD, 1)], false),
        SYS_mknodat | SYS_fchownat | SYS_futimesat | SYS_name_to_handle_at | SYS_open_tree => shape(FD0, AT, false),
        // setxattrat, getxattrat, listxattrat, removexattrat (Linux 6.13).
        463..=466 => shape(FD0, AT, false),
        SYS_close_range | SYS_io_uring_setup => shape(&[], &[], false),
        _ => return None,
    })
}

/// Whether the call names one of the layer's descriptors or paths (or,
/// for the calls no argument says it of, concerns a run at all).
///
/// # Safety
/// The path arguments of `shape` are null or C strings.
unsafe fn names_the_layer(nr: c_long, shape: &Shape, a: &Args) -> bool {
    let fake = |i: usize| is_fake_fd(a[i] as c_int);
    // `close_range(first, last)` over the run's descriptors.
    let fake_range = || session::has_session() && a[1] as u32 >= FAKE_FD_BASE as u32;
    let path = |&(dirfd, path): &(usize, usize)| {
        let dirfd = if dirfd == CWD { libc::AT_FDCWD } else { a[dirfd] as c_int };
        // SAFETY: the caller's contract.
        unsafe { path_calls::routed(dirfd, a[path] as *const c_char) }.is_some()
    };
    match nr {
        libc::SYS_close_range => fake_range(),
        libc::SYS_io_uring_setup => session::has_session(),
        _ => shape.fds.iter().copied().any(fake) || shape.paths.iter().any(path),
    }
}

/// File call `nr` served libc's way (its value, or `-1` with `errno`
/// set), or `None` when `nr` is not a file call. Reached from libc's
/// `syscall()` (the layer's) and from a trapped call.
///
/// # Safety
/// `a` are the arguments of system call `nr` as its caller gave them.
pub unsafe fn file_call(nr: c_long, a: Args) -> Option<c_long> {
    let shape = shape_of(nr)?;
    // SAFETY: the caller's arguments, of this call's shape.
    let ours = unsafe { names_the_layer(nr, &shape, &a) };
    let the_layers = ours || (shape.served && session::has_session());
    if !the_layers {
        // SAFETY: the caller's call, made as it came.
        return Some(unsafe { real::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) });
    }
    if !shape.served {
        return Some(refuse_unserved(nr));
    }
    // SAFETY (each): as above.
    let served = unsafe { fd_call(nr, &a) }.or_else(|| unsafe { path_call(nr, &a) });
    Some(served.unwrap_or_else(|| unsafe { name_call(nr, &a) }))
}

/// A file call the layer has no function for, on one of its descriptors
/// or paths (or a call no proxy can make): refused loudly, `-1`.
fn refuse_unserved(nr: c_long) -> c_long {
    let what = format!(
        "a system call made without libc's function (number {nr}) on a simulated descriptor or path, or one that cannot be made for its caller: not served"
    );
    let Errno(code) = refuse(None, Errno::ENOTSUP, what);
    // SAFETY: errno's slot is the thread's.
    unsafe { *libc::__errno_location() = code };
    -1
}

/// Calls on a descriptor.
///
/// # Safety
/// As [`file_call`].
unsafe fn fd_call(nr: c_long, a: &Args) -> Option<c_long> {
    use libc::*;
    let fd = a[0] as c_int;
    let (p1, n2) = (a[1] as *mut c_void, a[2] as usize);
    let iov = a[1] as *const iovec;
    // SAFETY (every call below): the caller's arguments, in the order and
    // types of the kernel's call, which the libc function takes the same.
    Some(unsafe {
        match nr {
            SYS_read => fd_calls::read(fd, p1, n2) as c_long,
            SYS_write => fd_calls::write(fd, p1, n2) as c_long,
            SYS_pread64 => fd_calls::pread64(fd, p1, n2, a[3]) as c_long,
            SYS_pwrite64 => fd_calls::pwrite64(fd, p1, n2, a[3]) as c_long,
            SYS_readv => fd_calls::readv(fd, iov, a[2] as c_int) as c_long,
            SYS_writev => fd_calls::writev(fd, iov, a[2] as c_int) as c_long,
            // The offset's high half (`a[4]`) is 0 on a 64-bit kernel.
            SYS_preadv => fd_calls::preadv64(fd, iov, a[2] as c_int, a[3]) as c_long,
            SYS_pwritev => fd_calls::pwritev64(fd, iov, a[2] as c_int, a[3]) as c_long,
            SYS_preadv2 | SYS_pwritev2 => vectored2(nr, fd, iov, a),
            SYS_close => fd_calls::close(fd) as c_long,
            SYS_fstat => path_calls::fstat64(fd, a[1] as *mut stat64) as c_long,
            SYS_lseek => fd_calls::lseek64(fd, a[1], a[2] as c_int) as c_long,
            SYS_dup => fd_calls::dup(fd) as c_long,
            SYS_dup2 => fd_calls::dup2(fd, a[1] as c_int) as c_long,
            SYS_dup3 => fd_calls::dup3(fd, a[1] as c_int, a[2] as c_int) as c_long,
            SYS_fcntl => fd_calls::fcntl64(fd, a[1] as c_int, a[2]) as c_long,
            SYS_flock => fd_calls::flock(fd, a[1] as c_int) as c_long,
            SYS_fsync => fd_calls::fsync(fd) as c_long,
            SYS_fdatasync => fd_calls::fdatasync(fd) as c_long,
            SYS_ftruncate => fd_calls::ftruncate64(fd, a[1]) as c_long,
            SYS_fchmod => meta_calls::fchmod(fd, a[1] as mode_t) as c_long,
            SYS_fchdir => name_calls::fchdir(fd) as c_long,
            SYS_fallocate => copy_calls::fallocate64(fd, a[1] as c_int, a[2], a[3]) as c_long,
            SYS_getdents64 => getdents64(fd, p1, n2),
            SYS_fadvise64 => fadvise64(fd, a),
            SYS_sendfile => copy_calls::sendfile64(fd, a[1] as c_int, a[2] as *mut i64, a[3] as usize) as c_long,
            SYS_copy_file_range => {
                let (off_in, off_out) = (a[1] as *mut i64, a[3] as *mut i64);
                copy_calls::copy_file_range(fd, off_in, a[2] as c_int, off_out, a[4] as usize, a[5] as c_uint) as c_long
            }
            SYS_mmap => {
                map_calls::mmap64(a[0] as *mut c_void, a[1] as usize, a[2] as c_int, a[3] as c_int, a[4] as c_int, a[5])
                    as c_long
            }
            SYS_munmap => map_calls::munmap(a[0] as *mut c_void, a[1] as usize) as c_long,
            SYS_mprotect => map_calls::mprotect(a[0] as *mut c_void, a[1] as usize, a[2] as c_int) as c_long,
            SYS_madvise => map_calls::madvise(a[0] as *mut c_void, a[1] as usize, a[2] as c_int) as c_long,
            SYS_msync => map_calls::msync(a[0] as *mut c_void, a[1] as usize, a[2] as c_int) as c_long,
            SYS_mremap => {
                map_calls::mremap(a[0] as *mut c_void, a[1] as usize, a[2] as usize, a[3] as c_int, a[4] as *mut c_void)
                    as c_long
            }
            _ => return None,
        }
    })
}

/// `preadv2`/`pwritev2`: without flags, `preadv`/`pwritev` (or, at offset
/// -1, `readv`/`writev`); flags on a simulated descriptor are refused.
///
/// # Safety
/// As [`file_call`].
unsafe fn vectored2(nr: c_long, fd: c_int, iov: *const libc::iovec, a: &Args) -> c_long {
    let (count, at, flags) = (a[2] as c_int, a[3], a[5]);
    if flags != 0 {
        return refuse_unserved(nr);
    }
    let read = nr == libc::SYS_preadv2;
    // SAFETY: the caller's arguments.
    unsafe {
        match (read, at) {
            (true, -1) => fd_calls::readv(fd, iov, count) as c_long,
            (true, _) => fd_calls::preadv64(fd, iov, count, at) as c_long,
            (false, -1) => fd_calls::writev(fd, iov, count) as c_long,
            (false, _) => fd_calls::pwritev64(fd, iov, count, at) as c_long,
        }
    }
}

/// Calls on a path, from the working directory or a directory descriptor.
///
/// # Safety
/// As [`file_call`].
unsafe fn path_call(nr: c_long, a: &Args) -> Option<c_long> {
    use libc::*;
    let cwd = AT_FDCWD;
    let s = |i: usize| a[i] as *const c_char;
    let st = |i: usize| a[i] as *mut stat64;
    let (dirfd, flags) = (a[0] as c_int, a[2] as c_int);
    // SAFETY (every call below): the caller's arguments, in the order and
    // types of the kernel's call.
    Some(unsafe {
        match nr {
            SYS_open => path_calls::openat64(cwd, s(0), a[1] as c_int, a[2] as c_uint) as c_long,
            SYS_creat => path_calls::openat64(cwd, s(0), O_CREAT | O_WRONLY | O_TRUNC, a[1] as c_uint) as c_long,
            SYS_openat => path_calls::openat64(dirfd, s(1), flags, a[3] as c_uint) as c_long,
            SYS_openat2 => openat2(a),
            SYS_stat => path_calls::fstatat64(cwd, s(0), st(1), 0) as c_long,
            SYS_lstat => path_calls::fstatat64(cwd, s(0), st(1), AT_SYMLINK_NOFOLLOW) as c_long,
            SYS_newfstatat => path_calls::fstatat64(dirfd, s(1), st(2), a[3] as c_int) as c_long,
            SYS_statx => path_calls::statx(dirfd, s(1), flags, a[3] as c_uint, a[4] as *mut statx) as c_long,
            SYS_rename => path_calls::renameat2(cwd, s(0), cwd, s(1), 0) as c_long,
            SYS_renameat => path_calls::renameat2(dirfd, s(1), a[2] as c_int, s(3), 0) as c_long,
            SYS_renameat2 => path_calls::renameat2(dirfd, s(1), a[2] as c_int, s(3), a[4] as c_uint) as c_long,
            SYS_unlink => path_calls::unlinkat(cwd, s(0), 0) as c_long,
            SYS_rmdir => path_calls::unlinkat(cwd, s(0), AT_REMOVEDIR) as c_long,
            SYS_unlinkat => path_calls::unlinkat(dirfd, s(1), flags) as c_long,
            SYS_mkdir => path_calls::mkdirat(cwd, s(0), a[1] as mode_t) as c_long,
            SYS_mkdirat => path_calls::mkdirat(dirfd, s(1), a[2] as mode_t) as c_long,
            SYS_truncate => copy_calls::truncate64(s(0), a[1]) as c_long,
            _ => return None,
        }
    })
}

/// `openat2`: its `open_how` without `resolve` flags is `openat`; with
/// them, on the layer's path, refused.
///
/// # Safety
/// As [`file_call`]: `a[2]` points at an `open_how` of `a[3]` bytes.
unsafe fn openat2(a: &Args) -> c_long {
    let size = a[3] as usize;
    if size < 24 {
        return refuse_unserved(libc::SYS_openat2);
    }
    // SAFETY: the caller's `open_how`: flags, mode, resolve, each a u64.
    let [flags, mode, resolve] = unsafe { std::ptr::read_unaligned(a[2] as *const [u64; 3]) };
    if resolve != 0 {
        return refuse_unserved(libc::SYS_openat2);
    }
    // SAFETY: the caller's directory descriptor and path.
    unsafe { path_calls::openat64(a[0] as c_int, a[1] as *const c_char, flags as c_int, mode as c_uint) as c_long }
}

/// Calls on names, modes, times and the working directory.
///
/// # Safety
/// As [`file_call`].
unsafe fn name_call(nr: c_long, a: &Args) -> c_long {
    use libc::*;
    let cwd = AT_FDCWD;
    let s = |i: usize| a[i] as *const c_char;
    let b = |i: usize| a[i] as *mut c_char;
    let dirfd = a[0] as c_int;
    // SAFETY (every call below): the caller's arguments, in the order and
    // types of the kernel's call.
    unsafe {
        match nr {
            SYS_access => name_calls::faccessat(cwd, s(0), a[1] as c_int, 0) as c_long,
            SYS_faccessat => name_calls::faccessat(dirfd, s(1), a[2] as c_int, 0) as c_long,
            SYS_faccessat2 => name_calls::faccessat(dirfd, s(1), a[2] as c_int, a[3] as c_int) as c_long,
            SYS_chdir => name_calls::chdir(s(0)) as c_long,
            SYS_getcwd => getcwd_length(b(0), a[1] as usize),
            SYS_readlink => name_calls::readlinkat(cwd, s(0), b(1), a[2] as usize) as c_long,
            SYS_readlinkat => name_calls::readlinkat(dirfd, s(1), b(2), a[3] as usize) as c_long,
            SYS_link => name_calls::linkat(cwd, s(0), cwd, s(1), 0) as c_long,
            SYS_linkat => name_calls::linkat(dirfd, s(1), a[2] as c_int, s(3), a[4] as c_int) as c_long,
            SYS_symlink => name_calls::symlinkat(s(0), cwd, s(1)) as c_long,
            SYS_symlinkat => name_calls::symlinkat(s(0), a[1] as c_int, s(2)) as c_long,
            SYS_chmod => meta_calls::fchmodat(cwd, s(0), a[1] as mode_t, 0) as c_long,
            SYS_fchmodat => meta_calls::fchmodat(dirfd, s(1), a[2] as mode_t, 0) as c_long,
            SYS_fchmodat2 => meta_calls::fchmodat(dirfd, s(1), a[2] as mode_t, a[3] as c_int) as c_long,
            SYS_utimes => meta_calls::utimes(s(0), a[1] as *const timeval) as c_long,
            // A null path: the descriptor itself (`futimens`).
            SYS_utimensat if a[1] == 0 => meta_calls::futimens(dirfd, a[2] as *const timespec) as c_long,
            SYS_utimensat => meta_calls::utimensat(dirfd, s(1), a[2] as *const timespec, a[3] as c_int) as c_long,
            _ => unreachable!("system call {nr} has a shape marked served and no function"),
        }
    }
}

/// `getcwd`, the kernel's way: the length written (its NUL counted).
///
/// # Safety
/// `buf` is valid for `size` bytes.
unsafe fn getcwd_length(buf: *mut c_char, size: usize) -> c_long {
    // SAFETY: the caller's contract.
    let got = unsafe { name_calls::getcwd(buf, size) };
    if got.is_null() {
        return -1;
    }
    // SAFETY: `getcwd` wrote a C string into `buf`.
    unsafe { std::ffi::CStr::from_ptr(buf) }.to_bytes_with_nul().len() as c_long
}

/// A call trapped from the executable's own code ([`super::raw_trap`]):
/// served, and answered the kernel's way (a value, or minus an errno).
///
/// # Safety
/// `a` are the arguments of system call `nr` as its caller gave them to
/// the kernel.
pub unsafe fn trapped(nr: c_long, a: Args) -> c_long {
    if matches!(nr, libc::SYS_clone | libc::SYS_clone3 | libc::SYS_vfork | libc::SYS_rt_sigreturn) {
        // A new thread would start, or a signal frame be restored, inside
        // this handler's proxy call: no proxy can make these.
        refuse_unserved(nr);
        return -c_long::from(libc::ENOTSUP);
    }
    // SAFETY: the caller's contract.
    let (value, errno_is_value) = match unsafe { file_call(nr, a) } {
        Some(value) => (value, false),
        // SAFETY: as above.
        None => unsafe { other_call(nr, a) },
    };
    if errno_is_value {
        return -value;
    }
    if value == -1 {
        // SAFETY: errno's slot is the thread's.
        return -c_long::from(unsafe { *libc::__errno_location() });
    }
    value
}

/// A trapped call that is not a file call: the time, sleeps and yields
/// the scheduler serves, and the rest through the layer's `syscall()`
/// (a futex wait, `getrandom`, or the call made as it came). The second
/// value says the answer is an errno itself (`clock_nanosleep`'s way).
///
/// # Safety
/// As [`trapped`].
unsafe fn other_call(nr: c_long, a: Args) -> (c_long, bool) {
    let ts = |i: usize| a[i] as *mut libc::timespec;
    // SAFETY (every call below): the caller's arguments.
    unsafe {
        match nr {
            libc::SYS_clock_gettime => (entropy_calls::clock_gettime(a[0] as libc::clockid_t, ts(1)) as c_long, false),
            libc::SYS_nanosleep => (thread_calls::nanosleep(ts(0), ts(1)) as c_long, false),
            libc::SYS_clock_nanosleep => {
                (thread_calls::clock_nanosleep(a[0] as libc::clockid_t, a[1] as c_int, ts(2), ts(3)) as c_long, true)
            }
            libc::SYS_sched_yield => (thread_calls::sched_yield() as c_long, false),
            _ => (entropy_calls::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]), false),
        }
    }
}

/// `getdents64` (`serve_dents`): on a real descriptor, the kernel's.
///
/// # Safety
/// `buf` is valid for `len` bytes.
unsafe fn getdents64(fd: c_int, buf: *mut c_void, len: usize) -> c_long {
    if !is_fake_fd(fd) {
        // SAFETY: the caller's call, made as it came.
        return unsafe { real::syscall(libc::SYS_getdents64, fd.into(), buf as c_long, len as c_long, 0, 0, 0) };
    }
    let _caller_errno = CallerErrno::enter();
    let buf = if len == 0 {
        &mut [][..]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
    };
    served(-1, || serve_dents::getdents64(fd, buf).map(|n| n as c_long))
}

/// `fadvise64(fd, offset, len, advice)` (`serve_dents::fadvise`): on a
/// real descriptor, the kernel's.
///
/// # Safety
/// The caller's arguments.
unsafe fn fadvise64(fd: c_int, a: &Args) -> c_long {
    if !is_fake_fd(fd) {
        // SAFETY: the caller's call, made as it came.
        return unsafe { real::syscall(libc::SYS_fadvise64, a[0], a[1], a[2], a[3], 0, 0) };
    }
    let _caller_errno = CallerErrno::enter();
    served(-1, || serve_dents::fadvise(fd, a[3] as c_int).map(|()| 0))
}
