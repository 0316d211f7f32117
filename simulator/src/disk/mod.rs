//! [`SimVfs`]: a disk in memory that remembers which bytes are durable, and
//! at power loss keeps only those plus whatever the crash mode lets through.
//!
//! The engine sees an ordinary [`Vfs`]. Underneath, the disk follows POSIX
//! as pessimistically as a real kernel and drive are allowed to (the model
//! of ALICE and CrashMonkey): nothing is durable that was not explicitly
//! made so, and what was not made durable may come back in any state the
//! crash mode allows.
//!
//! # Files
//! A file (an inode) has a *volatile* image, which reads see (the page
//! cache), a *durable* image, and the list of data operations since its
//! last fsync: writes and `set_len`s (opening an existing file with
//! `OpenMode::Truncate` is a `set_len(0)`). [`VfsFile::sync`] applies that
//! list to the durable image, so its cost is what was written since the
//! last sync — under `fsync always` the simulator syncs after every write.
//!
//! # Directories
//! A directory maps names to inodes and to subdirectories, again volatile
//! and durable, with the list of entry changes since its last
//! [`Vfs::sync_dir`]: create, unlink and rename (one atomic change, even
//! though it touches two names), and a subdirectory's removal
//! ([`Vfs::remove_dir`], empty only) or rename (with everything under it,
//! replacing only an empty directory: one change of the parent, so a
//! crash shows the whole tree at one name, `state/tree.rs`). A rename
//! across directories (a file's or a directory's) is one change of both
//! parents, durable at either's sync and kept whole or lost whole by a
//! crash (`state/moves.rs`, `moves.rs`); the engine never makes one. A
//! file whose *durable* entry does not exist is gone after power
//! loss, even if its data was fsynced. A directory's creation is durable
//! as soon as [`Vfs::create_dir_all`] returns: the engine creates only its
//! root, once. The directory of a path is its `parent()`; an operation on
//! a missing file or directory fails with `NotFound`, and the others with
//! the kernel's kinds (`DirectoryNotEmpty`, `NotADirectory`,
//! `IsADirectory`, `InvalidInput` for a move into itself, `ResourceBusy`
//! for the root).
//!
//! # Power loss
//! [`SimVfs::power_loss`] builds the next disk from the durable images and
//! a choice over every pending operation, per [`CrashMode`]:
//! - `strict`: every pending data and directory operation is lost.
//! - `prefix`: per file, a random prefix (none to all) of its pending data
//!   operations survives; the first lost one, if a write, is torn: a
//!   sector-aligned prefix of it survives and the sector being written may
//!   hold garbage (`p_torn_garbage`). Per directory, a random prefix of
//!   its pending changes survives.
//! - `reorder`: per file, the length is the durable or the volatile one,
//!   and every sector a pending operation dirtied independently holds its
//!   old content (zeros past the old length), its new content, or garbage.
//!   Per directory, each pending change survives or not independently;
//!   survivors apply in their original order, skipping any whose
//!   precondition no longer holds (a rename whose source is absent).
//!
//! Garbage never lands on durable bytes that no pending operation touched
//! (see `crash.rs`); damage to durable data is *media corruption*, at most
//! one sector per power loss, named in the [`CrashOutcome`]. Every handle
//! opened before a power loss or [`SimVfs::process_restart`] fails from
//! then on.
//!
//! # Faults and crash points
//! Every operation can fail. Writes fail with EIO (maybe after a
//! sector-aligned short write), fsyncs with EIO that drops the file's
//! dirty data (fsyncgate: the next fsync succeeds), reads and maps with
//! EIO, growth with `StorageFull` past the capacity; reads can return one
//! flipped bit (transient: never a bit of the file flipped before, so two
//! reads that agree hold the disk's bytes, and never a byte media
//! corruption changed, which a flip could show sound). Every other operation — an open or create, a
//! rename, an unlink, a `set_len`, a length, a listing, an `exists`, a
//! `create_dir_all`, a `sync_dir`, taking a lock — fails with EIO and
//! changes nothing (`p_meta_eio`): a failed `sync_dir` leaves every
//! pending entry change pending, none made durable and none dropped, so
//! an engine must not count a rename or a creation durable after it (the
//! segsim store fail-stops). One decision point decides them all
//! (`ops.rs`, `Disk::run`, as Pebble's `errorfs` consults one injector
//! before each operation; the lock, not an indexed I/O, asks the same
//! stream). The harness's own observations (an audit's listing) run
//! observing: no fault fires there. Each
//! decision draws from a stream the driver reseeds per workload operation
//! ([`SimVfs::begin_op`]), and only when its probability is non-zero.
//! Every `Vfs` and `VfsFile` call is one I/O operation with a global index,
//! traced; an armed [`CrashPoint`] (an index, a count within the workload
//! operation, or a marked phase, `Vfs::mark`) makes that operation and every later one
//! fail with "simulated power loss" without touching the disk.
//!
//! # Silent faults
//! Three faults report success and do the wrong thing (`silent.rs`), each
//! drawn from the same per-operation fault stream, each with a per-seed
//! probability that is zero in about half the seeds (then nothing is
//! drawn), else drawn uniformly per operation from the ranges below:
//! - **lost write** (`p_lost_write`, 0.0005..0.005 per successful write):
//!   the drive never writes the bytes. The file keeps the length the
//!   write gave it; the place keeps its old bytes (zeros past the old end).
//!   Models firmware that acknowledges a write it drops, even across the
//!   fsync that "made it durable".
//! - **misdirected write** (`p_misdirected_write`, 0.0005..0.005 per
//!   successful write): the place keeps its old bytes and the data lands
//!   elsewhere — at the offset of one of the file's last 64 writes of the
//!   same size (two times in five when there is one: a whole, once-valid
//!   record of the same shape replaced, the case a checksum without the
//!   place cannot see), at the same offset of another open file (as far
//!   as it reaches), at another sector-aligned offset inside the file, or
//!   where another of those 64 writes started (a record's start, aligned
//!   or not); with none of those, the write is lost. Models a wrong LBA
//!   from firmware or RAID.
//! - **misdirected read** (`p_misdirected_read`, 0.001..0.02 per read):
//!   one sector of what a read returns holds another sector's bytes of the
//!   same file (zeros past its end). Transient, like a bit flip, and never
//!   twice for the same sector of a file, so two reads that agree hold the
//!   disk's bytes. Maps are exempt, as for flips.
//!
//! A write's fate is drawn when it is made, counted and traced then (the
//! operation is not marked faulted: nothing failed), and strikes when the
//! drive writes it, at the fsync that makes it durable; the page cache
//! keeps the right bytes until power goes (a failed fsync drops only dirty
//! pages, so it keeps them too). A crash before the fsync leaves the write
//! to the crash mode; one that `prefix` mode keeps meets its fate then (a
//! lost write before any fsync). At the next power loss each range a silent fault left
//! wrong is announced as `Damage` (`LostWrite` or `MisdirectedWrite`: its
//! first wrong byte, and whether a later durable write vouched for the
//! range), as media corruption is, and the checker expects a refusal or
//! the full state — or, for unvouched damage to the log, a cut at the
//! earliest damaged byte. A write that did not land where it belongs
//! vouches for nothing, a landing erases the vouchers under it, and a file
//! renamed into place whose first bytes were left wrong is not vouched
//! whole. Over seeds 0..5000 of the random mode these drew 1703 lost
//! writes, 1785 misdirected writes and 1158 misdirected reads (0..20000,
//! two jobs: 6849, 6855 and 4707).
//!
//! # File-system profiles
//! Everything above is the `posix` profile: the weakest POSIX allows, and
//! the default. A [`DiskConfig::fs`] profile (`profile.rs`; the rules and
//! their sources in `FILESYSTEMS.md`) makes the disk keep what a real file
//! system keeps beyond it, each rule where the disk's behaviour differs:
//! a file's fsync also makes its own new name durable (ext4, XFS: every
//! earlier change of its directory with it; btrfs: its own changes), and
//! its fdatasync ([`VfsFile::sync_data`]: data and length on every
//! profile) as much of it as the profile's rule for fdatasync says (ext4:
//! up to the file's create, not a later rename; XFS and btrfs: as fsync);
//! a crash keeps a prefix of each directory's changes in every mode (ext4,
//! XFS); a rename replacing a file carries the renamed file's delayed data
//! with it (ext4's `auto_da_alloc`, `DirOp::Rename::flushes`); and a
//! failed `sync_dir` shuts the file system down — every later fsync
//! (writing nothing back, the dirty pages left readable) and `sync_dir`
//! fails until the next power loss or restart, which is then a remount
//! (ext4, XFS, btrfs). Under `posix` no rule is consulted and nothing new
//! is drawn, so its traces are what they were before profiles.
//!
//! # Locks
//! [`Vfs::lock`] is modelled (`lock.rs`): a conflicting lock on a directory
//! is refused while its guard lives; power loss and process restart release
//! every lock, and a guard from before them releases nothing when dropped.
//! Taking a lock is not an I/O operation: not indexed, not traced, never
//! faulted, so the trace of a run that opens one store at a time is what it
//! was before locks existed.
//!
//! # Snapshots and crash states
//! For exhaustive exploration, [`SimVfs::start_recording`] keeps a
//! [`DiskSnapshot`] of the disk as each I/O operation finds it (shared
//! while nothing changes), and [`DiskSnapshot::crash_states`] enumerates,
//! in a fixed order, the disks a power loss at that instant may leave: the
//! choices of the random modes made one by one instead of drawn (see
//! `crash_states.rs` for exactly which). Each becomes a [`DiskImage`],
//! hashed to recover byte-identical disks once, and a fresh disk for the
//! engine to open with [`SimVfs::from_image`].
//!
//! Everything lives behind one `Mutex`: the simulator runs one thread, and
//! the lock only makes `SimVfs` `Send + Sync` as the trait demands.

