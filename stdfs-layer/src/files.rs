//! Open file descriptions and the fake descriptors naming them: what
//! `open` hands out, `dup` shares and `close` lets go of.
//!
//! As in POSIX, a description (its cursor, its access mode, its `flock`)
//! is shared by every descriptor duplicated from it, and closed with the
//! last of them. A description holds the disk's own file handle, so the
//! disk sees one open per `open`, and its last close drops the handle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use simkit::vfs::VfsFile;

use crate::errno::Errno;

/// What a description is open on.
pub enum Target {
    /// A regular file, through the disk's handle.
    File(Box<dyn VfsFile>),
    /// A directory (opened to fsync it, or to list it).
    Dir,
}

/// How a description was opened.
#[derive(Clone, Copy, Debug, Default)]
pub struct Access {
    pub read: bool,
    pub write: bool,
    /// `O_APPEND`: every write lands at the end.
    pub append: bool,
    /// `O_SYNC`/`O_DSYNC`: every write is followed by the file's sync.
    pub sync_each_write: EachWrite,
}

/// What the open flags make of each write (`open(2)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EachWrite {
    /// Durable at the next sync.
    #[default]
    Buffered,
    /// `O_DSYNC`: followed by the file's data sync (`fdatasync`).
    DataSync,
    /// `O_SYNC` (which carries `O_DSYNC`'s bit too): by its `fsync`.
    Sync,
}

impl EachWrite {
    /// From `open`'s flags.
    pub fn of_flags(flags: i32) -> EachWrite {
        if flags & libc::O_SYNC == libc::O_SYNC {
            EachWrite::Sync
        } else if flags & libc::O_DSYNC != 0 {
            EachWrite::DataSync
        } else {
            EachWrite::Buffered
        }
    }
}

/// A `flock` a description holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flock {
    Shared,
    Exclusive,
}

/// One open file description.
pub struct Description {
    /// The disk's path of what is open.
    pub disk_path: PathBuf,
    pub target: Target,
    pub access: Access,
    pub cursor_bytes: u64,
    pub flock: Option<Flock>,
    /// How many descriptors name it.
    refs: u32,
}

/// A session's descriptors and descriptions.
pub struct FdTable {
    first_fd: i32,
    fds_max: i32,
    /// Where this table's numbering starts, from `first_fd` (wrapping at
    /// `fds_max`): where the slot's previous table stopped.
    start: i32,
    /// Descriptors named so far.
    issued: i32,
    /// Descriptor to (description id, close-on-exec).
    fds: BTreeMap<i32, (u64, bool)>,
    descriptions: BTreeMap<u64, Description>,
    next_description: u64,
}

impl FdTable {
    /// A table numbering its descriptors in `first_fd .. first_fd +
    /// fds_max`, from `first_fd + start` on (wrapping), at most `fds_max`
    /// over its life (descriptors are not reused: a stale one stays bad).
    /// A session starts where its slot's previous one stopped
    /// ([`FdTable::next_start`]), so a stale descriptor of an ended run
    /// names nothing of the next run in the slot until the slot has named
    /// `fds_max` more.
    pub fn new(first_fd: i32, fds_max: i32, start: i32) -> FdTable {
        assert!(first_fd > 0 && fds_max > 0 && (0..fds_max).contains(&start));
        FdTable {
            first_fd,
            fds_max,
            start,
            issued: 0,
            fds: BTreeMap::new(),
            descriptions: BTreeMap::new(),
            next_description: 0,
        }
    }

    /// A new description and the descriptor naming it.
    pub fn open(&mut self, disk_path: PathBuf, target: Target, access: Access, cloexec: bool) -> Result<i32, Errno> {
        let id = self.next_description;
        self.next_description += 1;
        let description = Description { disk_path, target, access, cursor_bytes: 0, flock: None, refs: 0 };
        self.descriptions.insert(id, description);
        self.name(id, cloexec)
    }

    /// Another descriptor for `fd`'s description (`dup`).
    pub fn dup(&mut self, fd: i32, cloexec: bool) -> Result<i32, Errno> {
        let id = self.fds.get(&fd).ok_or(Errno::EBADF)?.0;
        self.name(id, cloexec)
    }

