//! `fallocate`/`posix_fallocate` on a fake descriptor, served as the
//! size change each asks for, through the disk's own length rules (the
//! new length is durable at the file's next sync, as a truncation's is):
//! mode 0 extends the file to cover the range with zeros (what a real
//! file system's fresh extents read as); `FALLOC_FL_KEEP_SIZE` alone
//! reserves space and changes nothing a program can read, so it changes
//! nothing here; `FALLOC_FL_PUNCH_HOLE` (with `KEEP_SIZE`, as Linux
//! requires) zeroes the range inside the file, as a write of zeros the
//! disk tears and loses like any other unsynced write. The other modes
//! (zero, collapse, insert, unshare a range) are refused. `truncate` by
//! path is here too: the same size change, named by a path.

use crate::errno::Errno;
use crate::files::Target;
use crate::session::{refuse, with_fd};

/// The largest run of zeros written at once for a punched hole.
const ZEROS_CHUNK_BYTES: u64 = 1 << 20;

/// `fallocate(fd, mode, offset, len)`.
pub fn fallocate(fd: i32, mode: i32, offset: i64, len: i64) -> Result<(), Errno> {
    let (Ok(offset_bytes), Ok(len_bytes)) = (u64::try_from(offset), u64::try_from(len)) else {
        return Err(Errno::EINVAL);
    };
    if len_bytes == 0 {
        return Err(Errno::EINVAL);
    }
    let end_bytes = offset_bytes.checked_add(len_bytes).ok_or(Errno(libc::EFBIG))?;
    with_fd(fd, "fallocate", |s| {
        let slot = s.slot;
        let d = s.fds.get(fd)?;
        if !d.access.write {
            return Err(Errno::EBADF);
        }
        let Target::File(file) = &mut d.target else { return Err(Errno(libc::ENODEV)) };
        let file_len_bytes = file.len()?;
        match mode {
            0 if end_bytes > file_len_bytes => file.set_len(end_bytes)?,
            0 | libc::FALLOC_FL_KEEP_SIZE => return Ok(()),
            m if m == libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE => {
                let mut at = offset_bytes;
                while at < end_bytes.min(file_len_bytes) {
                    let n = (end_bytes.min(file_len_bytes) - at).min(ZEROS_CHUNK_BYTES);
                    file.write_at(at, &vec![0u8; n as usize])?;
                    at += n;
                }
            }
            _ => {
                let path = d.disk_path.display().to_string();
                let what = format!("fallocate mode {mode:#x} on {path} (fd {fd}): only 0, KEEP_SIZE and PUNCH_HOLE|KEEP_SIZE are served");
                return Err(refuse(Some(slot), Errno::ENOTSUP, what));
            }
        }
        s.modified_fd(fd)
    })
}

/// `truncate` of a path the layer owns: `ftruncate` without a descriptor
/// (the file must exist; a directory is `EISDIR`).
pub fn truncate_path(at: &crate::route::At, len: i64) -> Result<(), Errno> {
    let len_bytes = u64::try_from(len).map_err(|_| Errno::EINVAL)?;
    crate::route::with_at("truncate", at, |s, path| {
        if s.is_dir(&path)? {
            return Err(Errno::EISDIR);
        }
        s.vfs.open(&path, simkit::vfs::OpenMode::Write)?.set_len(len_bytes)?;
        s.modified(&path);
        Ok(())
    })
}
