//! The content hashes of one file's prefix crash states, made once per
//! snapshot: the file after each prefix of its pending operations, and
//! after each prefix with the next write torn.
//!
//! Exploration hashes every crash state it enumerates to recover only the
//! distinct ones. A file with n pending writes has n + 1 prefix states and
//! a few torn states per write; building each from the durable bytes
//! copied the whole file and rehashed the chunks of every write before its
//! cut: about n²/2 writes' chunks and n copies of the file per snapshot.
//! Here the operations are applied once, in order, each one's chunks
//! rehashed once ([`PrefixHashes::of`]); and before each write, the chunks
//! it may touch are kept as they were, so that a torn write is hashed from
//! those chunks alone ([`PrefixHashes::torn`]). Exploring redb, whose one
//! file takes a page write here and a header write there, spent a third of
//! its time on those copies and hashes (BENCHMARKS.md, issue 51's seventh
//! pass).

use super::crash_image::apply_torn;
use super::crash_states::Torn;
use super::data::{to_usize, DataOp};
use super::image::{chunk_count, chunk_term, finish, term_of, ContentHash, HASH_CHUNK_BYTES};

/// One file's prefix hashes (see the module doc).
#[derive(Debug)]
pub(super) struct PrefixHashes {
    /// The file's length and hash after its first `k` operations, at `[k]`.
    after: Vec<(usize, u64)>,
    /// What each write found where it wrote, for its torn variants
    /// (`None` for a `set_len`, which is never torn: a shrinking one would
    /// otherwise keep the file's whole tail).
    before: Vec<Option<Before>>,
}

/// The file just before one operation, where the operation may change it:
/// the chunks its dirty range reaches.
#[derive(Debug)]
struct Before {
    len_bytes: usize,
    chunk_sum: u64,
    /// The index of the first chunk the operation may change.
    first_chunk: usize,
    /// The file's bytes from that chunk's start to the end of the last
    /// chunk the operation may change, or to the file's end if nearer.
    bytes: Vec<u8>,
    /// The terms of the chunks `bytes` holds (the last one maybe short).
    terms: Vec<u64>,
}

impl PrefixHashes {
    /// The prefix hashes of a file whose durable bytes are `durable`
    /// (hashed as `hash`) and whose pending operations are `ops`.
    pub fn of(hash: &ContentHash, durable: &[u8], ops: &[DataOp]) -> PrefixHashes {
        debug_assert_eq!(hash.len_bytes, durable.len(), "the hash of `durable`");
        let mut bytes = durable.to_vec();
        let mut terms = hash.terms.to_vec();
        let mut chunk_sum = hash.chunk_sum;
        let mut after = Vec::with_capacity(ops.len() + 1);
        let mut before = Vec::with_capacity(ops.len());
        after.push((bytes.len(), hash.finish()));
        for op in ops {
            // The dirty range reaches the old end if the file shrinks and
            // the new end if it grows: every chunk whose bytes may differ.
            let dirty = op.dirty_range(bytes.len() as u64);
            let chunks = to_usize(dirty.start) / HASH_CHUNK_BYTES..chunk_count(to_usize(dirty.end));
            let kept = chunks.start * HASH_CHUNK_BYTES..(chunks.end * HASH_CHUNK_BYTES).min(bytes.len());
            before.push(matches!(op, DataOp::Write { .. }).then(|| Before {
                len_bytes: bytes.len(),
                chunk_sum,
                first_chunk: chunks.start,
                bytes: bytes.get(kept).map_or_else(Vec::new, <[u8]>::to_vec),
                terms: terms.get(chunks.start..chunks.end.min(terms.len())).map_or_else(Vec::new, <[u64]>::to_vec),
            }));
            op.apply(&mut bytes);
            chunk_sum = rehash(&bytes, &mut terms, chunk_sum, chunks);
            after.push((bytes.len(), finish(bytes.len(), chunk_sum)));
        }
        debug_assert_eq!(after.last().map(|a| a.1), Some(super::image::content_hash(&bytes)), "every chunk rehashed");
        PrefixHashes { after, before }
    }

    /// The file's length and hash after its first `whole_ops` operations.
    pub fn whole(&self, whole_ops: usize) -> (usize, u64) {
        self.after[whole_ops]
    }

