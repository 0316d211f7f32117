//! [`Disk`]: everything behind the simulated disk's one lock, and the life
//! of one I/O operation.
//!
//! Every `Vfs` and `VfsFile` call runs through [`Disk::run`]: it takes the
//! next global I/O index, stops the operation if the armed crash point has
//! been reached, runs it, and traces it. Routing every call through one
//! function is what makes the trace complete and the crash point exact —
//! no operation can slip past either.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use vfs::LockTable;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::config::{CrashOutcome, CrashPoint, DamageKind, DiskConfig};
use super::crash::build_next_disk;
use super::data::InodeId;
use super::faults::Faults;
use super::hazards::{Hazard, HazardWatch, Names};
use super::picture::picture;
use super::snapshot::DiskSnapshot;
use super::snapshot::Recorder;
use super::state::FileSystem;
use crate::trace::{Event, FaultKind, IoDetail, IoKind, Trace};

/// The disk's whole state (see the module doc).
#[derive(Debug)]
pub(super) struct Disk {
    pub config: DiskConfig,
    pub fs: FileSystem,
    pub faults: Faults,
    pub trace: Trace,
    /// Bumped by every power loss and process restart; a handle opened in
    /// an older epoch is dead.
    pub epoch: u64,
    /// The next I/O operation's global index.
    pub io_index: u64,
    /// I/O operations since the last `begin_op`.
    pub ios_this_op: u64,
    pub crash_point: Option<CrashPoint>,
    pub crash_reached: bool,
    pub fault_this_op: bool,
    /// Marks since the last `begin_op` (few: a handful per operation).
    pub marks: Vec<&'static str>,
    /// The last phase marked in this operation, by name (an engine's or a
    /// kit target's), for hazard reports.
    pub last_mark_name: Option<String>,
    pub hazards: HazardWatch,
    /// The engine's thread the calls come from (`Vfs::act_as`), for the
    /// hazard watch: 0 unless a scheduler says otherwise.
    pub actor: u32,
    pub fault_counts: BTreeMap<FaultKind, u64>,
    /// Failed fsyncs that dropped a file's dirty pages (fsyncgate), ever.
    pub dirty_drops: u64,
    /// While recording, the disk as each I/O finds it (`snapshot.rs`).
    pub recorder: Option<Recorder>,
    /// Directory locks held in this epoch (`lock.rs`): not on the disk,
    /// gone at every power loss and restart.
    pub locks: LockTable,
    /// For a keep-all trace's side record: the inode the next I/O's
    /// handle is on, and a rename's new path (set just before `run`).
    pub next_detail: IoDetail,
    /// A directory fsync failed on a profile where that shuts the file
    /// system down (`FsProfile::failed_sync_dir_shuts_down`): every fsync
    /// and directory fsync fails until the next power loss or restart.
    pub shut_down: bool,
    /// An armed directory-fsync fault shuts the file system down as a
    /// drawn one does (`sim live`, whose armed fault is a program's real
    /// failure, not exploration's probe: see `run`). Off unless asked.
    pub armed_shuts_down: bool,
}

pub(super) fn power_lost() -> io::Error {
    io::Error::other("simulated power loss")
}

impl Disk {
    pub fn new(config: DiskConfig, trace: Trace) -> Self {
        config.assert_valid();
        Disk {
            config,
            fs: FileSystem::default(),
            faults: Faults::new(),
            trace,
            epoch: 0,
            io_index: 0,
            ios_this_op: 0,
            crash_point: None,
            crash_reached: false,
            fault_this_op: false,
            marks: Vec::new(),
            last_mark_name: None,
            hazards: HazardWatch::default(),
            actor: 0,
            fault_counts: BTreeMap::new(),
            dirty_drops: 0,
            recorder: None,
            locks: LockTable::new(),
            next_detail: IoDetail::default(),
            shut_down: false,
            armed_shuts_down: false,
        }
    }

    /// The trace's id for `path` (interned once; no allocation after).
    pub fn name_of(&mut self, path: &Path) -> u32 {
        self.trace.intern(&path.to_string_lossy())
    }

