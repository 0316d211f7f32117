//! [`Record`]: what one AOF frame says, and the codec of its payload;
//! [`RecordRef`]: the same, read in place from the log's bytes.
//!
//! Encoding is infallible for any record within the frame limit, and a
//! command can be encoded from borrowed arguments
//! ([`encode_command_payload`]) so the live path never builds a `Record`.
//! Decoding reads untrusted bytes through [`ByteReader`], so every count
//! and length is checked against the bytes actually present before
//! anything is sliced or allocated, and every failure names its absolute
//! offset. It yields a `RecordRef` borrowing the payload: replay copies
//! only what it keeps.

use super::{KIND_COMMAND, KIND_HEADER, KIND_SEGMENTED, KIND_STUB, KIND_WINDOW_MARK};
use crate::codec::{put_len_prefixed, put_u32, put_u64, ByteReader, DecodeError};
use crate::frame::MAX_FRAME_PAYLOAD_BYTES;

/// One entry of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// A write command with binary-safe arguments (`["SET", "k", "v"]`);
    /// replay runs it again.
    Command(Vec<Vec<u8>>),
    /// Segment `seq`, stored in `file`, is sealed and registered: its rows
    /// are now cold (replay demotes each of its keys to a stub, or inserts
    /// the stub if the key is absent).
    Segmented {
        /// The segment's stable sequence number.
        seq: u64,
        /// The segment's file name in the store's directory.
        file: String,
    },
    /// One cold row, written by a rewrite so the new log names the row
    /// without carrying its data.
    Stub {
        /// The row's key.
        key: Vec<u8>,
        /// The segment that holds the row.
        seq: u64,
        /// The row's value weight, for memory accounting.
        weight: u64,
    },
    /// The high-water mark of a windowed table's column, written by a
    /// rewrite after the table's `WINDOW`: the rows that raised it may be
    /// gone or overwritten, and eviction decisions must not change because
    /// the log was rewritten.
    WindowMark {
        /// The table.
        table: Vec<u8>,
        /// The highest window-column value seen.
        max_seen: i64,
    },
}

impl Record {
    /// The frame kind this record is written as.
    pub(super) fn kind(&self) -> u8 {
        match self {
            Record::Command(_) => KIND_COMMAND,
            Record::Segmented { .. } => KIND_SEGMENTED,
            Record::Stub { .. } => KIND_STUB,
            Record::WindowMark { .. } => KIND_WINDOW_MARK,
        }
    }

    /// The payload's size, computed without encoding it, so a writer can
    /// refuse an oversized record before building anything.
    pub(super) fn payload_len_bytes(&self) -> u64 {
        let len_prefixed = |bytes: &[u8]| 4 + bytes.len() as u64;
        match self {
            Record::Command(args) => command_payload_len_bytes(args),
            Record::Segmented { file, .. } => 8 + len_prefixed(file.as_bytes()),
            Record::Stub { key, .. } => len_prefixed(key) + 8 + 8,
            Record::WindowMark { table, .. } => len_prefixed(table) + 8,
        }
    }

    /// Whether the record fits in one frame.
    pub(super) fn fits_in_frame(&self) -> bool {
        self.payload_len_bytes() <= MAX_FRAME_PAYLOAD_BYTES as u64
    }

    /// Append the payload (no frame header) to `out`. The record must fit
    /// in a frame, which also bounds every count and length below u32.
    pub(super) fn encode_payload(&self, out: &mut Vec<u8>) {
        assert!(self.fits_in_frame(), "AOF record over the frame payload limit");
        let start = out.len();
        match self {
            Record::Command(args) => encode_command_payload(args, out),
            Record::Segmented { seq, file } => {
                put_u64(out, *seq);
                put_len_prefixed(out, file.as_bytes());
            }
            Record::Stub { key, seq, weight } => {
                put_len_prefixed(out, key);
                put_u64(out, *seq);
                put_u64(out, *weight);
            }
            Record::WindowMark { table, max_seen } => {
                put_len_prefixed(out, table);
                put_u64(out, *max_seen as u64);
            }
        }
        assert_eq!((out.len() - start) as u64, self.payload_len_bytes());
    }

    /// Append this record as one whole frame to `out`, whose first byte
    /// lies at `out_at` (the frame's checksum binds it to its place).
    ///
    /// Panics if the payload exceeds the frame limit (64 MiB);
    /// [`super::AofWriter`] refuses such records with
    /// [`crate::Error::Invalid`] before encoding.
    #[cfg(test)]
    pub fn encode_frame(&self, out: &mut Vec<u8>, out_at: crate::frame::Place) {
        let mut payload = Vec::with_capacity(self.payload_len_bytes() as usize);
        self.encode_payload(&mut payload);
        crate::frame::encode_frame(out, out_at, self.kind(), &payload);
    }

