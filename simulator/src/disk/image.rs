//! [`DiskImage`]: a whole disk just after power loss — each directory's
//! entries and each named file's bytes, everything durable, nothing
//! pending. A crash state of a snapshot (`crash_states.rs`) is turned into
//! one (`crash_image.rs`), then hashed, so that byte-identical disks are
//! recovered once, and turned into a fresh [`SimVfs`](super::SimVfs) for
//! the engine to open.
//!
//! The hash covers exactly what the engine can observe: directory paths,
//! entry names and each named file's bytes, in sorted order. Inode numbers
//! are left out — the engine never sees them — so two crash states that
//! leave the same bytes under the same names are the same image.
//!
//! A file's bytes are hashed in chunks, each chunk's hash bound to its
//! place and the chunks' hashes summed ([`content_hash`]). A crash state
//! changes a file only where its surviving writes reached, so its hash is
//! the durable file's sum with the terms of the chunks those writes
//! touched taken out and put back as they now read
//! ([`ContentHash::after`]): the cost of a state is the chunks it changed,
//! not the file's length. Exploring redb, whose one file takes a page
//! write here and a header write there, spent two thirds of its time
//! hashing whole files, state after state (BENCHMARKS.md, issue 51's
//! sixth pass). The states that keep a prefix of a file's writes go
//! further: `prefix_hash.rs` applies the writes once per snapshot, each
//! one's chunks hashed once (the seventh pass).

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use super::data::InodeId;
use super::history::History;

/// A disk after power loss (see the module doc).
#[derive(Clone, Debug)]
pub struct DiskImage {
    pub(super) dirs: BTreeMap<PathBuf, BTreeMap<String, InodeId>>,
    /// Exactly the inodes some entry names.
    pub(super) files: BTreeMap<InodeId, ImageFile>,
    /// For a durable image (`DiskSnapshot::durable_image`), each file's
    /// durable history where it has one, to place lost and misdirected
    /// writes (`history.rs`); empty for any other image. Not hashed: the
    /// engine cannot observe it.
    pub(super) histories: BTreeMap<InodeId, History>,
}

/// One file's bytes, and maybe their hash.
#[derive(Clone, Debug)]
pub(super) struct ImageFile {
    /// Shared with the snapshot when power loss left the durable bytes as
    /// they were, which is most files in most crash states.
    pub bytes: Arc<[u8]>,
    /// Known for bytes shared with the snapshot or derived from them;
    /// computed on demand for others (a damaged file's).
    pub hash: Option<u64>,
}

/// The bytes of one chunk of a file's content hash. Fixed, not the
/// sector's, so that equal bytes hash alike under every disk geometry.
pub(super) const HASH_CHUNK_BYTES: usize = 4096;

/// A 64-bit hash of `bytes`: their chunks' terms summed, finished.
/// Deterministic within a build (SipHash with fixed keys); collisions
/// among the few thousand images of one exploration are vanishingly
/// unlikely (about n²/2⁶⁵).
pub(super) fn content_hash(bytes: &[u8]) -> u64 {
    finish(bytes.len(), chunk_terms(bytes).fold(0, u64::wrapping_add))
}

/// A file's content hash kept open: each chunk's term (its bytes hashed
/// with its index, so that equal chunks at different places differ) and
/// their sum (wrapping), so that a changed chunk's term can be taken out
/// and the new one put in without reading the rest of the file.
#[derive(Clone, Debug)]
pub(super) struct ContentHash {
    pub(super) len_bytes: usize,
    pub(super) chunk_sum: u64,
    pub(super) terms: Arc<[u64]>,
}

impl ContentHash {
    /// The hash of `bytes`, every chunk read.
    pub fn of(bytes: &[u8]) -> ContentHash {
        let terms: Arc<[u64]> = chunk_terms(bytes).collect();
        let chunk_sum = terms.iter().copied().fold(0, u64::wrapping_add);
        ContentHash { len_bytes: bytes.len(), chunk_sum, terms }
    }

