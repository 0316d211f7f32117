//! The disk a crash state leaves (`crash_states.rs` enumerates the
//! states): the directories settled first, since they decide which files
//! survive at all, then each surviving file's bytes — a prefix of its
//! pending operations, the next write maybe torn (its sector's rest a
//! fixed garbage pattern, or the file grown with none of it), or one
//! operation reordered. Apart from the enumeration because a state is
//! listed and counted many times for each one that is built into a disk.
//!
//! Exploration hashes every state it enumerates and recovers only the
//! distinct ones: [`DiskSnapshot::image_hashes`] gives the states' hashes
//! without building their images, a file that keeps a prefix of its
//! pending operations (the next maybe torn) hashed from its prefix hashes
//! (`prefix_hash.rs`), a reordered one from its durable bytes' hash over
//! the ranges its surviving operations dirtied (`image.rs`). In a debug
//! build every such hash is checked against the one its bytes give.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use super::crash_states::{CrashState, Cut, DataFate, Entries, Torn};
use super::data::{to_usize, write_into, DataOp, InodeId};
use super::dir::{DirOp, SubdirEntries};
use super::image::{disk_hash, DiskImage, ImageFile};
use super::moves;
use super::prefix_hash::PrefixHashes;
use super::sectors::sector_end;
use super::snapshot::{DiskSnapshot, FileSnapshot};
use super::state::place;

/// The fixed garbage a torn sector holds, by position in the file: not
/// random, so the same state always gives the same bytes; not constant,
/// so it does not pass for zero padding.
fn garbage_byte(offset_bytes: u64) -> u8 {
    (offset_bytes as u8).wrapping_mul(167) ^ 0x5a
}

impl DiskSnapshot {
    /// The disk `state` leaves: directories settled first (they decide
    /// which files survive at all), then each surviving file's bytes.
    pub fn image(&self, state: &CrashState) -> DiskImage {
        let (dirs, _) = self.settled_dirs(&state.dir_changes_kept);
        let mut files = BTreeMap::new();
        for id in dirs.values().flat_map(|entries| entries.values()) {
            if files.contains_key(id) {
                continue;
            }
            let (file, after) = self.file_in(state, *id);
            let image_file = match after.bytes {
                None => ImageFile { bytes: file.durable.clone(), hash: Some(file.durable_hash.finish()) },
                // Hashed on demand: an image built to be recovered never is.
                Some(bytes) => ImageFile { bytes: Arc::from(bytes), hash: None },
            };
            files.insert(*id, image_file);
        }
        DiskImage { dirs, files, histories: BTreeMap::new() }
    }

    /// `self.image(state).hash()`, without building the image (see
    /// [`DiskSnapshot::image_hashes`]).
    pub fn image_hash(&self, state: &CrashState) -> u64 {
        self.image_hashes(std::slice::from_ref(state))[0]
    }

    /// The hash of each of `states`' images, without building them: a file
    /// that keeps a prefix of its pending operations, the next maybe torn,
    /// is hashed from its prefix hashes (`prefix_hash.rs`), made once for
    /// all of `states` and dropped after them; a reordered file's new bytes
    /// are made only to be hashed, and dropped.
    pub fn image_hashes(&self, states: &[CrashState]) -> Vec<u64> {
        let mut prefixes = BTreeMap::new();
        states.iter().map(|state| self.image_hash_with(state, &mut prefixes)).collect()
    }

    fn image_hash_with(&self, state: &CrashState, prefixes: &mut BTreeMap<InodeId, PrefixHashes>) -> u64 {
        let (dirs, _) = self.settled_dirs(&state.dir_changes_kept);
        let mut files = BTreeMap::new();
        for id in dirs.values().flat_map(|entries| entries.values()) {
            files.entry(*id).or_insert_with(|| self.file_hash_in(state, *id, prefixes));
        }
        disk_hash(&dirs, |id| files[&id])
    }

    /// The length and content hash of file `id` in `state`.
    fn file_hash_in(
        &self,
        state: &CrashState,
        id: InodeId,
        prefixes: &mut BTreeMap<InodeId, PrefixHashes>,
    ) -> (usize, u64) {
        let file = self.files.get(&id).expect("a snapshot holds every inode an entry may name");
        let reordered = matches!(&state.data, DataFate::Reordered { inode, .. } if *inode == id);
        let hashed = match (!reordered).then(|| state.data.cut_of(id, file.pending.len())) {
            Some(Cut { whole_ops: 0, torn: None }) => (file.durable.len(), file.durable_hash.finish()),
            Some(Cut { whole_ops, torn }) => {
                let of_file = prefixes
                    .entry(id)
                    .or_insert_with(|| PrefixHashes::of(&file.durable_hash, &file.durable, &file.pending));
                match torn {
                    None => of_file.whole(whole_ops),
                    Some(torn) => of_file.torn(whole_ops, &file.pending[whole_ops], torn, self.sector_bytes),
                }
            }
            None => self.file_hash_from_bytes(state, id),
        };
        debug_assert_eq!(hashed, self.file_hash_from_bytes(state, id), "file {id:?} of {state:?}");
        hashed
    }

