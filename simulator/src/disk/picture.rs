//! What a power loss did, for the report's picture (`crate::report`):
//! every pending change before it, held against the disk after it.
//!
//! Nothing here decides anything or draws randomness: the crash builder
//! (`crash.rs`) has already chosen; this compares the disk as power loss
//! found it (a [`DiskSnapshot`]: durable bytes plus pending operations)
//! with the durable disk it left, byte by byte, and says per file which
//! unsynced writes survived, were cut (at which byte) or left garbage,
//! and per directory which unsynced changes survived. Only a trace that
//! keeps every event asks for it, so the random mode pays nothing; an
//! explored crash state (a [`DiskImage`] of a snapshot) is pictured the
//! same way (`DiskSnapshot::picture`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::data::{DataOp, InodeId};
use super::dir::{DirOp, Moved};
use super::image::DiskImage;
use super::snapshot::DiskSnapshot;
use super::state::FileSystem;
use crate::trace::{CrashPicture, DirFate, FileFate, OpFate};

/// Compare `before` (the disk as the power loss found it) with `after`
/// (the durable state the crash builder left, before the volatile views
/// are reset to it).
pub(super) fn picture(before: &DiskSnapshot, after: &FileSystem, io_index: u64) -> CrashPicture {
    let dirs = after.dirs.iter().map(|(path, dir)| (path.clone(), dir.durable.clone())).collect();
    compare(before, &dirs, &|id| after.inodes.get(&id).map(|inode| &inode.durable[..]), io_index)
}

impl DiskSnapshot {
    /// What the crash state `image` of this snapshot kept of each pending
    /// change (the report's picture of an explored crash); `io_index` is
    /// the crash index.
    pub fn picture(&self, image: &DiskImage, io_index: u64) -> CrashPicture {
        compare(self, &image.dirs, &|id| image.files.get(&id).map(|file| &file.bytes[..]), io_index)
    }
}

/// `before` against the directories and file bytes after the crash.
fn compare<'a>(
    before: &DiskSnapshot,
    after_dirs: &BTreeMap<PathBuf, BTreeMap<String, InodeId>>,
    after_bytes: &dyn Fn(InodeId) -> Option<&'a [u8]>,
    io_index: u64,
) -> CrashPicture {
    let names_before =
        names(before.dirs.iter().map(|(path, dir)| (path, volatile_entries(&dir.durable, &dir.pending))));
    let names_after = names(after_dirs.iter().map(|(path, entries)| (path, entries.clone())));
    let mut files = Vec::new();
    for (id, file) in &before.files {
        let renamed = names_before.get(id) != names_after.get(id);
        if file.pending.is_empty() && !renamed {
            continue;
        }
        let bytes = if names_after.contains_key(id) { after_bytes(*id).unwrap_or(&[]) } else { &[] };
        let names = (&names_before, &names_after);
        files.push(file_fate(*id, &file.durable, &file.pending, bytes, before.sector_bytes, names));
    }
    let mut dirs = Vec::new();
    for (path, dir) in &before.dirs {
        let now = after_dirs.get(path).cloned().unwrap_or_default();
        for op in &dir.pending {
            dirs.push(DirFate {
                dir: path.display().to_string(),
                what: DirOp::describe(op),
                survived: survived(op, &now, path, after_dirs),
            });
        }
    }
    CrashPicture { io_index, sector_bytes: before.sector_bytes, files, dirs, damage: Vec::new() }
}

/// A directory's entries with its pending changes applied: what reads saw.
fn volatile_entries(durable: &BTreeMap<String, InodeId>, pending: &[DirOp]) -> BTreeMap<String, InodeId> {
    let (mut entries, mut subdirs) = (durable.clone(), BTreeMap::new());
    for op in pending {
        // Subdirectories are not pictured: only files' names matter here.
        op.apply(&mut entries, &mut subdirs);
        subdirs.clear();
    }
    entries
}

/// Each inode's full path (the first, by path order, if it has several).
fn names<'a>(dirs: impl Iterator<Item = (&'a PathBuf, BTreeMap<String, InodeId>)>) -> BTreeMap<InodeId, String> {
    let mut out = BTreeMap::new();
    for (path, entries) in dirs {
        for (name, id) in entries {
            out.entry(id).or_insert_with(|| path.join(&name).display().to_string());
        }
    }
    out
}

