//! A served [`Meta`] written into libc's `struct stat64` and `struct
//! statx`, as the kernel would fill them: every other field zero.

use crate::meta::Meta;

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
    // SAFETY: the caller's contract.
    unsafe { buf.write(st) };
}
