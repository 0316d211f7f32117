//! The calls on a fake file descriptor, served by the session's disk:
//! reads and writes (with the description's cursor, `O_APPEND`, `O_SYNC`),
//! seeks, syncs (a directory's fsync is the disk's `sync_dir`), truncation,
//! `fstat`, `dup`, `close`, the `fcntl` commands std and the engines use,
//! `flock`. A call the layer cannot serve faithfully is refused
//! ([`crate::session::refuse`]), never approximated.

use crate::dirstream::Entry;
use crate::errno::Errno;
use crate::files::{Description, EachWrite, Flock, Target};
use crate::meta::Meta;
use crate::plant::{LayerPlant, SCRATCH_SUFFIX};
use crate::session::{refuse, with_fd, Session};

fn file(description: &mut Description) -> Result<&mut Box<dyn simkit::vfs::VfsFile>, Errno> {
    match &mut description.target {
        Target::File(file) => Ok(file),
        Target::Dir => Err(Errno::EISDIR),
    }
}

/// `read`/`pread`: into `buf` at the cursor (`at` `None`) or at `at`.
pub fn read(fd: i32, buf: &mut [u8], at: Option<u64>) -> Result<usize, Errno> {
    with_fd(fd, "read", |s| {
        let d = s.fds.get(fd)?;
        if !d.access.read {
            return Err(Errno::EBADF);
        }
        let offset_bytes = at.unwrap_or(d.cursor_bytes);
        let n = file(d)?.read_at(offset_bytes, buf)?;
        if at.is_none() {
            d.cursor_bytes += n as u64;
        }
        Ok(n)
    })
}

/// `write`/`pwrite`: all of `data` at the cursor (the end with
/// `O_APPEND`) or at `at`; synced after with `O_SYNC`.
pub fn write(fd: i32, data: &[u8], at: Option<u64>) -> Result<usize, Errno> {
    with_fd(fd, "write", |s| {
        let d = s.fds.get(fd)?;
        if !d.access.write {
            return Err(Errno::EBADF);
        }
        let offset_bytes = match at {
            Some(at) => at,
            None if d.access.append => file(d)?.len()?,
            None => d.cursor_bytes,
        };
        let sync = d.access.sync_each_write;
        let f = file(d)?;
        f.write_at(offset_bytes, data)?;
        match sync {
            EachWrite::Buffered => {}
            EachWrite::DataSync => f.sync_data()?,
            EachWrite::Sync => f.sync()?,
        }
        if at.is_none() {
            d.cursor_bytes = offset_bytes + data.len() as u64;
        }
        s.modified_fd(fd)?;
        Ok(data.len())
    })
}

/// `lseek`: the new cursor.
pub fn lseek(fd: i32, offset: i64, whence: i32) -> Result<u64, Errno> {
    with_fd(fd, "lseek", |s| {
        let slot = s.slot;
        let d = s.fds.get(fd)?;
        let base = match whence {
            libc::SEEK_SET => 0,
            libc::SEEK_CUR => d.cursor_bytes as i64,
            libc::SEEK_END => file(d)?.len()? as i64,
            _ => {
                return Err(refuse(
                    Some(slot),
                    Errno::EINVAL,
                    format!("lseek whence {whence} on fd {fd}: only SET, CUR and END are served"),
                ))
            }
        };
        let cursor = base.checked_add(offset).filter(|c| *c >= 0).ok_or(Errno::EINVAL)?;
        if cursor != 0 && matches!(d.target, Target::Dir) {
            // A listing's place is its entry count, not a byte offset; a
            // seek into it (`seekdir` over raw `getdents64`) is not modelled.
            let what = format!("lseek of directory fd {fd} to {cursor}: only a rewind to 0 is served");
            return Err(refuse(Some(slot), Errno::ENOTSUP, what));
        }
        d.cursor_bytes = cursor as u64;
        let rewound_dir = cursor == 0 && matches!(d.target, Target::Dir);
        if rewound_dir && s.streams.remove(&fd).is_some() {
            // A rewind lists the directory again (`rewinddir`'s meaning).
            crate::serve_dents::stream_of(s, fd)?;
        }
        Ok(cursor as u64)
    })
}