mod config;
mod crash;
mod crash_describe;
mod crash_image;
mod crash_product;
mod crash_states;
mod damage;
mod data;
mod dir;
mod faults;
mod file;
mod hazards;
mod history;
mod image;
mod inode;
mod lock;
mod moves;
mod ops;
mod picture;
mod prefix_hash;
mod profile;
mod sectors;
mod silent;
mod snapshot;
mod state;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use vfs::{Holders, LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile};

pub use config::{CrashMode, CrashOutcome, CrashPoint, Damage, DamageKind, DiskConfig, MAX_SECTOR_BYTES};
pub use crash_product::{Coverage, COUNT_SUBSETS_UP_TO};
pub use crash_states::{CrashState, StateOptions, ALL_DIR_SUBSETS_UP_TO, MAX_TWO_FILE_STATES, WHOLE_OP_CUTS};
pub use damage::InFlightWrite;
pub use dir::EntryNow;
pub use faults::ArmedFault;
pub use hazards::{Hazard, HazardHow};
pub use history::LostWrites;
pub use image::DiskImage;
pub use profile::{FsProfile, FsyncNames};
pub use snapshot::{DiskRecording, DiskSnapshot, RecordedMark};

use crate::trace::{FaultKind, IoKind, Trace};
use file::{lock, SimFile};
use ops::Disk;
use snapshot::Recorder;
use state::FileSystem;

