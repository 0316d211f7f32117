//! The header frame that opens every log: it says "this is a segsim AOF,
//! in format version N" before any record is trusted, which of the store's
//! logs the file is (its generation), and whether a rewrite made it, in
//! which case a snapshot follows up to a `SNAPSHOT_END` frame.
//!
//! A file that is not an AOF (a segment, a manifest, another program's
//! file put here by mistake) fails the magic check rather than replaying
//! garbage commands, and a log written by another format version fails the
//! version check rather than being misread.
//!
//! **The generation binds every frame to its file.** A store's first log
//! is generation 1 and a rewrite's log the next one after the log it
//! replaces; every frame after the header is checksummed with the
//! generation in its place (`frame.rs`), so a frame that a misdirected
//! write carried between the two logs a rewrite holds open at once — the
//! new one and the old, same kind, same offsets — is invalid where it
//! landed. Every header is bound to generation 0 (the header is what says
//! the generation), so a header landing on another log is valid there,
//! and what it declares decides: a rewrite's header declares a snapshot
//! and a generation the landing site's frames do not have, so the log is
//! refused (no valid `SNAPSHOT_END` under that generation); a fresh log's
//! header is written only where no other log of the store is open.
//!
//! **The snapshot ends in a frame, not in the header.** A rewrite's log is
//! made whole and durable before it is renamed into place, so every byte
//! of its snapshot was durable the moment the file became the log: damage
//! there can never be a torn write, and recovery refuses it even when the
//! damage took every later frame that could have vouched for it. The
//! header says a snapshot follows; a `SNAPSHOT_END` frame, written with the
//! snapshot's last batch, says where it ends (its own end). A rewrite's
//! log without one — its last batch lost, or the rewrite never finished —
//! is refused, never read as a shorter snapshot. Format 3 wrote the end
//! into the header instead, rewriting the header in place once the
//! snapshot was written; that one write, misdirected to the same offset of
//! the old log, gave the live log a header it never had (the simulator's
//! seeds 1014887 and 1046851, found by the first long soak).

use super::KIND_HEADER;
use crate::codec::{ByteReader, DecodeError};
use crate::frame::{decode_frame, decode_unbound_frame, encode_frame, Log, Place, FRAME_HEADER_BYTES};

/// Identifies an AOF (the first bytes of the header payload).
const AOF_MAGIC: [u8; 8] = *b"SEGS-AOF";

/// The only format version this code reads and writes. Version 1 had no
/// snapshot end and no durability marks; version 2's frame checksums did
/// not cover their place (see `frame.rs`); version 3's covered the offset
/// but not the log's generation, and kept the snapshot's end in the header
/// (see the module doc). An older log is refused with
/// [`crate::Error::OldFormat`] ([`older_version`]).
pub(crate) const AOF_VERSION: u32 = 4;

/// The generation of a store's first log.
pub(crate) const FIRST_GENERATION: u64 = 1;

/// Who made the log, as the header's last byte says.
const MADE_FRESH: u8 = 0;
const MADE_BY_REWRITE: u8 = 1;

/// Bytes of the header payload: magic, version, generation, who made it.
const HEADER_PAYLOAD_BYTES: usize = AOF_MAGIC.len() + 4 + 8 + 1;

/// Bytes of the whole header frame; a log is never shorter once recovered.
pub(crate) const HEADER_FRAME_BYTES: u64 = (FRAME_HEADER_BYTES + HEADER_PAYLOAD_BYTES) as u64;

/// The place every log's header frame is bound to: byte 0, generation 0.
pub(crate) const HEADER_PLACE: Place = Place::aof(0, 0);

/// What a header says about its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Which of the store's logs this is; every later frame is bound to it.
    pub generation: u64,
    /// A rewrite made the log: a snapshot follows the header, up to a
    /// `SNAPSHOT_END` frame.
    pub rewritten: bool,
}

