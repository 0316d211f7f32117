//! Power loss: building the next durable disk from the durable views plus
//! a choice over every pending operation, per the crash mode.
//!
//! Directories are settled first, because they decide which inodes are
//! still reachable; then each reachable inode's data; then, maybe, media
//! corruption of one durable sector. Every choice draws from one ChaCha8
//! stream in a fixed order (directories by path, inodes by number), so a
//! crash seed names exactly one outcome.
//!
//! Garbage from a torn write only lands on bytes that some pending
//! operation wrote: bytes that were durable and untouched stay as they
//! were, even in a torn sector ("powersafe overwrite"). A disk that smears
//! a torn write over its neighbours would break the fsync contract every
//! engine relies on; damage to durable bytes is modelled, announced, as
//! media corruption instead.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;

use std::path::{Path, PathBuf};

use super::config::{CrashMode, CrashOutcome, Damage, DamageKind, DiskConfig};
use super::data::{erase_vouchers_under, to_usize, write_into, DataOp, InodeId};
use super::dir::{Dir, DirOp};
use super::inode::Inode;
use super::moves;
use super::sectors::{inner_cuts, sector_end, sectors_spanned};
use super::silent::{self, Landing, Scar};
use super::state::FileSystem;

/// Settle every pending operation into the durable views. The caller
/// then resets the volatile views to them (`FileSystem::reset_to_durable`).
pub(super) fn build_next_disk(fs: &mut FileSystem, config: &DiskConfig, rng: &mut ChaCha8Rng) -> CrashOutcome {
    let with_history = durable_with_history(fs);
    let outcome = settle(fs, config, rng);
    forget_where_changed(fs, with_history);
    outcome
}

/// Before a power loss: the durable bytes of every file that has a
/// history (`history.rs`) (none outside a recording: nothing is copied then).
fn durable_with_history(fs: &FileSystem) -> BTreeMap<InodeId, Vec<u8>> {
    let with_history = fs.inodes.iter().filter(|(_, inode)| inode.history.is_some());
    with_history.map(|(id, inode)| (*id, inode.durable.clone())).collect()
}

/// After it: a file whose durable bytes the power loss changed (it kept
/// unsynced writes, or damaged the file) has no history from now on.
fn forget_where_changed(fs: &mut FileSystem, before: BTreeMap<InodeId, Vec<u8>>) {
    for (id, durable) in before {
        if let Some(inode) = fs.inodes.get_mut(&id).filter(|inode| inode.durable != durable) {
            inode.history = None;
        }
    }
}

/// [`build_next_disk`] but for the histories it may invalidate: the
/// directories first, then each reachable file's data, then where the
/// misdirected writes landed, then the damage no crash causes. The draws
/// come in that order.
fn settle(fs: &mut FileSystem, config: &DiskConfig, rng: &mut ChaCha8Rng) -> CrashOutcome {
    let mut outcome = CrashOutcome::default();
    // What silent write faults left on the durable images (nothing, and no
    // cost, on a disk without them), announced once the crash settled.
    let mut scars = open_scars(fs);
    let dirs = settle_dirs(fs, config, rng, &mut outcome);
    let reachable: BTreeSet<_> = fs.dirs.values().flat_map(|dir| dir.durable.values().copied()).collect();
    let mut landings = Vec::new();
    for (id, inode) in &mut fs.inodes {
        // An unreachable inode's data is gone whatever happens to it.
        if !reachable.contains(id) {
            continue;
        }
        let settled = settle_file(inode, *id, &dirs, config, rng);
        outcome.lost_writes += settled.lost_writes;
        outcome.torn_sectors += settled.torn_sectors;
        if !settled.scars.is_empty() {
            scars.entry(*id).or_default().extend(settled.scars);
        }
        landings.extend(settled.landings);
    }
    land_misdirected(fs, landings, &reachable, &mut scars);
    damage_beyond_the_crash(fs, config, rng, scars, &mut outcome);
    outcome
}

