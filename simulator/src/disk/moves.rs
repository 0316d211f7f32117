//! A crash and the moves across directories: which pending changes a
//! power loss keeps when a rename from one directory to another is two
//! changes (`DirOp::MoveOut` in the source, `DirOp::MoveIn` in the
//! destination, one `seq`).
//!
//! The two halves are one change: a crash keeps both or neither, so a
//! moved file or directory is never named in both parents nor in neither
//! (what ext4, XFS and btrfs did in every probe, `probes/xdir_rename*.py`;
//! one journal transaction, or btrfs's log of the moved inode). The
//! crash draws its choice per directory as before (the draws of a disk
//! with no move are unchanged); [`couple`] then loses any move one of
//! whose halves was lost (and, where a directory's changes survive in
//! order, everything after it there), and [`apply_kept`] applies the
//! kept changes in the order they were made, a move only where both of
//! its halves still apply (a `reorder` crash may have lost what one of
//! them needs).

use std::collections::BTreeMap;

use super::dir::{DirOp, FileEntries, SubdirEntries};

/// Where each move's halves are: `seq` to (directory, change) pairs.
fn halves(pending: &[&[DirOp]]) -> BTreeMap<u64, Vec<(usize, usize)>> {
    let mut halves: BTreeMap<u64, Vec<(usize, usize)>> = BTreeMap::new();
    for (dir, ops) in pending.iter().enumerate() {
        for (at, op) in ops.iter().enumerate() {
            if let Some(seq) = op.move_seq() {
                halves.entry(seq).or_default().push((dir, at));
            }
        }
    }
    halves
}

/// Make `kept` (one flag per pending change, per directory) keep each
/// move whole or not at all; with `in_order`, a directory keeps a prefix
/// of its changes, so losing a half loses what follows it there too. Run
/// to a fixed point: losing one move's half may lose another's.
pub(super) fn couple(pending: &[&[DirOp]], kept: &mut [Vec<bool>], in_order: bool) {
    let halves = halves(pending);
    loop {
        let mut changed = false;
        for pair in halves.values() {
            let whole = pair.iter().all(|(dir, at)| kept[*dir][*at]);
            for (dir, at) in pair {
                if !whole && kept[*dir][*at] {
                    kept[*dir][*at] = false;
                    changed = true;
                }
            }
        }
        if in_order {
            for flags in kept.iter_mut() {
                let Some(first_lost) = flags.iter().position(|keep| !keep) else { continue };
                for flag in &mut flags[first_lost..] {
                    changed |= std::mem::replace(flag, false);
                }
            }
        }
        if !changed {
            return;
        }
    }
}

/// Apply the kept changes to each directory's `entries` (files and
/// subdirectories, in the order of `pending`) in the order they were
/// made: a move where both halves apply, both at once; any other change
/// where it applies. Which changes applied, per directory.
pub(super) fn apply_kept(
    entries: &mut [(FileEntries, SubdirEntries)],
    pending: &[&[DirOp]],
    kept: &[Vec<bool>],
) -> Vec<Vec<bool>> {
    let halves = halves(pending);
    let mut order: Vec<(u64, usize, usize)> = Vec::new();
    for (dir, ops) in pending.iter().enumerate() {
        for (at, op) in ops.iter().enumerate().filter(|(at, _)| kept[dir][*at]) {
            order.push((op.seq(), dir, at));
        }
    }
    order.sort_unstable();
    let mut applied: Vec<Vec<bool>> = pending.iter().map(|ops| vec![false; ops.len()]).collect();
    let mut moves_done: Vec<u64> = Vec::new();
    for (seq, dir, at) in order {
        let op = &pending[dir][at];
        if op.move_seq().is_none() {
            let (files, subdirs) = &mut entries[dir];
            applied[dir][at] = op.apply(files, subdirs);
            continue;
        }
        if moves_done.contains(&seq) {
            continue;
        }
        moves_done.push(seq);
        let pair = &halves[&seq];
        let whole = pair.len() == 2 && pair.iter().all(|(d, a)| kept[*d][*a]);
        let applies = |(d, a): &(usize, usize)| pending[*d][*a].applies(&entries[*d].0, &entries[*d].1);
        if whole && pair.iter().all(applies) {
            for (d, a) in pair {
                let (files, subdirs) = &mut entries[*d];
                applied[*d][*a] = pending[*d][*a].apply(files, subdirs);
                debug_assert!(applied[*d][*a], "checked above");
            }
        }
    }
    applied
}

#[cfg(test)]
mod tests {
    use super::super::dir::Moved;
    use super::*;

    fn move_out(name: &str, seq: u64) -> DirOp {
        DirOp::MoveOut { name: name.into(), moved: Moved::File(1), seq }
    }

    fn move_in(name: &str, seq: u64) -> DirOp {
        DirOp::MoveIn { name: name.into(), moved: Moved::File(1), replaced: None, seq, flushes: 0 }
    }

    #[test]
    fn a_move_is_kept_whole_or_not_at_all() {
        let a = [DirOp::Link { name: "x".into(), inode: 2, seq: 0 }, move_out("f", 1)];
        let b = [move_in("f", 1), DirOp::Link { name: "y".into(), inode: 3, seq: 2 }];
        let pending: [&[DirOp]; 2] = [&a, &b];
        let mut kept = vec![vec![true, false], vec![true, true]];
        couple(&pending, &mut kept, false);
        assert_eq!(kept, vec![vec![true, false], vec![false, true]], "the destination's half goes too");
        let mut kept = vec![vec![true, false], vec![true, true]];
        couple(&pending, &mut kept, true);
        assert_eq!(kept, vec![vec![true, false], vec![false, false]], "and what follows it, in order");
    }

    #[test]
    fn a_move_applies_only_where_both_halves_apply() {
        let a = [move_out("f", 1)];
        let b = [move_in("f", 1)];
        let pending: [&[DirOp]; 2] = [&a, &b];
        let kept = vec![vec![true], vec![true]];
        let source: FileEntries = [("f".to_string(), 1)].into();
        let mut entries = vec![(source.clone(), SubdirEntries::new()), (FileEntries::new(), SubdirEntries::new())];
        assert_eq!(apply_kept(&mut entries, &pending, &kept), vec![vec![true], vec![true]]);
        assert_eq!((entries[0].0.len(), entries[1].0.get("f")), (0, Some(&1)));
        // The source never held the file (its create was lost): neither half.
        let mut entries = vec![(FileEntries::new(), SubdirEntries::new()), (FileEntries::new(), SubdirEntries::new())];
        assert_eq!(apply_kept(&mut entries, &pending, &kept), vec![vec![false], vec![false]]);
        assert!(entries[1].0.is_empty(), "not named in the destination alone");
    }
}
