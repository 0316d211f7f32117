//! Silent write faults: the drive reports success and puts the bytes in
//! the wrong place, or nowhere (TigerBeetle's storage faults; the drive and
//! RAID firmware bugs field studies keep finding).
//!
//! A write's fate is drawn when it is made (`faults.rs`, from the
//! operation's fault stream) and strikes when the drive writes it: at the
//! fsync that makes it durable. The page cache holds the right bytes until
//! power goes, so the engine reads back what it wrote until then — as on a
//! real system, where such faults surface after a restart. A crash before
//! the fsync leaves the write to the crash mode: in `prefix` mode a write it
//! keeps meets its fate then (the drive wrote it back on its own and lost
//! or misdirected it: a lost write before any fsync, which a later kept
//! write outlives); in `reorder` mode every unsynced sector already
//! survives or not on its own, and in `strict` mode none does. Three fates:
//!
//! - **lost**: the bytes never land. The file keeps its length (the file
//!   system's metadata saw the write) and the place its old bytes (zeros
//!   past the old end).
//! - **misdirected within the file**: the place keeps its old bytes, and
//!   the data lands at another offset inside the file: often that of an
//!   earlier write of the same size, where a whole, once-valid record of
//!   the same shape used to be; else where another recent write started
//!   (a record's start, aligned or not), or at a sector-aligned offset.
//! - **misdirected to another file**: the place keeps its old bytes, and
//!   the data lands at the same offset of another open file, as far as
//!   that file reaches.
//!
//! What the drive did is remembered as *scars*: ranges of a durable image
//! that may hold other bytes than the engine last made durable there, with
//! the bytes it should hold (refreshed at each fsync of the file: after
//! one, the page cache is exactly what the file should hold). At power
//! loss every scar whose bytes still differ is announced as
//! [`Damage`] — where the first wrong byte is, and whether a later durable
//! write vouched for the range (`Inode::vouched`) — and forgotten: the
//! damage is on the disk from then on, like media corruption.
//!
//! Vouching stays honest: a write whose bytes did not land where they
//! belong vouches for nothing (whatever record of durability it carried
//! is not there), and a landing overwrites whatever record lay under it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use super::config::{Damage, DamageKind};
use super::inode::{to_usize, DataOp, Inode, InodeId, Voucher};
use super::state::FileSystem;

/// How many recent writes of a file are kept for choosing a misdirected
/// write's target among earlier writes of the same size.
pub(super) const RECENT_WRITES: usize = 64;

/// What the drive does with one write when it is flushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    /// The bytes never land.
    Lost,
    /// The bytes land at this offset of the same file instead.
    Elsewhere { offset_bytes: u64 },
    /// The bytes land at the same offset of this other file instead.
    OtherFile { inode: InodeId },
}

impl Fate {
    /// The damage kind a scar of this fate is announced as.
    fn damage_kind(self) -> DamageKind {
        match self {
            Fate::Lost => DamageKind::LostWrite,
            Fate::Elsewhere { .. } | Fate::OtherFile { .. } => DamageKind::MisdirectedWrite,
        }
    }
}

/// A range of a durable image a silent fault may have left wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Scar {
    pub start_bytes: u64,
    /// What the range should hold, as of the file's last fsync.
    pub intended: Vec<u8>,
    pub kind: DamageKind,
}

impl Scar {
    fn range(&self) -> Range<u64> {
        self.start_bytes..self.start_bytes + self.intended.len() as u64
    }

    /// Whether `image` holds other bytes than intended anywhere in range.
    fn differs(&self, image: &[u8]) -> bool {
        let start = to_usize(self.start_bytes);
        image.get(start..start + self.intended.len()) != Some(&self.intended[..])
    }
}

/// One file's silent-fault state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Silent {
    /// Fates of pending writes, by their index in `Inode::pending`.
    pub fates: Vec<(usize, Fate)>,
    pub scars: Vec<Scar>,
    /// The file's latest writes, (offset, length), oldest first, kept only
    /// on a disk that misdirects writes.
    pub recent_writes: Vec<(u64, u64)>,
}

