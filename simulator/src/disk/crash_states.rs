//! The crash states of a snapshot: the disks a power loss at that instant
//! may leave behind, enumerated rather than sampled, in a fixed order —
//! a state's number is its position, which is how a report names it and
//! `sim explore --only-state` finds it again.
//!
//! The model is the one the random crash modes draw from (`crash.rs`): a
//! pending directory change survives or not, survivors apply in their
//! original order and one whose precondition no longer holds is skipped;
//! a file keeps a prefix of its pending data operations, the first lost
//! one, if a write, may be torn at a sector boundary, and the sector it
//! was writing may hold garbage — only over bytes that write covered
//! ("powersafe overwrite"), or the file grows with none of the write's
//! bytes. Exhaustive means the choices multiply, so the enumeration takes
//! families that vary one or two things each, and completes them where
//! the whole product is small:
//!
//! 1. **Directory changes.** Each chosen subset of the pending changes
//!    (over all directories, by path, oldest first): every subset when
//!    there are at most four, or when there are no more subsets than
//!    `max_dir_subsets`; otherwise that many, chosen deterministically —
//!    none, all, each proper prefix (what a file system committing in
//!    order leaves), each "all but one", each "only one", then subsets
//!    drawn from a stream seeded by their number. Each subset comes with
//!    every file's data lost, then with every file's data surviving.
//! 2. **One file's data, the others strict.** For each file with pending
//!    operations: its first `k` surviving whole, for `k` from 1 to all;
//!    and, for each pending write, everything before it surviving and the
//!    write itself cut at each sector boundary strictly inside it, then
//!    cut at its start or at any of those boundaries with the rest of
//!    that sector holding a fixed garbage pattern. Each comes with no
//!    pending directory change applied, then with all of them.
//! 3. **Two files' data, the others strict.** For each pair of files with
//!    pending operations (by inode), each keeps its first `k` whole
//!    (`k` from 1 to all, or — past [`WHOLE_OP_CUTS`] operations — that
//!    many evenly spaced `k`s ending at all), skipping the combination
//!    family 1 already has (everything surviving, when these are the only
//!    two files); at most [`MAX_TWO_FILE_STATES`] combinations per
//!    snapshot, in that order. Each comes with no pending directory change
//!    applied, then with all of them. (The log half-written while the
//!    manifest, a segment or the rewrite's new log is half-written too:
//!    what `prefix` mode draws per file, independently.)
//!
//! 4. **One file's writes reordered** (only when asked: a target whose
//!    engine must survive out-of-order writeback within a file, such as
//!    redb's one-phase commit, whose header write must not land before
//!    its data pages do). For each file with two or more pending
//!    operations: each one surviving alone (but the first, which family 2
//!    has), then all but each one surviving (but the last, likewise); at
//!    most [`MAX_REORDERED_STATES`] per snapshot, each with no pending
//!    directory change applied, then with all of them.
//!
//! 5. **One file grown with none of a write, the others strict** (on a
//!    profile whose `size_ahead_of_data` says it can happen). For
//!    each pending write that grew its file, everything before it
//!    surviving, and the file grown to each sector boundary inside the
//!    write past the old end, or to the write's end, with none of the
//!    write's bytes (zeros): a size update that went ahead of its data,
//!    which ext4 leaves under `data=ordered` for an append into an
//!    already-allocated block (`Torn::unwritten`). Each with no pending
//!    directory change applied, then with all of them. (The random
//!    mode's `reorder` draws the write's end with old sectors; its
//!    `prefix` none of these.)
//! 6. **The rest of the model's states, where they are few**
//!    (`crash_product.rs`). The model's whole state set is the product of
//!    the directory subsets the profile allows (any subset; a prefix per
//!    directory where changes survive in order) and each file's cuts (its
//!    first `k` pending operations whole, the next write maybe torn at a
//!    sector boundary, with garbage only where asked for, or grown with
//!    none of it as in family 5). Where that
//!    product is at most [`StateOptions::complete_up_to`] states, every
//!    state of it the families above did not take is appended: torn
//!    writes in two files at once, three files cut at once, a directory
//!    subset combined with a cut file. Above the bound the families above
//!    are a sample of it, and the explorers say so with the counts.
//!
//! Not enumerated, ever: the `reorder` mode's choices beyond one operation
//! kept or lost (sector by sector), which the random mode samples. The
//! first state is always the strict one (every pending change lost).
//! Families are appended in this order, so a family added later never
//! renumbers an earlier one's states. Different states may leave
//! byte-identical disks; the explorer dedupes them by
//! [`super::DiskImage::hash`].
//!
//! A state the profile rules out is kept in the list, numbered, and marked
//! not [`CrashState::explored`]: ext4's `auto_da_alloc` keeps a replacing
//! rename's file data with the rename (`DirOp::Rename::flushes`), so a
//! state that applies such a rename and loses that data is none ext4 can
//! leave; and under a profile that journals lengths with names
//! (`FsProfile::set_len_journaled`), a state that keeps a `set_len` made
//! after a directory change it loses is none either.
//!
//! This file lists and counts the states; the disk a state leaves is
//! `crash_image.rs`'s to build, and its line for a person
//! `crash_describe.rs`'s.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use std::sync::Arc;

