//! A file as the simulated disk keeps it: the volatile image reads see,
//! the durable image power loss keeps, the data operations (`data.rs`)
//! that lead from the second to the first, and what rides along with
//! them — the vouchers that say which damage a file format could tell
//! from a torn write, the silent-fault state (`silent.rs`) and, while a
//! recording runs, the durable history (`history.rs`).

use std::ops::Range;

use super::data::{vouched, DataOp, Voucher};
use super::history::History;
use super::silent::Silent;

/// A file's contents and its unsynced history.
#[derive(Debug, Default)]
pub(super) struct Inode {
    /// What reads see: the page cache.
    pub volatile: Vec<u8>,
    /// What survives power loss for sure.
    pub durable: Vec<u8>,
    /// The changes since the last sync, oldest first.
    pub pending: Vec<DataOp>,
    /// Handles open on this inode in the current epoch.
    pub open_handles: u32,
    /// The last fsync failed: the next one succeeds (fsyncgate).
    pub fsync_failed: bool,
    /// For the first write after each fsync (the earliest moment a writer
    /// can record what that fsync made durable): where it starts, and the
    /// file's durable length then. Pending until the write is durable.
    pub pending_vouchers: Vec<Voucher>,
    /// A write was made since the last fsync (or since power came back).
    pub written_since_sync: bool,
    /// The same, for such writes that are durable: each could carry a record
    /// that the bytes durable before it were durable, so damage to those
    /// bytes is damage a file format can tell from a torn write (see
    /// [`Inode::vouched`]). Durable metadata: survives power loss.
    pub vouchers: Vec<Voucher>,
    /// The file was renamed into place whole and durable at this length:
    /// none of those bytes was ever a torn write, and the file could say so
    /// at its start (durable metadata too).
    pub whole_bytes: u64,
    /// Silent write faults: fates of pending writes, and the scars flushed
    /// ones left on the durable image (`silent.rs`).
    pub silent: Silent,
    /// What each op that reached the durable image overwrote, while a
    /// recording keeps it and the history is whole (`history.rs`).
    pub history: Option<History>,
}

impl Inode {
    /// Whether damage to `range` of the durable image is one a file format
    /// could tell from a torn write: a durable write made when the damaged
    /// bytes were already durable, and lying wholly after them (so the
    /// damage did not take its record with it), vouches for them.
    pub fn vouched(&self, range: Range<u64>) -> bool {
        vouched(self.whole_bytes, &self.vouchers, range)
    }

    /// Everything durable now is vouched for in full (a file renamed into
    /// place whole and durable: nothing in it was ever a torn write).
    pub fn vouch_all(&mut self) {
        self.whole_bytes = self.durable.len() as u64;
    }

    /// Forget vouchers for bytes the durable image no longer has: a write
    /// vouches only while all of it is there. One cut away, or cut short
    /// (a short write the engine truncated back before its fsync, a torn
    /// tail it cut), is no record a format can read, as a write whose
    /// bytes damage changed is not (`erase_vouchers_under`). Keeping one
    /// that starts at the new end (no byte of it left) made a log's last
    /// frame look vouched, so a cut at damage in it was held to be a loss
    /// (soak seed 41533467, `corpus/regressions/seed-41533467-durability.ops`).
    pub fn forget_vouchers_past(&mut self, len_bytes: u64) {
        self.vouchers.retain(|v| v.end_bytes <= len_bytes && v.durable_at_bytes <= len_bytes);
        self.whole_bytes = self.whole_bytes.min(len_bytes);
    }
}
