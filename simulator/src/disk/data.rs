//! A file's data operations (writes, `set_len`s) and the small types every
//! part of the simulated disk shares: inode numbers, the file-size bound
//! and vouchers. Nothing here knows an inode or the file system, so the
//! inode, its history and its silent faults all build on it.
//!
//! Both `sync` and the crash builder replay these operations onto the
//! durable image — all of them, or the part a crash mode lets through — so
//! what an operation changes (its bytes, its dirty range, the length after
//! it) is defined once, here.

use std::ops::Range;

/// An inode number. Never reused, so a stale handle cannot reach a new file.
pub(super) type InodeId = u64;

/// The largest file the simulated disk holds. A write past it is refused
/// (`InvalidInput`) rather than allocating gigabytes because a bug computed
/// a wild offset.
pub(super) const MAX_FILE_BYTES: u64 = 1 << 30;

/// One unsynced change to a file's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DataOp {
    /// `data` written at `offset_bytes`, extending the file if needed.
    Write { offset_bytes: u64, data: Vec<u8> },
    /// The file cut or extended (with zeros) to `len_bytes`: a metadata
    /// change too, `seq` its place among the disk's metadata changes
    /// (`FileSystem::meta_seq`), which a profile that journals lengths in
    /// order with directory changes consults (`FsProfile::set_len_journaled`).
    SetLen { len_bytes: u64, seq: u64 },
}

impl DataOp {
    /// Apply to `image`. The caller checked the extent against
    /// [`MAX_FILE_BYTES`], so the conversions below cannot fail.
    pub fn apply(&self, image: &mut Vec<u8>) {
        match self {
            DataOp::Write { offset_bytes, data } => write_into(image, *offset_bytes, data),
            DataOp::SetLen { len_bytes, .. } => image.resize(to_usize(*len_bytes), 0),
        }
    }

    /// The bytes this op may change in a file `len_before` bytes long:
    /// outside this range the file is the same before and after.
    pub fn dirty_range(&self, len_before: u64) -> Range<u64> {
        match self {
            // A write past the end also zero-fills the gap before it.
            DataOp::Write { offset_bytes, data } => (*offset_bytes).min(len_before)..offset_bytes + data.len() as u64,
            DataOp::SetLen { len_bytes, .. } => (*len_bytes).min(len_before)..(*len_bytes).max(len_before),
        }
    }

    /// The file's length after this op, given its length before.
    pub fn len_after(&self, len_before: u64) -> u64 {
        match self {
            DataOp::Write { offset_bytes, data } => len_before.max(offset_bytes + data.len() as u64),
            DataOp::SetLen { len_bytes, .. } => *len_bytes,
        }
    }
}

/// Write `data` at `offset_bytes` in `image`, zero-filling any gap.
pub(super) fn write_into(image: &mut Vec<u8>, offset_bytes: u64, data: &[u8]) {
    let start = to_usize(offset_bytes);
    if start == image.len() {
        // An append, the log's every write: no zero-fill to overwrite.
        image.extend_from_slice(data);
        return;
    }
    let end = start + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

/// A length or offset within a file as an index. Every one is bounded by
/// [`MAX_FILE_BYTES`], checked where it entered.
pub(super) fn to_usize(bytes: u64) -> usize {
    assert!(bytes <= MAX_FILE_BYTES);
    usize::try_from(bytes).expect("MAX_FILE_BYTES fits in usize")
}

/// A write, as far as vouching goes: it covers `start_bytes..end_bytes`,
/// and the file's first `durable_at_bytes` were durable when it was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Voucher {
    pub start_bytes: u64,
    pub end_bytes: u64,
    pub durable_at_bytes: u64,
}

/// Damage to `range` (a landing over it, rot) took every record of
/// durability with a byte in it: a format cannot read a record whose bytes
/// changed, so a voucher with any byte there vouches for nothing any more.
pub(super) fn erase_vouchers_under(vouchers: &mut Vec<Voucher>, range: Range<u64>) {
    vouchers.retain(|v| v.end_bytes <= range.start || v.start_bytes >= range.end);
}

/// `Inode::vouched` from its parts: the file's whole-at-rename length
/// and its durable vouchers (a snapshot keeps these, not the inode).
pub(super) fn vouched(whole_bytes: u64, vouchers: &[Voucher], range: Range<u64>) -> bool {
    range.start < whole_bytes || vouchers.iter().any(|v| v.start_bytes >= range.end && v.durable_at_bytes > range.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_ops_apply_like_a_file() {
        let mut image = b"abc".to_vec();
        DataOp::Write { offset_bytes: 5, data: b"xy".to_vec() }.apply(&mut image);
        assert_eq!(image, b"abc\0\0xy");
        DataOp::SetLen { len_bytes: 2, seq: 0 }.apply(&mut image);
        assert_eq!(image, b"ab");
        DataOp::SetLen { len_bytes: 4, seq: 0 }.apply(&mut image);
        assert_eq!(image, b"ab\0\0");
    }

    #[test]
    fn dirty_ranges_cover_every_changed_byte() {
        let write = DataOp::Write { offset_bytes: 10, data: vec![1; 5] };
        assert_eq!(write.dirty_range(3), 3..15, "the zero-filled gap is dirty too");
        assert_eq!(write.dirty_range(20), 10..15);
        assert_eq!(write.len_after(3), 15);
        assert_eq!(write.len_after(20), 20);
        let shrink = DataOp::SetLen { len_bytes: 4, seq: 0 };
        assert_eq!(shrink.dirty_range(9), 4..9);
        assert_eq!(shrink.dirty_range(2), 2..4);
    }
}
