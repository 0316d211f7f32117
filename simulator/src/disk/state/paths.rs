//! Paths on the simulated disk: splitting a path into its directory and
//! file name, and finding a directory by its path. Every file call does
//! both, so both go by bytes where bytes decide (a path spelled plainly,
//! a handful of directories) and fall back to `Path`'s component-wise
//! parse and comparison elsewhere; the tests hold the fast way to what
//! `Path` says. Apart from the file system's changes (`mod.rs`) because
//! this is lookup only: nothing here changes the disk.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::super::data::InodeId;
use super::super::dir::Dir;
use super::FileSystem;

pub(super) fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file or directory", path.display()))
}

/// Split `path` into its directory and its (UTF-8) file name.
pub(super) fn split(path: &Path) -> io::Result<(&Path, &str)> {
    if let Some((dir, name)) = split_plain(path) {
        return Ok((dir, name));
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a file path", path.display())));
    };
    let Some(name) = name.to_str() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: name is not UTF-8", path.display())));
    };
    Ok((dir, name))
}

/// [`split`] by bytes, at the last `/`, where that splits as `Path` does:
/// every file call splits its path, and `Path` parses components to find
/// the parent. `Path` takes a last component that is a name (not empty,
/// `.` or `..`) as the file name, and the bytes before its `/` as the
/// parent once trailing `/`s and `.` components are trimmed; where there
/// are none to trim, the bytes are the parent (`/` itself for a file at
/// the root). `None`: any other path, for `Path` to split.
fn split_plain(path: &Path) -> Option<(&Path, &str)> {
    let bytes = spelling(path);
    let at = bytes.iter().rposition(|&byte| byte == b'/')?;
    let (dir, name) = (&bytes[..at], &bytes[at + 1..]);
    if matches!(name, b"" | b"." | b"..") {
        return None;
    }
    let dir = match dir {
        b"" => &bytes[..1],
        b"." => return None,
        _ if dir.ends_with(b"/") || dir.ends_with(b"/.") => return None,
        _ => dir,
    };
    Some((Path::new(OsStr::from_bytes(dir)), std::str::from_utf8(name).ok()?))
}

/// Up to this many directories, a lookup compares spellings by bytes
/// ([`FileSystem::dir_at`]); the engine makes one.
const FEW_DIRS: usize = 8;

/// Whether `path` is spelled as its components print it back: no empty
/// component (`//`, a trailing `/`) and no `.` one, which `Path` skips
/// when it compares. Two plain spellings of one path are the same bytes.
fn plain(path: &[u8]) -> bool {
    if path == b"/" {
        return true;
    }
    let rest = path.strip_prefix(b"/").unwrap_or(path);
    // The current component's length, and whether it is `.` so far.
    let (mut part_bytes, mut dot) = (0usize, false);
    for &byte in rest {
        if byte == b'/' {
            if part_bytes == 0 || (part_bytes == 1 && dot) {
                return false;
            }
            part_bytes = 0;
        } else {
            dot = part_bytes == 0 && byte == b'.';
            part_bytes += 1;
        }
    }
    part_bytes > 1 || (part_bytes == 1 && !dot)
}

/// What [`FileSystem::dir_by_bytes`] could tell of a directory path.
enum ByBytes {
    /// The key at this position of `dirs` is spelled as the path is.
    At(usize),
    /// No key names the path.
    Absent,
    /// Only `Path`'s comparison can tell.
    Unknown,
}

/// A path's bytes as spelled.
fn spelling(path: &Path) -> &[u8] {
    path.as_os_str().as_encoded_bytes()
}

impl FileSystem {
    pub(super) fn dir(&self, path: &Path) -> io::Result<&Dir> {
        self.dir_at(path).ok_or_else(|| not_found(path))
    }

    pub(super) fn dir_mut(&mut self, path: &Path) -> io::Result<&mut Dir> {
        match self.dir_by_bytes(path) {
            ByBytes::At(index) => Ok(self.dirs.values_mut().nth(index).expect("an index into dirs")),
            ByBytes::Absent => Err(not_found(path)),
            ByBytes::Unknown => self.dirs.get_mut(path).ok_or_else(|| not_found(path)),
        }
    }