use super::data::{DataOp, InodeId};
use super::dir::DirOp;
use super::sectors::inner_cuts;
use super::snapshot::{DiskSnapshot, FileSnapshot};

/// Every subset of this many pending directory changes is enumerated,
/// whatever `max_dir_subsets` says (16 subsets at most).
pub const ALL_DIR_SUBSETS_UP_TO: usize = 4;

/// Family 3: a file with more pending operations than this is cut at this
/// many evenly spaced whole-operation points (the last one: all of them).
pub const WHOLE_OP_CUTS: usize = 4;

/// Family 3: combinations of two files' cuts per snapshot, at most (each
/// then with and without the pending directory changes).
pub const MAX_TWO_FILE_STATES: usize = 64;

/// Family 4: reordered states per snapshot, at most (each then with and
/// without the pending directory changes).
pub const MAX_REORDERED_STATES: usize = 64;

/// A directory's entries: name to inode.
pub(super) type Entries = BTreeMap<String, InodeId>;

/// How to enumerate a snapshot's crash states (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateOptions {
    /// Family 1's bound on directory subsets (at least 1).
    pub max_dir_subsets: usize,
    /// Family 4: one file's writes reordered.
    pub reordered: bool,
    /// Torn sectors holding garbage are explored: family 6 takes them and
    /// the model's count counts them (families 2 and 3 always list them).
    pub garbage: bool,
    /// Family 6 where the model allows at most this many states
    /// (`u64::MAX`: always, an exhaustive run; 0: never).
    pub complete_up_to: u64,
}

impl StateOptions {
    /// Families 1 to 3 and 5 with `max_dir_subsets`, garbage listed,
    /// never completed (no family 6).
    pub fn families(max_dir_subsets: usize) -> StateOptions {
        StateOptions { max_dir_subsets, reordered: false, garbage: true, complete_up_to: 0 }
    }
}

/// One crash state of a snapshot (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashState {
    /// One flag per pending directory change, in the snapshot's order
    /// (directories by path, changes oldest first): whether it survives.
    pub(super) dir_changes_kept: Vec<bool>,
    pub(super) data: DataFate,
    /// The profile allows it (see the module doc on `auto_da_alloc`).
    pub(super) allowed: bool,
}

/// One file's part of a crash state: its first `whole_ops` pending
/// operations survive whole, and the next, if `torn`, in part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Cut {
    pub whole_ops: usize,
    pub torn: Option<Torn>,
}

