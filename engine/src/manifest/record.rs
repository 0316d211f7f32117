//! The manifest's five records and their bytes.
//!
//! Each record is the payload of one shared frame (`frame.rs`), told apart
//! by the frame's kind byte. All integers are little-endian; a "bytes"
//! field is a u32 length followed by that many bytes.
//!
//! ```text
//! HEADER    kind 1: magic "SEGSMANI" (8 bytes), version u32 (= 3),
//!                   next_seq u64 (0: never compacted; else the snapshot's)
//! ADD       kind 2: seq u64, records u64, file bytes (UTF-8), table bytes,
//!                   min_key bytes, max_key bytes
//! DROP      kind 3: seq u64
//! COMPACTED kind 4: next_seq u64, live_entries u64
//! COMPACTED_END
//!           kind 5: next_seq u64, live_entries u64 (the same as COMPACTED's)
//! ```
//!
//! A ledger is either *appended* — `HEADER` with `next_seq` 0, then ADDs
//! and DROPs — or *compacted* (`compact.rs`): `HEADER` with the snapshot's
//! `next_seq`, then its *snapshot* — `COMPACTED`, exactly `live_entries`
//! ADDs (one per live segment, in ascending seq, each below `next_seq`),
//! `COMPACTED_END` — then appends as in any ledger. The snapshot stands in
//! for the history it replaced: `next_seq` is one more than the highest
//! seq ever registered, so that no dropped seq is registered again. It is
//! bracketed so that damage anywhere in it can be told from a torn write,
//! and the header says the file is compacted so that damage which destroys
//! the whole snapshot — nothing valid left after the header — cannot pass
//! for the torn first record of a fresh ledger (see `replay.rs`). A
//! header's `next_seq` is never 0 in a compacted ledger: the ledger's own
//! starts at 1.
//!
//! # Versions
//!
//! - **3** (this one): the header says whether the file is compacted, and
//!   with which `next_seq`. Every manifest this build writes — a fresh one,
//!   or a compaction's — is version 3.
//! - **2**: the header is magic and version only (12 bytes of payload, a
//!   21-byte frame); the records are the same. Compaction came within
//!   version 2, so a version-2 file may or may not hold a snapshot, and
//!   its header cannot say which: damage that destroys a version-2
//!   snapshot whole reads as a torn tail, is cut to the header and forgets
//!   `next_seq`. This build still reads version 2 by exactly its old rules
//!   ([`Header::V2`]), appends to it as it stands (its records are
//!   version 3's), and the first compaction rewrites it as version 3.
//! - **1**: frame checksums without the record's place; refused with
//!   [`crate::Error::OldFormat`] ([`older_version`]).
//! - Any other version in a valid header frame (a newer segsim's) is
//!   refused with [`crate::Error::UnknownFormat`] ([`unknown_version`]).
//!
//! Since version 2 each frame's checksum covers its offset in the manifest
//! (`frame.rs`), so an ADD or DROP a misdirected write put elsewhere is
//! damage, not history; the header's covers byte 0, where it stands.
//!
//! This module only turns records into bytes and back. Whether a record
//! is allowed where it stands (a header first, a seq never reused) is the
//! ledger's business (`ledger.rs`), and what an undecodable frame means for
//! the file is replay's (`replay.rs`). Decoding reads through
//! [`ByteReader`], so a payload that lies about a length fails with the
//! absolute offset of the lie instead of panicking or allocating from it.

use crate::codec::{put_len_prefixed, put_u32, put_u64, ByteReader, DecodeError};
use crate::frame::{decode_unbound_frame, encode_frame, Place, FRAME_HEADER_BYTES};

use super::SegEntry;

/// Frame kind of the header, the first frame of every manifest.
pub(super) const KIND_HEADER: u8 = 1;
/// Frame kind of an ADD: a segment is registered.
pub(super) const KIND_ADD: u8 = 2;
/// Frame kind of a DROP: a registered segment is retired.
pub(super) const KIND_DROP: u8 = 3;
/// Frame kind of COMPACTED: the ledger was rewritten as its live set, whose
/// ADDs follow.
pub(super) const KIND_COMPACTED: u8 = 4;
/// Frame kind of COMPACTED_END: the compacted live set is whole.
pub(super) const KIND_COMPACTED_END: u8 = 5;

