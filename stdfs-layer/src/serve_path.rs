//! The calls naming a path the layer owns ([`crate::route`]), served by
//! the session's disk: `open` (files and directories), `stat`, `mkdir`,
//! `unlink`, `rename`. `rmdir` of an empty directory is refused (the disk
//! has no way to remove a directory); its errors are the kernel's. Directories are the session's own list ([`Session::dirs`]):
//! the disk lists files only, and makes a directory durable when it is
//! made (`create_dir_all`), so what the list holds is what the disk holds.

use std::path::{Path, PathBuf};

use simkit::vfs::OpenMode;

use crate::errno::Errno;
use crate::files::{Access, EachWrite, Target};
use crate::meta::Meta;
use crate::route::{with_at, At};
use crate::session::{refuse, Session};

/// `open`/`openat`: a new fake descriptor.
pub fn open(at: &At, flags: i32) -> Result<i32, Errno> {
    with_at("open", at, |s, path| {
        let mode = flags & libc::O_ACCMODE;
        let access = Access {
            read: mode != libc::O_WRONLY,
            write: mode != libc::O_RDONLY,
            append: flags & libc::O_APPEND != 0,
            sync_each_write: EachWrite::of_flags(flags),
        };
        let cloexec = flags & libc::O_CLOEXEC != 0;
        // O_TMPFILE carries O_DIRECTORY's bit: all of its bits, not any.
        if flags & libc::O_TMPFILE == libc::O_TMPFILE {
            // The simulated file system has no unnamed files: it answers
            // as a kernel whose file system lacks O_TMPFILE does, which
            // callers take for the cue to fall back to a named file
            // (tempfile's `tempfile_in`); not a refusal.
            return Err(Errno(libc::EOPNOTSUPP));
        }
        // `O_PATH | O_DIRECTORY` asks whether a directory is there (coreutils'
        // `mv` of its last operand): answered as the directory's open is,
        // `ENOTDIR` or `ENOENT` for anything else. A plain `O_PATH` handle
        // of a file is not served.
        if flags & (libc::O_PATH | libc::O_DIRECTORY) == libc::O_PATH | libc::O_DIRECTORY && !access.write {
            if s.dirs.contains(&path) || s.is_dir(&path)? {
                return open_dir(s, path, flags & !libc::O_PATH, access, cloexec);
            }
            return Err(if s.vfs.exists(&path)? { Errno::ENOTDIR } else { Errno::ENOENT });
        }
        if flags & libc::O_PATH != 0 {
            let what = format!("open {} with O_PATH is not served", path.display());
            return Err(refuse(Some(s.slot), Errno::ENOTSUP, what));
        }
        if s.dirs.contains(&path) {
            return open_dir(s, path, flags, access, cloexec);
        }
        if flags & libc::O_DIRECTORY != 0 {
            if s.is_dir(&path)? {
                return open_dir(s, path, flags, access, cloexec);
            }
            return Err(if s.vfs.exists(&path)? { Errno::ENOTDIR } else { Errno::ENOENT });
        }
        let file = match open_file(s, &path, flags, access) {
            // A directory an earlier session made: learnt now.
            Err(Errno::EISDIR) if s.is_dir(&path)? => return open_dir(s, path, flags, access, cloexec),
            opened => opened?,
        };
        if flags & (libc::O_CREAT | libc::O_TRUNC) != 0 && access.write {
            s.modified(&path);
        }
        s.fds.open(path, Target::File(file), access, cloexec)
    })
}

fn open_dir(s: &mut Session, path: PathBuf, flags: i32, access: Access, cloexec: bool) -> Result<i32, Errno> {
    if access.write {
        return Err(Errno::EISDIR);
    }
    if flags & (libc::O_CREAT | libc::O_EXCL) == libc::O_CREAT | libc::O_EXCL {
        return Err(Errno::EEXIST);
    }
    s.fds.open(path, Target::Dir, access, cloexec)
}

fn open_file(s: &mut Session, path: &Path, flags: i32, access: Access) -> Result<Box<dyn simkit::vfs::VfsFile>, Errno> {
    let create = flags & libc::O_CREAT != 0;
    let truncate = flags & libc::O_TRUNC != 0 && access.write;
    if create && flags & libc::O_EXCL != 0 && s.vfs.exists(path)? {
        return Err(Errno::EEXIST);
    }
    let mode = match (create, truncate, access.write) {
        (true, true, _) => OpenMode::Truncate,
        (true, false, _) => OpenMode::Create,
        (false, _, true) => OpenMode::Write,
        (false, _, false) => OpenMode::Read,
    };
    let mut file = s.vfs.open(path, mode)?;
    if truncate && !create {
        file.set_len(0)?;
    }
    Ok(file)
}

