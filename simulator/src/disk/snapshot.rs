//! [`DiskSnapshot`]: the whole simulated disk at one instant, as a power
//! loss at that instant would find it, and the recorder that keeps one
//! for every I/O operation of a run.
//!
//! Exhaustive crash exploration (`crate::explore`) crashes one workload at
//! every I/O index, so it needs the disk as it stood before each of a few
//! hundred I/Os. Three things keep that cheap. A snapshot holds only what
//! power loss sees — each directory's durable entries and pending changes,
//! each file's durable bytes and pending data operations — and not the
//! volatile images, which are those with every pending operation applied.
//! Most I/Os (reads, lengths, listings, fsyncs of clean files) change
//! nothing, so the recorder takes a new snapshot only when the file
//! system's change counter moved and otherwise shares the last one. And a
//! file whose durable bytes are the same as in the previous snapshot shares
//! them (`Arc`) instead of copying them, with their hash computed once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::data::{DataOp, InodeId, Voucher};
use super::dir::{DirId, DirOp, SubdirEntries};
use super::history::History;
use super::image::ContentHash;
use super::profile::FsProfile;
use super::state::FileSystem;

/// The whole disk at one instant, as power loss would find it (see the
/// module doc). Its crash states are enumerated by
/// [`DiskSnapshot::crash_states`].
#[derive(Debug)]
pub struct DiskSnapshot {
    /// The disk's sector size: where a torn write may be cut.
    pub(super) sector_bytes: u64,
    pub(super) dirs: BTreeMap<PathBuf, DirSnapshot>,
    /// Every inode that a durable entry or a pending directory change
    /// names; no other inode can survive a crash.
    pub(super) files: BTreeMap<InodeId, FileSnapshot>,
    /// The disk's profile: its `dir_changes_in_order` (a crash keeps a
    /// prefix of each directory's pending changes, so only those are crash
    /// states), `size_ahead_of_data` (whether family 5 exists) and
    /// `set_len_journaled` (a `set_len` survives only with every directory
    /// change made before it) shape the enumeration. `posix` (every state)
    /// unless the disk says otherwise.
    pub(super) profile: FsProfile,
}

/// One directory as power loss sees it.
#[derive(Debug)]
pub(super) struct DirSnapshot {
    pub durable: BTreeMap<String, InodeId>,
    pub subdirs_durable: SubdirEntries,
    /// Entry changes since the last directory fsync, oldest first.
    pub pending: Vec<DirOp>,
    /// Its identity and its parent's (`Dir::id`, `Dir::parent`): a crash
    /// places it from the roots (no parent) down (`state::place`).
    pub id: DirId,
    pub parent: Option<DirId>,
}

/// One file as power loss sees it.
#[derive(Debug)]
pub(super) struct FileSnapshot {
    pub durable: Arc<[u8]>,
    /// `ContentHash::of(&durable)`, computed once per distinct content.
    pub durable_hash: ContentHash,
    /// Data operations since the last fsync, oldest first.
    pub pending: Vec<DataOp>,
    /// What vouches for the durable bytes (see `Inode::vouched`), for
    /// damage placed in a durable image (`damage.rs`). Shared with the
    /// previous snapshot when unchanged.
    pub vouching: Arc<Vouching>,
    /// What each durable op overwrote (`history.rs`), if the file has a
    /// whole history: shared, never copied.
    pub history: Option<History>,
}

/// An inode's durable vouching state (see `Inode::vouched`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Vouching {
    pub whole_bytes: u64,
    pub vouchers: Vec<Voucher>,
}

impl DiskSnapshot {
    /// The disk `fs` now. Durable bytes equal to `previous`'s for the same
    /// inode are shared with it.
    pub(super) fn take(fs: &FileSystem, sector_bytes: u64, previous: Option<&DiskSnapshot>) -> DiskSnapshot {
        let mut dirs = BTreeMap::new();
        let mut named = BTreeSet::new();
        for (path, dir) in &fs.dirs {
            named.extend(dir.durable.values().copied());
            named.extend(dir.pending.iter().filter_map(DirOp::inode));
            let snapshot = DirSnapshot {
                durable: dir.durable.clone(),
                subdirs_durable: dir.subdirs_durable.clone(),
                pending: dir.pending.clone(),
                id: dir.id,
                parent: dir.parent,
            };
            dirs.insert(path.clone(), snapshot);
        }
        let mut files = BTreeMap::new();
        for id in named {
            let inode = fs.inodes.get(&id).expect("an inode a directory names is alive");
            let unchanged = previous.and_then(|p| p.files.get(&id)).filter(|f| *f.durable == inode.durable[..]);
            let (durable, durable_hash) = match unchanged {
                Some(file) => (file.durable.clone(), file.durable_hash.clone()),
                None => (Arc::from(&inode.durable[..]), ContentHash::of(&inode.durable)),
            };
            let vouching = Vouching { whole_bytes: inode.whole_bytes, vouchers: inode.vouchers.clone() };
            let vouching = match previous.and_then(|p| p.files.get(&id)).filter(|f| *f.vouching == vouching) {
                Some(file) => file.vouching.clone(),
                None => Arc::new(vouching),
            };
            let history = inode.history.clone();
            files.insert(id, FileSnapshot { durable, durable_hash, pending: inode.pending.clone(), vouching, history });
        }
        DiskSnapshot { sector_bytes, dirs, files, profile: FsProfile::POSIX }
    }

