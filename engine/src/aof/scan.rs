//! [`LogWalk`] and [`scan_log`]: read a log's bytes record by record,
//! stopping at the first invalid frame. Pure (no I/O), so recovery, replay
//! and the fuzz target run the very same code over any bytes.
//!
//! The scan is point-in-time by construction: it walks frames in order and
//! the loop ends at the first frame that is not whole and valid, so no
//! record after it can ever be returned. What lies beyond is only
//! *looked at*, with a bounded search, to tell a torn tail from damage to
//! durable bytes (see "Torn tails, damage" in the module doc of `aof`):
//! damage is proven by the header (the invalid frame lies inside a
//! rewrite's snapshot, before its `SNAPSHOT_END`) or by a valid frame after the invalid one that
//! vouches it was durable — a `SYNCED n` with `n` past its start, or any
//! valid frame after an invalid header, or a second header — or by a log
//! longer than a header with no valid frame in it at all.

use std::path::Path;

use super::header::{check_header, older_version, AOF_VERSION, HEADER_FRAME_BYTES, HEADER_PLACE};
use super::{is_known_kind, Record, RecordRef, KIND_HEADER, KIND_SNAPSHOT_END, KIND_SYNCED};
use crate::codec::ByteReader;
use crate::frame::{
    decode_checked_frame, decode_frame, find_valid_frame_within, FrameInvalid, Log, Place, Scan, FRAME_HEADER_BYTES,
    KIND_OFFSET_BYTES,
};
use crate::{Error, Result};

/// The most bytes the search past an invalid frame checksums before it
/// gives up (and assumes valid frames follow). Bounds the time an
/// adversarial tail can cost, whatever its size.
const FIND_BUDGET_BYTES: usize = 64 << 20;

/// What scanning a log's bytes found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub struct LogScan {
    /// Every record before the first invalid frame, in log order.
    pub records: Vec<Record>,
    /// The end of the last whole valid frame: at least the header's length
    /// if the header is valid, 0 if it is missing or invalid. Always the
    /// offset of the invalid frame, if there is one.
    pub valid_len_bytes: u64,
    /// The offset and reason of the first invalid frame.
    pub invalid: Option<(u64, &'static str)>,
    /// Whether a valid frame starts somewhere after the invalid one (or
    /// the search could not rule one out).
    pub valid_frames_after_invalid: bool,
    /// Why the invalid frame must be damage to durable bytes rather than a
    /// torn write, if it must (see the module doc).
    pub damage: Option<String>,
}

/// Scan `bytes`, the contents of the log at `path` (used only to name the
/// file in errors), into owned records.
///
/// Returns [`Error::Corrupt`] only for bytes that a torn write cannot
/// produce: a frame with a valid checksum whose payload does not decode or
/// whose kind is unknown, a first frame that is not a header, or a valid
/// header with the wrong magic or version; and [`Error::OldFormat`] for a
/// log an older format version wrote. Every other problem ends the scan
/// and is reported in [`LogScan::invalid`].
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub fn scan_log(path: &Path, bytes: &[u8]) -> Result<LogScan> {
    let mut walk = LogWalk::new(path, bytes);
    let records = walk.collect_records()?;
    Ok(LogScan {
        records,
        valid_len_bytes: walk.valid_len_bytes(),
        invalid: walk.invalid(),
        valid_frames_after_invalid: walk.valid_frames_after_invalid(),
        damage: walk.damage().map(str::to_string),
    })
}

