//! Replay: from a manifest's bytes to the registry they describe, and the
//! one decision in this module that crash safety rests on — is an invalid
//! frame a torn tail, or damage to records that were already durable?
//!
//! Every append is fsynced before the next one starts, so a crash can tear
//! only the last record. Hence:
//!
//! - an invalid frame with no valid record anywhere after it is a torn
//!   tail: replay stops there and reports how much it did not read;
//! - an invalid frame with a valid record after it can only be damage in
//!   the middle of durable data: refused as `Corrupt` at its offset;
//! - if the scan for a valid record after it runs out of budget, it is
//!   refused too — refusing costs an operator a look, guessing could cost
//!   the store its registrations.
//!
//! A frame whose checksum holds but whose payload does not decode, or that
//! breaks a ledger rule, is always damage (or a foreign file): a torn write
//! does not produce a valid checksum.
//!
//! # A compacted ledger
//!
//! A compacted file (`compact.rs`) opens with a `HEADER` that says so —
//! it carries the snapshot's `next_seq` — and its *snapshot*:
//! `COMPACTED next_seq n`, `n` ADDs, `COMPACTED_END next_seq n`. The whole
//! file was written and fsynced under a temporary name before it was
//! renamed into place, so a crash cannot tear the snapshot, and an invalid
//! byte anywhere in it is damage. The header and the brackets let replay
//! tell so for every byte: damage to the header leaves a valid record
//! after it (refused as above); damage to `COMPACTED`, to an ADD or to
//! `COMPACTED_END` leaves a header that promised a snapshot, or a snapshot
//! still open, where the valid records end — even when nothing valid is
//! left after the header at all, which without the header's word would
//! read as a fresh ledger's torn first record and be cut, forgetting
//! `next_seq`. So:
//!
//! - a header that says "compacted" (`next_seq` above 0) must be followed
//!   at once by `COMPACTED` with the same `next_seq`; a header that says
//!   "never compacted" (0) by no `COMPACTED` anywhere;
//! - `COMPACTED` stands only right after the header, and only once;
//! - within the snapshot only its `n` ADDs may stand, each below
//!   `next_seq` (and ascending, as every ADD must be), then its
//!   `COMPACTED_END`, repeating its counts;
//! - an invalid frame where the header promised the snapshot or inside
//!   it, or a file that ends before its `COMPACTED_END`, is damage —
//!   refused, never cut as a torn tail;
//! - at `COMPACTED_END`, `next_seq` is raised to the recorded value, and
//!   the file continues as an appended ledger (torn tails and all). So the
//!   `next_seq` replay returns is never below the header's.
//!
//! # Version 2
//!
//! A version-2 header (`record.rs`) says nothing of compaction, and a
//! version-2 file is replayed by version 2's rules, unchanged: a snapshot
//! may follow the header or not, and is held to the rules above once its
//! `COMPACTED` is read. What version 2 cannot tell is stated, not hidden:
//! damage that leaves nothing valid after a version-2 header reads as a
//! torn tail and is cut, the snapshot's `next_seq` with it. The first
//! compaction rewrites such a file as version 3.
//!
//! A header of a version this build does not know is refused by its
//! version ([`Error::UnknownFormat`]); one of version 1, whose checksums
//! covered no place, by [`Error::OldFormat`].

use std::path::Path;

use crate::frame::{decode_frame, find_valid_frame, FrameInvalid, Log, Place, Scan};
use crate::{Error, Result};

use super::ledger::Ledger;
use super::record::{self, Header, Record};
use super::SegEntry;

/// How many bytes the scan after an invalid frame may checksum before it
/// gives up. Generous for a manifest (a torn tail is one record plus at
/// most a sector of garbage), and it bounds replay time on hostile bytes.
pub(super) const SCAN_BUDGET_BYTES: usize = 64 << 20;