/// What survives of the pending data operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DataFate {
    /// Every file keeps only its durable bytes.
    Strict,
    /// Every file gets every pending operation.
    AllSurvive,
    /// One file keeps its first `whole_ops` pending operations and maybe
    /// part of the next; every other file keeps only its durable bytes.
    OneFile { inode: InodeId, whole_ops: usize, torn: Option<Torn> },
    /// Two files (`first.0 < second.0`) each keep their first `.1` pending
    /// operations whole; every other file keeps only its durable bytes.
    TwoFiles { first: (InodeId, usize), second: (InodeId, usize) },
    /// One file keeps only its pending operation `op` (`alone`), or every
    /// one but `op`; every other file keeps only its durable bytes.
    Reordered { inode: InodeId, op: usize, alone: bool },
    /// Family 6: each listed file (by inode, each once) keeps its cut;
    /// every other file keeps only its durable bytes.
    Cuts(Arc<[(InodeId, Cut)]>),
}

/// The write after the surviving ones, cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Torn {
    /// The write's bytes before this file offset survive: its start or a
    /// sector boundary strictly inside it. With `unwritten`: the file's
    /// new length, a sector boundary inside the write and past the file's
    /// end before it, or the write's end.
    pub(super) cut_bytes: u64,
    /// The rest of the sector holding `cut_bytes` (as far as the write
    /// reached) holds [`garbage_byte`]s instead of old or new bytes.
    pub(super) garbage: bool,
    /// The file grew to `cut_bytes` but none of the write's bytes reached
    /// the disk: what was there before stays, zeros past the old end. A
    /// size update that went ahead of its data: ext4 does this under
    /// `data=ordered` for an append into a block that was already
    /// allocated (the write's `i_disksize` update is journaled, its data is
    /// not ordered: `make kernel-check`, probe `append_unsynced`, saw a
    /// 9-byte file read back 4096 bytes long, zeros after the 9).
    pub(super) unwritten: bool,
}

impl CrashState {
    /// Nothing unsynced survives: no pending directory change of the
    /// `pending_dir_changes`, no pending data.
    pub(super) fn strict(pending_dir_changes: usize) -> CrashState {
        CrashState { dir_changes_kept: vec![false; pending_dir_changes], data: DataFate::Strict, allowed: true }
    }

    /// Whether this state leaves a torn sector holding garbage: a target
    /// whose disk model leaves that out (see `crate::systems::redb`) skips
    /// such states.
    pub fn has_garbage(&self) -> bool {
        let garbage = |torn: &Option<Torn>| matches!(torn, Some(Torn { garbage: true, .. }));
        match &self.data {
            DataFate::OneFile { torn, .. } => garbage(torn),
            DataFate::Cuts(cuts) => cuts.iter().any(|(_, cut)| garbage(&cut.torn)),
            _ => false,
        }
    }

    /// Whether this state cuts two files at once (family 3).
    pub fn cuts_two_files(&self) -> bool {
        matches!(self.data, DataFate::TwoFiles { .. })
    }

    /// Whether the profile allows this state (see the module doc): one it
    /// rules out keeps its number and is explored by no one.
    pub fn is_allowed(&self) -> bool {
        self.allowed
    }

    /// Whether an explorer that explores torn garbage or not (`garbage`)
    /// takes this state: the profile allows it, and it holds no garbage
    /// unless asked for.
    pub fn explored(&self, garbage: bool) -> bool {
        self.allowed && (garbage || !self.has_garbage())
    }
}

impl DiskSnapshot {
    /// Families 1 to 3 and 5 of this snapshot's crash states, in the order
    /// of the module doc ([`StateOptions::families`]). `max_dir_subsets` (at
    /// least 1) bounds family 1 when the pending directory changes have
    /// more subsets than that.
    pub fn crash_states(&self, max_dir_subsets: usize) -> Vec<CrashState> {
        self.crash_states_for(&StateOptions::families(max_dir_subsets))
    }

