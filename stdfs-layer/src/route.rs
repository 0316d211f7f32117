//! Which calls are the layer's: a path under [`ROOT`], a path relative to
//! one of its directory descriptors, or one of its descriptors. Everything
//! else is the real system's, and goes there untouched.
//!
//! A path the layer owns is turned into the disk's path here, once: the
//! root taken off, `.` components dropped, and `..` resolved against the
//! session's directories (the disk has no symbolic links, so a name's
//! parent is the name with its last component taken off, as long as that
//! name is a directory: exact, not an approximation); a `..` that climbs
//! out of the root is refused. A relative path from the working
//! directory is the layer's when the run's working directory is
//! ([`crate::session::cwd`], set by a served `chdir`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::errno::Errno;
use crate::files::Target;
use crate::session::{cwd, is_fake_fd, refuse, with_fd, with_path, Session};

/// A path the layer serves, as the call named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// An absolute path under the root: the disk's path (not yet checked).
    Abs(PathBuf),
    /// A relative path from one of the layer's directory descriptors.
    Rel(i32, PathBuf),
}

/// Whether `(dirfd, path)` is the layer's; `None`: the real system's.
/// `path` empty (`AT_EMPTY_PATH`) is the caller's to handle.
pub fn route(dirfd: i32, path: &[u8]) -> Option<At> {
    if path.first() == Some(&b'/') {
        let rest = path.strip_prefix(crate::live::root().as_bytes())?;
        if !rest.is_empty() && rest[0] != b'/' {
            return None;
        }
        let disk = if rest.is_empty() { b"/".as_slice() } else { rest };
        return Some(At::Abs(PathBuf::from(OsStr::from_bytes(disk))));
    }
    if !path.is_empty() && is_fake_fd(dirfd) {
        return Some(At::Rel(dirfd, PathBuf::from(OsStr::from_bytes(path))));
    }
    if !path.is_empty() && dirfd == libc::AT_FDCWD {
        if let Some(dir) = cwd() {
            return Some(At::Abs(dir.join(OsStr::from_bytes(path))));
        }
        // A preloaded program's relative path that lands under the root.
        return crate::live::from_real_cwd(path).and_then(|full| route(dirfd, &full));
    }
    None
}

/// Run `serve` on the session `at` belongs to, with its disk path.
pub fn with_at<T>(
    op: &str,
    at: &At,
    serve: impl FnOnce(&mut Session, PathBuf) -> Result<T, Errno>,
) -> Result<T, Errno> {
    match at {
        At::Abs(path) => with_path(op, path, |s| {
            let disk = normal(s, op, path)?;
            serve(s, disk)
        }),
        At::Rel(fd, rel) => with_fd(*fd, op, |s| {
            let d = s.fds.get(*fd)?;
            if !matches!(d.target, Target::Dir) {
                return Err(Errno::ENOTDIR);
            }
            let joined = d.disk_path.join(rel);
            let disk = normal(s, op, &joined)?;
            serve(s, disk)
        }),
    }
}

/// `path` with `.` components dropped and each `..` taken back to the
/// directory it names; a climb out of the root refused.
fn normal(s: &mut Session, op: &str, path: &Path) -> Result<PathBuf, Errno> {
    if path.as_os_str().len() >= libc::PATH_MAX as usize {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(name) => out.push(name),
            Component::ParentDir if !s.is_dir(&out)? => {
                return Err(if s.vfs.exists(&out)? { Errno::ENOTDIR } else { Errno::ENOENT });
            }
            Component::ParentDir if out.pop() => {}
            Component::ParentDir | Component::Prefix(_) => {
                let what =
                    format!("{op} {}: `..` climbs out of {}, to the real disk", path.display(), crate::live::root());
                return Err(refuse(Some(s.slot), Errno::ENOTSUP, what));
            }
        }
    }
    Ok(out)
}
