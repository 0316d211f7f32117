//! A directory as the simulated disk keeps it: volatile and durable
//! entries (name to inode), and the entry changes between them.
//!
//! Each change names the inode it expects, so that the `reorder` crash
//! mode, which replays a subset of them, can tell when one no longer
//! applies (a rename whose source was never created) and skip it.

use std::collections::BTreeMap;

use super::inode::InodeId;

/// One unsynced change to a directory (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DirOp {
    /// `name` now refers to `inode`: a create.
    Link { name: String, inode: InodeId },
    /// `name`, which referred to `inode`, is removed.
    Unlink { name: String, inode: InodeId },
    /// `from`, which referred to `inode`, is now called `to`, replacing
    /// whatever `to` was: one atomic step.
    Rename { from: String, to: String, inode: InodeId },
}

impl DirOp {
    /// Apply to `entries` if the op's precondition holds there; `false`
    /// (and no change) if not.
    pub fn apply(&self, entries: &mut BTreeMap<String, InodeId>) -> bool {
        match self {
            DirOp::Link { name, inode } => {
                entries.insert(name.clone(), *inode);
                true
            }
            DirOp::Unlink { name, inode } => {
                if entries.get(name) != Some(inode) {
                    return false;
                }
                entries.remove(name);
                true
            }
            DirOp::Rename { from, to, inode } => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(pairs: &[(&str, InodeId)]) -> BTreeMap<String, InodeId> {
        pairs.iter().map(|(name, id)| (name.to_string(), *id)).collect()
    }

    #[test]
    fn dir_ops_check_their_preconditions() {
        let mut map = entries(&[("a", 1)]);
        assert!(!DirOp::Unlink { name: "a".into(), inode: 2 }.apply(&mut map), "a names another inode");
        assert!(!DirOp::Rename { from: "b".into(), to: "c".into(), inode: 1 }.apply(&mut map));
        assert_eq!(map, entries(&[("a", 1)]));
        assert!(DirOp::Rename { from: "a".into(), to: "b".into(), inode: 1 }.apply(&mut map));
        assert_eq!(map, entries(&[("b", 1)]));
        assert!(DirOp::Link { name: "b".into(), inode: 7 }.apply(&mut map), "a link replaces");
        assert!(DirOp::Unlink { name: "b".into(), inode: 7 }.apply(&mut map));
        assert!(map.is_empty());
    }
}
