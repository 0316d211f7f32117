//! The checksummed frame both logs are made of (the AOF and the manifest):
//!
//! ```text
//! [len u32 LE][crc32 u32 LE][kind u8][payload: len bytes]
//! ```
//!
//! `crc32` covers the frame's *place* — which log it belongs to, for the
//! AOF which of the store's logs (its *generation*: a rewrite's log is the
//! next), and its byte offset there — then the length, the kind and the
//! payload, so a torn or flipped length is caught like a torn payload, and
//! a whole, once-valid frame found anywhere but where it was written (a
//! misdirected write carried it to another offset, into the other log, or
//! from a rewrite's new log into the old one) is invalid there: damage,
//! not history. The place is not stored; a reader knows where it reads. A
//! frame is either whole and valid at its place or it is *invalid*; this
//! module says which and why, and leaves the policy (cut a torn tail,
//! refuse mid-file damage) to the log that owns the file.
//!
//! Logs of older format versions checksummed less: no place at all (AOF 1
//! and 2, manifest 1), or an AOF's offset without its generation (AOF 3).
//! Their frames still decode with [`decode_unbound_frame`] and
//! [`Log::AofWithoutGeneration`], which exist only so that a log can
//! recognise such a file's header and refuse it by its version
//! ([`crate::Error::OldFormat`]) instead of calling it damage.

use std::sync::LazyLock;

/// Bytes before the payload: len, crc, kind.
pub const FRAME_HEADER_BYTES: usize = 9;

/// Where a frame's kind byte lies, after its length and checksum.
pub const KIND_OFFSET_BYTES: usize = 8;

/// The largest payload a frame may carry. Checked on write and on read,
/// so a garbage length can never make a reader allocate or scan past it.
pub const MAX_FRAME_PAYLOAD_BYTES: usize = 64 << 20;

/// Which log a frame belongs to: half of its place, so that a frame
/// misdirected into the other log at the same offset is invalid there,
/// and an AOF frame misdirected between a rewrite's new log and the log
/// it replaces (two files of one kind, open at once) too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// The append-only command log (`aof`) of this generation: the store's
    /// first log is generation 1, a rewrite's log the one after the log it
    /// replaces. Every log's header is bound to generation 0, the place
    /// all headers share (it is the header that says the generation).
    Aof {
        /// Which of the store's logs.
        generation: u64,
    },
    /// The segment ledger (`manifest`).
    Manifest,
    /// The AOF of format version 3, whose checksums covered the offset but
    /// no generation: only to recognise such a log's header.
    AofWithoutGeneration,
}

impl Log {
    fn tag(self) -> u8 {
        match self {
            Log::Aof { .. } | Log::AofWithoutGeneration => 1,
            Log::Manifest => 2,
        }
    }

    /// Whether this log's checksum leaves the place out (a planted bug
    /// only: the checksum of the formats before places, in the AOF or the
    /// manifest).
    fn place_ignored(self) -> bool {
        match self {
            Log::Aof { .. } | Log::AofWithoutGeneration => canary!(AofPlaceIgnored),
            Log::Manifest => canary!(ManifestPlaceIgnored),
        }
    }
}

/// Where a frame belongs: its log and its byte offset in it. The
/// checksum covers it; nothing stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The log.
    pub log: Log,
    /// The byte offset in the log's file.
    pub offset_bytes: u64,
}

impl Place {
    /// Byte `offset_bytes` of the AOF of generation `generation`.
    pub const fn aof(generation: u64, offset_bytes: u64) -> Place {
        Place { log: Log::Aof { generation }, offset_bytes }
    }

    /// Byte `offset_bytes` of the manifest.
    pub const fn manifest(offset_bytes: u64) -> Place {
        Place { log: Log::Manifest, offset_bytes }
    }

    /// The place `bytes` further on in the same log.
    pub fn plus(self, bytes: usize) -> Place {
        Place { log: self.log, offset_bytes: self.offset_bytes + bytes as u64 }
    }
}

