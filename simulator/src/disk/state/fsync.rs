//! A file's fsync and its failure: the pending data operations applied to
//! the durable image in order (the cost is what changed since the last
//! sync, never the file's size), or, where a silent write fault rides on
//! them, applied as the drive does it (`silent.rs`); the vouchers of the
//! writes made durable kept; and a failed fsync's dirty pages dropped.
//! Apart from the directory changes (`mod.rs`) because a file's data and
//! its names become durable by different calls and different rules.

use super::super::data::{DataOp, InodeId};
use super::super::silent::{self, Fate};
use super::FileSystem;

impl FileSystem {
    /// The write just made to `id` (its newest pending op) meets `fate`
    /// when the drive writes it (`silent.rs`).
    pub fn set_fate(&mut self, id: InodeId, fate: Fate) {
        let inode = self.inode_mut(id);
        let index = inode.pending.len().checked_sub(1).expect("a write was just made");
        assert!(matches!(inode.pending[index], DataOp::Write { .. }));
        inode.silent.fates.push((index, fate));
    }

    /// fsync: make the pending data ops durable, in order. The cost is the
    /// bytes they wrote, not the file's size.
    pub fn sync(&mut self, id: InodeId) {
        if !self.inode(id).pending.is_empty() {
            self.version += 1;
            self.data_changes += 1;
        }
        if !self.inode(id).silent.is_idle() {
            self.sync_silent(id);
            return;
        }
        let inode = self.inode_mut(id);
        for op in &inode.pending {
            if let Some(history) = &mut inode.history {
                history.note(&inode.durable, op);
            }
            op.apply(&mut inode.durable);
        }
        if let Some(history) = &mut inode.history {
            history.end_flush();
        }
        inode.pending.clear();
        self.finish_sync(id);
    }

    /// fsync of `id` where a pending write has a fate or a scar needs its
    /// intended bytes refreshed (`silent.rs`): apply the pending ops to the
    /// durable image as the drive does, then the usual bookkeeping.
    fn sync_silent(&mut self, id: InodeId) {
        let inode = self.inode_mut(id);
        // A silent fault's durable image is not what the history would say.
        inode.history = None;
        let pending = std::mem::take(&mut inode.pending);
        let fates = std::mem::take(&mut inode.silent.fates);
        let mut scars = std::mem::take(&mut inode.silent.scars);
        let mut misplaced_at = Vec::new();
        let mut landings = Vec::new();
        for (index, op) in pending.iter().enumerate() {
            let Some((offset_bytes, data, fate)) = silent::fate_of(&fates, index, op) else {
                op.apply(&mut inode.durable);
                continue;
            };
            misplaced_at.push(offset_bytes);
            landings.extend(silent::strike(
                &mut inode.durable,
                &mut inode.vouchers,
                offset_bytes,
                data,
                fate,
                &mut scars,
            ));
        }
        inode.silent.scars = scars;
        // A write that did not land where it belongs vouches for nothing.
        inode.pending_vouchers.retain(|v| !misplaced_at.contains(&v.start_bytes));
        inode.silent.refresh_scars(&inode.volatile);
        self.finish_sync(id);
        for landing in landings {
            if let Some(inode) = self.inodes.get_mut(&landing.inode) {
                inode.history = None;
                // What the other file's image should hold where the bytes
                // land: its durable bytes, where earlier silent faults left
                // them wrong as they should be (seed 2335719: a landing over
                // an earlier one's garbage took that garbage for the right
                // bytes, and a failed fsync's cache patch put it back).
                let mut should_hold = inode.durable.clone();
                inode.silent.patch_cache(&mut should_hold);
                let (offset_bytes, data) = (landing.offset_bytes, &landing.data);
                let scar =
                    silent::land(&mut inode.durable, &mut inode.vouchers, offset_bytes, data, Some(&should_hold));
                inode.silent.scars.extend(scar);
            }
        }
    }

    /// The end of every fsync, once the pending ops are applied: the
    /// vouchers of the writes it made durable count from now on.
    pub fn finish_sync(&mut self, id: InodeId) {
        self.forget_flushes(id);
        let inode = self.inode_mut(id);
        assert!(inode.pending.is_empty());
        assert_eq!(inode.durable.len(), inode.volatile.len());
        let durable_bytes = inode.durable.len() as u64;
        let made_durable = std::mem::take(&mut inode.pending_vouchers);
        inode.vouchers.extend(made_durable);
        inode.written_since_sync = false;
        inode.forget_vouchers_past(durable_bytes);
    }

    /// A failed fsync: the dirty data is gone, reads see the durable image.
    pub fn drop_dirty(&mut self, id: InodeId) {
        self.forget_flushes(id);
        let inode = self.inode_mut(id);
        let len_before = inode.volatile.len() as u64;
        inode.volatile.clone_from(&inode.durable);
        // Only dirty pages are dropped: those a silent fault left wrong on
        // the disk were written back, so the cache still holds them right.
        inode.silent.patch_cache(&mut inode.volatile);
        inode.pending.clear();
        inode.silent.fates.clear();
        inode.pending_vouchers.clear();
        inode.written_since_sync = false;
        let len_after = inode.volatile.len() as u64;
        self.volatile_bytes = self.volatile_bytes - len_before + len_after;
        self.version += 1;
        self.data_changes += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use vfs::OpenMode;

    use super::*;

    #[test]
    fn sync_is_incremental_and_keeps_the_invariant() {
        let mut fs = FileSystem::default();
        fs.create_dir_all(Path::new("/db"));
        let id = fs.open(Path::new("/db/f"), OpenMode::Create).unwrap();
        fs.write(id, 0, b"hello");
        fs.sync(id);
        fs.write(id, 5, b" world");
        fs.set_len(id, 8);
        assert_eq!(fs.inode(id).pending.len(), 2);
        assert_eq!(fs.inode(id).durable, b"hello");
        fs.sync(id);
        assert!(fs.inode(id).pending.is_empty());
        assert_eq!(fs.inode(id).durable, b"hello wo");
        assert_eq!(fs.volatile_bytes(), 8);
    }
}