/// A walk over a log's frames that yields each record in place, stopping
/// at the first invalid frame: the one loop both [`scan_log`] and replay
/// run, so what recovery checks is exactly what replay reads.
///
/// The walk is point-in-time by construction (see the module doc). Once
/// it has ended, [`LogWalk::valid_len_bytes`] and the accessors after it
/// say where and why.
#[derive(Clone, Debug)]
pub struct LogWalk<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    /// The start of the next frame.
    at: usize,
    valid_len_bytes: u64,
    invalid: Option<(u64, &'static str)>,
    valid_frames_after_invalid: bool,
    damage: Option<String>,
    inside_snapshot: bool,
    /// Which of the store's logs this is (the header says; 0 until the
    /// header is read): every later frame is bound to it.
    generation: u64,
    /// A rewrite made the log and the walk has not yet met the
    /// `SNAPSHOT_END` frame that ends its snapshot: every byte so far was
    /// durable before the file became the log.
    in_snapshot: bool,
    /// Valid frames after the header, `SYNCED` marks included.
    frames: u64,
    /// The most any mark in the valid prefix vouches durable.
    vouched_len_bytes: u64,
    /// The end of the last valid record (or snapshot end); 0 if none:
    /// nothing a mark needs to vouch for (a header is covered otherwise).
    data_end_bytes: u64,
    ended: bool,
    /// The bytes were walked whole before, checksums included, and have
    /// not changed since: skip the checksums ([`LogWalk::checked`]).
    crc_verified: bool,
}

impl<'a> LogWalk<'a> {
    /// A walk over `bytes`, the contents of the log at `path` (used only
    /// to name the file in errors).
    pub fn new(path: &'a Path, bytes: &'a [u8]) -> Self {
        LogWalk {
            path,
            bytes,
            at: 0,
            valid_len_bytes: 0,
            invalid: None,
            valid_frames_after_invalid: false,
            damage: None,
            inside_snapshot: false,
            generation: 0,
            in_snapshot: false,
            frames: 0,
            vouched_len_bytes: 0,
            data_end_bytes: 0,
            ended: false,
            crc_verified: false,
        }
    }

    /// A walk over bytes an earlier walk over the same, unchanged buffer
    /// found valid up to their end: it decodes every frame again but does
    /// not recompute checksums (recovery checks the log whole before it
    /// replays it; one CRC per frame is enough). Frames are still checked
    /// for length and kind, and a frame that fails either still ends the
    /// walk.
    pub(crate) fn checked(path: &'a Path, bytes: &'a [u8]) -> Self {
        LogWalk { crc_verified: true, ..LogWalk::new(path, bytes) }
    }

