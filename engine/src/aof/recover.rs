//! Recovery: read the log back, decide what its invalid tail is, and hand
//! out a writer positioned at the valid end.
//!
//! It runs in two steps, so that a refusal changes nothing on disk:
//!
//! 1. [`LogRead::read`] reads the whole file and checks every frame,
//!    changing nothing. Damage to durable bytes (see the module doc of
//!    `aof`) is refused here with [`Error::Corrupt`] in the default mode;
//!    a frame with a valid checksum that does not decode is refused in
//!    every mode.
//! 2. [`LogRead::open_writer`] opens the file and returns a writer whose
//!    recovery writes are still *pending*; the store replays the records
//!    first (a replay can still refuse), then calls
//!    [`AofWriter::finish_recovery`], which, in this order, so that a crash
//!    between any two steps leaves a log the next recovery handles the same
//!    way: copies the invalid tail, if any, to a quarantine file, durably
//!    (file fsync, then directory fsync); cuts the log to its valid length
//!    and, if the header is missing or torn, writes a fresh one; fsyncs
//!    the log; fsyncs the directory, so the log's own name is durable even
//!    if the process that created it died before its directory fsync; and
//!    appends a `SYNCED` mark for the whole log, fsynced, so that damage to
//!    anything replayed here is refused by every later recovery.
//!
//! Only then may anything be appended, so no append can follow an invalid
//! frame.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::header::{encode_header, FIRST_GENERATION};
use super::quarantine::quarantine;
use super::{AofWriter, FsyncPolicy, LogWalk, Record};
use crate::vfs::{read_whole, Mapping, OpenMode, Vfs};
use crate::IoOp;
use crate::{Error, Result};

/// What recovery may do with an invalid frame that is damage rather than a
/// torn write (see the module doc of `aof`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Refuse damage with [`Error::Corrupt`] and change nothing; cut only a
    /// torn tail. The default.
    #[default]
    Consistent,
    /// Cut at the first invalid frame, damage included: the operator's
    /// explicit choice to open a damaged log at the last point before the
    /// damage. The cut bytes go to a quarantine file, never the void.
    PointInTime,
    /// Inspection: replay up to the first invalid frame and report what is
    /// past it, damage included; the caller writes nothing at all.
    ReadOnly,
}

/// What recovering a log found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AofRecovery {
    /// Records recovered (the header and `SYNCED` marks not counted).
    pub frames: u64,
    /// The end of the last whole valid frame; 0 if the header was missing
    /// or invalid (a fresh header was then written).
    pub valid_len_bytes: u64,
    /// Bytes from the first invalid frame to the end of the file, moved to
    /// the quarantine file and cut from the log.
    pub dropped_bytes: u64,
    /// Why bytes were dropped, with the offset of the first invalid frame.
    pub reason: Option<String>,
    /// A valid frame follows the invalid one (a crash in `reorder` mode can
    /// leave unsynced frames after a torn one; damage always does).
    pub valid_frames_after_invalid: bool,
    /// The dropped bytes held damage to durable frames, not a torn write:
    /// why we know. Only a point-in-time recovery cuts damage; the default
    /// refuses it.
    pub damage: Option<String>,
    /// The name (in the log's directory) of the file holding the dropped
    /// bytes.
    pub quarantine_file: Option<String>,
    /// The log file did not exist (a new store, or — when a manifest exists
    /// — damage, which only a point-in-time recovery opens past).
    pub missing: bool,
}

/// The valid prefix of a recovered log, held as bytes and read back one
/// record at a time with [`RecoveredLog::records`]: replay never holds more
/// than the file's bytes and the one record in hand.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub struct RecoveredLog {
    path: PathBuf,
    /// The log up to the end of its last whole valid frame.
    bytes: Vec<u8>,
    frames: u64,
}

#[cfg_attr(not(feature = "testing"), allow(dead_code))]
impl RecoveredLog {
    /// A walk over the recovered records, in log order. It yields exactly
    /// the records recovery counted and ends without an invalid frame.
    pub fn records(&self) -> LogWalk<'_> {
        LogWalk::new(&self.path, &self.bytes)
    }

    /// The number of records (the header not counted).
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Every record, owned: for tests and fuzz targets that compare logs.
    pub fn to_records(&self) -> Vec<Record> {
        self.records().collect_records().expect("recovery checked every frame")
    }
}

/// A log read and checked, nothing changed yet (step 1 of the module doc).
#[derive(Debug)]
pub struct LogRead {
    dir: PathBuf,
    name: String,
    path: PathBuf,
    /// The whole file as read (or, on a real disk, mapped: `Vfs::read_once`).
    bytes: Mapping,
    /// Valid frames after the header, `SYNCED` marks included.
    frames_walked: u64,
    /// What the valid prefix's marks vouch for, and where its data ends.
    vouched_len_bytes: u64,
    data_end_bytes: u64,
    /// Which of the store's logs the file is (its header says; 0 where no
    /// header is whole).
    generation: u64,
    report: AofRecovery,
}