/// What settling the directories leaves the files to respect.
struct SettledDirs {
    /// The first metadata change a journal did not commit, where the
    /// profile journals lengths with names: no `set_len` made after it
    /// survives (`FsProfile::set_len_journaled`).
    barrier_seq: Option<u64>,
    /// Renames that survived carrying their file's first data ops with
    /// them (ext4's auto_da_alloc, `state/carried.rs`): inode to ops.
    carried: BTreeMap<InodeId, usize>,
}

/// Settle every directory's pending changes, by path, counting the lost
/// ones into `outcome`: each directory's survivors drawn (`draw_kept`),
/// a move across directories kept whole or lost whole (`moves.rs`), the
/// survivors applied in the order they were made.
fn settle_dirs(
    fs: &mut FileSystem,
    config: &DiskConfig,
    rng: &mut ChaCha8Rng,
    outcome: &mut CrashOutcome,
) -> SettledDirs {
    let in_order = config.fs.dir_changes_in_order;
    let as_prefix = config.crash_mode == CrashMode::Prefix || (config.crash_mode == CrashMode::Reorder && in_order);
    let dirs: Vec<&mut Dir> = fs.dirs.values_mut().collect();
    let pending: Vec<Vec<DirOp>> = dirs.iter().map(|dir| dir.pending.clone()).collect();
    let pending: Vec<&[DirOp]> = pending.iter().map(Vec::as_slice).collect();
    let mut kept: Vec<Vec<bool>> =
        pending.iter().map(|ops| draw_kept(ops.len(), config.crash_mode, as_prefix, rng)).collect();
    moves::couple(&pending, &mut kept, as_prefix);
    let mut entries: Vec<_> = dirs.iter().map(|dir| (dir.durable.clone(), dir.subdirs_durable.clone())).collect();
    let applied = moves::apply_kept(&mut entries, &pending, &kept);
    debug_assert!(!as_prefix || applied == kept, "a prefix of each directory's changes applies in order");
    let mut first_lost_seq: Option<u64> = None;
    let mut carried: BTreeMap<InodeId, usize> = BTreeMap::new();
    for ((dir, (files, subdirs)), (ops, applied)) in dirs.into_iter().zip(entries).zip(pending.iter().zip(&applied)) {
        (dir.durable, dir.subdirs_durable) = (files, subdirs);
        dir.pending.clear();
        for (op, applied) in ops.iter().zip(applied) {
            if !applied {
                outcome.lost_dir_changes += 1;
                first_lost_seq = Some(first_lost_seq.map_or(op.seq(), |seq| seq.min(op.seq())));
            } else if let Some((inode, flushes)) = op.carried_flushes() {
                let at_least = carried.entry(inode).or_insert(0);
                *at_least = (*at_least).max(flushes);
            }
        }
    }
    // Then each directory goes where its parent's settled entries put it
    // (a removal or rename kept or lost, `state/tree.rs`): after every
    // draw, so the draws are those of a disk with no such change.
    fs.place_after_crash();
    SettledDirs { barrier_seq: first_lost_seq.filter(|_| config.fs.set_len_journaled), carried }
}

/// Settle reachable inode `id`'s pending data per the crash mode, within
/// what the settled directories allow; nothing stays pending.
fn settle_file(
    inode: &mut Inode,
    id: InodeId,
    dirs: &SettledDirs,
    config: &DiskConfig,
    rng: &mut ChaCha8Rng,
) -> Settled {
    let blocked_at = dirs.barrier_seq.and_then(|barrier| first_set_len_after(&inode.pending, barrier));
    // A carried prefix survives whole: the file settles as in
    // `prefix` mode from there (in `reorder` mode too, whose other
    // choices could lose part of it).
    let at_least = dirs.carried.get(&id).copied().unwrap_or(0);
    let settled = match config.crash_mode {
        CrashMode::Strict => Settled::new(inode.pending.len() as u64, 0),
        CrashMode::Prefix => settle_prefix(inode, config, (at_least, blocked_at), rng),
        CrashMode::Reorder if at_least > 0 => settle_prefix(inode, config, (at_least, blocked_at), rng),
        CrashMode::Reorder => settle_reorder(inode, config, blocked_at.is_some(), rng),
    };
    inode.pending.clear();
    settled
}

