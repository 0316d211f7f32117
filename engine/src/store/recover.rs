//! Open: rebuild a store from its directory.
//!
//! First the directory is locked (`Vfs::lock`), before anything in it is
//! read: exclusively to write, shared to read only. A holder in the way
//! makes the open fail with [`Error::Locked`], having touched nothing; the
//! store keeps the guard for its life. Then it runs in two phases, so that
//! a refusal changes nothing on disk:
//!
//! **Read** (nothing is written):
//! 1. Read the manifest and the AOF and check every record
//!    ([`Manifest::read`], [`LogRead::read`]): damage to durable records is
//!    refused here (see the module doc of `aof` for how the log tells
//!    damage from a torn tail).
//! 2. Check that the two agree on the store's history: the log is made
//!    durable before the manifest is created, and nothing is appended to
//!    the log before the manifest is; so a missing (or empty) log beside
//!    an existing manifest, or a log with frames beside a missing or
//!    headerless manifest, is damage.
//! 3. Load every registered segment (read-only) — they are truth, named by
//!    seq.
//! 4. Replay the log's valid prefix in order: commands rebuild hot state;
//!    `SEGMENTED` stitches (each key the segment holds is demoted if hot,
//!    inserted as a stub if absent); `STUB` inserts one stub; `WINDOW_MARK`
//!    restores a table's high-water mark.
//!
//! **Write**, once nothing can refuse:
//! 5. Finish the log's recovery (a torn tail quarantined and cut, a fresh
//!    header on a new log, fsync, directory fsync), then the manifest's (a
//!    torn tail cut, or a fresh header) — in that order, so a new store's
//!    log is durable before its manifest exists.
//! 6. Sweep: registered segments the log never names (a crash between seal
//!    and frame) are dropped and unlinked; unregistered segment files of
//!    the engine's naming and a leftover rewrite or manifest-compaction
//!    temp file are unlinked — the unregistered segments only once the
//!    manifest's `next_seq` is durably past their seqs, so no seq that
//!    ever named a file is handed out again; a name the engine never
//!    writes is left alone and reported (`store/names.rs`). A
//!    segment the log names stays even with no live stub: dropping it would
//!    break the *next* replay, which meets the same `SEGMENTED` frame
//!    again. No destructive step follows damage: after a point-in-time cut
//!    the sweep is skipped (and reported), because the cut frames may have
//!    been the ones naming those segments.
//! 7. Compact the manifest if dead records dominate it
//!    (`manifest/compact.rs`) — only after a sweep, so never in a
//!    point-in-time open.
//!
//! A read-only open ([`Store::open_read_only`]) runs the read phase alone,
//! for inspection: it reports damage instead of refusing it (replaying up
//! to the first invalid frame), and writes, creates, cuts, quarantines,
//! fsyncs and sweeps nothing.
//!
//! Anything inconsistent — a frame naming an unregistered segment, a
//! logged command that no longer applies, a stub for a key its segment
//! lacks — is refused as corruption, never papered over.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use super::command::{Command, Parsed};
use super::names::{classify, Listed};
use super::segments::{seq_of_file_name, Segments};
use super::value::{decode_row, value_weight, Entry, Stub, Value};
use super::{Options, Store, AOF_FILE};
use crate::aof::{AofRecovery, Args, LogRead, RecordRef, RecoveryMode};
use crate::clock::Clock;
use crate::manifest::{Manifest, ManifestRead, MANIFEST_TEMP_FILE};
use crate::seg::Seg;
use crate::vfs::{LockGuard, LockMode, Vfs};
use crate::IoOp;
use crate::{Error, Phase, Result};