    /// [`DiskSnapshot::file_hash_in`], from the file's bytes in `state`.
    fn file_hash_from_bytes(&self, state: &CrashState, id: InodeId) -> (usize, u64) {
        let (file, after) = self.file_in(state, id);
        match &after.bytes {
            None => (file.durable.len(), file.durable_hash.finish()),
            Some(bytes) => (bytes.len(), file.durable_hash.after(&file.durable, bytes, &after.dirty)),
        }
    }

    /// The file `id` names, and what `state` leaves of it.
    fn file_in(&self, state: &CrashState, id: InodeId) -> (&FileSnapshot, FileAfter) {
        let file = self.files.get(&id).expect("a snapshot holds every inode an entry may name");
        let after = match &state.data {
            DataFate::Reordered { inode, op, alone } if *inode == id => reordered(file, *op, *alone),
            data => {
                let cut = data.cut_of(id, file.pending.len());
                file_after(file, cut.whole_ops, cut.torn, self.sector_bytes)
            }
        };
        (file, after)
    }

    /// Each directory's entries when the pending changes `kept` flags (one
    /// per change, directories by path) survive, in order — a change whose
    /// precondition no longer holds (a rename of a file whose creation was
    /// lost) is skipped — and every surviving rename that carries its
    /// file's data with it (`DirOp::Rename::flushes`): (inode, operations).
    pub(super) fn settled_dirs(&self, kept: &[bool]) -> (BTreeMap<PathBuf, Entries>, Vec<(InodeId, usize)>) {
        assert_eq!(kept.len(), self.pending_dir_changes(), "a state of this snapshot");
        let pending: Vec<&[DirOp]> = self.dirs.values().map(|dir| dir.pending.as_slice()).collect();
        let mut flags = kept.iter().copied();
        let mut kept: Vec<Vec<bool>> = pending.iter().map(|ops| flags.by_ref().take(ops.len()).collect()).collect();
        // A move across directories survives whole or not at all (`moves.rs`).
        moves::couple(&pending, &mut kept, self.profile.dir_changes_in_order);
        let mut settled: Vec<_> =
            self.dirs.values().map(|dir| (dir.durable.clone(), dir.subdirs_durable.clone())).collect();
        let applied = moves::apply_kept(&mut settled, &pending, &kept);
        let flushed = pending
            .iter()
            .zip(&applied)
            .flat_map(|(ops, applied)| ops.iter().zip(applied).filter(|(_, applied)| **applied))
            .filter_map(|(op, _)| op.carried_flushes())
            .collect();
        let mut dirs = BTreeMap::new();
        let mut subdirs = BTreeMap::new();
        for (path, (entries, children)) in self.dirs.keys().zip(settled) {
            dirs.insert(path.clone(), entries);
            subdirs.insert(path.clone(), children);
        }
        if self.dirs.values().any(|dir| dir.pending.iter().any(|op| op.moves_dirs())) {
            dirs = self.placed(dirs, &subdirs);
        }
        (dirs, flushed)
    }
}

impl DiskSnapshot {
    /// `dirs` (settled entries by the path each directory had) keyed by
    /// where the settled `subdirs` put each directory (`state::place`); a
    /// directory no entry reaches is gone.
    fn placed(
        &self,
        mut dirs: BTreeMap<PathBuf, Entries>,
        subdirs: &BTreeMap<PathBuf, SubdirEntries>,
    ) -> BTreeMap<PathBuf, Entries> {
        let keyed = self.dirs.iter().map(|(path, dir)| (path.as_path(), dir.id, dir.parent, &subdirs[path]));
        let places = place(keyed);
        let mut placed = BTreeMap::new();
        for (path, dir) in &self.dirs {
            if let Some(at) = places.get(&dir.id) {
                placed.insert(at.clone(), dirs.remove(path).expect("settled above"));
            }
        }
        placed
    }
}

/// The bytes of a write ending at `end_bytes`, cut at `cut_bytes`, that a
/// garbage variant overwrites: the rest of the cut's sector, no further
/// than the write reached.
pub(super) fn garbage_range(cut_bytes: u64, end_bytes: u64, sector_bytes: u64) -> Range<u64> {
    cut_bytes..sector_end(cut_bytes, sector_bytes).min(end_bytes)
}

