//! [`Meta`]: what `stat` says about a simulated file or directory.
//!
//! The disk keeps contents, not metadata: the layer reports a type, a
//! length, and an inode number derived from the disk path (FNV-1a, so it
//! is the same in every run); modes are fixed (`0644` files, `0755`
//! directories), times are zero (the simulation has no wall clock).

use std::path::Path;

/// A served `stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub is_dir: bool,
    pub len_bytes: u64,
    pub ino: u64,
}

impl Meta {
    /// A regular file at `disk_path` of `len_bytes`.
    pub fn file(disk_path: &Path, len_bytes: u64) -> Meta {
        Meta { is_dir: false, len_bytes, ino: ino_of(disk_path) }
    }

    /// The directory at `disk_path`.
    pub fn dir(disk_path: &Path) -> Meta {
        Meta { is_dir: true, len_bytes: 4096, ino: ino_of(disk_path) }
    }

    /// `st_mode`: type and permission bits.
    pub fn mode(&self) -> u32 {
        if self.is_dir {
            libc::S_IFDIR | 0o755
        } else {
            libc::S_IFREG | 0o644
        }
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