/// The writes a recovery still owes, kept by the writer until
/// [`AofWriter::finish_recovery`].
#[derive(Debug)]
pub(super) struct PendingRecovery {
    dir: PathBuf,
    log_name: String,
    /// The bytes to quarantine before the cut, if any.
    tail: Option<Vec<u8>>,
    /// Cut the file to this length, if it is longer.
    cut_to_bytes: Option<u64>,
    /// Write a fresh header (the file holds none that is valid).
    write_header: bool,
}

/// What one walk over a whole log's bytes found (the [`LogWalk`]
/// accessors, kept once the bytes are handed on).
#[derive(Debug)]
struct Walked {
    /// Records (marks not counted).
    records: u64,
    /// Valid frames after the header, marks included.
    frames: u64,
    valid_len_bytes: u64,
    invalid: Option<(u64, &'static str)>,
    valid_frames_after_invalid: bool,
    damage: Option<String>,
    inside_snapshot: bool,
    vouched_len_bytes: u64,
    data_end_bytes: u64,
    /// The header's generation; 0 where no valid header was walked.
    generation: u64,
}

impl Walked {
    fn of(path: &Path, bytes: &[u8]) -> Result<Walked> {
        let mut walk = LogWalk::new(path, bytes);
        let mut records = 0u64;
        while walk.next_record()?.is_some() {
            records += 1;
        }
        Ok(Walked {
            records,
            frames: walk.frames(),
            valid_len_bytes: walk.valid_len_bytes(),
            invalid: walk.invalid(),
            valid_frames_after_invalid: walk.valid_frames_after_invalid(),
            damage: walk.damage().map(str::to_string),
            inside_snapshot: walk.inside_snapshot(),
            vouched_len_bytes: walk.vouched_len_bytes(),
            data_end_bytes: walk.data_end_bytes(),
            generation: walk.generation(),
        })
    }
}

impl LogRead {
    /// Read and check the log at `dir/name` (a missing file is an empty
    /// log); change nothing. Damage is refused in
    /// [`RecoveryMode::Consistent`].
    pub fn read(vfs: &dyn Vfs, dir: &Path, name: &str, mode: RecoveryMode) -> Result<LogRead> {
        check_file_name(name)?;
        let path = dir.join(name);
        let exists = vfs.exists(&path).map_err(|e| Error::io(IoOp::Stat, &path, e))?;
        let (bytes, walked) = read_walked(vfs, &path, exists)?;
        let file_len_bytes = bytes.len() as u64;
        let valid_len_bytes = walked.valid_len_bytes;
        assert!(valid_len_bytes <= file_len_bytes);
        let dropped_bytes = file_len_bytes - valid_len_bytes;
        assert_eq!(walked.invalid.is_some(), dropped_bytes > 0);
        refuse_damage(&path, &walked, mode, dropped_bytes)?;
        let report = AofRecovery {
            frames: walked.records,
            valid_len_bytes,
            dropped_bytes,
            reason: walked.invalid.map(|(at_bytes, why)| format!("{why} at byte {at_bytes}")),
            valid_frames_after_invalid: walked.valid_frames_after_invalid,
            damage: walked.damage,
            quarantine_file: None,
            missing: !exists,
        };
        let (frames_walked, vouched_len_bytes, data_end_bytes, generation) =
            (walked.frames, walked.vouched_len_bytes, walked.data_end_bytes, walked.generation);
        Ok(LogRead {
            dir: dir.to_path_buf(),
            name: name.to_string(),
            path,
            bytes,
            frames_walked,
            vouched_len_bytes,
            data_end_bytes,
            generation,
            report,
        })
    }

    /// What recovery found (and, once finished, did).
    pub fn report(&self) -> &AofRecovery {
        &self.report
    }

    /// Whether the log holds a valid frame after its header (a record or a
    /// `SYNCED` mark): a store has written to it.
    pub fn has_frames(&self) -> bool {
        self.frames_walked > 0
    }

