//! What each durable data operation overwrote, for `sim explore --damage`'s
//! lost and misdirected writes.
//!
//! A drive that loses a write, or puts it elsewhere, leaves the write's
//! own place holding whatever the media held there before: not zeros in
//! general, but the bytes of the write before it — the unfinished header a
//! rewrite overwrites in place, a cut tail's zeros, a record an earlier
//! write left. Exploration damages durable images after the fact, so the
//! disk must remember, for every operation that reached the durable image,
//! which bytes it changed and what they held. "Old bytes" is then exact:
//! the bytes the operation's range held in the durable image just before
//! it was applied, zeros past the file's end then (the file keeps the
//! length the write gave it: the file system's metadata saw the write, as
//! for the random mode's lost writes in `silent.rs`).
//!
//! The history is a persistent list (newest first, each node shared by
//! `Arc`), so the snapshot taken before every I/O shares it in O(1). It is
//! kept only while a recording runs (`FileSystem::keep_history`): the
//! random mode pays nothing. A file whose durable bytes changed in a way
//! the history does not follow (a power loss that kept unsynced writes, a
//! silent fault, the environment's damage, a restored image) has no
//! history from then on, and exploration damages it no such way.

use std::ops::Range;
use std::sync::Arc;

use super::data::{to_usize, DataOp};

/// One data operation as it reached a durable image.
#[derive(Debug)]
pub(super) struct Landed {
    /// Which fsync of the file made it durable (1 for the first).
    pub flush: u64,
    /// The bytes it changed: a write's own range (not the zero-filled gap
    /// before it, which holds zeros either way), or a `set_len`'s cut or
    /// extension.
    pub range: Range<u64>,
    /// What `range` held before, up to the file's old end (past it, the
    /// range held nothing: zeros once the file is that long). An append
    /// keeps nothing here, so the history costs what overwrites cost.
    before: Vec<u8>,
    /// A write (a `set_len` is metadata: never lost or misdirected).
    pub write: bool,
    previous: Option<Arc<Landed>>,
}

impl Landed {
    /// What byte `at` of `range` held before this op.
    fn old_byte(&self, at: u64) -> u8 {
        assert!(self.range.contains(&at));
        self.before.get(to_usize(at - self.range.start)).copied().unwrap_or(0)
    }
}

impl Drop for Landed {
    /// Unlink the older nodes one by one: a recursive drop of a long list
    /// could overflow the stack.
    fn drop(&mut self) {
        let mut next = self.previous.take();
        while let Some(node) = next {
            next = match Arc::try_unwrap(node) {
                Ok(mut owned) => owned.previous.take(),
                Err(_) => None,
            };
        }
    }
}

/// A file's durable history (see the module doc).
#[derive(Clone, Debug, Default)]
pub(super) struct History {
    newest: Option<Arc<Landed>>,
    flushes: u64,
}

impl PartialEq for History {
    /// Histories are equal when they are the same list: snapshots compare
    /// them only to share.
    fn eq(&self, other: &History) -> bool {
        self.flushes == other.flushes
            && match (&self.newest, &other.newest) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
    }
}

impl Eq for History {}

impl History {
    /// `op` is about to be applied to `durable`, as part of the file's
    /// next fsync: remember what it overwrites.
    pub fn note(&mut self, durable: &[u8], op: &DataOp) {
        let len_before = durable.len() as u64;
        let (range, write) = match op {
            DataOp::Write { offset_bytes, data } => (*offset_bytes..offset_bytes + data.len() as u64, true),
            DataOp::SetLen { .. } => (op.dirty_range(len_before), false),
        };
        if range.is_empty() {
            return;
        }
        let old_end = range.end.min(len_before);
        let before =
            if range.start < old_end { durable[to_usize(range.start)..to_usize(old_end)].to_vec() } else { Vec::new() };
        let previous = self.newest.take();
        self.newest = Some(Arc::new(Landed { flush: self.flushes + 1, range, before, write, previous }));
    }

    /// The fsync whose ops were noted is done.
    pub fn end_flush(&mut self) {
        self.flushes += 1;
    }

    /// Every landed op, newest first.
    pub fn newest_first(&self) -> impl Iterator<Item = &Landed> {
        std::iter::successors(self.newest.as_deref(), |node| node.previous.as_deref())
    }
}

/// Which ops of a history a lost-write damage takes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LostWrites {
    /// The newest write that touched the range, alone.
    One,
    /// That write and every later op its fsync made durable: a drive that
    /// acknowledged the flush and lost the writes still in its cache.
    FlushTail,
}

