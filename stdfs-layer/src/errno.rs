//! [`Errno`]: how a served call fails, in libc's words.
//!
//! The simulated disk speaks `std::io::Error`; a program calling libc
//! expects `-1` and an `errno`. This file owns the one translation between
//! them, so every served call reports a given failure the same way.

use std::io;

/// An `errno` value a served call fails with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const EBADF: Errno = Errno(libc::EBADF);
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EISDIR: Errno = Errno(libc::EISDIR);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const EXDEV: Errno = Errno(libc::EXDEV);
    pub const EWOULDBLOCK: Errno = Errno(libc::EWOULDBLOCK);
    pub const ENOTSUP: Errno = Errno(libc::ENOTSUP);
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
}

/// The simulated disk's error as a libc caller would see it. The kinds
/// the disk returns (`simulator/src/disk`) map to their POSIX codes; anything
/// else — a simulated EIO, a stale handle after a power loss — is `EIO`.
impl From<io::Error> for Errno {
    fn from(error: io::Error) -> Errno {
        if let Some(code) = error.raw_os_error() {
            return Errno(code);
        }
        Errno(match error.kind() {
            io::ErrorKind::NotFound => libc::ENOENT,
            io::ErrorKind::AlreadyExists => libc::EEXIST,
            io::ErrorKind::PermissionDenied => libc::EBADF,
            io::ErrorKind::StorageFull => libc::ENOSPC,
            io::ErrorKind::IsADirectory => libc::EISDIR,
            io::ErrorKind::NotADirectory => libc::ENOTDIR,
            io::ErrorKind::InvalidInput => libc::EINVAL,
            io::ErrorKind::WouldBlock => libc::EWOULDBLOCK,
            io::ErrorKind::Unsupported => libc::ENOTSUP,
            io::ErrorKind::DirectoryNotEmpty => libc::ENOTEMPTY,
            io::ErrorKind::ResourceBusy => libc::EBUSY,
            _ => libc::EIO,
        })
    }
}