/// What [`Store::open`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Log frames replayed.
    pub frames_replayed: u64,
    /// Hot rows demoted to stubs by `SEGMENTED` frames.
    pub stubs_stitched: u64,
    /// Stubs inserted for absent keys (`SEGMENTED` or `STUB` frames).
    pub stubs_inserted: u64,
    /// Registered segments loaded.
    pub segments_loaded: u64,
    /// Registered segments no frame names, dropped and unlinked.
    pub orphan_segments_swept: u64,
    /// The engine's own leftovers unlinked: segment files of its naming
    /// that the manifest does not register, rewrite and manifest temp files.
    pub stray_files_swept: u64,
    /// Names in the directory the engine never writes (not UTF-8, or none
    /// of its file patterns: `store/names.rs`), found by the sweep and
    /// left untouched, as listed. Another program's files are never
    /// removed and never stop an open.
    pub foreign_files: Vec<OsString>,
    /// The sweep did not run: this open cut the log at damage or at a
    /// point-in-time cut, and nothing is removed after damage. Orphans and
    /// strays wait for a later open or rewrite.
    pub sweep_skipped: bool,
    /// Bytes cut from a torn manifest tail.
    pub manifest_torn_bytes: u64,
    /// Manifest ADD and DROP records replayed: about the live segments'
    /// count once compaction has run, whatever the directory's age.
    pub manifest_records_replayed: u64,
    /// The open compacted the manifest (step 7 of the module doc, or to
    /// reserve a debris file's seq: `seqs_reserved_through`).
    pub manifest_compacted: bool,
    /// The highest seq of a segment file the manifest never registered
    /// (a failed or crashed seal's debris), when the sweep removed it only
    /// after raising the manifest's `next_seq` past it durably: no seq
    /// that ever named a file in the directory is handed out again.
    pub seqs_reserved_through: Option<u64>,
    /// What AOF recovery found: bytes quarantined, why, whether valid
    /// frames followed the invalid one, and whether it was damage (a
    /// point-in-time cut only; the default refuses damage).
    pub aof: AofRecovery,
}

impl Store {
    /// Open (or create) the store in `dir` (see the module doc), holding its
    /// lock exclusively until the store is dropped: [`Error::Locked`] if
    /// anyone else holds it.
    pub fn open(
        vfs: Arc<dyn Vfs>,
        clock: Arc<dyn Clock>,
        dir: &Path,
        options: Options,
    ) -> Result<(Store, RecoveryReport)> {
        // The lock lives in the directory, so the directory comes first.
        Self::io(IoOp::CreateDirAll, dir, vfs.create_dir_all(dir))?;
        let lock = lock_dir(vfs.as_ref(), dir, LockMode::Exclusive)?;
        let mode = if options.point_in_time { RecoveryMode::PointInTime } else { RecoveryMode::Consistent };
        Self::open_locked(vfs, clock, dir, options, mode, lock)
    }

    /// Open the existing store in `dir` for inspection, sharing its lock
    /// with other read-only openers (never with a writer: [`Error::Locked`]).
    /// Damage is reported, not refused: the log is replayed up to its first
    /// invalid frame, a missing log is an empty one. Nothing on disk is
    /// written, created, cut, quarantined, fsynced or swept. Every write is
    /// refused with [`Error::ReadOnly`].
    pub fn open_read_only(vfs: Arc<dyn Vfs>, clock: Arc<dyn Clock>, dir: &Path) -> Result<(Store, RecoveryReport)> {
        let lock = lock_dir(vfs.as_ref(), dir, LockMode::Shared)?;
        Self::open_locked(vfs, clock, dir, Options::default(), RecoveryMode::ReadOnly, lock)
    }