/// Land the writes the crash misdirected (`silent.rs`), on reachable
/// files only; a landing that leaves bytes other than intended is a scar.
fn land_misdirected(
    fs: &mut FileSystem,
    landings: Vec<Landing>,
    reachable: &BTreeSet<InodeId>,
    scars: &mut BTreeMap<InodeId, Vec<Scar>>,
) {
    for landing in landings {
        let Some(inode) = fs.inodes.get_mut(&landing.inode).filter(|_| reachable.contains(&landing.inode)) else {
            continue;
        };
        // What the image should hold where the bytes land: its durable
        // bytes, with what earlier silent faults left wrong as it should be.
        let mut should_hold = inode.durable.clone();
        inode.silent.patch_cache(&mut should_hold);
        for earlier in scars.get(&landing.inode).into_iter().flatten() {
            earlier.patch(&mut should_hold);
        }
        let (offset_bytes, data) = (landing.offset_bytes, &landing.data);
        if let Some(scar) =
            silent::land(&mut inode.durable, &mut inode.vouchers, offset_bytes, data, Some(&should_hold))
        {
            scars.entry(landing.inode).or_default().push(scar);
        }
    }
}

/// The damage a power loss brings that no crash mode causes: maybe one
/// rotten sector, the silent faults' scars announced, maybe the
/// environment's damage; each into `outcome`.
fn damage_beyond_the_crash(
    fs: &mut FileSystem,
    config: &DiskConfig,
    rng: &mut ChaCha8Rng,
    scars: BTreeMap<InodeId, Vec<Scar>>,
    outcome: &mut CrashOutcome,
) {
    // Rot first: a sector it hits takes the records of durability in it
    // along, so the silent faults' damage is vouched for only by records
    // that survived the whole crash.
    if config.p_media_corruption > 0.0 && rng.gen_bool(config.p_media_corruption) {
        if let Some(damage) = corrupt_one_sector(fs, config.sector_bytes, rng) {
            outcome.media_corrupted.push(damage.path.clone());
            outcome.damage.push(damage);
        }
    }
    outcome.damage.extend(announce(fs, scars));
    if config.p_env_damage > 0.0 && rng.gen_bool(config.p_env_damage) {
        outcome.damage.extend(damage_environment(fs, rng));
    }
}

/// Before a power loss settles pending operations: each inode's silent
/// faults' scars that hold other bytes than intended now (`silent.rs`).
pub(super) fn open_scars(fs: &FileSystem) -> BTreeMap<InodeId, Vec<Scar>> {
    let mut open = BTreeMap::new();
    for (id, inode) in &fs.inodes {
        let scars = inode.silent.open_scars(&inode.durable);
        if !scars.is_empty() {
            open.insert(*id, scars);
        }
    }
    open
}

/// After the power loss settled: the damage each open scar of a reachable
/// file left (`Scar::first_wrong_byte`), and then every fate and scar is
/// forgotten.
pub(super) fn announce(fs: &mut FileSystem, open: BTreeMap<InodeId, Vec<Scar>>) -> Vec<Damage> {
    let mut damage = Vec::new();
    for (dir_path, dir) in &fs.dirs {
        for (name, id) in &dir.durable {
            let (Some(scars), Some(inode)) = (open.get(id), fs.inodes.get(id)) else { continue };
            for scar in scars {
                let Some(at) = scar.first_wrong_byte(&inode.durable, &inode.volatile) else { continue };
                let path = Path::new(dir_path).join(name).to_string_lossy().into_owned();
                let vouched = inode.vouched(scar.range());
                let matches_replacement_bytes = matches_replacement(fs, dir.volatile.get(name), *id);
                damage.push(Damage { kind: scar.kind, path, offset_bytes: at, vouched, matches_replacement_bytes });
            }
        }
    }
    for inode in fs.inodes.values_mut() {
        inode.silent.forget();
    }
    damage
}