    /// The next record, `None` once the log (or its valid prefix) ends.
    /// Errors are [`Error::Corrupt`], as [`scan_log`] documents.
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'a>>> {
        let bytes = self.bytes;
        while !self.ended && self.at < bytes.len() {
            let at = self.at;
            let decoded = if self.crc_verified {
                decode_checked_frame(&bytes[at..])
            } else if at == 0 {
                decode_frame(bytes, HEADER_PLACE)
            } else {
                decode_frame(&bytes[at..], Place::aof(self.generation, at as u64))
            };
            let frame = match decoded {
                Ok(frame) => frame,
                Err(invalid) => {
                    refuse_older_format(self.path, bytes, at)?;
                    let beyond = self.look_past_invalid(at);
                    if let (Some(next), true) = (beyond.first_valid, at > 0 && canary!(ReplayPastInvalid)) {
                        // Planted: skip the damage and replay what follows.
                        self.at = next;
                        continue;
                    }
                    self.end_at_invalid(at, invalid, beyond);
                    break;
                }
            };
            assert!(frame.total_bytes >= FRAME_HEADER_BYTES);
            assert!(frame.total_bytes <= bytes.len() - at);
            let payload_offset_bytes = (at + FRAME_HEADER_BYTES) as u64;
            let record = if at == 0 {
                self.read_header(frame.kind, frame.payload, payload_offset_bytes)?;
                None
            } else if frame.kind == KIND_SYNCED {
                self.read_mark(at, frame.payload, payload_offset_bytes)?;
                None
            } else if frame.kind == KIND_SNAPSHOT_END {
                self.read_snapshot_end(at, frame.total_bytes, frame.payload)?;
                None
            } else {
                let record = RecordRef::decode(frame.kind, frame.payload, payload_offset_bytes)
                    .map_err(|e| e.in_file(self.path))?;
                Some(record)
            };
            self.at = at + frame.total_bytes;
            self.valid_len_bytes = self.at as u64;
            if record.is_some() {
                self.data_end_bytes = self.valid_len_bytes;
            }
            if record.is_some() {
                self.frames += 1;
                return Ok(record);
            }
        }
        self.ended = true;
        self.refuse_unended_snapshot()?;
        assert!(self.valid_len_bytes <= bytes.len() as u64);
        match self.invalid {
            Some((invalid_at, _)) => assert_eq!(invalid_at, self.valid_len_bytes),
            None => assert_eq!(self.valid_len_bytes, bytes.len() as u64),
        }
        // A mark vouches only for bytes before itself, and a snapshot end
        // only for bytes up to its own end.
        debug_assert!(self.vouched_len_bytes <= bytes.len() as u64);
        Ok(None)
    }

    /// What lies past the invalid frame at `at`, and why it must be damage
    /// if it must: what [`look_past`] finds, plus what the walk so far
    /// knows (the header's size, the snapshot a rewrite made durable).
    fn look_past_invalid(&self, at: usize) -> Beyond {
        let bytes = self.bytes;
        let mut beyond = look_past(bytes, at, self.generation_hint());
        if at == 0 && beyond.damage.is_none() && bytes.len() as u64 > HEADER_FRAME_BYTES {
            // Nothing valid anywhere, and more bytes than a
            // header: a torn header is the only torn write a
            // log can hold before its header is durable, and
            // it leaves no more than the header's own bytes.
            beyond.damage = Some(format!(
                "the log holds {} bytes but no valid frame, and a torn header leaves at most \
                 {HEADER_FRAME_BYTES} (a header is durable before anything else is written)",
                bytes.len()
            ));
        }
        if self.in_snapshot && !canary!(UnfinishedRewriteRead) {
            let why = "it lies inside the snapshot a rewrite made durable, before the frame that ends it";
            beyond.damage = Some(why.to_string());
            beyond.inside_snapshot = true;
        }
        beyond
    }

    /// The generation later frames are bound to: the header's, once read;
    /// before that (an invalid header) what its generation field holds,
    /// unchecked, so a header damaged elsewhere still lets the search
    /// find the frames after it.
    fn generation_hint(&self) -> u64 {
        if self.generation > 0 {
            return self.generation;
        }
        let field = FRAME_HEADER_BYTES + 12..FRAME_HEADER_BYTES + 20;
        self.bytes.get(field).map_or(0, |bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    /// A rewrite's log whose walk ended, at its end or at an invalid frame,
    /// before its snapshot's `SNAPSHOT_END`: the rewrite's last write never
    /// landed where it belongs, and there is no point in time to read
    /// (damage at an invalid frame inside the snapshot is already refused
    /// as such; this is a log that ends cleanly too early). Planted: read
    /// as if the snapshot ended where the valid frames do.
    fn refuse_unended_snapshot(&self) -> Result<()> {
        if !self.in_snapshot || self.invalid.is_some() || canary!(UnfinishedRewriteRead) {
            return Ok(());
        }
        let why = "a rewrite's log ends before the frame that ends its snapshot: the rewrite's last write never landed";
        Err(Error::corrupt(self.path, self.valid_len_bytes, why))
    }

    /// End the walk at the invalid frame at `at`, recording why and what
    /// lies past it.
    fn end_at_invalid(&mut self, at: usize, invalid: FrameInvalid, beyond: Beyond) {
        self.invalid = Some((at as u64, invalid.reason()));
        self.valid_frames_after_invalid = beyond.first_valid.is_some();
        self.damage = beyond.damage;
        // Damage to the header is damage to what says whether
        // a snapshot follows it: cut at byte 0, a rewritten
        // log would lose its whole snapshot, no point in time.
        self.inside_snapshot = beyond.inside_snapshot || (at == 0 && self.damage.is_some());
        self.ended = true;
    }

    /// The header frame, at byte 0: it says which generation every later
    /// frame is bound to, and whether a rewrite's snapshot follows.
    fn read_header(&mut self, kind: u8, payload: &[u8], payload_offset_bytes: u64) -> Result<()> {
        if kind != KIND_HEADER {
            return Err(Error::corrupt(self.path, 0, "log does not start with a header frame"));
        }
        let header = check_header(payload, payload_offset_bytes).map_err(|e| e.in_file(self.path))?;
        self.generation = header.generation;
        self.in_snapshot = header.rewritten;
        Ok(())
    }

    /// The `SNAPSHOT_END` frame at `at`: the snapshot a rewrite made
    /// durable ends with it, so everything before its end is vouched for,
    /// marks aside. Only a rewrite's log holds one, once.
    fn read_snapshot_end(&mut self, at: usize, total_bytes: usize, payload: &[u8]) -> Result<()> {
        if !self.in_snapshot {
            let why = format!("a snapshot end at byte {at}, in a log no rewrite made or after the snapshot ended");
            return Err(Error::corrupt(self.path, at as u64, why));
        }
        if !payload.is_empty() {
            return Err(Error::corrupt(self.path, at as u64, "a snapshot end frame with a payload"));
        }
        let snapshot_end_bytes = (at + total_bytes) as u64;
        self.in_snapshot = false;
        self.frames += 1;
        self.vouched_len_bytes = snapshot_end_bytes;
        self.data_end_bytes = snapshot_end_bytes;
        Ok(())
    }

    /// A durability mark at `at`: read, checked, never a record.
    fn read_mark(&mut self, at: usize, payload: &[u8], payload_offset_bytes: u64) -> Result<()> {
        let durable_len_bytes = decode_mark(payload, payload_offset_bytes, self.path)?;
        if durable_len_bytes > at as u64 {
            let why = format!("a mark at byte {at} claims the first {durable_len_bytes} bytes durable");
            return Err(Error::corrupt(self.path, at as u64, why));
        }
        self.frames += 1;
        self.vouched_len_bytes = self.vouched_len_bytes.max(durable_len_bytes);
        Ok(())
    }

    /// The rest of the walk's records, owned: for scans, tests and fuzz
    /// targets that compare whole logs.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn collect_records(&mut self) -> Result<Vec<Record>> {
        let mut records = Vec::new();
        while let Some(record) = self.next_record()? {
            records.push(record.to_record());
        }
        Ok(records)
    }

    /// The end of the last whole valid frame walked so far: at least the
    /// header's length if the header is valid, 0 if it is missing or
    /// invalid. Once the walk has ended, the offset of the invalid frame
    /// if there is one.
    pub fn valid_len_bytes(&self) -> u64 {
        self.valid_len_bytes
    }

    /// The offset and reason of the first invalid frame, once met.
    pub fn invalid(&self) -> Option<(u64, &'static str)> {
        self.invalid
    }

    /// Whether a valid frame starts somewhere after the invalid one: a
    /// hint of bit rot rather than a torn write. Reported, not acted on.
    pub fn valid_frames_after_invalid(&self) -> bool {
        self.valid_frames_after_invalid
    }

    /// Why the invalid frame must be damage to durable bytes, if it must.
    pub fn damage(&self) -> Option<&str> {
        self.damage.as_deref()
    }

    /// Whether the invalid frame lies inside a rewrite's snapshot (before
    /// its `SNAPSHOT_END`), or is a damaged header (which would have said
    /// whether one follows): no point in time to cut back to.
    pub fn inside_snapshot(&self) -> bool {
        self.inside_snapshot
    }

    /// The most any mark walked so far vouches durable.
    pub fn vouched_len_bytes(&self) -> u64 {
        self.vouched_len_bytes
    }

    /// The end of the last frame walked so far that is not a mark.
    pub fn data_end_bytes(&self) -> u64 {
        self.data_end_bytes
    }

    /// The header's generation, once a valid header was walked (else 0).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Valid frames walked after the header so far, `SYNCED` marks included
    /// (a log with any is one a store has written to).
    pub fn frames(&self) -> u64 {
        self.frames
    }
}