    fn open_locked(
        vfs: Arc<dyn Vfs>,
        clock: Arc<dyn Clock>,
        dir: &Path,
        options: Options,
        mode: RecoveryMode,
        lock: LockGuard,
    ) -> Result<(Store, RecoveryReport)> {
        assert_eq!(lock.dir(), dir, "the lock is on the store's own directory");
        let read_only = lock.mode() == LockMode::Shared;
        assert_eq!(read_only, mode == RecoveryMode::ReadOnly);
        let mut report = RecoveryReport::default();

        // Read: nothing below changes the disk until every check passed.
        let read = OpenRead::read(vfs.as_ref(), dir, mode, &mut report)?;
        let (mut store, log_read) = Store::with_files(vfs, clock, dir, options, read, lock)?;
        let named = store.replay_log(&log_read, &mut report)?;

        if read_only {
            // Not `sweep_pending`: an inspector's audit lists what a writer
            // would sweep.
            report.sweep_skipped = true;
            store.vfs.mark(Phase::OpenDone.as_str());
            return Ok((store, report));
        }

        // Write: the log first (a new store's log is durable before its
        // manifest exists), then the manifest, then the sweep.
        let vfs = store.vfs.clone();
        report.aof.quarantine_file = store.writer().finish_recovery(vfs.as_ref())?;
        store.manifest.finish_recovery(vfs.as_ref())?;
        // A point-in-time open never unlinks or drops anything: the frames
        // it cut may have been the ones naming a segment. Planted: it
        // sweeps anyway after cutting damage.
        let sweep_anyway = canary!(SweepAfterDamage) && report.aof.damage.is_some();
        if mode == RecoveryMode::PointInTime && !sweep_anyway {
            report.sweep_skipped = true;
            store.sweep_pending = true;
        } else {
            store.sweep(&named, &mut report)?;
            report.manifest_compacted |= store.compact_manifest_if_due()?;
        }
        store.vfs.mark(Phase::OpenDone.as_str());
        Ok((store, report))
    }

    /// The store over what `read` found, its files opened (created only
    /// where missing, and then nothing a replay reads can refuse) with
    /// their writes held back; none at all when the open is read-only.
    /// Hands the log's read back for the replay.
    fn with_files(
        vfs: Arc<dyn Vfs>,
        clock: Arc<dyn Clock>,
        dir: &Path,
        options: Options,
        read: OpenRead,
        lock: LockGuard,
    ) -> Result<(Store, LogRead)> {
        let OpenRead { manifest: manifest_read, log: log_read, segments } = read;
        let now_ms = clock.now_ms();
        let (aof, manifest) = if lock.mode() == LockMode::Shared {
            (None, manifest_read.read_only())
        } else {
            (Some(log_read.open_writer(vfs.clone(), options.fsync, now_ms)?), manifest_read.open(vfs.clone())?)
        };
        let store = Store {
            vfs,
            clock,
            dir: dir.to_path_buf(),
            options,
            aof,
            manifest,
            map: Default::default(),
            segments,
            windows: Default::default(),
            used_memory: 0,
            poisoned: None,
            sweep_pending: false,
            debris_seqs_noted: false,
            leftovers: BTreeSet::new(),
            lock,
        };
        assert_eq!(store.aof.is_none(), store.is_read_only());
        Ok((store, log_read))
    }

    /// Replay the log's valid records into the empty store; the seqs of
    /// the segments its frames name, for the sweep.
    fn replay_log(&mut self, log_read: &LogRead, report: &mut RecoveryReport) -> Result<BTreeSet<u64>> {
        assert!(self.map.is_empty() && self.used_memory == 0, "replay starts from an empty store");
        let mut named = BTreeSet::new();
        // Records are read in place from the log's bytes, one at a time;
        // `args` is reused so a command's argument list costs nothing.
        let mut records = log_read.records();
        let mut args: Vec<&[u8]> = Vec::new();
        let mut index = 0usize;
        while let Some(record) = records.next_record()? {
            self.replay(index, record, &mut args, &mut named, report)?;
            report.frames_replayed += 1;
            index += 1;
        }
        assert_eq!(report.frames_replayed, report.aof.frames, "replay read what recovery counted");
        self.segments.settle_dead_counts();
        Ok(named)
    }

    fn replay_error(&self, index: usize, why: impl std::fmt::Display) -> Error {
        let path = self.dir.join(AOF_FILE);
        Error::corrupt(path, 0, format!("frame #{index} (after the header) does not replay: {why}"))
    }