    /// The finished hash of these bytes: [`content_hash`]'s.
    pub fn finish(&self) -> u64 {
        finish(self.len_bytes, self.chunk_sum)
    }

    /// The finished hash of `new`, where `self` is the hash of `old` and
    /// the two differ only inside the byte ranges `dirty` and past the
    /// shorter one's end: only the chunks those reach are read (a chunk
    /// that reads as before keeps its term).
    pub fn after(&self, old: &[u8], new: &[u8], dirty: &[Range<usize>]) -> u64 {
        debug_assert_eq!(self.len_bytes, old.len(), "the hash of `old`");
        let (old_chunks, new_chunks) = (self.terms.len(), chunk_count(new.len()));
        if new_chunks <= 1 {
            // Nothing to keep: hashing the one chunk is the least work.
            return content_hash(new);
        }
        let resized = (old.len() != new.len()).then(|| old.len().min(new.len())..old.len().max(new.len()));
        let mut chunks: Vec<usize> = dirty
            .iter()
            .chain(&resized)
            .filter(|range| !range.is_empty())
            .flat_map(|range| range.start / HASH_CHUNK_BYTES..range.end.div_ceil(HASH_CHUNK_BYTES))
            .collect();
        chunks.sort_unstable();
        chunks.dedup();
        let mut chunk_sum = self.chunk_sum;
        for &index in &chunks {
            if index < old_chunks && index < new_chunks && chunk(old, index) == chunk(new, index) {
                continue;
            }
            if index < old_chunks {
                chunk_sum = chunk_sum.wrapping_sub(self.terms[index]);
            }
            if index < new_chunks {
                chunk_sum = chunk_sum.wrapping_add(chunk_term(new, index));
            }
        }
        let after = finish(new.len(), chunk_sum);
        debug_assert_eq!(after, content_hash(new), "{dirty:?} holds every byte that differs");
        after
    }
}

/// The 64-bit hash: the chunks' sum and the length, mixed.
pub(super) fn finish(len_bytes: usize, chunk_sum: u64) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write_usize(len_bytes);
    hasher.write_u64(chunk_sum);
    hasher.finish()
}

/// The hash of a disk whose directories are `dirs` (entries by path) and
/// whose files' lengths and content hashes `file` gives by inode
/// ([`DiskImage::hash`]: see the module doc).
pub(super) fn disk_hash(
    dirs: &BTreeMap<PathBuf, BTreeMap<String, InodeId>>,
    file: impl Fn(InodeId) -> (usize, u64),
) -> u64 {
    let mut hasher = DefaultHasher::new();
    for (path, entries) in dirs {
        path.hash(&mut hasher);
        entries.len().hash(&mut hasher);
        for (name, id) in entries {
            let (len_bytes, content_hash) = file(*id);
            name.hash(&mut hasher);
            len_bytes.hash(&mut hasher);
            content_hash.hash(&mut hasher);
        }
    }
    hasher.finish()
}

/// How many chunks `len_bytes` of content make (the last one maybe short).
pub(super) fn chunk_count(len_bytes: usize) -> usize {
    len_bytes.div_ceil(HASH_CHUNK_BYTES)
}

/// The bytes of `bytes`' chunk at `index` (the last one maybe short).
fn chunk(bytes: &[u8], index: usize) -> &[u8] {
    let start = index * HASH_CHUNK_BYTES;
    &bytes[start..(start + HASH_CHUNK_BYTES).min(bytes.len())]
}

/// The terms of all of `bytes`' chunks, in order.
fn chunk_terms(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    (0..chunk_count(bytes.len())).map(|index| chunk_term(bytes, index))
}

/// The term of `bytes`' chunk at `index`: its bytes hashed with its
/// index, so that equal chunks at different places differ.
pub(super) fn chunk_term(bytes: &[u8], index: usize) -> u64 {
    term_of(index, chunk(bytes, index))
}

