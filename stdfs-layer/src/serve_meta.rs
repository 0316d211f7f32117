//! The calls that change a simulated name's metadata, served into the
//! session's record ([`crate::attrs`]): `chmod`/`fchmod`/`fchmodat` set
//! its permission bits, `utimensat`/`futimens` its times (`UTIME_NOW`:
//! the session's virtual clock, never the wall clock). `stat` reports
//! both. Recorded, not enforced, and kept for the session only (the
//! module doc of `attrs` says why that is the honest reach of it).

use std::path::{Path, PathBuf};

use crate::errno::Errno;
use crate::route::{with_at, At};
use crate::session::{refuse, with_fd, Session};

/// One time a `utimensat` call sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSet {
    /// `UTIME_NOW`: the session's clock.
    Now,
    /// `UTIME_OMIT`: left as it is.
    Omit,
    /// This time, in nanoseconds since the epoch.
    At(u64),
}

/// The name `path` must exist (a directory the session knows, or a file).
fn existing(s: &Session, path: &Path) -> Result<(), Errno> {
    if s.dirs.contains(path) || s.vfs.exists(path)? {
        Ok(())
    } else {
        Err(Errno::ENOENT)
    }
}

/// The disk path fake descriptor `fd` is open on.
fn path_of(s: &mut Session, fd: i32) -> Result<PathBuf, Errno> {
    Ok(s.fds.get(fd)?.disk_path.clone())
}

fn set_perm(s: &mut Session, path: &Path, mode: u32) {
    let now_ns = s.entropy.peek_ns();
    s.attrs.set_perm(path, mode & 0o7777, now_ns);
}

/// `chmod`/`fchmodat` of a path the layer owns.
pub fn chmod(at: &At, mode: u32) -> Result<(), Errno> {
    with_at("chmod", at, |s, path| {
        existing(s, &path)?;
        set_perm(s, &path, mode);
        Ok(())
    })
}

/// `fchmod` of a fake descriptor.
pub fn fchmod(fd: i32, mode: u32) -> Result<(), Errno> {
    with_fd(fd, "fchmod", |s| {
        let path = path_of(s, fd)?;
        set_perm(s, &path, mode);
        Ok(())
    })
}

fn set_times(s: &mut Session, path: &Path, times: [TimeSet; 2]) {
    let now_ns = s.entropy.peek_ns();
    let value = |t: TimeSet| match t {
        TimeSet::Now => Some(now_ns),
        TimeSet::Omit => None,
        TimeSet::At(ns) => Some(ns),
    };
    s.attrs.set_times(path, value(times[0]), value(times[1]), now_ns);
}

/// `utimensat` of a path the layer owns: `[access, modification]`.
pub fn utimens(at: &At, times: [TimeSet; 2]) -> Result<(), Errno> {
    with_at("utimensat", at, |s, path| {
        existing(s, &path)?;
        set_times(s, &path, times);
        Ok(())
    })
}

/// `futimens` (or `utimensat` with `AT_EMPTY_PATH`) of a fake descriptor.
pub fn futimens(fd: i32, times: [TimeSet; 2]) -> Result<(), Errno> {
    with_fd(fd, "futimens", |s| {
        let path = path_of(s, fd)?;
        set_times(s, &path, times);
        Ok(())
    })
}

/// A time before the epoch: the record holds none (refused, naming it).
pub fn refuse_before_epoch(op: &str, what: &str) -> Errno {
    refuse(None, Errno::EINVAL, format!("{op} {what}: a time before 1970 is not served"))
}