/// Says "this file is a segsim manifest", so that another file renamed
/// over it (an AOF, a segment) is refused rather than misread.
const MAGIC: [u8; 8] = *b"SEGSMANI";

/// The format version this code writes (see the module doc for the
/// others).
pub(super) const VERSION: u32 = 3;

/// The older version this code still reads, by its own rules: a header
/// that says nothing of compaction.
pub(super) const VERSION_2: u32 = 2;

/// A version-3 header's whole payload: magic, version, `next_seq`.
const HEADER_PAYLOAD_BYTES: usize = MAGIC.len() + 4 + 8;

/// A version-2 header's whole payload: magic, version (version 1's was
/// the same length).
const V2_HEADER_PAYLOAD_BYTES: usize = MAGIC.len() + 4;

/// The bytes of an ADD payload besides its four variable fields: two u64s
/// and four u32 length prefixes.
const ADD_FIXED_BYTES: usize = 8 + 8 + 4 * 4;

/// The bytes a whole version-3 header frame takes: where the first ADD or
/// DROP starts (or, in a compacted ledger, its `COMPACTED` record).
pub(super) const HEADER_FRAME_BYTES: u64 = (FRAME_HEADER_BYTES + HEADER_PAYLOAD_BYTES) as u64;

/// The bytes a whole version-2 header frame takes.
pub(super) const V2_HEADER_FRAME_BYTES: u64 = (FRAME_HEADER_BYTES + V2_HEADER_PAYLOAD_BYTES) as u64;

/// What a manifest's header says of the ledger after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Header {
    /// Version 2: nothing about compaction. A snapshot may follow or not,
    /// by version 2's rules (see the module doc for what they cannot tell).
    V2,
    /// Version 3, `next_seq` 0: an appended ledger, never compacted. No
    /// snapshot may follow.
    Appended,
    /// Version 3: a compacted ledger, whose whole snapshot, recording this
    /// `next_seq` (never 0), must follow the header.
    Compacted { next_seq: u64 },
}

impl Header {
    /// The format version it is written in.
    pub(super) fn version(self) -> u32 {
        match self {
            Header::V2 => VERSION_2,
            Header::Appended | Header::Compacted { .. } => VERSION,
        }
    }

    /// The bytes its whole frame takes: where the record after it starts.
    pub(super) fn frame_bytes(self) -> u64 {
        match self {
            Header::V2 => V2_HEADER_FRAME_BYTES,
            Header::Appended | Header::Compacted { .. } => HEADER_FRAME_BYTES,
        }
    }

    /// The `next_seq` of the snapshot it says follows, if it says one does.
    pub(super) fn compacted_next_seq(self) -> Option<u64> {
        match self {
            Header::Compacted { next_seq } => Some(next_seq),
            Header::V2 | Header::Appended => None,
        }
    }
}

/// The whole payload of a COMPACTED or COMPACTED_END record: two u64s.
const COMPACTED_PAYLOAD_BYTES: usize = 8 + 8;

/// One decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Record {
    /// The header, magic and version already checked.
    Header(Header),
    /// A segment registered.
    Add(SegEntry),
    /// The segment with this seq retired.
    Drop(u64),
    /// The start of a compacted ledger's snapshot: the next
    /// `live_entries` records are the live set's ADDs, and no seq below
    /// `next_seq` may be ADDed after them.
    Compacted { next_seq: u64, live_entries: u64 },
    /// The end of the snapshot, repeating its start.
    CompactedEnd { next_seq: u64, live_entries: u64 },
}

/// Whether `kind` names one of the manifest's records. Replay only lets a
/// valid frame of a known kind prove that an invalid frame before it is
/// mid-file damage rather than a torn tail.
pub(super) fn is_known_kind(kind: u8) -> bool {
    matches!(kind, KIND_HEADER | KIND_ADD | KIND_DROP | KIND_COMPACTED | KIND_COMPACTED_END)
}