impl Silent {
    /// Nothing for an fsync to do beyond the plain one.
    pub fn is_idle(&self) -> bool {
        self.fates.is_empty() && self.scars.is_empty()
    }

    /// Whether a scar at the file's first byte holds other bytes than
    /// intended in `durable`.
    pub fn start_scarred(&self, durable: &[u8]) -> bool {
        self.scars.iter().any(|scar| scar.start_bytes == 0 && scar.differs(durable))
    }

    /// `cache` (a file's page cache, just reset to its durable image by a
    /// failed fsync) with every scar's intended bytes: the pages a silent
    /// fault left wrong on the disk are clean in the cache, and a failed
    /// fsync drops only dirty ones.
    pub fn patch_cache(&self, cache: &mut [u8]) {
        for scar in &self.scars {
            let start = to_usize(scar.start_bytes).min(cache.len());
            let end = (start + scar.intended.len()).min(cache.len());
            cache[start..end].copy_from_slice(&scar.intended[..end - start]);
        }
    }

    /// Note a write for target choice, keeping [`RECENT_WRITES`].
    pub fn note_write(&mut self, offset_bytes: u64, len_bytes: u64) {
        if self.recent_writes.len() == RECENT_WRITES {
            self.recent_writes.remove(0);
        }
        self.recent_writes.push((offset_bytes, len_bytes));
    }
}

/// fsync of `id` where a pending write has a fate or a scar needs its
/// intended bytes refreshed: apply the pending ops to the durable image as
/// the drive does, then the usual bookkeeping (`FileSystem::sync`).
pub(super) fn sync(fs: &mut FileSystem, id: InodeId) {
    let inode = fs.inode_mut(id);
    // A silent fault's durable image is not what the history would say.
    inode.history = None;
    let pending = std::mem::take(&mut inode.pending);
    let fates = std::mem::take(&mut inode.silent.fates);
    let mut scars = std::mem::take(&mut inode.silent.scars);
    let mut misplaced_at = Vec::new();
    let mut landings = Vec::new();
    for (index, op) in pending.iter().enumerate() {
        let Some((offset_bytes, data, fate)) = fate_of(&fates, index, op) else {
            op.apply(&mut inode.durable);
            continue;
        };
        misplaced_at.push(offset_bytes);
        landings.extend(strike(&mut inode.durable, &mut inode.vouchers, offset_bytes, data, fate, &mut scars));
    }
    inode.silent.scars = scars;
    // A write that did not land where it belongs vouches for nothing.
    inode.pending_vouchers.retain(|v| !misplaced_at.contains(&v.start_bytes));
    refresh_scars(inode);
    fs.finish_sync(id);
    for landing in landings {
        if let Some(inode) = fs.inodes.get_mut(&landing.inode) {
            inode.history = None;
            let scar = land(&mut inode.durable, &mut inode.vouchers, landing.offset_bytes, &landing.data, true);
            inode.silent.scars.extend(scar);
        }
    }
}

/// Where a write misdirected to another file lands: that file's inode,
/// the write's own offset, and its bytes.
#[derive(Debug)]
pub(super) struct Landing {
    pub inode: InodeId,
    pub offset_bytes: u64,
    pub data: Vec<u8>,
}

/// The pending op at `index`, if it is a write with a fate: its offset,
/// its bytes and the fate.
pub(super) fn fate_of<'a>(fates: &[(usize, Fate)], index: usize, op: &'a DataOp) -> Option<(u64, &'a [u8], Fate)> {
    let fate = fates.iter().find(|(at, _)| *at == index).map(|(_, fate)| *fate)?;
    match op {
        DataOp::Write { offset_bytes, data } => Some((*offset_bytes, data, fate)),
        DataOp::SetLen { .. } => None,
    }
}

