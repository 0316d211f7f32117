//! The disk a crash state leaves (`crash_states.rs` enumerates the
//! states): the directories settled first, since they decide which files
//! survive at all, then each surviving file's bytes — a prefix of its
//! pending operations, the next write maybe torn (its sector's rest a
//! fixed garbage pattern, or the file grown with none of it), or one
//! operation reordered. Apart from the enumeration because a state is
//! listed and counted many times for each one that is built into a disk.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use super::crash_states::{CrashState, DataFate, Entries, Torn};
use super::data::{to_usize, write_into, DataOp, InodeId};
use super::dir::{DirOp, SubdirEntries};
use super::image::{DiskImage, ImageFile};
use super::moves;
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
            let file = self.files.get(id).expect("a snapshot holds every inode an entry may name");
            let image_file = match &state.data {
                DataFate::Reordered { inode, op, alone } if inode == id => reordered(file, *op, *alone),
                data => {
                    let cut = data.cut_of(*id, file.pending.len());
                    file_after(file, cut.whole_ops, cut.torn, self.sector_bytes)
                }
            };
            files.insert(*id, image_file);
        }
        DiskImage { dirs, files, histories: BTreeMap::new() }
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
fn reordered(file: &FileSnapshot, op: usize, alone: bool) -> ImageFile {
    assert!(op < file.pending.len(), "an operation of this file");
    let mut bytes = file.durable.to_vec();
    for (index, pending) in file.pending.iter().enumerate() {
        if (index == op) == alone {
            pending.apply(&mut bytes);
        }
    }
    ImageFile::new(bytes)
}

/// `file`'s bytes when its first `whole_ops` pending ops survive and the
/// next is `torn`, if it is. With nothing surviving, the snapshot's bytes
/// are shared, not copied.
fn file_after(file: &FileSnapshot, whole_ops: usize, torn: Option<Torn>, sector_bytes: u64) -> ImageFile {
    if whole_ops == 0 && torn.is_none() {
        return ImageFile { bytes: file.durable.clone(), hash: Some(file.durable_hash) };
    }
    let mut bytes = file.durable.to_vec();
    for op in &file.pending[..whole_ops] {
        op.apply(&mut bytes);
    }
    if let Some(torn) = torn {
        let DataOp::Write { offset_bytes, data } = &file.pending[whole_ops] else {
            unreachable!("only a write is torn")
        };
        let end_bytes = offset_bytes + data.len() as u64;
        if torn.unwritten {
            assert!(*offset_bytes < torn.cut_bytes && torn.cut_bytes <= end_bytes, "a length the write reached");
            assert!(bytes.len() < to_usize(torn.cut_bytes), "a length past the old end");
            bytes.resize(to_usize(torn.cut_bytes), 0);
            return ImageFile::new(bytes);
        }
        assert!(*offset_bytes <= torn.cut_bytes && torn.cut_bytes < end_bytes, "a cut inside the write");
        let kept = to_usize(torn.cut_bytes - offset_bytes);
        if kept > 0 {
            write_into(&mut bytes, *offset_bytes, &data[..kept]);
        }
        if torn.garbage {
            let range = garbage_range(torn.cut_bytes, end_bytes, sector_bytes);
            if bytes.len() < to_usize(range.end) {
                bytes.resize(to_usize(range.end), 0);
            }
            for offset in range {
                bytes[to_usize(offset)] = garbage_byte(offset);
            }
        }
    }
    ImageFile::new(bytes)
}
