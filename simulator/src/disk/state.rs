//! The disk's contents as a perfect disk would keep them: every inode
//! (`inode.rs`) and directory (`dir.rs`), each with a volatile view, a
//! durable view, and the list of changes that lead from the second to the
//! first; and the file-system calls over them.
//!
//! The one invariant everything else leans on: for every inode and every
//! directory, applying its pending operations in order to its durable view
//! gives its volatile view. `sync` and `sync_dir` apply them to the durable
//! view and clear the list, so the cost of a sync is the size of what
//! changed since the last one — never a copy of the whole file; the crash
//! builder (`crash.rs`) applies a chosen part of them instead.
//!
//! Nothing here fails at random, counts I/O or knows about traces: that is
//! `ops.rs` and `faults.rs`. Errors here are the ones a real file system
//! gives a caller (a missing file, a missing directory).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use vfs::OpenMode;

use super::data::{DataOp, InodeId, Voucher, MAX_FILE_BYTES};
use super::dir::{Dir, DirOp};
use super::history::History;
use super::inode::Inode;
use super::profile::FsyncNames;
use super::silent::{self, Fate};

/// Every inode and directory on the disk.
#[derive(Debug, Default)]
pub(super) struct FileSystem {
    pub inodes: BTreeMap<InodeId, Inode>,
    /// Directories exist durably from their creation: they are the
    /// engine's root, made once, so modelling their own entries' loss
    /// would test nothing the engine does.
    pub dirs: BTreeMap<PathBuf, Dir>,
    next_inode: InodeId,
    /// The sum of every inode's volatile length, kept as it changes.
    volatile_bytes: u64,
    /// Bumped by every change a power loss could see (data, entries, what
    /// is durable), so a recorder can tell that nothing changed since its
    /// last snapshot without comparing (`snapshot.rs`). Forgetting an
    /// unreachable inode is no such change: no crash could have kept it.
    version: u64,
    /// [`FileSystem::collect_garbage`]'s list of reachable inodes, kept
    /// between calls so that a collection (at every last close) allocates
    /// nothing: a set built per call cost more than the collection itself.
    reachable_scratch: Vec<InodeId>,
    /// Files created from now on keep a durable history (`history.rs`):
    /// set while a recording runs, for exploration's damage.
    pub keep_history: bool,
    /// Metadata changes made so far (directory changes and `set_len`s),
    /// each numbered by it: the order a journal commits them in, for the
    /// profile rule `FsProfile::set_len_journaled`. Never reset, so a
    /// number is never reused.
    meta_seq: u64,
    /// A rename carrying data (`DirOp::Rename::flushes`) was ever made:
    /// only then do syncs look for one to forget.
    flush_marks: bool,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file or directory", path.display()))
}