/// The simulated disk (see the module doc). Share it as `Arc<SimVfs>`.
#[derive(Debug)]
pub struct SimVfs {
    disk: Arc<Mutex<Disk>>,
}

impl SimVfs {
    /// An empty disk that records its I/O into `trace`. Panics on an
    /// invalid `config` ([`DiskConfig::assert_valid`]).
    pub fn new(config: DiskConfig, trace: Trace) -> Self {
        SimVfs { disk: Arc::new(Mutex::new(Disk::new(config, trace))) }
    }

    /// A disk holding exactly `image`, all of it durable, nothing
    /// pending: a crash state, ready for the engine to open. Panics on an
    /// invalid `config`, like [`SimVfs::new`].
    pub fn from_image(config: DiskConfig, image: &DiskImage, trace: Trace) -> Self {
        let mut disk = Disk::new(config, trace);
        let files = image.files.iter().map(|(id, file)| (*id, file.bytes.to_vec())).collect();
        disk.fs = FileSystem::restored(image.dirs.clone(), files);
        SimVfs { disk: Arc::new(Mutex::new(disk)) }
    }

    fn disk(&self) -> MutexGuard<'_, Disk> {
        lock(&self.disk)
    }

    /// [`Vfs::open`], the handle as what it is.
    fn open_sim_file(&self, path: &Path, mode: OpenMode) -> io::Result<SimFile> {
        let mut disk = self.disk();
        let name = disk.name_of(path);
        let inode = disk.run(IoKind::Open, name, 0, 0, |disk, _| disk.fs.open(path, mode))?;
        Ok(SimFile { disk: self.disk.clone(), epoch: disk.epoch, inode, name, writable: mode != OpenMode::Read })
    }

    /// The disk as it is now, as a power loss now would find it.
    pub fn snapshot(&self) -> DiskSnapshot {
        let disk = self.disk();
        let mut snapshot = DiskSnapshot::take(&disk.fs, disk.config.sector_bytes, None);
        snapshot.profile = disk.config.fs;
        snapshot
    }

    /// From the next I/O operation on, keep the disk as each one finds it,
    /// until [`SimVfs::take_recording`]. Panics if already recording.
    pub fn start_recording(&self) {
        let mut disk = self.disk();
        assert!(disk.recorder.is_none(), "already recording");
        disk.recorder = Some(Recorder::new(disk.io_index, disk.config.fs));
        disk.fs.keep_history = true;
    }

    /// Stop recording and return the snapshots: one per I/O operation
    /// since [`SimVfs::start_recording`], plus the disk as it is now.
    /// Panics if not recording.
    pub fn take_recording(&self) -> DiskRecording {
        let mut disk = self.disk();
        let recorder = disk.recorder.take().expect("recording was started");
        disk.fs.keep_history = false;
        recorder.finish(&disk.fs, disk.config.sector_bytes)
    }

    /// Run `f` on the trace (the driver records its own events this way).
    pub fn with_trace<R>(&self, f: impl FnOnce(&mut Trace) -> R) -> R {
        f(&mut self.disk().trace)
    }

    /// The trace so far, leaving an empty one (`Trace::default()`) in its
    /// place: for the end of a run.
    pub fn take_trace(&self) -> Trace {
        std::mem::take(&mut self.disk().trace)
    }

    /// A workload operation begins: fault decisions until the next call
    /// come from `fault_seed`'s stream, and the per-operation I/O count,
    /// fault flag and marks start afresh.
    pub fn begin_op(&self, fault_seed: u64) {
        self.disk().begin_op(fault_seed);
    }

    /// [`SimVfs::begin_op`], then [`SimVfs::arm_crash`] with `crash`,
    /// then `trace` run on the trace, in that order under one lock: the
    /// driver begins every operation so, and taking the disk's lock three
    /// times showed in its profile.
    pub fn begin_op_armed(&self, fault_seed: u64, crash: Option<CrashPoint>, trace: impl FnOnce(&mut Trace)) {
        let mut disk = self.disk();
        disk.begin_op(fault_seed);
        disk.crash_point = crash;
        trace(&mut disk.trace);
    }

    /// Turn fault injection on or off. Off, no fault of any kind is
    /// injected (capacity included); crash points still apply.
    pub fn set_faults_enabled(&self, on: bool) {
        self.disk().faults.set_enabled(on);
    }

    /// A workload operation ended (its result goes to the caller): every
    /// persistence hazard found since the last call (see `hazards.rs`),
    /// including files it leaves fsynced under a name that is not durable.
    pub fn end_op_hazards(&self) -> Vec<Hazard> {
        self.disk().end_op_hazards()
    }

    /// The harness observes (on) or stops observing (off): while it does,
    /// no fault fires — seeded or armed — and no index is noted as
    /// faultable. An audit that lists the directory is an observation, not
    /// part of the workload or the recovery under test.
    pub fn set_observing(&self, on: bool) {
        self.disk().faults.set_observing(on);
    }

    /// Make the I/O at global I/O index `io_index` fail, once, even where
    /// faults are turned off (`sim explore --faults`), as `kind` says: with
    /// EIO, a read, write, fsync or map as its own fault kind does, any
    /// other operation changing nothing (`FaultKind::MetaEio`); a write
    /// also after a short write, or with `StorageFull`. A write-only kind
    /// must be armed at a write ([`SimVfs::faultable_writes`]).
    pub fn arm_fault_at(&self, io_index: u64, kind: ArmedFault) {
        self.disk().faults.arm_at(io_index, kind, false);
    }

    /// [`SimVfs::arm_fault_at`] for a fault in a workload: it fires only
    /// if faults are on at that I/O (where the random mode's drawn faults
    /// could fire; not in an I/O the harness made with faults off).
    pub fn arm_workload_fault_at(&self, io_index: u64, kind: ArmedFault) {
        self.disk().faults.arm_at(io_index, kind, true);
    }

    /// Arm no fault, but note from now on every I/O index where one armed
    /// with [`SimVfs::arm_fault_at`] would fire (every I/O but the
    /// harness's observations): [`SimVfs::faultable_ios`], and the writes
    /// among them, [`SimVfs::faultable_writes`].
    pub fn note_faultable_ios(&self) {
        self.disk().faults.note_faultable(false);
    }

    /// [`SimVfs::note_faultable_ios`] for [`SimVfs::arm_workload_fault_at`]:
    /// only the I/Os made with faults on.
    pub fn note_workload_faultable_ios(&self) {
        self.disk().faults.note_faultable(true);
    }

    /// The I/O indices noted since [`SimVfs::note_faultable_ios`].
    pub fn faultable_ios(&self) -> Vec<u64> {
        self.disk().faults.faultable().to_vec()
    }

    /// Of [`SimVfs::faultable_ios`], the writes.
    pub fn faultable_writes(&self) -> Vec<u64> {
        self.disk().faults.faultable_writes().to_vec()
    }

    /// `None` if no fault was armed with [`SimVfs::arm_fault_at`], else
    /// whether it has fired.
    pub fn armed_fault(&self) -> Option<bool> {
        self.disk().faults.armed_fired()
    }

    /// Let an armed directory-fsync fault shut the file system down as a
    /// drawn one does, per the profile (`sim live`; exploration's armed
    /// fault never does).
    pub fn set_armed_fault_shuts_down(&self, on: bool) {
        self.disk().armed_shuts_down = on;
    }

    /// Aim (or, with `None`, disarm) the next crash.
    pub fn arm_crash(&self, point: Option<CrashPoint>) {
        self.disk().crash_point = point;
    }

    /// Whether the armed crash point has been reached: every I/O fails
    /// until [`SimVfs::power_loss`].
    pub fn crash_point_reached(&self) -> bool {
        self.disk().crash_reached
    }

    /// [`SimVfs::with_trace`], then [`SimVfs::crash_point_reached`], under
    /// one lock: the driver asks both after every reply.
    pub fn trace_then_crash_reached(&self, f: impl FnOnce(&mut Trace)) -> bool {
        let mut disk = self.disk();
        f(&mut disk.trace);
        disk.crash_reached
    }

    /// Whether any fault was injected since the last `begin_op`.
    pub fn faults_injected_this_op(&self) -> bool {
        self.disk().fault_this_op
    }

    /// The last mark since the last `begin_op`.
    pub fn last_mark(&self) -> Option<&'static str> {
        self.disk().marks.last().copied()
    }

    /// Every mark since the last `begin_op`, in order.
    pub fn marks_this_op(&self) -> Vec<&'static str> {
        self.disk().marks.clone()
    }

    /// Power loss (see the module doc): every handle and lock dies; the next disk
    /// is built from the durable images plus a choice over every pending
    /// operation, drawn from `crash_seed`'s stream; media corruption may
    /// strike; then the volatile views are the durable ones, nothing is
    /// pending, and the crash point is disarmed and no longer reached.
    /// Traces `Event::Crash` and a `Fault` event per torn sector and per
    /// corrupted file.
    pub fn power_loss(&self, crash_seed: u64) -> CrashOutcome {
        self.disk().power_loss(crash_seed)
    }

    /// The process restarts without losing power: every handle and lock
    /// dies and the crash point is disarmed (and no longer reached); the page
    /// cache — every volatile image and pending change — survives.
    ///
    /// Except on a file system that shut itself down (a failed directory
    /// fsync under a profile with `failed_sync_dir_shuts_down`: ext4, xfs,
    /// btrfs): no process restart brings it back, only a remount, which
    /// keeps what the journal committed and nothing of the page cache —
    /// what a power loss keeps. The restart is then a power loss, and its
    /// outcome (`Some`) is for the caller's checker, which must judge the
    /// recovery by the power-loss rule.
    #[must_use = "a restart of a shut-down file system is a power loss the checker must know of"]
    pub fn process_restart(&self) -> Option<CrashOutcome> {
        self.disk().process_restart()
    }

    /// Whether the file system has shut itself down: the next process
    /// restart is a remount (see [`SimVfs::process_restart`]).
    pub fn is_shut_down(&self) -> bool {
        self.disk().shut_down
    }

    /// How many faults of each kind were injected so far.
    pub fn fault_counts(&self) -> BTreeMap<FaultKind, u64> {
        self.disk().fault_counts.clone()
    }

    /// How many failed fsyncs have dropped a file's dirty pages so far
    /// (a shut-down file system's failures keep them): after one, the page
    /// cache no longer holds every byte written, which a process kill's
    /// rule assumes.
    pub fn dirty_drops(&self) -> u64 {
        self.disk().dirty_drops
    }

    /// The next I/O operation's global index (= operations so far).
    pub fn io_count(&self) -> u64 {
        self.disk().io_index
    }

    /// A counter that every change a power loss could see bumps (data
    /// written or cut, entries changed, anything made durable): equal
    /// before and after a call means the call changed nothing on the disk.
    pub fn changes(&self) -> u64 {
        self.disk().fs.version()
    }

    /// The part of [`SimVfs::changes`] that is not files' bytes: equal
    /// before and after a call means no directory entry, and no entry's
    /// durability, changed (a check of names may skip a second look).
    pub fn names_changes(&self) -> u64 {
        self.disk().fs.names_version()
    }

    /// Every file in `dir` by name with the bytes a read sees now: the
    /// harness's own look, not an I/O (nothing is traced or faulted). For
    /// a driver that checks what a recovery changed.
    pub fn files(&self, dir: &Path) -> BTreeMap<String, Vec<u8>> {
        let disk = self.disk();
        let Ok(entries) = disk.fs.entries(dir) else { return BTreeMap::new() };
        entries.map(|(name, id)| (name.to_string(), disk.fs.inode(id).volatile.clone())).collect()
    }

    /// The names whose bytes differ between `before` (a [`SimVfs::files`]
    /// of `dir`) and what a read sees in `dir` now, a name in only one of
    /// them included: `files` again and compared, without the copy.
    pub fn files_changed(&self, dir: &Path, before: &BTreeMap<String, Vec<u8>>) -> BTreeSet<String> {
        let disk = self.disk();
        let now: BTreeMap<&str, &[u8]> = match disk.fs.entries(dir) {
            Ok(entries) => entries.map(|(name, id)| (name, disk.fs.inode(id).volatile.as_slice())).collect(),
            Err(_) => BTreeMap::new(),
        };
        let gone_or_changed = before.iter().filter(|(name, bytes)| now.get(name.as_str()) != Some(&bytes.as_slice()));
        let added = now.keys().filter(|name| !before.contains_key(**name));
        gone_or_changed.map(|(name, _)| name.clone()).chain(added.map(|name| name.to_string())).collect()
    }

    /// Every name in `dir` with its inode number, as a read sees them now,
    /// each able to say whether it is durable (a power loss now would keep
    /// it): the harness's own look, not an I/O.
    /// Called after every step, so it copies nothing and looks up
    /// durability only when asked: `visit` sees each entry borrowed, in
    /// name order (none if `dir` is missing).
    pub fn visit_entries(&self, dir: &Path, mut visit: impl FnMut(EntryNow<'_>)) {
        let disk = self.disk();
        let Ok(entries) = disk.fs.entries_now(dir) else { return };
        for entry in entries {
            visit(entry);
        }
    }

    /// The file at `path` as the harness sees it now — its inode number and
    /// the length a read sees — or `None` if there is none. Not an I/O.
    pub fn identity(&self, path: &Path) -> Option<(u64, u64)> {
        let disk = self.disk();
        let id = disk.fs.lookup(path).ok()?;
        Some((id, disk.fs.inode(id).volatile.len() as u64))
    }

    /// Who holds `dir`'s lock now, if anyone: for a driver that checks a
    /// refused second open left the first holder's lock alone.
    pub fn lock_holders(&self, dir: &Path) -> Option<Holders> {
        self.disk().locks.holders(dir)
    }

    /// The sum of all files' volatile lengths. A file unlinked but still
    /// named by a durable entry still counts: its space is freed when the
    /// unlink is durable, as a journaling file system frees it at commit.
    pub fn volatile_bytes(&self) -> u64 {
        self.disk().fs.volatile_bytes()
    }
}