/// The drive writes `data`, meant for `offset_bytes` of a file whose
/// durable image and vouchers these are, per `fate`: the length grows (the
/// file system saw the write) but the place keeps its old bytes, and the
/// bytes land elsewhere in the file, or nowhere, or are to land in another
/// file (returned). The scars it leaves in this file go to `scars`.
pub(super) fn strike(
    durable: &mut Vec<u8>,
    vouchers: &mut Vec<Voucher>,
    offset_bytes: u64,
    data: &[u8],
    fate: Fate,
    scars: &mut Vec<Scar>,
) -> Option<Landing> {
    let end = to_usize(offset_bytes + data.len() as u64);
    if durable.len() < end {
        durable.resize(end, 0);
    }
    scars.push(Scar { start_bytes: offset_bytes, intended: data.to_vec(), kind: fate.damage_kind() });
    match fate {
        Fate::Lost => None,
        Fate::Elsewhere { offset_bytes: to } => {
            scars.extend(land(durable, vouchers, to, data, false));
            None
        }
        Fate::OtherFile { inode } => Some(Landing { inode, offset_bytes, data: data.to_vec() }),
    }
}

/// `data` lands at `offset_bytes` of a durable image, as far as the image
/// reaches: the scar it leaves, if any (its intended bytes the ones it
/// covered, if `keep_intended`; else refreshed at the fsync). Whatever
/// record of durability lay under it is gone (its vouchers).
pub(super) fn land(
    durable: &mut [u8],
    vouchers: &mut Vec<Voucher>,
    offset_bytes: u64,
    data: &[u8],
    keep_intended: bool,
) -> Option<Scar> {
    let start = to_usize(offset_bytes);
    let end = (start + data.len()).min(durable.len());
    if start >= end {
        return None;
    }
    let intended = if keep_intended { durable[start..end].to_vec() } else { vec![0; end - start] };
    durable[start..end].copy_from_slice(&data[..end - start]);
    let range = offset_bytes..end as u64;
    vouchers.retain(|v| !range.contains(&v.start_bytes));
    Some(Scar { start_bytes: offset_bytes, intended, kind: DamageKind::MisdirectedWrite })
}

/// After an fsync the page cache is what the file should hold: every scar
/// of the file now intends its bytes there (cut to the file's length).
fn refresh_scars(inode: &mut Inode) {
    let len = inode.volatile.len();
    let volatile = &inode.volatile;
    inode.silent.scars.retain_mut(|scar| {
        let start = to_usize(scar.start_bytes);
        let end = (start + scar.intended.len()).min(len);
        if start >= end {
            return false;
        }
        scar.intended = volatile[start..end].to_vec();
        true
    });
}

/// Before a power loss settles pending operations: each inode's scars that
/// hold other bytes than intended now (the rest healed: a later write made
/// durable covered them).
pub(super) fn open_scars(fs: &FileSystem) -> BTreeMap<InodeId, Vec<Scar>> {
    let mut open = BTreeMap::new();
    for (id, inode) in &fs.inodes {
        let scars: Vec<Scar> = inode.silent.scars.iter().filter(|s| s.differs(&inode.durable)).cloned().collect();
        if !scars.is_empty() {
            open.insert(*id, scars);
        }
    }
    open
}

/// After the power loss settled: the damage each open scar of a reachable
/// file left — its first byte that holds neither the intended bytes nor
/// what the page cache held (a pending write that survived) — and then
/// every fate and scar is forgotten.
pub(super) fn announce(fs: &mut FileSystem, open: BTreeMap<InodeId, Vec<Scar>>) -> Vec<Damage> {
    let mut damage = Vec::new();
    for (dir_path, dir) in &fs.dirs {
        for (name, id) in &dir.durable {
            let (Some(scars), Some(inode)) = (open.get(id), fs.inodes.get(id)) else { continue };
            for scar in scars {
                let Some(at) = first_wrong_byte(inode, scar) else { continue };
                let path = Path::new(dir_path).join(name).to_string_lossy().into_owned();
                let vouched = inode.vouched(scar.range());
                damage.push(Damage { kind: scar.kind, path, offset_bytes: at, vouched });
            }
        }
    }
    for inode in fs.inodes.values_mut() {
        inode.silent.fates.clear();
        inode.silent.scars.clear();
    }
    damage
}