    /// Run one I/O operation (see the module doc). `name`, `offset_bytes`
    /// and `len_bytes` are for the trace only.
    pub fn run<T>(
        &mut self,
        kind: IoKind,
        name: u32,
        offset_bytes: u64,
        len_bytes: u64,
        op: impl FnOnce(&mut Disk, u64) -> io::Result<T>,
    ) -> io::Result<T> {
        let index = self.io_index;
        let before_inode = self.trace.keeps_all().then(|| self.inode_named(name)).flatten();
        if let Some(recorder) = &mut self.recorder {
            recorder.before_io(index, &self.fs, self.config.sector_bytes);
        }
        self.io_index += 1;
        let nth_this_op = self.ios_this_op;
        self.ios_this_op += 1;
        let due = match self.crash_point {
            Some(CrashPoint::AfterIos(n)) => nth_this_op >= n,
            Some(CrashPoint::AtIo(at)) => index >= at,
            Some(CrashPoint::AtMark(_)) | None => false,
        };
        self.crash_reached |= due;
        let result = if self.crash_reached {
            Err(power_lost())
        } else if self.shut_down && kind == IoKind::SyncDir && self.faults.active() {
            // A file's fsync fails the same way, in `file.rs` (it knows its file).
            self.inject(index, FaultKind::MetaEio);
            Err(io::Error::other("SyncDir failed: the file system shut down after a failed directory fsync"))
        } else if kind.is_metadata() && self.faults.take_armed(index) {
            // Exploration's one armed fault shuts nothing down: its checks
            // hold the next open to succeed with the fault spent, which a
            // shut-down file system allows only after a remount. `sim
            // live` asks for the profile's reaction (`armed_shuts_down`).
            self.inject(index, FaultKind::MetaEio);
            self.shut_down |=
                self.armed_shuts_down && kind == IoKind::SyncDir && self.config.fs.failed_sync_dir_shuts_down;
            Err(io::Error::other(format!("{kind:?} failed (simulated EIO)")))
        } else if kind.is_metadata() && self.faults.meta(&self.config) {
            self.inject(index, FaultKind::MetaEio);
            // A journal whose commit failed aborts (`FILESYSTEMS.md`).
            self.shut_down |= kind == IoKind::SyncDir && self.config.fs.failed_sync_dir_shuts_down;
            Err(io::Error::other(format!("{kind:?} failed (simulated EIO)")))
        } else {
            op(self, index)
        };
        if self.trace.keeps_all() {
            self.note_io_detail(index, kind, name, before_inode);
        }
        self.trace.push(Event::Io { index, kind, name, offset: offset_bytes, len: len_bytes, ok: result.is_ok() });
        result
    }

    /// The inode the path with trace id `name` names now, if any.
    fn inode_named(&self, name: u32) -> Option<InodeId> {
        self.fs.lookup(Path::new(self.trace.name(name))).ok()
    }

    /// A keep-all trace's side record of I/O `index`: the handle's inode
    /// (else the one its path named before, or after: a create), and a
    /// rename's new path. A directory's own operations name no file.
    fn note_io_detail(&mut self, index: u64, kind: IoKind, name: u32, before_inode: Option<InodeId>) {
        let mut detail = std::mem::take(&mut self.next_detail);
        let on_dir = matches!(kind, IoKind::ListDir | IoKind::SyncDir | IoKind::CreateDir);
        if detail.inode.is_none() && !on_dir {
            detail.inode = before_inode.or_else(|| self.inode_named(name));
        }
        if let Some(record) = self.trace.detail_mut() {
            record.io.insert(index, detail);
        }
    }

    /// Count and trace a fault injected into the operation `index`.
    pub fn inject(&mut self, index: u64, kind: FaultKind) {
        self.fault_this_op = true;
        self.note_fault(index, kind);
    }

    /// Count and trace a fault that fails nothing (a silent one, or one
    /// the crash did).
    pub fn note_fault(&mut self, index: u64, kind: FaultKind) {
        *self.fault_counts.entry(kind).or_insert(0) += 1;
        self.trace.push(Event::Fault { index, kind });
    }

    pub fn mark(&mut self, phase: &'static str) {
        self.trace.push(Event::Mark { phase });
        self.marks.push(phase);
        self.last_mark_name = Some(phase.to_string());
        if let Some(recorder) = &mut self.recorder {
            recorder.note_mark(self.io_index, phase);
        }
        if self.crash_point == Some(CrashPoint::AtMark(phase)) {
            self.crash_reached = true;
        }
    }

    /// A file fsync of `inode` at I/O `index` succeeded.
    /// Nothing is built or copied unless some name is pending: with none,
    /// no file can be unnamed, so nothing is tracked (what was is named now).
    pub fn note_fsync(&mut self, inode: InodeId, index: u64) {
        if !self.fs.has_unnamed() {
            self.hazards.reset();
            return;
        }
        let unnamed = self.fs.unnamed_inodes();
        let (actor, phase) = (self.actor, self.last_mark_name.as_deref());
        self.hazards.on_fsync(inode, actor, &unnamed, index, phase, DiskNames(&self.fs));
    }