    /// Every crash state of this snapshot `options` asks for, in the order
    /// of the module doc, each marked whether the profile allows it.
    pub fn crash_states_for(&self, options: &StateOptions) -> Vec<CrashState> {
        assert!(options.max_dir_subsets >= 1, "at least the strict subset");
        let changes = self.pending_dir_changes();
        let any_data = self.pending_data_ops() > 0;
        let mut states = Vec::new();
        let mut push = |dir_changes_kept: Vec<bool>, data: DataFate| {
            states.push(CrashState { dir_changes_kept, data, allowed: true });
        };
        let subsets = dir_subsets(changes, options.max_dir_subsets);
        for kept in subsets.into_iter().filter(|kept| !self.profile.dir_changes_in_order || self.prefix_per_dir(kept)) {
            push(kept.clone(), DataFate::Strict);
            if any_data {
                push(kept, DataFate::AllSurvive);
            }
        }
        let ends = if changes == 0 { vec![Vec::new()] } else { vec![vec![false; changes], vec![true; changes]] };
        let (one_file, grown) = self.one_file_fates();
        let reorderings = if options.reordered { self.reordered_fates() } else { Vec::new() };
        for fate in one_file.into_iter().chain(self.two_file_fates()).chain(reorderings).chain(grown) {
            for kept in &ends {
                push(kept.clone(), fate.clone());
            }
        }
        if self.is_complete_under(options) {
            self.complete(&mut states, options.garbage);
        }
        self.mark_allowed(&mut states);
        states
    }

    /// Whether `state` keeps no `set_len` made after a directory change it
    /// loses: what a journal that commits lengths and names in one order
    /// can leave (`FsProfile::set_len_journaled`).
    fn set_lens_in_order(&self, state: &CrashState) -> bool {
        let changes = self.dirs.values().flat_map(|dir| dir.pending.iter());
        let lost = changes.zip(&state.dir_changes_kept).filter(|(_, kept)| !**kept);
        let Some(first_lost_seq) = lost.map(|(op, _)| op.seq()).min() else { return true };
        self.files.iter().all(|(id, file)| {
            file.pending.iter().enumerate().all(|(index, op)| {
                let late = matches!(op, DataOp::SetLen { seq, .. } if *seq > first_lost_seq);
                !(late && state.data.keeps_op(*id, index))
            })
        })
    }

    /// Whether `kept` (one flag per pending directory change, directories
    /// by path) keeps a prefix of each directory's changes: what a journal
    /// replaying in order can leave (`FsProfile::dir_changes_in_order`).
    pub(super) fn prefix_per_dir(&self, kept: &[bool]) -> bool {
        let mut at = 0;
        for dir in self.dirs.values() {
            let flags = &kept[at..at + dir.pending.len()];
            at += dir.pending.len();
            if flags.windows(2).any(|pair| !pair[0] && pair[1]) {
                return false;
            }
        }
        assert_eq!(at, kept.len(), "one flag per pending directory change");
        true
    }

    /// Family 2 in order, and apart from it family 5 (a file grown with
    /// none of its write: appended later, so it renumbers nothing).
    fn one_file_fates(&self) -> (Vec<DataFate>, Vec<DataFate>) {
        let (mut one_file, mut grown) = (Vec::new(), Vec::new());
        for (id, file) in &self.files {
            for cut in file_cuts(file, self.sector_bytes, true, self.profile.size_ahead_of_data).into_iter().skip(1) {
                let fate = DataFate::OneFile { inode: *id, whole_ops: cut.whole_ops, torn: cut.torn };
                let unwritten = cut.torn.is_some_and(|torn| torn.unwritten);
                if unwritten { &mut grown } else { &mut one_file }.push(fate);
            }
        }
        (one_file, grown)
    }

    fn reordered_fates(&self) -> Vec<DataFate> {
        let mut fates = Vec::new();
        for (id, file) in self.files.iter().filter(|(_, f)| f.pending.len() >= 2) {
            let ops = file.pending.len();
            let alone = (1..ops).map(|op| DataFate::Reordered { inode: *id, op, alone: true });
            let all_but = (0..ops - 1).map(|op| DataFate::Reordered { inode: *id, op, alone: false });
            fates.extend(alone.chain(all_but));
        }
        fates.truncate(MAX_REORDERED_STATES);
        fates
    }