fn first_wrong_byte(inode: &Inode, scar: &Scar) -> Option<u64> {
    let start = to_usize(scar.start_bytes);
    (start..start + scar.intended.len()).find_map(|at| {
        let now = *inode.durable.get(at)?;
        let wrong = now != scar.intended[at - start] && inode.volatile.get(at) != Some(&now);
        wrong.then_some(at as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::vfs::OpenMode;

    fn announced(fs: &mut FileSystem) -> Vec<Damage> {
        let open = open_scars(fs);
        announce(fs, open)
    }

    fn file_with(fs: &mut FileSystem, bytes: &[u8]) -> InodeId {
        fs.create_dir_all(Path::new("/db"));
        let id = fs.open(Path::new("/db/f"), OpenMode::Create).unwrap();
        fs.sync_dir(Path::new("/db")).unwrap();
        fs.write(id, 0, bytes);
        fs.sync(id);
        id
    }

    #[test]
    fn a_lost_write_keeps_the_old_bytes_and_the_new_length_and_is_announced_once() {
        let mut fs = FileSystem::default();
        let id = file_with(&mut fs, b"aaaa");
        fs.write(id, 2, b"bbbb");
        fs.set_fate(id, Fate::Lost);
        fs.sync(id);
        assert_eq!(fs.inode(id).durable, b"aaaa\0\0", "the place keeps its old bytes");
        assert_eq!(fs.inode(id).volatile, b"aabbbb", "the page cache holds the write");
        let open = open_scars(&fs);
        let damage = announce(&mut fs, open);
        assert_eq!(damage.len(), 1);
        assert_eq!(
            (damage[0].kind, damage[0].offset_bytes, damage[0].path.as_str()),
            (DamageKind::LostWrite, 2, "/db/f")
        );
        assert!(announced(&mut fs).is_empty(), "announced once");
    }

    #[test]
    fn a_misdirected_write_scars_its_place_and_where_it_landed() {
        let mut fs = FileSystem::default();
        let id = file_with(&mut fs, b"0123456789");
        fs.write(id, 6, b"xy");
        fs.set_fate(id, Fate::Elsewhere { offset_bytes: 2 });
        fs.sync(id);
        assert_eq!(fs.inode(id).durable, b"01xy456789");
        let offsets: Vec<u64> = announced(&mut fs).iter().map(|d| d.offset_bytes).collect();
        assert_eq!(offsets, vec![6, 2]);
    }

    #[test]
    fn a_later_durable_write_over_a_scar_heals_it() {
        let mut fs = FileSystem::default();
        let id = file_with(&mut fs, b"aaaa");
        fs.write(id, 0, b"bb");
        fs.set_fate(id, Fate::Lost);
        fs.sync(id);
        fs.write(id, 0, b"cc");
        fs.sync(id);
        assert!(announced(&mut fs).is_empty());
    }

    #[test]
    fn a_failed_fsync_keeps_the_clean_pages_a_silent_fault_left_wrong_on_disk() {
        let mut fs = FileSystem::default();
        let id = file_with(&mut fs, b"aaaa");
        fs.write(id, 4, b"bbbb");
        fs.set_fate(id, Fate::Lost);
        fs.sync(id);
        fs.write(id, 8, b"cccc");
        fs.drop_dirty(id);
        assert_eq!(fs.inode(id).volatile, b"aaaabbbb", "the dirty write dropped, the lost one still cached");
    }

    #[test]
    fn a_lost_write_vouches_for_nothing() {
        let mut fs = FileSystem::default();
        let id = file_with(&mut fs, b"aaaa");
        fs.write(id, 4, b"bbbb");
        fs.sync(id);
        // The first write after that fsync would vouch for bytes 4..8.
        fs.write(id, 8, b"cccc");
        fs.set_fate(id, Fate::Lost);
        fs.sync(id);
        assert!(!fs.inode(id).vouched(4..8));
    }
}