/// [`Damage::matches_replacement_bytes`] for inode `id`, durable under a
/// path the page cache had come to name `replacement` by when power went
/// (the volatile views are still the page cache's while a crash settles).
fn matches_replacement(fs: &FileSystem, replacement: Option<&InodeId>, id: InodeId) -> u64 {
    let Some(replacement) = replacement.filter(|replacement| **replacement != id) else { return 0 };
    let (Some(file), Some(replacement)) = (fs.inodes.get(&id), fs.inodes.get(replacement)) else { return 0 };
    let same = file.durable.iter().zip(&replacement.volatile).take_while(|(a, b)| a == b).count();
    same as u64
}

/// Every durable file: (directory, name, inode), in path order.
fn durable_files(fs: &FileSystem) -> Vec<(PathBuf, String, InodeId)> {
    fs.dirs
        .iter()
        .flat_map(|(path, dir)| dir.durable.iter().map(move |(name, id)| (path.clone(), name.clone(), *id)))
        .collect()
}

/// The environment's damage (see `DiskConfig::p_env_damage`): one kind,
/// to one random durable file, or a stray file beside it.
fn damage_environment(fs: &mut FileSystem, rng: &mut ChaCha8Rng) -> Option<Damage> {
    let files = durable_files(fs);
    if files.is_empty() {
        return None;
    }
    let (dir_path, name, id) = files[rng.gen_range(0..files.len())].clone();
    let path = dir_path.join(&name);
    let kind = [DamageKind::FileLost, DamageKind::FileTruncated, DamageKind::JunkPrepended, DamageKind::StrayFile]
        [rng.gen_range(0..4)];
    let inode = fs.inodes.get_mut(&id).expect("a durable entry's inode is alive");
    let path = match kind {
        DamageKind::FileLost => {
            fs.dirs.get_mut(&dir_path).expect("listed above").durable.remove(&name);
            path
        }
        DamageKind::FileTruncated => {
            inode.durable.clear();
            inode.vouchers.clear();
            inode.whole_bytes = 0;
            path
        }
        DamageKind::JunkPrepended => {
            let mut junk = vec![0u8; rng.gen_range(1..=64)];
            rng.fill_bytes(&mut junk);
            junk.append(&mut inode.durable);
            inode.durable = junk;
            inode.vouchers.clear();
            inode.whole_bytes = 0;
            path
        }
        DamageKind::StrayFile => {
            let stray = format!("stray-{:08x}.bin", rng.next_u32());
            let mut bytes = vec![0u8; rng.gen_range(0..=256)];
            rng.fill_bytes(&mut bytes);
            let stray_path = dir_path.join(&stray);
            if !fs.dirs[&dir_path].durable.contains_key(&stray) {
                fs.add_durable_file(&dir_path, &stray, bytes);
            }
            stray_path
        }
        DamageKind::Media | DamageKind::LostWrite | DamageKind::MisdirectedWrite => {
            unreachable!("media corruption and silent write faults are drawn apart")
        }
    };
    let path = path.to_string_lossy().into_owned();
    Some(Damage { kind, path, offset_bytes: 0, vouched: false, matches_replacement_bytes: 0 })
}

/// The position of the first of `pending` that is a `set_len` made after
/// metadata change `barrier_seq` (which a journal did not commit).
fn first_set_len_after(pending: &[DataOp], barrier_seq: u64) -> Option<usize> {
    pending.iter().position(|op| matches!(op, DataOp::SetLen { seq, .. } if *seq > barrier_seq))
}

/// Which of a directory's `len` pending changes a crash keeps, per the
/// crash mode: none (`strict`), a prefix (`prefix`, and `reorder` where
/// the profile keeps directory changes in order, `as_prefix`: a journal
/// replays in order), or each by a coin (`reorder`).
fn draw_kept(len: usize, mode: CrashMode, as_prefix: bool, rng: &mut ChaCha8Rng) -> Vec<bool> {
    match mode {
        CrashMode::Strict => vec![false; len],
        CrashMode::Prefix | CrashMode::Reorder if as_prefix => {
            let keep = rng.gen_range(0..=len);
            (0..len).map(|at| at < keep).collect()
        }
        CrashMode::Prefix => unreachable!("a prefix crash keeps a prefix"),
        CrashMode::Reorder => (0..len).map(|_| rng.gen_bool(0.5)).collect(),
    }
}