/// A valid frame found in a byte slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The frame's kind byte (meaning is the owning log's).
    pub kind: u8,
    /// The payload.
    pub payload: &'a [u8],
    /// Header plus payload: where the next frame starts, relative to this one.
    pub total_bytes: usize,
}

/// Why the bytes at some offset are not a valid frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameInvalid {
    /// Fewer than [`FRAME_HEADER_BYTES`] remain.
    ShortHeader,
    /// The length field exceeds [`MAX_FRAME_PAYLOAD_BYTES`].
    LengthTooLarge,
    /// The frame's length runs past the end of the data.
    ShortPayload,
    /// The checksum does not match.
    BadChecksum,
}

impl FrameInvalid {
    /// A short human description.
    pub fn reason(self) -> &'static str {
        match self {
            FrameInvalid::ShortHeader => "frame header cut short",
            FrameInvalid::LengthTooLarge => "frame length over the limit",
            FrameInvalid::ShortPayload => "frame payload cut short",
            FrameInvalid::BadChecksum => "frame checksum mismatch",
        }
    }
}

/// Append one frame to `out`, a buffer whose first byte will be written at
/// `out_at`: the frame belongs at `out_at` plus what `out` already holds.
pub fn encode_frame(out: &mut Vec<u8>, out_at: Place, kind: u8, payload: &[u8]) {
    encode_frame_with(out, out_at, kind, payload.len(), |out| out.extend_from_slice(payload));
}

/// [`encode_frame`] with the payload written by `write_payload` straight
/// into `out`, after room for the frame's header, which is filled in once
/// the payload is known: the same bytes, without a second buffer and a
/// copy. `payload_len_bytes` is what `write_payload` will write (it
/// reserves the room once), and must not be over the limit.
pub fn encode_frame_with(
    out: &mut Vec<u8>,
    out_at: Place,
    kind: u8,
    payload_len_bytes: usize,
    write_payload: impl FnOnce(&mut Vec<u8>),
) {
    assert!(payload_len_bytes <= MAX_FRAME_PAYLOAD_BYTES, "frame payload over the limit");
    let start = out.len();
    out.reserve(FRAME_HEADER_BYTES + payload_len_bytes);
    out.extend_from_slice(&[0u8; FRAME_HEADER_BYTES]);
    write_payload(out);
    let payload = &out[start + FRAME_HEADER_BYTES..];
    assert_eq!(payload.len(), payload_len_bytes, "the payload is as long as announced");
    let len = (payload_len_bytes as u32).to_le_bytes();
    let crc = frame_crc(Some(out_at.plus(start)), len, kind, payload);
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    out[start + 8] = kind;
}

/// A hasher with nothing hashed yet, cloned for each frame: making one
/// (`Hasher::new`) asks which instructions the CPU has every time, a cost
/// as large as hashing a small frame's prefix.
static FRESH_HASHER: LazyLock<crc32fast::Hasher> = LazyLock::new(crc32fast::Hasher::new);

/// The checksum of a frame at `place` (`None`: the previous format's,
/// which covered no place).
///
/// The place (the log's tag, an AOF's generation, the offset), length and
/// kind are hashed as one prefix of at most 22 bytes: the same checksum as
/// hashing each in turn, in one call instead of several (small updates
/// dominate the cost of a small frame's checksum).
fn frame_crc(place: Option<Place>, len: [u8; 4], kind: u8, payload: &[u8]) -> u32 {
    let mut prefix = [0u8; 22];
    let mut prefix_len_bytes = 0;
    if let Some(place) = place.filter(|place| !place.log.place_ignored()) {
        prefix[0] = place.log.tag();
        prefix_len_bytes = 1;
        if let Log::Aof { generation } = place.log {
            prefix[1..9].copy_from_slice(&generation.to_le_bytes());
            prefix_len_bytes = 9;
        }
        prefix[prefix_len_bytes..prefix_len_bytes + 8].copy_from_slice(&place.offset_bytes.to_le_bytes());
        prefix_len_bytes += 8;
    }
    prefix[prefix_len_bytes..prefix_len_bytes + 4].copy_from_slice(&len);
    prefix[prefix_len_bytes + 4] = kind;
    prefix_len_bytes += 5;
    let mut hasher = FRESH_HASHER.clone();
    hasher.update(&prefix[..prefix_len_bytes]);
    hasher.update(payload);
    hasher.finalize()
}