/// `file` with only its pending operation `op` applied (`alone`), or
/// every one but `op`, in their order.
fn reordered(file: &FileSnapshot, op: usize, alone: bool) -> FileAfter {
    assert!(op < file.pending.len(), "an operation of this file");
    let mut bytes = file.durable.to_vec();
    let mut dirty = Dirty::new(file.durable.len());
    for (index, pending) in file.pending.iter().enumerate() {
        if (index == op) == alone {
            pending.apply(&mut bytes);
            dirty.note(pending);
        }
    }
    dirty.with_bytes(bytes)
}

/// The bytes a run of a file's pending operations may have changed, noted
/// operation by operation (`DataOp::dirty_range`, at the length each
/// found), for the image's hash ([`ContentHash::after`]).
///
/// [`ContentHash::after`]: super::image::ContentHash::after
struct Dirty {
    len_bytes: u64,
    ranges: Vec<Range<usize>>,
}

impl Dirty {
    /// Nothing changed yet in a file `len_bytes` long.
    fn new(len_bytes: usize) -> Dirty {
        Dirty { len_bytes: len_bytes as u64, ranges: Vec::new() }
    }

    /// `op` was applied (or, torn, a part of it: its whole range still
    /// holds every byte it changed).
    fn note(&mut self, op: &DataOp) {
        let range = op.dirty_range(self.len_bytes);
        self.ranges.push(to_usize(range.start)..to_usize(range.end));
        self.len_bytes = op.len_after(self.len_bytes);
    }

    /// `bytes`, the durable bytes changed only where noted.
    fn with_bytes(self, bytes: Vec<u8>) -> FileAfter {
        FileAfter { bytes: Some(bytes), dirty: self.ranges }
    }
}

/// One file's bytes in a crash state, and where they may differ from its
/// durable bytes (for [`ContentHash::after`]).
///
/// [`ContentHash::after`]: super::image::ContentHash::after
struct FileAfter {
    /// `None`: the durable bytes, as they were (shared, not copied).
    bytes: Option<Vec<u8>>,
    dirty: Vec<Range<usize>>,
}

/// `file`'s bytes when its first `whole_ops` pending ops survive and the
/// next is `torn`, if it is. With nothing surviving, the snapshot's bytes
/// are shared, not copied.
fn file_after(file: &FileSnapshot, whole_ops: usize, torn: Option<Torn>, sector_bytes: u64) -> FileAfter {
    if whole_ops == 0 && torn.is_none() {
        return FileAfter { bytes: None, dirty: Vec::new() };
    }
    let mut bytes = file.durable.to_vec();
    let mut dirty = Dirty::new(file.durable.len());
    for op in &file.pending[..whole_ops] {
        op.apply(&mut bytes);
        dirty.note(op);
    }
    if let Some(torn) = torn {
        let op = &file.pending[whole_ops];
        dirty.note(op);
        apply_torn(&mut bytes, 0, op, torn, sector_bytes);
    }
    dirty.with_bytes(bytes)
}

/// What of the write `op` lands when it is `torn`, applied to `bytes`: a
/// file's bytes from offset `base_bytes` on, to its end (or, for a write
/// inside the file, at least past the write's end).
pub(super) fn apply_torn(bytes: &mut Vec<u8>, base_bytes: u64, op: &DataOp, torn: Torn, sector_bytes: u64) {
    let DataOp::Write { offset_bytes, data } = op else { unreachable!("only a write is torn") };
    assert!(base_bytes <= *offset_bytes, "the bytes the write starts in");
    let at = |offset: u64| to_usize(offset - base_bytes);
    let end_bytes = offset_bytes + data.len() as u64;
    if torn.unwritten {
        assert!(*offset_bytes < torn.cut_bytes && torn.cut_bytes <= end_bytes, "a length the write reached");
        assert!(bytes.len() < at(torn.cut_bytes), "a length past the old end");
        bytes.resize(at(torn.cut_bytes), 0);
        return;
    }
    assert!(*offset_bytes <= torn.cut_bytes && torn.cut_bytes < end_bytes, "a cut inside the write");
    let kept = to_usize(torn.cut_bytes - offset_bytes);
    if kept > 0 {
        write_into(bytes, offset_bytes - base_bytes, &data[..kept]);
    }
    if torn.garbage {
        let range = garbage_range(torn.cut_bytes, end_bytes, sector_bytes);
        if bytes.len() < at(range.end) {
            bytes.resize(at(range.end), 0);
        }
        for offset in range {
            bytes[at(offset)] = garbage_byte(offset);
        }
    }
}
