//! A recording replayed onto the simulated disk ([`SimVfs`]), recorded as
//! `sim explore` records a workload: one [`DiskSnapshot`](simulator::disk::DiskSnapshot)
//! per I/O, so every crash index has the disk a power loss there finds.
//!
//! The directory's initial content is written and made durable first
//! (files fsynced, directories fsynced), outside the recording: a crash
//! can only lose what the program did. Then each operation becomes the
//! disk's calls: an open is `Vfs::open` (a directory is only remembered,
//! for its fsync), a write `write_at` (at the file's length for
//! `O_APPEND`), `ftruncate` `set_len`, `fallocate` without flags a
//! `set_len` that only grows (with `FALLOC_FL_KEEP_SIZE` nothing a read
//! sees changes; any other mode is refused), `fsync` `sync` and
//! `fdatasync` `sync_data` (`sync_dir` for a directory's handle, either), `sync_file_range` nothing (it
//! promises nothing durable), `sync`/`syncfs` every file and directory
//! synced, rename, unlink, `mkdir` and `rmdir` theirs (a directory's
//! rename the disk's too, with everything under it; a rename across
//! directories one change of both parents). The disk's own limit holds: a
//! directory is durable as soon as it is made (the disk's
//! `create_dir_all`), which is kinder than POSIX and said so in the
//! README. An `rmdir` or a directory's rename is a change of the parent,
//! durable at its fsync or as the profile says (FILESYSTEMS.md); a move
//! across directories at either parent's fsync. A printed line is
//! noted with the I/O count at that moment: a crash at index `i` comes
//! after every line printed with a count up to `i`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use vfs::{OpenMode, Vfs, VfsFile};

use super::recording::{Op, Recording, RelPath, WriteAt};
use simulator::disk::{CrashMode, DiskConfig, DiskRecording, FsProfile, SimVfs};
use simulator::trace::Trace;

/// Where the recorded directory sits on the simulated disk.
pub const ROOT: &str = "/db";

/// `fallocate`'s `FALLOC_FL_KEEP_SIZE`.
const KEEP_SIZE: u64 = 1;

/// A replayed recording.
#[derive(Debug)]
pub struct Replayed {
    /// The disk before each I/O, and after the last.
    pub disk: DiskRecording,
    /// For each recorded I/O (from the first), the operation it belongs to.
    pub op_of_io: Vec<usize>,
    /// Each printed chunk: the I/O count when it was printed, its bytes.
    pub prints: Vec<(u64, Vec<u8>)>,
    /// Every recorded operation that changed a file's data, in order.
    pub data_ops: Vec<DataChange>,
    /// Every file sync: the file (`None`: all, a `sync`) and its I/O index.
    pub syncs: Vec<(Option<u64>, u64)>,
}

/// A recorded operation that changed a file's data (a write, a cut, a
/// growing `fallocate`, an open that truncated): the disk keeps it pending
/// until that file's next fsync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataChange {
    /// The operation's position in the recording.
    pub op: usize,
    /// The file (the simulated disk's inode number).
    pub inode: u64,
    /// The I/O index it ran at.
    pub io_index: u64,
}

impl Replayed {
    /// The bytes printed before a crash at I/O index `io_index`.
    pub fn printed_before(&self, io_index: u64) -> Vec<u8> {
        self.prints.iter().filter(|(at, _)| *at <= io_index).flat_map(|(_, bytes)| bytes.iter().copied()).collect()
    }

    /// How many chunks were printed before a crash at `io_index`.
    pub fn prints_before(&self, io_index: u64) -> usize {
        self.prints.iter().filter(|(at, _)| *at <= io_index).count()
    }

    /// The recorded operations whose data a crash at `io_index` may lose:
    /// they ran before it and no fsync of their file followed before it.
    pub fn unsynced_before(&self, io_index: u64) -> Vec<usize> {
        let synced = |change: &DataChange| {
            self.syncs.iter().any(|&(file, at)| {
                at > change.io_index && at < io_index && file.is_none_or(|inode| inode == change.inode)
            })
        };
        self.data_ops.iter().filter(|c| c.io_index < io_index && !synced(c)).map(|c| c.op).collect()
    }

    /// The operation that owns I/O `io_index`: the one a crash there
    /// interrupts before its I/O; `None` for the index after the last I/O.
    pub fn op_of(&self, io_index: u64) -> Option<usize> {
        let offset = usize::try_from(io_index.checked_sub(self.disk.first_io_index)?).ok()?;
        self.op_of_io.get(offset).copied()
    }
}