    /// The records to replay: the valid prefix, in order.
    pub fn records(&self) -> LogWalk<'_> {
        // `read` walked these very bytes, which nothing changes after it.
        LogWalk::checked(&self.path, &self.bytes[..self.report.valid_len_bytes as usize])
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Step 2 of the module doc: open the file (creating it if missing) and
    /// return a writer at the valid end, its recovery writes pending until
    /// [`AofWriter::finish_recovery`]. Creates the file only when it is
    /// missing, when there is nothing a replay could refuse.
    pub fn open_writer(&self, vfs: Arc<dyn Vfs>, policy: FsyncPolicy, now_ms: u64) -> Result<AofWriter> {
        let file = vfs.open(&self.path, OpenMode::Create).map_err(|e| Error::io(IoOp::Open, &self.path, e))?;
        let valid_len_bytes = self.report.valid_len_bytes;
        let file_len_bytes = self.bytes.len() as u64;
        // Planted: the torn tail stays, and the writer appends after it.
        let keep_torn_tail = canary!(AppendAfterTornTail) && valid_len_bytes > 0;
        let cut = self.report.dropped_bytes > 0 && !keep_torn_tail;
        let mut len_bytes = if keep_torn_tail { file_len_bytes } else { valid_len_bytes };
        let write_header = len_bytes == 0;
        // A log with no whole header is a new store's (a torn header is the
        // only torn write before a header is durable): its first.
        let generation = if write_header { FIRST_GENERATION } else { self.generation };
        if write_header {
            len_bytes = super::header::HEADER_FRAME_BYTES;
        }
        let pending = PendingRecovery {
            dir: self.dir.clone(),
            log_name: self.name.clone(),
            tail: cut.then(|| self.bytes[valid_len_bytes as usize..].to_vec()),
            cut_to_bytes: cut.then_some(valid_len_bytes),
            write_header,
        };
        let mut writer =
            AofWriter::resume_pending(file, self.path.clone(), policy, (generation, len_bytes), now_ms, pending);
        if !keep_torn_tail && !write_header {
            writer.resume_marks(self.vouched_len_bytes, self.data_end_bytes.min(valid_len_bytes));
        }
        Ok(writer)
    }
}

/// The log at `path` read (empty if it does not `exist`) and walked, every
/// frame checked. One read is trusted only if every frame in it checks: a
/// transient flip on the read path that still passes a frame's CRC-32 is a
/// 2^-32 event. Anything else is decided on bytes that read the same twice
/// (`read_stable`), because recovery acts on it: an invalid frame may be a
/// torn tail (cut), damage (refused), or a flip on the read path that is
/// neither.
fn read_walked(vfs: &dyn Vfs, path: &Path, exists: bool) -> Result<(Mapping, Walked)> {
    let bytes = match exists.then(|| vfs.read_once(path)) {
        None => Mapping::from_vec(Vec::new()),
        Some(Ok(bytes)) => bytes,
        Some(Err(e)) => read_failed(path, e)?,
    };
    let first = Walked::of(path, &bytes);
    // Planted (`SingleReadRecovery`): the one read is taken for the
    // disk's bytes even when a frame in it is invalid.
    match first {
        Ok(walked) if walked.invalid.is_none() => Ok((bytes, walked)),
        first if canary!(SingleReadRecovery) => Ok((bytes, first?)),
        _ => {
            let stable = match read_whole(vfs, path) {
                Ok(bytes) => Mapping::from_vec(bytes),
                Err(e) => read_failed(path, e)?,
            };
            let walked = Walked::of(path, &stable)?;
            Ok((stable, walked))
        }
    }
}

/// A read of the log at `path` failed: an I/O error. Planted
/// (`ReadErrorEmptyLog`): a log that cannot be read is taken for an empty
/// one.
fn read_failed(path: &Path, e: std::io::Error) -> Result<Mapping> {
    if canary!(ReadErrorEmptyLog) {
        Ok(Mapping::from_vec(Vec::new()))
    } else {
        Err(Error::io(IoOp::Read, path, e))
    }
}

/// Refuse the damage `walked` found where `mode` may not cut it: inside a
/// rewrite's snapshot or in its header, in every mode but a read-only one
/// (no earlier point in time exists); anywhere, in the default mode.
fn refuse_damage(path: &Path, walked: &Walked, mode: RecoveryMode, dropped_bytes: u64) -> Result<()> {
    let inside_snapshot = walked.inside_snapshot && mode != RecoveryMode::ReadOnly;
    if let (Some(why), Some((at_bytes, reason)), true) = (&walked.damage, walked.invalid, inside_snapshot) {
        return Err(Error::corrupt(
            path,
            at_bytes,
            if at_bytes == 0 {
                format!(
                    "{reason}, and {why}: damage to the header, which says whether a rewrite's snapshot follows \
                     it, so no earlier point in time is known to recover to, in either mode. Nothing on disk \
                     was changed"
                )
            } else {
                format!(
                    "{reason}, and {why}: damage inside a rewritten snapshot, which has no earlier point in time \
                     to recover to, in either mode. Nothing on disk was changed"
                )
            },
        ));
    }
    if let (Some(why), Some((at_bytes, reason)), RecoveryMode::Consistent) = (&walked.damage, walked.invalid, mode) {
        // Planted: damage taken for a torn tail, and cut.
        if !canary!(CutVouchedDamage) {
            return Err(Error::corrupt(
                path,
                at_bytes,
                format!(
                    "{reason}, and {why}: damage to durable data. Nothing on disk was changed; point-in-time \
                     recovery would open the log as of byte {at_bytes}, moving the {dropped_bytes} bytes after \
                     it to a quarantine file"
                ),
            ));
        }
    }
    Ok(())
}

impl AofWriter {
    /// Recover the log at `dir/name` in one go (a missing file is an empty
    /// log): [`LogRead::read`], [`LogRead::open_writer`] and
    /// [`AofWriter::finish_recovery`]. Returns a writer positioned at the
    /// valid end, the records before the first invalid frame, and a report.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn recover(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        name: &str,
        policy: FsyncPolicy,
        now_ms: u64,
    ) -> Result<(AofWriter, RecoveredLog, AofRecovery)> {
        Self::recover_in(vfs, dir, name, policy, now_ms, RecoveryMode::Consistent)
    }

