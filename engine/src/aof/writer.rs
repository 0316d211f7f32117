//! [`AofWriter`]: appends frames at the log's valid end and keeps the
//! fsync policy.
//!
//! The writer owns three promises:
//!
//! - **No partial frame stays in the file.** A failed or short write is cut
//!   back to the previous end before the error is returned; if the cut
//!   fails too, the writer is poisoned, because the next append would land
//!   after a partial frame and be lost to the next recovery.
//! - **A failed fsync is final.** The kernel may have dropped the dirty
//!   pages already, so a later fsync that succeeds proves nothing about
//!   them (fsyncgate). The writer is poisoned and refuses every later
//!   append, sync and tick with [`Error::Poisoned`] until the store is
//!   reopened and recovery reads back what is really on disk.
//! - **Time comes from the caller.** Every call that can fsync takes
//!   `now_ms`; the writer never reads a clock, so a simulated run decides
//!   exactly when an `everysec` fsync happens.
//!
//! It also keeps the log able to tell damage from a torn write (see the
//! module doc of `aof`): the head of each append batch carries a `SYNCED`
//! mark whenever an fsync has moved the durable end since the last mark.
//!
//! Encoding reuses the writer's buffers, so a warm writer does not
//! allocate per append.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::header::encode_rewrite_header;
use super::record::{command_payload_len_bytes, encode_command_payload};
use super::recover::PendingRecovery;
use super::{FsyncPolicy, Record, KIND_COMMAND, KIND_SNAPSHOT_END, KIND_SYNCED};
use crate::frame::{encode_frame, encode_frame_with, Place, MAX_FRAME_PAYLOAD_BYTES};
use crate::vfs::{OpenMode, Vfs, VfsFile};
use crate::IoOp;
use crate::{Error, Result};

/// How long `everysec` lets appended bytes stay unsynced.
const EVERYSEC_INTERVAL_MS: u64 = 1_000;

/// The encode buffers keep at most this much capacity between appends, so
/// one huge batch (a rewrite) does not pin its memory for the writer's life.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// Appends records to one log file (see the module doc).
pub struct AofWriter {
    file: Box<dyn VfsFile>,
    /// For error messages only; the store renames the file under us after a
    /// rewrite and tells us with [`AofWriter::set_path`].
    path: PathBuf,
    policy: FsyncPolicy,
    /// Which of the store's logs the file is: every frame is bound to it.
    generation: u64,
    /// The end of the last whole frame: where the next one goes.
    len_bytes: u64,
    /// Whether anything was written (or cut) since the last good fsync.
    unsynced: bool,
    /// The caller's clock at the last good fsync (or at open).
    last_sync_ms: u64,
    /// The log's length at the last good fsync: its durable prefix.
    durable_len_bytes: u64,
    /// The durable length the last `SYNCED` mark in the file vouches for
    /// (as far as this writer knows: 0 until it writes one).
    marked_len_bytes: u64,
    /// The end of the last frame written that is not a mark: a mark with
    /// no data after it need vouch only up to here (see `owes_mark`).
    data_end_bytes: u64,
    /// The mark the pending batch opens with, committed once it is written.
    batch_mark: Option<u64>,
    /// The pending batch holds a frame that is not a mark.
    batch_has_data: bool,
    /// Recovery's writes, not yet done: nothing may be appended before.
    pending: Option<PendingRecovery>,
    /// Why the writer refuses to write, once it must.
    poisoned: Option<String>,
    /// One record's payload, before it is framed.
    payload_buf: Vec<u8>,
    /// Whole frames waiting for the next write.
    frame_buf: Vec<u8>,
}