/// Append `header`'s frame to `out`, which starts at byte 0 of the file
/// (a header is the first frame; tests put one elsewhere as damage). The
/// engine writes only version 3; [`Header::V2`] is for the tests' older
/// files.
pub(super) fn encode_header(out: &mut Vec<u8>, header: Header) {
    let start = out.len();
    let mut payload = Vec::with_capacity(HEADER_PAYLOAD_BYTES);
    payload.extend_from_slice(&MAGIC);
    put_u32(&mut payload, header.version());
    match header {
        Header::V2 => {}
        Header::Appended => put_u64(&mut payload, 0),
        Header::Compacted { next_seq } => {
            // 0 says "never compacted": a compacted ledger's is at least 1.
            assert!(next_seq > 0, "a compacted header with next_seq 0");
            put_u64(&mut payload, next_seq);
        }
    }
    encode_frame(out, Place::manifest(0), KIND_HEADER, &payload);
    // Where the record after it starts: replay's `Header::frame_bytes`.
    debug_assert_eq!((out.len() - start) as u64, header.frame_bytes());
}

/// The version of an older manifest's header at the start of `bytes`, if
/// it is one: a header frame whose checksum covers no place (version 1),
/// with the manifest magic and a version from before checksums covered
/// the place. Every frame of such a file fails this build's checksum;
/// without this check it would be refused as damage rather than by its
/// version.
pub(super) fn older_version(bytes: &[u8]) -> Option<u32> {
    let frame = decode_unbound_frame(bytes).ok()?;
    let payload = frame.payload;
    if frame.kind != KIND_HEADER || payload.len() != V2_HEADER_PAYLOAD_BYTES || payload[..MAGIC.len()] != MAGIC {
        return None;
    }
    let version = u32::from_le_bytes(payload[MAGIC.len()..].try_into().expect("4 bytes"));
    (version < VERSION_2).then_some(version)
}

/// The version a valid header frame (`kind`, `payload`) names, if it is
/// the manifest's magic with a version this build does not read (neither
/// 2 nor 3: a newer segsim's, most likely). Its checksum held, so this is
/// what was written, not damage: refused by its version.
pub(super) fn unknown_version(kind: u8, payload: &[u8]) -> Option<u32> {
    if kind != KIND_HEADER || payload.len() < V2_HEADER_PAYLOAD_BYTES || payload[..MAGIC.len()] != MAGIC {
        return None;
    }
    let version_bytes = payload[MAGIC.len()..V2_HEADER_PAYLOAD_BYTES].try_into().expect("4 bytes");
    let version = u32::from_le_bytes(version_bytes);
    (version != VERSION && version != VERSION_2).then_some(version)
}

/// The payload bytes an ADD of `entry` needs. Saturating, so that a caller
/// can compare it against the frame limit before anything is encoded.
pub(super) fn add_payload_bytes(entry: &SegEntry) -> usize {
    ADD_FIXED_BYTES
        .saturating_add(entry.file.len())
        .saturating_add(entry.table.len())
        .saturating_add(entry.min_key.len())
        .saturating_add(entry.max_key.len())
}

/// Append an ADD frame for `entry` to `out`, whose first byte lies at
/// `out_at` of the manifest. The caller has checked [`add_payload_bytes`]
/// against the frame limit.
pub(super) fn encode_add(out: &mut Vec<u8>, out_at: u64, entry: &SegEntry) {
    let mut payload = Vec::with_capacity(add_payload_bytes(entry));
    put_u64(&mut payload, entry.seq);
    put_u64(&mut payload, entry.records);
    put_len_prefixed(&mut payload, entry.file.as_bytes());
    put_len_prefixed(&mut payload, &entry.table);
    put_len_prefixed(&mut payload, &entry.min_key);
    put_len_prefixed(&mut payload, &entry.max_key);
    assert_eq!(payload.len(), add_payload_bytes(entry));
    encode_frame(out, Place::manifest(out_at), KIND_ADD, &payload);
}