    fn replay<'a>(
        &mut self,
        index: usize,
        record: RecordRef<'a>,
        args: &mut Vec<&'a [u8]>,
        named: &mut BTreeSet<u64>,
        report: &mut RecoveryReport,
    ) -> Result<()> {
        match record {
            RecordRef::Command(logged) => self.replay_command(index, logged, args)?,
            RecordRef::Segmented { seq, file } => {
                match self.segments.get(seq) {
                    Some(slot) if slot.file == file => {}
                    _ => {
                        return Err(self
                            .replay_error(index, format!("names segment {file} (seq {seq}), which is not registered")))
                    }
                }
                named.insert(seq);
                self.stitch(index, seq, report)?;
            }
            RecordRef::WindowMark { table, max_seen } => {
                let Some(window) = self.windows.get_mut(table) else {
                    return Err(self.replay_error(index, "a window mark for a table with no window"));
                };
                window.max_seen = Some(window.max_seen.map_or(max_seen, |seen| seen.max(max_seen)));
            }
            RecordRef::Stub { key, seq, weight } => {
                self.replay_stub(index, key, Stub { seq, weight })?;
                named.insert(seq);
                report.stubs_inserted += 1;
            }
        }
        Ok(())
    }

    /// A logged command, applied as it was when it was logged: refused if
    /// it no longer parses, checks or applies (the log's fault), except
    /// for an I/O error promoting a cold row.
    fn replay_command<'a>(&mut self, index: usize, logged: Args<'a>, args: &mut Vec<&'a [u8]>) -> Result<()> {
        args.clear();
        args.extend(logged.iter());
        let applied = match Command::parse_borrowed(args).map_err(|e| self.replay_error(index, e))? {
            // HSET, most of any log, checks and promotes inside
            // apply with one map lookup instead of three, packing
            // its pairs into the row straight from the log.
            Parsed::HSet { key, pairs } => {
                self.apply_hset(key, pairs.chunks_exact(2).map(|pair| (pair[0], pair[1]))).map(drop)
            }
            Parsed::Other(command) => {
                if !command.is_write() {
                    return Err(self.replay_error(index, "a read command in the log"));
                }
                self.check(&command).map_err(|e| self.replay_error(index, e))?;
                self.promote_for(&command)?;
                self.apply(&command).map(drop)
            }
        };
        // A refusal is the log's fault; a failed promotion read
        // stays what it was (an I/O error is not corruption).
        applied.map_err(|e| match e {
            Error::Invalid(_) => self.replay_error(index, e),
            other => other,
        })
    }

    /// A `STUB` frame: `key`'s row lives in the registered segment `stub`
    /// names, and nowhere in memory yet.
    fn replay_stub(&mut self, index: usize, key: &[u8], stub: Stub) -> Result<()> {
        let seq = stub.seq;
        let Some(slot) = self.segments.get(seq) else {
            return Err(self.replay_error(index, format!("a stub names segment seq {seq}, which is not registered")));
        };
        if slot.seg.get(key)?.is_none() {
            return Err(self.replay_error(index, format!("segment {} does not hold the stubbed key", slot.file)));
        }
        if self.map.contains_key(key) {
            return Err(self.replay_error(index, "a stub for a key that already exists"));
        }
        self.insert_stub(key, stub);
        Ok(())
    }

    /// Demote-or-insert every key segment `seq` holds. A hot row must be
    /// exactly the sealed row (the frame was logged right after sealing
    /// it, and replay has rebuilt that instant): anything else is refused.
    fn stitch(&mut self, index: usize, seq: u64, report: &mut RecoveryReport) -> Result<()> {
        let slot = self.segments.get(seq).expect("checked by the caller");
        let mut rows = Vec::new();
        for item in slot.seg.iter() {
            let (key, payload) = item?;
            let row = decode_row(payload, 0).map_err(|e| e.in_file(slot.seg.path()))?;
            rows.push((key.to_vec(), row));
        }
        for (key, row) in rows {
            match self.map.get(&key[..]) {
                None => {
                    let weight = value_weight(&Value::Hash(row));
                    self.insert_stub(&key, Stub { seq, weight });
                    report.stubs_inserted += 1;
                }
                // Planted: a hot row stays hot, its sealed copy unused.
                Some(Entry { value: Value::Hash(_), .. }) if canary!(StitchAbsentOnly) => {}
                Some(Entry { value: Value::Hash(hot), expire_at_ms: None }) => {
                    if *hot != row {
                        return Err(self.replay_error(index, "a stitched hot row differs from its sealed copy"));
                    }
                    self.demote(&key, seq);
                    report.stubs_stitched += 1;
                }
                Some(Entry { value: Value::Cold(old), expire_at_ms: None }) => {
                    // Promoted in memory by a write whose frame never made
                    // it to the log, then sealed again: the log still has
                    // it cold in the older segment. Same row, new home.
                    if self.segments.read_row(&key, *old)? != row {
                        return Err(self.replay_error(index, "a re-sealed cold row differs from its older copy"));
                    }
                    self.restub(&key, seq);
                    report.stubs_stitched += 1;
                }
                Some(_) => return Err(self.replay_error(index, "a stitched key is not an evictable row")),
            }
        }
        Ok(())
    }

    /// Step 3 of open (see the module doc).
    fn sweep(&mut self, named: &BTreeSet<u64>, report: &mut RecoveryReport) -> Result<()> {
        report.orphan_segments_swept = self.retire_unnamed(named)?;
        self.sweep_pending = false;
        let names = Self::io(IoOp::ListDir, &self.dir, self.vfs.list_dir(&self.dir))?;
        let compacted = self.reserve_debris_seqs(&names, report)?;
        for name in names {
            // A compaction's temp file is never the manifest: the rename
            // that would have made it one is atomic (`manifest/compact.rs`).
            match classify(&name, |file| self.manifest.is_live_file(file)) {
                Listed::Kept => {}
                // The reservation's compaction wrote its ledger under that
                // name and renamed it over the manifest: it is gone.
                Listed::LeftoverTemp(MANIFEST_TEMP_FILE) if compacted => {}
                Listed::UnregisteredSegment(file) | Listed::LeftoverTemp(file) => {
                    let path = self.dir.join(file);
                    let unlinked = Self::io(IoOp::Unlink, &path, self.vfs.unlink(&path));
                    self.poison_on_error(unlinked)?;
                    report.stray_files_swept += 1;
                }
                Listed::Foreign => report.foreign_files.push(name),
            }
        }
        if report.orphan_segments_swept > 0 || report.stray_files_swept > 0 {
            let synced = Self::io(IoOp::SyncDir, &self.dir, self.vfs.sync_dir(&self.dir));
            self.poison_on_error(synced)?;
        }
        Ok(())
    }

    /// Before the sweep removes segment files the manifest never
    /// registered, make sure their seqs are never handed out again: a seal
    /// that failed or crashed before its ADD consumed its seq in memory
    /// only, and once the file is gone nothing would remember that the seq
    /// named one (the seed 1007537 reused it after a clean restart). The
    /// manifest's `next_seq` is raised past the highest of them durably
    /// ([`crate::manifest::Manifest::reserve_through`]) where it is not
    /// already; the debris goes only after that.
    /// Whether it compacted the manifest.
    fn reserve_debris_seqs(&mut self, names: &[OsString], report: &mut RecoveryReport) -> Result<bool> {
        let highest = names
            .iter()
            .filter_map(|name| match classify(name, |file| self.manifest.is_live_file(file)) {
                Listed::UnregisteredSegment(file) => seq_of_file_name(file),
                _ => None,
            })
            .max();
        let Some(highest) = highest else { return Ok(false) };
        let vfs = self.vfs.clone();
        let reserved = self.manifest.reserve_through(vfs.as_ref(), highest);
        let compacted = self.poison_on_error(reserved)?;
        if compacted {
            report.manifest_compacted = true;
            report.seqs_reserved_through = Some(highest);
        }
        Ok(compacted)
    }
}

