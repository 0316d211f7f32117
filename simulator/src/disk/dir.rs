//! A directory as the simulated disk keeps it: volatile and durable
//! entries (file name to inode, subdirectory name to directory), and the
//! entry changes between them.
//!
//! Each change names the inode (or directory) it expects, so that the
//! `reorder` crash mode, which replays a subset of them, can tell when one
//! no longer applies (a rename whose source was never created) and skip
//! it. A change that would give a name to a file and a directory at once
//! (a crash keeping a directory's rename onto a name whose file's unlink
//! it lost) does not apply either: no file system holds both.

use std::collections::BTreeMap;

use super::data::InodeId;

/// A directory's identity: it stays when a rename moves the directory, so
/// a crash can tell where each directory ended up (`state/tree.rs`).
pub(super) type DirId = u64;

/// A directory's file entries: name to inode.
pub(super) type FileEntries = BTreeMap<String, InodeId>;
/// A directory's subdirectory entries: name to directory.
pub(super) type SubdirEntries = BTreeMap<String, DirId>;

/// One unsynced change to a directory (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DirOp {
    /// `name` now refers to `inode`: a create.
    Link { name: String, inode: InodeId, seq: u64 },
    /// `name`, which referred to `inode`, is removed.
    Unlink { name: String, inode: InodeId, seq: u64 },
    /// `from`, which referred to `inode`, is now called `to`, replacing
    /// whatever `to` was: one atomic step. `flushes`: the file's first
    /// that many pending data operations reach the disk before the rename
    /// does, so a crash that keeps the rename keeps them (ext4's
    /// `auto_da_alloc`, `FileSystem::rename`); 0 on every other profile.
    Rename { from: String, to: String, inode: InodeId, seq: u64, flushes: usize },
    /// The empty directory `name` (`dir`) is removed.
    RemoveDir { name: String, dir: DirId, seq: u64 },
    /// Directory `from` (`dir`), with everything under it, is now called
    /// `to`, replacing the empty directory `replaced` if there was one:
    /// one atomic step.
    RenameDir { from: String, to: String, dir: DirId, replaced: Option<DirId>, seq: u64 },
    /// A move across directories, the source's half: `name` (`moved`)
    /// leaves this directory. Its other half is the destination's
    /// `MoveIn` with the same `seq`: a crash keeps both or neither, and
    /// whatever makes one durable makes the other durable (`moves.rs`).
    MoveOut { name: String, moved: Moved, seq: u64 },
    /// A move across directories, the destination's half: `moved` is now
    /// called `name` here, replacing the file there (a file moved) or the
    /// empty directory `replaced` (a directory moved). `flushes` as for
    /// `Rename` (ext4's `auto_da_alloc` on a file replacing a file).
    MoveIn { name: String, moved: Moved, replaced: Option<DirId>, seq: u64, flushes: usize },
}

/// What a move across directories carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Moved {
    File(InodeId),
    Dir(DirId),
}

impl DirOp {
    /// Apply to a directory's `files` and `subdirs` if the op's
    /// precondition holds there; `false` (and no change) if not.
    pub fn apply(&self, files: &mut FileEntries, subdirs: &mut SubdirEntries) -> bool {
        match self {
            DirOp::Link { name, inode, .. } => {
                if subdirs.contains_key(name) {
                    return false;
                }
                files.insert(name.clone(), *inode);
                true
            }
            DirOp::Unlink { name, inode, .. } => {
                if files.get(name) != Some(inode) {
                    return false;
                }
                files.remove(name);
                true
            }
            DirOp::Rename { from, to, inode, .. } => {
                if files.get(from) != Some(inode) || subdirs.contains_key(to) {
                    return false;
                }
                files.remove(from);
                files.insert(to.clone(), *inode);
                true
            }
            DirOp::RemoveDir { name, dir, .. } => subdirs.get(name) == Some(dir) && subdirs.remove(name).is_some(),
            DirOp::RenameDir { from, to, dir, replaced, .. } => {
                let target_free = subdirs.get(to).is_none_or(|there| Some(*there) == *replaced);
                if subdirs.get(from) != Some(dir) || !target_free || files.contains_key(to) {
                    return false;
                }
                subdirs.remove(from);
                subdirs.insert(to.clone(), *dir);
                true
            }
            DirOp::MoveOut { name, moved: Moved::File(inode), .. } => {
                files.get(name) == Some(inode) && files.remove(name).is_some()
            }
            DirOp::MoveOut { name, moved: Moved::Dir(dir), .. } => {
                subdirs.get(name) == Some(dir) && subdirs.remove(name).is_some()
            }
            DirOp::MoveIn { name, moved: Moved::File(inode), .. } => {
                if subdirs.contains_key(name) {
                    return false;
                }
                files.insert(name.clone(), *inode);
                true
            }
            DirOp::MoveIn { name, moved: Moved::Dir(dir), replaced, .. } => {
                let target_free = subdirs.get(name).is_none_or(|there| Some(*there) == *replaced);
                if !target_free || files.contains_key(name) {
                    return false;
                }
                subdirs.insert(name.clone(), *dir);
                true
            }
        }
    }