/// `stat` and its relatives (no symbolic links on the disk: `lstat` is
/// `stat`).
pub fn stat(at: &At) -> Result<Meta, Errno> {
    with_at("stat", at, |s, path| {
        if s.dirs.contains(&path) {
            return Ok(Meta::dir(&path, s.attrs.of(&path)));
        }
        match s.vfs.open(&path, OpenMode::Read) {
            Ok(file) => Ok(Meta::file(&path, file.len()?, s.attrs.of(&path))),
            // A directory an earlier session made: learnt now.
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory && s.is_dir(&path)? => {
                Ok(Meta::dir(&path, s.attrs.of(&path)))
            }
            Err(e) => Err(e.into()),
        }
    })
}

/// `mkdir`: made on the disk (durable at once there) and known from now.
pub fn mkdir(at: &At) -> Result<(), Errno> {
    with_at("mkdir", at, |s, path| {
        if s.dirs.contains(&path) || s.vfs.exists(&path)? {
            return Err(Errno::EEXIST);
        }
        let parent = path.parent().ok_or(Errno::EEXIST)?;
        if !s.is_dir(parent)? {
            return Err(if s.vfs.exists(parent)? { Errno::ENOTDIR } else { Errno::ENOENT });
        }
        s.vfs.create_dir_all(&path)?;
        s.dirs.insert(path);
        Ok(())
    })
}

/// `unlink`, and `rmdir` (`dir`).
pub fn unlink(at: &At, dir: bool) -> Result<(), Errno> {
    with_at(if dir { "rmdir" } else { "unlink" }, at, |s, path| {
        if dir {
            return rmdir(s, &path);
        }
        if s.dirs.contains(&path) {
            return Err(Errno::EISDIR);
        }
        s.vfs.unlink(&path)?;
        s.attrs.removed(&path);
        Ok(())
    })
}

/// `rmdir`: the empty directory removed on the disk, a change of its
/// parent (durable at the parent's fsync, or as the profile says); the
/// kernel's errors where it is one (no such name, not a directory, not
/// empty, the root). A disk that cannot remove a directory is refused
/// loudly.
fn rmdir(s: &mut Session, path: &Path) -> Result<(), Errno> {
    if !s.is_dir(path)? {
        return Err(if s.vfs.exists(path)? { Errno::ENOTDIR } else { Errno::ENOENT });
    }
    if path.parent().is_none() {
        return Err(Errno(libc::EBUSY));
    }
    match s.vfs.remove_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            let what = format!("rmdir {}: this disk cannot remove a directory ({e})", path.display());
            return Err(refuse(Some(s.slot), Errno::ENOTSUP, what));
        }
        removed => removed?,
    }
    s.dirs.retain(|known| !known.starts_with(path));
    s.attrs.removed(path);
    Ok(())
}

/// `rename`, both paths the layer's (of this thread's session), of a file
/// or a directory (everything under it moves in one step, on the disk as
/// in the session's names). With `noreplace` (`renameat2`'s
/// `RENAME_NOREPLACE`) an existing target is `EEXIST`: the check and the
/// rename are one step here, since a run's calls are served one at a
/// time. A move into another directory is the disk's too (one change of
/// both parents); what a disk cannot rename (`Unsupported`) is refused
/// loudly; the kernel's errors are answered.
pub fn rename(from: &At, to: &At, noreplace: bool) -> Result<(), Errno> {
    let to_path = with_at("rename", to, |_, path| Ok(path))?;
    with_at("rename", from, |s, from_path| {
        if noreplace && (s.dirs.contains(&to_path) || s.vfs.exists(&to_path)?) {
            return Err(Errno::EEXIST);
        }
        match s.vfs.rename(&from_path, &to_path) {
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                let what = format!("rename {} to {}: {e}", from_path.display(), to_path.display());
                return Err(refuse(Some(s.slot), Errno::ENOTSUP, what));
            }
            renamed => renamed?,
        }
        if from_path != to_path {
            s.renamed(&from_path, &to_path);
        }
        Ok(())
    })
}