/// Append a DROP frame for `seq` to `out`, whose first byte lies at
/// `out_at` of the manifest.
pub(super) fn encode_drop(out: &mut Vec<u8>, out_at: u64, seq: u64) {
    let mut payload = Vec::with_capacity(8);
    put_u64(&mut payload, seq);
    encode_frame(out, Place::manifest(out_at), KIND_DROP, &payload);
}

/// Append a COMPACTED frame to `out`, which starts at byte 0 of the file.
pub(super) fn encode_compacted(out: &mut Vec<u8>, next_seq: u64, live_entries: u64) {
    encode_counts(out, KIND_COMPACTED, next_seq, live_entries);
}

/// Append a COMPACTED_END frame to `out`, which starts at byte 0 of the file.
pub(super) fn encode_compacted_end(out: &mut Vec<u8>, next_seq: u64, live_entries: u64) {
    encode_counts(out, KIND_COMPACTED_END, next_seq, live_entries);
}

/// A snapshot's frames are only ever encoded into the compacted file's
/// whole image, which starts at byte 0.
fn encode_counts(out: &mut Vec<u8>, kind: u8, next_seq: u64, live_entries: u64) {
    let mut payload = Vec::with_capacity(COMPACTED_PAYLOAD_BYTES);
    put_u64(&mut payload, next_seq);
    put_u64(&mut payload, live_entries);
    assert_eq!(payload.len(), COMPACTED_PAYLOAD_BYTES);
    encode_frame(out, Place::manifest(0), kind, &payload);
}

/// Decode the payload of a checksummed frame of `kind` that starts at
/// `frame_offset_bytes` in its file. The frame's checksum held, so every
/// failure here is damage (or a foreign file), never a torn write.
pub(super) fn decode(kind: u8, payload: &[u8], frame_offset_bytes: u64) -> Result<Record, DecodeError> {
    let mut reader = ByteReader::new(payload, frame_offset_bytes + FRAME_HEADER_BYTES as u64);
    let record = match kind {
        KIND_HEADER => Record::Header(decode_header(&mut reader, frame_offset_bytes)?),
        KIND_ADD => {
            let seq = reader.u64()?;
            let records = reader.u64()?;
            let file_at = reader.clone();
            let file = match std::str::from_utf8(reader.len_prefixed()?) {
                Ok(file) => file.to_owned(),
                Err(_) => return Err(file_at.error("segment file name is not UTF-8")),
            };
            let table = reader.len_prefixed()?.to_vec();
            let min_key = reader.len_prefixed()?.to_vec();
            let max_key = reader.len_prefixed()?.to_vec();
            Record::Add(SegEntry { seq, file, table, min_key, max_key, records })
        }
        KIND_DROP => Record::Drop(reader.u64()?),
        // The two counts are taken as they are: whether they fit the
        // ledger (and where the record stands) is replay's business, and
        // neither is ever used as an allocation size.
        KIND_COMPACTED => Record::Compacted { next_seq: reader.u64()?, live_entries: reader.u64()? },
        KIND_COMPACTED_END => Record::CompactedEnd { next_seq: reader.u64()?, live_entries: reader.u64()? },
        _ => return Err(DecodeError { offset_bytes: frame_offset_bytes, reason: "unknown manifest record kind" }),
    };
    reader.finish()?;
    Ok(record)
}

