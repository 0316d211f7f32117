//! glibc's own functions, for every call the layer does not serve: each
//! looked up once with `dlsym(RTLD_NEXT, name)` (the next definition after
//! this binary's, which is glibc's) and cached.

use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The address of glibc's `name` (NUL-terminated), looked up once into
/// `cache`. A missing symbol aborts: nothing could be served without it,
/// and stderr may be the very function missing.
fn address(cache: &AtomicUsize, name: &'static [u8]) -> usize {
    let cached = cache.load(Ordering::Acquire);
    if cached != 0 {
        return cached;
    }
    assert_eq!(name.last(), Some(&0));
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is a valid handle.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) } as usize;
    if found == 0 {
        // SAFETY: abort never returns and has no preconditions.
        unsafe { libc::abort() };
    }
    cache.store(found, Ordering::Release);
    found
}

macro_rules! real {
    ($( fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; )*) => { $(
        /// glibc's function of this name.
        ///
        /// # Safety
        /// The caller's arguments must satisfy glibc's contract for it.
        pub unsafe fn $name($($arg: $ty),*) -> $ret {
            static CACHE: AtomicUsize = AtomicUsize::new(0);
            let at = address(&CACHE, concat!(stringify!($name), "\0").as_bytes());
            // SAFETY: `at` is glibc's definition of this very function,
            // whose C signature this one repeats.
            let f: unsafe extern "C" fn($($ty),*) -> $ret = unsafe { std::mem::transmute(at) };
            super::caller_errno::before_real();
            // SAFETY: the caller's contract is glibc's.
            unsafe { f($($arg),*) }
        }
    )* };
}

real! {
    fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    fn pread64(fd: c_int, buf: *mut c_void, count: usize, offset: i64) -> isize;
    fn pwrite64(fd: c_int, buf: *const c_void, count: usize, offset: i64) -> isize;
    fn readv(fd: c_int, iov: *const libc::iovec, iovcnt: c_int) -> isize;
    fn writev(fd: c_int, iov: *const libc::iovec, iovcnt: c_int) -> isize;
    fn preadv64(fd: c_int, iov: *const libc::iovec, iovcnt: c_int, offset: i64) -> isize;
    fn pwritev64(fd: c_int, iov: *const libc::iovec, iovcnt: c_int, offset: i64) -> isize;
    fn lseek64(fd: c_int, offset: i64, whence: c_int) -> i64;
    fn fsync(fd: c_int) -> c_int;
    fn fdatasync(fd: c_int) -> c_int;
    fn ftruncate64(fd: c_int, len: i64) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
    fn fcntl64(fd: c_int, cmd: c_int, arg: c_long) -> c_int;
    fn flock(fd: c_int, operation: c_int) -> c_int;
    fn mmap64(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, offset: i64) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn msync(addr: *mut c_void, len: usize, flags: c_int) -> c_int;
    fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    fn mremap(old: *mut c_void, old_len: usize, new_len: usize, flags: c_int, new_addr: *mut c_void) -> *mut c_void;
    fn fstatat64(dirfd: c_int, path: *const c_char, buf: *mut libc::stat64, flags: c_int) -> c_int;
    fn fstat64(fd: c_int, buf: *mut libc::stat64) -> c_int;
    fn statx(dirfd: c_int, path: *const c_char, flags: c_int, mask: c_uint, buf: *mut libc::statx) -> c_int;
    fn renameat2(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char, flags: c_uint) -> c_int;
    fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int;
    fn mkdirat(dirfd: c_int, path: *const c_char, mode: libc::mode_t) -> c_int;
    fn fchmodat(dirfd: c_int, path: *const c_char, mode: libc::mode_t, flags: c_int) -> c_int;
    fn fchmod(fd: c_int, mode: libc::mode_t) -> c_int;
    fn utimensat(dirfd: c_int, path: *const c_char, times: *const libc::timespec, flags: c_int) -> c_int;
    fn futimens(fd: c_int, times: *const libc::timespec) -> c_int;
    fn utimes(path: *const c_char, times: *const libc::timeval) -> c_int;
    fn futimes(fd: c_int, times: *const libc::timeval) -> c_int;
    fn copy_file_range(fd_in: c_int, off_in: *mut i64, fd_out: c_int, off_out: *mut i64, len: usize, flags: c_uint) -> isize;
    fn sendfile64(fd_out: c_int, fd_in: c_int, offset: *mut i64, count: usize) -> isize;
    fn fallocate64(fd: c_int, mode: c_int, offset: i64, len: i64) -> c_int;
    fn posix_fallocate64(fd: c_int, offset: i64, len: i64) -> c_int;
    fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char;
    fn getcwd(buf: *mut c_char, size: usize) -> *mut c_char;
    fn chdir(path: *const c_char) -> c_int;
    fn fchdir(fd: c_int) -> c_int;
    fn readlinkat(dirfd: c_int, path: *const c_char, buf: *mut c_char, size: usize) -> isize;
    fn linkat(olddirfd: c_int, old: *const c_char, newdirfd: c_int, new: *const c_char, flags: c_int) -> c_int;
    fn symlinkat(target: *const c_char, newdirfd: c_int, linkpath: *const c_char) -> c_int;
    fn faccessat(dirfd: c_int, path: *const c_char, mode: c_int, flags: c_int) -> c_int;
    fn truncate64(path: *const c_char, len: i64) -> c_int;
    fn opendir(path: *const c_char) -> *mut libc::DIR;
    fn fdopendir(fd: c_int) -> *mut libc::DIR;
    fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64;
    fn closedir(dir: *mut libc::DIR) -> c_int;
    fn dirfd(dir: *mut libc::DIR) -> c_int;
    fn getrandom(buf: *mut c_void, len: usize, flags: c_uint) -> isize;
    fn getentropy(buf: *mut c_void, len: usize) -> c_int;
    fn syscall(n: c_long, a1: c_long, a2: c_long, a3: c_long, a4: c_long, a5: c_long, a6: c_long) -> c_long;
    fn clock_gettime(clock: libc::clockid_t, tp: *mut libc::timespec) -> c_int;
    fn gettimeofday(tv: *mut libc::timeval, tz: *mut c_void) -> c_int;
    fn time(t: *mut libc::time_t) -> libc::time_t;
    fn fopen64(path: *const c_char, mode: *const c_char) -> *mut libc::FILE;
    fn fdopen(fd: c_int, mode: *const c_char) -> *mut libc::FILE;
    fn mkostemps(template: *mut c_char, suffix_len: c_int, flags: c_int) -> c_int;
    fn freopen64(path: *const c_char, mode: *const c_char, stream: *mut libc::FILE) -> *mut libc::FILE;
}