/// `bytes` (a file's durable image, whose history `history` is) as it
/// would be had the drive lost the newest write touching `range` (and,
/// for [`LostWrites::FlushTail`], the rest of its flush), everything else
/// durable: the first byte that differs and the bytes from there to the
/// last that differs. `None` if no write touched the range, a later
/// `set_len` in the tail would have to be lost too, or nothing changes.
pub(super) fn undo(bytes: &[u8], history: &History, range: Range<u64>, how: LostWrites) -> Option<(u64, Vec<u8>)> {
    let ops: Vec<&Landed> = history.newest_first().collect();
    let overlaps = |op: &Landed| op.range.start < range.end && range.start < op.range.end;
    let newest = ops.iter().position(|op| overlaps(op))?;
    if !ops[newest].write {
        return None;
    }
    let flush = ops[newest].flush;
    // The lost ops, newest first: `ops[first_lost..=newest]`.
    let first_lost = match how {
        LostWrites::One => newest,
        LostWrites::FlushTail => ops[..newest].iter().rposition(|op| op.flush != flush).map_or(0, |at| at + 1),
    };
    if ops[first_lost..=newest].iter().any(|op| !op.write) {
        return None;
    }
    let mut image = bytes.to_vec();
    // Newest first: each op's old bytes go back where no kept later op
    // (`ops[..first_lost]`) wrote since.
    for op in &ops[first_lost..=newest] {
        for at in op.range.clone() {
            let kept_later = ops[..first_lost].iter().any(|later| later.range.contains(&at));
            let index = to_usize(at);
            if !kept_later && index < image.len() {
                image[index] = op.old_byte(at);
            }
        }
    }
    let first = (0..image.len()).find(|&i| image[i] != bytes[i])?;
    let last = (0..image.len()).rev().find(|&i| image[i] != bytes[i]).expect("first differs");
    Some((first as u64, image[first..=last].to_vec()))
}

/// What `range` of the durable image held before the newest op that
/// touched it (zeros where that op's old bytes do not reach, or if no op
/// in the history touched it).
pub(super) fn before_newest(history: &History, range: Range<u64>) -> Vec<u8> {
    let mut out = vec![0u8; to_usize(range.end - range.start)];
    let newest = history.newest_first().find(|op| op.range.start < range.end && range.start < op.range.end);
    if let Some(op) = newest {
        for at in range.start.max(op.range.start)..range.end.min(op.range.end) {
            out[to_usize(at - range.start)] = op.old_byte(at);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A history of `ops`, each list one fsync, applied to an empty file.
    fn history_of(flushes: &[&[DataOp]]) -> (Vec<u8>, History) {
        let (mut durable, mut history) = (Vec::new(), History::default());
        for ops in flushes {
            for op in *ops {
                history.note(&durable, op);
                op.apply(&mut durable);
            }
            history.end_flush();
        }
        (durable, history)
    }

    fn write(offset_bytes: u64, data: &[u8]) -> DataOp {
        DataOp::Write { offset_bytes, data: data.to_vec() }
    }

    #[test]
    fn a_lost_write_leaves_the_bytes_its_place_held_before_it() {
        // A header written, overwritten in place, then an append; one fsync.
        let (durable, history) = history_of(&[&[write(0, b"UNFIN"), write(0, b"DONE!"), write(5, b"data")]]);
        assert_eq!(durable, b"DONE!data");
        assert_eq!(undo(&durable, &history, 0..5, LostWrites::One), Some((0, b"UNFIN".to_vec())));
        assert_eq!(undo(&durable, &history, 5..9, LostWrites::One), Some((5, vec![0; 4])), "an append: zeros");
        assert_eq!(
            undo(&durable, &history, 0..5, LostWrites::FlushTail),
            Some((0, b"UNFIN\0\0\0\0".to_vec())),
            "the header and every later write of its fsync"
        );
        assert_eq!(before_newest(&history, 0..5), b"UNFIN");
    }

    #[test]
    fn a_later_durable_write_over_a_lost_one_stays() {
        let (durable, history) = history_of(&[&[write(0, b"aaaa")], &[write(2, b"bb")], &[write(3, b"c")]]);
        assert_eq!(durable, b"aabc");
        // The second write lost: byte 3 is the third write's, kept.
        assert_eq!(undo(&durable, &history, 2..3, LostWrites::One), Some((2, b"a".to_vec())));
        // Its flush holds only it: the tail is the same loss.
        assert_eq!(undo(&durable, &history, 2..3, LostWrites::FlushTail), Some((2, b"a".to_vec())));
        assert_eq!(undo(&durable, &history, 9..10, LostWrites::One), None, "no write there");
    }

    #[test]
    fn a_cut_is_never_lost() {
        let (durable, history) = history_of(&[&[write(0, b"abcdef"), DataOp::SetLen { len_bytes: 3, seq: 0 }]]);
        assert_eq!(undo(&durable, &history, 0..3, LostWrites::One), Some((0, vec![0; 3])));
        assert_eq!(undo(&durable, &history, 0..3, LostWrites::FlushTail), None, "the cut would go too");
        let (durable, history) = history_of(&[&[write(0, b"ab")], &[DataOp::SetLen { len_bytes: 4, seq: 0 }]]);
        assert_eq!(undo(&durable, &history, 2..4, LostWrites::One), None, "zeros a set_len made");
    }
}