struct Settled {
    lost_writes: u64,
    torn_sectors: u64,
    /// What kept writes with a silent fate left wrong (`prefix` only).
    scars: Vec<Scar>,
    landings: Vec<Landing>,
}

impl Settled {
    fn new(lost_writes: u64, torn_sectors: u64) -> Settled {
        Settled { lost_writes, torn_sectors, scars: Vec::new(), landings: Vec::new() }
    }
}

fn fill_garbage(image: &mut Vec<u8>, range: Range<u64>, rng: &mut ChaCha8Rng) {
    if image.len() < to_usize(range.end) {
        image.resize(to_usize(range.end), 0);
    }
    rng.fill_bytes(&mut image[to_usize(range.start)..to_usize(range.end)]);
}

/// `prefix`: a random number of pending ops survive whole (at least
/// `at_least`, a prefix a surviving rename carried; none from a `set_len`
/// the journal did not commit on, `blocked_at`); the next one,
/// if a write, is torn: a sector-aligned prefix of it survives (maybe
/// none), and the sector it was writing when power went may hold garbage.
///
/// A kept write with a silent fate (`silent.rs`) meets it here as at an
/// fsync: the drive wrote it before the power went, and lost or misdirected
/// it — a lost write before any fsync, which a later kept write outlives.
fn settle_prefix(
    inode: &mut Inode,
    config: &DiskConfig,
    (at_least, blocked_at): (usize, Option<usize>),
    rng: &mut ChaCha8Rng,
) -> Settled {
    let count = inode.pending.len();
    let blocked = blocked_at.unwrap_or(count);
    // A carried prefix was made before the rename that carried it, so
    // before any change a journal lost after that rename: never blocked.
    assert!(at_least <= blocked, "a carried prefix of the pending ops ends before a blocked set_len");
    // A `set_len` the journal did not commit (`blocked_at`) ends what can
    // survive: drawn as ever, then cut there.
    let keep = rng.gen_range(at_least..=count).min(blocked);
    let (mut scars, mut landings) = (Vec::new(), Vec::new());
    for (index, op) in inode.pending[..keep].iter().enumerate() {
        match silent::fate_of(&inode.silent.fates, index, op) {
            Some((offset_bytes, data, fate)) => landings.extend(silent::strike(
                &mut inode.durable,
                &mut inode.vouchers,
                offset_bytes,
                data,
                fate,
                &mut scars,
            )),
            None => op.apply(&mut inode.durable),
        }
    }
    let mut torn_sectors = 0;
    if let Some(DataOp::Write { offset_bytes, data }) = inode.pending.get(keep) {
        let end_bytes = offset_bytes + data.len() as u64;
        let cuts = inner_cuts(*offset_bytes..end_bytes, config.sector_bytes);
        // Choice 0 keeps nothing; choice i keeps up to the i-th boundary.
        let choice = rng.gen_range(0..=cuts.count);
        let cut_bytes = if choice == 0 { *offset_bytes } else { cuts.at(choice - 1) };
        let kept = to_usize(cut_bytes - offset_bytes);
        if kept > 0 {
            write_into(&mut inode.durable, *offset_bytes, &data[..kept]);
        }
        let torn_end_bytes = sector_end(cut_bytes, config.sector_bytes).min(end_bytes);
        let garbage = config.p_torn_garbage > 0.0 && rng.gen_bool(config.p_torn_garbage);
        if garbage && cut_bytes < torn_end_bytes {
            fill_garbage(&mut inode.durable, cut_bytes..torn_end_bytes, rng);
            torn_sectors = 1;
        }
    }
    Settled { lost_writes: (count - keep) as u64, torn_sectors, scars, landings }
}

