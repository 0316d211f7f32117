//! `copy_file_range` and `sendfile` between two fake descriptors of the
//! same run, served as a read of the one and a write of the other
//! ([`crate::serve_fd`]), so the copy meets the disk's write rules (torn,
//! lost unsynced) as the program's own writes would. At most
//! [`COPY_CHUNK_BYTES`] per call: both calls may copy less than asked,
//! and every caller (std's `io::copy`) loops. A copy between a simulated
//! and a real descriptor is refused (`interpose::copy_calls`).

use crate::errno::Errno;
use crate::serve_fd;
use crate::session::with_fd;

/// The most one call copies.
pub const COPY_CHUNK_BYTES: usize = 1 << 20;

/// Copy up to `len` bytes from `fd_in` (at `off_in`, or its cursor) to
/// `fd_out` (at `off_out`, or its cursor): the count copied, 0 at the
/// input's end.
pub fn copy(fd_in: i32, off_in: Option<u64>, fd_out: i32, off_out: Option<u64>, len: usize) -> Result<usize, Errno> {
    let out_appends = with_fd(fd_out, "copy_file_range", |s| Ok(s.fds.get(fd_out)?.access.append))?;
    if out_appends {
        return Err(Errno::EBADF);
    }
    if let (Some(from), Some(to)) = (off_in, off_out) {
        let same = with_fd(fd_in, "copy_file_range", |s| {
            let a = s.fds.get(fd_in)?.disk_path.clone();
            Ok(a == s.fds.get(fd_out)?.disk_path)
        })?;
        if same && from.abs_diff(to) < len as u64 {
            return Err(Errno::EINVAL);
        }
    }
    let mut buf = vec![0u8; len.min(COPY_CHUNK_BYTES)];
    let n = serve_fd::read(fd_in, &mut buf, off_in)?;
    if n == 0 {
        return Ok(0);
    }
    serve_fd::write(fd_out, &buf[..n], off_out)
}