/// Decode the frame at the start of `bytes`, which lie at `at`: valid
/// only if it was written there.
pub fn decode_frame(bytes: &[u8], at: Place) -> Result<Frame<'_>, FrameInvalid> {
    decode_frame_checking(bytes, Check::Crc(Some(at)))
}

/// [`decode_frame`] without the checksum: only for bytes this process
/// already decoded with it, and has not changed since (a log read, checked
/// whole, then replayed: the checksum is computed once per frame).
pub fn decode_checked_frame(bytes: &[u8]) -> Result<Frame<'_>, FrameInvalid> {
    decode_frame_checking(bytes, Check::None)
}

/// Decode the frame at the start of `bytes` as the previous format wrote
/// it, with a checksum that covers no place: only to recognise an older
/// log's header and refuse the log by its version (see the module doc).
pub fn decode_unbound_frame(bytes: &[u8]) -> Result<Frame<'_>, FrameInvalid> {
    decode_frame_checking(bytes, Check::Crc(None))
}

/// What a decode verifies.
#[derive(Clone, Copy)]
enum Check {
    /// Lengths only (bytes already verified).
    None,
    /// The checksum too, for a frame at this place (`None`: unbound).
    Crc(Option<Place>),
}

fn decode_frame_checking(bytes: &[u8], check: Check) -> Result<Frame<'_>, FrameInvalid> {
    if bytes.len() < FRAME_HEADER_BYTES {
        return Err(FrameInvalid::ShortHeader);
    }
    let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let crc = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    let kind = bytes[KIND_OFFSET_BYTES];
    if len > MAX_FRAME_PAYLOAD_BYTES {
        return Err(FrameInvalid::LengthTooLarge);
    }
    let total_bytes = FRAME_HEADER_BYTES + len;
    if total_bytes > bytes.len() {
        return Err(FrameInvalid::ShortPayload);
    }
    let payload = &bytes[FRAME_HEADER_BYTES..total_bytes];
    if let Check::Crc(place) = check {
        let len_bytes = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if frame_crc(place, len_bytes, kind, payload) != crc {
            return Err(FrameInvalid::BadChecksum);
        }
    }
    Ok(Frame { kind, payload, total_bytes })
}

/// What a scan for a valid frame after an invalid one found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// A valid frame starts at this absolute offset.
    Found(usize),
    /// No valid frame starts anywhere after the scan's start.
    NotFound,
    /// The scan checksummed its budget of bytes without deciding
    /// (adversarial input: many lengths that fit); callers must assume
    /// the worst for their policy.
    GaveUp,
}

/// Looks for the first offset at or after `from` where a valid frame
/// starts, in `bytes`, a log's file from its first byte on: a frame of a
/// kind `log_of` wants, valid at its own place in the log `log_of` names
/// for that kind (`None`: not wanted). Logs use it after an invalid frame
/// to tell a torn tail (nothing valid follows) from damage in the middle
/// of durable data (valid frames follow). A candidate costs O(1) unless
/// its length fits; the checksummed bytes are capped at `budget_bytes`, so
/// even adversarial input scans in bounded time.
pub fn find_valid_frame(bytes: &[u8], from: usize, budget_bytes: usize, log_of: impl Fn(u8) -> Option<Log>) -> Scan {
    let mut budget_left_bytes = budget_bytes;
    find_valid_frame_within(bytes, from, &mut budget_left_bytes, log_of)
}