/// `fsync` (`data_only`: `fdatasync`): the file's `sync` (`sync_data`),
/// or the directory's `sync_dir` either way (ext4 and XFS commit a
/// directory's entries for both). The one spot of the layer's planted
/// mistakes ([`LayerPlant`]), when the session plants one.
pub fn sync(fd: i32, data_only: bool) -> Result<(), Errno> {
    with_fd(fd, if data_only { "fdatasync" } else { "fsync" }, |s| {
        let Session { vfs, fds, plant, .. } = s;
        let d = fds.get(fd)?;
        match &mut d.target {
            Target::File(_) if *plant == Some(LayerPlant::TmpFsyncNoop) && is_scratch(&d.disk_path) => Ok(()),
            Target::File(f) if data_only => Ok(f.sync_data()?),
            Target::File(f) => Ok(f.sync()?),
            Target::Dir if *plant == Some(LayerPlant::DirFsyncParent) => {
                let parent = d.disk_path.parent().unwrap_or(&d.disk_path);
                Ok(vfs.sync_dir(parent)?)
            }
            Target::Dir => Ok(vfs.sync_dir(&d.disk_path)?),
        }
    })
}

/// Whether [`LayerPlant::TmpFsyncNoop`] takes the file opened as `path`
/// for scratch.
fn is_scratch(path: &std::path::Path) -> bool {
    path.as_os_str().as_encoded_bytes().ends_with(SCRATCH_SUFFIX.as_bytes())
}

/// `ftruncate`.
pub fn truncate(fd: i32, len_bytes: i64) -> Result<(), Errno> {
    with_fd(fd, "ftruncate", |s| {
        let d = s.fds.get(fd)?;
        let len_bytes = u64::try_from(len_bytes).map_err(|_| Errno::EINVAL)?;
        if !d.access.write {
            return Err(Errno::EINVAL);
        }
        file(d)?.set_len(len_bytes)?;
        s.modified_fd(fd)
    })
}

/// `fstat`.
pub fn fstat(fd: i32) -> Result<Meta, Errno> {
    with_fd(fd, "fstat", |s| {
        let d = s.fds.get(fd)?;
        let path = d.disk_path.clone();
        let len_bytes = match &mut d.target {
            Target::File(f) => Some(f.len()?),
            Target::Dir => None,
        };
        let attrs = s.attrs.of(&path);
        Ok(len_bytes.map_or(Meta::dir(&path, attrs), |len| Meta::file(&path, len, attrs)))
    })
}

/// `close`.
pub fn close(fd: i32) -> Result<(), Errno> {
    with_fd(fd, "close", |s| {
        // A listing taken by `getdents64` ends with its descriptor.
        s.streams.remove(&fd);
        s.fds.close(fd)
    })
}

/// `dup` and `fcntl(F_DUPFD*)`: a new descriptor for the same description.
pub fn dup(fd: i32, cloexec: bool) -> Result<i32, Errno> {
    with_fd(fd, "dup", |s| s.fds.dup(fd, cloexec))
}

