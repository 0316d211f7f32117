//! [`Meta`]: what `stat` says about a simulated file or directory.
//!
//! The disk keeps contents, not metadata: the layer reports a type, a
//! length, and an inode number derived from the disk path (FNV-1a, so it
//! is the same in every run); modes and times are the session's record
//! ([`crate::attrs`]): `0644` files and `0755` directories, and the
//! virtual clock's start, unless the program set or changed them in this
//! session. One link each (the disk has no hard links).

use std::path::Path;

use crate::attrs::Attrs;
use crate::entropy::CLOCK_START_S;

/// The time a name reports when the session recorded none: the virtual
/// clock's start (never the wall clock, never 1970).
pub const DEFAULT_TIME_NS: u64 = CLOCK_START_S * 1_000_000_000;

/// A served `stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub is_dir: bool,
    pub len_bytes: u64,
    pub ino: u64,
    /// Permission bits.
    pub perm: u32,
    pub atime_ns: u64,
    pub mtime_ns: u64,
    pub ctime_ns: u64,
}

impl Meta {
    /// A regular file at `disk_path` of `len_bytes`, with its recorded
    /// `attrs`.
    pub fn file(disk_path: &Path, len_bytes: u64, attrs: Attrs) -> Meta {
        Meta::of(false, len_bytes, disk_path, attrs)
    }

    /// The directory at `disk_path`, with its recorded `attrs`.
    pub fn dir(disk_path: &Path, attrs: Attrs) -> Meta {
        Meta::of(true, 4096, disk_path, attrs)
    }

    fn of(is_dir: bool, len_bytes: u64, disk_path: &Path, attrs: Attrs) -> Meta {
        let default_perm = if is_dir { 0o755 } else { 0o644 };
        let mtime_ns = attrs.mtime_ns.unwrap_or(DEFAULT_TIME_NS);
        Meta {
            is_dir,
            len_bytes,
            ino: ino_of(disk_path),
            perm: attrs.perm.unwrap_or(default_perm),
            atime_ns: attrs.atime_ns.unwrap_or(mtime_ns),
            mtime_ns,
            ctime_ns: attrs.ctime_ns.unwrap_or(mtime_ns),
        }
    }

    /// `st_mode`: type and permission bits.
    pub fn mode(&self) -> u32 {
        debug_assert_eq!(self.perm & !0o7777, 0);
        (if self.is_dir { libc::S_IFDIR } else { libc::S_IFREG }) | self.perm
    }
}

/// A stable, non-zero inode number for `disk_path`.
pub fn ino_of(disk_path: &Path) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in disk_path.as_os_str().as_encoded_bytes() {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash.max(1)
}
