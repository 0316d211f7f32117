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
    /// As both: the unsynced changes left this byte as it was, so whether
    /// a write of it reached the disk cannot be told from the bytes.
    Same,
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
            let old = durable.get(i).copied().unwrap_or(0) == now;
            if volatile.get(i) == Some(&now) {
                if old {
                    Byte::Same
                } else {
                    Byte::New
                }
            } else if old {
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
/// (what follows old or gone), with garbage, or its sectors reordered
/// (each named: which survived is what a reader of a finding needs).
/// Bytes the write left as they were ([`Byte::Same`]) fit either way;
/// how many there are is said, since they make a lost write look kept.
fn write_fate(bytes: &[Byte], start: u64, sector_bytes: u64) -> String {
    if bytes.is_empty() {
        return "survived (empty)".to_string();
    }
    if let Some((a, b)) = runs(bytes, Byte::Garbage).first() {
        let (a, b) = (start + a, start + b);
        return format!("torn: garbage in bytes {a}..{b} (sector {})", a / sector_bytes.max(1));
    }
    let sectors = sectors_of(bytes, start, sector_bytes);
    let has = |kind: Sector| sectors.iter().any(|(_, k)| *k == kind);
    let fate = if !has(Sector::Old) && !has(Sector::Mixed) {
        "survived".to_string()
    } else if !has(Sector::New) && !has(Sector::Mixed) {
        let gone = bytes.iter().all(|b| matches!(b, Byte::Gone | Byte::Same));
        if gone { "lost (past the end after the crash)" } else { "lost" }.to_string()
    } else if let Some(cut) = prefix_cut(bytes, start, &sectors, sector_bytes) {
        format!("cut at byte {cut} (sector {}): the rest lost", cut / sector_bytes.max(1))
    } else {
        reordered(&sectors)
    };
    let same = bytes.iter().filter(|b| **b == Byte::Same).count();
    match same {
        0 => fate,
        _ if same == bytes.len() => format!("{fate} (all {same} of its bytes equal the old ones)"),
        _ => format!("{fate} ({same} of its {} bytes equal the old ones)", bytes.len()),
    }
}

/// What one sector's share of a write held after the crash.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sector {
    /// Its new bytes (some differing from the old ones), and no old.
    New,
    /// Old bytes, or past the end, and none of its new ones.
    Old,
    /// Every byte equal before and after: kept or lost reads the same.
    Same,
    /// Some new bytes and some old: a tear inside the sector.
    Mixed,
}

/// Each sector a write's `bytes` (from `start`) touch, by index on the
/// disk, with what it held (garbage already ruled out).
fn sectors_of(bytes: &[Byte], start: u64, sector_bytes: u64) -> Vec<(u64, Sector)> {
    let sector = sector_bytes.max(1);
    let mut out = Vec::with_capacity(bytes.len() / sector as usize + 2);
    let mut at = 0usize;
    while at < bytes.len() {
        let offset = start + at as u64;
        let len = ((sector - offset % sector) as usize).min(bytes.len() - at);
        let part = &bytes[at..at + len];
        debug_assert!(!part.contains(&Byte::Garbage), "garbage is pictured before sectors");
        let new = part.contains(&Byte::New);
        let old = part.iter().any(|b| matches!(b, Byte::Old | Byte::Gone));
        let kind = match (new, old) {
            (true, true) => Sector::Mixed,
            (true, false) => Sector::New,
            (false, true) => Sector::Old,
            (false, false) => Sector::Same,
        };
        out.push((offset / sector, kind));
        at += len;
    }
    out
}

