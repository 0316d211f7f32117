//! Recovery: read the log back, cut a torn tail durably, and hand out a
//! writer positioned at the valid end.
//!
//! The steps run in an order chosen so that a crash between any two of
//! them leaves a log the next recovery handles the same way:
//!
//! 1. scan the whole file (refusing corruption before touching anything);
//! 2. copy the invalid tail, if any, to a quarantine file, durably
//!    (file fsync, then directory fsync);
//! 3. cut the log to its valid length and, if the header is missing or
//!    torn, write a fresh one; fsync the log;
//! 4. fsync the directory, so the log's own name is durable even if the
//!    process that created it died before its directory fsync.
//!
//! Only then does the caller get a writer, so no append can follow an
//! invalid frame. A read-only recovery ([`AofWriter::recover_read_only`])
//! runs step 1 alone and hands out no writer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::header::encode_header;
use super::quarantine::quarantine;
use super::{AofWriter, FsyncPolicy, LogWalk, Record};
use crate::vfs::{read_whole, OpenMode, Vfs};
use crate::{Error, Result};

/// What recovering a log found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AofRecovery {
    /// Records recovered (the header not counted).
    pub frames: u64,
    /// The end of the last whole valid frame; 0 if the header was missing
    /// or invalid (a fresh header was then written).
    pub valid_len_bytes: u64,
    /// Bytes from the first invalid frame to the end of the file, moved to
    /// the quarantine file and cut from the log (read-only: not replayed,
    /// and left where they are).
    pub dropped_bytes: u64,
    /// Why bytes were dropped, with the offset of the first invalid frame.
    pub reason: Option<String>,
    /// A valid frame follows the invalid one: more likely bit rot than a
    /// torn write. The store should say so loudly.
    pub valid_frames_after_invalid: bool,
    /// The name (in the log's directory) of the file holding the dropped
    /// bytes.
    pub quarantine_file: Option<String>,
}

/// The valid prefix of a recovered log, held as bytes and read back one
/// record at a time with [`RecoveredLog::records`]: replay never holds more
/// than the file's bytes and the one record in hand.
#[derive(Clone, Debug)]
pub struct RecoveredLog {
    path: PathBuf,
    /// The log up to the end of its last whole valid frame.
    bytes: Vec<u8>,
    frames: u64,
}

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

impl AofWriter {
    /// Recover the log at `dir/name` (a missing file is an empty log) and
    /// return a writer positioned at its valid end, the records before the
    /// first invalid frame, and a report.
    ///
    /// Invalid bytes are copied to `dir/<name>.quarantine.<n>` (n one past
    /// the highest there) and cut from the log, durably, before this
    /// returns. A missing or torn header is rewritten durably. A frame
    /// with a valid checksum that does not decode is refused with
    /// [`Error::Corrupt`], and nothing on disk is changed.
    pub fn recover(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        name: &str,
        policy: FsyncPolicy,
        now_ms: u64,
    ) -> Result<(AofWriter, RecoveredLog, AofRecovery)> {
        let (writer, log, report) = Self::recover_in(vfs, dir, name, policy, now_ms, false)?;
        Ok((writer.expect("a writable recovery hands out a writer"), log, report))
    }

    /// Read the log at `dir/name` as [`AofWriter::recover`] does (a missing
    /// file is an empty log; corruption is refused alike) and hand back the
    /// records before the first invalid frame, changing nothing on disk:
    /// no quarantine, no cut, no header, no fsync, and no writer.
    pub fn recover_read_only(vfs: Arc<dyn Vfs>, dir: &Path, name: &str) -> Result<(RecoveredLog, AofRecovery)> {
        let (writer, log, report) = Self::recover_in(vfs, dir, name, FsyncPolicy::No, 0, true)?;
        assert!(writer.is_none(), "a read-only recovery hands out no writer");
        Ok((log, report))
    }