    /// Decode the payload of a frame of `kind` into an owned record (see
    /// [`RecordRef::decode`], which this wraps).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn decode(kind: u8, payload: &[u8], payload_offset_bytes: u64) -> Result<Record, DecodeError> {
        RecordRef::decode(kind, payload, payload_offset_bytes).map(|record| record.to_record())
    }
}

/// The size of a COMMAND payload of `args`, computed without encoding it.
pub(super) fn command_payload_len_bytes<A: AsRef<[u8]>>(args: &[A]) -> u64 {
    4 + args.iter().map(|arg| 4 + arg.as_ref().len() as u64).sum::<u64>()
}

/// Append a COMMAND payload of `args` to `out`: what [`Record::Command`]
/// encodes, from arguments the caller may only borrow. The payload must
/// fit in a frame, which bounds every count and length below u32.
pub(super) fn encode_command_payload<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    put_u32(out, u32::try_from(args.len()).expect("argument count within a frame"));
    for arg in args {
        put_len_prefixed(out, arg.as_ref());
    }
}

/// A record read in place: what a [`Record`] says, borrowed from the log's
/// bytes. Replay walks a whole log through these, so reading a frame costs
/// no allocation; only what replay keeps is ever copied, once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordRef<'a> {
    /// See [`Record::Command`].
    Command(Args<'a>),
    /// See [`Record::Segmented`].
    Segmented {
        /// The segment's stable sequence number.
        seq: u64,
        /// The segment's file name in the store's directory.
        file: &'a str,
    },
    /// See [`Record::Stub`].
    Stub {
        /// The row's key.
        key: &'a [u8],
        /// The segment that holds the row.
        seq: u64,
        /// The row's value weight.
        weight: u64,
    },
    /// See [`Record::WindowMark`].
    WindowMark {
        /// The table.
        table: &'a [u8],
        /// The highest window-column value seen.
        max_seen: i64,
    },
}

impl<'a> RecordRef<'a> {
    /// Decode the payload of a frame of `kind`, which starts at
    /// `payload_offset_bytes` in its file (errors carry absolute offsets).
    /// The header kind is refused here: a header is valid only as the
    /// first frame, which the log scan checks on its own.
    pub fn decode(kind: u8, payload: &'a [u8], payload_offset_bytes: u64) -> Result<RecordRef<'a>, DecodeError> {
        let mut reader = ByteReader::new(payload, payload_offset_bytes);
        let record = match kind {
            KIND_COMMAND => RecordRef::Command(decode_args(&mut reader)?),
            KIND_SEGMENTED => {
                let seq = reader.u64()?;
                let file_at = reader.offset_bytes();
                let file = std::str::from_utf8(reader.len_prefixed()?)
                    .map_err(|_| DecodeError { offset_bytes: file_at, reason: "segment file name is not UTF-8" })?;
                RecordRef::Segmented { seq, file }
            }
            KIND_STUB => {
                let key = reader.len_prefixed()?;
                let seq = reader.u64()?;
                let weight = reader.u64()?;
                RecordRef::Stub { key, seq, weight }
            }
            KIND_WINDOW_MARK => {
                let table = reader.len_prefixed()?;
                let max_seen = reader.u64()? as i64;
                RecordRef::WindowMark { table, max_seen }
            }
            _ => {
                // The kind byte sits just before the payload.
                let reason =
                    if kind == KIND_HEADER { "header frame after the start of the log" } else { "unknown frame kind" };
                return Err(DecodeError { offset_bytes: payload_offset_bytes.saturating_sub(1), reason });
            }
        };
        reader.finish()?;
        Ok(record)
    }

    /// The owned record.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn to_record(self) -> Record {
        match self {
            RecordRef::Command(args) => Record::Command(args.iter().map(<[u8]>::to_vec).collect()),
            RecordRef::Segmented { seq, file } => Record::Segmented { seq, file: file.to_owned() },
            RecordRef::Stub { key, seq, weight } => Record::Stub { key: key.to_vec(), seq, weight },
            RecordRef::WindowMark { table, max_seen } => Record::WindowMark { table: table.to_vec(), max_seen },
        }
    }
}

/// A command's arguments inside a log frame: `count` length-prefixed runs
/// that fill `bytes` exactly. Only [`RecordRef::decode`] builds one, after
/// checking every length against the bytes present, so iterating needs no
/// further checks and cannot fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Args<'a> {
    count: usize,
    bytes: &'a [u8],
}

impl<'a> Args<'a> {
    /// The arguments in order (the command name first), borrowed from the log.
    pub fn iter(&self) -> ArgsIter<'a> {
        ArgsIter { left: self.count, bytes: self.bytes }
    }
}

/// Iterator over [`Args`].
#[derive(Clone, Debug)]
pub struct ArgsIter<'a> {
    left: usize,
    bytes: &'a [u8],
}