    /// `dup2(fd, low)` in a preloaded program (`crate::live`): `low`, a
    /// number below the table's range that the caller picked (a shell's
    /// `> FILE` onto fd 1), names `fd`'s description too; a description
    /// `low` named before is let go of first, as the kernel closes it.
    pub fn place(&mut self, fd: i32, low: i32, cloexec: bool) -> Result<(), Errno> {
        assert!((0..self.first_fd).contains(&low), "a placed descriptor lies below the table's own numbers");
        let id = self.fds.get(&fd).ok_or(Errno::EBADF)?.0;
        if self.fds.contains_key(&low) {
            self.close(low)?;
        }
        self.fds.insert(low, (id, cloexec));
        self.descriptions.get_mut(&id).expect("named descriptions exist").refs += 1;
        Ok(())
    }

    fn name(&mut self, id: u64, cloexec: bool) -> Result<i32, Errno> {
        if self.issued >= self.fds_max {
            return Err(Errno(libc::EMFILE));
        }
        let fd = self.first_fd + (self.start + self.issued) % self.fds_max;
        self.issued += 1;
        debug_assert!(!self.fds.contains_key(&fd), "a descriptor is named once in a table's life");
        self.fds.insert(fd, (id, cloexec));
        self.descriptions.get_mut(&id).expect("named descriptions exist").refs += 1;
        Ok(fd)
    }

    /// Where the next table of this slot starts its numbering.
    pub fn next_start(&self) -> i32 {
        (self.start + self.issued) % self.fds_max
    }

    /// The description `fd` names.
    /// How many descriptors are open.
    pub fn open_count(&self) -> usize {
        self.fds.len()
    }

    pub fn get(&mut self, fd: i32) -> Result<&mut Description, Errno> {
        let id = self.fds.get(&fd).ok_or(Errno::EBADF)?.0;
        Ok(self.descriptions.get_mut(&id).expect("named descriptions exist"))
    }

    /// `fd`'s close-on-exec flag, which `set` replaces when given.
    pub fn cloexec(&mut self, fd: i32, set: Option<bool>) -> Result<bool, Errno> {
        let entry = self.fds.get_mut(&fd).ok_or(Errno::EBADF)?;
        if let Some(on) = set {
            entry.1 = on;
        }
        Ok(entry.1)
    }

    /// Close `fd`; its description goes with its last descriptor.
    pub fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let (id, _) = self.fds.remove(&fd).ok_or(Errno::EBADF)?;
        let description = self.descriptions.get_mut(&id).expect("named descriptions exist");
        assert!(description.refs > 0);
        description.refs -= 1;
        if description.refs == 0 {
            self.descriptions.remove(&id);
        }
        Ok(())
    }

    /// Whether a description other than `fd`'s holds a `flock` on
    /// `disk_path` that `wanted` conflicts with.
    pub fn flock_conflict(&self, fd: i32, disk_path: &Path, wanted: Flock) -> bool {
        let mine = self.fds.get(&fd).map(|entry| entry.0);
        self.descriptions.iter().any(|(id, d)| {
            Some(*id) != mine
                && d.disk_path == disk_path
                && d.flock.is_some_and(|held| held == Flock::Exclusive || wanted == Flock::Exclusive)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_low_descriptor_shares_the_description_until_its_last_close() {
        let mut table = FdTable::new(1 << 30, 1 << 20, 0);
        let fd = table.open(PathBuf::from("/out"), Target::Dir, Access::default(), false).unwrap();
        table.get(fd).unwrap().cursor_bytes = 7;
        table.place(fd, 1, false).unwrap();
        assert_eq!(table.get(1).unwrap().cursor_bytes, 7, "the same description");
        table.close(fd).unwrap();
        assert_eq!(table.open_count(), 1);
        assert_eq!(table.get(1).unwrap().disk_path, Path::new("/out"), "alive while fd 1 names it");
        let other = table.open(PathBuf::from("/other"), Target::Dir, Access::default(), true).unwrap();
        table.place(other, 1, true).unwrap();
        assert_eq!(table.get(1).unwrap().disk_path, Path::new("/other"), "a second dup2 replaces the first");
        assert!(table.cloexec(1, None).unwrap());
        assert_eq!(table.descriptions.len(), 1, "the first description went with its last descriptor");
        assert_eq!(table.place(12345, 2, false), Err(Errno::EBADF));
    }
}