    fn recover_in(
        vfs: Arc<dyn Vfs>,
        dir: &Path,
        name: &str,
        policy: FsyncPolicy,
        now_ms: u64,
        read_only: bool,
    ) -> Result<(Option<AofWriter>, RecoveredLog, AofRecovery)> {
        check_file_name(name)?;
        let path = dir.join(name);
        let exists = vfs.exists(&path).map_err(|e| Error::io("stat", &path, e))?;
        // Planted: one read is taken for the disk's bytes.
        let read = if canary!(SingleReadRecovery) { crate::canary::read_once } else { read_whole };
        let mut bytes = match exists.then(|| read(vfs.as_ref(), &path)) {
            None => Vec::new(),
            Some(Ok(bytes)) => bytes,
            // Planted: a log that cannot be read is taken for an empty one.
            Some(Err(_)) if canary!(ReadErrorEmptyLog) => Vec::new(),
            Some(Err(e)) => return Err(Error::io("read", &path, e)),
        };
        // Check every frame before anything changes on disk: corruption
        // is refused with the file untouched.
        let mut walk = LogWalk::new(&path, &bytes);
        let mut frames = 0u64;
        while walk.next_record()?.is_some() {
            frames += 1;
        }

        let file_len_bytes = bytes.len() as u64;
        let valid_len_bytes = walk.valid_len_bytes();
        assert!(valid_len_bytes <= file_len_bytes);
        let dropped_bytes = file_len_bytes - valid_len_bytes;
        assert_eq!(walk.invalid().is_some(), dropped_bytes > 0);
        let mut report = AofRecovery {
            frames,
            valid_len_bytes,
            dropped_bytes,
            reason: walk.invalid().map(|(at_bytes, why)| format!("{why} at byte {at_bytes}")),
            valid_frames_after_invalid: walk.valid_frames_after_invalid(),
            quarantine_file: None,
        };

        if read_only {
            // Every step below writes; a read-only open replays the valid
            // prefix and leaves the tail where it is.
            bytes.truncate(valid_len_bytes as usize);
            return Ok((None, RecoveredLog { path, bytes, frames }, report));
        }

        // Planted: the torn tail stays, and the writer appends after it.
        let keep_torn_tail = canary!(AppendAfterTornTail) && valid_len_bytes > 0;
        if dropped_bytes > 0 && !keep_torn_tail {
            // The copy must be durable before the cut: after the cut, the
            // quarantine file is the only place these bytes exist.
            let tail = &bytes[valid_len_bytes as usize..];
            report.quarantine_file = Some(quarantine(vfs.as_ref(), dir, name, tail)?);
        }

        let mut file = vfs.open(&path, OpenMode::Create).map_err(|e| Error::io("open", &path, e))?;
        if dropped_bytes > 0 && !keep_torn_tail {
            file.set_len(valid_len_bytes).map_err(|e| Error::io("truncate", &path, e))?;
        }
        let mut len_bytes = if keep_torn_tail { file_len_bytes } else { valid_len_bytes };
        if len_bytes == 0 {
            let mut header = Vec::new();
            encode_header(&mut header);
            file.write_at(0, &header).map_err(|e| Error::io("write", &path, e))?;
            len_bytes = header.len() as u64;
        }
        // Always fsync, even when nothing changed: the bytes just replayed
        // may be a dead process's page cache that it never fsynced, and the
        // store is about to build on them (and, under `everysec`, promise
        // they are on disk). Replaying is vouching.
        file.sync().map_err(|e| Error::io("sync", &path, e))?;
        vfs.sync_dir(dir).map_err(|e| Error::io("sync_dir", dir, e))?;

        bytes.truncate(valid_len_bytes as usize);
        let log = RecoveredLog { path: path.clone(), bytes, frames };
        let writer = AofWriter::resume(file, path, policy, len_bytes, now_ms);
        Ok((Some(writer), log, report))
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
        assert_eq!(writer.len_bytes(), log_len);
        assert_eq!(file_bytes(vfs.as_ref(), LOG), whole[..log_len as usize]);
        if report.dropped_bytes > 0 {
            assert!(report.reason.is_some());
            assert_eq!(report.quarantine_file.as_deref(), Some("aof.quarantine.1"));
            assert_eq!(file_bytes(vfs.as_ref(), "/db/aof.quarantine.1"), whole[valid_len as usize..cut]);
        } else {
            assert_eq!(report.reason, None);
            assert_eq!(report.quarantine_file, None);
            assert_eq!(vfs.list_dir(Path::new(DIR)).unwrap(), vec!["aof".to_string()]);
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
        assert_eq!(report, AofRecovery::default());
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
        b.encode_frame(&mut bytes);
        bytes[damaged_at + 4] ^= 0xFF; // b's checksum
        c.encode_frame(&mut bytes);
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
        crate::frame::encode_frame(&mut bytes, crate::aof::KIND_STUB, &[0, 0, 0, 0, 1]);
        bytes.extend_from_slice(b"torn tail that must not be cut");
        let vfs = mem_vfs();
        put_file(vfs.as_ref(), LOG, &bytes);
        let err = recover(vfs.clone(), Path::new(DIR)).unwrap_err();
        assert!(err.is_corrupt(), "{err}");
        assert!(err.to_string().contains("/db/aof"), "{err}");
        assert_eq!(file_bytes(vfs.as_ref(), LOG), bytes);
        assert_eq!(vfs.list_dir(Path::new(DIR)).unwrap(), vec!["aof".to_string()]);
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
    fn a_read_only_recovery_replays_the_valid_prefix_and_changes_nothing() {
        let vfs = FailingVfs::new();
        let dir = Path::new(DIR);
        let (log, report) = AofWriter::recover_read_only(vfs.clone(), dir, "aof").unwrap();
        assert_eq!((log.frames(), report), (0, AofRecovery::default()), "a missing log is an empty one");
        assert!(vfs.list_dir(dir).unwrap().is_empty(), "and stays missing");

        let mut bytes = log_bytes(&sample_records());
        bytes.truncate(bytes.len() - 2);
        put_file(vfs.as_ref(), LOG, &bytes);
        let writes_before = vfs.faults().writes;
        let (log, report) = AofWriter::recover_read_only(vfs.clone(), dir, "aof").unwrap();
        assert_eq!(log.to_records(), sample_records()[..3]);
        assert_eq!(report.valid_len_bytes + report.dropped_bytes, bytes.len() as u64);
        assert!(report.dropped_bytes > 0 && report.reason.is_some());
        assert_eq!(report.quarantine_file, None);
        assert_eq!(file_bytes(vfs.as_ref(), LOG), bytes, "the torn tail stays");
        assert_eq!(vfs.list_dir(dir).unwrap(), ["aof"]);
        let faults = vfs.faults();
        assert_eq!((faults.writes, faults.syncs), (writes_before, 0));
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
        assert!(matches!(err, Error::Io { op: "truncate", .. }), "{err}");

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

            // Tear the last few bytes off, as a crash mid-append would.
            let cut_bytes = (cut_tail as u64).min(len_bytes - HEADER_FRAME_BYTES);
            let mut file = vfs.open(&dir.join("aof"), OpenMode::Write).unwrap();
            file.set_len(len_bytes - cut_bytes).unwrap();
            drop(file);

            let (_, recovered, report) = recover_with(vfs.clone(), dir, FsyncPolicy::No, now_ms).unwrap();
            let all = [records.clone(), more.clone()].concat();
            let whole_frames = if cut_bytes == 0 { all.len() } else { all.len() - 1 };
            prop_assert_eq!(&recovered[..], &all[..whole_frames]);
            prop_assert_eq!(report.valid_len_bytes + report.dropped_bytes, len_bytes - cut_bytes);
        }
    }
}