    /// Whether [`DirOp::apply`] would apply (a move's halves apply only
    /// together, `moves.rs`).
    pub fn applies(&self, files: &FileEntries, subdirs: &SubdirEntries) -> bool {
        self.apply(&mut files.clone(), &mut subdirs.clone())
    }

    /// The file data a surviving rename carries (`Rename::flushes`,
    /// `MoveIn::flushes`): (inode, operations), where it carries any.
    pub fn carried_flushes(&self) -> Option<(InodeId, usize)> {
        match self {
            DirOp::Rename { inode, flushes, .. } | DirOp::MoveIn { moved: Moved::File(inode), flushes, .. }
                if *flushes > 0 =>
            {
                Some((*inode, *flushes))
            }
            _ => None,
        }
    }

    /// The change as a report names it.
    pub fn describe(&self) -> String {
        match self {
            DirOp::Link { name, .. } => format!("create {name}"),
            DirOp::Unlink { name, .. } => format!("unlink {name}"),
            DirOp::Rename { from, to, .. } => format!("rename {from} -> {to}"),
            DirOp::RemoveDir { name, .. } => format!("rmdir {name}"),
            DirOp::RenameDir { from, to, .. } => format!("rename directory {from} -> {to}"),
            DirOp::MoveOut { name, .. } => format!("move {name} out (to another directory)"),
            DirOp::MoveIn { name, .. } => format!("move {name} in (from another directory)"),
        }
    }

    /// The number a move's two halves share; `None` for any other change.
    pub fn move_seq(&self) -> Option<u64> {
        match self {
            DirOp::MoveOut { seq, .. } | DirOp::MoveIn { seq, .. } => Some(*seq),
            _ => None,
        }
    }

    /// The inode whose name the change creates (a create or a rename);
    /// `None` for an unlink.
    pub fn names_inode(&self) -> Option<InodeId> {
        match self {
            DirOp::Link { inode, .. }
            | DirOp::Rename { inode, .. }
            | DirOp::MoveIn { moved: Moved::File(inode), .. } => Some(*inode),
            DirOp::Unlink { .. }
            | DirOp::RemoveDir { .. }
            | DirOp::RenameDir { .. }
            | DirOp::MoveOut { .. }
            | DirOp::MoveIn { moved: Moved::Dir(_), .. } => None,
        }
    }

    /// The names the change touches.
    pub fn names(&self) -> Vec<&str> {
        match self {
            DirOp::Link { name, .. }
            | DirOp::Unlink { name, .. }
            | DirOp::RemoveDir { name, .. }
            | DirOp::MoveOut { name, .. }
            | DirOp::MoveIn { name, .. } => vec![name.as_str()],
            DirOp::Rename { from, to, .. } | DirOp::RenameDir { from, to, .. } => vec![from.as_str(), to.as_str()],
        }
    }

    /// Its place among the disk's metadata changes (`FileSystem::meta_seq`).
    pub fn seq(&self) -> u64 {
        match self {
            DirOp::Link { seq, .. }
            | DirOp::Unlink { seq, .. }
            | DirOp::Rename { seq, .. }
            | DirOp::RemoveDir { seq, .. }
            | DirOp::RenameDir { seq, .. }
            | DirOp::MoveOut { seq, .. }
            | DirOp::MoveIn { seq, .. } => *seq,
        }
    }