    /// [`AofWriter::recover`] in the given mode.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn recover_in(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        name: &str,
        policy: FsyncPolicy,
        now_ms: u64,
        mode: RecoveryMode,
    ) -> Result<(AofWriter, RecoveredLog, AofRecovery)> {
        let read = LogRead::read(vfs.as_ref(), dir, name, mode)?;
        let mut writer = read.open_writer(vfs.clone(), policy, now_ms)?;
        let mut report = read.report().clone();
        // A copy, taken before the writer cuts the file: the log may be
        // mapped (`Vfs::read_once`).
        let bytes = read.bytes[..report.valid_len_bytes as usize].to_vec();
        report.quarantine_file = writer.finish_recovery(vfs.as_ref())?;
        let log = RecoveredLog { path: read.path, bytes, frames: report.frames };
        Ok((writer, log, report))
    }

    /// Do the writes a recovery owes (see the module doc) and return the
    /// quarantine file's name, if a tail went there. A writer not made by
    /// [`LogRead::open_writer`] owes none.
    pub fn finish_recovery(&mut self, vfs: &dyn Vfs) -> Result<Option<String>> {
        let Some(pending) = self.take_pending() else { return Ok(None) };
        let path = self.path().to_path_buf();
        // The copy must be durable before the cut: after the cut, the
        // quarantine file is the only place these bytes exist.
        let quarantined = match &pending.tail {
            Some(tail) => Some(quarantine(vfs, &pending.dir, &pending.log_name, tail)?),
            None => None,
        };
        let generation = self.generation();
        let file = self.file_mut();
        if let Some(len_bytes) = pending.cut_to_bytes {
            assert!(quarantined.is_some(), "a cut only after its bytes were copied to quarantine");
            file.set_len(len_bytes).map_err(|e| Error::io(IoOp::Truncate, &path, e))?;
        }
        if pending.write_header {
            let mut header = Vec::new();
            encode_header(&mut header, generation);
            file.write_at(0, &header).map_err(|e| Error::io(IoOp::Write, &path, e))?;
        }
        // Always fsync, even when nothing changed: the bytes just replayed
        // may be a dead process's page cache that it never fsynced, and the
        // store is about to build on them (and, under `everysec`, promise
        // they are on disk). Replaying is vouching. Planted: no fsync when
        // nothing was cut or written (and then no mark), or after a cut.
        let changed = pending.cut_to_bytes.is_some() || pending.write_header;
        // Two lets, not one condition: without the feature both are the
        // constant `false`, and clippy would ask to simplify the whole.
        let skip_unchanged = canary!(RecoveryNoFsync) && !changed;
        let skip_after_cut = canary!(CutNoFsync) && pending.cut_to_bytes.is_some();
        if skip_unchanged || skip_after_cut {
            self.recovered_durable();
            return Ok(quarantined);
        }
        file.sync().map_err(|e| Error::io(IoOp::Sync, &path, e))?;
        // The log's name may be a dead process's too (a rewrite killed
        // between its rename and its directory fsync).
        if !canary!(RecoveryNoDirSync) {
            vfs.sync_dir(&pending.dir).map_err(|e| Error::io(IoOp::SyncDir, &pending.dir, e))?;
        }
        self.recovered_durable();
        // And vouch for all of it, durably: damage to anything replayed
        // here is then refused by every later recovery, never cut.
        self.vouch_durable(self.last_sync_ms())?;
        Ok(quarantined)
    }
}

