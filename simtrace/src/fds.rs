//! The processes the recorder follows: each one's working directory and
//! descriptor table, and the open files (descriptions) those tables name.
//!
//! A descriptor is not a file: `dup`, `fcntl(F_DUPFD)` and `fork` give two
//! descriptors one open file description, with one file offset and one
//! `O_APPEND` flag, and the file is closed when its last descriptor is.
//! A plain `write` lands at the description's offset, so the recorder must
//! follow descriptions, not descriptors, to say where each write went.
//! Only descriptions of files under the watched directory are kept; each
//! gets a handle number, used once, which the recording names.
//!
//! `clone` without `CLONE_FILES` copies the table (a fork-like child),
//! with it (or with `CLONE_THREAD`: a thread) the table is shared; the
//! recorder decides which (`recorder.rs`). `execve` closes close-on-exec
//! descriptors.

use std::collections::BTreeMap;

use super::recording::RelPath;

/// One open file description under the watched directory.
#[derive(Clone, Debug)]
pub struct Description {
    /// The path it was opened by (for errors; replay follows the handle).
    pub path: RelPath,
    /// The file offset a plain `write` or `read` uses and moves.
    pub offset: u64,
    /// `O_APPEND`: every write lands at the end.
    pub append: bool,
    /// `O_SYNC` or `O_DSYNC`: every write is durable when it returns.
    pub sync: SyncEachWrite,
    /// Descriptors naming it, over every table.
    pub descriptors: usize,
}

/// What a descriptor's open flags make of each write through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncEachWrite {
    /// Nothing: a write is durable at the next fsync.
    No,
    /// `O_DSYNC`: each write is followed by its `fdatasync`.
    Data,
    /// `O_SYNC`: each write is followed by its `fsync`.
    Full,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    handle: u64,
    cloexec: bool,
}

/// Every followed process's working directory and descriptor table.
#[derive(Debug, Default)]
pub struct Processes {
    cwd: BTreeMap<u32, Vec<u8>>,
    table_of: BTreeMap<u32, usize>,
    tables: Vec<BTreeMap<i64, Slot>>,
    /// Open descriptions by handle.
    pub descriptions: BTreeMap<u64, Description>,
    next_handle: u64,
}

impl Processes {
    /// Whether `pid` is followed.
    pub fn knows(&self, pid: u32) -> bool {
        self.table_of.contains_key(&pid)
    }

    /// Follow `pid` from scratch: working directory `cwd`, no descriptor
    /// under the watched directory.
    pub fn start(&mut self, pid: u32, cwd: Vec<u8>) {
        self.tables.push(BTreeMap::new());
        self.table_of.insert(pid, self.tables.len() - 1);
        self.cwd.insert(pid, cwd);
    }

    /// `child` was cloned from `parent`; `share_files`: `CLONE_FILES`.
    pub fn fork(&mut self, parent: u32, child: u32, share_files: bool) {
        let cwd = self.cwd(parent).to_vec();
        let table = self.table_of[&parent];
        let table = if share_files {
            table
        } else {
            let copy = self.tables[table].clone();
            for slot in copy.values() {
                self.description_mut(slot.handle).descriptors += 1;
            }
            self.tables.push(copy);
            self.tables.len() - 1
        };
        self.table_of.insert(child, table);
        self.cwd.insert(child, cwd);
    }

    /// `pid`'s working directory.
    pub fn cwd(&self, pid: u32) -> &[u8] {
        self.cwd.get(&pid).map_or(b"/", |cwd| cwd.as_slice())
    }

    /// `pid` changed its working directory.
    pub fn chdir(&mut self, pid: u32, cwd: Vec<u8>) {
        self.cwd.insert(pid, cwd);
    }

    /// The handle `pid`'s descriptor `fd` names, if it is followed.
    pub fn handle(&self, pid: u32, fd: i64) -> Option<u64> {
        let table = self.table_of.get(&pid)?;
        self.tables[*table].get(&fd).map(|slot| slot.handle)
    }

    /// A new description opened as `fd`: its handle.
    pub fn open(&mut self, pid: u32, fd: i64, path: RelPath, append: bool, cloexec: bool) -> u64 {
        self.next_handle += 1;
        let handle = self.next_handle;
        self.descriptions
            .insert(handle, Description { path, offset: 0, append, sync: SyncEachWrite::No, descriptors: 0 });
        self.install(pid, fd, handle, cloexec);
        handle
    }

