//! The model's whole crash-state set at one snapshot, counted, and
//! enumerated where it is small (crash-state family 6, `crash_states.rs`).
//!
//! The explorers' model of a power loss is a product: a subset of the
//! pending directory changes that the profile allows (any subset; a prefix
//! of each directory's changes where they survive in order) times, for
//! each file with pending data, one of its cuts (`file_cuts`: its first
//! `k` operations whole, the next write maybe torn at a sector boundary,
//! holding garbage there only where garbage is explored). Families 1 to 4
//! take a sample of it whose size grows with the snapshot, not as the
//! product; here the product is counted ([`Coverage`]) and, when it is at
//! most the bound, every state of it the families did not take is
//! appended, so that the explorers can say, per crash index, whether they
//! saw every state the model allows or a sample, and how much.
//!
//! A state the profile rules out (`auto_da_alloc`, `crash_states.rs`) is
//! counted out of the model's states where the count can afford it: with
//! such renames pending, the count walks every allowed directory subset
//! (up to [`COUNT_SUBSETS_UP_TO`]), else it says "at most".
//!
//! The `reorder` crash mode's sector-by-sector choices are not part of
//! this product (family 4 samples them, the random mode draws them).

use std::collections::BTreeSet;
use std::sync::Arc;

use super::crash_states::{file_cuts, CrashState, Cut, DataFate, StateOptions};
use super::data::InodeId;
use super::snapshot::DiskSnapshot;

/// A point of the product: one flag per pending directory change, and
/// each file's cut but "nothing" (by inode).
type Point = (Vec<bool>, Vec<(InodeId, Cut)>);

/// With renames that carry data pending, the exact count walks at most
/// this many directory subsets; beyond, it is an upper bound.
pub const COUNT_SUBSETS_UP_TO: u128 = 1 << 16;

/// How much of the model's state set at one snapshot an enumeration
/// covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coverage {
    /// The states the model allows there (saturating).
    pub allowed: u128,
    /// `allowed` is exact; else an upper bound.
    pub exact: bool,
    /// Every one of them is enumerated (family 6 was appended).
    pub complete: bool,
}

impl DiskSnapshot {
    /// The product's size (see the module doc), before the profile's
    /// rules out any state: what the bound is compared with.
    fn product(&self, garbage: bool) -> u128 {
        self.files_cuts(garbage)
            .iter()
            .fold(self.dir_choice_count(), |acc, (_, cuts)| acc.saturating_mul(cuts.len() as u128))
    }

    /// Whether `options` makes this snapshot's enumeration complete.
    pub(super) fn is_complete_under(&self, options: &StateOptions) -> bool {
        self.product(options.garbage) <= u128::from(options.complete_up_to)
    }

    /// How much of the model's state set `options` enumerates here.
    pub fn coverage(&self, options: &StateOptions) -> Coverage {
        let complete = self.is_complete_under(options);
        let product = self.product(options.garbage);
        if !self.carries_data() {
            return Coverage { allowed: product, exact: true, complete };
        }
        if self.dir_choice_count() <= COUNT_SUBSETS_UP_TO {
            let files = self.files_cuts(options.garbage);
            let mut allowed = 0u128;
            for kept in self.dir_choices() {
                let (_, flushed) = self.settled_dirs(&kept);
                let per_file = files.iter().map(|(inode, cuts)| {
                    let at_least = flushed.iter().filter(|(id, _)| id == inode).map(|(_, ops)| *ops).max().unwrap_or(0);
                    cuts.iter().filter(|cut| cut.whole_ops >= at_least).count() as u128
                });
                allowed = allowed.saturating_add(per_file.fold(1u128, |acc, n| acc.saturating_mul(n)));
            }
            return Coverage { allowed, exact: true, complete };
        }
        Coverage { allowed: product, exact: false, complete }
    }

    /// Whether a pending rename carries its file's data (`auto_da_alloc`).
    fn carries_data(&self) -> bool {
        use super::dir::DirOp;
        self.dirs
            .values()
            .flat_map(|dir| &dir.pending)
            .any(|op| matches!(op, DirOp::Rename { flushes, .. } if *flushes > 0))
    }

    /// Each file with pending data, by inode, and its cuts.
    fn files_cuts(&self, garbage: bool) -> Vec<(InodeId, Vec<Cut>)> {
        let pending = self.files.iter().filter(|(_, file)| !file.pending.is_empty());
        let grown = self.profile.size_ahead_of_data;
        pending.map(|(id, file)| (*id, file_cuts(file, self.sector_bytes, garbage, grown))).collect()
    }

