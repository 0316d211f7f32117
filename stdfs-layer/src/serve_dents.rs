//! `getdents64` on one of the layer's directory descriptors: what a
//! program reads a directory with when it skips libc's `readdir` (rustix's
//! `Dir` makes the system call itself, caught by `interpose::raw_trap`).
//! The listing is a directory stream's ([`Stream::list`], byte order,
//! `.` and `..` first), taken at the first call and kept with the
//! descriptor, as `fdopendir` keeps one; a rewind (`lseek` to 0,
//! `serve_fd::lseek`) takes it again, and `close` drops it.

use std::path::Path;

use crate::dirstream::{Entry, Stream};
use crate::errno::Errno;
use crate::files::Target;
use crate::session::{refuse, with_fd, Session};

/// Bytes of a `linux_dirent64` before its name: `d_ino` (8), `d_off` (8),
/// `d_reclen` (2), `d_type` (1).
const HEADER_BYTES: usize = 19;

/// The listing of directory `fd` (its stream, begun if it has none).
pub fn stream_of(s: &mut Session, fd: i32) -> Result<&mut Stream, Errno> {
    if !s.streams.contains_key(&fd) {
        let d = s.fds.get(fd)?;
        if !matches!(d.target, Target::Dir) {
            return Err(Errno::ENOTDIR);
        }
        let dir = d.disk_path.clone();
        let stream = listing(s, &dir)?;
        s.streams.insert(fd, stream);
    }
    Ok(s.streams.get_mut(&fd).expect("the stream was just begun"))
}

/// The listing of disk directory `dir` as a program reads it: the disk's
/// files (its one traced I/O) and directories, learnt by the session
/// (STDFS.md: a directory an earlier session made is in its parent's
/// listing), and the session's own. A disk that cannot list directories
/// is refused loudly, never listed by its files alone.
pub fn listing(s: &mut Session, dir: &Path) -> Result<Stream, Errno> {
    let files = s.vfs.list_dir(dir)?;
    let subdirs = match s.vfs.list_subdirs(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            let what = format!("a listing of {}: this disk cannot list its directories", dir.display());
            return Err(refuse(Some(s.slot), Errno::ENOTSUP, what));
        }
        listed => listed?,
    };
    s.dirs.extend(subdirs.iter().map(|name| dir.join(name)));
    Ok(Stream::list(dir, files, subdirs, &s.dirs))
}

/// One `linux_dirent64` record of `entry`, `position` its place in the
/// listing (its `d_off` is the next one's), padded to 8 bytes.
fn record(entry: &Entry, position: usize) -> Vec<u8> {
    let name = entry.name.as_encoded_bytes();
    let len = (HEADER_BYTES + name.len() + 1).next_multiple_of(8);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&entry.ino.to_ne_bytes());
    out.extend_from_slice(&(position as i64 + 1).to_ne_bytes());
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.push(if entry.is_dir { libc::DT_DIR } else { libc::DT_REG });
    out.extend_from_slice(name);
    out.resize(len, 0);
    debug_assert_eq!(out.len() % 8, 0);
    out
}

/// `getdents64(fd, buf)`: as many whole records as `buf` holds; 0 at the
/// listing's end; `EINVAL` when not even the next one fits (the kernel's
/// answer).
pub fn getdents64(fd: i32, buf: &mut [u8]) -> Result<usize, Errno> {
    with_fd(fd, "getdents64", |s| {
        let stream = stream_of(s, fd)?;
        let mut used = 0usize;
        while let Some((entry, position)) = stream.peek() {
            let bytes = record(entry, position);
            if used + bytes.len() > buf.len() {
                break;
            }
            buf[used..used + bytes.len()].copy_from_slice(&bytes);
            used += bytes.len();
            stream.next_entry();
        }
        if used == 0 && stream.peek().is_some() {
            return Err(Errno::EINVAL);
        }
        Ok(used)
    })
}

/// `posix_fadvise` (the raw `fadvise64`) on a simulated descriptor: advice
/// changes no byte a program can read, so it is taken and nothing done,
/// once the descriptor is known to be the run's.
pub fn fadvise(fd: i32, advice: i32) -> Result<(), Errno> {
    let known = [
        libc::POSIX_FADV_NORMAL,
        libc::POSIX_FADV_RANDOM,
        libc::POSIX_FADV_SEQUENTIAL,
        libc::POSIX_FADV_WILLNEED,
        libc::POSIX_FADV_DONTNEED,
        libc::POSIX_FADV_NOREUSE,
    ];
    with_fd(fd, "fadvise64", |s| {
        s.fds.get(fd)?;
        if known.contains(&advice) {
            Ok(())
        } else {
            Err(Errno::EINVAL)
        }
    })
}
