//! Data a rename carries: with ext4's `auto_da_alloc`, a rename that
//! replaces a file writes the renamed file's delayed data before the
//! journal commit that names it (`DirOp::Rename::flushes`), so whatever
//! makes that rename durable (a directory sync, a file's fsync under a
//! profile that commits names) makes that data durable too. Which data a
//! rename carries, how a sync flushes it, and how a data sync releases it.
//! Apart from the rest of the file system because only that profile rule
//! needs it: a disk that never made such a rename pays nothing here.

use super::super::data::{DataOp, InodeId};
use super::super::dir::{DirOp, Moved};
use super::FileSystem;

impl FileSystem {
    /// How many of `id`'s pending data operations ext4's `auto_da_alloc`
    /// surely writes before a rename replacing a file with it commits
    /// (`ext4_rename` allocates the file's delayed blocks first, and
    /// `data=ordered` writes newly allocated blocks before the commit that
    /// names them): all of them where the file has nothing durable and
    /// only writes pending, no two in one 4 KiB block; else none. A block
    /// written back between two writes to it would hold the first's bytes
    /// only (no longer delayed, it is not ordered again), so the rule
    /// claims nothing there.
    pub(super) fn delayed_ops(&self, id: InodeId) -> usize {
        const BLOCK_BYTES: u64 = 4096;
        let inode = self.inode(id);
        if !inode.durable.is_empty() {
            return 0;
        }
        let mut blocks = std::collections::BTreeSet::new();
        for op in &inode.pending {
            let DataOp::Write { offset_bytes, data } = op else { return 0 };
            if data.is_empty() {
                continue;
            }
            let last = (offset_bytes + data.len() as u64 - 1) / BLOCK_BYTES;
            if !(offset_bytes / BLOCK_BYTES..=last).all(|block| blocks.insert(block)) {
                return 0;
            }
        }
        inode.pending.len()
    }

    /// `id`'s pending data left the list it was counted in (an fsync made
    /// it durable, a failed one dropped it): no pending rename carries any
    /// of it now.
    pub fn forget_flushes(&mut self, id: InodeId) {
        if !self.flush_marks {
            return;
        }
        for dir in self.dirs.values_mut() {
            for op in &mut dir.pending {
                if let DirOp::Rename { inode, flushes, .. } | DirOp::MoveIn { moved: Moved::File(inode), flushes, .. } =
                    op
                {
                    if *inode == id {
                        *flushes = 0;
                    }
                }
            }
        }
    }

    /// Every pending rename that carries its file's data
    /// (`DirOp::Rename::flushes`), to tell after a sync which of them it
    /// made durable; none (and no cost) on a disk that never made one.
    pub(super) fn carried_data(&self) -> Vec<DirOp> {
        if !self.flush_marks {
            return Vec::new();
        }
        let carrying = |op: &&DirOp| op.carried_flushes().is_some();
        self.dirs.values().flat_map(|dir| dir.pending.iter().filter(carrying).cloned()).collect()
    }

    /// Of `carried` (from [`FileSystem::carried_data`]), the renames no
    /// longer pending were made durable: the journal commit that did so
    /// wrote their files' carried data first (`data=ordered`), so it is
    /// durable too.
    pub(super) fn flush_carried(&mut self, carried: Vec<DirOp>) {
        for op in carried {
            let Some((inode, flushes)) = op.carried_flushes() else { continue };
            if !self.dirs.values().any(|dir| dir.pending.contains(&op)) {
                self.flush_first(inode, flushes);
            }
        }
    }

    /// Make `id`'s first `ops` pending data operations durable, as a
    /// partial fsync. Where a silent fault rides on its pending writes the
    /// disk does nothing (keeps less: weaker, allowed): their fates are
    /// settled by a whole fsync or a crash only.
    fn flush_first(&mut self, id: InodeId, ops: usize) {
        let Some(inode) = self.inodes.get_mut(&id) else { return };
        if ops == 0 || ops > inode.pending.len() || !inode.silent.is_idle() {
            return;
        }
        for op in inode.pending.drain(..ops) {
            if let Some(history) = &mut inode.history {
                history.note(&inode.durable, &op);
            }
            op.apply(&mut inode.durable);
        }
        if let Some(history) = &mut inode.history {
            history.end_flush();
        }
        self.forget_flushes(id);
        self.version += 1;
    }
}
