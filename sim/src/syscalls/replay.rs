//! A recording replayed onto the simulated disk ([`SimVfs`]), recorded as
//! `sim explore` records a workload: one [`DiskSnapshot`](crate::disk::DiskSnapshot)
//! per I/O, so every crash index has the disk a power loss there finds.
//!
//! The directory's initial content is written and made durable first
//! (files fsynced, directories fsynced), outside the recording: a crash
//! can only lose what the program did. Then each operation becomes the
//! disk's calls: an open is `Vfs::open` (a directory is only remembered,
//! for its fsync), a write `write_at` (at the file's length for
//! `O_APPEND`), `ftruncate` `set_len`, `fallocate` without flags a
//! `set_len` that only grows (with `FALLOC_FL_KEEP_SIZE` nothing a read
//! sees changes; any other mode is refused), `fsync`/`fdatasync` `sync`
//! (`sync_dir` for a directory's handle), `sync_file_range` nothing (it
//! promises nothing durable), `sync`/`syncfs` every file and directory
//! synced, rename, unlink and `mkdir` theirs. The disk's own limits hold:
//! a rename across directories is refused, and a directory is durable as
//! soon as it is made (the disk's `create_dir_all`), which is kinder than
//! POSIX and said so in the README. A printed line is noted with the I/O
//! count at that moment: a crash at index `i` comes after every line
//! printed with a count up to `i`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use engine::vfs::{OpenMode, Vfs, VfsFile};

use super::recording::{Op, Recording, RelPath, WriteAt};
use crate::disk::{CrashMode, DiskConfig, DiskRecording, FsProfile, SimVfs};
use crate::trace::Trace;

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
    File(Box<dyn VfsFile>),
    Dir(PathBuf),
}

struct Replayer {
    vfs: SimVfs,
    handles: BTreeMap<u64, Handle>,
    dirs: BTreeSet<PathBuf>,
}

/// Replay `recording` on a fault-free disk under `profile` with sectors of
/// `sector_bytes` (see the module doc).
pub fn replay(recording: &Recording, profile: FsProfile, sector_bytes: u64) -> Result<Replayed, ReplayError> {
    let mut config = DiskConfig::fault_free(CrashMode::Strict, sector_bytes);
    config.fs = profile;
    let mut replayer =
        Replayer { vfs: SimVfs::new(config, Trace::default()), handles: BTreeMap::new(), dirs: BTreeSet::new() };
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
        replayer.apply(op).map_err(|reason| ReplayError { op: index, line: op.summary(), reason })?;
        let done = replayer.vfs.io_count() - first;
        op_of_io.resize(usize::try_from(done).expect("an I/O count fits memory"), index);
    }
    replayer.handles.clear();
    Ok(Replayed { disk: replayer.vfs.take_recording(), op_of_io, prints })
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

    fn file(&mut self, handle: u64) -> Result<&mut Box<dyn VfsFile>, String> {
        match self.handles.get_mut(&handle) {
            Some(Handle::File(file)) => Ok(file),
            Some(Handle::Dir(dir)) => Err(format!("handle {handle} is the directory {}", dir.display())),
            None => Err(format!("handle {handle} is not open")),
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Open { handle, path: rel, flags } => {
                let opened = if flags.dir {
                    Handle::Dir(path(rel))
                } else {
                    let mode = match (flags.create, flags.trunc) {
                        (_, true) => OpenMode::Truncate,
                        (true, false) => OpenMode::Create,
                        (false, false) => OpenMode::Write,
                    };
                    Handle::File(self.vfs.open(&path(rel), mode).map_err(|e| e.to_string())?)
                };
                self.handles.insert(*handle, opened);
            }
            Op::Write { handle, at, bytes } => {
                let file = self.file(*handle)?;
                let offset = match at {
                    WriteAt::Offset(offset) => *offset,
                    WriteAt::Append => file.len().map_err(|e| e.to_string())?,
                };
                io(file.write_at(offset, bytes))?;
            }
            Op::Truncate { handle, len } => io(self.file(*handle)?.set_len(*len))?,
            Op::Fallocate { handle, mode, offset, len } => self.fallocate(*handle, *mode, *offset, *len)?,
            Op::Fsync { handle } => match self.handles.get_mut(handle) {
                Some(Handle::Dir(dir)) => io(self.vfs.sync_dir(dir))?,
                _ => io(self.file(*handle)?.sync())?,
            },
            Op::RangeSync { .. } | Op::Print { .. } => {}
            Op::SyncAll => self.sync_all()?,
            Op::Rename { from, to } => io(self.vfs.rename(&path(from), &path(to)))?,
            Op::Unlink { path: rel } => io(self.vfs.unlink(&path(rel)))?,
            Op::Mkdir { path: rel } => {
                io(self.vfs.create_dir_all(&path(rel)))?;
                self.dirs.insert(path(rel));
            }
            Op::Close { handle } => {
                self.handles.remove(handle);
            }
        }
        Ok(())
    }

    fn fallocate(&mut self, handle: u64, mode: u64, offset: u64, len: u64) -> Result<(), String> {
        let file = self.file(handle)?;
        match mode {
            0 => {
                let end = offset.saturating_add(len);
                if end > file.len().map_err(|e| e.to_string())? {
                    io(file.set_len(end))?;
                }
                Ok(())
            }
            KEEP_SIZE => Ok(()),
            other => Err(format!("fallocate mode {other:#x} is not supported (only 0 and KEEP_SIZE)")),
        }
    }

    /// `sync`/`syncfs`: every open file, every named file, every directory.
    fn sync_all(&mut self) -> Result<(), String> {
        for handle in self.handles.values_mut() {
            if let Handle::File(file) = handle {
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