/// What replaying a manifest's bytes yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Replayed {
    /// The header, if one is whole (its version is the file's).
    pub(super) header: Option<Header>,
    /// The registry as of the last whole record.
    pub(super) ledger: Ledger,
    /// The end of the last whole record: 0 when not even the header is
    /// whole, otherwise where the next append belongs.
    pub(super) valid_len_bytes: u64,
    /// ADD and DROP records replayed (the header and `COMPACTED` are not
    /// counted): what compaction weighs against the live set.
    pub(super) records: u64,
    /// The file is a compacted ledger (it opens with a whole snapshot).
    pub(super) compacted: bool,
}

/// A compacted ledger's snapshot, while it is being replayed.
#[derive(Clone, Copy, Debug)]
struct Snapshot {
    /// Where its `COMPACTED` record starts.
    at_bytes: u64,
    /// The `next_seq` it records, applied at `COMPACTED_END`.
    next_seq: u64,
    /// The ADDs it announced.
    live_entries: u64,
    /// The ADDs still to come before `COMPACTED_END`.
    left: u64,
}

/// Replay `bytes`, the content of the manifest at `path` (named in errors).
/// `scan_budget_bytes` is [`SCAN_BUDGET_BYTES`] except in tests, which
/// shrink it to reach the give-up path with small inputs.
pub(super) fn replay(path: &Path, bytes: &[u8], scan_budget_bytes: usize) -> Result<Replayed> {
    let mut replay = Replay::new(path);
    let mut at = 0usize;
    while at < bytes.len() {
        let frame = match decode_frame(&bytes[at..], Place::manifest(at as u64)) {
            Ok(frame) => frame,
            Err(invalid) => {
                replay.refuse_unless_end(bytes, at, invalid, scan_budget_bytes)?;
                break;
            }
        };
        let at_bytes = at as u64;
        if let Some(version) = record::unknown_version(frame.kind, frame.payload).filter(|_| at == 0) {
            return Err(Error::UnknownFormat { file: path.to_path_buf(), version, reads: record::VERSION });
        }
        let record = record::decode(frame.kind, frame.payload, at_bytes).map_err(|e| e.in_file(path))?;
        replay.apply(at_bytes, record)?;
        at += frame.total_bytes;
    }
    assert!(at <= bytes.len());
    replay.finish(at as u64)
}

/// Replay's state between records: the header, the registry so far and
/// the snapshot still open, if any. Each step checks one record against
/// the rules of the module doc and applies it, or refuses it as damage.
struct Replay<'a> {
    path: &'a Path,
    /// The header, once its frame at byte 0 was read.
    header: Option<Header>,
    ledger: Ledger,
    records: u64,
    compacted: bool,
    snapshot: Option<Snapshot>,
}

impl<'a> Replay<'a> {
    fn new(path: &'a Path) -> Self {
        Replay { path, header: None, ledger: Ledger::new(), records: 0, compacted: false, snapshot: None }
    }

    /// Check the valid record at `at_bytes` against where it stands, and
    /// apply it.
    fn apply(&mut self, at_bytes: u64, record: Record) -> Result<()> {
        let path = self.path;
        match record {
            Record::Header(header) if at_bytes == 0 => {
                self.header = Some(header);
                return Ok(());
            }
            Record::Header(_) => return Err(Error::corrupt(path, at_bytes, "a second manifest header")),
            _ if at_bytes == 0 => return Err(Error::corrupt(path, 0, "the first record is not the manifest header")),
            _ => {}
        }
        if let (Some(next_seq), false) = (self.owed_snapshot(), matches!(record, Record::Compacted { .. })) {
            let why = format!(
                "the header says the ledger is compacted (next_seq {next_seq}), yet the record after it is not \
                 its snapshot's COMPACTED: damage to durable records"
            );
            return Err(Error::corrupt(path, at_bytes, why));
        }
        match record {
            Record::Header(_) => unreachable!("a header is handled above"),
            Record::Compacted { next_seq, live_entries } => self.open_snapshot(at_bytes, next_seq, live_entries),
            Record::CompactedEnd { next_seq, live_entries } => self.close_snapshot(at_bytes, next_seq, live_entries),
            Record::Add(entry) => self.add(at_bytes, entry),
            Record::Drop(seq) => self.drop_seq(at_bytes, seq),
        }
    }