    /// The file the change is about: it stays reachable while the change
    /// is pending, since a crash may yet apply it. `None` for a change of
    /// a subdirectory.
    pub fn inode(&self) -> Option<InodeId> {
        match self {
            DirOp::Link { inode, .. } | DirOp::Unlink { inode, .. } | DirOp::Rename { inode, .. } => Some(*inode),
            DirOp::MoveOut { moved: Moved::File(inode), .. } | DirOp::MoveIn { moved: Moved::File(inode), .. } => {
                Some(*inode)
            }
            DirOp::RemoveDir { .. } | DirOp::RenameDir { .. } | DirOp::MoveOut { .. } | DirOp::MoveIn { .. } => None,
        }
    }

    /// Whether the change removes or moves a directory (a crash may then
    /// leave directories elsewhere than they are now).
    pub fn moves_dirs(&self) -> bool {
        matches!(
            self,
            DirOp::RemoveDir { .. }
                | DirOp::RenameDir { .. }
                | DirOp::MoveOut { moved: Moved::Dir(_), .. }
                | DirOp::MoveIn { moved: Moved::Dir(_), .. }
        )
    }

    /// The directory a pending change took off the tree (a removal, or an
    /// empty directory a rename replaced): kept aside while the change is
    /// pending, since a crash that loses it brings the directory back.
    pub fn detached_dir(&self) -> Option<DirId> {
        match self {
            DirOp::RemoveDir { dir, .. } => Some(*dir),
            DirOp::RenameDir { replaced, .. } | DirOp::MoveIn { replaced, .. } => *replaced,
            DirOp::Link { .. } | DirOp::Unlink { .. } | DirOp::Rename { .. } | DirOp::MoveOut { .. } => None,
        }
    }
}

/// One name in a directory as a read sees it now, borrowed from the
/// disk's state ([`super::SimVfs::visit_entries`]).
#[derive(Clone, Copy, Debug)]
pub struct EntryNow<'a> {
    /// The entry's name.
    pub name: &'a str,
    /// The inode the name binds now.
    pub inode: u64,
    pub(super) durable_entries: &'a FileEntries,
}

impl EntryNow<'_> {
    /// Whether the same name binds the same inode in the durable
    /// directory too: whether a power loss now would keep this entry in
    /// every crash mode. A lookup, so asked only where it is needed.
    pub fn durable(&self) -> bool {
        self.durable_entries.get(self.name) == Some(&self.inode)
    }
}

/// A directory's entries and its unsynced history.
#[derive(Debug, Default)]
pub(super) struct Dir {
    pub volatile: FileEntries,
    pub durable: FileEntries,
    /// Its subdirectories now, and as a crash with nothing pending would
    /// leave them. A new directory is in both at once (durable from its
    /// creation, see `FileSystem::create_dir_all`).
    pub subdirs_volatile: SubdirEntries,
    pub subdirs_durable: SubdirEntries,
    pub pending: Vec<DirOp>,
    pub id: DirId,
    /// The directory holding it now, `None` for a root (a directory whose
    /// parent the disk does not hold). A move across directories changes
    /// it, and a crash sets it again from where the directory landed.
    pub parent: Option<DirId>,
    /// Taken off the tree by a pending removal or replacing rename
    /// (`state/tree.rs`): no path reaches it until a crash brings it back.
    pub detached: bool,
}

