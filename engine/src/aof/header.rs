//! The header frame that opens every log: it says "this is a segsim AOF,
//! in format version N" before any record is trusted, and where the
//! snapshot a rewrite wrote ends, if one did.
//!
//! A file that is not an AOF (a segment, a manifest, another program's
//! file put here by mistake) fails the magic check rather than replaying
//! garbage commands, and a log written by another format version fails the
//! version check rather than being misread.
//!
//! A rewrite's log is made whole and durable before it is renamed into
//! place, so every byte of its snapshot was durable the moment the file
//! became the log: damage there can never be a torn write. The header
//! says how far that snapshot reaches (`snapshot_end_bytes`; 0 for a log
//! no rewrite made), so recovery refuses damage to it even when the damage
//! took every later frame that could have vouched for it.

use super::KIND_HEADER;
use crate::codec::{ByteReader, DecodeError};
use crate::frame::{decode_unbound_frame, encode_frame, Place, FRAME_HEADER_BYTES};

/// Identifies an AOF (the first bytes of the header payload).
const AOF_MAGIC: [u8; 8] = *b"SEGS-AOF";

/// The only format version this code reads and writes. Version 1 had no
/// snapshot end and no durability marks; version 2's frame checksums did
/// not cover their place (see `frame.rs`). An older log is refused with
/// [`crate::Error::OldFormat`] ([`older_version`]).
pub(crate) const AOF_VERSION: u32 = 3;

/// Bytes of the header payload: magic, version, snapshot end.
const HEADER_PAYLOAD_BYTES: usize = AOF_MAGIC.len() + 4 + 8;

/// Bytes of the whole header frame; a log is never shorter once recovered.
pub(crate) const HEADER_FRAME_BYTES: u64 = (FRAME_HEADER_BYTES + HEADER_PAYLOAD_BYTES) as u64;

/// Append the header frame of a log no rewrite made to `out`.
pub(super) fn encode_header(out: &mut Vec<u8>) {
    encode_snapshot_header(out, 0);
}

/// What the header of a rewrite's log says about its snapshot until the
/// rewrite has written it all ([`encode_unfinished_header`]): a snapshot
/// no file can hold, so a log still saying it is refused (`scan.rs`: a
/// snapshot past the end).
pub(crate) const UNFINISHED_SNAPSHOT: u64 = u64::MAX;

/// Append the header frame of a rewrite's log that is not written yet to
/// `out`. The rewrite overwrites it with the snapshot's end once the
/// snapshot is written, before the fsync and the rename; if the drive
/// loses that one write (or puts it elsewhere) while acknowledging it, the
/// log renamed into place still says it is unfinished, and recovery refuses
/// it — a header that said "no snapshot" would let the lost snapshot pass
/// for an empty log's torn tail.
pub(super) fn encode_unfinished_header(out: &mut Vec<u8>) {
    encode_snapshot_header(out, UNFINISHED_SNAPSHOT);
}

/// Append the header frame of a rewrite's log, whose snapshot ends at
/// `snapshot_end_bytes`, to `out`.
pub(super) fn encode_snapshot_header(out: &mut Vec<u8>, snapshot_end_bytes: u64) {
    let mut payload = [0u8; HEADER_PAYLOAD_BYTES];
    payload[..AOF_MAGIC.len()].copy_from_slice(&AOF_MAGIC);
    payload[AOF_MAGIC.len()..AOF_MAGIC.len() + 4].copy_from_slice(&AOF_VERSION.to_le_bytes());
    payload[AOF_MAGIC.len() + 4..].copy_from_slice(&snapshot_end_bytes.to_le_bytes());
    // `out` starts at byte 0: a header is a log's first frame (tests put
    // one elsewhere, as damage).
    let start = out.len();
    encode_frame(out, Place::aof(0), KIND_HEADER, &payload);
    assert_eq!((out.len() - start) as u64, HEADER_FRAME_BYTES);
}

/// The version of an older log's header at the start of `bytes`, if it is
/// one: a header frame whose checksum covers no place (the format before
/// version 3), with the AOF magic and a version below this build's. Such a
/// log's every frame fails this build's checksum; without this check it
/// would be refused as damage rather than by its version.
pub(super) fn older_version(bytes: &[u8]) -> Option<u32> {
    let frame = decode_unbound_frame(bytes).ok()?;
    let payload = frame.payload;
    if frame.kind != KIND_HEADER || payload.len() < AOF_MAGIC.len() + 4 || payload[..AOF_MAGIC.len()] != AOF_MAGIC {
        return None;
    }
    let version_bytes = payload[AOF_MAGIC.len()..AOF_MAGIC.len() + 4].try_into().expect("4 bytes");
    let version = u32::from_le_bytes(version_bytes);
    (version < AOF_VERSION).then_some(version)
}

/// Check a header frame's payload, which starts at `payload_offset_bytes`,
/// and return where its snapshot ends (0: no rewrite made the log).
pub(super) fn check_header(payload: &[u8], payload_offset_bytes: u64) -> Result<u64, DecodeError> {
    let mut reader = ByteReader::new(payload, payload_offset_bytes);
    if reader.bytes(AOF_MAGIC.len())? != AOF_MAGIC {
        return Err(DecodeError { offset_bytes: payload_offset_bytes, reason: "not an AOF: wrong magic" });
    }
    let version_at = reader.offset_bytes();
    let version = reader.u32()?;
    if version != AOF_VERSION {
        return Err(DecodeError { offset_bytes: version_at, reason: "unsupported AOF format version" });
    }
    let snapshot_end_bytes = reader.u64()?;
    reader.finish()?;
    Ok(snapshot_end_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::put_u32;
    use crate::frame::decode_frame;

    #[test]
    fn header_round_trips() {
        let mut bytes = Vec::new();
        encode_header(&mut bytes);
        assert_eq!(bytes.len() as u64, HEADER_FRAME_BYTES);
        let frame = decode_frame(&bytes, Place::aof(0)).unwrap();
        assert_eq!(frame.kind, KIND_HEADER);
        assert_eq!(check_header(frame.payload, FRAME_HEADER_BYTES as u64), Ok(0));
    }

    #[test]
    fn wrong_magic_version_or_length_is_refused_with_its_offset() {
        let base = FRAME_HEADER_BYTES as u64;
        let mut good = AOF_MAGIC.to_vec();
        put_u32(&mut good, AOF_VERSION);
        good.extend_from_slice(&7u64.to_le_bytes());
        assert_eq!(check_header(&good, base), Ok(7));

        let mut magic = good.clone();
        magic[0] ^= 1;
        let err = check_header(&magic, base).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (base, "not an AOF: wrong magic"));

        let mut version = AOF_MAGIC.to_vec();
        put_u32(&mut version, AOF_VERSION + 1);
        let err = check_header(&version, base).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (base + 8, "unsupported AOF format version"));

        let mut long = good.clone();
        long.push(0);
        assert_eq!(check_header(&long, base).unwrap_err().offset_bytes, base + 20);

        for len in 0..good.len() {
            assert!(check_header(&good[..len], base).is_err(), "a {len}-byte header passed");
        }
    }
}