/// The term of a chunk at `index` whose bytes are `chunk`.
pub(super) fn term_of(index: usize, chunk: &[u8]) -> u64 {
    debug_assert!(chunk.len() <= HASH_CHUNK_BYTES, "one chunk");
    let mut hasher = DefaultHasher::new();
    hasher.write_usize(index);
    hasher.write(chunk);
    hasher.finish()
}

impl DiskImage {
    /// The hash of what the engine can observe (see the module doc).
    pub fn hash(&self) -> u64 {
        disk_hash(&self.dirs, |id| {
            let file = &self.files[&id];
            (file.bytes.len(), file.hash.unwrap_or_else(|| content_hash(&file.bytes)))
        })
    }

    /// Every file as its full path and bytes, sorted by path.
    pub fn files(&self) -> Vec<(PathBuf, &[u8])> {
        let mut out = Vec::new();
        for (path, entries) in &self.dirs {
            for (name, id) in entries {
                out.push((path.join(name), &self.files[id].bytes[..]));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Every directory's path, sorted, empty ones included (a crash
    /// state written out as a real directory needs them).
    pub fn dir_paths(&self) -> Vec<&std::path::Path> {
        self.dirs.keys().map(PathBuf::as_path).collect()
    }

    /// The sum of the files' lengths.
    pub fn total_bytes(&self) -> u64 {
        self.files.values().map(|file| file.bytes.len() as u64).sum()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::data::DataOp;
    use super::*;
    use proptest::prelude::*;

    /// A write or a `set_len` somewhere in, across or past a file of up to
    /// a few chunks (`prefix_hash.rs`'s tests draw them too).
    pub(in super::super) fn op() -> impl Strategy<Value = DataOp> {
        prop_oneof![
            (0u64..20_000, proptest::collection::vec(any::<u8>(), 1..9_000))
                .prop_map(|(offset_bytes, data)| DataOp::Write { offset_bytes, data }),
            (0u64..20_000).prop_map(|len_bytes| DataOp::SetLen { len_bytes, seq: 0 }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A hash derived from the old bytes' over the range an operation
        /// dirtied is the new bytes' own: a crash state's image hashes as
        /// the same bytes read whole would.
        #[test]
        fn a_hash_after_a_change_is_the_hash_of_the_bytes_after_it(
            old in proptest::collection::vec(any::<u8>(), 0..17_000),
            op in op(),
        ) {
            let mut new = old.clone();
            op.apply(&mut new);
            let dirty = op.dirty_range(old.len() as u64);
            let dirty = dirty.start as usize..dirty.end as usize;
            let after = ContentHash::of(&old).after(&old, &new, std::slice::from_ref(&dirty));
            prop_assert_eq!(after, content_hash(&new));
            prop_assert_eq!(ContentHash::of(&new).finish(), content_hash(&new));
            if old != new {
                prop_assert_ne!(content_hash(&old), content_hash(&new));
            }
        }
    }

    /// The same bytes at another chunk, or one byte moved to another
    /// chunk, or trailing zeros: each is another content.
    #[test]
    fn chunks_are_bound_to_their_place_and_the_length_counts() {
        let chunk = HASH_CHUNK_BYTES;
        let mut a = vec![0u8; 2 * chunk];
        let mut b = a.clone();
        a[..chunk].fill(7);
        b[chunk..].fill(7);
        assert_ne!(content_hash(&a), content_hash(&b), "two chunks swapped");
        let mut c = vec![0u8; chunk];
        let mut d = c.clone();
        c[1] = 1;
        d[chunk - 1] = 1;
        assert_ne!(content_hash(&c), content_hash(&d));
        assert_ne!(content_hash(&[1, 2]), content_hash(&[1, 2, 0]));
        assert_ne!(content_hash(&[]), content_hash(&[0]));
        assert_eq!(content_hash(&a), content_hash(&a.clone()));
    }
}