    /// How many directory subsets the profile allows (saturating).
    fn dir_choice_count(&self) -> u128 {
        if self.profile.dir_changes_in_order {
            let per_dir = self.dirs.values().map(|dir| dir.pending.len() as u128 + 1);
            return per_dir.fold(1u128, |acc, n| acc.saturating_mul(n));
        }
        let changes = self.pending_dir_changes();
        if changes >= 127 {
            u128::MAX
        } else {
            1u128 << changes
        }
    }

    /// Every directory subset the profile allows, in a fixed order (any
    /// subset by its bits, the first change lowest; per directory a prefix
    /// length, the first directory fastest). Only for as many as memory
    /// holds: the bound of family 6, or the count's.
    fn dir_choices(&self) -> Vec<Vec<bool>> {
        let changes = self.pending_dir_changes();
        if !self.profile.dir_changes_in_order {
            assert!(changes < usize::BITS as usize, "{changes} changes: too many subsets to list");
            let masks = 0..(1usize << changes);
            return masks.map(|mask| (0..changes).map(|bit| mask >> bit & 1 == 1).collect()).collect();
        }
        let lens: Vec<usize> = self.dirs.values().map(|dir| dir.pending.len()).collect();
        let mut prefixes = vec![0usize; lens.len()];
        let mut choices = Vec::new();
        loop {
            choices
                .push(lens.iter().zip(&prefixes).flat_map(|(&len, &keep)| (0..len).map(move |i| i < keep)).collect());
            if !odometer(&mut prefixes, |at| lens[at] + 1) {
                return choices;
            }
        }
    }

    /// Family 6 (see the module doc): append every state of the product
    /// that `states` (families 1 to 5) lacks, in order — directory subsets
    /// outer, then each file's cut, the first file fastest.
    pub(super) fn complete(&self, states: &mut Vec<CrashState>, garbage: bool) {
        let taken: BTreeSet<Point> = states.iter().filter_map(|state| self.canonical(state)).collect();
        let files = self.files_cuts(garbage);
        for kept in self.dir_choices() {
            let mut at = vec![0usize; files.len()];
            loop {
                let cuts: Vec<(InodeId, Cut)> = files
                    .iter()
                    .zip(&at)
                    .filter(|(_, &index)| index > 0)
                    .map(|((inode, cuts), &index)| (*inode, cuts[index]))
                    .collect();
                if !taken.contains(&(kept.clone(), cuts.clone())) {
                    let data = DataFate::Cuts(Arc::from(cuts));
                    states.push(CrashState { dir_changes_kept: kept.clone(), data, allowed: true });
                }
                if !odometer(&mut at, |file| files[file].1.len()) {
                    break;
                }
            }
        }
    }

    /// How many distinct states of the model `states` holds, of those
    /// `explored` takes (family 4, outside the product, left out; two
    /// families can hold one state twice): what a sampled crash index
    /// reports as enumerated.
    pub fn points_in(&self, states: &[CrashState], explored: impl Fn(&CrashState) -> bool) -> u64 {
        let points: BTreeSet<Point> = states.iter().filter(|s| explored(s)).filter_map(|s| self.canonical(s)).collect();
        points.len() as u64
    }

    /// A state of families 1 to 3 and 5 as a point of the product: its
    /// directory flags and each file's cut but "nothing". `None` for
    /// family 4, which is outside the product.
    fn canonical(&self, state: &CrashState) -> Option<Point> {
        if matches!(state.data, DataFate::Reordered { .. }) {
            return None;
        }
        let pending = self.files.iter().filter(|(_, file)| !file.pending.is_empty());
        let cuts = pending
            .map(|(id, file)| (*id, state.data.cut_of(*id, file.pending.len())))
            .filter(|(_, cut)| *cut != Cut { whole_ops: 0, torn: None })
            .collect();
        Some((state.dir_changes_kept.clone(), cuts))
    }
}

/// Advance `digits` (each below `base(position)`, the first fastest) to
/// the next combination; `false` once every one was had.
fn odometer(digits: &mut [usize], base: impl Fn(usize) -> usize) -> bool {
    for (position, digit) in digits.iter_mut().enumerate() {
        *digit += 1;
        if *digit < base(position) {
            return true;
        }
        *digit = 0;
    }
    false
}
