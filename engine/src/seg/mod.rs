//! Segment files: the cold tier's immutable, sorted, checksummed record
//! files.
//!
//! When a windowed table evicts its out-of-window rows, the store seals
//! them into one segment with a [`SegBuilder`] and keeps only a stub per
//! row in memory; a read of a cold row is a [`Seg::get`]. A segment is
//! written once, front to back, fsynced, and never modified again: it is
//! durable truth, so every byte a reader relies on is checksummed, and a
//! damaged segment is refused (`Error::Corrupt` naming the file and the
//! offset), never read as something else. The store names the files
//! (`row-<hex table>-<seq>.seg`) and owns their directory entries; this
//! module owns their bytes.
//!
//! # Layout
//!
//! All integers are little-endian; `crc` is crc32 (crc32fast).
//!
//! ```text
//! offset          field
//! 0               magic "SEGSIMRS"                          (8 bytes)
//! 8               records, in key order, back to back:
//!                   [value][crc u32]     crc = crc32(seq u64 ‖ record index u64 ‖ key_len u32 ‖ key ‖ value)
//! index_offset    index, one entry per record, in key order:
//!                   [key_len u32][value_offset u64][value_len u32][key]
//! bounds_offset   key bounds: [min_key_len u32][min_key][max_key_len u32][max_key]
//! len - 56        tail (56 bytes):
//!                   seq u64, records u64, index_offset u64, bounds_offset u64,
//!                   index_crc u32    crc32 of [index_offset, bounds_offset)
//!                   bounds_crc u32   crc32 of [bounds_offset, len - 56)
//!                   version u32      2 (1: record crcs without seq and index; refused)
//!                   tail_crc u32     crc32 of the 44 tail bytes before it
//!                   magic "SEGSIMRS" (8 bytes)
//! ```
//!
//! Why this shape:
//!
//! - **The tail is fixed-size and at the end**, so a reader finds it
//!   without trusting anything, and a writer can stream records before it
//!   knows how many there will be. The trailing magic is the last thing
//!   written, so a file cut short has other bytes where it belongs.
//! - **Every checksum covers a range whose ends come from already verified
//!   bytes**: the tail's own crc covers a fixed range; the index and bounds
//!   crcs cover ranges the tail states; a record's crc covers the range the
//!   index states. So no flipped length can move a checksum onto other
//!   bytes, and each crc32 catches every burst of up to 32 flipped bits.
//!   The two magics are compared literally. No byte of the file is
//!   outside all of these.
//! - **A record's checksum covers its key**, although the key is stored in
//!   the index: a record verifies only under the key it was written for,
//!   so a lookup can fail, but cannot return another row's value.
//! - **Keys live in the index**, contiguous, so opening reads one compact
//!   region, and a lookup binary-searches an in-memory index (built at
//!   open; `index.rs` says how it avoids most cache misses) without
//!   touching the records. Opening verifies the tail, bounds and index,
//!   and that the records tile the region between head and index exactly;
//!   records are verified when read, so opening costs O(index), not
//!   O(file).
//!
//! Keys and values may hold any bytes and be empty; each is at most
//! 4 GiB - 1 (u32 lengths). An empty segment is valid: no records, empty
//! bounds.

mod builder;
mod format;
mod index;
mod reader;
mod verify;

#[cfg(test)]
mod tests;

pub use builder::SegBuilder;
pub use reader::Seg;
// The type `Seg::iter` and `Seg::range` return, named only by `testing` users.
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use reader::SegRange;

/// What a segment holds, as its footer states it (and as
/// [`SegBuilder::finish`] reports it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegMeta {
    /// The segment's sequence number: its stable identity, never reused.
    pub seq: u64,
    /// How many records it holds.
    pub records: u64,
    /// The smallest key; empty when there are no records.
    pub min_key: Vec<u8>,
    /// The largest key; empty when there are no records.
    pub max_key: Vec<u8>,
}