/// The log's name must name a file in `dir`, not a path elsewhere.
fn check_file_name(name: &str) -> Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(Error::Invalid(format!("AOF name {name:?} is not a plain file name")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::header::HEADER_FRAME_BYTES;
    use crate::aof::testing::{arb_record, arb_records, file_bytes, frame_ends, log_bytes, sample_records, FailingVfs};
    use crate::vfs::{MemVfs, OsVfs};
    use proptest::prelude::*;

    const DIR: &str = "/db";
    const LOG: &str = "/db/aof";

    fn mem_vfs() -> Arc<MemVfs> {
        let vfs = Arc::new(MemVfs::new());
        vfs.create_dir_all(Path::new(DIR)).unwrap();
        vfs
    }

    fn put_file(vfs: &dyn Vfs, path: &str, bytes: &[u8]) {
        let mut file = vfs.open(Path::new(path), OpenMode::Truncate).unwrap();
        file.write_at(0, bytes).unwrap();
    }

    fn recover(vfs: Arc<dyn Vfs>, dir: &Path) -> Result<(AofWriter, Vec<Record>, AofRecovery)> {
        recover_with(vfs, dir, FsyncPolicy::Always, 0)
    }

    /// Recover, with the records owned (and their count checked against
    /// the report's).
    fn recover_with(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        policy: FsyncPolicy,
        now_ms: u64,
    ) -> Result<(AofWriter, Vec<Record>, AofRecovery)> {
        let (writer, log, report) = AofWriter::recover(vfs, dir, "aof", policy, now_ms)?;
        let records = log.to_records();
        assert_eq!((log.frames(), report.frames), (records.len() as u64, records.len() as u64));
        Ok((writer, records, report))
    }

    /// Write `records` through a writer under `policy`, in batches of
    /// `batch` records, advancing the clock `step_ms` per batch.
    fn write_all(writer: &mut AofWriter, records: &[Record], batch: usize, step_ms: u64, now_ms: &mut u64) {
        for chunk in records.chunks(batch.max(1)) {
            *now_ms += step_ms;
            if chunk.len() == 1 {
                writer.append(&chunk[0], *now_ms).unwrap();
            } else {
                writer.append_all(chunk, *now_ms).unwrap();
            }
        }
    }

    /// After the log was cut to its first `cut` bytes: what recovery must
    /// keep, and where the valid log ends.
    fn expected_after_cut(records: &[Record], cut: u64) -> (Vec<Record>, u64) {
        if cut < HEADER_FRAME_BYTES {
            return (Vec::new(), 0);
        }
        let ends = frame_ends(records);
        let kept = ends.iter().take_while(|&&end| end <= cut).count();
        let valid_len = if kept == 0 { HEADER_FRAME_BYTES } else { ends[kept - 1] };
        (records[..kept].to_vec(), valid_len)
    }

    /// Cut a log of `records` at `cut`, recover it, and check everything
    /// the brief promises; then append `more` and recover again.
    fn check_cut(records: &[Record], cut: usize, more: &[Record]) {
        let whole = log_bytes(records);
        let vfs = mem_vfs();
        put_file(vfs.as_ref(), LOG, &whole[..cut]);
        let (mut writer, recovered, report) = recover(vfs.clone(), Path::new(DIR)).unwrap();

        let (kept, valid_len) = expected_after_cut(records, cut as u64);
        assert_eq!(recovered, kept, "cut at {cut}");
        assert_eq!(report.frames, kept.len() as u64);
        assert_eq!(report.valid_len_bytes, valid_len);
        assert_eq!(report.dropped_bytes, cut as u64 - valid_len);
        let log_len = valid_len.max(HEADER_FRAME_BYTES);
        // Recovery vouches for the records it kept with one mark after them.
        let mut expected = whole[..log_len as usize].to_vec();
        if !kept.is_empty() {
            crate::frame::encode_frame(
                &mut expected,
                crate::frame::Place::aof(1, 0),
                crate::aof::KIND_SYNCED,
                &log_len.to_le_bytes(),
            );
        }
        assert_eq!(writer.len_bytes(), expected.len() as u64);
        assert_eq!(file_bytes(vfs.as_ref(), LOG), expected);
        if report.dropped_bytes > 0 {
            assert!(report.reason.is_some());
            assert_eq!(report.quarantine_file.as_deref(), Some("aof.quarantine.1"));
            assert_eq!(file_bytes(vfs.as_ref(), "/db/aof.quarantine.1"), whole[valid_len as usize..cut]);
        } else {
            assert_eq!(report.reason, None);
            assert_eq!(report.quarantine_file, None);
            assert_eq!(vfs.list_dir(Path::new(DIR)).unwrap(), vec![std::ffi::OsString::from("aof")]);
        }

        writer.append_all(more, 1).unwrap();
        drop(writer);
        let (_, again, report) = recover(vfs, Path::new(DIR)).unwrap();
        assert_eq!(again, [kept, more.to_vec()].concat(), "appends after recovering a cut at {cut}");
        assert_eq!(report.dropped_bytes, 0);
    }

    /// Flip `bit` of a log of `records` and recover it: a refusal, or
    /// exactly the records before the damaged frame — never anything else.
    fn check_flip(records: &[Record], bit: usize) {
        let mut bytes = log_bytes(records);
        bytes[bit / 8] ^= 1 << (bit % 8);
        let vfs = mem_vfs();
        put_file(vfs.as_ref(), LOG, &bytes);
        match recover(vfs.clone(), Path::new(DIR)) {
            Err(err) => assert!(err.is_corrupt(), "flip of bit {bit}: {err}"),
            Ok((_, recovered, report)) => {
                // Frames that end at or before the flipped bit are intact.
                let intact = frame_ends(records).iter().take_while(|&&end| end * 8 <= bit as u64).count();
                assert_eq!(recovered, records[..intact], "flip of bit {bit}");
                assert!(report.dropped_bytes > 0, "flip of bit {bit} dropped nothing");
                assert!(report.reason.is_some());
                let quarantined = file_bytes(vfs.as_ref(), "/db/aof.quarantine.1");
                assert_eq!(quarantined, bytes[report.valid_len_bytes as usize..]);
            }
        }
    }

    #[test]
    fn a_missing_log_becomes_an_empty_log_with_a_durable_header() {
        let vfs = FailingVfs::new();
        let (writer, records, report) = recover(vfs.clone(), Path::new(DIR)).unwrap();
        assert!(records.is_empty());
        assert_eq!(report, AofRecovery { missing: true, ..AofRecovery::default() });
        assert_eq!(file_bytes(vfs.as_ref(), LOG), log_bytes(&[]));
        assert_eq!(vfs.faults().syncs, 1);
        assert!(!writer.has_unsynced());
        assert_eq!(writer.path(), Path::new(LOG));
    }

    #[test]
    fn every_cut_of_a_small_log_recovers_its_whole_frames() {
        let records = sample_records();
        let len = log_bytes(&records).len();
        let more = [Record::Command(vec![b"SET".to_vec(), b"after".to_vec(), b"cut".to_vec()])];
        for cut in 0..=len {
            check_cut(&records, cut, &more);
        }
    }

    /// Flips one bit of every read call numbered `flip_reads` (from 0)
    /// that covers byte `at`: a transient fault on the read path.
    #[derive(Clone)]
    struct FlakyReads {
        inner: Arc<MemVfs>,
        at: u64,
        flip_reads: std::ops::Range<u64>,
        reads: Arc<std::sync::atomic::AtomicU64>,
    }

    impl crate::vfs::Interpose for FlakyReads {
        fn inner(&self) -> &dyn Vfs {
            self.inner.as_ref()
        }
        fn on_read_at(
            &self,
            file: &dyn crate::vfs::VfsFile,
            offset_bytes: u64,
            buf: &mut [u8],
        ) -> std::io::Result<usize> {
            let call = self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let len = file.read_at(offset_bytes, buf)?;
            let covered = offset_bytes..offset_bytes + len as u64;
            if self.flip_reads.contains(&call) && covered.contains(&self.at) {
                buf[(self.at - offset_bytes) as usize] ^= 0x10;
            }
            Ok(len)
        }
    }

    /// The log is read once while every frame of that read checks; a frame
    /// that fails is decided on a stable reread. A transient flip is then
    /// read past — nothing cut, nothing refused — in every frame, the
    /// header and the last one included.
    #[test]
    fn a_flip_on_the_first_read_is_read_past() {
        let records = sample_records();
        let bytes = log_bytes(&records);
        for at in [0, HEADER_FRAME_BYTES + 3, bytes.len() as u64 - 1] {
            let inner = mem_vfs();
            put_file(inner.as_ref(), LOG, &bytes);
            let reads = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let vfs = Arc::new(FlakyReads { inner: inner.clone(), at, flip_reads: 0..1, reads: reads.clone() });
            let read = LogRead::read(vfs.as_ref(), Path::new(DIR), "aof", RecoveryMode::Consistent).unwrap();
            assert_eq!(read.report().dropped_bytes, 0, "flip at byte {at}");
            assert_eq!(read.records().collect_records().unwrap(), records, "flip at byte {at}");
            // The first read, then a stable read: at least two more.
            assert!(reads.load(std::sync::atomic::Ordering::Relaxed) >= 3, "flip at byte {at}");
        }
        // A clean first read is the only one.
        let reads = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let inner = mem_vfs();
        put_file(inner.as_ref(), LOG, &bytes);
        let vfs = Arc::new(FlakyReads { inner, at: 0, flip_reads: 0..0, reads: reads.clone() });
        let read = LogRead::read(vfs.as_ref(), Path::new(DIR), "aof", RecoveryMode::Consistent).unwrap();
        assert_eq!(read.records().collect_records().unwrap(), records);
        assert_eq!(reads.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    /// A log of [`crate::vfs::MAP_READ_MIN_BYTES`] or more is mapped on a
    /// real disk, not read: its records replay exactly from the mapping,
    /// and a torn tail is quarantined and cut while the mapping is alive.
    #[test]
    fn a_large_log_on_a_real_disk_recovers_through_its_mapping() {
        let value = vec![b'v'; 4096];
        let records: Vec<Record> = (0..300)
            .map(|i| Record::Command(vec![b"SET".to_vec(), format!("key{i}").into_bytes(), value.clone()]))
            .collect();
        let mut bytes = log_bytes(&records);
        assert!(bytes.len() as u64 >= crate::vfs::MAP_READ_MIN_BYTES, "the log is large enough to be mapped");
        bytes.extend_from_slice(b"torn");
        let tmp = tempfile::tempdir().unwrap();
        let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
        let path_of = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
        put_file(vfs.as_ref(), &path_of("aof"), &bytes);

        let read = LogRead::read(vfs.as_ref(), tmp.path(), "aof", RecoveryMode::Consistent).unwrap();
        assert_eq!(read.records().collect_records().unwrap(), records);
        let mut writer = read.open_writer(vfs.clone(), FsyncPolicy::No, 0).unwrap();
        let quarantined = writer.finish_recovery(vfs.as_ref()).unwrap();
        assert_eq!(quarantined.as_deref(), Some("aof.quarantine.1"));
        assert_eq!(file_bytes(vfs.as_ref(), &path_of("aof.quarantine.1")), b"torn");
        // The records still read right from the mapping after the cut.
        assert_eq!(read.records().collect_records().unwrap(), records);
        drop((read, writer));

        let (_, again, report) = recover_with(vfs, tmp.path(), FsyncPolicy::No, 0).unwrap();
        assert_eq!((again, report.dropped_bytes), (records, 0));
    }

    /// A log with no valid frame is a torn creation only while it is no
    /// longer than a header; beyond that it is damage (a sector lost over
    /// the whole of a small log, say), refused in every mode that writes:
    /// the header that is lost would have said whether a snapshot follows,
    /// so not even a point in time is known (a read-only look reports it).
    #[test]
    fn a_log_of_garbage_longer_than_a_header_is_damage() {
        for len_bytes in [1, HEADER_FRAME_BYTES, HEADER_FRAME_BYTES + 1, 228] {
            let garbage: Vec<u8> = (0..len_bytes).map(|i| (i * 89 + 7) as u8).collect();
            let vfs = mem_vfs();
            put_file(vfs.as_ref(), LOG, &garbage);
            let read = |mode| LogRead::read(vfs.as_ref(), Path::new(DIR), "aof", mode);
            if len_bytes <= HEADER_FRAME_BYTES {
                let report = read(RecoveryMode::Consistent).unwrap().report().clone();
                assert_eq!((report.dropped_bytes, report.damage), (len_bytes, None), "{len_bytes} bytes");
            } else {
                for mode in [RecoveryMode::Consistent, RecoveryMode::PointInTime] {
                    let err = read(mode).unwrap_err();
                    assert!(err.is_corrupt() && err.to_string().contains("no valid frame"), "{len_bytes} bytes: {err}");
                }
                let report = read(RecoveryMode::ReadOnly).unwrap().report().clone();
                assert_eq!(report.dropped_bytes, len_bytes);
                assert!(report.damage.is_some());
            }
        }
    }

    #[test]
    fn every_single_bit_flip_of_a_small_log_is_caught() {
        let records = sample_records();
        let bits = log_bytes(&records).len() * 8;
        for bit in 0..bits {
            check_flip(&records, bit);
        }
    }

    #[test]
    fn nothing_after_an_invalid_frame_is_replayed_and_appends_follow_the_kept_prefix() {
        let [a, b, c, d] = <[Record; 4]>::try_from(sample_records()).unwrap();
        let mut bytes = log_bytes(std::slice::from_ref(&a));
        let damaged_at = bytes.len();
        b.encode_frame(&mut bytes, crate::frame::Place::aof(1, 0));
        bytes[damaged_at + 4] ^= 0xFF; // b's checksum
        c.encode_frame(&mut bytes, crate::frame::Place::aof(1, 0));
        let vfs = mem_vfs();
        put_file(vfs.as_ref(), LOG, &bytes);

        let (mut writer, records, report) = recover(vfs.clone(), Path::new(DIR)).unwrap();
        assert_eq!(records, vec![a.clone()]);
        assert!(report.valid_frames_after_invalid);
        assert_eq!(report.reason.as_deref(), Some(format!("frame checksum mismatch at byte {damaged_at}").as_str()));
        writer.append(&d, 0).unwrap();
        drop(writer);

        let (_, records, report) = recover(vfs.clone(), Path::new(DIR)).unwrap();
        assert_eq!(records, vec![a, d]);
        assert_eq!(report.dropped_bytes, 0);
        assert_eq!(file_bytes(vfs.as_ref(), "/db/aof.quarantine.1"), bytes[damaged_at..]);
    }

    #[test]
    fn corruption_is_refused_and_nothing_on_disk_changes() {
        let mut bytes = log_bytes(&sample_records());
        // A frame with a valid checksum whose STUB payload is cut short.
        crate::frame::encode_frame(&mut bytes, crate::frame::Place::aof(1, 0), crate::aof::KIND_STUB, &[0, 0, 0, 0, 1]);
        bytes.extend_from_slice(b"torn tail that must not be cut");
        let vfs = mem_vfs();
        put_file(vfs.as_ref(), LOG, &bytes);
        let err = recover(vfs.clone(), Path::new(DIR)).unwrap_err();
        assert!(err.is_corrupt(), "{err}");
        assert!(err.to_string().contains("/db/aof"), "{err}");
        assert_eq!(file_bytes(vfs.as_ref(), LOG), bytes);
        assert_eq!(vfs.list_dir(Path::new(DIR)).unwrap(), vec![std::ffi::OsString::from("aof")]);
    }

    #[test]
    fn quarantine_numbers_continue_past_existing_ones() {
        let vfs = mem_vfs();
        put_file(vfs.as_ref(), "/db/aof.quarantine.4", b"older");
        let mut bytes = log_bytes(&sample_records());
        bytes.truncate(bytes.len() - 1);
        put_file(vfs.as_ref(), LOG, &bytes);
        let (_, _, report) = recover(vfs.clone(), Path::new(DIR)).unwrap();
        assert_eq!(report.quarantine_file.as_deref(), Some("aof.quarantine.5"));
        assert_eq!(file_bytes(vfs.as_ref(), "/db/aof.quarantine.4"), b"older");
    }

    #[test]
    fn a_log_name_must_be_a_plain_file_name() {
        for name in ["", ".", "..", "a/b", "/aof", "../aof", "aof/", "a\\b", "a\0b"] {
            let result = AofWriter::recover(mem_vfs(), Path::new(DIR), name, FsyncPolicy::No, 0);
            assert!(matches!(result, Err(Error::Invalid(_))), "{name:?} accepted");
        }
    }

    #[test]
    fn a_failed_recovery_cut_is_an_io_error_and_a_retry_finishes_it() {
        let vfs = FailingVfs::new();
        let mut bytes = log_bytes(&sample_records());
        bytes.truncate(bytes.len() - 2);
        put_file(vfs.as_ref(), LOG, &bytes);
        vfs.faults().fail_next_set_len = true;
        let err = recover(vfs.clone(), Path::new(DIR)).unwrap_err();
        assert!(matches!(err, Error::Io { op: IoOp::Truncate, .. }), "{err}");

        let (_, records, report) = recover(vfs.clone(), Path::new(DIR)).unwrap();
        assert_eq!(records, sample_records()[..3]);
        assert_eq!(report.quarantine_file.as_deref(), Some("aof.quarantine.2"), "the first copy stays");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn appended_records_recover_exactly_under_every_policy(
            records in arb_records(24),
            more in arb_records(8),
            batch in 1usize..5,
            step_ms in 0u64..1500,
        ) {
            for policy in FsyncPolicy::ALL {
                let vfs = mem_vfs();
                let dir = Path::new(DIR);
                let mut now_ms = 0;
                let (mut writer, _, _) = recover_with(vfs.clone(), dir, policy, now_ms).unwrap();
                write_all(&mut writer, &records, batch, step_ms, &mut now_ms);
                drop(writer);

                let (mut writer, recovered, report) = recover_with(vfs.clone(), dir, policy, now_ms).unwrap();
                prop_assert_eq!(&recovered, &records);
                prop_assert_eq!(report.dropped_bytes, 0);
                write_all(&mut writer, &more, batch, step_ms, &mut now_ms);
                drop(writer);

                let (_, recovered, _) = recover_with(vfs.clone(), dir, policy, now_ms).unwrap();
                prop_assert_eq!(recovered, [records.clone(), more.clone()].concat());
            }
        }

        #[test]
        fn a_log_cut_anywhere_recovers_its_whole_frames(
            records in arb_records(16),
            more in arb_records(4),
            cut in any::<prop::sample::Index>(),
        ) {
            let len = log_bytes(&records).len();
            check_cut(&records, cut.index(len + 1), &more);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn a_sampled_bit_flip_of_a_larger_log_is_caught(
            records in proptest::collection::vec(arb_record(), 8..40),
            bit in any::<prop::sample::Index>(),
        ) {
            let bits = log_bytes(&records).len() * 8;
            check_flip(&records, bit.index(bits));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]

        #[test]
        fn appended_records_recover_exactly_on_a_real_disk(
            records in arb_records(16),
            more in arb_records(4),
            cut_tail in 0usize..12,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
            let mut now_ms = 0;
            let (mut writer, _, _) = recover_with(vfs.clone(), dir, FsyncPolicy::EverySec, 0).unwrap();
            write_all(&mut writer, &records, 3, 400, &mut now_ms);
            drop(writer);

            let (mut writer, recovered, _) = recover_with(vfs.clone(), dir, FsyncPolicy::Always, now_ms).unwrap();
            prop_assert_eq!(&recovered, &records);
            write_all(&mut writer, &more, 1, 0, &mut now_ms);
            let len_bytes = writer.len_bytes();
            drop(writer);

            // Tear the last few bytes off, as a crash mid-append would: the
            // records whose frames end before the tear survive (the file
            // may end in a mark rather than a record).
            let cut_bytes = (cut_tail as u64).min(len_bytes - HEADER_FRAME_BYTES);
            let untorn = file_bytes(vfs.as_ref(), dir.join("aof").to_str().unwrap());
            let mut walk = LogWalk::new(Path::new("aof"), &untorn);
            let mut record_ends = Vec::new();
            while walk.next_record().unwrap().is_some() {
                record_ends.push(walk.valid_len_bytes());
            }
            let mut file = vfs.open(&dir.join("aof"), OpenMode::Write).unwrap();
            file.set_len(len_bytes - cut_bytes).unwrap();
            drop(file);

            let (_, recovered, report) = recover_with(vfs.clone(), dir, FsyncPolicy::No, now_ms).unwrap();
            let all = [records.clone(), more.clone()].concat();
            let whole_frames = record_ends.iter().take_while(|&&end| end <= len_bytes - cut_bytes).count();
            prop_assert_eq!(&recovered[..], &all[..whole_frames]);
            prop_assert_eq!(report.valid_len_bytes + report.dropped_bytes, len_bytes - cut_bytes);
        }
    }
}
