//! Rewrite: compact the AOF to one frame set per live key, and retire the
//! segments the new log no longer names. FLUSHALL lives here too, since
//! it is a logged delete followed by a rewrite.
//!
//! The new log holds hot rows as commands with absolute TTLs and cold rows
//! as `STUB key seq weight` frames, so a rewrite never reads cold data
//! back into memory; each windowed table's high-water mark follows its
//! `WINDOW` as a `WINDOW_MARK` frame (eviction must decide the same after
//! a rewrite and restart), and a `SNAPSHOT_END` frame ends the snapshot (the
//! whole new log is durable before it becomes the log, so damage to any of
//! it is refused rather than cut). The new log is the next generation
//! (`aof/header.rs`): a write misdirected between the two files, open at
//! once, lands invalid. It is written to a temp file, fsynced, renamed over
//! the AOF, and the directory fsynced; only then is the old log gone for
//! good, and only then may a segment that only the old log named be
//! dropped from the manifest and unlinked. Retiring it earlier would make
//! a crash before the rename replay a `SEGMENTED` frame for a segment that
//! no longer exists. The retirement's DROPs may then make the manifest due
//! for compaction (`manifest/compact.rs`), which runs last.

use std::collections::{BTreeMap, BTreeSet};

use super::command::{hset_args, Command};
use super::evict::is_sync_failure;
use super::row::FieldRef;
use super::value::Value;
use super::{Reply, Store, AOF_FILE, REWRITE_TEMP_FILE};
use crate::aof::{AofWriter, Record};
use crate::IoOp;
use crate::{Phase, Result};

/// Frames of one `HSET` carry at most this many payload bytes, far below
/// the frame limit, so no hash is too big to rewrite.
const REWRITE_CHUNK_BYTES: usize = 1 << 20;

impl Store {
    /// Rewrite the log (see the module doc) and retire unnamed segments.
    pub fn rewrite(&mut self) -> Result<()> {
        self.check_writable()?;
        let now_ms = self.clock.now_ms();
        let temp_path = self.dir.join(REWRITE_TEMP_FILE);
        let aof_path = self.dir.join(AOF_FILE);

        let written = (|| {
            // The next generation: no frame of the new log is valid in the
            // old one, nor one of the old in the new (`aof/header.rs`).
            let generation = self.writer().generation().checked_add(1).expect("log generations exhausted");
            let mut writer = AofWriter::create(self.vfs.clone(), &temp_path, self.options.fsync, now_ms, generation)?;
            let named = self.snapshot(now_ms, &mut writer)?;
            // Durable before the rename makes it the log: all of it vouched.
            writer.mark_snapshot_end()?;
            writer.write_batch(now_ms)?;
            if !canary!(RewriteNoFsync) {
                writer.sync(now_ms)?;
            }
            Ok((writer, named))
        })();
        let (mut writer, named) = match written {
            Ok(written) => written,
            Err(e) => {
                if is_sync_failure(&e) {
                    self.poison(&e);
                }
                // The old log is untouched and still the truth.
                self.remove_or_remember(&temp_path, REWRITE_TEMP_FILE.to_string());
                return Err(e);
            }
        };
        self.vfs.mark(Phase::RewriteSynced.as_str());

        // From the rename on, a failure leaves the directory in a state we
        // cannot name (old or new log): fail-stop, the next open decides.
        let renamed = Self::io(IoOp::Rename, &temp_path, self.vfs.rename(&temp_path, &aof_path));
        if !canary!(RenameErrorIgnored) {
            self.poison_on_error(renamed)?;
        }
        self.vfs.mark(Phase::RewriteRenamed.as_str());
        if !canary!(RewriteNoDirSync) {
            let synced = Self::io(IoOp::SyncDir, &self.dir, self.vfs.sync_dir(&self.dir));
            self.poison_on_error(synced)?;
        }
        self.vfs.mark(Phase::RewriteDirSynced.as_str());
        writer.set_path(aof_path);
        self.aof = Some(writer);

        if self.retire_unnamed(&named)? > 0 {
            let synced = Self::io(IoOp::SyncDir, &self.dir, self.vfs.sync_dir(&self.dir));
            self.poison_on_error(synced)?;
            self.vfs.mark(Phase::RewriteRetired.as_str());
        }
        self.compact_manifest_if_due()?;
        Ok(())
    }