    /// See [`super::SimVfs::end_op_hazards`].
    pub fn end_op_hazards(&mut self) -> Vec<Hazard> {
        if !self.fs.has_unnamed() {
            self.hazards.reset();
            return self.hazards.take();
        }
        let unnamed = self.fs.unnamed_inodes();
        let renamed = self.fs.renamed_inodes();
        let phase = self.last_mark_name.as_deref();
        self.hazards.on_op_end(&unnamed, &renamed, self.io_index, phase, DiskNames(&self.fs));
        self.hazards.take()
    }

    pub fn begin_op(&mut self, fault_seed: u64) {
        self.faults.reseed(fault_seed);
        self.ios_this_op = 0;
        self.fault_this_op = false;
        self.marks.clear();
        self.last_mark_name = None;
        // A new operation, or a new attempt at an open: what an earlier one
        // left unnamed was reported when it ended, or was abandoned with
        // the error that ended it, and nothing here relies on it.
        self.hazards.reset();
    }

    pub fn power_loss(&mut self, crash_seed: u64) -> CrashOutcome {
        self.trace.push(Event::Crash { io_index: self.io_index });
        let mut rng = ChaCha8Rng::seed_from_u64(crash_seed);
        // A keep-all trace pictures the crash: the disk as power loss finds
        // it, compared below with what it leaves (no draw, no change).
        let before = self.trace.keeps_all().then(|| DiskSnapshot::take(&self.fs, self.config.sector_bytes, None));
        let outcome = build_next_disk(&mut self.fs, &self.config, &mut rng);
        if let Some(before) = before {
            // Drawing must never change the run: a bug in the picture
            // leaves a picture that says so, not a failed seed.
            let (fs, io_index) = (&self.fs, self.io_index);
            let drawn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| picture(&before, fs, io_index)));
            let mut shot = drawn.unwrap_or_else(|_| crate::trace::CrashPicture {
                io_index,
                sector_bytes: before.sector_bytes,
                damage: vec!["(this crash could not be pictured: a bug in disk/picture.rs)".to_string()],
                ..Default::default()
            });
            shot.damage.extend(outcome.damage.iter().map(|d| format!("{d:?}")));
            if let Some(record) = self.trace.detail_mut() {
                record.crashes.push(shot);
            }
        }
        for _ in 0..outcome.torn_sectors {
            self.note_fault(self.io_index, FaultKind::TornSector);
        }
        for damage in &outcome.damage {
            let kind = match damage.kind {
                DamageKind::Media => FaultKind::MediaCorruption,
                DamageKind::FileLost => FaultKind::FileLost,
                DamageKind::FileTruncated => FaultKind::FileTruncated,
                DamageKind::JunkPrepended => FaultKind::JunkPrepended,
                DamageKind::StrayFile => FaultKind::StrayFile,
                // Counted when the write was made: announced here.
                DamageKind::LostWrite | DamageKind::MisdirectedWrite => continue,
            };
            self.note_fault(self.io_index, kind);
        }
        self.fs.reset_to_durable();
        for damage in outcome.damage.iter().filter(|damage| damage.kind == DamageKind::Media) {
            // Named by its durable path (the volatile view is the durable
            // one again), unless the environment's damage took it after.
            if let Ok(inode) = self.fs.lookup(Path::new(&damage.path)) {
                self.faults.never_flip_byte(inode, damage.offset_bytes);
            }
        }
        self.shut_down = false;
        self.hazards.reset();
        self.locks.clear();
        self.epoch += 1;
        self.crash_point = None;
        self.crash_reached = false;
        outcome
    }

    pub fn process_restart(&mut self) -> Option<CrashOutcome> {
        if self.shut_down {
            // Nothing but a remount brings a shut-down file system back, and
            // a remount keeps what its journal committed: what a power loss
            // keeps. The page cache the process restart would keep is gone.
            let seed = crate::seeds::remount(self.faults.seed(), self.io_index);
            return Some(self.power_loss(seed));
        }
        self.hazards.reset();
        self.fs.forget_handles();
        self.locks.clear();
        self.epoch += 1;
        self.crash_point = None;
        self.crash_reached = false;
        None
    }
}

/// The hazard watch's look at the file system's names (`hazards::Names`).
struct DiskNames<'a>(&'a FileSystem);

impl Names for DiskNames<'_> {
    fn now(&self, id: InodeId) -> String {
        self.0.path_of_inode(id)
    }

    fn borne(&self, id: InodeId) -> Vec<String> {
        self.0.names_borne(id)
    }

    fn version(&self) -> Option<u64> {
        Some(self.0.names_version())
    }
}