impl std::fmt::Debug for AofWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AofWriter")
            .field("path", &self.path)
            .field("policy", &self.policy)
            .field("generation", &self.generation)
            .field("len_bytes", &self.len_bytes)
            .field("unsynced", &self.unsynced)
            .field("last_sync_ms", &self.last_sync_ms)
            .field("durable_len_bytes", &self.durable_len_bytes)
            .field("marked_len_bytes", &self.marked_len_bytes)
            .field("pending", &self.pending.is_some())
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl AofWriter {
    /// A writer over `file`, the log of `generation`, whose first
    /// `len_bytes` will be a valid, durable log once `pending` (recovery's
    /// writes) is done.
    pub(super) fn resume_pending(
        file: Box<dyn VfsFile>,
        path: PathBuf,
        policy: FsyncPolicy,
        (generation, len_bytes): (u64, u64),
        now_ms: u64,
        pending: PendingRecovery,
    ) -> Self {
        AofWriter { pending: Some(pending), ..AofWriter::resume(file, path, policy, (generation, len_bytes), now_ms) }
    }

    fn resume(
        file: Box<dyn VfsFile>,
        path: PathBuf,
        policy: FsyncPolicy,
        (generation, len_bytes): (u64, u64),
        now_ms: u64,
    ) -> Self {
        assert!(generation > 0, "generation 0 is the headers' own place");
        AofWriter {
            file,
            path,
            policy,
            generation,
            len_bytes,
            unsynced: false,
            last_sync_ms: now_ms,
            durable_len_bytes: 0,
            marked_len_bytes: 0,
            data_end_bytes: 0,
            batch_mark: None,
            batch_has_data: false,
            pending: None,
            poisoned: None,
            payload_buf: Vec::new(),
            frame_buf: Vec::new(),
        }
    }

    /// Recovery's writes, if still owed (see `recover.rs`).
    pub(super) fn take_pending(&mut self) -> Option<PendingRecovery> {
        self.pending.take()
    }

    /// The file, for recovery's writes.
    pub(super) fn file_mut(&mut self) -> &mut dyn VfsFile {
        self.file.as_mut()
    }

    /// What the recovered log's marks already vouch for, and where its data
    /// ends: no new mark is owed for what they cover.
    pub(super) fn resume_marks(&mut self, vouched_len_bytes: u64, data_end_bytes: u64) {
        assert!(data_end_bytes <= self.len_bytes);
        self.marked_len_bytes = vouched_len_bytes;
        self.data_end_bytes = data_end_bytes;
    }

    /// Whether a mark is owed before `data` is written (`false`: a mark
    /// on its own, as a clean close writes).
    ///
    /// Every batch of records opens with a mark once anything the log
    /// holds after its header is durable, repeating the last one when no
    /// fsync moved the durable end since: one mark per fsync was a single
    /// point of failure — a write misdirected onto it took with it the only
    /// proof that an earlier damaged frame was durable, and the whole fsync
    /// window of durable records after the damage was cut as a torn tail
    /// (the soak's seed 2470732: a lost write, then a misdirected one over
    /// the one mark). Any later durable batch can now vouch, as the
    /// simulator's rule for damage a format could tell assumes. Before
    /// data, a mark covers every durable byte, marks included: damage to
    /// an unvouched mark followed by a valid record looks like a torn write
    /// with a later unsynced frame reordered after it, and would cut the
    /// record (rot in recovery's own mark once cut an acknowledged HSET).
    /// On its own, a mark is owed only for durable data not yet marked:
    /// with nothing after it, damage to an unvouched mark cuts that mark
    /// and nothing else. A log that holds no record yet needs no mark at
    /// all (its header is proven durable by any valid frame after it).
    fn owes_mark(&self, data: bool) -> bool {
        if data && self.data_end_bytes > 0 {
            return self.durable_len_bytes > 0;
        }
        self.marked_len_bytes < self.durable_len_bytes.min(self.data_end_bytes)
    }

    /// The caller's clock at the last good fsync.
    pub(super) fn last_sync_ms(&self) -> u64 {
        self.last_sync_ms
    }

    /// Recovery made the whole log durable.
    pub(super) fn recovered_durable(&mut self) {
        assert!(self.pending.is_none());
        self.unsynced = false;
        self.durable_len_bytes = self.len_bytes;
    }

    /// Which of the store's logs this writer's file is.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Create (or cut to empty) a rewrite's log of `generation` at `path`,
    /// holding only a header that says a snapshot follows, NOT fsynced: a
    /// rewrite writes its temp file with this, appends the new log, ends
    /// its snapshot ([`AofWriter::mark_snapshot_end`], which every such log
    /// must get before it is read as a log), and makes it durable with
    /// [`AofWriter::sync`] before renaming.
    pub fn create(
        vfs: Arc<dyn Vfs>,
        path: &Path,
        policy: FsyncPolicy,
        now_ms: u64,
        generation: u64,
    ) -> Result<AofWriter> {
        let file = vfs.open(path, OpenMode::Truncate).map_err(|e| Error::io(IoOp::Create, path, e))?;
        let mut writer = AofWriter::resume(file, path.to_path_buf(), policy, (generation, 0), now_ms);
        encode_rewrite_header(&mut writer.frame_buf, generation);
        writer.write_frame_buf()?;
        Ok(writer)
    }

    /// Append one record, then apply the fsync policy: `Always` fsyncs
    /// before returning Ok, `EverySec` fsyncs if a second has passed since
    /// the last fsync, `No` never does.
    ///
    /// A record over the frame limit is refused with [`Error::Invalid`] and
    /// nothing is written. A failed write leaves the log as it was (or
    /// poisons the writer if it cannot); a failed fsync poisons it.
    pub fn append(&mut self, record: &Record, now_ms: u64) -> Result<()> {
        self.check_not_poisoned()?;
        check_fits(record)?;
        assert!(self.frame_buf.is_empty());
        self.begin_batch(true);
        self.encode(record);
        self.write_frame_buf()?;
        self.apply_policy(now_ms)
    }

    /// [`AofWriter::append`] of `Record::Command(args)`, from borrowed
    /// arguments: the live write path logs a command without first copying
    /// it into an owned argument list.
    pub fn append_command(&mut self, args: &[&[u8]], now_ms: u64) -> Result<()> {
        self.check_not_poisoned()?;
        let payload_len_bytes = command_payload_len_bytes(args);
        check_payload_len(payload_len_bytes)?;
        assert!(self.frame_buf.is_empty());
        self.begin_batch(true);
        self.batch_has_data = true;
        self.encode_command(args, payload_len_bytes);
        self.write_frame_buf()?;
        self.apply_policy(now_ms)
    }

    /// Add a COMMAND frame of `args` to the pending batch, which
    /// [`AofWriter::write_batch`] writes with one write. Lets a rewrite
    /// encode a whole store straight from its maps, with no list of owned
    /// records in between. Refuses an oversized record (nothing is added).
    pub fn batch_command(&mut self, args: &[&[u8]]) -> Result<()> {
        self.check_not_poisoned()?;
        let payload_len_bytes = command_payload_len_bytes(args);
        check_payload_len(payload_len_bytes)?;
        self.begin_batch(true);
        self.batch_has_data = true;
        self.encode_command(args, payload_len_bytes);
        Ok(())
    }

    /// Add a COMMAND frame of `args`, whose payload `check_payload_len`
    /// passed, to the pending batch: encoded straight into it.
    fn encode_command(&mut self, args: &[&[u8]], payload_len_bytes: u64) {
        let payload_len_bytes = usize::try_from(payload_len_bytes).expect("a checked payload length fits in memory");
        let place = Place::aof(self.generation, self.len_bytes);
        encode_frame_with(&mut self.frame_buf, place, KIND_COMMAND, payload_len_bytes, |out| {
            encode_command_payload(args, out)
        });
    }

    /// Add `record`'s frame to the pending batch (see
    /// [`AofWriter::batch_command`]).
    pub fn batch_record(&mut self, record: &Record) -> Result<()> {
        self.check_not_poisoned()?;
        check_fits(record)?;
        self.begin_batch(true);
        self.encode(record);
        Ok(())
    }

    /// End the snapshot with the pending batch: a `SNAPSHOT_END` frame
    /// after it says everything up to its own end is one snapshot, vouched
    /// durable. Only for a log the caller makes durable *before* it
    /// becomes the store's log (a rewrite: fsync, then rename), made with
    /// [`AofWriter::create`]: then the claim is true whenever the file is
    /// read as the log. Written with the batch's one write, so a lost or
    /// misdirected last write leaves a snapshot with no end, refused.
    pub fn mark_snapshot_end(&mut self) -> Result<()> {
        self.check_not_poisoned()?;
        assert!(self.len_bytes > 0, "the header was written by create");
        self.batch_has_data = true;
        encode_frame(&mut self.frame_buf, Place::aof(self.generation, self.len_bytes), KIND_SNAPSHOT_END, &[]);
        Ok(())
    }

    /// Write the pending batch with one write, then apply the fsync policy
    /// once; an empty batch writes and fsyncs nothing. On any error the
    /// batch is gone. No other append may run while a batch is pending.
    pub fn write_batch(&mut self, now_ms: u64) -> Result<()> {
        if let Err(e) = self.check_not_poisoned() {
            self.frame_buf.clear();
            self.batch_mark = None;
            self.batch_has_data = false;
            return Err(e);
        }
        if self.frame_buf.is_empty() {
            return Ok(());
        }
        self.write_frame_buf()?;
        self.apply_policy(now_ms)
    }

    /// Append `records` with one write, then apply the fsync policy once.
    /// If any record is over the frame limit, nothing is written; an empty
    /// slice writes and fsyncs nothing.
    pub fn append_all(&mut self, records: &[Record], now_ms: u64) -> Result<()> {
        self.check_not_poisoned()?;
        if records.is_empty() {
            return Ok(());
        }
        for record in records {
            check_fits(record)?;
        }
        assert!(self.frame_buf.is_empty());
        self.begin_batch(true);
        for record in records {
            self.encode(record);
        }
        self.write_frame_buf()?;
        self.apply_policy(now_ms)
    }

    /// Durability barrier: fsync now, whatever the policy. A failure
    /// poisons the writer.
    pub fn sync(&mut self, now_ms: u64) -> Result<()> {
        self.check_not_poisoned()?;
        self.sync_file(now_ms)
    }

    /// A clean close's barrier: fsync, then, if no mark vouches for the
    /// durable end yet, append one and fsync it too — so a log closed
    /// cleanly has no durable frame that damage could pass off as a torn
    /// write. A failure poisons the writer.
    pub fn sync_and_vouch(&mut self, now_ms: u64) -> Result<()> {
        self.sync(now_ms)?;
        self.vouch_durable(now_ms)
    }

    /// If a mark is owed for the durable data, append one and fsync it.
    pub(super) fn vouch_durable(&mut self, now_ms: u64) -> Result<()> {
        self.check_not_poisoned()?;
        if !self.owes_mark(false) {
            return Ok(());
        }
        assert!(self.frame_buf.is_empty());
        self.begin_batch(false);
        self.write_frame_buf()?;
        self.sync_file(now_ms)
    }

    /// The `everysec` background duty; the store calls it on every
    /// operation and clock tick. Fsyncs if a second has passed since the
    /// last fsync and bytes are waiting; does nothing under other
    /// policies. A poisoned writer answers [`Error::Poisoned`], as it does
    /// to every call that would write or fsync.
    pub fn tick(&mut self, now_ms: u64) -> Result<()> {
        self.check_not_poisoned()?;
        if self.policy == FsyncPolicy::EverySec {
            self.apply_policy(now_ms)
        } else {
            Ok(())
        }
    }

    /// The log's length: the end of the last whole frame.
    #[cfg(test)]
    pub fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// The path errors name.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// After the store renames this writer's file (a rewrite's temp file
    /// becoming the log), point error messages at the new name.
    pub fn set_path(&mut self, path: PathBuf) {
        self.path = path;
    }

    /// Whether a failure has made the writer refuse all writes.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// Whether bytes were written since the last successful fsync: what a
    /// power loss now could take.
    #[cfg(test)]
    pub fn has_unsynced(&self) -> bool {
        self.unsynced
    }

    /// The fsync policy.
    #[cfg(test)]
    pub fn policy(&self) -> FsyncPolicy {
        self.policy
    }

    fn check_not_poisoned(&self) -> Result<()> {
        assert!(self.pending.is_none(), "an append before recovery's writes are done");
        match &self.poisoned {
            Some(cause) => Err(Error::Poisoned { cause: cause.clone() }),
            None => Ok(()),
        }
    }

    /// Open a batch (the frame buffer is empty) with a `SYNCED` mark if an
    /// fsync has moved the durable end past the last mark (`data`: records
    /// follow in this batch; see `owes_mark`).
    fn begin_batch(&mut self, data: bool) {
        if !self.frame_buf.is_empty() || !self.owes_mark(data) {
            return;
        }
        assert!(self.durable_len_bytes <= self.len_bytes);
        encode_frame(
            &mut self.frame_buf,
            Place::aof(self.generation, self.len_bytes),
            KIND_SYNCED,
            &self.durable_len_bytes.to_le_bytes(),
        );
        self.batch_mark = Some(self.durable_len_bytes);
    }

    /// Append `record`'s frame to the frame buffer.
    fn encode(&mut self, record: &Record) {
        self.batch_has_data = true;
        self.payload_buf.clear();
        record.encode_payload(&mut self.payload_buf);
        encode_frame(
            &mut self.frame_buf,
            Place::aof(self.generation, self.len_bytes),
            record.kind(),
            &self.payload_buf,
        );
    }

    /// Write the frame buffer at the end of the log and empty it.
    fn write_frame_buf(&mut self) -> Result<()> {
        let at_bytes = self.len_bytes;
        let result = self.file.write_at(at_bytes, &self.frame_buf);
        let written_bytes = self.frame_buf.len() as u64;
        let batch_mark = self.batch_mark.take();
        let batch_has_data = std::mem::take(&mut self.batch_has_data);
        self.frame_buf.clear();
        self.frame_buf.shrink_to(KEEP_BUFFER_BYTES);
        self.payload_buf.clear();
        self.payload_buf.shrink_to(KEEP_BUFFER_BYTES);
        // Even a failed write changed the file (some prefix may have
        // landed, then the cut below): none of it is durable yet.
        self.unsynced = true;
        if let Err(write_err) = result {
            // Any prefix of the frames may have landed. Cut it off: an
            // append after a partial frame would be lost to recovery.
            if let Err(cut_err) = self.file.set_len(at_bytes) {
                self.poisoned = Some(format!(
                    "a failed write left a partial frame at byte {at_bytes} of {} that could not be cut ({cut_err})",
                    self.path.display()
                ));
            }
            return Err(Error::io(IoOp::Write, &self.path, write_err));
        }
        self.len_bytes = at_bytes + written_bytes;
        if let Some(mark) = batch_mark {
            self.marked_len_bytes = mark;
        }
        if batch_has_data {
            self.data_end_bytes = self.len_bytes;
        }
        Ok(())
    }

    fn apply_policy(&mut self, now_ms: u64) -> Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        match self.policy {
            FsyncPolicy::Always => self.sync_file(now_ms),
            FsyncPolicy::EverySec => {
                // A clock that steps backwards only delays the next fsync.
                if now_ms.saturating_sub(self.last_sync_ms) >= EVERYSEC_INTERVAL_MS && !canary!(EverysecNoFsync) {
                    self.sync_file(now_ms)
                } else {
                    Ok(())
                }
            }
            FsyncPolicy::No => Ok(()),
        }
    }

    /// Everything appended so far is durable as of `now_ms`.
    fn synced(&mut self, now_ms: u64) {
        self.unsynced = false;
        self.last_sync_ms = now_ms;
        self.durable_len_bytes = self.len_bytes;
    }

    fn sync_file(&mut self, now_ms: u64) -> Result<()> {
        assert!(self.poisoned.is_none());
        match self.file.sync() {
            Ok(()) => {
                self.synced(now_ms);
                Ok(())
            }
            Err(sync_err) => {
                if canary!(FsyncRetry) && self.file.sync().is_ok() {
                    // Planted: the retry proves nothing about the pages the failed fsync dropped.
                    self.synced(now_ms);
                    return Ok(());
                }
                self.poisoned = Some(format!("fsync of {} failed ({sync_err})", self.path.display()));
                Err(Error::io(IoOp::Sync, &self.path, sync_err))
            }
        }
    }
}