/// Where the write was cut, if what survived is a prefix: its new sectors
/// (or bytes, in a sector torn inside) all come before its first old one.
/// A cut falls at that old sector's start, or at its first old byte if it
/// is torn inside.
fn prefix_cut(bytes: &[Byte], start: u64, sectors: &[(u64, Sector)], sector_bytes: u64) -> Option<u64> {
    let first_old = sectors.iter().position(|(_, k)| matches!(k, Sector::Old | Sector::Mixed))?;
    let later_new = sectors[first_old + 1..].iter().any(|(_, k)| matches!(k, Sector::New | Sector::Mixed));
    let (index, kind) = sectors[first_old];
    if later_new {
        return None;
    }
    if kind == Sector::Old {
        return Some((index * sector_bytes.max(1)).max(start));
    }
    // Torn inside: new bytes, then old ones, and nothing new after them.
    let sector_start = (index * sector_bytes.max(1)).max(start) - start;
    let part = &bytes[sector_start as usize..];
    let old_at = part.iter().position(|b| matches!(b, Byte::Old | Byte::Gone))?;
    let new_after = part[old_at..].contains(&Byte::New);
    (!new_after).then_some(start + sector_start + old_at as u64)
}

/// A write whose surviving sectors are not a prefix, each named.
fn reordered(sectors: &[(u64, Sector)]) -> String {
    let named =
        |kind: Sector| -> Vec<u64> { sectors.iter().filter(|(_, k)| *k == kind).map(|(index, _)| *index).collect() };
    let mut parts = Vec::with_capacity(4);
    for (kind, word) in
        [(Sector::New, "survived"), (Sector::Old, "lost"), (Sector::Mixed, "torn inside"), (Sector::Same, "unchanged")]
    {
        let indices = named(kind);
        if !indices.is_empty() {
            let noun = if indices.len() == 1 { "sector" } else { "sectors" };
            parts.push(format!("{noun} {} {word}", index_list(&indices)));
        }
    }
    format!("reordered, partly kept: {}", parts.join("; "))
}