impl Vfs for SimVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(self.open_sim_file(path, mode)?))
    }

    fn read_once(&self, path: &Path) -> io::Result<Mapping> {
        let file = self.open_sim_file(path, OpenMode::Read)?;
        let len_bytes = file.len()?;
        file.read_whole(len_bytes).map(Mapping::from_vec)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut disk = self.disk();
        let name = disk.name_of(from);
        if disk.trace.keeps_all() {
            disk.next_detail.renamed_to = Some(to.to_string_lossy().into_owned());
        }
        disk.run(IoKind::Rename, name, 0, 0, |disk, _| {
            let auto_da_alloc = disk.config.fs.auto_da_alloc;
            disk.fs.rename(from, to, auto_da_alloc)
        })
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        let mut disk = self.disk();
        let name = disk.name_of(path);
        disk.run(IoKind::Unlink, name, 0, 0, |disk, _| disk.fs.unlink(path))
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        let mut disk = self.disk();
        let name = disk.name_of(dir);
        disk.run(IoKind::RemoveDir, name, 0, 0, |disk, _| disk.fs.remove_dir(dir))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        let mut disk = self.disk();
        let name = disk.name_of(dir);
        // The simulated disk names files with text (the engine writes no
        // other names); the seam carries them as bytes.
        let names = disk.run(IoKind::ListDir, name, 0, 0, |disk, _| disk.fs.list_dir(dir))?;
        Ok(names.into_iter().map(OsString::from).collect())
    }

    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        // No I/O of its own: it rides with the `list_dir` its caller made
        // (the seam's contract), so nothing is traced or faulted here.
        let disk = self.disk();
        disk.fs.list_subdirs(dir).map(|names| names.into_iter().map(OsString::from).collect())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut disk = self.disk();
        let name = disk.name_of(dir);
        disk.run(IoKind::CreateDir, name, 0, 0, |disk, _| {
            disk.fs.create_dir_all(dir);
            Ok(())
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut disk = self.disk();
        let name = disk.name_of(dir);
        disk.run(IoKind::SyncDir, name, 0, 0, |disk, _| disk.fs.sync_dir(dir))
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        let mut disk = self.disk();
        let name = disk.name_of(path);
        disk.run(IoKind::Map, name, 0, 0, |disk, index| {
            let inode = disk.fs.lookup(path)?;
            if disk.faults.take_armed(index) || disk.faults.read(&disk.config) {
                disk.inject(index, FaultKind::ReadEio);
                return Err(io::Error::other("map failed (simulated EIO)"));
            }
            // No bit flips here: a mapping lives long, so a flip in it
            // would be corruption, not a transient fault.
            Ok(Mapping::from_vec(disk.fs.inode(inode).volatile.clone()))
        })
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let mut disk = self.disk();
        let name = disk.name_of(path);
        disk.run(IoKind::Exists, name, 0, 0, |disk, _| Ok(disk.fs.exists(path)))
    }

    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        let mut disk = self.disk();
        lock::acquire(&self.disk, &mut disk, dir, mode)
    }

    fn mark(&self, phase: &'static str) {
        self.disk().mark(phase);
    }

    fn act_as(&self, thread: u32) {
        self.disk().actor = thread;
    }
}