    /// The `next_seq` of the snapshot the header says follows it, while
    /// none has been opened: it must come next.
    fn owed_snapshot(&self) -> Option<u64> {
        let next_seq = self.header?.compacted_next_seq()?;
        (!self.compacted && self.snapshot.is_none()).then_some(next_seq)
    }

    /// The frame at `at` is invalid: succeed only if replay may end there
    /// (a torn tail of the appended ledger).
    fn refuse_unless_end(
        &self,
        bytes: &[u8],
        at: usize,
        invalid: FrameInvalid,
        scan_budget_bytes: usize,
    ) -> Result<()> {
        if let Some(version) = record::older_version(bytes).filter(|_| at == 0) {
            return Err(Error::OldFormat { file: self.path.to_path_buf(), version, reads: record::VERSION });
        }
        if let Some(snapshot) = self.snapshot {
            let why = format!(
                "{} inside the compacted ledger's snapshot (COMPACTED at byte {}), which was durable \
                 before it became the manifest: damage to durable records",
                invalid.reason(),
                snapshot.at_bytes
            );
            return Err(Error::corrupt(self.path, at as u64, why));
        }
        if let Some(next_seq) = self.owed_snapshot() {
            let why = format!(
                "{} where the header says the compacted ledger's snapshot (next_seq {next_seq}) starts; it was \
                 durable before it became the manifest: damage to durable records",
                invalid.reason()
            );
            return Err(Error::corrupt(self.path, at as u64, why));
        }
        refuse_unless_torn_tail(self.path, bytes, at, invalid, scan_budget_bytes)
    }

    /// `COMPACTED`: a snapshot opens, right after the header.
    fn open_snapshot(&mut self, at_bytes: u64, next_seq: u64, live_entries: u64) -> Result<()> {
        let path = self.path;
        let header = self.header.expect("a record after the header");
        if at_bytes != header.frame_bytes() {
            let why = "a COMPACTED record that is not right after the header";
            return Err(Error::corrupt(path, at_bytes, why));
        }
        match header {
            Header::Appended => {
                let why = "a COMPACTED record in a ledger whose header says it was never compacted";
                return Err(Error::corrupt(path, at_bytes, why));
            }
            Header::Compacted { next_seq: said } if said != next_seq => {
                let why = format!("COMPACTED with next_seq {next_seq}, yet the header says the snapshot's is {said}");
                return Err(Error::corrupt(path, at_bytes, why));
            }
            Header::Compacted { .. } | Header::V2 => {}
        }
        let ledger = &mut self.ledger;
        assert!(ledger.live().is_empty() && ledger.next_seq() == 1 && self.records == 0 && self.snapshot.is_none());
        if let Err(why) = ledger.check_raise_next_seq(next_seq) {
            return Err(Error::corrupt(path, at_bytes, format!("COMPACTED with next_seq {next_seq}: {why}")));
        }
        // Every live seq is distinct and in 1..next_seq. This also
        // bounds the count before anything trusts it.
        if live_entries > next_seq - 1 {
            let why = format!("COMPACTED announces {live_entries} live entries below next_seq {next_seq}");
            return Err(Error::corrupt(path, at_bytes, why));
        }
        self.snapshot = Some(Snapshot { at_bytes, next_seq, live_entries, left: live_entries });
        Ok(())
    }

