//! The loaded row segments and their live/dead record accounting.
//!
//! A segment is *live* while stubs point into it. Every record starts live
//! when its row is committed cold; it becomes *dead* (stranded) when its
//! stub is deleted, promoted back to hot, or flushed. Nothing ever reads a
//! dead record — the stub was the only way in — so the counts are pure
//! bookkeeping, and the invariant `live + dead == records` is what the
//! audit checks. A segment with no live records is retired only by a
//! rewrite that has stopped naming it (see `rewrite.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use super::row::Row;
use super::value::{decode_row, Stub};
use super::Store;
use crate::manifest::MAX_SEQ;
use crate::seg::Seg;
use crate::IoOp;
use crate::{Error, Result};

/// One loaded segment.
#[derive(Debug)]
pub(crate) struct SegSlot {
    pub seg: Seg,
    /// The file name (what `SEGMENTED` frames and the manifest carry).
    pub file: String,
    /// Records with a stub pointing at them.
    pub live: u64,
    /// Records stranded by a delete, promotion or flush.
    pub dead: u64,
}

/// The segments a store has loaded, by seq.
#[derive(Debug, Default)]
pub(crate) struct Segments {
    slots: BTreeMap<u64, SegSlot>,
}

/// Table names up to this many bytes appear whole (in hex) in their
/// segments' file names; a longer one is tagged by its first
/// [`TAG_PREFIX_BYTES`] and a hash of the whole.
pub const TAG_WHOLE_MAX_BYTES: usize = 64;
/// How much of a long table name its tag keeps.
const TAG_PREFIX_BYTES: usize = TAG_WHOLE_MAX_BYTES - 8;

/// The file name of segment `seq` of `table`: `row-<hex tag>-<seq>.seg`,
/// at most 157 bytes whatever the table's name (a file name is at most
/// 255 bytes on the usual file systems; a 200-byte table name once made
/// every eviction of its table fail, issue 22).
///
/// The tag is the table's name up to `TAG_WHOLE_MAX_BYTES` (so stores
/// made before this keep their names), else its first bytes and an
/// FNV-1a hash of the whole. The tag only helps a person reading a
/// directory listing: the seq, never reused, is what makes a name unique,
/// and the table's full name is in the manifest's ADD and in every key
/// the segment holds (`table:...`). Table names are free bytes; hex keeps
/// the name safe on every file system.
pub fn segment_file_name(table: &[u8], seq: u64) -> String {
    let hashed;
    let tag = if table.len() <= TAG_WHOLE_MAX_BYTES {
        table
    } else {
        hashed = [&table[..TAG_PREFIX_BYTES], &fnv1a64(table).to_be_bytes()[..]].concat();
        &hashed[..]
    };
    let mut name = String::with_capacity(8 + tag.len() * 2 + 20);
    name.push_str("row-");
    for byte in tag {
        name.push_str(&format!("{byte:02x}"));
    }
    name.push_str(&format!("-{seq}.seg"));
    name
}

/// FNV-1a, 64-bit: a fixed, portable hash (no seeded `Hasher`), so a
/// table's file names are the same on every machine and every run.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// The seq embedded in a segment file name, if it is one of ours: the
/// engine writes only seqs in `1..=MAX_SEQ` (a name with seq 0 or beyond
/// is another program's, and never raises the seqs the store hands out).
pub fn seq_of_file_name(name: &str) -> Option<u64> {
    let stem = name.strip_prefix("row-")?.strip_suffix(".seg")?;
    let (hex, seq) = stem.rsplit_once('-')?;
    if hex.len() % 2 != 0 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // Reject "+5", "05" and such so a name maps to exactly one seq.
    let seq_value: u64 = seq.parse().ok()?;
    (seq_value.to_string() == seq && (1..=MAX_SEQ).contains(&seq_value)).then_some(seq_value)
}

impl Segments {
    pub fn insert(&mut self, seq: u64, seg: Seg, file: String) {
        assert_eq!(seg.meta().seq, seq, "segment footer seq must match its registration");
        let previous = self.slots.insert(seq, SegSlot { seg, file, live: 0, dead: 0 });
        assert!(previous.is_none(), "segment seq {seq} loaded twice");
    }

    pub fn remove(&mut self, seq: u64) -> Option<SegSlot> {
        self.slots.remove(&seq)
    }

    pub fn get(&self, seq: u64) -> Option<&SegSlot> {
        self.slots.get(&seq)
    }

