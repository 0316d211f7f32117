//! The calls about names rather than bytes, on paths the layer owns:
//! `realpath` (what `canonicalize` calls), `chdir`/`fchdir` and `getcwd`
//! (a working directory per run), `access`, `readlink`, and the links the disk
//! cannot hold (`link`, `symlink`), which are refused.
//!
//! The working directory is the run's, not the process's: a served
//! `chdir` into the root sets the session's ([`Session::cwd`]) and never
//! the process's, which the other runs (`--jobs 2`) and the harness share;
//! from then on a relative path from `AT_FDCWD` is the layer's
//! ([`crate::route`]). A `chdir` out of the root from a run's thread is
//! refused for the same reason (`interpose::name_calls`).
//!
//! The disk has neither hard links nor symbolic links: `readlink` of a
//! name that exists answers `EINVAL` (not a link), as the kernel would,
//! and a path needs no resolution beyond `..` ([`crate::route`]), so
//! `realpath` is the disk path under the root once every name on the way
//! is known to exist.

use std::path::{Path, PathBuf};

use crate::errno::Errno;
use crate::files::Target;
use crate::route::{with_at, At};
use crate::session::{refuse, with_fd, Session};

/// `path` on the disk as a program names it: under the root.
fn under_root(disk_path: &Path) -> PathBuf {
    debug_assert!(disk_path.is_absolute());
    let rest = disk_path.strip_prefix("/").expect("a disk path is absolute");
    if rest.as_os_str().is_empty() {
        return PathBuf::from(crate::live::root()); // the disk's root, without a trailing `/`
    }
    Path::new(crate::live::root()).join(rest)
}

/// Every directory on the way to `path` is one, and `path` exists.
fn resolvable(s: &mut Session, path: &Path) -> Result<(), Errno> {
    for dir in path.ancestors().skip(1) {
        if !s.is_dir(dir)? {
            return Err(if s.vfs.exists(dir)? { Errno::ENOTDIR } else { Errno::ENOENT });
        }
    }
    if s.is_dir(path)? || s.vfs.exists(path)? {
        Ok(())
    } else {
        Err(Errno::ENOENT)
    }
}

/// `realpath`: the absolute path under the root.
pub fn realpath(at: &At) -> Result<PathBuf, Errno> {
    with_at("realpath", at, |s, path| {
        resolvable(s, &path)?;
        Ok(under_root(&path))
    })
}

/// `chdir` into a directory the layer owns: the run's working directory.
pub fn chdir(at: &At) -> Result<(), Errno> {
    with_at("chdir", at, |s, path| {
        resolvable(s, &path)?;
        if !s.is_dir(&path)? {
            return Err(Errno::ENOTDIR);
        }
        s.cwd = Some(path);
        Ok(())
    })
}

/// `fchdir` to a fake directory descriptor.
pub fn fchdir(fd: i32) -> Result<(), Errno> {
    with_fd(fd, "fchdir", |s| {
        let d = s.fds.get(fd)?;
        if !matches!(d.target, Target::Dir) {
            return Err(Errno::ENOTDIR);
        }
        s.cwd = Some(d.disk_path.clone());
        Ok(())
    })
}

/// `getcwd` of a run whose working directory is the layer's (`None`: the
/// process's, the real system's to answer).
pub fn getcwd() -> Option<PathBuf> {
    crate::session::cwd().map(|dir| under_root(&dir))
}

/// `access`/`faccessat`: whether the name exists. The modes are the
/// session's record, not enforced (`crate::attrs`), so every access a
/// name's existence allows is granted.
pub fn access(at: &At) -> Result<(), Errno> {
    with_at("access", at, |s, path| resolvable(s, &path))
}

/// `readlink`: the disk holds no symbolic link, so a name that exists is
/// not one (`EINVAL`).
pub fn readlink(at: &At) -> Result<usize, Errno> {
    with_at("readlink", at, |s, path| {
        resolvable(s, &path)?;
        Err(Errno::EINVAL)
    })
}

/// `link`/`symlink` making `to` (a path the layer owns): refused, the
/// disk holds one name per file and no symbolic links. In a preloaded
/// program (`crate::live`) it fails with `EPERM` instead, unrefused, as on
/// a file system that cannot make either (vfat): a program that probes for
/// them (`git init`'s symlink test, git's `link` of a new object) falls
/// back on its own, and one that does not stops at the error it was given.
pub fn refuse_link(op: &str, to: &At, from: &[u8]) -> Errno {
    if crate::live::is_live() {
        return with_at(op, to, |_, _| Err::<(), Errno>(Errno(libc::EPERM))).expect_err("failed above");
    }
    let shown = String::from_utf8_lossy(from).into_owned();
    match with_at(op, to, |s, path| {
        let what = format!("{op} {shown} to {}: the simulated disk has no {op}s", under_root(&path).display());
        Err::<(), Errno>(refuse(Some(s.slot), Errno::ENOTSUP, what))
    }) {
        Err(errno) => errno,
        Ok(()) => unreachable!("refused above"),
    }
}