    /// Unsynced directory changes, over every directory.
    pub fn pending_dir_changes(&self) -> usize {
        self.dirs.values().map(|dir| dir.pending.len()).sum()
    }

    /// Unsynced data operations (writes, `set_len`s), over every file.
    pub fn pending_data_ops(&self) -> usize {
        self.files.values().map(|file| file.pending.len()).sum()
    }
}

/// What a recording kept: `snapshots[j]` is the disk just before the I/O
/// operation with global index `first_io_index + j` ran; the last one is
/// the disk when the recording stopped, after every recorded I/O.
/// Consecutive entries are often the same `Arc`: nothing changed between.
#[derive(Clone, Debug)]
pub struct DiskRecording {
    /// The global index of the first recorded I/O operation.
    pub first_io_index: u64,
    /// One snapshot per recorded I/O operation, plus the final state.
    pub snapshots: Vec<Arc<DiskSnapshot>>,
    /// Every phase the engine marked while recording, in order (what
    /// `sim explore` says its workload reached).
    pub marks: Vec<RecordedMark>,
}

/// A phase marked while recording (`Vfs::mark`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordedMark {
    /// The crash index at the mark: the I/O that runs next (a crash point
    /// aimed at the mark loses the power just before it).
    pub io_index: u64,
    /// The phase's name (segsim's `Phase::as_str`, or the name a kit
    /// engine marks).
    pub name: &'static str,
}

impl DiskRecording {
    /// The disk just before I/O `io_index` (or, for the index one past the
    /// last recorded I/O, after all of them); `None` outside the recording.
    pub fn before_io(&self, io_index: u64) -> Option<&Arc<DiskSnapshot>> {
        let offset = io_index.checked_sub(self.first_io_index)?;
        self.snapshots.get(usize::try_from(offset).ok()?)
    }

    /// The crash indices the recording covers: `first_io_index` up to and
    /// including the index after the last recorded I/O.
    pub fn io_indices(&self) -> std::ops::Range<u64> {
        self.first_io_index..self.first_io_index + self.snapshots.len() as u64
    }
}

/// Takes the snapshots of a recording, one per I/O operation.
#[derive(Debug)]
pub(super) struct Recorder {
    first_io_index: u64,
    /// The file system's change counter at the last snapshot.
    version: u64,
    snapshots: Vec<Arc<DiskSnapshot>>,
    /// Every snapshot's profile (the disk's).
    profile: FsProfile,
    marks: Vec<RecordedMark>,
}

impl Recorder {
    /// A recorder whose first I/O will have the global index `first_io_index`.
    pub fn new(first_io_index: u64, profile: FsProfile) -> Self {
        Recorder { first_io_index, version: 0, snapshots: Vec::new(), profile, marks: Vec::new() }
    }

    /// The engine marked phase `name` with I/O `io_index` next.
    pub fn note_mark(&mut self, io_index: u64, name: &'static str) {
        debug_assert!(io_index >= self.first_io_index, "a mark while recording");
        self.marks.push(RecordedMark { io_index, name });
    }

    /// I/O `index` is about to run on `fs`: keep the disk as it finds it.
    pub fn before_io(&mut self, index: u64, fs: &FileSystem, sector_bytes: u64) {
        assert_eq!(index, self.first_io_index + self.snapshots.len() as u64, "every I/O passes the recorder");
        self.capture(fs, sector_bytes);
    }

    fn capture(&mut self, fs: &FileSystem, sector_bytes: u64) {
        let snapshot = match self.snapshots.last() {
            Some(last) if self.version == fs.version() => last.clone(),
            last => {
                let mut snapshot = DiskSnapshot::take(fs, sector_bytes, last.map(|s| &**s));
                snapshot.profile = self.profile;
                Arc::new(snapshot)
            }
        };
        self.version = fs.version();
        self.snapshots.push(snapshot);
    }

    /// Stop: keep the final state too, and hand the snapshots over.
    pub fn finish(mut self, fs: &FileSystem, sector_bytes: u64) -> DiskRecording {
        self.capture(fs, sector_bytes);
        DiskRecording { first_io_index: self.first_io_index, snapshots: self.snapshots, marks: self.marks }
    }
}
