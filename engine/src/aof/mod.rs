//! The append-only log (AOF): the store's log of truth for hot data.
//!
//! Every write the store acknowledges is first a frame in this file, and a
//! restart rebuilds hot state by replaying the frames in order. The cold
//! tier leans on it too: a `SEGMENTED` frame is what makes a sealed segment
//! part of the store, and a rewrite carries cold rows forward as `STUB`
//! frames instead of materializing them.
//!
//! ## On disk
//!
//! A header frame, then record frames back to back, all in the shared frame
//! of [`crate::frame`]. Integers are little-endian.
//!
//! ```text
//! log        := HEADER frame, then zero or more COMMAND | SEGMENTED | STUB frames
//! frame      := [len u32][crc32 u32][kind u8][payload: len bytes]
//!
//! kind 1  HEADER     magic "SEGS-AOF" (8 bytes), format version u32 (= 1)
//! kind 2  COMMAND    argc u32, then argc × ([len u32][argument bytes])
//! kind 3  SEGMENTED  seq u64, [len u32][segment file name, UTF-8]
//! kind 4  STUB       [len u32][key bytes], seq u64, weight u64
//! ```
//!
//! Kind 0 is never used, so a zeroed region of the file (a length extended
//! before its data landed) cannot pass for a known kind.
//!
//! ## Torn tails and point-in-time recovery
//!
//! A frame is either whole and valid, or invalid: cut short, a length over
//! the limit, or a checksum mismatch. The first invalid frame ends the log.
//! It and every byte after it are treated as never written: recovery copies
//! them to a quarantine file (kept for a human, never read again), cuts the
//! log back to the last whole frame and makes the cut durable *before* it
//! hands out a writer. That order matters: a frame appended after an
//! invalid one would be acknowledged and then silently skipped by the next
//! recovery, which stops at the invalid frame.
//!
//! Recovery never returns a record that follows an invalid frame, even when
//! valid frames are found further on (that is more likely bit rot than a
//! torn write; it is reported in [`AofRecovery::valid_frames_after_invalid`]
//! for the store to surface, and the bytes are kept in the quarantine file).
//!
//! A frame whose checksum is valid but whose content does not decode is a
//! different thing: a torn write cannot forge a checksum, so those bytes
//! were written that way. They are refused with [`crate::Error::Corrupt`]
//! naming the file and offset, and recovery changes nothing on disk.
//!
//! ## Durability
//!
//! [`FsyncPolicy`] says when an append is fsynced. A failed fsync poisons
//! the writer for good: the kernel may already have dropped the dirty
//! pages, and a later fsync that succeeds does not bring them back
//! (fsyncgate). A failed write is cut back so no partial frame stays in
//! the file; if even the cut fails, the writer is poisoned too.

mod header;
mod policy;
mod quarantine;
mod record;
mod recover;
mod scan;
mod writer;

#[cfg(test)]
mod testing;

pub use policy::FsyncPolicy;
pub use record::{Args, ArgsIter, Record, RecordRef};
pub use recover::{AofRecovery, RecoveredLog};
pub use scan::{scan_log, LogScan, LogWalk};
pub use writer::AofWriter;

/// Frame kind of the header that opens every log.
const KIND_HEADER: u8 = 1;
/// Frame kind of [`Record::Command`].
const KIND_COMMAND: u8 = 2;
/// Frame kind of [`Record::Segmented`].
const KIND_SEGMENTED: u8 = 3;
/// Frame kind of [`Record::Stub`].
const KIND_STUB: u8 = 4;

/// Whether `kind` is a frame kind this log ever writes.
fn is_known_kind(kind: u8) -> bool {
    matches!(kind, KIND_HEADER | KIND_COMMAND | KIND_SEGMENTED | KIND_STUB)
}
