//! A crash state told to a person: which pending directory changes it
//! applies and which it loses, what each file keeps of its unsynced data
//! (whole operations, a torn write and where, garbage), and whether the
//! profile rules it out. What `sim explore` prints for a failing state;
//! apart from the enumeration (`crash_states.rs`), which only a failure
//! asks to describe.

use super::crash_image::garbage_range;
use super::crash_states::{CrashState, DataFate, Torn};
use super::data::{DataOp, InodeId};
use super::dir::{DirOp, Moved};
use super::snapshot::DiskSnapshot;

impl DiskSnapshot {
    /// A line for a person: which directory changes applied, which writes
    /// survived, which was torn where.
    pub fn describe(&self, state: &CrashState) -> String {
        let mut parts = Vec::new();
        let changes: Vec<&DirOp> = self.dirs.values().flat_map(|dir| dir.pending.iter()).collect();
        if !changes.is_empty() {
            let mut applied = Vec::new();
            let mut lost = Vec::new();
            for (op, kept) in changes.iter().zip(&state.dir_changes_kept) {
                if *kept {
                    applied.push(DirOp::describe(op));
                } else {
                    lost.push(DirOp::describe(op));
                }
            }
            let mut text = format!("{} of {} unsynced directory changes applied", applied.len(), changes.len());
            if !applied.is_empty() {
                text.push_str(&format!(" (applied: {})", applied.join(", ")));
            }
            if !lost.is_empty() {
                text.push_str(&format!(" (lost: {})", lost.join(", ")));
            }
            parts.push(text);
        }
        let (ops, is, survive) = match self.pending_data_ops() {
            1 => ("the 1 unsynced data op".to_string(), "is", "survives"),
            count => (format!("all {count} unsynced data ops"), "are", "survive"),
        };
        let data = match &state.data {
            DataFate::Strict if self.pending_data_ops() == 0 => "no unsynced data".to_string(),
            DataFate::Strict => format!("{ops} {is} lost"),
            DataFate::AllSurvive => format!("{ops} {survive}"),
            DataFate::OneFile { inode, whole_ops, torn } => {
                format!("{}; other files keep only synced data", self.describe_cut(*inode, *whole_ops, *torn))
            }
            DataFate::Cuts(cuts) => {
                let each: Vec<String> =
                    cuts.iter().map(|(inode, cut)| self.describe_cut(*inode, cut.whole_ops, cut.torn)).collect();
                format!("{}; other files keep only synced data", each.join("; "))
            }
            DataFate::Reordered { inode, op, alone } => {
                let (inode, op, alone) = (*inode, *op, *alone);
                let ops = self.files[&inode].pending.len();
                let which = if alone { "only" } else { "all but" };
                format!(
                    "{}: {which} op #{} of its {ops} unsynced ops survives (reordered); other files keep only \
                     synced data",
                    self.name_of(inode),
                    op + 1
                )
            }
            DataFate::TwoFiles { first, second } => {
                let (first, second) = (*first, *second);
                let cut = |(inode, whole_ops): (InodeId, usize)| {
                    let ops = self.files[&inode].pending.len();
                    format!("{}: the first {whole_ops} of its {ops} unsynced ops survive", self.name_of(inode))
                };
                format!("{}; {}; other files keep only synced data", cut(first), cut(second))
            }
        };
        parts.push(data);
        if !state.allowed {
            parts.push("ruled out by the profile (a replacing rename's data goes with it: auto_da_alloc)".to_string());
        }
        parts.join("; ")
    }

    fn describe_cut(&self, inode: InodeId, whole_ops: usize, torn: Option<Torn>) -> String {
        let file = &self.files[&inode];
        let mut text = format!(
            "{}: the first {whole_ops} of its {} unsynced ops survive",
            self.name_of(inode),
            file.pending.len()
        );
        if let Some(torn) = torn {
            let DataOp::Write { offset_bytes, data } = &file.pending[whole_ops] else {
                unreachable!("only a write is torn")
            };
            let end_bytes = offset_bytes + data.len() as u64;
            text.push_str(&format!(", then op #{} (write {offset_bytes}..{end_bytes}) is torn: ", whole_ops + 1));
            if torn.unwritten {
                let cut = torn.cut_bytes;
                text.push_str(&format!("the file is {cut} bytes long but none of the write reached it (zeros)"));
            } else if torn.cut_bytes == *offset_bytes {
                text.push_str("none of it survives");
            } else {
                text.push_str(&format!("{offset_bytes}..{} survives", torn.cut_bytes));
            }
            if torn.garbage {
                let garbage = garbage_range(torn.cut_bytes, end_bytes, self.sector_bytes);
                text.push_str(&format!(", {}..{} holds garbage", garbage.start, garbage.end));
            }
        }
        text
    }

    /// The newest name an inode has in any directory (its durable one, or
    /// the one a pending create or rename gives it).
    fn name_of(&self, inode: InodeId) -> String {
        for dir in self.dirs.values() {
            let mut name = dir.durable.iter().find(|(_, id)| **id == inode).map(|(name, _)| name.clone());
            for op in &dir.pending {
                match op {
                    DirOp::Link { name: new, inode: id, .. }
                    | DirOp::Rename { to: new, inode: id, .. }
                    | DirOp::MoveIn { name: new, moved: Moved::File(id), .. }
                        if *id == inode =>
                    {
                        name = Some(new.clone());
                    }
                    _ => {}
                }
            }
            if let Some(name) = name {
                return name;
            }
        }
        format!("inode {inode}")
    }
}