/// What one dirty sector holds after a `reorder` crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Old,
    New,
    Garbage,
}

/// `reorder`: the length is the durable or the volatile one (the durable
/// one if a pending `set_len` was not committed by the journal,
/// `length_blocked`); each sector a pending op dirtied is independently
/// old, new or garbage, but for a block a kept cut freed on a profile
/// that never shows it stale ([`freed_from`]): new.
fn settle_reorder(inode: &mut Inode, config: &DiskConfig, length_blocked: bool, rng: &mut ChaCha8Rng) -> Settled {
    if inode.pending.is_empty() {
        return Settled::new(0, 0);
    }
    let sector_bytes = config.sector_bytes;
    let durable_len = inode.durable.len() as u64;
    let volatile_len = inode.volatile.len() as u64;
    let drawn_len = if durable_len != volatile_len && rng.gen_bool(0.5) { volatile_len } else { durable_len };
    let new_len = if length_blocked { durable_len } else { drawn_len };
    let Dirtied { op_ranges, dirty, shortest_len_bytes } =
        dirty_sectors(&inode.pending, durable_len, volatile_len, sector_bytes);
    let lengths = Lengths { durable_bytes: durable_len, volatile_bytes: volatile_len, kept_bytes: new_len };
    let freed_from_bytes = freed_from(lengths, shortest_len_bytes, config);
    // Decide each dirty sector inside the new length, then build the image
    // from the durable one: old bytes are already there.
    let mut image = std::mem::take(&mut inode.durable);
    image.resize(to_usize(new_len), 0);
    let mut fates = vec![Fate::Old; dirty.len()];
    let mut torn_sectors = 0;
    for (sector, fate) in fates.iter_mut().enumerate() {
        let start_bytes = sector as u64 * sector_bytes;
        if !dirty[sector] || start_bytes >= new_len {
            continue;
        }
        let end_bytes = (start_bytes + sector_bytes).min(new_len);
        *fate = draw_sector_fate(config, rng);
        // Drawn first either way, so the draws after it are the same.
        if start_bytes >= freed_from_bytes {
            *fate = Fate::New;
        }
        match *fate {
            Fate::Old => {}
            Fate::New => copy_new_bytes(&mut image, &inode.volatile, start_bytes..end_bytes),
            Fate::Garbage => {
                torn_sectors += 1;
                garbage_where_written(&mut image, &op_ranges, start_bytes..end_bytes, rng);
            }
        }
    }
    // XFS and btrfs move a file's on-disk size when the write that grows
    // it completes (the profile's `size_ahead_of_data`, FILESYSTEMS.md):
    // a grown length over a sector that did not get its new bytes is no
    // state of theirs, so the length stays the durable one. Every fate is
    // drawn first either way, so the draws after this file are the same.
    let new_len =
        if !config.fs.size_ahead_of_data && grown_past_data(&dirty, &fates, durable_len, new_len, sector_bytes) {
            image.truncate(to_usize(durable_len));
            durable_len
        } else {
            new_len
        };
    inode.durable = image;
    let lost_writes = ops_not_whole(&op_ranges, &fates, new_len, volatile_len, sector_bytes);
    Settled::new(lost_writes, torn_sectors)
}

/// A file system's block: what a cut frees, and a write allocates again.
const FS_BLOCK_BYTES: u64 = 4096;

/// A file's lengths at a power loss: durable before it, in the page cache,
/// and the one the crash keeps.
#[derive(Clone, Copy)]
struct Lengths {
    durable_bytes: u64,
    volatile_bytes: u64,
    kept_bytes: u64,
}