/// An invalid frame at byte 0 that is an older format's valid header
/// (`header.rs`, `older_version`) is refused by its version, not as damage.
fn refuse_older_format(path: &Path, bytes: &[u8], at: usize) -> Result<()> {
    match older_version(&bytes[at..]).filter(|_| at == 0) {
        Some(version) => Err(Error::OldFormat { file: path.to_path_buf(), version, reads: AOF_VERSION }),
        None => Ok(()),
    }
}

/// A `SYNCED` frame's payload: the durable length it vouches for.
fn decode_mark(payload: &[u8], payload_offset_bytes: u64, path: &Path) -> Result<u64> {
    let mut reader = ByteReader::new(payload, payload_offset_bytes);
    let durable_len_bytes = reader.u64().map_err(|e| e.in_file(path))?;
    reader.finish().map_err(|e| e.in_file(path))?;
    Ok(durable_len_bytes)
}

/// What lies past an invalid frame.
struct Beyond {
    /// The first valid frame after it, if any (or the search gave up).
    first_valid: Option<usize>,
    /// Why the invalid frame must be damage, if it must.
    damage: Option<String>,
    /// The invalid frame lies inside a rewrite's snapshot.
    inside_snapshot: bool,
}

/// Look past the invalid frame at `invalid_at` for proof that it was
/// durable (see the module doc): resync to each valid frame after it (of
/// `generation`, or a header) and walk on, within a budget of checksummed
/// bytes.
fn look_past(bytes: &[u8], invalid_at: usize, generation: u64) -> Beyond {
    let log_of = |kind: u8| match kind {
        KIND_HEADER => Some(HEADER_PLACE.log),
        _ if is_known_kind(kind) && generation > 0 => Some(Log::Aof { generation }),
        _ => None,
    };
    let mut budget_bytes = FIND_BUDGET_BYTES;
    let mut first_valid = None;
    // The first proof of damage found; the walk goes on to the end anyway,
    // to learn whether a rewrite's snapshot ends after the invalid frame.
    let mut damage: Option<String> = None;
    let mut from = invalid_at + 1;
    loop {
        let next = match find_valid_frame_within(bytes, from, &mut budget_bytes, log_of) {
            Scan::NotFound => return Beyond { first_valid, damage, inside_snapshot: false },
            Scan::GaveUp => {
                // Refusing costs an operator a look; guessing could cost
                // acknowledged writes.
                let why = "the bytes after it could not be ruled out as durable frames within the scan budget";
                return Beyond {
                    first_valid: first_valid.or(Some(from)),
                    damage: Some(why.to_string()),
                    inside_snapshot: false,
                };
            }
            Scan::Found(next) => next,
        };
        first_valid.get_or_insert(next);
        if invalid_at == 0 && damage.is_none() {
            damage = Some(format!(
                "the header is invalid, yet a valid frame follows at byte {next} (a header is durable before any \
                 frame is written)"
            ));
        }
        let mut at = next;
        while at < bytes.len() {
            let Some(log) = bytes.get(at + KIND_OFFSET_BYTES).and_then(|kind| log_of(*kind)) else { break };
            let Ok(frame) = decode_frame(&bytes[at..], Place { log, offset_bytes: at as u64 }) else { break };
            if frame.kind == KIND_HEADER && damage.is_none() {
                damage = Some(format!("a second header frame at byte {at}"));
            }
            if frame.kind == KIND_SYNCED && frame.payload.len() == 8 && damage.is_none() {
                let durable_len_bytes = u64::from_le_bytes(frame.payload.try_into().expect("8 bytes"));
                if durable_len_bytes > invalid_at as u64 {
                    damage = Some(format!(
                        "the SYNCED frame at byte {at} vouches that the first {durable_len_bytes} bytes were durable"
                    ));
                }
            }
            at += frame.total_bytes;
        }
        if at >= bytes.len() {
            return Beyond { first_valid, damage, inside_snapshot: false };
        }
        from = at + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::header::{encode_header, HEADER_FRAME_BYTES};
    use crate::aof::testing::{arb_records, log_bytes, sample_records};
    use crate::aof::KIND_COMMAND;
    use crate::codec::put_u32;
    use crate::frame::{encode_frame, Place, MAX_FRAME_PAYLOAD_BYTES};
    use proptest::prelude::*;

    fn path() -> &'static Path {
        Path::new("/db/aof")
    }

    fn corrupt_at(result: Result<LogScan>) -> (u64, String) {
        match result {
            Err(Error::Corrupt { file, offset_bytes, reason }) => {
                assert_eq!(file, path());
                (offset_bytes, reason)
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn an_empty_file_is_an_empty_log_without_a_header() {
        let scan = scan_log(path(), &[]).unwrap();
        assert_eq!(
            scan,
            LogScan {
                records: vec![],
                valid_len_bytes: 0,
                invalid: None,
                valid_frames_after_invalid: false,
                damage: None
            }
        );
    }

    #[test]
    fn a_whole_log_scans_to_its_records() {
        let records = sample_records();
        let bytes = log_bytes(&records);
        let scan = scan_log(path(), &bytes).unwrap();
        assert_eq!(scan.records, records);
        assert_eq!(scan.valid_len_bytes, bytes.len() as u64);
        assert_eq!(scan.invalid, None);
    }

    #[test]
    fn a_torn_tail_ends_the_log_and_nothing_valid_follows() {
        let records = sample_records();
        let bytes = log_bytes(&records);
        let cut = bytes.len() - 3;
        let scan = scan_log(path(), &bytes[..cut]).unwrap();
        assert_eq!(scan.records, records[..records.len() - 1]);
        assert_eq!(scan.invalid, Some((scan.valid_len_bytes, "frame payload cut short")));
        assert!(!scan.valid_frames_after_invalid);
    }

    #[test]
    fn damage_mid_log_stops_the_scan_and_is_flagged() {
        let records = sample_records();
        let whole = log_bytes(&records);
        let first_end = log_bytes(&records[..1]).len();
        let mut bytes = whole.clone();
        bytes[first_end + 10] ^= 0x40;
        let scan = scan_log(path(), &bytes).unwrap();
        assert_eq!(scan.records, records[..1]);
        assert_eq!(scan.invalid, Some((first_end as u64, "frame checksum mismatch")));
        assert!(scan.valid_frames_after_invalid);
    }

    #[test]
    fn a_torn_header_leaves_nothing_valid() {
        let mut bytes = Vec::new();
        encode_header(&mut bytes, 1);
        for cut in 1..bytes.len() {
            let scan = scan_log(path(), &bytes[..cut]).unwrap();
            assert_eq!((scan.valid_len_bytes, scan.records.len()), (0, 0));
            assert_eq!(scan.invalid.map(|(at, _)| at), Some(0));
        }
    }

    #[test]
    fn a_whole_frame_misdirected_to_an_earlier_frames_place_is_not_replayed() {
        let set = |value: &str| Record::Command(vec![b"SET".to_vec(), b"k".to_vec(), value.as_bytes().to_vec()]);
        let mut bytes = Vec::new();
        encode_header(&mut bytes, 1);
        let first_at = bytes.len();
        set("1").encode_frame(&mut bytes, Place::aof(1, 0));
        let second_at = bytes.len();
        set("2").encode_frame(&mut bytes, Place::aof(1, 0));
        // The second frame's bytes, written whole over the first's.
        let moved = bytes[second_at..].to_vec();
        bytes[first_at..second_at].copy_from_slice(&moved);
        let scan = scan_log(path(), &bytes).unwrap();
        assert_eq!(scan.invalid, Some((first_at as u64, "frame checksum mismatch")));
        assert!(scan.records.is_empty(), "a frame valid only elsewhere was replayed: {:?}", scan.records);
    }

    #[test]
    fn a_valid_frame_that_does_not_decode_is_corrupt() {
        let mut bytes = Vec::new();
        encode_header(&mut bytes, 1);
        encode_frame(&mut bytes, Place::aof(1, 0), KIND_COMMAND, &[1, 0]);
        let (offset, reason) = corrupt_at(scan_log(path(), &bytes));
        assert_eq!(offset, HEADER_FRAME_BYTES + FRAME_HEADER_BYTES as u64);
        assert_eq!(reason, "length runs past the end of the data");

        let mut bytes = Vec::new();
        encode_header(&mut bytes, 1);
        encode_frame(&mut bytes, Place::aof(1, 0), 9, b"");
        assert_eq!(corrupt_at(scan_log(path(), &bytes)).1, "unknown frame kind");
    }

    #[test]
    fn a_log_must_open_with_a_valid_header() {
        let mut bytes = Vec::new();
        Record::Command(vec![b"PING".to_vec()]).encode_frame(&mut bytes, Place::aof(0, 0));
        assert_eq!(corrupt_at(scan_log(path(), &bytes)), (0, "log does not start with a header frame".to_string()));

        let mut payload = b"NOT-AOF!".to_vec();
        put_u32(&mut payload, 1);
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place::aof(0, 0), KIND_HEADER, &payload);
        assert_eq!(corrupt_at(scan_log(path(), &bytes)), (9, "not an AOF: wrong magic".to_string()));
    }

    #[test]
    fn a_huge_length_field_is_invalid_without_allocating() {
        let mut bytes = Vec::new();
        encode_header(&mut bytes, 1);
        let frame_at = bytes.len() as u64;
        put_u32(&mut bytes, u32::MAX);
        bytes.extend_from_slice(&[0u8; 16]);
        let scan = scan_log(path(), &bytes).unwrap();
        assert_eq!(scan.invalid, Some((frame_at, "frame length over the limit")));

        let mut bytes = Vec::new();
        encode_header(&mut bytes, 1);
        put_u32(&mut bytes, MAX_FRAME_PAYLOAD_BYTES as u32);
        bytes.extend_from_slice(&[0u8; 16]);
        let scan = scan_log(path(), &bytes).unwrap();
        assert_eq!(scan.invalid, Some((frame_at, "frame payload cut short")));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            check_invariants(&bytes);
        }

        #[test]
        fn arbitrary_bytes_after_a_valid_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut bytes = Vec::new();
            encode_header(&mut bytes, 1);
            bytes.extend_from_slice(&tail);
            check_invariants(&bytes);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn garbage_after_a_log_never_costs_a_valid_record(
            records in arb_records(12),
            tail in proptest::collection::vec(any::<u8>(), 1..64),
        ) {
            let mut bytes = log_bytes(&records);
            let log_len = bytes.len() as u64;
            bytes.extend_from_slice(&tail);
            // Random bytes forge a valid checksum with odds of 2^-32; an
            // Err here would be such a forgery, still a refusal, not a loss.
            if let Ok(scan) = scan_log(path(), &bytes) {
                prop_assert_eq!(&scan.records[..records.len()], &records[..]);
                prop_assert!(scan.valid_len_bytes >= log_len);
            }
        }
    }

    fn check_invariants(bytes: &[u8]) {
        match scan_log(path(), bytes) {
            Ok(scan) => {
                assert!(scan.valid_len_bytes <= bytes.len() as u64);
                assert_eq!(scan.invalid.is_some(), scan.valid_len_bytes < bytes.len() as u64);
                assert!(!scan.valid_frames_after_invalid || scan.invalid.is_some());
                if scan.valid_len_bytes == 0 {
                    assert!(scan.records.is_empty());
                }
            }
            Err(err) => assert!(err.is_corrupt(), "{err}"),
        }
    }
}