    /// Family 3 (see the module doc), in order, bounded.
    fn two_file_fates(&self) -> Vec<DataFate> {
        let pending: Vec<(InodeId, usize)> =
            self.files.iter().filter(|(_, f)| !f.pending.is_empty()).map(|(id, f)| (*id, f.pending.len())).collect();
        let mut fates = Vec::new();
        for (i, &(first, first_ops)) in pending.iter().enumerate() {
            for &(second, second_ops) in &pending[i + 1..] {
                for first_cut in whole_op_cuts(first_ops) {
                    for second_cut in whole_op_cuts(second_ops) {
                        let everything = pending.len() == 2 && first_cut == first_ops && second_cut == second_ops;
                        if everything {
                            continue;
                        }
                        if fates.len() == MAX_TWO_FILE_STATES {
                            return fates;
                        }
                        fates.push(DataFate::TwoFiles { first: (first, first_cut), second: (second, second_cut) });
                    }
                }
            }
        }
        fates
    }

    /// Mark every state the profile rules out (see the module doc): one
    /// that applies a rename carrying its file's first `k` data operations
    /// and does not keep them whole.
    fn mark_allowed(&self, states: &mut [CrashState]) {
        let carried = |dir: &super::snapshot::DirSnapshot| {
            dir.pending.iter().any(|op| matches!(op, DirOp::Rename { flushes, .. } if *flushes > 0))
        };
        let carries = self.dirs.values().any(carried);
        if !carries && !self.profile.set_len_journaled {
            return;
        }
        for state in states {
            let keeps_carried = || {
                let (_, flushed) = self.settled_dirs(&state.dir_changes_kept);
                flushed.iter().all(|&(inode, ops)| state.data.keeps_first(inode, ops))
            };
            let set_lens_in_order = !self.profile.set_len_journaled || self.set_lens_in_order(state);
            state.allowed = (!carries || keeps_carried()) && set_lens_in_order;
        }
    }
}