/// Replay failed: which operation (0-based), its line, why.
#[derive(Debug)]
pub struct ReplayError {
    /// The operation's position in the recording.
    pub op: usize,
    /// Its line, shortened.
    pub line: String,
    /// What the simulated disk said.
    pub reason: String,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "replaying operation #{} ({}): {}", self.op + 1, self.line, self.reason)
    }
}

enum Handle {
    /// A file and its inode number.
    File(Box<dyn VfsFile>, u64),
    Dir(PathBuf),
}

struct Replayer {
    vfs: SimVfs,
    /// The operation being replayed (for the ledgers below).
    op: usize,
    data_ops: Vec<DataChange>,
    syncs: Vec<(Option<u64>, u64)>,
    handles: BTreeMap<u64, Handle>,
    dirs: BTreeSet<PathBuf>,
}

/// Replay `recording` on a fault-free disk under `profile` with sectors of
/// `sector_bytes` (see the module doc).
pub fn replay(recording: &Recording, profile: FsProfile, sector_bytes: u64) -> Result<Replayed, ReplayError> {
    let mut config = DiskConfig::fault_free(CrashMode::Strict, sector_bytes);
    config.fs = profile;
    let mut replayer = Replayer {
        vfs: SimVfs::new(config, Trace::default()),
        op: 0,
        data_ops: Vec::new(),
        syncs: Vec::new(),
        handles: BTreeMap::new(),
        dirs: BTreeSet::new(),
    };
    replayer.initial(recording).map_err(|reason| ReplayError { op: 0, line: "the initial content".into(), reason })?;
    replayer.vfs.start_recording();
    let first = replayer.vfs.io_count();
    let mut op_of_io = Vec::new();
    let mut prints = Vec::new();
    for (index, op) in recording.ops.iter().enumerate() {
        if let Op::Print { bytes } = op {
            prints.push((replayer.vfs.io_count(), bytes.clone()));
            continue;
        }
        replayer.op = index;
        replayer.apply(op).map_err(|reason| ReplayError { op: index, line: op.summary(), reason })?;
        let done = replayer.vfs.io_count() - first;
        op_of_io.resize(usize::try_from(done).expect("an I/O count fits memory"), index);
    }
    replayer.handles.clear();
    let (data_ops, syncs) = (replayer.data_ops, replayer.syncs);
    Ok(Replayed { disk: replayer.vfs.take_recording(), op_of_io, prints, data_ops, syncs })
}

fn path(rel: &RelPath) -> PathBuf {
    rel.under(Path::new(ROOT))
}

fn io(result: std::io::Result<()>) -> Result<(), String> {
    result.map_err(|e| e.to_string())
}

impl Replayer {
    fn initial(&mut self, recording: &Recording) -> Result<(), String> {
        io(self.vfs.create_dir_all(Path::new(ROOT)))?;
        self.dirs.insert(PathBuf::from(ROOT));
        for dir in &recording.initial_dirs {
            io(self.vfs.create_dir_all(&path(dir)))?;
            self.dirs.insert(path(dir));
        }
        for (rel, bytes) in &recording.initial_files {
            let mut file = self.vfs.open(&path(rel), OpenMode::Truncate).map_err(|e| e.to_string())?;
            io(file.write_at(0, bytes))?;
            io(file.sync())?;
        }
        self.sync_dirs()
    }

    fn sync_dirs(&mut self) -> Result<(), String> {
        for dir in &self.dirs {
            io(self.vfs.sync_dir(dir))?;
        }
        Ok(())
    }