/// Whether the change's effect is in the durable entries of `dir` after
/// the crash (of the directories after it, `after_dirs`, for a change of
/// a subdirectory: a removed one gone, a renamed one at its new name).
fn survived(
    op: &DirOp,
    after: &BTreeMap<String, InodeId>,
    dir: &Path,
    after_dirs: &BTreeMap<PathBuf, BTreeMap<String, InodeId>>,
) -> bool {
    match op {
        DirOp::RemoveDir { name, .. } => !after_dirs.contains_key(&dir.join(name)),
        DirOp::RenameDir { from, to, .. } => {
            after_dirs.contains_key(&dir.join(to)) && !after_dirs.contains_key(&dir.join(from))
        }
        DirOp::Link { name, inode, .. } => after.get(name) == Some(inode),
        DirOp::Unlink { name, inode, .. } => after.get(name) != Some(inode),
        DirOp::Rename { from, to, inode, .. } => after.get(to) == Some(inode) && after.get(from) != Some(inode),
        DirOp::MoveOut { name, moved: Moved::File(inode), .. } => after.get(name) != Some(inode),
        DirOp::MoveIn { name, moved: Moved::File(inode), .. } => after.get(name) == Some(inode),
        DirOp::MoveOut { name, moved: Moved::Dir(_), .. } => !after_dirs.contains_key(&dir.join(name)),
        DirOp::MoveIn { name, moved: Moved::Dir(_), .. } => after_dirs.contains_key(&dir.join(name)),
    }
}

/// How each byte of a file compares after the crash.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Byte {
    /// As the newest content (what reads saw before the crash).
    New,
    /// As before the unsynced changes (durable, or zero past its end).
    Old,
    /// Neither.
    Garbage,
    /// Past the file's end after the crash.
    Gone,
}

fn file_fate(
    id: InodeId,
    durable: &[u8],
    pending: &[DataOp],
    after: &[u8],
    sector_bytes: u64,
    (names_before, names_after): (&BTreeMap<InodeId, String>, &BTreeMap<InodeId, String>),
) -> FileFate {
    let mut volatile = durable.to_vec();
    for op in pending {
        op.apply(&mut volatile);
    }
    let classes = classify(durable, &volatile, after);
    let mut len = durable.len() as u64;
    let mut ops = Vec::with_capacity(pending.len());
    for op in pending {
        ops.push(op_fate(op, len, &classes, after.len() as u64, sector_bytes));
        len = op.len_after(len);
    }
    FileFate {
        inode: id,
        path_before: names_before.get(&id).cloned(),
        path_after: names_after.get(&id).cloned(),
        len_durable: durable.len() as u64,
        len_volatile: volatile.len() as u64,
        len_after: after.len() as u64,
        ops,
        garbage: runs(&classes, Byte::Garbage),
    }
}

/// Every byte up to the longest of the three images, classified.
fn classify(durable: &[u8], volatile: &[u8], after: &[u8]) -> Vec<Byte> {
    let len = durable.len().max(volatile.len()).max(after.len());
    (0..len)
        .map(|i| {
            let Some(&now) = after.get(i) else { return Byte::Gone };
            if volatile.get(i) == Some(&now) {
                Byte::New
            } else if durable.get(i).copied().unwrap_or(0) == now {
                Byte::Old
            } else {
                Byte::Garbage
            }
        })
        .collect()
}

