//! Directory streams (`opendir`/`fdopendir`, `readdir`, `closedir`): a
//! listing of a simulated directory taken when the stream opens, read one
//! entry at a time.
//!
//! A stream is keyed by the directory descriptor it reads (so `dirfd`
//! answers it, and `statx(dirfd(d), name)` resolves under it, as std's
//! `read_dir` does). Its entries are `.`, `..`, then the disk's files and
//! the session's subdirectories, merged in byte order: the same order in
//! every run. This file owns the listing; the calls that open, read and
//! close a stream on a descriptor are served with the other descriptor
//! calls (`crate::serve_fd`).

use std::collections::BTreeMap;
use std::ffi::OsString;

use std::path::{Path, PathBuf};

use crate::meta::ino_of;

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

impl Stream {
    /// The listing of disk directory `dir`: `.`, `..`, then `files` (the
    /// disk's file names in it), `subdirs` (its directory names in it) and
    /// those of `dirs` (the session's directories) that are its children,
    /// in byte order.
    pub fn list(
        dir: &Path,
        files: Vec<OsString>,
        subdirs: Vec<OsString>,
        dirs: &std::collections::BTreeSet<PathBuf>,
    ) -> Stream {
        let mut names: BTreeMap<OsString, bool> = files.into_iter().map(|n| (n, false)).collect();
        names.extend(subdirs.into_iter().map(|n| (n, true)));
        for sub in dirs.iter().filter(|p| p.parent() == Some(dir)) {
            names.insert(sub.file_name().expect("a child has a name").to_os_string(), true);
        }
        let mut entries = vec![
            Entry { name: ".".into(), is_dir: true, ino: ino_of(dir) },
            Entry { name: "..".into(), is_dir: true, ino: ino_of(dir.parent().unwrap_or(dir)) },
        ];
        entries.extend(names.into_iter().map(|(name, is_dir)| {
            let ino = ino_of(&dir.join(&name));
            Entry { name, is_dir, ino }
        }));
        Stream { entries, next: 0 }
    }

    /// The entry [`Stream::next_entry`] would return, and its position in
    /// the listing (from 0).
    pub fn peek(&self) -> Option<(&Entry, usize)> {
        self.entries.get(self.next).map(|e| (e, self.next))
    }

    /// The next entry, `None` at the end.
    pub fn next_entry(&mut self) -> Option<Entry> {
        let entry = self.entries.get(self.next).cloned();
        self.next += usize::from(entry.is_some());
        debug_assert!(self.next <= self.entries.len());
        entry
    }
}