/// Where the blocks a kept cut freed start, on a profile where such a
/// block, grown back, holds only what the page cache held (not
/// `freed_blocks_stale`): the first block wholly past the shortest length
/// the pending ops cut the file to (`shortest_len_bytes`), when the power
/// loss keeps the volatile length and it is not the durable one (every
/// pending length change was kept, that cut among them: the journal keeps
/// them in order). `u64::MAX` when there is none. The block the cut ends
/// in keeps its place, and the bytes past the cut in it may be old on the
/// disk.
fn freed_from(lengths: Lengths, shortest_len_bytes: u64, config: &DiskConfig) -> u64 {
    let Lengths { durable_bytes, volatile_bytes, kept_bytes } = lengths;
    debug_assert!(shortest_len_bytes <= durable_bytes.min(volatile_bytes));
    // A length equal to the durable one does not say the cut was kept.
    let cut_kept = kept_bytes == volatile_bytes && kept_bytes != durable_bytes;
    if config.fs.freed_blocks_stale || !cut_kept || shortest_len_bytes >= durable_bytes {
        return u64::MAX;
    }
    shortest_len_bytes.div_ceil(FS_BLOCK_BYTES) * FS_BLOCK_BYTES
}

/// Whether `new_len` grows the file past `durable_len` over a dirty
/// sector that did not get its new bytes (old or garbage): a length ahead
/// of its data.
fn grown_past_data(dirty: &[bool], fates: &[Fate], durable_len: u64, new_len: u64, sector_bytes: u64) -> bool {
    new_len > durable_len
        && (durable_len / sector_bytes..new_len.div_ceil(sector_bytes))
            .map(to_usize)
            .any(|sector| dirty[sector] && fates[sector] != Fate::New)
}

/// What the pending ops dirtied: each op's dirty bytes, which sectors any
/// of them dirtied (as far as the longest length the file reached), and
/// the shortest length they cut the file to (the durable one if none).
struct Dirtied {
    op_ranges: Vec<Range<u64>>,
    dirty: Vec<bool>,
    shortest_len_bytes: u64,
}

/// [`Dirtied`], replaying the lengths the ops saw from `durable_len` (they
/// end at `volatile_len`).
fn dirty_sectors(pending: &[DataOp], durable_len: u64, volatile_len: u64, sector_bytes: u64) -> Dirtied {
    let mut op_ranges = Vec::with_capacity(pending.len());
    let mut len_bytes = durable_len;
    let (mut max_len_bytes, mut shortest_len_bytes) = (len_bytes, len_bytes);
    for op in pending {
        op_ranges.push(op.dirty_range(len_bytes));
        len_bytes = op.len_after(len_bytes);
        max_len_bytes = max_len_bytes.max(len_bytes);
        shortest_len_bytes = shortest_len_bytes.min(len_bytes);
    }
    assert_eq!(len_bytes, volatile_len, "the pending ops lead from the durable length to the volatile one");
    let mut dirty = vec![false; to_usize(sectors_spanned(max_len_bytes, sector_bytes))];
    for range in &op_ranges {
        if range.start < range.end {
            for sector in range.start / sector_bytes..range.end.div_ceil(sector_bytes) {
                dirty[to_usize(sector)] = true;
            }
        }
    }
    Dirtied { op_ranges, dirty, shortest_len_bytes }
}

/// One dirty sector's fate: garbage at `p_torn_garbage`, else old or new
/// with even odds.
fn draw_sector_fate(config: &DiskConfig, rng: &mut ChaCha8Rng) -> Fate {
    if config.p_torn_garbage > 0.0 && rng.gen_bool(config.p_torn_garbage) {
        Fate::Garbage
    } else if rng.gen_bool(0.5) {
        Fate::New
    } else {
        Fate::Old
    }
}

/// A sector's `range` holds the page cache's (`volatile`) bytes.
///
/// Past the volatile end the file was cut; it can be inside the new length
/// only if that is the old length — the cut did not survive, and with it
/// the blocks it freed did not either (a file system changes the size and
/// the block map in one metadata update): those bytes stay old. (Zeroing
/// them, as this once did, made SQLite's journal look torn where no disk
/// would: SQLITE.md, finding 3.)
fn copy_new_bytes(image: &mut [u8], volatile: &[u8], range: Range<u64>) {
    let (start, end) = (to_usize(range.start), to_usize(range.end));
    let copy_end = end.min(volatile.len());
    if start < copy_end {
        image[start..copy_end].copy_from_slice(&volatile[start..copy_end]);
    }
}