    /// The file's length and hash after its first `whole_ops` operations
    /// and the next, `op`, `torn`: from the chunks `op` may touch alone.
    pub fn torn(&self, whole_ops: usize, op: &DataOp, torn: Torn, sector_bytes: u64) -> (usize, u64) {
        let before = self.before[whole_ops].as_ref().expect("only a write is torn");
        let base_bytes = before.first_chunk * HASH_CHUNK_BYTES;
        let mut window = before.bytes.clone();
        apply_torn(&mut window, base_bytes as u64, op, torn, sector_bytes);
        // A torn write never shortens the file; past the window it is as
        // it was.
        let len_bytes = before.len_bytes.max(base_bytes + window.len());
        let mut chunk_sum = before.terms.iter().fold(before.chunk_sum, |sum, term| sum.wrapping_sub(*term));
        for (offset, chunk) in window.chunks(HASH_CHUNK_BYTES).enumerate() {
            chunk_sum = chunk_sum.wrapping_add(term_of(before.first_chunk + offset, chunk));
        }
        (len_bytes, finish(len_bytes, chunk_sum))
    }
}

/// `chunk_sum` with the terms of `bytes`' chunks at `chunks` taken out as
/// `terms` has them and put back as they now read; `terms` updated, and
/// cut to `bytes`' chunk count.
fn rehash(bytes: &[u8], terms: &mut Vec<u64>, mut chunk_sum: u64, chunks: std::ops::Range<usize>) -> u64 {
    let new_chunks = chunk_count(bytes.len());
    for index in chunks {
        if let Some(old) = terms.get(index) {
            chunk_sum = chunk_sum.wrapping_sub(*old);
        }
        if index < new_chunks {
            let term = chunk_term(bytes, index);
            chunk_sum = chunk_sum.wrapping_add(term);
            match terms.get_mut(index) {
                Some(old) => *old = term,
                None => terms.push(term),
            }
        }
    }
    terms.truncate(new_chunks);
    debug_assert_eq!(terms.len(), new_chunks, "a term for every chunk");
    chunk_sum
}

#[cfg(test)]
mod tests {
    use super::super::image::content_hash;
    use super::super::image::tests::op;
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Every prefix hash is the hash of the bytes that prefix of the
        /// operations leaves, and every torn write's is the hash of the
        /// bytes it leaves after its prefix, lengths included.
        #[test]
        fn each_prefix_and_torn_hash_is_the_hash_of_its_bytes(
            durable in proptest::collection::vec(any::<u8>(), 0..17_000),
            ops in proptest::collection::vec(op(), 0..6),
            cut_fraction in 0.0f64..1.0,
            garbage in any::<bool>(),
        ) {
            let prefixes = PrefixHashes::of(&ContentHash::of(&durable), &durable, &ops);
            let mut bytes = durable.clone();
            prop_assert_eq!(prefixes.whole(0), (bytes.len(), content_hash(&bytes)));
            for (index, op) in ops.iter().enumerate() {
                if let DataOp::Write { offset_bytes, data } = op {
                    // A cut inside the write, at a sector boundary or its start.
                    let cut_bytes = offset_bytes + (data.len() as f64 * cut_fraction) as u64 / 512 * 512;
                    let torn = Torn { cut_bytes, garbage, unwritten: false };
                    let mut torn_bytes = bytes.clone();
                    apply_torn(&mut torn_bytes, 0, op, torn, 512);
                    prop_assert_eq!(prefixes.torn(index, op, torn, 512), (torn_bytes.len(), content_hash(&torn_bytes)));
                    let end_bytes = offset_bytes + data.len() as u64;
                    if (bytes.len() as u64) < end_bytes && *offset_bytes < end_bytes {
                        let unwritten = Torn { cut_bytes: end_bytes, garbage: false, unwritten: true };
                        let mut grown = bytes.clone();
                        apply_torn(&mut grown, 0, op, unwritten, 512);
                        prop_assert_eq!(prefixes.torn(index, op, unwritten, 512), (grown.len(), content_hash(&grown)));
                    }
                }
                op.apply(&mut bytes);
                prop_assert_eq!(prefixes.whole(index + 1), (bytes.len(), content_hash(&bytes)));
            }
        }
    }
}