/// What an open reads before it changes anything: the manifest, the log
/// (each checked whole) and the registered segments.
struct OpenRead {
    manifest: ManifestRead,
    log: LogRead,
    segments: Segments,
}

impl OpenRead {
    /// Read the store in `dir`, refusing a manifest and a log whose
    /// histories disagree (a writer's open only: an inspector reports);
    /// what was found goes into `report`.
    fn read(vfs: &dyn Vfs, dir: &Path, mode: RecoveryMode, report: &mut RecoveryReport) -> Result<OpenRead> {
        let read_only = mode == RecoveryMode::ReadOnly;
        let manifest_read = Manifest::read(vfs, dir)?;
        let log_read = LogRead::read(vfs, dir, AOF_FILE, mode)?;
        if !read_only {
            check_history(&manifest_read, &log_read)?;
        }
        report.manifest_torn_bytes = manifest_read.report().torn_tail_bytes;
        report.manifest_records_replayed = manifest_read.report().records_replayed;
        report.aof = log_read.report().clone();
        if read_only && report.aof.dropped_bytes > 0 && canary!(ReadOnlyCutsTail) {
            // Planted: an inspection "repairs" the torn tail it found.
            if let Ok(mut log) = vfs.open(&dir.join(AOF_FILE), crate::vfs::OpenMode::Write) {
                let _ = log.set_len(report.aof.valid_len_bytes);
            }
        }
        let segments = load_segments(vfs, dir, &manifest_read)?;
        report.segments_loaded = segments.len() as u64;
        Ok(OpenRead { manifest: manifest_read, log: log_read, segments })
    }
}