    /// The directory at `path`, if there is one: what `dirs.get(path)`
    /// finds, found by bytes where they decide it ([`FileSystem::dir_by_bytes`]).
    pub(super) fn dir_at(&self, path: &Path) -> Option<&Dir> {
        match self.dir_by_bytes(path) {
            ByBytes::At(index) => self.dirs.values().nth(index),
            ByBytes::Absent => None,
            ByBytes::Unknown => self.dirs.get(path),
        }
    }

    /// Where `dirs` holds `path`, told by bytes where they decide it.
    /// Every file call looks its directory up (and an open asks whether
    /// its path is one), and `Path`'s component-wise comparison cost more
    /// than the rest of the lookup. A key spelled as `path` is byte for
    /// byte is the one `Path` finds too; see
    /// [`FileSystem::absent_by_bytes`] for a miss. The position, not a
    /// borrow: [`FileSystem::dir_mut`] borrows mutably what this finds.
    fn dir_by_bytes(&self, path: &Path) -> ByBytes {
        if self.dirs.len() > FEW_DIRS {
            return ByBytes::Unknown;
        }
        let wanted = spelling(path);
        if let Some(index) = self.dirs.keys().position(|key| spelling(key) == wanted) {
            return ByBytes::At(index);
        }
        if self.absent_by_bytes(wanted) {
            ByBytes::Absent
        } else {
            ByBytes::Unknown
        }
    }

    /// Whether `path` is a directory.
    pub fn is_dir(&self, path: &Path) -> bool {
        self.dir_at(path).is_some()
    }

    /// Whether no key of `dirs` names `wanted`, given that none is spelled
    /// as it is: two plain spellings (see [`plain`]) name the same path
    /// exactly when their bytes are equal, so if `wanted` and every key
    /// are plain, there is none. `false`: only `Path` can tell.
    fn absent_by_bytes(&self, wanted: &[u8]) -> bool {
        plain(wanted) && self.dirs.keys().all(|key| plain(spelling(key)))
    }

    /// The inode `path` names now.
    pub fn lookup(&self, path: &Path) -> io::Result<InodeId> {
        let (dir, name) = split(path)?;
        self.dir(dir)?.volatile.get(name).copied().ok_or_else(|| not_found(path))
    }

    /// Whether `path` names a file or a directory now.
    pub fn exists(&self, path: &Path) -> bool {
        self.is_dir(path) || self.lookup(path).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn a_plain_split_is_the_one_path_makes() {
        let spellings = [
            "/db/appendonly.aof",
            "/x",
            "/db/sub/f",
            "rel/f",
            "/db/..",
            "/db/",
            "/db//f",
            "/db/./f",
            "/db/.",
            "/",
            "f",
            "/./db/f",
            "./f",
            "//f",
            "a/.",
            ".//f",
            "/db/f.",
            "/db/.f",
            "/db/..f",
            "db/../f",
            "/../f",
        ];
        for spelling in spellings {
            let path = Path::new(spelling);
            let by_path = path.parent().zip(path.file_name().and_then(|name| name.to_str()));
            if let Some(split) = split_plain(path) {
                assert_eq!(Some(split), by_path, "{spelling:?}");
            }
        }
        assert!(split_plain(Path::new("/db/appendonly.aof")).is_some());
    }

    #[test]
    fn a_directory_found_by_bytes_is_the_one_a_path_lookup_finds() {
        let mut fs = FileSystem::default();
        fs.create_dir_all(Path::new("/db"));
        fs.create_dir_all(Path::new("/db/sub"));
        fs.create_dir_all(Path::new("rel/x"));
        let spellings = [
            "/",
            "/db",
            "/db/",
            "//db",
            "/db/.",
            "/./db",
            "/db/sub",
            "/db//sub/",
            "rel",
            "./rel",
            "rel/x",
            "/rel",
            "",
            "/dbx",
            "/.",
            "/db/.s",
        ];
        for spelling in spellings {
            let path = Path::new(spelling);
            let by_map = fs.dirs.get(path).map(|dir| dir as *const Dir);
            assert_eq!(fs.dir_at(path).map(|dir| dir as *const Dir), by_map, "{spelling:?}");
            assert_eq!(fs.is_dir(path), by_map.is_some(), "{spelling:?}");
        }
        // A key spelled unplainly leaves the lookup to the map.
        fs.dirs.insert(PathBuf::from("/odd/"), Dir::default());
        assert!(fs.is_dir(Path::new("/odd")) && fs.is_dir(Path::new("/odd/")));
    }
}
