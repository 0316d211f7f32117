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
//! log        := HEADER frame, then zero or more record and SYNCED frames;
//!               a rewrite's log: HEADER, its snapshot, SNAPSHOT_END, then
//!               records and marks as any log
//! frame      := [len u32][crc32 u32][kind u8][payload: len bytes]
//!
//! kind 1  HEADER       magic "SEGS-AOF" (8 bytes), format version u32 (= 4),
//!                      generation u64 (>= 1), made_by u8 (0 fresh, 1 rewrite)
//! kind 2  COMMAND      argc u32, then argc × ([len u32][argument bytes])
//! kind 3  SEGMENTED    seq u64, [len u32][segment file name, UTF-8]
//! kind 4  STUB         [len u32][key bytes], seq u64, weight u64
//! kind 5  SYNCED       durable_len_bytes u64
//! kind 6  WINDOW_MARK  [len u32][table bytes], max_seen i64
//! kind 7  SNAPSHOT_END (empty): a rewrite's snapshot ends with this frame
//! ```
//!
//! Every frame's checksum covers its place: the AOF's tag, the log's
//! generation (the header's own: 0) and the offset (`frame.rs`,
//! `header.rs`). Kinds 5 to 7 came after the first logs were written; a
//! reader that does not know them refuses the log (an unknown kind with a
//! valid checksum is corruption), it never misreads it.
//!
//! Kind 0 is never used, so a zeroed region of the file (a length extended
//! before its data landed) cannot pass for a known kind.
//!
//! ## Torn tails, damage, and the two recovery modes
//!
//! A frame is either whole and valid, or invalid: cut short, a length over
//! the limit, or a checksum mismatch. The first invalid frame ends the log:
//! recovery never returns a record that follows an invalid frame.
//!
//! What recovery then *does* depends on whether the invalid frame can be a
//! torn write (bytes that were never durable) or must be damage to bytes
//! that were (bit rot, a truncated or overwritten file). A crash tears only
//! what was not yet fsynced, so the question is whether the invalid frame
//! was durable, and the log answers it itself: a `SYNCED n` frame says
//! "when this frame was written, the log's first `n` bytes were durable".
//! The writer puts one at the head of each append batch whenever an fsync
//! has moved the durable end since its last one (marks included: rot in a
//! mark followed by a record is damage too); recovery and a clean close
//! put one after their fsync, for the data, and fsync it too. A rewrite's log needs
//! none for its snapshot: it is made whole and durable before the rename
//! makes it the log, its header says a snapshot follows, and a
//! `SNAPSHOT_END` frame ends it. So:
//!
//! - an invalid frame at byte `i` with a valid `SYNCED n` after it, `n >
//!   i`, was durable: **damage**. So is one inside a rewrite's snapshot
//!   (before its `SNAPSHOT_END`; a rewrite's log with no such frame at all
//!   is refused too), an invalid header with any valid
//!   frame after it (the header is durable before any frame is written),
//!   a log with no valid frame at all that is longer than a header (a torn
//!   header leaves at most its own bytes), and a second header frame (junk
//!   prepended to a log).
//! - otherwise it is a **torn tail**: written, never durable, maybe with
//!   valid but unvouched frames after it (a crash in `reorder` mode keeps
//!   unsynced sectors independently). Those frames were never known
//!   durable either.
//!
//! In the default mode ([`RecoveryMode::Consistent`]) damage is refused
//! with [`crate::Error::Corrupt`] and nothing on disk changes; a torn tail
//! is moved to a quarantine file (kept for a human, never read again) and
//! the log cut back to the last whole frame, durably, *before* a writer is
//! handed out — a frame appended after an invalid one would be acknowledged
//! and then silently skipped by the next recovery. In
//! [`RecoveryMode::PointInTime`], an operator's explicit choice, damage is
//! cut the same way (quarantined, never destroyed) and reported — unless it
//! lies inside a rewrite's snapshot: a cut there would leave part of a
//! snapshot, which is no point in time at all, so that is refused in both
//! modes. So is damage to the header itself, the one frame that would say
//! whether a snapshot follows.
//!
//! One case no log can tell apart: damage to the last durable frames that
//! no later frame vouches for (the newest acknowledged writes, before the
//! next append or clean close vouches for them) looks exactly like a torn
//! write, and is cut as one. ARCHITECTURE.md states this limit.
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
pub(crate) use quarantine::quarantine_number_text;
mod record;
mod recover;
mod scan;
mod writer;

#[cfg(test)]
mod testing;

#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use header::frame_place;
pub use policy::FsyncPolicy;
pub use record::{Record, RecordRef};
pub use recover::{AofRecovery, LogRead, RecoveryMode};
pub use scan::LogWalk;
pub use writer::AofWriter;

// The engine never names these; they are the `testing` feature's: a
// command record's argument types, and the one-shot recovery and scan.
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use record::{Args, ArgsIter};
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use recover::RecoveredLog;
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use scan::{scan_log, LogScan};

/// Frame kind of the header that opens every log.
const KIND_HEADER: u8 = 1;
/// Frame kind of [`Record::Command`].
const KIND_COMMAND: u8 = 2;
/// Frame kind of [`Record::Segmented`].
const KIND_SEGMENTED: u8 = 3;
/// Frame kind of [`Record::Stub`].
const KIND_STUB: u8 = 4;
/// Frame kind of a durability mark (see the module doc); never a record.
const KIND_SYNCED: u8 = 5;
/// Frame kind of [`Record::WindowMark`].
const KIND_WINDOW_MARK: u8 = 6;
/// Frame kind of the end of a rewrite's snapshot (`header.rs`); never a
/// record.
const KIND_SNAPSHOT_END: u8 = 7;

/// Bytes of one `SYNCED` frame (header and its u64).
#[cfg(test)]
const SYNCED_FRAME_BYTES: u64 = crate::frame::FRAME_HEADER_BYTES as u64 + 8;

/// Whether `kind` is a frame kind this log ever writes.
fn is_known_kind(kind: u8) -> bool {
    matches!(
        kind,
        KIND_HEADER | KIND_COMMAND | KIND_SEGMENTED | KIND_STUB | KIND_SYNCED | KIND_WINDOW_MARK | KIND_SNAPSHOT_END
    )
}
