//! Open: rebuild a store from its directory.
//!
//! 0. Lock the directory (`Vfs::lock`), before reading or creating
//!    anything in it: exclusive to write, shared to read only. A holder
//!    that conflicts makes the open fail with [`Error::Locked`], having
//!    touched nothing. The store keeps the guard for its life.
//! 1. Open the manifest (a torn tail is cut durably) and load every
//!    registered segment — they are truth, named by seq.
//! 2. Recover the AOF (an invalid tail is quarantined and cut durably) and
//!    replay it in order: commands rebuild hot state; `SEGMENTED` stitches
//!    (each key the segment holds is demoted if hot, inserted as a stub if
//!    absent); `STUB` inserts one stub.
//! 3. Sweep: registered segments the log never names (a crash between seal
//!    and frame) are dropped and unlinked; unregistered `*.seg` files and a
//!    leftover rewrite temp file are unlinked. A segment the log names
//!    stays even with no live stub: dropping it would break the *next*
//!    replay, which meets the same `SEGMENTED` frame again.
//!
//! A read-only open ([`Store::open_read_only`]) runs the same steps
//! without a single write: no directory or file is created, a torn tail
//! (of the log or the manifest) is simply not replayed past, nothing is
//! quarantined, cut, fsynced or swept.
//!
//! Anything inconsistent — a frame naming an unregistered segment, a
//! logged command that no longer applies, a stub for a key its segment
//! lacks — is refused as corruption, never papered over.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use super::command::Command;
use super::segments::{seq_of_file_name, Segments};
use super::value::{decode_row, value_weight, Entry, Stub, Value};
use super::{Options, Store, AOF_FILE, REWRITE_TEMP_FILE};
use crate::aof::{AofRecovery, AofWriter, RecordRef};
use crate::clock::Clock;
use crate::manifest::Manifest;
use crate::seg::Seg;
use crate::vfs::{LockGuard, LockMode, Vfs};
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
    /// Unregistered files (`*.seg`, rewrite temp) unlinked.
    pub stray_files_swept: u64,
    /// Bytes cut from a torn manifest tail.
    pub manifest_torn_bytes: u64,
    /// What AOF recovery found: bytes quarantined, why, and whether valid
    /// frames followed the invalid one (a hint of bit rot, not a tear).
    pub aof: AofRecovery,
}

impl Store {
    /// Open (or create) the store in `dir`, holding its lock exclusively
    /// until the store is dropped: [`Error::Locked`] if anyone else holds
    /// it.
    pub fn open(
        vfs: Arc<dyn Vfs>,
        clock: Arc<dyn Clock>,
        dir: &Path,
        options: Options,
    ) -> Result<(Store, RecoveryReport)> {
        // The lock lives in the directory, so the directory comes first.
        Self::io("create_dir_all", dir, vfs.create_dir_all(dir))?;
        let lock = lock_dir(vfs.as_ref(), dir, LockMode::Exclusive)?;
        Self::open_locked(vfs, clock, dir, options, lock)
    }

    /// Open the existing store in `dir` for inspection, sharing its lock
    /// with other read-only openers (never with a writer: [`Error::Locked`]).
    /// Nothing on disk is written, created, cut, quarantined, fsynced or
    /// swept, even for a damaged store: a torn tail is simply not replayed
    /// past, a missing log is an empty one. Every write is refused with
    /// [`Error::ReadOnly`].
    pub fn open_read_only(vfs: Arc<dyn Vfs>, clock: Arc<dyn Clock>, dir: &Path) -> Result<(Store, RecoveryReport)> {
        let lock = lock_dir(vfs.as_ref(), dir, LockMode::Shared)?;
        Self::open_locked(vfs, clock, dir, Options::default(), lock)
    }