    /// FLUSHALL: log it, apply it, then rewrite so every segment is
    /// retired. The flush is acknowledged once logged and applied: if the
    /// rewrite then fails without poisoning the store, the segments simply
    /// wait for the next rewrite.
    pub(super) fn flush_all(&mut self, now_ms: u64) -> Result<Reply> {
        let command = Command::FlushAll;
        self.log_command(&command, now_ms)?;
        let reply = self.apply(&command)?;
        if canary!(FlushallRetireEarly) {
            // Planted: the log names these segments until the rewrite below is durable.
            self.retire_unnamed(&BTreeSet::new())?;
        }
        self.vfs.mark(Phase::FlushallLogged.as_str());
        match self.rewrite() {
            Err(e) if self.poisoned.is_some() => Err(e),
            _ => Ok(reply),
        }
    }

    /// Encode the new log into `writer`'s pending batch, and return the
    /// segment seqs it names. Expired keys and fields are left out (they
    /// are logically gone already).
    fn snapshot(&self, now_ms: u64, writer: &mut AofWriter) -> Result<BTreeSet<u64>> {
        let mut named = BTreeSet::new();
        for (table, window) in &self.windows {
            emit(writer, Command::Window { table: table.clone(), column: window.column.clone(), span: window.span })?;
            // The rows that raised the high-water mark may be gone or
            // overwritten: without the mark, a reopened store would evict
            // differently. Planted: the mark is left out.
            if let (Some(max_seen), false) = (window.max_seen, canary!(RewriteDropsHwm)) {
                writer.batch_record(&Record::WindowMark { table: table.clone(), max_seen })?;
            }
        }
        for (key, entry) in &self.map {
            if entry.is_expired(now_ms) {
                continue;
            }
            match &entry.value {
                Value::Str(value) => emit(writer, Command::Set { key: key.to_vec(), value: value.clone() })?,
                Value::Cold(stub) => {
                    named.insert(stub.seq);
                    writer.batch_record(&Record::Stub { key: key.to_vec(), seq: stub.seq, weight: stub.weight })?;
                }
                Value::Hash(fields) => {
                    let live: Vec<_> = fields.iter().filter(|(_, slot)| !slot.is_expired(now_ms)).collect();
                    if live.is_empty() {
                        continue;
                    }
                    emit_hset(writer, key, &live)?;
                    let mut by_expiry: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
                    for (field, slot) in &live {
                        if let Some(at_ms) = slot.expire_at_ms {
                            by_expiry.entry(at_ms).or_default().push(field.to_vec());
                        }
                    }
                    for (at_ms, fields) in by_expiry {
                        emit(writer, Command::HPExpireAt { key: key.to_vec(), at_ms: deadline_arg(at_ms), fields })?;
                    }
                }
            }
            if let Some(at_ms) = entry.expire_at_ms.filter(|_| !canary!(RewriteDropsTtl)) {
                emit(writer, Command::PExpireAt { key: key.to_vec(), at_ms: deadline_arg(at_ms) })?;
            }
        }
        Ok(named)
    }
}

/// A stored deadline as a command's argument. Every stored deadline came
/// from a non-negative `i64`, so it fits.
fn deadline_arg(at_ms: u64) -> i64 {
    i64::try_from(at_ms).unwrap_or(i64::MAX)
}

/// Add `HSET key …` of a row's `live` fields to the rewrite's batch, in
/// commands of at most [`REWRITE_CHUNK_BYTES`] of names and values each
/// (one field may exceed it alone), borrowed from the row: a rewrite
/// copies no field or value on its way to the log.
fn emit_hset(writer: &mut AofWriter, key: &[u8], live: &[(&[u8], FieldRef<'_>)]) -> Result<()> {
    let mut args: Vec<&[u8]> = Vec::with_capacity(2 + 2 * live.len());
    let mut start = 0;
    let mut chunk_bytes = 0usize;
    for (i, (field, slot)) in live.iter().enumerate() {
        if i > start && chunk_bytes + field.len() + slot.value.len() > REWRITE_CHUNK_BYTES {
            emit_hset_chunk(writer, key, &live[start..i], &mut args)?;
            (start, chunk_bytes) = (i, 0);
        }
        chunk_bytes += field.len() + slot.value.len();
    }
    emit_hset_chunk(writer, key, &live[start..], &mut args)
}

/// One `HSET key …` of `pairs` into the rewrite's batch.
fn emit_hset_chunk<'a>(
    writer: &mut AofWriter,
    key: &'a [u8],
    pairs: &[(&'a [u8], FieldRef<'a>)],
    args: &mut Vec<&'a [u8]>,
) -> Result<()> {
    debug_assert!(!pairs.is_empty(), "an HSET holds at least one pair");
    args.clear();
    hset_args(key, pairs.iter().map(|(field, slot)| (*field, slot.value)), args);
    writer.batch_command(args)
}

/// Add `command` to the rewrite's batch, encoded from the command as it is.
fn emit(writer: &mut AofWriter, command: Command) -> Result<()> {
    command.with_args(|args| writer.batch_command(args))
}