/// Append the header frame of a log opened fresh (no rewrite made it) to
/// `out`, which starts at byte 0.
pub(super) fn encode_header(out: &mut Vec<u8>, generation: u64) {
    encode(out, Header { generation, rewritten: false });
}

/// Append the header frame of a rewrite's log of `generation` to `out`,
/// which starts at byte 0: a snapshot follows, which the rewrite ends with
/// a `SNAPSHOT_END` frame before it makes the file durable and renames it.
pub(super) fn encode_rewrite_header(out: &mut Vec<u8>, generation: u64) {
    encode(out, Header { generation, rewritten: true });
}

fn encode(out: &mut Vec<u8>, header: Header) {
    assert!(header.generation >= FIRST_GENERATION, "generation 0 is the headers' own place");
    let mut payload = [0u8; HEADER_PAYLOAD_BYTES];
    let mut at = 0;
    for field in [&AOF_MAGIC[..], &AOF_VERSION.to_le_bytes(), &header.generation.to_le_bytes()] {
        payload[at..at + field.len()].copy_from_slice(field);
        at += field.len();
    }
    payload[at] = if header.rewritten { MADE_BY_REWRITE } else { MADE_FRESH };
    // `out` starts at byte 0: a header is a log's first frame (tests put
    // one elsewhere, as damage).
    let start = out.len();
    encode_frame(out, HEADER_PLACE, KIND_HEADER, &payload);
    assert_eq!((out.len() - start) as u64, HEADER_FRAME_BYTES);
}