/// Ascending indices as runs, `3, 5-7`; past eight runs, how many more.
fn index_list(indices: &[u64]) -> String {
    debug_assert!(indices.windows(2).all(|w| w[0] < w[1]), "sector indices ascend");
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &index in indices {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == index => *last = index,
            _ => runs.push((index, index)),
        }
    }
    const SHOWN_RUNS: usize = 8;
    let mut text: Vec<String> =
        runs.iter().take(SHOWN_RUNS).map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    if runs.len() > SHOWN_RUNS {
        let more: u64 = runs[SHOWN_RUNS..].iter().map(|(a, b)| b - a + 1).sum();
        text.push(format!("and {more} more"));
    }
    text.join(", ")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use vfs::{OpenMode, Vfs};

    use super::{index_list, write_fate, Byte};
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

    /// `n` bytes of one class.
    fn of(class: Byte, n: usize) -> Vec<Byte> {
        vec![class; n]
    }

    #[test]
    fn a_reordered_write_names_the_sectors_that_survived_and_the_ones_lost() {
        let bytes = [of(Byte::Old, 4), of(Byte::New, 4), of(Byte::Old, 4)].concat();
        let fate = write_fate(&bytes, 0, 4);
        assert_eq!(fate, "reordered, partly kept: sector 1 survived; sectors 0, 2 lost");
        // The report colours a file by words in its fates: partly kept is `cut`.
        assert!(fate.contains("partly"));
        let bytes = [of(Byte::New, 2), of(Byte::Old, 4), of(Byte::New, 4)].concat();
        assert_eq!(write_fate(&bytes, 6, 4), "reordered, partly kept: sectors 1, 3 survived; sector 2 lost");
    }

    #[test]
    fn bytes_a_write_left_as_they_were_make_no_cut_inside_a_sector() {
        // A frame header rewritten with its first bytes unchanged, the
        // sector lost: not "cut at byte 12", which no sector-atomic disk does.
        let bytes = [of(Byte::Same, 4), of(Byte::Old, 4)].concat();
        assert_eq!(write_fate(&bytes, 8, 16), "lost (4 of its 8 bytes equal the old ones)");
        let bytes = [of(Byte::New, 4), of(Byte::Same, 2), of(Byte::Old, 2)].concat();
        assert_eq!(
            write_fate(&bytes, 0, 4),
            "cut at byte 4 (sector 1): the rest lost (2 of its 8 bytes equal the old ones)"
        );
        assert_eq!(write_fate(&of(Byte::Same, 8), 0, 4), "survived (all 8 of its bytes equal the old ones)");
    }

    #[test]
    fn a_cut_is_at_the_first_lost_sector_or_inside_a_torn_one() {
        let bytes = [of(Byte::New, 2), of(Byte::New, 4), of(Byte::Old, 4)].concat();
        assert_eq!(write_fate(&bytes, 2, 4), "cut at byte 8 (sector 2): the rest lost");
        let bytes = [of(Byte::New, 2), of(Byte::Old, 2), of(Byte::Gone, 4)].concat();
        assert_eq!(write_fate(&bytes, 0, 4), "cut at byte 2 (sector 0): the rest lost");
        assert_eq!(write_fate(&of(Byte::New, 9), 3, 4), "survived");
        assert_eq!(write_fate(&of(Byte::Gone, 9), 3, 4), "lost (past the end after the crash)");
        assert_eq!(write_fate(&[], 3, 4), "survived (empty)");
    }

    #[test]
    fn sector_lists_are_runs_and_stop_after_eight() {
        assert_eq!(index_list(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
        let every_other: Vec<u64> = (0..20).map(|i| i * 2).collect();
        assert_eq!(index_list(&every_other), "0, 2, 4, 6, 8, 10, 12, 14, and 12 more");
    }

    #[test]
    fn a_reorder_crash_names_the_sectors_the_disk_kept() {
        // Three 512-byte sectors of 1s overwritten with 2s, unsynced; each
        // crash keeps any subset (or garbage). The fate must name exactly
        // the sectors that read 2 after it.
        let mut reordered = 0;
        for crash_seed in 0..64 {
            let vfs = SimVfs::new(DiskConfig::fault_free(CrashMode::Reorder, 512), Trace::new(true));
            vfs.create_dir_all(Path::new("/d")).unwrap();
            let mut file = vfs.open(Path::new("/d/f"), OpenMode::Create).unwrap();
            file.write_at(0, &[1; 1536]).unwrap();
            file.sync().unwrap();
            vfs.sync_dir(Path::new("/d")).unwrap();
            file.write_at(0, &[2; 1536]).unwrap();
            drop(file);
            vfs.power_loss(crash_seed);
            let bytes = vfs.read_once(Path::new("/d/f")).unwrap();
            let trace = vfs.take_trace();
            let fate = &trace.detail().crashes[0].files[0].ops[0].fate;
            let kept: Vec<bool> = bytes.chunks(512).map(|sector| sector.iter().all(|b| *b == 2)).collect();
            let garbage = bytes.chunks(512).any(|sector| sector.iter().any(|b| *b != 1 && *b != 2));
            let expected = match (kept.iter().filter(|k| **k).count(), garbage) {
                (_, true) => None,
                (3, false) => Some("survived".to_string()),
                (0, false) => Some("lost".to_string()),
                (_, false) if kept == [true, false, false] => Some("cut at byte 512 (sector 1): the rest lost".into()),
                (_, false) if kept == [true, true, false] => Some("cut at byte 1024 (sector 2): the rest lost".into()),
                (_, false) => {
                    reordered += 1;
                    let list = |want: bool| {
                        let at: Vec<u64> = (0..3u64).filter(|i| kept[*i as usize] == want).collect();
                        let noun = if at.len() == 1 { "sector" } else { "sectors" };
                        format!("{noun} {}", index_list(&at))
                    };
                    Some(format!("reordered, partly kept: {} survived; {} lost", list(true), list(false)))
                }
            };
            match expected {
                Some(expected) => assert_eq!(fate, &expected, "crash seed {crash_seed}"),
                None => assert!(fate.starts_with("torn: garbage"), "crash seed {crash_seed}: {fate}"),
            }
        }
        assert!(reordered > 0, "no crash seed of 64 kept a non-prefix subset");
    }

    #[test]
    fn strict_loses_every_unsynced_write() {
        let fate = pictured(CrashMode::Strict, |file| file.write_at(1024, &[3; 600]).unwrap());
        assert_eq!((fate.len_durable, fate.len_volatile, fate.len_after), (1024, 1624, 1024));
        assert_eq!(fate.ops[0].fate, "lost (past the end after the crash)");
        assert!(fate.garbage.is_empty());
    }
}