    pub fn contains(&self, seq: u64) -> bool {
        self.slots.contains_key(&seq)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, &SegSlot)> {
        self.slots.iter().map(|(seq, slot)| (*seq, slot))
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// A stub was committed or stitched into `seq`.
    pub fn note_live(&mut self, seq: u64, count: u64) {
        let slot = self.slots.get_mut(&seq).expect("stub names a loaded segment");
        slot.live += count;
        assert!(slot.live <= slot.seg.meta().records, "more live stubs than records in segment {seq}");
    }

    /// A stub into `seq` died: its record is stranded.
    pub fn note_dead(&mut self, seq: u64) {
        let slot = self.slots.get_mut(&seq).expect("stub names a loaded segment");
        assert!(slot.live > 0, "segment {seq}: a stub died that was never counted live");
        slot.live -= 1;
        slot.dead += 1;
    }

    /// FLUSHALL: every stub died with the map.
    pub fn strand_all(&mut self) {
        for slot in self.slots.values_mut() {
            slot.dead += slot.live;
            slot.live = 0;
        }
    }

    /// After replay: every record not pointed at by a stub is dead.
    pub fn settle_dead_counts(&mut self) {
        for slot in self.slots.values_mut() {
            let records = slot.seg.meta().records;
            assert!(slot.live <= records);
            slot.dead = records - slot.live;
        }
    }

    /// Read a cold row through its stub. A stub whose segment is missing
    /// or does not hold the key is corruption of the store's own truth,
    /// refused with the segment's path.
    pub fn read_row(&self, key: &[u8], stub: Stub) -> Result<Row> {
        let Some(slot) = self.slots.get(&stub.seq) else {
            return Err(Error::corrupt(
                PathBuf::from(format!("<segment seq {}>", stub.seq)),
                0,
                format!("a stub for key {:?} names a segment that is not loaded", String::from_utf8_lossy(key)),
            ));
        };
        let Some(payload) = slot.seg.get(key)? else {
            return Err(Error::corrupt(
                slot.seg.path(),
                0,
                format!("segment does not hold the stubbed key {:?}", String::from_utf8_lossy(key)),
            ));
        };
        decode_row(payload, 0).map_err(|e| e.in_file(slot.seg.path()))
    }
}

impl Store {
    /// DROP a segment from the manifest durably, then unlink it. DROP
    /// first: a crash between leaves an unregistered file the sweep
    /// removes, never a registered name with no file. Any failure here is
    /// fatal: the registry's state is no longer known. The caller has
    /// unloaded it (or never loaded it) and fsyncs the directory.
    pub(super) fn retire_segment(&mut self, seq: u64, file: &str) -> Result<()> {
        let dropped = self.manifest.drop_seg(seq);
        self.poison_on_error(dropped)?;
        let path = self.dir.join(file);
        let unlinked = Store::io(IoOp::Unlink, &path, self.vfs.unlink(&path));
        self.poison_on_error(unlinked)
    }

    /// Unload and retire every loaded segment whose seq is not in `named`
    /// — the seqs a log names: open's replay (the sweep) or a rewrite's new
    /// log. Such a segment has no stub pointing into it. Returns how many
    /// were retired; the caller fsyncs the directory.
    pub(super) fn retire_unnamed(&mut self, named: &BTreeSet<u64>) -> Result<u64> {
        let unnamed: Vec<(u64, String)> = self
            .segments
            .iter()
            // Planted: a named segment without live stubs is taken for an
            // orphan, though the next replay meets its frame again.
            .filter(|(seq, slot)| !named.contains(seq) || (canary!(SweepNamedSegment) && slot.live == 0))
            .map(|(seq, slot)| (seq, slot.file.clone()))
            .collect();
        for (seq, file) in &unnamed {
            let slot = self.segments.remove(*seq).expect("listed above");
            assert_eq!(slot.live, 0, "a segment no log names has no stubs");
            self.retire_segment(*seq, file)?;
        }
        Ok(unnamed.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_and_reject_lookalikes() {
        let name = segment_file_name(b"t:x", 42);
        assert_eq!(name, "row-743a78-42.seg");
        assert_eq!(seq_of_file_name(&name), Some(42));
        assert_eq!(seq_of_file_name(&segment_file_name(b"", 1)), Some(1));
        // Seqs the engine never writes: 0, and past the ledger's range.
        assert_eq!(seq_of_file_name(&segment_file_name(b"", 0)), None);
        assert_eq!(seq_of_file_name(&segment_file_name(b"", MAX_SEQ)), Some(MAX_SEQ));
        assert_eq!(seq_of_file_name(&segment_file_name(b"", MAX_SEQ + 1)), None);
        for bad in ["row-74-+5.seg", "row-74-05.seg", "row-7-5.seg", "row-zz-5.seg", "row-74-5.seg.tmp", "MANIFEST"] {
            assert_eq!(seq_of_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn file_names_are_bounded_whatever_the_table_name() {
        let whole = vec![b'a'; TAG_WHOLE_MAX_BYTES];
        assert_eq!(segment_file_name(&whole, 1), format!("row-{}-1.seg", "61".repeat(TAG_WHOLE_MAX_BYTES)));
        for len in [TAG_WHOLE_MAX_BYTES + 1, 200, 100_000] {
            let table = vec![b'x'; len];
            let name = segment_file_name(&table, u64::MAX);
            assert!(name.len() <= 157, "{len}: {} bytes", name.len());
            assert_eq!(seq_of_file_name(&segment_file_name(&table, MAX_SEQ)), Some(MAX_SEQ));
        }
        // Long names sharing their first bytes get different tags.
        let (a, b) = ([vec![b'x'; 100], b"a".to_vec()].concat(), [vec![b'x'; 100], b"b".to_vec()].concat());
        assert_ne!(segment_file_name(&a, 1), segment_file_name(&b, 1));
        assert_eq!(segment_file_name(&a, 1), segment_file_name(&a, 1));
    }
}