impl Dir {
    /// The pending changes that name an inode (creates and renames, or
    /// renames alone with `renames_only`) and that no later pending unlink
    /// of that inode took back: a file the program created (or renamed)
    /// and then unlinked, both still pending, is one it threw away, not
    /// one whose name anything waits for (a temp file removed after a
    /// failed rename: FJALL.md, finding 4, seed 835).
    pub fn pending_names(&self, renames_only: bool) -> impl Iterator<Item = &DirOp> + '_ {
        let pending = &self.pending;
        pending.iter().enumerate().filter_map(move |(at, op)| {
            let inode = op.names_inode()?;
            let unlinked_later =
                pending[at + 1..].iter().any(|later| matches!(later, DirOp::Unlink { inode: i, .. } if *i == inode));
            let renamed = matches!(op, DirOp::Rename { .. } | DirOp::MoveIn { .. });
            let kept = !unlinked_later && (!renames_only || renamed);
            kept.then_some(op)
        })
    }

    /// A journal's fsync of inode `id` (`FsyncNames::JournalPrefix`): the
    /// pending changes up to and including the last that names `id` become
    /// durable, in order. Whether anything changed.
    pub fn persist_prefix_naming(&mut self, id: InodeId) -> bool {
        let Some(last) = self.pending.iter().rposition(|op| op.names_inode() == Some(id)) else {
            return false;
        };
        for op in self.pending.drain(..=last) {
            let applied = op.apply(&mut self.durable, &mut self.subdirs_durable);
            assert!(applied, "a prefix of pending ops applies in order");
        }
        true
    }

    /// The other half of move `seq` became durable: this directory's
    /// half becomes durable too — alone, where no earlier pending change
    /// touches its name and it applies to the durable entries (the least
    /// a file system that commits the move as one step must keep);
    /// otherwise with every pending change before it, in order. Whether
    /// anything changed.
    pub fn persist_move_half(&mut self, seq: u64) -> bool {
        let Some(at) = self.pending.iter().position(|op| op.move_seq() == Some(seq)) else {
            return false;
        };
        let names = self.pending[at].names();
        let touched = self.pending[..at].iter().any(|op| op.names().iter().any(|name| names.contains(name)));
        if touched || !self.pending[at].applies(&self.durable, &self.subdirs_durable) {
            for op in self.pending.drain(..=at) {
                let applied = op.apply(&mut self.durable, &mut self.subdirs_durable);
                assert!(applied, "a prefix of pending ops applies in order");
            }
            return true;
        }
        let half = self.pending.remove(at);
        let applied = half.apply(&mut self.durable, &mut self.subdirs_durable);
        debug_assert!(applied, "checked above");
        debug_assert!(self.pending_apply_to_volatile(), "what stays pending still leads to the volatile entries");
        true
    }

    /// A directory is created as `name`, durable at once: the pending
    /// changes up to and including the last that touches `name` become
    /// durable first, in order (a journal commits them before the
    /// creation). Whether anything changed.
    pub fn persist_prefix_through_name(&mut self, name: &str) -> bool {
        let Some(last) = self.pending.iter().rposition(|op| op.names().contains(&name)) else {
            return false;
        };
        for op in self.pending.drain(..=last) {
            let applied = op.apply(&mut self.durable, &mut self.subdirs_durable);
            assert!(applied, "a prefix of pending ops applies in order");
        }
        true
    }

    /// A journal committed every metadata change numbered below `seq`
    /// (`FsProfile::set_len_journaled`): the pending changes made before
    /// it become durable, in order. They are a prefix: under a profile
    /// with that rule, changes leave the pending list only as a prefix
    /// (`persist_prefix_naming`, `persist_prefix_to_create`, a directory
    /// fsync), so it stays in the order they were made. Whether anything
    /// changed.
    pub fn persist_before(&mut self, seq: u64) -> bool {
        let before = self.pending.iter().take_while(|op| op.seq() < seq).count();
        debug_assert!(self.pending[before..].iter().all(|op| op.seq() > seq), "pending changes in the order made");
        for op in self.pending.drain(..before) {
            let applied = op.apply(&mut self.durable, &mut self.subdirs_durable);
            assert!(applied, "a prefix of pending ops applies in order");
        }
        before > 0
    }

    /// ext4's fdatasync of inode `id` (`FsyncNames::JournalPrefixToCreate`):
    /// the pending changes up to and including `id`'s create (its `Link`)
    /// become durable, in order; a later rename of it stays pending.
    /// Whether anything changed.
    pub fn persist_prefix_to_create(&mut self, id: InodeId) -> bool {
        let created = |op: &DirOp| matches!(op, DirOp::Link { inode, .. } if *inode == id);
        let Some(last) = self.pending.iter().rposition(created) else {
            return false;
        };
        for op in self.pending.drain(..=last) {
            let applied = op.apply(&mut self.durable, &mut self.subdirs_durable);
            assert!(applied, "a prefix of pending ops applies in order");
        }
        true
    }

    /// A log tree's fsync of inode `id` (`FsyncNames::OwnChanges`): the
    /// pending changes about `id` become durable, in order, the others
    /// stay pending — unless another change made before one of them
    /// touches a name they touch (then their order matters and nothing is
    /// made durable). Whether anything changed.
    pub fn persist_own_changes(&mut self, id: InodeId) -> bool {
        let Some(last) = self.pending.iter().rposition(|op| op.inode() == Some(id)) else {
            return false;
        };
        let own_names: Vec<&str> =
            self.pending.iter().filter(|op| op.inode() == Some(id)).flat_map(DirOp::names).collect();
        let conflict = self.pending[..last]
            .iter()
            .filter(|op| op.inode() != Some(id))
            .any(|op| op.names().iter().any(|name| own_names.contains(name)));
        if conflict {
            return false;
        }
        let (own, others): (Vec<DirOp>, Vec<DirOp>) =
            std::mem::take(&mut self.pending).into_iter().partition(|op| op.inode() == Some(id));
        for op in &own {
            let applied = op.apply(&mut self.durable, &mut self.subdirs_durable);
            assert!(applied, "a file's own changes apply in order");
        }
        self.pending = others;
        debug_assert!(self.pending_apply_to_volatile(), "what stays pending still leads to the volatile entries");
        true
    }

    /// Whether the pending changes, applied in order to the durable
    /// entries, give the volatile ones (the invariant of `state/mod.rs`).
    fn pending_apply_to_volatile(&self) -> bool {
        let (mut files, mut subdirs) = (self.durable.clone(), self.subdirs_durable.clone());
        self.pending.iter().all(|op| op.apply(&mut files, &mut subdirs))
            && files == self.volatile
            && subdirs == self.subdirs_volatile
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(&str, InodeId)]) -> BTreeMap<String, InodeId> {
        pairs.iter().map(|(name, id)| (name.to_string(), *id)).collect()
    }

    #[test]
    fn dir_ops_check_their_preconditions() {
        let mut map = entries(&[("a", 1)]);
        let mut subdirs = SubdirEntries::new();
        let unlink = DirOp::Unlink { name: "a".into(), inode: 2, seq: 0 };
        assert!(!unlink.apply(&mut map, &mut subdirs), "a names another inode");
        let rename =
            |from: &str, to: &str| DirOp::Rename { from: from.into(), to: to.into(), inode: 1, seq: 0, flushes: 0 };
        assert!(!rename("b", "c").apply(&mut map, &mut subdirs));
        assert_eq!(map, entries(&[("a", 1)]));
        assert!(rename("a", "b").apply(&mut map, &mut subdirs));
        assert_eq!(map, entries(&[("b", 1)]));
        let link = DirOp::Link { name: "b".into(), inode: 7, seq: 0 };
        assert!(link.apply(&mut map, &mut subdirs), "a link replaces");
        assert!(DirOp::Unlink { name: "b".into(), inode: 7, seq: 0 }.apply(&mut map, &mut subdirs));
        assert!(map.is_empty());
    }

    #[test]
    fn directory_changes_check_their_preconditions() {
        let mut files = entries(&[("f", 1)]);
        let mut subdirs: SubdirEntries = [("d".to_string(), 10), ("e".to_string(), 11)].into();
        let rename_dir = |from: &str, to: &str, replaced| DirOp::RenameDir {
            from: from.into(),
            to: to.into(),
            dir: 10,
            replaced,
            seq: 0,
        };
        assert!(!rename_dir("d", "e", None).apply(&mut files, &mut subdirs), "e is another directory");
        assert!(!rename_dir("d", "f", None).apply(&mut files, &mut subdirs), "f is a file");
        assert!(!rename_dir("x", "y", None).apply(&mut files, &mut subdirs), "no d called x");
        assert!(rename_dir("d", "e", Some(11)).apply(&mut files, &mut subdirs), "replaces the empty e");
        assert_eq!(subdirs, [("e".to_string(), 10)].into());
        let link = DirOp::Link { name: "e".into(), inode: 2, seq: 0 };
        assert!(!link.apply(&mut files, &mut subdirs), "no file takes a directory's name");
        assert!(!DirOp::RemoveDir { name: "e".into(), dir: 11, seq: 0 }.apply(&mut files, &mut subdirs));
        assert!(DirOp::RemoveDir { name: "e".into(), dir: 10, seq: 0 }.apply(&mut files, &mut subdirs));
        assert!(subdirs.is_empty() && files == entries(&[("f", 1)]));
    }
}