/// Maximal runs of `class` as byte ranges.
fn runs(classes: &[Byte], class: Byte) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in classes.iter().chain(std::iter::once(&Byte::Gone)).enumerate() {
        match (start, *c == class) {
            (None, true) => start = Some(i as u64),
            (Some(s), false) => {
                out.push((s, i as u64));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn op_fate(op: &DataOp, len_before: u64, classes: &[Byte], len_after: u64, sector_bytes: u64) -> OpFate {
    match op {
        DataOp::SetLen { len_bytes, .. } => {
            let fate = if len_after == *len_bytes { "the length survived" } else { "the length did not survive" };
            let (lo, hi) = ((*len_bytes).min(len_before), (*len_bytes).max(len_before));
            OpFate { what: format!("set_len {len_bytes}"), range: (lo, hi), fate: format!("{fate} (now {len_after})") }
        }
        DataOp::Write { offset_bytes, data } => {
            let (start, end) = (*offset_bytes, offset_bytes + data.len() as u64);
            // Bytes past every image's end (a later set_len cut them
            // away) count as gone.
            let bytes: Vec<Byte> =
                (start..end).map(|i| classes.get(i as usize).copied().unwrap_or(Byte::Gone)).collect();
            let fate = write_fate(&bytes, start, sector_bytes);
            OpFate { what: format!("write {start}+{}", data.len()), range: (start, end), fate }
        }
    }
}

/// A write's bytes after the crash, in words: whole, lost, cut at a byte
/// (what follows old or gone), with garbage, or sectors reordered.
fn write_fate(bytes: &[Byte], start: u64, sector_bytes: u64) -> String {
    if bytes.is_empty() {
        return "survived (empty)".to_string();
    }
    if let Some((a, b)) = runs(bytes, Byte::Garbage).first() {
        let (a, b) = (start + a, start + b);
        return format!("torn: garbage in bytes {a}..{b} (sector {})", a / sector_bytes.max(1));
    }
    let new = bytes.iter().take_while(|b| **b == Byte::New).count();
    if new == bytes.len() {
        return "survived".to_string();
    }
    let rest_new = bytes[new..].contains(&Byte::New);
    if !rest_new {
        let gone = bytes[new..].iter().all(|b| *b == Byte::Gone);
        let cut = start + new as u64;
        return match (new, gone) {
            (0, true) => "lost (past the end after the crash)".to_string(),
            (0, false) => "lost".to_string(),
            _ => format!("cut at byte {cut} (sector {}): the rest lost", cut / sector_bytes.max(1)),
        };
    }
    let sector = sector_bytes.max(1) as usize;
    let first_pad = (start as usize) % sector;
    let (mut kept, mut lost) = (0, 0);
    let mut at = 0;
    while at < bytes.len() {
        let len = (sector - (at + first_pad) % sector).min(bytes.len() - at);
        if bytes[at..at + len].iter().all(|b| *b == Byte::New) {
            kept += 1;
        } else {
            lost += 1;
        }
        at += len;
    }
    format!("reordered: {kept} of its sectors survived, {lost} did not")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use vfs::{OpenMode, Vfs};

    use crate::disk::{CrashMode, DiskConfig, SimVfs};
    use crate::trace::Trace;

    /// Power loss pictured on a disk that keeps every event: what
    /// `write`s and `set_len`s to one file left.
    fn pictured(mode: CrashMode, steps: impl FnOnce(&mut dyn vfs::VfsFile)) -> crate::trace::FileFate {
        let vfs = SimVfs::new(DiskConfig::fault_free(mode, 512), Trace::new(true));
        vfs.create_dir_all(Path::new("/d")).unwrap();
        let mut file = vfs.open(Path::new("/d/f"), OpenMode::Create).unwrap();
        file.write_at(0, &[1; 1024]).unwrap();
        file.sync().unwrap();
        vfs.sync_dir(Path::new("/d")).unwrap();
        steps(file.as_mut());
        drop(file);
        vfs.power_loss(7);
        let trace = vfs.take_trace();
        let crash = &trace.detail().crashes[0];
        crash.files.iter().find(|f| f.path_before.as_deref() == Some("/d/f")).expect("the file pictured").clone()
    }

    #[test]
    fn a_write_a_later_cut_took_away_is_gone_not_a_panic() {
        let fate = pictured(CrashMode::Reorder, |file| {
            file.write_at(4096, &[2; 512]).unwrap();
            file.set_len(3072).unwrap();
        });
        assert_eq!(fate.ops.len(), 2);
        assert!(fate.ops[0].fate.starts_with("lost"), "{:?}", fate.ops[0]);
    }

    #[test]
    fn strict_loses_every_unsynced_write() {
        let fate = pictured(CrashMode::Strict, |file| file.write_at(1024, &[3; 600]).unwrap());
        assert_eq!((fate.len_durable, fate.len_volatile, fate.len_after), (1024, 1624, 1024));
        assert_eq!(fate.ops[0].fate, "lost (past the end after the crash)");
        assert!(fate.garbage.is_empty());
    }
}