/// Where the frame at byte `at` of `log` (a whole AOF, or its first
/// bytes) is bound: a header to generation 0, every later frame to the
/// generation its header's field holds — read, not checked, for tools that
/// walk a log's frames by hand (the simulator's damage explorer, tests).
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub fn frame_place(log: &[u8], at: usize) -> Place {
    if at == 0 {
        return HEADER_PLACE;
    }
    let field = FRAME_HEADER_BYTES + AOF_MAGIC.len() + 4..FRAME_HEADER_BYTES + AOF_MAGIC.len() + 12;
    let generation = log.get(field).map_or(0, |bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes")));
    Place::aof(generation, at as u64)
}

/// The version of an older log's header at the start of `bytes`, if it is
/// one: a header frame whose checksum is an older format's (none at all
/// before version 3, the offset without a generation in version 3), with
/// the AOF magic and a version below this build's. Such a log's every
/// frame fails this build's checksum; without this check it would be
/// refused as damage rather than by its version.
pub(super) fn older_version(bytes: &[u8]) -> Option<u32> {
    let frame = decode_unbound_frame(bytes)
        .or_else(|_| decode_frame(bytes, Place { log: Log::AofWithoutGeneration, offset_bytes: 0 }))
        .ok()?;
    let payload = frame.payload;
    if frame.kind != KIND_HEADER || payload.len() < AOF_MAGIC.len() + 4 || payload[..AOF_MAGIC.len()] != AOF_MAGIC {
        return None;
    }
    let version_bytes = payload[AOF_MAGIC.len()..AOF_MAGIC.len() + 4].try_into().expect("4 bytes");
    let version = u32::from_le_bytes(version_bytes);
    (version < AOF_VERSION).then_some(version)
}

/// Check a header frame's payload, which starts at `payload_offset_bytes`,
/// and return what it says.
pub(super) fn check_header(payload: &[u8], payload_offset_bytes: u64) -> Result<Header, DecodeError> {
    let mut reader = ByteReader::new(payload, payload_offset_bytes);
    if reader.bytes(AOF_MAGIC.len())? != AOF_MAGIC {
        return Err(DecodeError { offset_bytes: payload_offset_bytes, reason: "not an AOF: wrong magic" });
    }
    let version_at = reader.offset_bytes();
    let version = reader.u32()?;
    if version != AOF_VERSION {
        return Err(DecodeError { offset_bytes: version_at, reason: "unsupported AOF format version" });
    }
    let generation_at = reader.offset_bytes();
    let generation = reader.u64()?;
    if generation < FIRST_GENERATION {
        return Err(DecodeError { offset_bytes: generation_at, reason: "log generation 0 (the headers' own place)" });
    }
    let made_at = reader.offset_bytes();
    let rewritten = match reader.u8()? {
        MADE_FRESH => false,
        MADE_BY_REWRITE => true,
        _ => return Err(DecodeError { offset_bytes: made_at, reason: "unknown maker of the log (fresh or rewrite)" }),
    };
    reader.finish()?;
    Ok(Header { generation, rewritten })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::put_u32;
    use crate::frame::decode_frame;

    #[test]
    fn headers_round_trip_bound_to_generation_zero() {
        for (header, encode) in [
            (Header { generation: 1, rewritten: false }, encode_header as fn(&mut Vec<u8>, u64)),
            (Header { generation: 9, rewritten: true }, encode_rewrite_header),
        ] {
            let mut bytes = Vec::new();
            encode(&mut bytes, header.generation);
            assert_eq!(bytes.len() as u64, HEADER_FRAME_BYTES);
            let frame = decode_frame(&bytes, HEADER_PLACE).unwrap();
            assert_eq!(frame.kind, KIND_HEADER);
            assert_eq!(check_header(frame.payload, FRAME_HEADER_BYTES as u64), Ok(header));
            assert!(decode_frame(&bytes, Place::aof(header.generation, 0)).is_err(), "bound to generation 0");
            assert_eq!(older_version(&bytes), None);
        }
    }

    fn payload(version: u32, generation: u64, made: u8) -> Vec<u8> {
        let mut payload = AOF_MAGIC.to_vec();
        put_u32(&mut payload, version);
        payload.extend_from_slice(&generation.to_le_bytes());
        payload.push(made);
        payload
    }

    #[test]
    fn wrong_magic_version_generation_maker_or_length_is_refused_with_its_offset() {
        let base = FRAME_HEADER_BYTES as u64;
        assert_eq!(check_header(&payload(AOF_VERSION, 7, 1), base), Ok(Header { generation: 7, rewritten: true }));
        let mut magic = payload(AOF_VERSION, 7, 0);
        magic[0] ^= 1;
        let err = check_header(&magic, base).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (base, "not an AOF: wrong magic"));
        let err = check_header(&payload(AOF_VERSION + 1, 7, 0), base).unwrap_err();
        assert_eq!((err.offset_bytes, err.reason), (base + 8, "unsupported AOF format version"));
        let err = check_header(&payload(AOF_VERSION, 0, 0), base).unwrap_err();
        assert_eq!(err.offset_bytes, base + 12);
        let err = check_header(&payload(AOF_VERSION, 7, 2), base).unwrap_err();
        assert_eq!(err.offset_bytes, base + 20);
        let mut long = payload(AOF_VERSION, 7, 0);
        long.push(0);
        assert_eq!(check_header(&long, base).unwrap_err().offset_bytes, base + 21);
        let good = payload(AOF_VERSION, 7, 0);
        for len in 0..good.len() {
            assert!(check_header(&good[..len], base).is_err(), "a {len}-byte header passed");
        }
    }

    /// A format-3 header (checksum over the offset, no generation; magic,
    /// version, snapshot end) is recognised and refused by its version.
    #[test]
    fn a_format_3_header_is_known_by_its_version() {
        let mut payload = AOF_MAGIC.to_vec();
        put_u32(&mut payload, 3);
        payload.extend_from_slice(&0u64.to_le_bytes());
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place { log: Log::AofWithoutGeneration, offset_bytes: 0 }, KIND_HEADER, &payload);
        assert_eq!(older_version(&bytes), Some(3));
        assert!(decode_frame(&bytes, HEADER_PLACE).is_err(), "not a header of this format");
    }
}