/// A torn sector's `range`: garbage over the bytes a pending op wrote
/// (`op_ranges`), in op order; durable neighbours stay.
fn garbage_where_written(image: &mut Vec<u8>, op_ranges: &[Range<u64>], range: Range<u64>, rng: &mut ChaCha8Rng) {
    for op_range in op_ranges {
        let lo = op_range.start.max(range.start);
        let hi = op_range.end.min(range.end);
        if lo < hi {
            fill_garbage(image, lo..hi, rng);
        }
    }
}

/// The ops that did not survive whole: an op did if the file kept its
/// newest length and every sector it dirtied holds the newest content.
fn ops_not_whole(op_ranges: &[Range<u64>], fates: &[Fate], new_len: u64, volatile_len: u64, sector_bytes: u64) -> u64 {
    op_ranges
        .iter()
        .filter(|range| {
            if new_len != volatile_len {
                return true;
            }
            let clipped_end = range.end.min(new_len);
            range.start < clipped_end
                && (range.start / sector_bytes..clipped_end.div_ceil(sector_bytes))
                    .any(|sector| fates[to_usize(sector)] != Fate::New)
        })
        .count() as u64
}

/// Damage one random sector of one random non-empty durable file: half
/// the time it holds garbage (a sector the drive lost), half the time one
/// of its bits is flipped (bit rot: the quietest damage, which only a
/// checksum over every byte read catches, and which a reader that skips
/// its checksum serves as data). The file's path, or `None` if every
/// durable file is empty.
fn corrupt_one_sector(fs: &mut FileSystem, sector_bytes: u64, rng: &mut ChaCha8Rng) -> Option<Damage> {
    let candidates: Vec<_> = fs
        .dirs
        .iter()
        .flat_map(|(path, dir)| dir.durable.iter().map(move |(name, id)| (path, name, *id)))
        .filter(|(_, _, id)| !fs.inodes[id].durable.is_empty())
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let (dir_path, name, id) = candidates[rng.gen_range(0..candidates.len())];
    let path = dir_path.join(name).to_string_lossy().into_owned();
    let inode = fs.inodes.get_mut(&id).expect("a durable entry's inode is alive");
    let len_bytes = inode.durable.len() as u64;
    let sector = rng.gen_range(0..sectors_spanned(len_bytes, sector_bytes));
    let start = to_usize(sector * sector_bytes);
    let end = to_usize(((sector + 1) * sector_bytes).min(len_bytes));
    if rng.gen_bool(0.5) {
        let bit = rng.gen_range(0..(end - start) * 8);
        let at = start + bit / 8;
        inode.durable[at] ^= 1 << (bit % 8);
        let vouched = inode.vouched(at as u64..at as u64 + 1);
        erase_vouchers_under(&mut inode.vouchers, at as u64..at as u64 + 1);
        return Some(Damage {
            kind: DamageKind::Media,
            path,
            offset_bytes: at as u64,
            vouched,
            matches_replacement_bytes: 0,
        });
    }
    let vouched = inode.vouched(start as u64..end as u64);
    erase_vouchers_under(&mut inode.vouchers, start as u64..end as u64);
    let image = &mut inode.durable;
    let damaged_at = |at: usize| Damage {
        kind: DamageKind::Media,
        path: path.clone(),
        offset_bytes: at as u64,
        vouched,
        matches_replacement_bytes: 0,
    };
    let before = image[start..end].to_vec();
    rng.fill_bytes(&mut image[start..end]);
    // The first byte that changed (random bytes may equal the old ones: a
    // one-byte tail sector does so one time in 256, and then a byte is
    // flipped, since corruption must be real to be announced).
    let changed = (start..end).find(|&i| image[i] != before[i - start]).unwrap_or_else(|| {
        image[start] ^= 0xff;
        start
    });
    Some(damaged_at(changed))
}