/// Step 2 of the module doc: the log and the manifest agree on the store's
/// history, or one of them was damaged (in every mode that writes).
fn check_history(manifest: &ManifestRead, log: &LogRead) -> Result<()> {
    let log_missing = log.report().missing || log.report().valid_len_bytes == 0 && !log.has_frames();
    // A point-in-time recovery cuts a log; it does not invent one.
    if manifest.exists() && log_missing && !canary!(MissingLogIsEmpty) {
        let why = "the log is missing or empty, but the manifest exists: a store's log is durable before its \
                   manifest is created, so this is damage. Nothing on disk was changed";
        return Err(Error::corrupt(log.path(), 0, why));
    }
    if log.has_frames() && !manifest.has_header() {
        let why = if manifest.exists() { "has no valid header" } else { "is missing" };
        let why = format!(
            "the manifest {why}, but the log has been written to: a store's manifest is durable before its first \
             append, so this is damage. Nothing on disk was changed"
        );
        return Err(Error::corrupt(manifest.path(), 0, why));
    }
    Ok(())
}

/// Step 3 of the module doc: every registered segment, opened read-only
/// and checked against its registration.
fn load_segments(vfs: &dyn Vfs, dir: &Path, manifest: &ManifestRead) -> Result<Segments> {
    let mut segments = Segments::default();
    for entry in manifest.live() {
        let path = dir.join(&entry.file);
        if seq_of_file_name(&entry.file) != Some(entry.seq) {
            return Err(Error::corrupt(manifest.path(), 0, format!("entry {} names file {:?}", entry.seq, entry.file)));
        }
        let seg = match Seg::open(vfs, &path) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                // Registered means durable before any frame named it:
                // a missing file is damage to the store, not a crash.
                let why = format!("registers segment {} (seq {}), which does not exist", entry.file, entry.seq);
                return Err(Error::corrupt(manifest.path(), 0, why));
            }
            other => other?,
        };
        if seg.meta().seq != entry.seq {
            return Err(Error::corrupt(
                &path,
                0,
                format!("footer says seq {}, manifest says {}", seg.meta().seq, entry.seq),
            ));
        }
        segments.insert(entry.seq, seg, entry.file.clone());
    }
    Ok(segments)
}

/// Take `dir`'s lock in `mode`, or say who is in the way: another holder is
/// [`Error::Locked`], anything else an I/O error naming the directory.
fn lock_dir(vfs: &dyn Vfs, dir: &Path, mode: LockMode) -> Result<LockGuard> {
    match vfs.lock(dir, mode) {
        Ok(guard) => {
            assert_eq!(guard.mode(), mode, "the Vfs locked in the mode asked for");
            Ok(guard)
        }
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(Error::Locked { dir: dir.to_path_buf() }),
        Err(e) => Err(Error::io(IoOp::Lock, dir, e)),
    }
}