/// Which subsets of `changes` pending directory changes to enumerate
/// (see the module doc), each as one flag per change. The first is the
/// empty subset; the second, if there are changes, the full one.
fn dir_subsets(changes: usize, max_subsets: usize) -> Vec<Vec<bool>> {
    let every_subset_fits =
        changes <= ALL_DIR_SUBSETS_UP_TO || (changes < usize::BITS as usize - 1 && (1usize << changes) <= max_subsets);
    let from_mask = |mask: usize| (0..changes).map(|bit| mask >> bit & 1 == 1).collect::<Vec<bool>>();
    if every_subset_fits {
        let count = 1usize << changes;
        let mut masks = vec![0];
        if changes > 0 {
            masks.push(count - 1);
        }
        masks.extend(1..count.saturating_sub(1));
        return masks.into_iter().map(from_mask).collect();
    }
    let mut chosen: Vec<Vec<bool>> = Vec::new();
    let mut offer = |subset: Vec<bool>| {
        if chosen.len() < max_subsets && !chosen.contains(&subset) {
            chosen.push(subset);
        }
    };
    offer(vec![false; changes]);
    offer(vec![true; changes]);
    for len in 1..changes {
        offer((0..changes).map(|i| i < len).collect());
    }
    for skipped in 0..changes {
        offer((0..changes).map(|i| i != skipped).collect());
    }
    for only in 0..changes {
        offer((0..changes).map(|i| i == only).collect());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(changes as u64);
    // Bounded: duplicates are drawn now and then, and the loop must end.
    for _ in 0..max_subsets.saturating_mul(16) {
        offer((0..changes).map(|_| rng.gen_bool(0.5)).collect());
    }
    chosen
}

/// The whole-operation cut points of a file with `ops` pending operations
/// in family 3: every count from 1 to `ops`, or [`WHOLE_OP_CUTS`] evenly
/// spaced ones ending at `ops`.
fn whole_op_cuts(ops: usize) -> Vec<usize> {
    assert!(ops >= 1, "only files with pending operations");
    if ops <= WHOLE_OP_CUTS {
        return (1..=ops).collect();
    }
    (1..=WHOLE_OP_CUTS).map(|i| (i * ops / WHOLE_OP_CUTS).max(1)).collect()
}

/// Every cut of one file, in order: nothing kept, then for each pending
/// op its torn variants (if a write; those holding garbage only with
/// `garbage`, the file grown with none of it only with `grown`), then it
/// surviving whole. Without the first, family 2 (see
/// the module doc, and family 5's grown files); all of them, the file's
/// factor in family 6's product.
pub(super) fn file_cuts(file: &FileSnapshot, sector_bytes: u64, garbage: bool, grown: bool) -> Vec<Cut> {
    let mut cuts = vec![Cut { whole_ops: 0, torn: None }];
    let mut len_bytes = file.durable.len() as u64;
    for (whole_ops, op) in file.pending.iter().enumerate() {
        if let DataOp::Write { offset_bytes, data } = op {
            let range = *offset_bytes..offset_bytes + data.len() as u64;
            let inner = inner_cuts(range.clone(), sector_bytes);
            let cut_points: Vec<u64> = (0..inner.count).map(|i| inner.at(i)).collect();
            let torn =
                |cut_bytes, garbage, unwritten| Cut { whole_ops, torn: Some(Torn { cut_bytes, garbage, unwritten }) };
            for &cut_bytes in &cut_points {
                cuts.push(torn(cut_bytes, false, false));
            }
            if garbage && !range.is_empty() {
                for cut_bytes in std::iter::once(range.start).chain(cut_points.iter().copied()) {
                    cuts.push(torn(cut_bytes, true, false));
                }
            }
            // The length ahead of the data: past the old end only, where
            // the profile allows it at all.
            let ahead = cut_points.iter().copied().chain(std::iter::once(range.end));
            for cut_bytes in ahead.filter(|&cut| grown && cut > len_bytes && cut > range.start) {
                cuts.push(torn(cut_bytes, false, true));
            }
        }
        len_bytes = op.len_after(len_bytes);
        cuts.push(Cut { whole_ops: whole_ops + 1, torn: None });
    }
    cuts
}

impl DataFate {
    /// What this fate keeps of file `inode` (with `ops` pending
    /// operations), as a cut. Not for `Reordered`'s own file, which keeps
    /// no prefix.
    pub(super) fn cut_of(&self, inode: InodeId, ops: usize) -> Cut {
        let none = Cut { whole_ops: 0, torn: None };
        match self {
            DataFate::Strict => none,
            DataFate::AllSurvive => Cut { whole_ops: ops, torn: None },
            DataFate::OneFile { inode: id, whole_ops, torn } if *id == inode => {
                Cut { whole_ops: *whole_ops, torn: *torn }
            }
            DataFate::TwoFiles { first, second } => {
                let cut = [*first, *second].into_iter().find(|(id, _)| *id == inode);
                Cut { whole_ops: cut.map_or(0, |(_, whole_ops)| whole_ops), torn: None }
            }
            DataFate::Cuts(cuts) => cuts.iter().find(|(id, _)| *id == inode).map_or(none, |(_, cut)| *cut),
            DataFate::Reordered { inode: id, .. } => {
                assert!(*id != inode, "a reordered file keeps no prefix");
                none
            }
            DataFate::OneFile { .. } => none,
        }
    }

    /// Whether this fate keeps pending operation `index` of file `id`
    /// whole.
    pub(super) fn keeps_op(&self, id: InodeId, index: usize) -> bool {
        match self {
            DataFate::Reordered { inode, op, alone } if *inode == id => (index == *op) == *alone,
            fate => fate.cut_of(id, usize::MAX).whole_ops > index,
        }
    }

    /// Whether this fate keeps file `inode`'s first `ops` pending
    /// operations whole.
    pub(super) fn keeps_first(&self, inode: InodeId, ops: usize) -> bool {
        match self {
            DataFate::Reordered { inode: id, op, alone } if *id == inode => {
                if *alone {
                    ops == 0 || (ops == 1 && *op == 0)
                } else {
                    *op >= ops
                }
            }
            fate => fate.cut_of(inode, usize::MAX).whole_ops >= ops,
        }
    }
}