    /// The open file behind `handle`, and its inode number.
    fn file(&mut self, handle: u64) -> Result<(&mut Box<dyn VfsFile>, u64), String> {
        match self.handles.get_mut(&handle) {
            Some(Handle::File(file, inode)) => Ok((file, *inode)),
            Some(Handle::Dir(dir)) => Err(format!("handle {handle} is the directory {}", dir.display())),
            None => Err(format!("handle {handle} is not open")),
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Open { handle, path: rel, flags } => self.open(*handle, rel, *flags)?,
            Op::Write { handle, at, bytes } => {
                let (file, inode) = self.file(*handle)?;
                let offset = match at {
                    WriteAt::Offset(offset) => *offset,
                    WriteAt::Append => file.len().map_err(|e| e.to_string())?,
                };
                io(file.write_at(offset, bytes))?;
                // The write is the last I/O (an append asked the length first).
                let write_index = self.vfs.io_count() - 1;
                self.changed(inode, write_index);
            }
            Op::Truncate { handle, len } => {
                let io_index = self.vfs.io_count();
                let (file, inode) = self.file(*handle)?;
                io(file.set_len(*len))?;
                self.changed(inode, io_index);
            }
            Op::Fallocate { handle, mode, offset, len } => self.fallocate(*handle, *mode, *offset, *len)?,
            Op::Fsync { handle } => self.fsync(*handle, false)?,
            Op::Fdatasync { handle } => self.fsync(*handle, true)?,
            Op::RangeSync { .. } | Op::Print { .. } => {}
            Op::SyncAll => self.sync_all()?,
            Op::Rename { from, to } => self.rename(from, to)?,
            Op::Unlink { path: rel } => io(self.vfs.unlink(&path(rel)))?,
            Op::Mkdir { path: rel } => {
                io(self.vfs.create_dir_all(&path(rel)))?;
                self.dirs.insert(path(rel));
            }
            Op::Rmdir { path: rel } => self.rmdir(rel)?,
            Op::Close { handle } => {
                self.handles.remove(handle);
            }
        }
        Ok(())
    }

    /// `fsync` (`data_only`: `fdatasync`) of a handle: a directory's makes
    /// its entries durable whichever it is (ext4 and XFS sync a directory
    /// the same way for both; the disk's `sync_dir`), a file's is the
    /// disk's `sync` or `sync_data`.
    fn fsync(&mut self, handle: u64, data_only: bool) -> Result<(), String> {
        let io_index = self.vfs.io_count();
        if let Some(Handle::Dir(dir)) = self.handles.get(&handle) {
            let dir = dir.clone();
            return io(self.vfs.sync_dir(&dir));
        }
        let (file, inode) = self.file(handle)?;
        io(if data_only { file.sync_data() } else { file.sync() })?;
        self.syncs.push((Some(inode), io_index));
        Ok(())
    }

    /// `rmdir`: the directory must be empty now; the disk has no way to
    /// remove one, so it stays, empty (see the module doc).
    /// `rmdir`: the disk's removal, a change of the parent pending until
    /// its fsync, with the kernel's errors (the kernel made sure it was
    /// empty, so one here is the replay's own mistake).
    fn rmdir(&mut self, rel: &RelPath) -> Result<(), String> {
        let dir = path(rel);
        self.vfs.remove_dir(&dir).map_err(|e| format!("rmdir {}: {e}", rel.show()))?;
        self.dirs.remove(&dir);
        Ok(())
    }

    /// A rename, of a file or of a directory with everything under it:
    /// the directories remembered, and the handles of directories, move
    /// with it.
    fn rename(&mut self, from: &RelPath, to: &RelPath) -> Result<(), String> {
        let (from, to) = (path(from), path(to));
        io(self.vfs.rename(&from, &to))?;
        if from == to {
            return Ok(());
        }
        let moved = |p: &Path| to.join(p.strip_prefix(&from).expect("under the renamed directory"));
        let under: Vec<PathBuf> = self.dirs.iter().filter(|d| d.starts_with(&from)).cloned().collect();
        for dir in under {
            self.dirs.remove(&dir);
            self.dirs.insert(moved(&dir));
        }
        for handle in self.handles.values_mut() {
            if let Handle::Dir(dir) = handle {
                if dir.starts_with(&from) {
                    *dir = moved(dir);
                }
            }
        }
        Ok(())
    }

    fn open(&mut self, handle: u64, rel: &RelPath, flags: super::recording::OpenFlags) -> Result<(), String> {
        if flags.dir {
            self.handles.insert(handle, Handle::Dir(path(rel)));
            return Ok(());
        }
        let mode = match (flags.create, flags.trunc) {
            (_, true) => OpenMode::Truncate,
            (true, false) => OpenMode::Create,
            (false, false) => OpenMode::Write,
        };
        let io_index = self.vfs.io_count();
        let had_bytes = self.vfs.identity(&path(rel)).is_some_and(|(_, len)| len > 0);
        let file = self.vfs.open(&path(rel), mode).map_err(|e| e.to_string())?;
        let (inode, _) = self.vfs.identity(&path(rel)).ok_or_else(|| format!("{} vanished", rel.show()))?;
        if mode == OpenMode::Truncate && had_bytes {
            // Cutting a file that held bytes is a data change (the disk
            // keeps nothing pending for an empty or a new one).
            self.changed(inode, io_index);
        }
        self.handles.insert(handle, Handle::File(file, inode));
        Ok(())
    }