    /// `COMPACTED_END`: the open snapshot closes, whole, and its `next_seq`
    /// takes effect.
    fn close_snapshot(&mut self, at_bytes: u64, next_seq: u64, live_entries: u64) -> Result<()> {
        let path = self.path;
        let Some(open) = self.snapshot else {
            return Err(Error::corrupt(path, at_bytes, "a COMPACTED_END outside a compacted ledger's snapshot"));
        };
        if open.left > 0 {
            let why = format!(
                "COMPACTED_END after {} of the snapshot's {} live entries",
                open.live_entries - open.left,
                open.live_entries
            );
            return Err(Error::corrupt(path, at_bytes, why));
        }
        if (next_seq, live_entries) != (open.next_seq, open.live_entries) {
            let why = format!(
                "COMPACTED_END (next_seq {next_seq}, {live_entries} live entries) does not match its COMPACTED \
                 at byte {} (next_seq {}, {} live entries)",
                open.at_bytes, open.next_seq, open.live_entries
            );
            return Err(Error::corrupt(path, at_bytes, why));
        }
        // Checked at COMPACTED, and every ADD since was below it.
        assert_eq!(self.ledger.live().len() as u64, live_entries, "the snapshot's ADDs are the whole live set");
        self.ledger.raise_next_seq(next_seq);
        self.snapshot = None;
        self.compacted = true;
        Ok(())
    }

    /// `ADD`: a segment registered, in a snapshot only as one of its
    /// announced entries and below its `next_seq`.
    fn add(&mut self, at_bytes: u64, entry: SegEntry) -> Result<()> {
        let path = self.path;
        if let Err(why) = self.ledger.check_add(&entry) {
            return Err(Error::corrupt(path, at_bytes, format!("ADD of seq {}: {why}", entry.seq)));
        }
        if let Some(open) = &mut self.snapshot {
            if open.left == 0 {
                let why = format!(
                    "ADD of seq {} past the compacted ledger's {} live entries, before its COMPACTED_END",
                    entry.seq, open.live_entries
                );
                return Err(Error::corrupt(path, at_bytes, why));
            }
            if entry.seq >= open.next_seq {
                let why = format!(
                    "ADD of seq {} in a compacted ledger's snapshot, at or above its next_seq {}",
                    entry.seq, open.next_seq
                );
                return Err(Error::corrupt(path, at_bytes, why));
            }
            open.left -= 1;
        }
        self.ledger.apply_add(entry);
        self.records += 1;
        if let Some(open) = &self.snapshot {
            // A snapshot opens on an empty ledger and holds only ADDs, each
            // of a new seq: the live set is exactly the ADDs seen so far.
            debug_assert_eq!(self.ledger.live().len() as u64, open.live_entries - open.left);
        }
        Ok(())
    }

    /// `DROP`: a registered segment retired; never inside a snapshot.
    fn drop_seq(&mut self, at_bytes: u64, seq: u64) -> Result<()> {
        let path = self.path;
        if self.snapshot.is_some() {
            let why = format!("DROP of seq {seq} inside a compacted ledger's snapshot, which holds only ADDs");
            return Err(Error::corrupt(path, at_bytes, why));
        }
        if let Err(why) = self.ledger.check_drop(seq) {
            return Err(Error::corrupt(path, at_bytes, format!("DROP of seq {seq}: {why}")));
        }
        self.ledger.apply_drop(seq);
        self.records += 1;
        Ok(())
    }

    /// The end of the valid records, at `end_bytes`: refused if a snapshot
    /// is still open there (it was durable whole, so this is damage).
    fn finish(self, end_bytes: u64) -> Result<Replayed> {
        if let Some(snapshot) = self.snapshot {
            let why = format!(
                "the compacted ledger's snapshot (COMPACTED at byte {}) ends after {} of its {} live entries, without its \
                 COMPACTED_END: it was durable before it became the manifest, so this is damage",
                snapshot.at_bytes,
                snapshot.live_entries - snapshot.left,
                snapshot.live_entries
            );
            return Err(Error::corrupt(self.path, end_bytes, why));
        }
        if let Some(next_seq) = self.owed_snapshot() {
            let why = format!(
                "the header says the ledger is compacted (next_seq {next_seq}), yet no valid record follows it: \
                 its snapshot was durable before it became the manifest, so this is damage"
            );
            return Err(Error::corrupt(self.path, end_bytes, why));
        }
        // A compacted header's snapshot was read whole, with its next_seq.
        let promised = self.header.and_then(Header::compacted_next_seq).unwrap_or(0);
        assert!(self.ledger.next_seq() >= promised, "replay forgot the header's next_seq");
        // Compaction weighs `records` against the live set on this.
        assert!(self.records >= self.ledger.live().len() as u64, "every live entry has its ADD among the records");
        Ok(Replayed {
            header: self.header,
            ledger: self.ledger,
            valid_len_bytes: end_bytes,
            records: self.records,
            compacted: self.compacted,
        })
    }
}

