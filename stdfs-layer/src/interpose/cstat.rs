//! A served [`Meta`] written into libc's `struct stat64` and `struct
//! statx`, as the kernel would fill them: every other field zero.

use crate::meta::Meta;

/// Nanoseconds since the epoch as seconds and nanoseconds.
fn split_ns(ns: u64) -> (i64, i64) {
    ((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64)
}

fn statx_time(ns: u64) -> libc::statx_timestamp {
    let (tv_sec, tv_nsec) = split_ns(ns);
    // SAFETY: `statx_timestamp` is plain data; all-zero is a valid value.
    let mut t: libc::statx_timestamp = unsafe { std::mem::zeroed() };
    t.tv_sec = tv_sec;
    t.tv_nsec = tv_nsec as u32;
    t
}

/// The simulated disk's device number, one no real disk here has.
const SIM_DEV_MAJOR: u32 = 0x5e6;

/// Fill `*buf` from `meta`.
///
/// # Safety
/// `buf` is valid for writing one `stat64`.
pub unsafe fn fill_stat64(meta: Meta, buf: *mut libc::stat64) {
    // SAFETY: `stat64` is plain data; all-zero is a valid value of it.
    let mut st: libc::stat64 = unsafe { std::mem::zeroed() };
    st.st_dev = libc::makedev(SIM_DEV_MAJOR, 0);
    st.st_ino = meta.ino;
    st.st_nlink = 1;
    st.st_mode = meta.mode();
    st.st_size = meta.len_bytes as i64;
    st.st_blksize = 4096;
    st.st_blocks = meta.len_bytes.div_ceil(512) as i64;
    (st.st_atime, st.st_atime_nsec) = split_ns(meta.atime_ns);
    (st.st_mtime, st.st_mtime_nsec) = split_ns(meta.mtime_ns);
    (st.st_ctime, st.st_ctime_nsec) = split_ns(meta.ctime_ns);
    // SAFETY: the caller's contract.
    unsafe { buf.write(st) };
}

/// Fill `*buf` from `meta`, saying the basic fields are set.
///
/// # Safety
/// `buf` is valid for writing one `statx`.
pub unsafe fn fill_statx(meta: Meta, buf: *mut libc::statx) {
    // SAFETY: `statx` is plain data; all-zero is a valid value of it.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    st.stx_mask = libc::STATX_BASIC_STATS;
    st.stx_blksize = 4096;
    st.stx_nlink = 1;
    st.stx_mode = meta.mode() as u16;
    st.stx_ino = meta.ino;
    st.stx_size = meta.len_bytes;
    st.stx_blocks = meta.len_bytes.div_ceil(512);
    st.stx_dev_major = SIM_DEV_MAJOR;
    st.stx_atime = statx_time(meta.atime_ns);
    st.stx_mtime = statx_time(meta.mtime_ns);
    st.stx_ctime = statx_time(meta.ctime_ns);
    // SAFETY: the caller's contract.
    unsafe { buf.write(st) };
}