/// [`find_valid_frame`], spending from a budget shared by several
/// searches: `budget_left_bytes` goes down by what this one checksummed.
pub fn find_valid_frame_within(
    bytes: &[u8],
    from: usize,
    budget_left_bytes: &mut usize,
    log_of: impl Fn(u8) -> Option<Log>,
) -> Scan {
    let mut at = from;
    while at + FRAME_HEADER_BYTES <= bytes.len() {
        let len = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        if len <= MAX_FRAME_PAYLOAD_BYTES && at + FRAME_HEADER_BYTES + len <= bytes.len() {
            let cost_bytes = len + FRAME_HEADER_BYTES;
            if cost_bytes > *budget_left_bytes {
                return Scan::GaveUp;
            }
            *budget_left_bytes -= cost_bytes;
            // The kind first: a frame of a kind not wanted is not found
            // whatever its checksum, and most offsets in garbage fail here,
            // without a checksum's cost.
            if let Some(log) = log_of(bytes[at + KIND_OFFSET_BYTES]) {
                if decode_frame(&bytes[at..], Place { log, offset_bytes: at as u64 }).is_ok() {
                    return Scan::Found(at);
                }
            }
        }
        at += 1;
    }
    Scan::NotFound
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_single_bit_flip_is_caught() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place::aof(1, 0), 7, b"hello frame");
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_frame(&flipped, Place::aof(1, 0)).is_err(), "flip of bit {bit} went unnoticed");
        }
    }

    #[test]
    fn find_skips_garbage_and_finds_the_next_frame() {
        let mut bytes = vec![0xAB; 37];
        let aof = |_| Some(Log::Aof { generation: 1 });
        encode_frame(&mut bytes, Place::aof(1, 0), 3, b"x");
        assert_eq!(find_valid_frame(&bytes, 0, 1 << 20, aof), Scan::Found(37));
        assert_eq!(find_valid_frame(&bytes, 0, 1 << 20, |k| aof(k).filter(|_| k != 3)), Scan::NotFound);
        assert_eq!(find_valid_frame(&bytes, 0, 1 << 20, |_| Some(Log::Manifest)), Scan::NotFound);
        assert_eq!(find_valid_frame(&bytes, 0, 1 << 20, |_| Some(Log::Aof { generation: 2 })), Scan::NotFound);
    }

    #[test]
    fn a_frame_is_valid_only_at_its_place() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place::aof(7, 4096), 5, b"bound");
        assert!(decode_frame(&bytes, Place::aof(7, 4096)).is_ok());
        assert_eq!(decode_frame(&bytes, Place::aof(7, 0)), Err(FrameInvalid::BadChecksum), "another offset");
        assert_eq!(decode_frame(&bytes, Place::aof(8, 4096)), Err(FrameInvalid::BadChecksum), "another generation");
        assert_eq!(decode_frame(&bytes, Place::manifest(4096)), Err(FrameInvalid::BadChecksum), "another log");
        let without_generation = Place { log: Log::AofWithoutGeneration, offset_bytes: 4096 };
        assert_eq!(decode_frame(&bytes, without_generation), Err(FrameInvalid::BadChecksum), "format 3's checksum");
        assert_eq!(decode_unbound_frame(&bytes), Err(FrameInvalid::BadChecksum), "the placeless format's checksum");
        // A frame carried whole to an earlier frame's offset of the same
        // size is invalid there, and so is the next frame's search.
        let mut log = Vec::new();
        encode_frame(&mut log, Place::aof(1, 0), 5, b"first");
        encode_frame(&mut log, Place::aof(1, 0), 5, b"other");
        let (first, second) = log.split_at(log.len() / 2);
        let misdirected = [second, first].concat();
        assert!(decode_frame(&misdirected, Place::aof(1, 0)).is_err());
        let aof = |_| Some(Log::Aof { generation: 1 });
        assert_eq!(find_valid_frame(&misdirected, 0, 1 << 20, aof), Scan::NotFound);
    }

    #[test]
    fn scan_gives_up_past_its_budget() {
        // Every position holds a small length that fits: the worst case.
        let bytes = [1u8, 0, 0, 0].repeat(1024);
        let aof = |_| Some(Log::Aof { generation: 1 });
        assert_eq!(find_valid_frame(&bytes, 0, 64, aof), Scan::GaveUp);
        assert_eq!(find_valid_frame(&bytes, 0, 1 << 20, aof), Scan::NotFound);
    }

    proptest! {
        #[test]
        fn round_trip(kind in any::<u8>(), payload in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut bytes = Vec::new();
            encode_frame(&mut bytes, Place::manifest(3), kind, &payload);
            let frame = decode_frame(&bytes, Place::manifest(3)).unwrap();
            prop_assert_eq!(frame.kind, kind);
            prop_assert_eq!(frame.payload, &payload[..]);
            prop_assert_eq!(frame.total_bytes, bytes.len());
        }

        #[test]
        fn every_strict_prefix_is_invalid(payload in proptest::collection::vec(any::<u8>(), 0..100), cut in any::<prop::sample::Index>()) {
            let mut bytes = Vec::new();
            encode_frame(&mut bytes, Place::aof(1, 0), 1, &payload);
            let cut = cut.index(bytes.len());
            prop_assert!(decode_frame(&bytes[..cut], Place::aof(1, 0)).is_err());
        }

        /// The checksum is CRC-32 of the place (log tag, an AOF's
        /// generation, offset), the length, the kind and the payload, in
        /// that order, as one string.
        #[test]
        fn the_checksum_covers_place_length_kind_and_payload_in_order(
            offset in any::<u64>(),
            generation in any::<u64>(),
            kind in any::<u8>(),
            payload in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let len = (payload.len() as u32).to_le_bytes();
            let mut rest = len.to_vec();
            rest.push(kind);
            rest.extend_from_slice(&payload);
            let manifest = [&[2u8][..], &offset.to_le_bytes(), &rest].concat();
            prop_assert_eq!(frame_crc(Some(Place::manifest(offset)), len, kind, &payload), crc32fast::hash(&manifest));
            let aof = [&[1u8][..], &generation.to_le_bytes(), &offset.to_le_bytes(), &rest].concat();
            let place = Place::aof(generation, offset);
            prop_assert_eq!(frame_crc(Some(place), len, kind, &payload), crc32fast::hash(&aof));
            let aof3 = [&[1u8][..], &offset.to_le_bytes(), &rest].concat();
            let place = Place { log: Log::AofWithoutGeneration, offset_bytes: offset };
            prop_assert_eq!(frame_crc(Some(place), len, kind, &payload), crc32fast::hash(&aof3));
            prop_assert_eq!(frame_crc(None, len, kind, &payload), crc32fast::hash(&rest));
        }

        /// A frame is its length, its checksum at its own place (what
        /// the buffer already holds counts toward it), its kind and its
        /// payload, appended after whatever the buffer held.
        #[test]
        fn a_frame_is_length_checksum_kind_and_payload(
            before in proptest::collection::vec(any::<u8>(), 0..40),
            offset in 0u64..1 << 40,
            kind in any::<u8>(),
            payload in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let len = (payload.len() as u32).to_le_bytes();
            let place = Place::aof(3, offset + before.len() as u64);
            let mut expected = before.clone();
            expected.extend_from_slice(&len);
            expected.extend_from_slice(&frame_crc(Some(place), len, kind, &payload).to_le_bytes());
            expected.push(kind);
            expected.extend_from_slice(&payload);
            let mut out = before;
            encode_frame(&mut out, Place::aof(3, offset), kind, &payload);
            prop_assert_eq!(out, expected);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_frame(&bytes, Place::aof(1, 0));
            let _ = decode_unbound_frame(&bytes);
            let _ = find_valid_frame(&bytes, 0, 1 << 20, |_| Some(Log::Aof { generation: 1 }));
        }
    }
}
