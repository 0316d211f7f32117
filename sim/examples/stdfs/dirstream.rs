//! Directory streams (`opendir`/`fdopendir`, `readdir`, `closedir`): a
//! listing of a simulated directory taken when the stream opens, read one
//! entry at a time.
//!
//! A stream is keyed by the directory descriptor it reads (so `dirfd`
//! answers it, and `statx(dirfd(d), name)` resolves under it, as std's
//! `read_dir` does). Its entries are `.`, `..`, then the disk's files and
//! the session's subdirectories, merged in byte order: the same order in
//! every run.

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::errno::Errno;
use crate::files::Target;
use crate::meta::ino_of;
use crate::session::with_fd;

/// One listed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub is_dir: bool,
    pub ino: u64,
}

/// An open stream's listing and position.
pub struct Stream {
    entries: Vec<Entry>,
    next: usize,
}

/// Start a stream on directory descriptor `fd` (which it then owns).
pub fn fdopendir(fd: i32) -> Result<(), Errno> {
    with_fd(fd, "fdopendir", |s| {
        let d = s.fds.get(fd)?;
        if !matches!(d.target, Target::Dir) {
            return Err(Errno::ENOTDIR);
        }
        let dir = d.disk_path.clone();
        let mut names: BTreeMap<OsString, bool> = s.vfs.list_dir(&dir)?.into_iter().map(|n| (n, false)).collect();
        for sub in s.dirs.iter().filter(|p| p.parent() == Some(dir.as_path())) {
            names.insert(sub.file_name().expect("a child has a name").to_os_string(), true);
        }
        let mut entries = vec![
            Entry { name: ".".into(), is_dir: true, ino: ino_of(&dir) },
            Entry { name: "..".into(), is_dir: true, ino: ino_of(dir.parent().unwrap_or(&dir)) },
        ];
        entries.extend(names.into_iter().map(|(name, is_dir)| {
            let ino = ino_of(&dir.join(&name));
            Entry { name, is_dir, ino }
        }));
        s.streams.insert(fd, Stream { entries, next: 0 });
        Ok(())
    })
}

/// The stream's next entry, `None` at its end.
pub fn readdir(fd: i32) -> Result<Option<Entry>, Errno> {
    with_fd(fd, "readdir", |s| {
        let stream = s.streams.get_mut(&fd).ok_or(Errno::EBADF)?;
        let entry = stream.entries.get(stream.next).cloned();
        stream.next += usize::from(entry.is_some());
        Ok(entry)
    })
}

/// End the stream and close its descriptor.
pub fn closedir(fd: i32) -> Result<(), Errno> {
    with_fd(fd, "closedir", |s| {
        s.streams.remove(&fd).ok_or(Errno::EBADF)?;
        s.fds.close(fd)
    })
}
