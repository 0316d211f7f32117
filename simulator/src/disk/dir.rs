//! A directory as the simulated disk keeps it: volatile and durable
//! entries (name to inode), and the entry changes between them.
//!
//! Each change names the inode it expects, so that the `reorder` crash
//! mode, which replays a subset of them, can tell when one no longer
//! applies (a rename whose source was never created) and skip it.

use std::collections::BTreeMap;

use super::data::InodeId;

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
}

impl DirOp {
    /// Apply to `entries` if the op's precondition holds there; `false`
    /// (and no change) if not.
    pub fn apply(&self, entries: &mut BTreeMap<String, InodeId>) -> bool {
        match self {
            DirOp::Link { name, inode, .. } => {
                entries.insert(name.clone(), *inode);
                true
            }
            DirOp::Unlink { name, inode, .. } => {
                if entries.get(name) != Some(inode) {
                    return false;
                }
                entries.remove(name);
                true
            }
            DirOp::Rename { from, to, inode, .. } => {
                if entries.get(from) != Some(inode) {
                    return false;
                }
                entries.remove(from);
                entries.insert(to.clone(), *inode);
                true
            }
        }
    }

    /// The inode whose name the change creates (a create or a rename);
    /// `None` for an unlink.
    pub fn names_inode(&self) -> Option<InodeId> {
        match self {
            DirOp::Link { inode, .. } | DirOp::Rename { inode, .. } => Some(*inode),
            DirOp::Unlink { .. } => None,
        }
    }

    /// The names the change touches.
    pub fn names(&self) -> Vec<&str> {
        match self {
            DirOp::Link { name, .. } | DirOp::Unlink { name, .. } => vec![name.as_str()],
            DirOp::Rename { from, to, .. } => vec![from.as_str(), to.as_str()],
        }
    }

    /// Its place among the disk's metadata changes (`FileSystem::meta_seq`).
    pub fn seq(&self) -> u64 {
        match self {
            DirOp::Link { seq, .. } | DirOp::Unlink { seq, .. } | DirOp::Rename { seq, .. } => *seq,
        }
    }

    /// The inode the change is about: it stays reachable while the change
    /// is pending, since a crash may yet apply it.
    pub fn inode(&self) -> InodeId {
        match self {
            DirOp::Link { inode, .. } | DirOp::Unlink { inode, .. } | DirOp::Rename { inode, .. } => *inode,
        }
    }
}

/// A directory's entries and its unsynced history.
#[derive(Debug, Default)]
pub(super) struct Dir {
    pub volatile: BTreeMap<String, InodeId>,
    pub durable: BTreeMap<String, InodeId>,
    pub pending: Vec<DirOp>,
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
            let kept = !unlinked_later && (!renames_only || matches!(op, DirOp::Rename { .. }));
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
            let applied = op.apply(&mut self.durable);
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
            let applied = op.apply(&mut self.durable);
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
            let applied = op.apply(&mut self.durable);
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
        let Some(last) = self.pending.iter().rposition(|op| op.inode() == id) else {
            return false;
        };
        let own_names: Vec<&str> = self.pending.iter().filter(|op| op.inode() == id).flat_map(DirOp::names).collect();
        let conflict = self.pending[..last]
            .iter()
            .filter(|op| op.inode() != id)
            .any(|op| op.names().iter().any(|name| own_names.contains(name)));
        if conflict {
            return false;
        }
        let (own, others): (Vec<DirOp>, Vec<DirOp>) =
            std::mem::take(&mut self.pending).into_iter().partition(|op| op.inode() == id);
        for op in &own {
            let applied = op.apply(&mut self.durable);
            assert!(applied, "a file's own changes apply in order");
        }
        self.pending = others;
        debug_assert!(self.pending_apply_to_volatile(), "what stays pending still leads to the volatile entries");
        true
    }

    /// Whether the pending changes, applied in order to the durable
    /// entries, give the volatile ones (the invariant of `state/mod.rs`).
    fn pending_apply_to_volatile(&self) -> bool {
        let mut entries = self.durable.clone();
        self.pending.iter().all(|op| op.apply(&mut entries)) && entries == self.volatile
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
        assert!(!DirOp::Unlink { name: "a".into(), inode: 2, seq: 0 }.apply(&mut map), "a names another inode");
        let rename =
            |from: &str, to: &str| DirOp::Rename { from: from.into(), to: to.into(), inode: 1, seq: 0, flushes: 0 };
        assert!(!rename("b", "c").apply(&mut map));
        assert_eq!(map, entries(&[("a", 1)]));
        assert!(rename("a", "b").apply(&mut map));
        assert_eq!(map, entries(&[("b", 1)]));
        assert!(DirOp::Link { name: "b".into(), inode: 7, seq: 0 }.apply(&mut map), "a link replaces");
        assert!(DirOp::Unlink { name: "b".into(), inode: 7, seq: 0 }.apply(&mut map));
        assert!(map.is_empty());
    }
}
