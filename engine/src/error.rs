//! The engine's one error type. Every failure is typed and names what and
//! where: an I/O error names the operation and the path, corruption names
//! the file and the byte offset. The engine never panics on bad input or
//! bad bytes, and never returns silently different data.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// The file-system operation an [`Error::Io`] failed in. A type, not a
/// string, so that the decisions taken on it — a failed fsync (of a file
/// or a directory) poisons the store, see [`IoOp::is_sync`] — are made on
/// the operation and not on how it happens to be spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoOp {
    /// Opening an existing file.
    Open,
    /// Creating (or truncating) a file.
    Create,
    /// Creating a directory and its parents.
    CreateDirAll,
    /// Listing a directory.
    ListDir,
    /// Taking a directory's lock.
    Lock,
    /// Mapping a file into memory.
    Map,
    /// Reading a file.
    Read,
    /// Writing a file.
    Write,
    /// Cutting a file to a length.
    Truncate,
    /// Asking a file's length or whether it exists.
    Stat,
    /// Renaming a file.
    Rename,
    /// Removing a file.
    Unlink,
    /// Fsyncing a file.
    Sync,
    /// Fsyncing a directory (its entries).
    SyncDir,
}

impl IoOp {
    /// The operation's name, as error messages print it.
    pub fn name(self) -> &'static str {
        match self {
            IoOp::Open => "open",
            IoOp::Create => "create",
            IoOp::CreateDirAll => "create_dir_all",
            IoOp::ListDir => "list_dir",
            IoOp::Lock => "lock",
            IoOp::Map => "map",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Truncate => "truncate",
            IoOp::Stat => "stat",
            IoOp::Rename => "rename",
            IoOp::Unlink => "unlink",
            IoOp::Sync => "sync",
            IoOp::SyncDir => "sync_dir",
        }
    }

    /// Whether this is an fsync, of a file or a directory: a failed one
    /// may have dropped dirty pages for good, so it poisons the store.
    pub fn is_sync(self) -> bool {
        matches!(self, IoOp::Sync | IoOp::SyncDir)
    }
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that can go wrong in the engine.
#[derive(Debug)]
pub enum Error {
    /// The file system failed an operation.
    Io {
        /// What the engine was doing.
        op: IoOp,
        /// The file or directory it was doing it to.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// Bytes on disk are not what the engine wrote: refused, not healed.
    Corrupt {
        /// The file holding the bad bytes.
        file: PathBuf,
        /// Where in the file the bad bytes start.
        offset_bytes: u64,
        /// What is wrong with them.
        reason: String,
    },
    /// An earlier fsync failed; the store refuses every write until it is
    /// reopened (the failed sync may have dropped dirty pages for good).
    Poisoned {
        /// The failure that poisoned the store.
        cause: String,
    },
    /// The caller asked for something the engine does not do: a bad
    /// command, a key out of order, a wrong type. Nothing was changed.
    Invalid(String),
    /// Another opener (in this process or another) holds the store
    /// directory's lock: a writer excludes everyone, read-only openers
    /// exclude writers. The refused open read and changed nothing.
    Locked {
        /// The store directory.
        dir: PathBuf,
    },
    /// A file was written by an older on-disk format than this build reads
    /// (before every record was bound to its place): refused, nothing read
    /// past the version and nothing changed. Such a store is not upgraded
    /// in place; see the README ("Format versions").
    OldFormat {
        /// The file that names the older version.
        file: PathBuf,
        /// The version the file says it is in.
        version: u32,
        /// The newest version this build reads (for the manifest, version
        /// 2 is read too: its records were already bound to their place).
        reads: u32,
    },
    /// A file names an on-disk format version this build does not know (a
    /// newer build's, most likely), in a header whose checksum held:
    /// refused, nothing read past the version and nothing changed.
    UnknownFormat {
        /// The file that names the version.
        file: PathBuf,
        /// The version the file says it is in.
        version: u32,
        /// The newest version this build reads.
        reads: u32,
    },
    /// The store was opened read-only ([`crate::store::Store::open_read_only`])
    /// and the call would write: refused, nothing changed.
    ReadOnly {
        /// The store directory.
        dir: PathBuf,
    },
}

/// Shorthand for the engine's results.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An [`Error::Io`] for `op` on `path`.
    pub fn io(op: IoOp, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io { op, path: path.into(), source }
    }

    /// An [`Error::Corrupt`] at `offset_bytes` of `file`.
    pub fn corrupt(file: impl Into<PathBuf>, offset_bytes: u64, reason: impl Into<String>) -> Self {
        Error::Corrupt { file: file.into(), offset_bytes, reason: reason.into() }
    }

    /// Whether this is corruption of stored bytes.
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Error::Corrupt { .. })
    }

    /// Whether stored bytes were refused: as corrupt, or as written by an
    /// older or unknown format version ([`Error::OldFormat`],
    /// [`Error::UnknownFormat`]).
    pub fn refuses_bytes(&self) -> bool {
        matches!(self, Error::Corrupt { .. } | Error::OldFormat { .. } | Error::UnknownFormat { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, path, source } => write!(f, "{op} {}: {source}", path.display()),
            Error::Corrupt { file, offset_bytes, reason } => {
                write!(f, "corrupt {} at byte {offset_bytes}: {reason}", file.display())
            }
            Error::Poisoned { cause } => {
                write!(f, "store is poisoned by an earlier failure ({cause}); reopen it")
            }
            Error::Invalid(why) => write!(f, "invalid: {why}"),
            Error::Locked { dir } => write!(
                f,
                "store directory is in use by another process (or another opener in this one): {} is locked",
                dir.display()
            ),
            Error::ReadOnly { dir } => {
                write!(f, "store {} is opened read-only: writes are refused", dir.display())
            }
            Error::OldFormat { file, version, reads } => write!(
                f,
                "{} is in on-disk format version {version}, older than the version {reads} this build reads \
                 (records bound to their place): refused, nothing changed; open it with a build that reads \
                 version {version}, copy its content out, and load it into a new store",
                file.display()
            ),
            Error::UnknownFormat { file, version, reads } => write!(
                f,
                "{} is in on-disk format version {version}, which this build does not know (it reads up to \
                 version {reads}): refused, nothing changed; open it with the build that wrote it",
                file.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [IoOp; 14] = [
        IoOp::Open,
        IoOp::Create,
        IoOp::CreateDirAll,
        IoOp::ListDir,
        IoOp::Lock,
        IoOp::Map,
        IoOp::Read,
        IoOp::Write,
        IoOp::Truncate,
        IoOp::Stat,
        IoOp::Rename,
        IoOp::Unlink,
        IoOp::Sync,
        IoOp::SyncDir,
    ];

    #[test]
    fn only_the_two_fsyncs_are_syncs_and_names_are_distinct() {
        let syncs: Vec<IoOp> = ALL.into_iter().filter(|op| op.is_sync()).collect();
        assert_eq!(syncs, [IoOp::Sync, IoOp::SyncDir]);
        let names: std::collections::BTreeSet<&str> = ALL.iter().map(|op| op.name()).collect();
        assert_eq!(names.len(), ALL.len());
        let error = Error::io(IoOp::SyncDir, "/db", io::Error::other("EIO"));
        assert_eq!(error.to_string(), "sync_dir /db: EIO");
    }
}