/// The header's payload, after its frame (at `frame_offset_bytes`).
fn decode_header(reader: &mut ByteReader<'_>, frame_offset_bytes: u64) -> Result<Header, DecodeError> {
    if reader.bytes(MAGIC.len())? != MAGIC {
        return Err(DecodeError { offset_bytes: frame_offset_bytes, reason: "not a manifest: bad magic" });
    }
    let version_at = reader.clone();
    match reader.u32()? {
        VERSION_2 => Ok(Header::V2),
        VERSION => match reader.u64()? {
            0 => Ok(Header::Appended),
            next_seq => Ok(Header::Compacted { next_seq }),
        },
        _ => Err(version_at.error("unsupported manifest format version")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::decode_frame;
    use proptest::prelude::*;

    /// Decode the single frame in `bytes`, which starts at `offset_bytes`.
    fn decode_one(bytes: &[u8], offset_bytes: u64) -> Result<Record, DecodeError> {
        let frame = decode_frame(bytes, Place::manifest(0)).expect("test frames are whole");
        assert_eq!(frame.total_bytes, bytes.len());
        decode(frame.kind, frame.payload, offset_bytes)
    }

    fn entry() -> SegEntry {
        SegEntry {
            seq: 7,
            file: "row-7573-7.seg".into(),
            table: b"us".to_vec(),
            min_key: b"us:a".to_vec(),
            max_key: b"us:z".to_vec(),
            records: 12,
        }
    }

    #[test]
    fn each_header_has_the_advertised_size_and_round_trips() {
        let headers = [
            (Header::V2, V2_HEADER_FRAME_BYTES, 2),
            (Header::Appended, HEADER_FRAME_BYTES, 3),
            (Header::Compacted { next_seq: 1 }, HEADER_FRAME_BYTES, 3),
            (Header::Compacted { next_seq: u64::MAX }, HEADER_FRAME_BYTES, 3),
        ];
        for (header, frame_bytes, version) in headers {
            let mut out = Vec::new();
            encode_header(&mut out, header);
            assert_eq!((out.len() as u64, header.frame_bytes(), header.version()), (frame_bytes, frame_bytes, version));
            assert_eq!(decode_one(&out, 0), Ok(Record::Header(header)));
            assert_eq!(unknown_version(KIND_HEADER, &out[FRAME_HEADER_BYTES..]), None);
            assert_eq!(older_version(&out), None, "a place-bound header is no older version's");
        }
        assert_eq!(HEADER_FRAME_BYTES, 29);
        assert_eq!(V2_HEADER_FRAME_BYTES, 21, "version 2's header, as older segsims wrote it");
        assert_eq!(Header::Compacted { next_seq: 9 }.compacted_next_seq(), Some(9));
        assert_eq!((Header::V2.compacted_next_seq(), Header::Appended.compacted_next_seq()), (None, None));
    }

    /// A version-2 header's bytes, exactly as an older segsim wrote them:
    /// magic and version, bound to byte 0 of the manifest.
    #[test]
    fn a_version_2_header_is_the_older_format_byte_for_byte() {
        let mut payload = MAGIC.to_vec();
        put_u32(&mut payload, 2);
        let mut by_hand = Vec::new();
        encode_frame(&mut by_hand, Place::manifest(0), KIND_HEADER, &payload);
        let mut out = Vec::new();
        encode_header(&mut out, Header::V2);
        assert_eq!(out, by_hand);
    }

    #[test]
    fn a_header_of_the_wrong_length_for_its_version_is_refused() {
        // Version 3 without its next_seq, version 2 with one.
        let mut short = MAGIC.to_vec();
        put_u32(&mut short, VERSION);
        let err = decode(KIND_HEADER, &short, 0).unwrap_err();
        assert_eq!(err.reason, "length runs past the end of the data");
        let mut long = MAGIC.to_vec();
        put_u32(&mut long, VERSION_2);
        put_u64(&mut long, 5);
        let err = decode(KIND_HEADER, &long, 0).unwrap_err();
        assert_eq!(err.reason, "trailing bytes after the record");
    }

    #[test]
    fn an_unknown_version_is_named() {
        for version in [0, 1, 4, u32::MAX] {
            let mut payload = MAGIC.to_vec();
            put_u32(&mut payload, version);
            put_u64(&mut payload, 0);
            assert_eq!(unknown_version(KIND_HEADER, &payload), Some(version), "version {version}");
            assert_eq!(unknown_version(KIND_HEADER, &payload[..V2_HEADER_PAYLOAD_BYTES]), Some(version));
            assert_eq!(unknown_version(KIND_ADD, &payload), None, "only a header names a version");
            assert!(decode(KIND_HEADER, &payload, 0).is_err());
        }
        let mut foreign = b"SEGSAOF!".to_vec();
        put_u32(&mut foreign, 9);
        assert_eq!(unknown_version(KIND_HEADER, &foreign), None, "not the manifest's magic");
        assert_eq!(unknown_version(KIND_HEADER, &MAGIC), None, "too short to name a version");
    }

    #[test]
    fn a_foreign_magic_or_version_is_refused_where_it_lies() {
        let mut payload = b"SEGSAOF!".to_vec();
        put_u32(&mut payload, VERSION);
        put_u64(&mut payload, 0);
        let err = decode(KIND_HEADER, &payload, 100).unwrap_err();
        assert_eq!(err, DecodeError { offset_bytes: 100, reason: "not a manifest: bad magic" });

        let mut payload = MAGIC.to_vec();
        put_u32(&mut payload, VERSION + 1);
        let err = decode(KIND_HEADER, &payload, 100).unwrap_err();
        assert_eq!(err.offset_bytes, 100 + FRAME_HEADER_BYTES as u64 + MAGIC.len() as u64);
        assert_eq!(err.reason, "unsupported manifest format version");
    }

    #[test]
    fn an_unknown_kind_is_refused_at_its_frame() {
        let err = decode(9, b"", 40).unwrap_err();
        assert_eq!(err, DecodeError { offset_bytes: 40, reason: "unknown manifest record kind" });
        assert!(!is_known_kind(9));
        assert!(is_known_kind(KIND_HEADER) && is_known_kind(KIND_ADD) && is_known_kind(KIND_DROP));
        assert!(is_known_kind(KIND_COMPACTED) && is_known_kind(KIND_COMPACTED_END));
        assert!(!is_known_kind(KIND_COMPACTED_END + 1));
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut payload = Vec::new();
        put_u64(&mut payload, 3);
        payload.push(0);
        let err = decode(KIND_DROP, &payload, 0).unwrap_err();
        assert_eq!(err.reason, "trailing bytes after the record");
        assert_eq!(err.offset_bytes, FRAME_HEADER_BYTES as u64 + 8);
    }

    #[test]
    fn a_file_name_that_is_not_utf8_is_refused() {
        let mut payload = Vec::new();
        put_u64(&mut payload, 1);
        put_u64(&mut payload, 1);
        put_len_prefixed(&mut payload, &[0xff, 0xfe]);
        for _ in 0..3 {
            put_len_prefixed(&mut payload, b"");
        }
        let err = decode(KIND_ADD, &payload, 0).unwrap_err();
        assert_eq!(err.reason, "segment file name is not UTF-8");
        assert_eq!(err.offset_bytes, FRAME_HEADER_BYTES as u64 + 16);
    }

    #[test]
    fn every_cut_of_an_add_payload_is_refused() {
        let mut out = Vec::new();
        encode_add(&mut out, 0, &entry());
        let payload = &out[FRAME_HEADER_BYTES..];
        for cut in 0..payload.len() {
            assert!(decode(KIND_ADD, &payload[..cut], 0).is_err(), "cut at {cut} decoded");
        }
        assert_eq!(decode(KIND_ADD, payload, 0), Ok(Record::Add(entry())));
    }

    #[test]
    fn every_cut_of_a_compacted_payload_is_refused_and_trailing_bytes_too() {
        for (kind, record) in [
            (KIND_COMPACTED, Record::Compacted { next_seq: 9, live_entries: 3 }),
            (KIND_COMPACTED_END, Record::CompactedEnd { next_seq: 9, live_entries: 3 }),
        ] {
            let mut out = Vec::new();
            encode_counts(&mut out, kind, 9, 3);
            assert_eq!(out.len(), FRAME_HEADER_BYTES + COMPACTED_PAYLOAD_BYTES);
            let payload = &out[FRAME_HEADER_BYTES..];
            for cut in 0..payload.len() {
                let err = decode(kind, &payload[..cut], 0).unwrap_err();
                assert_eq!(err.reason, "length runs past the end of the data", "cut at {cut}");
            }
            assert_eq!(decode(kind, payload, 0), Ok(record));
            let mut longer = payload.to_vec();
            longer.push(7);
            let err = decode(kind, &longer, 0).unwrap_err();
            assert_eq!(err.reason, "trailing bytes after the record");
            assert_eq!(err.offset_bytes, (FRAME_HEADER_BYTES + COMPACTED_PAYLOAD_BYTES) as u64);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn a_version_3_header_round_trips(next_seq in any::<u64>()) {
            let header = if next_seq == 0 { Header::Appended } else { Header::Compacted { next_seq } };
            let mut out = Vec::new();
            encode_header(&mut out, header);
            prop_assert_eq!(out.len() as u64, HEADER_FRAME_BYTES);
            prop_assert_eq!(&out[out.len() - 8..], &next_seq.to_le_bytes()[..]);
            prop_assert_eq!(decode_one(&out, 0), Ok(Record::Header(header)));
        }

        #[test]
        fn compacted_and_its_end_round_trip(next_seq in any::<u64>(), live_entries in any::<u64>()) {
            let mut out = Vec::new();
            encode_compacted(&mut out, next_seq, live_entries);
            prop_assert_eq!(out.len(), FRAME_HEADER_BYTES + COMPACTED_PAYLOAD_BYTES);
            prop_assert_eq!(decode_one(&out, 0), Ok(Record::Compacted { next_seq, live_entries }));

            let mut out = Vec::new();
            encode_compacted_end(&mut out, next_seq, live_entries);
            prop_assert_eq!(out.len(), FRAME_HEADER_BYTES + COMPACTED_PAYLOAD_BYTES);
            prop_assert_eq!(decode_one(&out, 0), Ok(Record::CompactedEnd { next_seq, live_entries }));
        }

        /// Any bytes as a COMPACTED or COMPACTED_END payload: decoded
        /// exactly when they are sixteen, refused otherwise at an offset
        /// inside the frame — and a count as large as u64 allows allocates
        /// nothing.
        #[test]
        fn arbitrary_compacted_payloads_never_panic(
            end in any::<bool>(),
            payload in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let kind = if end { KIND_COMPACTED_END } else { KIND_COMPACTED };
            match decode(kind, &payload, 500) {
                Ok(Record::Compacted { next_seq, live_entries } | Record::CompactedEnd { next_seq, live_entries }) => {
                    prop_assert_eq!(payload.len(), COMPACTED_PAYLOAD_BYTES);
                    prop_assert_eq!(&next_seq.to_le_bytes()[..], &payload[..8]);
                    prop_assert_eq!(&live_entries.to_le_bytes()[..], &payload[8..]);
                }
                Ok(other) => prop_assert!(false, "a COMPACTED payload decoded as {other:?}"),
                Err(err) => {
                    prop_assert_ne!(payload.len(), COMPACTED_PAYLOAD_BYTES);
                    prop_assert!(err.offset_bytes >= 500);
                    prop_assert!(err.offset_bytes <= 500 + (FRAME_HEADER_BYTES + payload.len()) as u64);
                }
            }
        }

        #[test]
        fn add_and_drop_round_trip(
            seq in any::<u64>(),
            records in any::<u64>(),
            file in "[a-z0-9.-]{0,40}",
            table in proptest::collection::vec(any::<u8>(), 0..40),
            min_key in proptest::collection::vec(any::<u8>(), 0..80),
            max_key in proptest::collection::vec(any::<u8>(), 0..80),
        ) {
            let entry = SegEntry { seq, file, table, min_key, max_key, records };
            let mut out = Vec::new();
            encode_add(&mut out, 0, &entry);
            prop_assert_eq!(out.len(), FRAME_HEADER_BYTES + add_payload_bytes(&entry));
            prop_assert_eq!(decode_one(&out, 0), Ok(Record::Add(entry)));

            let mut out = Vec::new();
            encode_drop(&mut out, 0, seq);
            prop_assert_eq!(decode_one(&out, 0), Ok(Record::Drop(seq)));
        }

        #[test]
        fn arbitrary_payloads_never_panic(kind in 0u8..7, payload in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Err(err) = decode(kind, &payload, 1000) {
                prop_assert!(err.offset_bytes >= 1000);
                prop_assert!(err.offset_bytes <= 1000 + (FRAME_HEADER_BYTES + payload.len()) as u64);
            }
        }
    }
}