// The scheduler's (`thread_calls`).
real! {
    fn pthread_create(thread: *mut libc::pthread_t, attr: *const libc::pthread_attr_t, routine: extern "C" fn(*mut c_void) -> *mut c_void, arg: *mut c_void) -> c_int;
    fn pthread_join(thread: libc::pthread_t, retval: *mut *mut c_void) -> c_int;
    fn pthread_exit(retval: *mut c_void) -> !;
    fn nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int;
    fn clock_nanosleep(clock: libc::clockid_t, flags: c_int, req: *const libc::timespec, rem: *mut libc::timespec) -> c_int;
    fn sched_yield() -> c_int;
    fn poll(fds: *mut libc::pollfd, nfds: libc::nfds_t, timeout: c_int) -> c_int;
    fn ppoll(fds: *mut libc::pollfd, nfds: libc::nfds_t, ts: *const libc::timespec, mask: *const libc::sigset_t) -> c_int;
    fn select(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *mut libc::timeval) -> c_int;
    fn pselect(n: c_int, r: *mut libc::fd_set, w: *mut libc::fd_set, e: *mut libc::fd_set, t: *const libc::timespec, m: *const libc::sigset_t) -> c_int;
    fn epoll_wait(epfd: c_int, events: *mut libc::epoll_event, max: c_int, timeout: c_int) -> c_int;
    fn epoll_pwait(epfd: c_int, events: *mut libc::epoll_event, max: c_int, timeout: c_int, mask: *const libc::sigset_t) -> c_int;
    fn pthread_cond_wait(cond: *mut libc::pthread_cond_t, mutex: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_cond_timedwait(cond: *mut libc::pthread_cond_t, mutex: *mut libc::pthread_mutex_t, at: *const libc::timespec) -> c_int;
    fn sem_wait(sem: *mut libc::sem_t) -> c_int;
    fn sem_timedwait(sem: *mut libc::sem_t, at: *const libc::timespec) -> c_int;
    fn pthread_mutex_lock(mutex: *mut libc::pthread_mutex_t) -> c_int;
    fn pthread_mutex_trylock(mutex: *mut libc::pthread_mutex_t) -> c_int;
}