    fn open_locked(
        vfs: Arc<dyn Vfs>,
        clock: Arc<dyn Clock>,
        dir: &Path,
        options: Options,
        lock: LockGuard,
    ) -> Result<(Store, RecoveryReport)> {
        assert_eq!(lock.dir(), dir, "the lock is on the store's own directory");
        let read_only = lock.mode() == LockMode::Shared;
        let mut report = RecoveryReport::default();
        let (manifest, manifest_report) =
            if read_only { Manifest::open_read_only(vfs.as_ref(), dir)? } else { Manifest::open(vfs.clone(), dir)? };
        report.manifest_torn_bytes = manifest_report.torn_tail_bytes;

        let mut segments = Segments::default();
        for entry in manifest.live() {
            let path = dir.join(&entry.file);
            if seq_of_file_name(&entry.file) != Some(entry.seq) {
                return Err(Error::corrupt(
                    manifest.path(),
                    0,
                    format!("entry {} names file {:?}", entry.seq, entry.file),
                ));
            }
            let seg = match Seg::open(&*vfs, &path) {
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
            report.segments_loaded += 1;
        }

        let (aof, log, aof_report) = if read_only {
            let (log, aof_report) = AofWriter::recover_read_only(vfs.clone(), dir, AOF_FILE)?;
            (None, log, aof_report)
        } else {
            let now_ms = clock.now_ms();
            let (aof, log, aof_report) = AofWriter::recover(vfs.clone(), dir, AOF_FILE, options.fsync, now_ms)?;
            (Some(aof), log, aof_report)
        };
        report.aof = aof_report;

        let mut store = Store {
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
            lock,
        };
        assert_eq!(store.aof.is_none(), store.is_read_only());
        let mut named = BTreeSet::new();
        // Records are read in place from the log's bytes, one at a time;
        // `args` is reused so a command's argument list costs nothing.
        let mut records = log.records();
        let mut args: Vec<&[u8]> = Vec::new();
        let mut index = 0usize;
        while let Some(record) = records.next_record()? {
            store.replay(index, record, &mut args, &mut named, &mut report)?;
            report.frames_replayed += 1;
            index += 1;
        }
        assert_eq!(report.frames_replayed, log.frames(), "replay read what recovery counted");
        store.segments.settle_dead_counts();
        if !read_only {
            store.sweep(&named, &mut report)?;
        }
        store.vfs.mark(Phase::OpenDone);
        Ok((store, report))
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
            RecordRef::Command(logged) => {
                args.clear();
                args.extend(logged.iter());
                let command = Command::parse(args).map_err(|e| self.replay_error(index, e))?;
                if !command.is_write() {
                    return Err(self.replay_error(index, "a read command in the log"));
                }
                // HSET, most of any log, checks and promotes inside apply
                // with one map lookup instead of three.
                if !matches!(command, Command::HSet { .. }) {
                    self.check(&command).map_err(|e| self.replay_error(index, e))?;
                    self.promote_for(&command)?;
                }
                // A refusal is the log's fault; a failed promotion read
                // stays what it was (an I/O error is not corruption).
                self.apply(command).map_err(|e| match e {
                    Error::Invalid(_) => self.replay_error(index, e),
                    other => other,
                })?;
            }
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
            RecordRef::Stub { key, seq, weight } => {
                let Some(slot) = self.segments.get(seq) else {
                    return Err(
                        self.replay_error(index, format!("a stub names segment seq {seq}, which is not registered"))
                    );
                };
                if slot.seg.get(key)?.is_none() {
                    return Err(
                        self.replay_error(index, format!("segment {} does not hold the stubbed key", slot.file))
                    );
                }
                if self.map.contains_key(key) {
                    return Err(self.replay_error(index, "a stub for a key that already exists"));
                }
                named.insert(seq);
                self.insert_stub(key, Stub { seq, weight });
                report.stubs_inserted += 1;
            }
        }
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
            match self.map.get(&key) {
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
        let names = Self::io("list_dir", &self.dir, self.vfs.list_dir(&self.dir))?;
        for name in names {
            let stray = (name.ends_with(".seg") && !self.manifest.is_live_file(&name)) || name == REWRITE_TEMP_FILE;
            if stray {
                let path = self.dir.join(&name);
                let unlinked = Self::io("unlink", &path, self.vfs.unlink(&path));
                self.poison_on_error(unlinked)?;
                report.stray_files_swept += 1;
            }
        }
        if report.orphan_segments_swept > 0 || report.stray_files_swept > 0 {
            let synced = Self::io("sync_dir", &self.dir, self.vfs.sync_dir(&self.dir));
            self.poison_on_error(synced)?;
        }
        Ok(())
    }
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
        Err(e) => Err(Error::io("lock", dir, e)),
    }
}