/// The frame at `at` is invalid: succeed if that can only be a torn tail.
fn refuse_unless_torn_tail(
    path: &Path,
    bytes: &[u8],
    at: usize,
    invalid: FrameInvalid,
    scan_budget_bytes: usize,
) -> Result<()> {
    match find_valid_frame(bytes, at + 1, scan_budget_bytes, |kind| {
        record::is_known_kind(kind).then_some(Log::Manifest)
    }) {
        Scan::NotFound => Ok(()),
        Scan::Found(next) => Err(Error::corrupt(
            path,
            at as u64,
            format!("{}, yet a valid record follows at byte {next}: damage to durable records", invalid.reason()),
        )),
        Scan::GaveUp => Err(Error::corrupt(
            path,
            at as u64,
            format!(
                "{}, and the bytes after it could not be ruled out as records within the scan budget",
                invalid.reason()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{put_len_prefixed, put_u64};
    use crate::frame::{encode_frame, FRAME_HEADER_BYTES};
    use crate::manifest::testing::{encode_records, entry, APPENDED};
    use crate::manifest::{Manifest, ManifestState};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn path() -> &'static Path {
        Path::new("/db/MANIFEST")
    }

    /// The offset and reason of a `Corrupt`, or a panic naming what came back.
    fn corrupt_at(result: Result<ManifestState>) -> (u64, String) {
        match result {
            Err(Error::Corrupt { file, offset_bytes, reason }) => {
                assert_eq!(file, path());
                (offset_bytes, reason)
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    fn state(entries: &[u64], next_seq: u64, valid_len_bytes: usize, records: u64) -> ManifestState {
        let live: BTreeMap<u64, _> = entries.iter().map(|&seq| (seq, entry(seq))).collect();
        let version = if valid_len_bytes > 0 { record::VERSION } else { 0 };
        ManifestState { live, next_seq, valid_len_bytes: valid_len_bytes as u64, records, compacted: false, version }
    }

    #[test]
    fn empty_bytes_are_an_empty_manifest_without_a_header() {
        assert_eq!(Manifest::parse(path(), b"").unwrap(), state(&[], 1, 0, 0));
    }

    #[test]
    fn a_whole_ledger_replays_to_its_live_set() {
        let recs = [APPENDED, Record::Add(entry(1)), Record::Add(entry(2)), Record::Drop(1)];
        let (bytes, _) = encode_records(&recs);
        assert_eq!(Manifest::parse(path(), &bytes).unwrap(), state(&[2], 3, bytes.len(), 3));
    }

    #[test]
    fn a_torn_header_alone_is_an_empty_manifest() {
        let (bytes, _) = encode_records(&[APPENDED]);
        for cut in 0..bytes.len() {
            assert_eq!(Manifest::parse(path(), &bytes[..cut]).unwrap(), state(&[], 1, 0, 0), "cut at {cut}");
        }
    }

    #[test]
    fn a_zero_filled_tail_is_torn_not_damage() {
        // A crash can leave a file longer than its data, the rest zeros.
        let (mut bytes, ends) = encode_records(&[APPENDED, Record::Add(entry(1))]);
        bytes.resize(bytes.len() + 4096, 0);
        assert_eq!(Manifest::parse(path(), &bytes).unwrap(), state(&[1], 2, ends[1], 1));
    }

    #[test]
    fn damage_before_a_valid_record_is_refused_at_its_offset() {
        let (mut bytes, ends) = encode_records(&[APPENDED, Record::Add(entry(1)), Record::Add(entry(2))]);
        bytes[ends[0] + FRAME_HEADER_BYTES + 3] ^= 0x10;
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!(offset, ends[0] as u64);
        assert!(reason.contains(&format!("valid record follows at byte {}", ends[1])), "{reason}");
    }

    #[test]
    fn a_torn_header_before_valid_records_is_damage() {
        let (mut bytes, _) = encode_records(&[APPENDED, Record::Add(entry(1))]);
        bytes[2] ^= 1;
        assert_eq!(corrupt_at(Manifest::parse(path(), &bytes)).0, 0);
    }

    #[test]
    fn a_scan_that_runs_out_of_budget_refuses() {
        // Every position after the damage holds a small length that fits.
        let (mut bytes, ends) = encode_records(&[APPENDED]);
        bytes.extend_from_slice(&[1u8, 0, 0, 0].repeat(64));
        let err = replay(path(), &bytes, 100).unwrap_err();
        assert!(matches!(err, Error::Corrupt { offset_bytes, .. } if offset_bytes == ends[0] as u64), "{err}");
        let whole = replay(path(), &bytes, SCAN_BUDGET_BYTES).unwrap();
        assert_eq!(whole.valid_len_bytes, ends[0] as u64, "with budget enough it is a torn tail");
    }

    #[test]
    fn the_header_must_come_first_and_only_once() {
        let (bytes, _) = encode_records(&[Record::Add(entry(1))]);
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!((offset, reason.as_str()), (0, "the first record is not the manifest header"));

        let (bytes, ends) = encode_records(&[APPENDED, Record::Add(entry(1)), APPENDED]);
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!((offset, reason.as_str()), (ends[1] as u64, "a second manifest header"));
    }

    #[test]
    fn a_whole_record_misdirected_to_an_earlier_records_place_is_damage_there() {
        let records = [
            APPENDED,
            Record::Add(entry(1)),
            Record::Add(entry(2)),
            Record::Drop(1),
            Record::Drop(2),
            Record::Add(entry(3)),
        ];
        let (mut bytes, ends) = encode_records(&records);
        // DROP 2's bytes written whole over DROP 1's (the same size): valid
        // where they were written, not where they landed.
        let (drop1, drop2) = (ends[2]..ends[3], ends[3]..ends[4]);
        assert_eq!(drop1.len(), drop2.len());
        let moved = bytes[drop2].to_vec();
        bytes[drop1.clone()].copy_from_slice(&moved);
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!(offset, drop1.start as u64);
        assert!(reason.starts_with("frame checksum mismatch, yet a valid record follows"), "{reason}");
    }

    #[test]
    fn a_foreign_magic_is_refused() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place::manifest(0), record::KIND_HEADER, b"SEGSAOF!\x01\0\0\0");
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!((offset, reason.as_str()), (0, "not a manifest: bad magic"));
    }

    #[test]
    fn a_valid_frame_that_does_not_decode_is_damage_even_last() {
        let (mut bytes, ends) = encode_records(&[APPENDED]);
        // An ADD cut short inside a frame whose checksum holds.
        let mut payload = Vec::new();
        put_u64(&mut payload, 1);
        encode_frame(&mut bytes, Place::manifest(0), record::KIND_ADD, &payload);
        let (offset, _) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!(offset, (ends[0] + FRAME_HEADER_BYTES + 8) as u64);

        let (mut bytes, ends) = encode_records(&[APPENDED]);
        encode_frame(&mut bytes, Place::manifest(0), 77, b"");
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!((offset, reason.as_str()), (ends[0] as u64, "unknown manifest record kind"));
    }

    #[test]
    fn ledger_rules_are_checked_on_replay() {
        let reused = [APPENDED, Record::Add(entry(1)), Record::Drop(1), Record::Add(entry(1))];
        let (bytes, ends) = encode_records(&reused);
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!(offset, ends[2] as u64);
        assert!(reason.starts_with("ADD of seq 1: "), "{reason}");

        let (bytes, ends) = encode_records(&[APPENDED, Record::Add(entry(1)), Record::Drop(2)]);
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!((offset, reason.as_str()), (ends[1] as u64, "DROP of seq 2: seq was never registered"));

        let mut escape = entry(3);
        escape.file = "../../etc/passwd".into();
        let (bytes, ends) = encode_records(&[APPENDED, Record::Add(escape)]);
        assert_eq!(corrupt_at(Manifest::parse(path(), &bytes)).0, ends[0] as u64);
    }

    #[test]
    fn an_add_with_a_bad_length_prefix_is_refused() {
        let (mut bytes, ends) = encode_records(&[APPENDED]);
        let mut payload = Vec::new();
        put_u64(&mut payload, 1);
        put_u64(&mut payload, 1);
        payload.extend_from_slice(&u32::MAX.to_le_bytes());
        put_len_prefixed(&mut payload, b"x");
        encode_frame(&mut bytes, Place::manifest(0), record::KIND_ADD, &payload);
        let (offset, reason) = corrupt_at(Manifest::parse(path(), &bytes));
        assert_eq!(offset, (ends[0] + FRAME_HEADER_BYTES + 16) as u64);
        assert_eq!(reason, "length prefix runs past the end");
    }

    /// The property the store's safety rests on, exhaustively for one small
    /// ledger: a single flipped bit is refused at the offset of the record
    /// it hit, except in the last record, where it is cut as a torn tail —
    /// never any third outcome, and never a different live set.
    #[test]
    fn every_single_bit_flip_is_refused_or_cuts_only_the_last_record() {
        let recs = [APPENDED, Record::Add(entry(1)), Record::Add(entry(2)), Record::Drop(1), Record::Add(entry(3))];
        let (bytes, ends) = encode_records(&recs);
        let last_start = ends[ends.len() - 2];
        let all_but_last = state(&[2], 3, last_start, 3);
        let (mut refused, mut cut) = (0, 0);
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let byte = bit / 8;
            let result = Manifest::parse(path(), &flipped);
            if byte >= last_start {
                assert_eq!(result.unwrap(), all_but_last, "flip of bit {bit}");
                cut += 1;
            } else {
                let record_start = ends.iter().copied().filter(|&end| end <= byte).max().unwrap_or(0);
                assert_eq!(corrupt_at(result).0, record_start as u64, "flip of bit {bit}");
                refused += 1;
            }
        }
        assert_eq!(refused + cut, bytes.len() * 8);
        assert!(refused > 0 && cut > 0);
    }

    /// A whole ledger for the fuzz-style properties to mutate.
    fn sample_ledger() -> Vec<u8> {
        let recs = [APPENDED, Record::Add(entry(1)), Record::Add(entry(2)), Record::Drop(2)];
        encode_records(&recs).0
    }

    /// What any `Ok` from parse must satisfy, whatever the input.
    fn check_invariants(bytes: &[u8], parsed: &ManifestState) -> std::result::Result<(), TestCaseError> {
        prop_assert!(parsed.valid_len_bytes <= bytes.len() as u64);
        prop_assert!(parsed.next_seq >= 1);
        for (seq, entry) in &parsed.live {
            prop_assert_eq!(*seq, entry.seq);
            prop_assert!(entry.seq < parsed.next_seq);
            prop_assert!(entry.min_key <= entry.max_key);
        }
        prop_assert!(parsed.live.len() as u64 <= parsed.records);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            if let Ok(parsed) = Manifest::parse(path(), &bytes) {
                check_invariants(&bytes, &parsed)?;
            }
        }

        #[test]
        fn arbitrary_bytes_after_a_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..600)) {
            let (mut bytes, _) = encode_records(&[APPENDED]);
            bytes.extend_from_slice(&tail);
            if let Ok(parsed) = Manifest::parse(path(), &bytes) {
                check_invariants(&bytes, &parsed)?;
            }
        }

        #[test]
        fn overwritten_ledgers_never_panic(
            writes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut bytes = sample_ledger();
            for (at, value) in writes {
                let at = at.index(bytes.len());
                bytes[at] = value;
            }
            bytes.truncate(cut.index(bytes.len() + 1));
            if let Ok(parsed) = Manifest::parse(path(), &bytes) {
                check_invariants(&bytes, &parsed)?;
            }
        }
    }
}