fn check_fits(record: &Record) -> Result<()> {
    check_payload_len(record.payload_len_bytes())
}

fn check_payload_len(payload_len_bytes: u64) -> Result<()> {
    if payload_len_bytes <= MAX_FRAME_PAYLOAD_BYTES as u64 {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "AOF record of {payload_len_bytes} bytes is over the {MAX_FRAME_PAYLOAD_BYTES}-byte frame limit"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::header::HEADER_FRAME_BYTES;
    use crate::aof::testing::{file_bytes, FailingVfs};
    use crate::aof::{scan_log, AofRecovery};

    fn set(key: &str, value: &str) -> Record {
        Record::Command(vec![b"SET".to_vec(), key.as_bytes().to_vec(), value.as_bytes().to_vec()])
    }

    fn fresh(policy: FsyncPolicy, now_ms: u64) -> (Arc<FailingVfs>, AofWriter) {
        let vfs = FailingVfs::new();
        let (writer, log, report) = AofWriter::recover(vfs.clone(), Path::new("/db"), "aof", policy, now_ms).unwrap();
        assert_eq!(log.frames(), 0);
        assert_eq!(report.valid_len_bytes, 0);
        let mut faults = vfs.faults();
        faults.syncs = 0;
        faults.writes = 0;
        drop(faults);
        (vfs, writer)
    }

    fn recovered(vfs: &Arc<FailingVfs>) -> (Vec<Record>, AofRecovery) {
        let (_, log, report) = AofWriter::recover(vfs.clone(), Path::new("/db"), "aof", FsyncPolicy::No, 0).unwrap();
        (log.to_records(), report)
    }

    #[test]
    fn always_fsyncs_every_append_before_returning() {
        let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
        for i in 0..3 {
            writer.append(&set("k", "v"), 0).unwrap();
            assert_eq!(vfs.faults().syncs, i + 1);
            assert!(!writer.has_unsynced());
        }
        writer.append_all(&[set("a", "1"), set("b", "2")], 0).unwrap();
        assert_eq!(vfs.faults().syncs, 4);
        assert_eq!(vfs.faults().writes, 4, "append_all is one write");
        writer.append_all(&[], 0).unwrap();
        let faults = vfs.faults();
        assert_eq!((faults.syncs, faults.writes), (4, 4), "an empty batch writes nothing");
    }

    #[test]
    fn everysec_fsyncs_once_a_second_has_passed() {
        let (vfs, mut writer) = fresh(FsyncPolicy::EverySec, 10_000);
        writer.append(&set("k", "1"), 10_000).unwrap();
        writer.append(&set("k", "2"), 10_999).unwrap();
        assert_eq!(vfs.faults().syncs, 0);
        assert!(writer.has_unsynced());
        writer.append(&set("k", "3"), 11_000).unwrap();
        assert_eq!(vfs.faults().syncs, 1);
        assert!(!writer.has_unsynced());

        writer.append(&set("k", "4"), 11_500).unwrap();
        writer.tick(11_999).unwrap();
        assert_eq!(vfs.faults().syncs, 1);
        writer.tick(12_000).unwrap();
        assert_eq!(vfs.faults().syncs, 2);
        writer.tick(20_000).unwrap();
        assert_eq!(vfs.faults().syncs, 2, "nothing waiting, nothing to fsync");
    }

    #[test]
    fn no_fsyncs_only_at_the_barrier() {
        let (vfs, mut writer) = fresh(FsyncPolicy::No, 0);
        writer.append(&set("k", "1"), 0).unwrap();
        writer.append(&set("k", "2"), 5_000).unwrap();
        writer.tick(10_000).unwrap();
        assert_eq!(vfs.faults().syncs, 0);
        assert!(writer.has_unsynced());
        writer.sync(10_000).unwrap();
        assert_eq!(vfs.faults().syncs, 1);
        assert!(!writer.has_unsynced());
    }

    #[test]
    fn ticks_do_nothing_outside_everysec() {
        for policy in [FsyncPolicy::Always, FsyncPolicy::No] {
            let (vfs, mut writer) = fresh(policy, 0);
            writer.tick(1_000_000).unwrap();
            assert_eq!(vfs.faults().syncs, 0);
        }
    }

    #[test]
    fn a_failed_fsync_poisons_the_writer_for_good() {
        let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
        writer.append(&set("a", "1"), 0).unwrap();
        vfs.faults().fail_next_sync = true;
        let err = writer.append(&set("b", "2"), 0).unwrap_err();
        assert!(matches!(err, Error::Io { op: IoOp::Sync, .. }), "{err}");
        assert!(writer.is_poisoned());
        // The next fsync would succeed, and must not be trusted.
        assert!(matches!(writer.append(&set("c", "3"), 0), Err(Error::Poisoned { .. })));
        assert!(matches!(writer.append_all(&[set("c", "3")], 0), Err(Error::Poisoned { .. })));
        assert!(matches!(writer.sync(0), Err(Error::Poisoned { .. })));
        assert!(matches!(writer.tick(5_000), Err(Error::Poisoned { .. })));
        let (records, _) = recovered(&vfs);
        assert_eq!(records, vec![set("a", "1"), set("b", "2")], "refused writes never reach the file");
    }

    #[test]
    fn a_failed_write_leaves_no_partial_frame() {
        for landed_bytes in [0, 1, 8, 9, 20] {
            let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
            writer.append(&set("a", "1"), 0).unwrap();
            let len_before = writer.len_bytes();
            vfs.faults().fail_next_write_after_bytes = Some(landed_bytes);
            let err = writer.append(&set("b", "22"), 0).unwrap_err();
            assert!(matches!(err, Error::Io { op: IoOp::Write, .. }), "{err}");
            assert!(!writer.is_poisoned());
            assert_eq!(writer.len_bytes(), len_before);
            assert_eq!(file_bytes(vfs.as_ref(), "/db/aof").len() as u64, len_before);

            writer.append(&set("c", "3"), 0).unwrap();
            let (records, report) = recovered(&vfs);
            assert_eq!(records, vec![set("a", "1"), set("c", "3")]);
            assert_eq!(report.dropped_bytes, 0);
        }
    }

    #[test]
    fn a_failed_write_that_cannot_be_cut_poisons() {
        let (vfs, mut writer) = fresh(FsyncPolicy::No, 0);
        {
            let mut faults = vfs.faults();
            faults.fail_next_write_after_bytes = Some(5);
            faults.fail_next_set_len = true;
        }
        assert!(matches!(writer.append(&set("a", "1"), 0), Err(Error::Io { op: IoOp::Write, .. })));
        assert!(writer.is_poisoned());
        assert!(matches!(writer.append(&set("b", "2"), 0), Err(Error::Poisoned { .. })));
        // The partial frame is a torn tail to the next recovery.
        let (records, report) = recovered(&vfs);
        assert!(records.is_empty());
        assert_eq!(report.dropped_bytes, 5);
    }

    #[test]
    fn an_oversized_record_is_refused_and_nothing_is_written() {
        let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
        let huge = Record::Command(vec![vec![0u8; MAX_FRAME_PAYLOAD_BYTES]]);
        assert!(matches!(writer.append(&huge, 0), Err(Error::Invalid(_))));
        assert!(matches!(writer.append_all(&[set("a", "1"), huge], 0), Err(Error::Invalid(_))));
        let big = vec![0u8; MAX_FRAME_PAYLOAD_BYTES];
        assert!(matches!(writer.append_command(&[&big], 0), Err(Error::Invalid(_))));
        assert_eq!(writer.len_bytes(), HEADER_FRAME_BYTES);
        assert!(!writer.is_poisoned());
        assert_eq!(vfs.faults().writes, 0);
    }

    #[test]
    fn a_borrowed_command_is_the_same_frame_as_an_owned_one() {
        let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
        let args: [&[u8]; 4] = [b"HSET", b"k", b"", &[0xff; 300]];
        writer.append_command(&args, 0).unwrap();
        assert_eq!(vfs.faults().syncs, 1, "the policy applies as for any append");
        let owned = Record::Command(args.iter().map(|arg| arg.to_vec()).collect());
        writer.append(&owned, 0).unwrap();
        let (records, report) = recovered(&vfs);
        assert_eq!(records, vec![owned.clone(), owned.clone()]);
        // The second append under `always` opens with a SYNCED mark for the
        // first (the first has no durable record before it to vouch for).
        let marks_bytes = super::super::SYNCED_FRAME_BYTES;
        assert_eq!(report.valid_len_bytes, HEADER_FRAME_BYTES + 2 * frame_len(&owned) + marks_bytes);
    }

    #[test]
    fn a_batch_is_one_write_of_what_append_all_writes() {
        let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
        let counts = |vfs: &FailingVfs| {
            let faults = vfs.faults();
            (faults.writes, faults.syncs)
        };
        writer.write_batch(0).unwrap();
        assert_eq!(counts(&vfs), (0, 0), "an empty batch does nothing");
        let stub = Record::Stub { key: b"k".to_vec(), seq: 3, weight: 9 };
        writer.batch_command(&[b"SET", b"a", b"1"]).unwrap();
        writer.batch_record(&stub).unwrap();
        let big = vec![0u8; MAX_FRAME_PAYLOAD_BYTES];
        assert!(matches!(writer.batch_command(&[&big]), Err(Error::Invalid(_))), "refused, batch kept");
        writer.write_batch(0).unwrap();
        assert_eq!(counts(&vfs), (1, 1));
        assert_eq!(recovered(&vfs).0, vec![set("a", "1"), stub]);
    }

    fn frame_len(record: &Record) -> u64 {
        let mut bytes = Vec::new();
        record.encode_frame(&mut bytes, crate::frame::Place::aof(1, 0));
        bytes.len() as u64
    }

    #[test]
    fn create_writes_an_unsynced_header_over_any_old_file() {
        let vfs = FailingVfs::new();
        let path = Path::new("/db/aof.rewrite");
        let mut old = vfs.open(path, OpenMode::Create).unwrap();
        old.write_at(0, b"old contents that must go").unwrap();
        let mut writer = AofWriter::create(vfs.clone(), path, FsyncPolicy::Always, 0, 5).unwrap();
        assert_eq!(vfs.faults().syncs, 0);
        assert!(writer.has_unsynced());
        let mut header = Vec::new();
        crate::aof::header::encode_rewrite_header(&mut header, 5);
        assert_eq!(file_bytes(vfs.as_ref(), "/db/aof.rewrite"), header);

        writer.append_all(&[set("a", "1"), set("b", "2")], 0).unwrap();
        assert_eq!(vfs.faults().syncs, 1);
        // Until the rewrite ends its snapshot, the file is no log.
        let err = scan_log(path, &file_bytes(vfs.as_ref(), "/db/aof.rewrite")).unwrap_err();
        assert!(err.to_string().contains("snapshot"), "{err}");
        writer.mark_snapshot_end().unwrap();
        writer.write_batch(0).unwrap();
        let scan = scan_log(path, &file_bytes(vfs.as_ref(), "/db/aof.rewrite")).unwrap();
        assert_eq!(scan.records, vec![set("a", "1"), set("b", "2")]);
    }

    #[test]
    fn errors_name_the_path_given_by_set_path() {
        let (vfs, mut writer) = fresh(FsyncPolicy::Always, 0);
        writer.set_path(PathBuf::from("/db/renamed"));
        assert_eq!(writer.path(), Path::new("/db/renamed"));
        vfs.faults().fail_next_sync = true;
        match writer.append(&set("a", "1"), 0) {
            Err(Error::Io { path, .. }) => assert_eq!(path, Path::new("/db/renamed")),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn a_big_batch_does_not_pin_its_buffer() {
        let (_vfs, mut writer) = fresh(FsyncPolicy::No, 0);
        let big = Record::Command(vec![vec![7u8; 4 * KEEP_BUFFER_BYTES]]);
        writer.append(&big, 0).unwrap();
        assert!(writer.frame_buf.capacity() <= KEEP_BUFFER_BYTES);
        assert!(writer.payload_buf.capacity() <= KEEP_BUFFER_BYTES);
        // Small appends keep their buffers warm.
        writer.append(&set("a", "1"), 0).unwrap();
        let warm = (writer.frame_buf.capacity(), writer.payload_buf.capacity());
        assert!(warm.0 > 0 && warm.1 > 0);
        writer.append(&set("b", "2"), 0).unwrap();
        assert_eq!((writer.frame_buf.capacity(), writer.payload_buf.capacity()), warm);
        assert_eq!(writer.policy(), FsyncPolicy::No);
    }
}