/// `fcntl`: the duplications, the descriptor flags and the status flags;
/// any other command (record locks, leases, pipes) is refused.
pub fn fcntl(fd: i32, cmd: i32, arg: i64) -> Result<i32, Errno> {
    match cmd {
        libc::F_DUPFD => return dup(fd, false),
        libc::F_DUPFD_CLOEXEC => return dup(fd, true),
        _ => {}
    }
    with_fd(fd, "fcntl", |s| match cmd {
        libc::F_GETFD => Ok(if s.fds.cloexec(fd, None)? { libc::FD_CLOEXEC } else { 0 }),
        libc::F_SETFD => s.fds.cloexec(fd, Some(arg & i64::from(libc::FD_CLOEXEC) != 0)).map(|_| 0),
        libc::F_GETFL => {
            let a = s.fds.get(fd)?.access;
            let mode = match (a.read, a.write) {
                (true, true) => libc::O_RDWR,
                (false, true) => libc::O_WRONLY,
                _ => libc::O_RDONLY,
            };
            Ok(mode | if a.append { libc::O_APPEND } else { 0 })
        }
        // Of the flags `F_SETFL` changes, `O_APPEND` has a meaning here; a
        // regular file ignores `O_NONBLOCK` and `O_NOATIME` (coreutils'
        // `sync` clears the `O_NONBLOCK` it opened with), and the kernel
        // ignores every other bit (the access mode `F_GETFL` answered).
        // `O_ASYNC` and `O_DIRECT` are refused below.
        libc::F_SETFL if arg & i64::from(libc::O_ASYNC | libc::O_DIRECT) == 0 => {
            s.fds.get(fd)?.access.append = arg & i64::from(libc::O_APPEND) != 0;
            Ok(0)
        }
        // A preloaded program's record locks (`crate::live`): granted, as a
        // lone process's always are; its processes run one at a time, and
        // the caller reports no holder (`F_GETLK` is answered `F_UNLCK`).
        libc::F_SETLK | libc::F_SETLKW | libc::F_OFD_SETLK | libc::F_OFD_SETLKW | libc::F_GETLK | libc::F_OFD_GETLK
            if crate::live::is_live() =>
        {
            s.fds.get(fd).map(|_| 0)
        }
        _ => {
            Err(refuse(Some(s.slot), Errno::EINVAL, format!("fcntl command {cmd} on simulated fd {fd} is not served")))
        }
    })
}

/// `flock`: shared and exclusive locks between this run's descriptions.
/// A blocking request that conflicts would wait for this same thread
/// forever, so it is refused rather than hung.
pub fn flock(fd: i32, operation: i32) -> Result<(), Errno> {
    with_fd(fd, "flock", |s| {
        let nonblocking = operation & libc::LOCK_NB != 0;
        let wanted = match operation & !libc::LOCK_NB {
            libc::LOCK_UN => {
                s.fds.get(fd)?.flock = None;
                return Ok(());
            }
            libc::LOCK_SH => Flock::Shared,
            libc::LOCK_EX => Flock::Exclusive,
            _ => return Err(Errno::EINVAL),
        };
        let path = s.fds.get(fd)?.disk_path.clone();
        if s.fds.flock_conflict(fd, &path, wanted) {
            if nonblocking {
                return Err(Errno::EWOULDBLOCK);
            }
            let what = format!("blocking flock on {} (fd {fd}) held by another description of this one-thread run: it would never be granted", path.display());
            return Err(refuse(Some(s.slot), Errno(libc::EDEADLK), what));
        }
        s.fds.get(fd)?.flock = Some(wanted);
        Ok(())
    })
}

/// `fdopendir`: start a directory stream on descriptor `fd` (which it
/// then owns), listed once (`serve_dents::listing`).
pub fn fdopendir(fd: i32) -> Result<(), Errno> {
    with_fd(fd, "fdopendir", |s| {
        let d = s.fds.get(fd)?;
        if !matches!(d.target, Target::Dir) {
            return Err(Errno::ENOTDIR);
        }
        let dir = d.disk_path.clone();
        let stream = crate::serve_dents::listing(s, &dir)?;
        s.streams.insert(fd, stream);
        Ok(())
    })
}

/// `readdir`: the stream's next entry, `None` at its end.
pub fn readdir(fd: i32) -> Result<Option<Entry>, Errno> {
    with_fd(fd, "readdir", |s| Ok(s.streams.get_mut(&fd).ok_or(Errno::EBADF)?.next_entry()))
}

/// `closedir`: end the stream and close its descriptor.
pub fn closedir(fd: i32) -> Result<(), Errno> {
    with_fd(fd, "closedir", |s| {
        s.streams.remove(&fd).ok_or(Errno::EBADF)?;
        s.fds.close(fd)
    })
}
