//! [`Attrs`]: what a program set or did to a simulated name beyond its
//! bytes — permission bits (`chmod`), access and modification times
//! (`utimensat`, and every write) — which `stat` reports.
//!
//! The simulated disk keeps contents and names, not metadata, so a
//! session keeps these itself ([`AttrTable`], keyed by disk path): they
//! are recorded and reported, never enforced (a mode does not stop a
//! write), and they live as long as the session (one open of the engine):
//! after a crash or a restart every name reads the defaults again (`0644`,
//! `0755`, and the times of the clock's start). Times are the session's
//! virtual clock ([`crate::entropy`]), read without advancing it, so a
//! write never moves the time the program itself reads: the same seed
//! reports the same times, and no wall clock is ever seen.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A name's recorded metadata; `None`: the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    /// Permission bits (`mode & 0o7777`) as `chmod` set them.
    pub perm: Option<u32>,
    pub atime_ns: Option<u64>,
    pub mtime_ns: Option<u64>,
    /// The last change to the file or its metadata.
    pub ctime_ns: Option<u64>,
}

/// A session's [`Attrs`], by disk path.
#[derive(Default)]
pub struct AttrTable {
    by_path: BTreeMap<PathBuf, Attrs>,
}

impl AttrTable {
    /// `path`'s metadata (all defaults if never set).
    pub fn of(&self, path: &Path) -> Attrs {
        self.by_path.get(path).copied().unwrap_or_default()
    }

    fn entry(&mut self, path: &Path) -> &mut Attrs {
        if !self.by_path.contains_key(path) {
            self.by_path.insert(path.to_path_buf(), Attrs::default());
        }
        self.by_path.get_mut(path).expect("inserted above")
    }

    /// `path`'s contents changed at `now_ns` (a write, a truncation, a
    /// creation): its modification and change times.
    pub fn modified(&mut self, path: &Path, now_ns: u64) {
        let attrs = self.entry(path);
        attrs.mtime_ns = Some(now_ns);
        attrs.ctime_ns = Some(now_ns);
    }

    /// `chmod`: the permission bits, at `now_ns`.
    pub fn set_perm(&mut self, path: &Path, perm: u32, now_ns: u64) {
        debug_assert_eq!(perm & !0o7777, 0, "permission bits only");
        let attrs = self.entry(path);
        attrs.perm = Some(perm);
        attrs.ctime_ns = Some(now_ns);
    }

    /// `utimensat`: either time (`None`: left as it is), at `now_ns`.
    pub fn set_times(&mut self, path: &Path, atime_ns: Option<u64>, mtime_ns: Option<u64>, now_ns: u64) {
        let attrs = self.entry(path);
        attrs.atime_ns = atime_ns.or(attrs.atime_ns);
        attrs.mtime_ns = mtime_ns.or(attrs.mtime_ns);
        attrs.ctime_ns = Some(now_ns);
    }

    /// A rename: `from`'s metadata is now `to`'s (what `to` had is gone),
    /// and for a directory, that of every name under it too.
    pub fn renamed(&mut self, from: &Path, to: &Path) {
        self.by_path.retain(|path, _| !path.starts_with(to));
        let moved: Vec<PathBuf> = self.by_path.keys().filter(|path| path.starts_with(from)).cloned().collect();
        for old in moved {
            let attrs = self.by_path.remove(&old).expect("listed just now");
            let rest = old.strip_prefix(from).expect("listed by this prefix");
            self.by_path.insert(if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) }, attrs);
        }
    }

    /// An unlink: the name's metadata goes with it.
    pub fn removed(&mut self, path: &Path) {
        self.by_path.remove(path);
    }
}