    /// `fd` now names `handle` (after closing what it named): `dup2`.
    pub fn install(&mut self, pid: u32, fd: i64, handle: u64, cloexec: bool) -> Option<u64> {
        let table = self.table_of[&pid];
        if let Some(slot) = self.tables[table].get_mut(&fd).filter(|slot| slot.handle == handle) {
            // `dup2(fd, fd)` and `dup3` onto a descriptor of the same file:
            // nothing closes (closing first would drop the description).
            slot.cloexec = cloexec;
            return None;
        }
        let closed = self.close(pid, fd);
        self.description_mut(handle).descriptors += 1;
        self.tables[table].insert(fd, Slot { handle, cloexec });
        closed
    }

    /// Close `fd`; the handle whose last descriptor it was, if any.
    pub fn close(&mut self, pid: u32, fd: i64) -> Option<u64> {
        let table = *self.table_of.get(&pid)?;
        let slot = self.tables[table].remove(&fd)?;
        let description = self.description_mut(slot.handle);
        description.descriptors -= 1;
        if description.descriptors > 0 {
            return None;
        }
        self.descriptions.remove(&slot.handle);
        Some(slot.handle)
    }

    /// Every followed descriptor of `pid` in `first..=last`.
    pub fn fds_in(&self, pid: u32, first: i64, last: i64) -> Vec<i64> {
        let Some(table) = self.table_of.get(&pid) else { return Vec::new() };
        self.tables[*table].range(first..=last).map(|(fd, _)| *fd).collect()
    }

    /// Set `fd`'s close-on-exec flag.
    pub fn set_cloexec(&mut self, pid: u32, fd: i64, on: bool) {
        if let Some(table) = self.table_of.get(&pid) {
            if let Some(slot) = self.tables[*table].get_mut(&fd) {
                slot.cloexec = on;
            }
        }
    }

    /// `pid` executed a new program: its close-on-exec descriptors close.
    /// The handles whose last descriptor closed.
    pub fn exec(&mut self, pid: u32) -> Vec<u64> {
        let Some(table) = self.table_of.get(&pid) else { return Vec::new() };
        let closing: Vec<i64> = self.tables[*table].iter().filter(|(_, s)| s.cloexec).map(|(fd, _)| *fd).collect();
        closing.into_iter().filter_map(|fd| self.close(pid, fd)).collect()
    }

    /// The description behind `handle` (it is open).
    pub fn description_mut(&mut self, handle: u64) -> &mut Description {
        self.descriptions.get_mut(&handle).expect("a followed descriptor names an open description")
    }

    /// Every open handle, in order (closed at the end of the run).
    pub fn open_handles(&self) -> Vec<u64> {
        self.descriptions.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_closes_with_its_last_descriptor_across_forks() {
        let mut processes = Processes::default();
        processes.start(1, b"/".to_vec());
        let handle = processes.open(1, 3, RelPath(b"f".to_vec()), false, false);
        processes.install(1, 4, handle, true);
        processes.fork(1, 2, false);
        assert_eq!(processes.close(1, 3), None);
        assert_eq!(processes.exec(1), Vec::<u64>::new(), "fd 4 closes; the child still holds two");
        assert_eq!(processes.close(2, 3), None);
        assert_eq!(processes.close(2, 4), Some(handle));
        assert!(processes.open_handles().is_empty());
    }

    #[test]
    fn a_descriptor_duplicated_onto_itself_stays_open() {
        let mut processes = Processes::default();
        processes.start(1, b"/".to_vec());
        let handle = processes.open(1, 3, RelPath(b"f".to_vec()), false, false);
        assert_eq!(processes.install(1, 3, handle, false), None);
        assert_eq!(processes.handle(1, 3), Some(handle));
        assert_eq!(processes.close(1, 3), Some(handle));
    }

    #[test]
    fn threads_share_one_table() {
        let mut processes = Processes::default();
        processes.start(1, b"/".to_vec());
        processes.fork(1, 2, true);
        let handle = processes.open(2, 5, RelPath(b"f".to_vec()), false, false);
        assert_eq!(processes.handle(1, 5), Some(handle));
        assert_eq!(processes.close(1, 5), Some(handle));
    }
}
