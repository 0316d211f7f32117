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
//!
//! Here are the types and the steps on one file's bytes; the file system's
//! fsync (`FileSystem::sync_silent`) and the power loss (`crash.rs`:
//! `open_scars`, `announce`) run them, so this file needs no inode.

use std::ops::Range;

use super::config::DamageKind;
use super::data::{erase_vouchers_under, to_usize, DataOp, InodeId, Voucher};

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
    /// The bytes of the file it covers.
    pub fn range(&self) -> Range<u64> {
        self.start_bytes..self.start_bytes + self.intended.len() as u64
    }

    /// Where the scar's damage shows after a power loss: its first byte
    /// that holds in `durable` neither the intended byte nor what the page
    /// cache (`volatile`) held there (a pending write that survived).
    pub fn first_wrong_byte(&self, durable: &[u8], volatile: &[u8]) -> Option<u64> {
        let start = to_usize(self.start_bytes);
        (start..start + self.intended.len()).find_map(|at| {
            let now = *durable.get(at)?;
            let wrong = now != self.intended[at - start] && volatile.get(at) != Some(&now);
            wrong.then_some(at as u64)
        })
    }

    /// `image` with the scar's intended bytes in its range (as far as the
    /// image reaches).
    pub fn patch(&self, image: &mut [u8]) {
        let start = to_usize(self.start_bytes).min(image.len());
        let end = (start + self.intended.len()).min(image.len());
        image[start..end].copy_from_slice(&self.intended[..end - start]);
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
            scar.patch(cache);
        }
    }

    /// After an fsync the page cache (`volatile`) is what the file should
    /// hold: every scar now intends its bytes there (cut to the file's
    /// length).
    pub fn refresh_scars(&mut self, volatile: &[u8]) {
        let len = volatile.len();
        self.scars.retain_mut(|scar| {
            let start = to_usize(scar.start_bytes);
            let end = (start + scar.intended.len()).min(len);
            if start >= end {
                return false;
            }
            scar.intended = volatile[start..end].to_vec();
            true
        });
    }

    /// The scars that hold other bytes than intended in `durable` now
    /// (the rest healed: a later write made durable covered them).
    pub fn open_scars(&self, durable: &[u8]) -> Vec<Scar> {
        self.scars.iter().filter(|s| s.differs(durable)).cloned().collect()
    }

    /// Forget every fate and scar: after a power loss the damage is on the
    /// disk, like media corruption.
    pub fn forget(&mut self) {
        self.fates.clear();
        self.scars.clear();
    }

    /// Note a write for target choice, keeping [`RECENT_WRITES`].
    pub fn note_write(&mut self, offset_bytes: u64, len_bytes: u64) {
        if self.recent_writes.len() == RECENT_WRITES {
            self.recent_writes.remove(0);
        }
        self.recent_writes.push((offset_bytes, len_bytes));
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
            scars.extend(land(durable, vouchers, to, data, None));
            None
        }
        Fate::OtherFile { inode } => Some(Landing { inode, offset_bytes, data: data.to_vec() }),
    }
}

/// `data` lands at `offset_bytes` of a durable image, as far as the image
/// reaches: the scar it leaves, if any — its intended bytes those of
/// `should_hold` (the image as it should be, the same length) it covers,
/// or, where the file's own fsync refreshes them at once, none yet.
/// Whatever record of durability lay under it is gone (its vouchers).
pub(super) fn land(
    durable: &mut [u8],
    vouchers: &mut Vec<Voucher>,
    offset_bytes: u64,
    data: &[u8],
    should_hold: Option<&[u8]>,
) -> Option<Scar> {
    let start = to_usize(offset_bytes);
    let end = (start + data.len()).min(durable.len());
    if start >= end {
        return None;
    }
    let intended = match should_hold {
        Some(image) => {
            assert_eq!(image.len(), durable.len(), "the image as it should be is the durable image's length");
            image[start..end].to_vec()
        }
        None => vec![0; end - start],
    };
    durable[start..end].copy_from_slice(&data[..end - start]);
    erase_vouchers_under(vouchers, offset_bytes..end as u64);
    Some(Scar { start_bytes: offset_bytes, intended, kind: DamageKind::MisdirectedWrite })
}