    /// The current operation changed `inode`'s data at I/O `io_index`.
    fn changed(&mut self, inode: u64, io_index: u64) {
        self.data_ops.push(DataChange { op: self.op, inode, io_index });
    }

    fn fallocate(&mut self, handle: u64, mode: u64, offset: u64, len: u64) -> Result<(), String> {
        let (file, inode) = self.file(handle)?;
        match mode {
            0 => {
                let end = offset.saturating_add(len);
                if end > file.len().map_err(|e| e.to_string())? {
                    let io_index = self.vfs.io_count();
                    let (file, _) = self.file(handle)?;
                    io(file.set_len(end))?;
                    self.changed(inode, io_index);
                }
                Ok(())
            }
            KEEP_SIZE => Ok(()),
            other => Err(format!("fallocate mode {other:#x} is not supported (only 0 and KEEP_SIZE)")),
        }
    }

    /// `sync`/`syncfs`: every open file, every named file, every directory.
    fn sync_all(&mut self) -> Result<(), String> {
        self.syncs.push((None, self.vfs.io_count()));
        for handle in self.handles.values_mut() {
            if let Handle::File(file, _) = handle {
                io(file.sync())?;
            }
        }
        let dirs: Vec<PathBuf> = self.dirs.iter().cloned().collect();
        for dir in &dirs {
            for name in self.vfs.list_dir(dir).map_err(|e| e.to_string())? {
                let mut file = self.vfs.open(&dir.join(name), OpenMode::Write).map_err(|e| e.to_string())?;
                io(file.sync())?;
            }
        }
        self.sync_dirs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::OpenFlags;

    fn rel(path: &str) -> RelPath {
        RelPath(path.as_bytes().to_vec())
    }

    fn create() -> OpenFlags {
        OpenFlags { create: true, ..OpenFlags::default() }
    }

    /// The files a crash after the whole run leaves when nothing unsynced
    /// survives (the first, strict, state).
    fn durable_files(replayed: &Replayed) -> Vec<(PathBuf, Vec<u8>)> {
        let last = replayed.disk.snapshots.last().expect("the final snapshot");
        let strict = &last.crash_states(16)[0];
        last.image(strict).files().into_iter().map(|(path, bytes)| (path, bytes.to_vec())).collect()
    }

    #[test]
    fn appends_growing_fallocate_and_sync_all_reach_the_durable_disk() {
        let recording = Recording {
            root: b"/x".to_vec(),
            initial_dirs: vec![rel("sub")],
            initial_files: vec![(rel("sub/old"), b"kept".to_vec())],
            ops: vec![
                Op::Open { handle: 1, path: rel("log"), flags: OpenFlags { append: true, ..create() } },
                Op::Write { handle: 1, at: WriteAt::Append, bytes: b"ab".to_vec() },
                Op::Write { handle: 1, at: WriteAt::Append, bytes: b"cd".to_vec() },
                Op::Fallocate { handle: 1, mode: 0, offset: 0, len: 6 },
                Op::Fallocate { handle: 1, mode: KEEP_SIZE, offset: 0, len: 100 },
                Op::Print { bytes: b"ok".to_vec() },
                Op::Rename { from: rel("log"), to: rel("log2") },
                Op::SyncAll,
                Op::Close { handle: 1 },
            ],
        };
        let replayed = replay(&recording, FsProfile::POSIX, 512).expect("replays");
        let files = durable_files(&replayed);
        let expected =
            [(PathBuf::from("/db/log2"), b"abcd\0\0".to_vec()), (PathBuf::from("/db/sub/old"), b"kept".to_vec())];
        assert_eq!(files, expected);
        assert_eq!(replayed.prints.len(), 1);
        let print_at = replayed.prints[0].0;
        assert_eq!(replayed.printed_before(print_at), b"ok");
        assert_eq!(replayed.printed_before(print_at - 1), b"");
    }

    #[test]
    fn a_write_is_unsynced_until_its_own_file_is_fsynced() {
        let ops = vec![
            Op::Open { handle: 1, path: rel("a"), flags: create() },
            Op::Open { handle: 2, path: rel("b"), flags: create() },
            Op::Write { handle: 1, at: WriteAt::Offset(0), bytes: b"x".to_vec() },
            Op::Write { handle: 2, at: WriteAt::Offset(0), bytes: b"y".to_vec() },
            Op::Fsync { handle: 2 },
            Op::Truncate { handle: 1, len: 0 },
        ];
        let replayed = replay(&Recording { ops, ..Recording::default() }, FsProfile::POSIX, 512).expect("replays");
        let end = replayed.disk.io_indices().end - 1;
        assert_eq!(replayed.unsynced_before(end), [2, 5], "a's write and cut; b's write was fsynced");
        let before_fsync = replayed.data_ops[1].io_index + 1;
        assert_eq!(replayed.unsynced_before(before_fsync), [2, 3]);
        assert_eq!(replayed.unsynced_before(replayed.data_ops[0].io_index), Vec::<usize>::new());
    }

    #[test]
    fn an_emptied_directory_is_removed_pending_its_parents_fsync() {
        let ops = vec![
            Op::Mkdir { path: rel("sub") },
            Op::Open { handle: 1, path: rel("sub/f"), flags: create() },
            Op::Close { handle: 1 },
            Op::Unlink { path: rel("sub/f") },
            Op::Rmdir { path: rel("sub") },
            Op::Open { handle: 2, path: rel("g"), flags: create() },
            Op::Close { handle: 2 },
        ];
        let replayed = replay(&Recording { ops, ..Recording::default() }, FsProfile::POSIX, 512).expect("replays");
        let last = replayed.disk.snapshots.last().expect("the final snapshot");
        let images: Vec<_> = last.crash_states(16).iter().map(|state| last.image(state)).collect();
        let holds_sub = |image: &simulator::disk::DiskImage| image.dir_paths().contains(&Path::new("/db/sub"));
        assert!(holds_sub(&images[0]), "the strict state: the removal lost");
        assert!(images.iter().any(|image| !holds_sub(image)), "a state that kept the removal");
        assert!(images[0].files().iter().all(|(path, _)| !path.starts_with("/db/sub")));
        let full = vec![
            Op::Mkdir { path: rel("sub") },
            Op::Open { handle: 1, path: rel("sub/f"), flags: create() },
            Op::Rmdir { path: rel("sub") },
        ];
        let error = replay(&Recording { ops: full, ..Recording::default() }, FsProfile::POSIX, 512);
        let error = error.expect_err("not empty");
        assert!(error.reason.contains("not empty"), "{error}");
    }

    #[test]
    fn a_move_across_directories_is_replayed_whole_in_every_crash_state() {
        let ops = vec![
            Op::Mkdir { path: rel("in") },
            Op::Mkdir { path: rel("out") },
            Op::Open { handle: 1, path: rel("in/f"), flags: create() },
            Op::Write { handle: 1, at: WriteAt::Offset(0), bytes: b"f".to_vec() },
            Op::Fsync { handle: 1 },
            Op::Close { handle: 1 },
            Op::Rename { from: rel("in/f"), to: rel("out/f") },
            Op::Open { handle: 2, path: rel("out/g"), flags: create() },
            Op::Close { handle: 2 },
        ];
        let replayed = replay(&Recording { ops, ..Recording::default() }, FsProfile::POSIX, 512).expect("replays");
        let last = replayed.disk.snapshots.last().expect("the final snapshot");
        let mut places = BTreeSet::new();
        for state in last.crash_states(64) {
            let image = last.image(&state);
            let files = image.files();
            let named: Vec<PathBuf> = files.iter().map(|(path, _)| path.clone()).filter(|p| p.ends_with("f")).collect();
            assert!(named.len() <= 1, "never in both directories: {named:?}");
            places.insert(named.first().cloned());
        }
        let expected = [None, Some(PathBuf::from("/db/in/f")), Some(PathBuf::from("/db/out/f"))];
        assert_eq!(places, expected.into_iter().collect(), "the create lost, the move lost, the move kept");
    }

    #[test]
    fn what_the_disk_cannot_replay_is_refused_naming_the_operation() {
        let ops = vec![
            Op::Open { handle: 1, path: rel("f"), flags: create() },
            Op::Fallocate { handle: 1, mode: 3, offset: 0, len: 4096 },
        ];
        let recording = Recording { ops, ..Recording::default() };
        let error = replay(&recording, FsProfile::POSIX, 512).expect_err("punch hole refused");
        assert_eq!(error.op, 1);
        assert!(error.to_string().contains("fallocate mode 0x3"), "{error}");
        let ops = vec![Op::Fsync { handle: 9 }];
        let error = replay(&Recording { ops, ..Recording::default() }, FsProfile::POSIX, 512).expect_err("no handle");
        assert!(error.reason.contains("handle 9 is not open"), "{error}");
    }
}