/// Split `path` into its directory and its (UTF-8) file name.
fn split(path: &Path) -> io::Result<(&Path, &str)> {
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
    /// The sum of all files' volatile lengths.
    pub fn volatile_bytes(&self) -> u64 {
        self.volatile_bytes
    }

    /// The change counter (see the field).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A disk holding exactly `dirs` (each a map of names to inodes) and
    /// `files` (each inode's bytes), all durable, nothing pending: the disk
    /// a crash state describes, ready for the engine to open.
    pub fn restored(dirs: BTreeMap<PathBuf, BTreeMap<String, InodeId>>, files: BTreeMap<InodeId, Vec<u8>>) -> Self {
        let mut fs = FileSystem::default();
        for (path, entries) in dirs {
            for id in entries.values() {
                assert!(files.contains_key(id), "every named inode has bytes");
            }
            fs.dirs.insert(path, Dir { volatile: entries.clone(), durable: entries, pending: Vec::new() });
        }
        for (id, bytes) in files {
            fs.next_inode = fs.next_inode.max(id + 1);
            fs.volatile_bytes += bytes.len() as u64;
            fs.inodes.insert(id, Inode { volatile: bytes.clone(), durable: bytes, ..Inode::default() });
        }
        fs
    }

    pub fn inode(&self, id: InodeId) -> &Inode {
        self.inodes.get(&id).expect("an open handle's inode is alive")
    }

    pub fn inode_mut(&mut self, id: InodeId) -> &mut Inode {
        self.inodes.get_mut(&id).expect("an open handle's inode is alive")
    }

    fn dir(&self, path: &Path) -> io::Result<&Dir> {
        self.dir_at(path).ok_or_else(|| not_found(path))
    }

    fn dir_mut(&mut self, path: &Path) -> io::Result<&mut Dir> {
        match self.dir_by_bytes(path) {
            ByBytes::At(index) => Ok(self.dirs.values_mut().nth(index).expect("an index into dirs")),
            ByBytes::Absent => Err(not_found(path)),
            ByBytes::Unknown => self.dirs.get_mut(path).ok_or_else(|| not_found(path)),
        }
    }

    /// The directory at `path`, if there is one: what `dirs.get(path)`
    /// finds, found by bytes where they decide it ([`FileSystem::dir_by_bytes`]).
    fn dir_at(&self, path: &Path) -> Option<&Dir> {
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

    /// Open `path` per `mode` and count the new handle.
    pub fn open(&mut self, path: &Path, mode: OpenMode) -> io::Result<InodeId> {
        let (dir_path, name) = split(path)?;
        if self.is_dir(path) {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, format!("{}: is a directory", path.display())));
        }
        let existing = self.dir(dir_path)?.volatile.get(name).copied();
        let id = match (mode, existing) {
            (OpenMode::Read | OpenMode::Write, None) => return Err(not_found(path)),
            (OpenMode::Read | OpenMode::Write | OpenMode::Create, Some(id)) => id,
            (OpenMode::Truncate, Some(id)) => {
                // Cutting an empty file changes nothing, so nothing is pending.
                if !self.inode(id).volatile.is_empty() {
                    self.set_len(id, 0);
                }
                id
            }
            (OpenMode::Create | OpenMode::Truncate, None) => {
                let id = self.next_inode;
                self.next_inode += 1;
                let history = self.keep_history.then(History::default);
                self.inodes.insert(id, Inode { history, ..Inode::default() });
                let seq = self.next_meta_seq();
                let dir = self.dir_mut(dir_path).expect("checked above");
                dir.volatile.insert(name.to_string(), id);
                dir.pending.push(DirOp::Link { name: name.to_string(), inode: id, seq });
                self.version += 1;
                id
            }
        };
        self.inode_mut(id).open_handles += 1;
        Ok(id)
    }

    /// A handle on `id` was dropped in the current epoch.
    pub fn close(&mut self, id: InodeId) {
        let inode = self.inode_mut(id);
        assert!(inode.open_handles > 0);
        inode.open_handles -= 1;
        if inode.open_handles == 0 {
            self.collect_garbage();
        }
    }

    /// Read from the volatile image; fewer bytes only at the end of file.
    pub fn read(&self, id: InodeId, offset_bytes: u64, buf: &mut [u8]) -> usize {
        let image = &self.inode(id).volatile;
        let Ok(start) = usize::try_from(offset_bytes) else { return 0 };
        if start >= image.len() {
            return 0;
        }
        let n = buf.len().min(image.len() - start);
        buf[..n].copy_from_slice(&image[start..start + n]);
        n
    }

    /// The volatile length `id` would have after a write ending at
    /// `end_bytes`, minus its length now: what the write costs in space.
    pub fn growth_bytes(&self, id: InodeId, end_bytes: u64) -> u64 {
        end_bytes.saturating_sub(self.inode(id).volatile.len() as u64)
    }

    /// A file that appears durable at once in `dir` (the environment's stray
    /// file after a power loss; the volatile views are reset after).
    pub fn add_durable_file(&mut self, dir: &Path, name: &str, bytes: Vec<u8>) {
        let id = self.next_inode;
        self.next_inode += 1;
        let mut inode = Inode { durable: bytes, ..Inode::default() };
        inode.vouch_all();
        self.inodes.insert(id, inode);
        self.dirs.get_mut(dir).expect("an existing directory").durable.insert(name.to_string(), id);
        self.version += 1;
    }

    /// Write to the volatile image and remember the write as pending.
    pub fn write(&mut self, id: InodeId, offset_bytes: u64, data: &[u8]) {
        assert!(offset_bytes + data.len() as u64 <= MAX_FILE_BYTES);
        let inode = self.inode_mut(id);
        if !inode.written_since_sync {
            let durable_at_bytes = inode.durable.len() as u64;
            let end_bytes = offset_bytes + data.len() as u64;
            inode.pending_vouchers.push(Voucher { start_bytes: offset_bytes, end_bytes, durable_at_bytes });
            inode.written_since_sync = true;
        }
        self.push_data_op(id, DataOp::Write { offset_bytes, data: data.to_vec() });
    }

    /// Cut or extend the volatile image and remember it as pending.
    pub fn set_len(&mut self, id: InodeId, len_bytes: u64) {
        assert!(len_bytes <= MAX_FILE_BYTES);
        let seq = self.next_meta_seq();
        self.push_data_op(id, DataOp::SetLen { len_bytes, seq });
    }

    /// The number of the next metadata change (see `meta_seq`).
    fn next_meta_seq(&mut self) -> u64 {
        self.meta_seq += 1;
        self.meta_seq - 1
    }

    fn push_data_op(&mut self, id: InodeId, op: DataOp) {
        let inode = self.inode_mut(id);
        let len_before = inode.volatile.len() as u64;
        op.apply(&mut inode.volatile);
        let len_after = inode.volatile.len() as u64;
        inode.pending.push(op);
        self.volatile_bytes = self.volatile_bytes - len_before + len_after;
        self.version += 1;
    }

    /// The write just made to `id` (its newest pending op) meets `fate`
    /// when the drive writes it (`silent.rs`).
    pub fn set_fate(&mut self, id: InodeId, fate: Fate) {
        let inode = self.inode_mut(id);
        let index = inode.pending.len().checked_sub(1).expect("a write was just made");
        assert!(matches!(inode.pending[index], DataOp::Write { .. }));
        inode.silent.fates.push((index, fate));
    }

    /// fsync: make the pending data ops durable, in order. The cost is the
    /// bytes they wrote, not the file's size.
    pub fn sync(&mut self, id: InodeId) {
        if !self.inode(id).pending.is_empty() {
            self.version += 1;
        }
        if !self.inode(id).silent.is_idle() {
            self.sync_silent(id);
            return;
        }
        let inode = self.inode_mut(id);
        for op in &inode.pending {
            if let Some(history) = &mut inode.history {
                history.note(&inode.durable, op);
            }
            op.apply(&mut inode.durable);
        }
        if let Some(history) = &mut inode.history {
            history.end_flush();
        }
        inode.pending.clear();
        self.finish_sync(id);
    }

    /// fsync of `id` where a pending write has a fate or a scar needs its
    /// intended bytes refreshed (`silent.rs`): apply the pending ops to the
    /// durable image as the drive does, then the usual bookkeeping.
    fn sync_silent(&mut self, id: InodeId) {
        let inode = self.inode_mut(id);
        // A silent fault's durable image is not what the history would say.
        inode.history = None;
        let pending = std::mem::take(&mut inode.pending);
        let fates = std::mem::take(&mut inode.silent.fates);
        let mut scars = std::mem::take(&mut inode.silent.scars);
        let mut misplaced_at = Vec::new();
        let mut landings = Vec::new();
        for (index, op) in pending.iter().enumerate() {
            let Some((offset_bytes, data, fate)) = silent::fate_of(&fates, index, op) else {
                op.apply(&mut inode.durable);
                continue;
            };
            misplaced_at.push(offset_bytes);
            landings.extend(silent::strike(
                &mut inode.durable,
                &mut inode.vouchers,
                offset_bytes,
                data,
                fate,
                &mut scars,
            ));
        }
        inode.silent.scars = scars;
        // A write that did not land where it belongs vouches for nothing.
        inode.pending_vouchers.retain(|v| !misplaced_at.contains(&v.start_bytes));
        inode.silent.refresh_scars(&inode.volatile);
        self.finish_sync(id);
        for landing in landings {
            if let Some(inode) = self.inodes.get_mut(&landing.inode) {
                inode.history = None;
                // What the other file's image should hold where the bytes
                // land: its durable bytes, where earlier silent faults left
                // them wrong as they should be (seed 2335719: a landing over
                // an earlier one's garbage took that garbage for the right
                // bytes, and a failed fsync's cache patch put it back).
                let mut should_hold = inode.durable.clone();
                inode.silent.patch_cache(&mut should_hold);
                let (offset_bytes, data) = (landing.offset_bytes, &landing.data);
                let scar =
                    silent::land(&mut inode.durable, &mut inode.vouchers, offset_bytes, data, Some(&should_hold));
                inode.silent.scars.extend(scar);
            }
        }
    }

    /// The end of every fsync, once the pending ops are applied: the
    /// vouchers of the writes it made durable count from now on.
    pub fn finish_sync(&mut self, id: InodeId) {
        self.forget_flushes(id);
        let inode = self.inode_mut(id);
        assert!(inode.pending.is_empty());
        assert_eq!(inode.durable.len(), inode.volatile.len());
        let durable_bytes = inode.durable.len() as u64;
        let made_durable = std::mem::take(&mut inode.pending_vouchers);
        inode.vouchers.extend(made_durable);
        inode.written_since_sync = false;
        inode.forget_vouchers_past(durable_bytes);
    }

    /// A failed fsync: the dirty data is gone, reads see the durable image.
    pub fn drop_dirty(&mut self, id: InodeId) {
        self.forget_flushes(id);
        let inode = self.inode_mut(id);
        let len_before = inode.volatile.len() as u64;
        inode.volatile.clone_from(&inode.durable);
        // Only dirty pages are dropped: those a silent fault left wrong on
        // the disk were written back, so the cache still holds them right.
        inode.silent.patch_cache(&mut inode.volatile);
        inode.pending.clear();
        inode.silent.fates.clear();
        inode.pending_vouchers.clear();
        inode.written_since_sync = false;
        let len_after = inode.volatile.len() as u64;
        self.volatile_bytes = self.volatile_bytes - len_before + len_after;
        self.version += 1;
    }

    /// Rename within one directory. Across directories the engine never
    /// renames, and the simulator refuses rather than model it loosely.
    /// With `auto_da_alloc` (ext4's), a rename that replaces a file carries
    /// the renamed file's delayed data with it ([`FileSystem::delayed_ops`]).
    pub fn rename(&mut self, from: &Path, to: &Path, auto_da_alloc: bool) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        let id = self.lookup(from)?;
        self.dir(to_dir)?;
        if from_dir != to_dir {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{} -> {}: rename across directories is not simulated", from.display(), to.display()),
            ));
        }
        if from_name == to_name {
            return Ok(());
        }
        // A file renamed into place whole and durable (a rewrite's new
        // log) is vouched in full: nothing in it was ever a torn write.
        let inode = self.inode_mut(id);
        if inode.pending.is_empty() {
            inode.vouch_all();
            // Unless a silent fault left its start other than written:
            // whatever the file said about itself there is not there.
            if inode.silent.start_scarred(&inode.durable) {
                inode.whole_bytes = 0;
            }
        }
        let replaces = self.dir(from_dir)?.volatile.contains_key(to_name);
        let flushes = if auto_da_alloc && replaces { self.delayed_ops(id) } else { 0 };
        self.flush_marks |= flushes > 0;
        let seq = self.next_meta_seq();
        let dir = self.dir_mut(from_dir)?;
        dir.volatile.remove(from_name);
        dir.volatile.insert(to_name.to_string(), id);
        let (from, to) = (from_name.to_string(), to_name.to_string());
        dir.pending.push(DirOp::Rename { from, to, inode: id, seq, flushes });
        self.version += 1;
        Ok(())
    }

    /// How many of `id`'s pending data operations ext4's `auto_da_alloc`
    /// surely writes before a rename replacing a file with it commits
    /// (`ext4_rename` allocates the file's delayed blocks first, and
    /// `data=ordered` writes newly allocated blocks before the commit that
    /// names them): all of them where the file has nothing durable and
    /// only writes pending, no two in one 4 KiB block; else none. A block
    /// written back between two writes to it would hold the first's bytes
    /// only (no longer delayed, it is not ordered again), so the rule
    /// claims nothing there.
    fn delayed_ops(&self, id: InodeId) -> usize {
        const BLOCK_BYTES: u64 = 4096;
        let inode = self.inode(id);
        if !inode.durable.is_empty() {
            return 0;
        }
        let mut blocks = std::collections::BTreeSet::new();
        for op in &inode.pending {
            let DataOp::Write { offset_bytes, data } = op else { return 0 };
            if data.is_empty() {
                continue;
            }
            let last = (offset_bytes + data.len() as u64 - 1) / BLOCK_BYTES;
            if !(offset_bytes / BLOCK_BYTES..=last).all(|block| blocks.insert(block)) {
                return 0;
            }
        }
        inode.pending.len()
    }

    /// `id`'s pending data left the list it was counted in (an fsync made
    /// it durable, a failed one dropped it): no pending rename carries any
    /// of it now.
    pub fn forget_flushes(&mut self, id: InodeId) {
        if !self.flush_marks {
            return;
        }
        for dir in self.dirs.values_mut() {
            for op in &mut dir.pending {
                if let DirOp::Rename { inode, flushes, .. } = op {
                    if *inode == id {
                        *flushes = 0;
                    }
                }
            }
        }
    }

    pub fn unlink(&mut self, path: &Path) -> io::Result<()> {
        let (dir_path, name) = split(path)?;
        let id = self.lookup(path)?;
        let seq = self.next_meta_seq();
        let dir = self.dir_mut(dir_path)?;
        dir.volatile.remove(name);
        dir.pending.push(DirOp::Unlink { name: name.to_string(), inode: id, seq });
        self.version += 1;
        Ok(())
    }

    /// The file names in `dir`, sorted bytewise (`BTreeMap<String, _>`
    /// order is bytewise order).
    pub fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        Ok(self.dir(dir)?.volatile.keys().cloned().collect())
    }

    /// The names in `dir` as a read sees them, with their inodes, in name
    /// order: [`FileSystem::list_dir`] without a copy of every name.
    pub fn entries(&self, dir: &Path) -> io::Result<impl Iterator<Item = (&str, InodeId)>> {
        Ok(self.dir(dir)?.volatile.iter().map(|(name, id)| (name.as_str(), *id)))
    }

    /// [`FileSystem::entries`], each with whether the same name binds the
    /// same inode in the durable directory too: whether a power loss now
    /// would keep that entry in every crash mode.
    pub fn entries_with_durability(&self, dir: &Path) -> io::Result<impl Iterator<Item = (&str, InodeId, bool)>> {
        let dir = self.dir(dir)?;
        Ok(dir.volatile.iter().map(|(name, id)| (name.as_str(), *id, dir.durable.get(name) == Some(id))))
    }

    /// Create `dir` and its missing ancestors, durably at once.
    pub fn create_dir_all(&mut self, dir: &Path) {
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() && !self.dirs.contains_key(ancestor) {
                self.dirs.insert(ancestor.to_path_buf(), Dir::default());
                self.version += 1;
            }
        }
    }

    /// Make `dir`'s pending entry changes durable, in order.
    pub fn sync_dir(&mut self, dir: &Path) -> io::Result<()> {
        let carried = self.carried_data();
        let dir = self.dir_mut(dir)?;
        let changed = !dir.pending.is_empty();
        for op in &dir.pending {
            let applied = op.apply(&mut dir.durable);
            assert!(applied, "a pending op applies in order to the durable entries");
        }
        dir.pending.clear();
        assert_eq!(dir.durable, dir.volatile);
        if changed {
            self.version += 1;
        }
        self.flush_carried(carried);
        self.collect_garbage();
        Ok(())
    }

    /// Every pending rename that carries its file's data
    /// (`DirOp::Rename::flushes`), to tell after a sync which of them it
    /// made durable; none (and no cost) on a disk that never made one.
    fn carried_data(&self) -> Vec<DirOp> {
        if !self.flush_marks {
            return Vec::new();
        }
        let carrying = |op: &&DirOp| matches!(op, DirOp::Rename { flushes, .. } if *flushes > 0);
        self.dirs.values().flat_map(|dir| dir.pending.iter().filter(carrying).cloned()).collect()
    }

    /// Of `carried` (from [`FileSystem::carried_data`]), the renames no
    /// longer pending were made durable: the journal commit that did so
    /// wrote their files' carried data first (`data=ordered`), so it is
    /// durable too.
    fn flush_carried(&mut self, carried: Vec<DirOp>) {
        for op in carried {
            let DirOp::Rename { inode, flushes, .. } = &op else { continue };
            if !self.dirs.values().any(|dir| dir.pending.contains(&op)) {
                self.flush_first(*inode, *flushes);
            }
        }
    }

    /// Make `id`'s first `ops` pending data operations durable, as a
    /// partial fsync. Where a silent fault rides on its pending writes the
    /// disk does nothing (keeps less: weaker, allowed): their fates are
    /// settled by a whole fsync or a crash only.
    fn flush_first(&mut self, id: InodeId, ops: usize) {
        let Some(inode) = self.inodes.get_mut(&id) else { return };
        if ops == 0 || ops > inode.pending.len() || !inode.silent.is_idle() {
            return;
        }
        for op in inode.pending.drain(..ops) {
            if let Some(history) = &mut inode.history {
                history.note(&inode.durable, &op);
            }
            op.apply(&mut inode.durable);
        }
        if let Some(history) = &mut inode.history {
            history.end_flush();
        }
        self.forget_flushes(id);
        self.version += 1;
    }

    /// A file fsync or fdatasync of `id` succeeded: make durable what `rule`
    /// says it persists of the directory changes about the file
    /// (`profile.rs`).
    /// Every directory keeps the invariant: what stays pending applies in
    /// order to the new durable entries and gives the volatile ones.
    pub fn persist_names(&mut self, id: InodeId, rule: FsyncNames) {
        if rule == FsyncNames::Nothing {
            return;
        }
        let carried = self.carried_data();
        let mut changed = false;
        for dir in self.dirs.values_mut() {
            changed |= match rule {
                FsyncNames::Nothing => false,
                FsyncNames::JournalPrefix => dir.persist_prefix_naming(id),
                FsyncNames::JournalPrefixToCreate => dir.persist_prefix_to_create(id),
                FsyncNames::OwnChanges => dir.persist_own_changes(id),
            };
        }
        if changed {
            self.version += 1;
        }
        self.flush_carried(carried);
    }

    /// The number of `id`'s newest pending `set_len`, if it has one: read
    /// before an fsync makes it durable (`FsProfile::set_len_journaled`).
    pub fn newest_pending_set_len(&self, id: InodeId) -> Option<u64> {
        self.inode(id).pending.iter().rev().find_map(|op| match op {
            DataOp::SetLen { seq, .. } => Some(*seq),
            DataOp::Write { .. } => None,
        })
    }

    /// A journal committed every metadata change numbered below `seq`
    /// (`FsProfile::set_len_journaled`: an fsync made a `set_len` numbered
    /// `seq` durable): in every directory, the pending changes made before
    /// it become durable, in order.
    pub fn persist_dir_changes_before(&mut self, seq: u64) {
        let mut changed = false;
        for dir in self.dirs.values_mut() {
            changed |= dir.persist_before(seq);
        }
        if changed {
            self.version += 1;
        }
    }

    /// The inodes a pending create or rename names: their names are not
    /// durable yet.
    pub fn unnamed_inodes(&self) -> std::collections::BTreeSet<InodeId> {
        self.dirs.values().flat_map(|dir| dir.pending.iter().filter_map(DirOp::names_inode)).collect()
    }

    /// The inodes a pending rename names (a subset of
    /// [`FileSystem::unnamed_inodes`]).
    pub fn renamed_inodes(&self) -> std::collections::BTreeSet<InodeId> {
        let renamed = |op: &DirOp| match op {
            DirOp::Rename { inode, .. } => Some(*inode),
            DirOp::Link { .. } | DirOp::Unlink { .. } => None,
        };
        self.dirs.values().flat_map(|dir| dir.pending.iter().filter_map(renamed)).collect()
    }

    /// Whether any pending create or rename names an inode (what
    /// [`FileSystem::unnamed_inodes`] would hold, without building it).
    pub fn has_unnamed(&self) -> bool {
        self.dirs.values().any(|dir| dir.pending.iter().any(|op| op.names_inode().is_some()))
    }

    /// A name of inode `id` for reports: its path now, else its number.
    pub fn path_of_inode(&self, id: InodeId) -> String {
        for (path, dir) in &self.dirs {
            if let Some((name, _)) = dir.volatile.iter().find(|(_, inode)| **inode == id) {
                return path.join(name).display().to_string();
            }
        }
        format!("inode {id}")
    }

    /// Every path inode `id` bears or has borne since its directory was
    /// last synced, for hazard reports and declarations: its names now,
    /// its durable names, then each name a pending change gave it or took
    /// from it, in the order they were made, each once. Empty for a file
    /// no directory ever named. Only a hazard report asks (rarely): it
    /// walks every entry.
    pub fn names_borne(&self, id: InodeId) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (path, dir) in &self.dirs {
            let entries = dir.volatile.iter().chain(&dir.durable).filter(|(_, inode)| **inode == id);
            let changed = dir.pending.iter().filter(|op| op.inode() == id).flat_map(DirOp::names);
            for name in entries.map(|(name, _)| name.as_str()).chain(changed) {
                let full = path.join(name).display().to_string();
                if !names.contains(&full) {
                    names.push(full);
                }
            }
        }
        names
    }

    /// Whether `path` names a file or a directory now.
    pub fn exists(&self, path: &Path) -> bool {
        self.is_dir(path) || self.lookup(path).is_ok()
    }

    /// Forget every inode that nothing can reach any more: no directory
    /// entry (volatile or durable), no pending directory op, no open
    /// handle. Called when references go away (a dir sync, a last close,
    /// a restart), never per read or write.
    pub fn collect_garbage(&mut self) {
        let mut reachable = std::mem::take(&mut self.reachable_scratch);
        reachable.clear();
        for dir in self.dirs.values() {
            reachable.extend(dir.volatile.values().copied());
            reachable.extend(dir.durable.values().copied());
            reachable.extend(dir.pending.iter().map(DirOp::inode));
        }
        reachable.sort_unstable();
        let mut freed_bytes = 0u64;
        self.inodes.retain(|id, inode| {
            let keep = inode.open_handles > 0 || reachable.binary_search(id).is_ok();
            if !keep {
                freed_bytes += inode.volatile.len() as u64;
            }
            keep
        });
        self.volatile_bytes -= freed_bytes;
        self.reachable_scratch = reachable;
    }

    /// Every handle is gone (a restart or power loss bumped the epoch).
    pub fn forget_handles(&mut self) {
        for inode in self.inodes.values_mut() {
            inode.open_handles = 0;
        }
        self.collect_garbage();
    }

    /// After power loss: the durable views are all there is. Every
    /// volatile view becomes its durable one and nothing is pending.
    pub fn reset_to_durable(&mut self) {
        for dir in self.dirs.values_mut() {
            dir.volatile.clone_from(&dir.durable);
            dir.pending.clear();
        }
        for inode in self.inodes.values_mut() {
            inode.volatile.clone_from(&inode.durable);
            inode.pending.clear();
            inode.silent.fates.clear();
            inode.silent.scars.clear();
            inode.fsync_failed = false;
            inode.pending_vouchers.clear();
            inode.written_since_sync = false;
            let durable_bytes = inode.durable.len() as u64;
            inode.forget_vouchers_past(durable_bytes);
        }
        self.forget_handles();
        self.volatile_bytes = self.inodes.values().map(|inode| inode.volatile.len() as u64).sum();
        self.version += 1;
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn sync_is_incremental_and_keeps_the_invariant() {
        let mut fs = FileSystem::default();
        fs.create_dir_all(Path::new("/db"));
        let id = fs.open(Path::new("/db/f"), OpenMode::Create).unwrap();
        fs.write(id, 0, b"hello");
        fs.sync(id);
        fs.write(id, 5, b" world");
        fs.set_len(id, 8);
        assert_eq!(fs.inode(id).pending.len(), 2);
        assert_eq!(fs.inode(id).durable, b"hello");
        fs.sync(id);
        assert!(fs.inode(id).pending.is_empty());
        assert_eq!(fs.inode(id).durable, b"hello wo");
        assert_eq!(fs.volatile_bytes(), 8);
    }

    #[test]
    fn garbage_collection_waits_for_the_last_reference() {
        let mut fs = FileSystem::default();
        fs.create_dir_all(Path::new("/db"));
        let path = Path::new("/db/f");
        let id = fs.open(path, OpenMode::Create).unwrap();
        fs.write(id, 0, b"data");
        fs.sync_dir(Path::new("/db")).unwrap();
        fs.unlink(path).unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        assert!(fs.inodes.contains_key(&id), "still open");
        assert_eq!(fs.volatile_bytes(), 4);
        fs.close(id);
        assert!(!fs.inodes.contains_key(&id));
        assert_eq!(fs.volatile_bytes(), 0);
    }
}