impl<'a> Iterator for ArgsIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            assert!(self.bytes.is_empty(), "arguments end where their count says");
            return None;
        }
        self.left -= 1;
        // Checked by `decode_args`: every prefix and run is in bounds.
        let (prefix, rest) = self.bytes.split_at(4);
        let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        let (arg, rest) = rest.split_at(len);
        self.bytes = rest;
        Some(arg)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for ArgsIter<'_> {}

fn decode_args<'a>(reader: &mut ByteReader<'a>) -> Result<Args<'a>, DecodeError> {
    let argc_at = reader.offset_bytes();
    let argc = reader.u32()? as usize;
    // Every argument costs at least its 4-byte length prefix, so a count
    // the remaining bytes cannot hold is refused before anything else.
    if argc > reader.remaining() / 4 {
        return Err(DecodeError { offset_bytes: argc_at, reason: "argument count exceeds the payload" });
    }
    let mut start = reader.clone();
    for _ in 0..argc {
        reader.len_prefixed()?;
    }
    let args_len_bytes = start.remaining() - reader.remaining();
    let bytes = start.bytes(args_len_bytes).expect("the arguments were just read from these bytes");
    Ok(Args { count: argc, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::testing::arb_record;
    use crate::frame::{decode_frame, FRAME_HEADER_BYTES};
    use proptest::prelude::*;

    fn payload_of(record: &Record) -> Vec<u8> {
        let mut payload = Vec::new();
        record.encode_payload(&mut payload);
        payload
    }

    #[test]
    fn argument_count_beyond_the_payload_is_refused_before_allocating() {
        // Unchecked, this count would ask for ~100 GB of Vec headers.
        let mut payload = Vec::new();
        put_u32(&mut payload, u32::MAX);
        put_u32(&mut payload, 0);
        let err = Record::decode(KIND_COMMAND, &payload, 500).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (500, "argument count exceeds the payload"));
    }

    #[test]
    fn argument_length_beyond_the_payload_is_refused() {
        let mut payload = Vec::new();
        put_u32(&mut payload, 1);
        put_u32(&mut payload, u32::MAX);
        let err = Record::decode(KIND_COMMAND, &payload, 100).unwrap_err();
        assert_eq!(err.offset_bytes, 104);
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let record = Record::Stub { key: b"k".to_vec(), seq: 1, weight: 2 };
        let mut payload = payload_of(&record);
        payload.push(0);
        let err = Record::decode(KIND_STUB, &payload, 10).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (10 + payload.len() as u64 - 1, "trailing bytes after the record"));
    }

    #[test]
    fn segment_file_name_must_be_utf8() {
        let mut payload = Vec::new();
        put_u64(&mut payload, 7);
        put_len_prefixed(&mut payload, &[0xff, 0xfe]);
        let err = Record::decode(KIND_SEGMENTED, &payload, 40).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (48, "segment file name is not UTF-8"));
    }

    #[test]
    fn header_and_unknown_kinds_are_refused_at_the_kind_byte() {
        let err = Record::decode(KIND_HEADER, b"", 30).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (29, "header frame after the start of the log"));
        for kind in [0u8, 5, 7, 0xff] {
            let err = Record::decode(kind, b"", 30).unwrap_err();
            assert_eq!((err.offset_bytes, err.reason), (29, "unknown frame kind"));
        }
    }

    #[test]
    fn oversized_record_does_not_fit() {
        let record = Record::Command(vec![vec![0u8; MAX_FRAME_PAYLOAD_BYTES]]);
        assert!(!record.fits_in_frame());
        assert!(Record::Command(vec![vec![0u8; MAX_FRAME_PAYLOAD_BYTES - 8]]).fits_in_frame());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn frames_round_trip(record in arb_record()) {
            let mut bytes = vec![0xAA; 3];
            record.encode_frame(&mut bytes, crate::frame::Place::aof(1, 0));
            let frame = decode_frame(&bytes[3..], crate::frame::Place::aof(1, 3)).unwrap();
            prop_assert_eq!(frame.total_bytes, bytes.len() - 3);
            prop_assert_eq!(frame.payload.len() as u64, record.payload_len_bytes());
            let decoded = Record::decode(frame.kind, frame.payload, (3 + FRAME_HEADER_BYTES) as u64).unwrap();
            prop_assert_eq!(decoded, record);
        }

        #[test]
        fn every_strict_prefix_of_a_payload_is_refused(record in arb_record(), cut in any::<prop::sample::Index>()) {
            let payload = payload_of(&record);
            let cut = cut.index(payload.len());
            let err = Record::decode(record.kind(), &payload[..cut], 0).unwrap_err();
            prop_assert!(err.offset_bytes <= cut as u64);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn arbitrary_payloads_never_panic(kind in 0u8..8, payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Err(err) = Record::decode(kind, &payload, 1000) {
                prop_assert!(err.offset_bytes >= 999 && err.offset_bytes <= 1000 + payload.len() as u64);
            }
        }
    }
}
