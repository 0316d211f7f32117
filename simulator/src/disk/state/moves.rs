//! Renames across directories on the live disk: a file's or a
//! directory's move is two pending changes, the source's
//! `DirOp::MoveOut` and the destination's `DirOp::MoveIn` with one
//! `seq`, and they become durable together.
//!
//! Every rule that makes a directory's changes durable (its `sync_dir`,
//! a file's fsync under the profile's `FsyncNames`, a journaled
//! `set_len`, a directory's creation) works on one directory at a time;
//! afterwards [`FileSystem::persist_split_moves`] finds each move one of
//! whose halves became durable and makes the other durable too: alone
//! where nothing pending before it in that directory touches its name,
//! else with every change made before it there (`Dir::persist_move_half`;
//! a journal commits all of them, so the model keeps less than ext4 and
//! XFS, never more). So either parent's fsync makes a move durable, and a
//! move is never durable in one parent alone: every kernel probed did
//! that (FILESYSTEMS.md, probes `xdir_rename`, `xdir_rename_source`). A
//! crash keeps a move whole or not at all (`disk/moves.rs`).

use std::io;
use std::path::{Path, PathBuf};

use super::super::data::InodeId;
use super::super::dir::{DirId, DirOp, Moved};
use super::paths::split;
use super::FileSystem;

impl FileSystem {
    /// `rename` of the file `id` at `from` to `to` in another directory
    /// (the caller checked both and that `to` is not a directory):
    /// replaces the file at `to`. Under `auto_da_alloc` a replacing move
    /// carries the file's delayed data as a rename within a directory does
    /// (`FileSystem::renaming_file`).
    pub(super) fn move_file(&mut self, from: &Path, to: &Path, id: InodeId, auto_da_alloc: bool) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        let flushes = self.renaming_file(id, to_dir, to_name, auto_da_alloc)?;
        let seq = self.next_meta_seq();
        let source = self.dir_mut(from_dir)?;
        source.volatile.remove(from_name);
        source.pending.push(DirOp::MoveOut { name: from_name.to_string(), moved: Moved::File(id), seq });
        let destination = self.dir_mut(to_dir)?;
        destination.volatile.insert(to_name.to_string(), id);
        let name = to_name.to_string();
        destination.pending.push(DirOp::MoveIn { name, moved: Moved::File(id), replaced: None, seq, flushes });
        self.moves_made = true;
        self.version += 1;
        Ok(())
    }

    /// `rename` of the directory `id` at `from`, with everything under
    /// it, to `to` in another directory (the caller checked the kernel's
    /// errors), replacing the empty directory `replaced` if there is one.
    pub(super) fn move_dir(&mut self, from: &Path, to: &Path, id: DirId, replaced: Option<DirId>) -> io::Result<()> {
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        let to_parent = self.dir(to_dir)?.id;
        let to_key = self.dir_key(to_parent).join(to_name);
        let seq = self.next_meta_seq();
        if let Some(replaced) = replaced {
            self.detach(to, replaced);
        }
        self.move_subtree(from, to_key.clone());
        self.dirs.get_mut(&to_key).expect("just moved there").parent = Some(to_parent);
        let source = self.dir_mut(from_dir)?;
        source.subdirs_volatile.remove(from_name);
        source.pending.push(DirOp::MoveOut { name: from_name.to_string(), moved: Moved::Dir(id), seq });
        let destination = self.dir_mut(to_dir)?;
        destination.subdirs_volatile.insert(to_name.to_string(), id);
        let name = to_name.to_string();
        destination.pending.push(DirOp::MoveIn { name, moved: Moved::Dir(id), replaced, seq, flushes: 0 });
        self.tree_changed = true;
        self.moves_made = true;
        self.version += 1;
        Ok(())
    }

    /// The key the directory `id` is kept under.
    fn dir_key(&self, id: DirId) -> PathBuf {
        let found = self.dirs.iter().find(|(_, dir)| dir.id == id);
        found.expect("a directory the disk holds").0.clone()
    }

    /// Some changes became durable: each move left pending in one parent
    /// only becomes durable there too, with the changes before it (see
    /// the module doc). Whether anything changed.
    pub(super) fn persist_split_moves(&mut self) -> bool {
        if !self.moves_made {
            return false;
        }
        let mut changed = false;
        while let Some(seq) = self.split_move() {
            let dir = self.dirs.values_mut().find(|dir| dir.pending.iter().any(|op| op.move_seq() == Some(seq)));
            let persisted = dir.expect("a split move's pending half").persist_move_half(seq);
            debug_assert!(persisted, "the half was pending");
            changed = true;
        }
        if changed {
            self.version += 1;
        }
        changed
    }

    /// A move one of whose halves is pending and the other not, if any.
    fn split_move(&self) -> Option<u64> {
        let mut seqs: Vec<u64> =
            self.dirs.values().flat_map(|dir| dir.pending.iter().filter_map(DirOp::move_seq)).collect();
        seqs.sort_unstable();
        let mut at = 0;
        while at < seqs.len() {
            if seqs.get(at + 1) == Some(&seqs[at]) {
                at += 2;
            } else {
                return Some(seqs[at]);
            }
        }
        None
    }
}
