//! The run as the picture tells it: a trace that kept every event, laid
//! out on one time axis of *slots* (one per I/O, operation start, power
//! loss and restart), with one lane per file — followed through renames
//! by its inode — and one per directory.
//!
//! Built only from what the run recorded: the hashed events
//! (`Trace::all`) and the side record beside them (`Trace::detail`: each
//! I/O's inode and a rename's new name, each power loss's picture, the
//! drivers' notes).

use std::collections::BTreeMap;
use std::path::Path;

use crate::trace::{CrashPicture, Event, IoKind, Trace};

/// One workload operation on the axis.
#[derive(Clone, Debug)]
pub struct OpSpan {
    /// Its index in the workload.
    pub index: u64,
    /// Its line (as the workload prints it), else its trace tag.
    pub label: String,
    /// Its first slot, and one past its last.
    pub start: u64,
    pub end: u64,
    /// What it replied, in words (when the trace kept them).
    pub reply: Option<String>,
}

/// What a lane follows.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LaneKey {
    /// A directory, by path.
    Dir(String),
    /// A file, by inode.
    File(u64),
}

/// One lane: a directory, or one file under every name it had.
#[derive(Clone, Debug)]
pub struct Lane {
    pub key: LaneKey,
    /// Its names in order (a file's, as renames changed them).
    pub names: Vec<String>,
}

/// One I/O drawn in a lane.
#[derive(Clone, Debug)]
pub struct IoMark {
    pub lane: usize,
    pub slot: u64,
    /// The I/O's global index.
    pub io_index: u64,
    pub kind: IoKind,
    pub offset: u64,
    pub len: u64,
    pub ok: bool,
    /// The hover text.
    pub title: String,
}

/// Something on the event row above the lanes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AxisKind {
    Fault,
    Crash,
    Restart,
    Note,
}

/// One mark on the event row.
#[derive(Clone, Debug)]
pub struct AxisMark {
    pub slot: u64,
    pub kind: AxisKind,
    pub title: String,
}

/// The whole run, laid out (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Story {
    /// How long the time axis is, in slots (one per I/O, operation start,
    /// power loss and restart).
    pub slots: u64,
    /// The workload's operations, in order, each over the slots it spans.
    pub ops: Vec<OpSpan>,
    /// One per directory and per file (followed through renames), in the
    /// order they first appear.
    pub lanes: Vec<Lane>,
    /// Every I/O, in the lane of the file or directory it touched.
    pub marks: Vec<IoMark>,
    /// Faults, crashes, restarts and notes: the event row above the lanes.
    pub axis: Vec<AxisMark>,
    /// Each power loss's slot and picture.
    pub crashes: Vec<(u64, CrashPicture)>,
    /// The drivers' notes (a recovery's report), by slot.
    pub notes: Vec<(u64, String)>,
}

/// Builds a [`Story`] event by event.
struct Builder<'a> {
    trace: &'a Trace,
    story: Story,
    lane_of: BTreeMap<LaneKey, usize>,
    slot_of_io: BTreeMap<u64, u64>,
    /// A fault's I/O index and the slot it was seen at.
    faults: Vec<(u64, u64, String)>,
}

impl Story {
    /// The story of `trace` (one that kept every event); `label` gives an
    /// operation's line by its index, if known.
    pub fn from_trace(trace: &Trace, label: &dyn Fn(u64) -> Option<String>) -> Story {
        let mut b = Builder {
            trace,
            story: Story::default(),
            lane_of: BTreeMap::new(),
            slot_of_io: BTreeMap::new(),
            faults: Vec::new(),
        };
        let mut crash_pictures = trace.detail().crashes.iter();
        let notes = &trace.detail().notes;
        let mut next_note = 0;
        for (position, event) in trace.all().iter().enumerate() {
            if let (Event::Reply { index, .. }, Some(text)) = (event, trace.detail().replies.get(&position)) {
                if let Some(op) = b.story.ops.last_mut().filter(|op| op.index == *index) {
                    op.reply = Some(text.clone());
                }
            }
            while next_note < notes.len() && notes[next_note].0 <= position {
                b.story.notes.push((b.story.slots, notes[next_note].1.clone()));
                next_note += 1;
            }
            b.event(event, label, &mut crash_pictures);
        }
        for (_, text) in &notes[next_note..] {
            b.story.notes.push((b.story.slots, text.clone()));
        }
        b.finish()
    }

    /// The part of the story in `start..end`, its slots counted from
    /// `start`, with only the lanes something in it touches (an I/O, or a
    /// power loss's picture).
    pub fn restricted(&self, start: u64, end: u64) -> Story {
        let inside = |slot: u64| slot >= start && slot < end;
        let mut used = vec![false; self.lanes.len()];
        for mark in self.marks.iter().filter(|m| inside(m.slot)) {
            used[mark.lane] = true;
        }
        for (_, picture) in self.crashes.iter().filter(|(slot, _)| inside(*slot)) {
            for file in &picture.files {
                if let Some(lane) = self.lanes.iter().position(|l| l.key == LaneKey::File(file.inode)) {
                    used[lane] = true;
                }
            }
        }
        let mut new_lane = vec![usize::MAX; self.lanes.len()];
        let mut lanes = Vec::new();
        for (i, lane) in self.lanes.iter().enumerate().filter(|(i, _)| used[*i]) {
            new_lane[i] = lanes.len();
            lanes.push(lane.clone());
        }
        let shift = |slot: u64| slot - start;
        let ops = (self.ops.iter().filter(|op| op.end > start && op.start < end))
            .map(|op| OpSpan { start: shift(op.start.max(start)), end: shift(op.end.min(end)), ..op.clone() })
            .collect();
        let marks = (self.marks.iter().filter(|m| inside(m.slot)))
            .map(|m| IoMark { lane: new_lane[m.lane], slot: shift(m.slot), ..m.clone() })
            .collect();
        let axis = (self.axis.iter().filter(|m| inside(m.slot)))
            .map(|m| AxisMark { slot: shift(m.slot), ..m.clone() })
            .collect();
        let crashes = (self.crashes.iter().filter(|(slot, _)| inside(*slot)))
            .map(|(slot, picture)| (shift(*slot), picture.clone()))
            .collect();
        let notes = (self.notes.iter().filter(|(slot, _)| inside(*slot)))
            .map(|(slot, text)| (shift(*slot), text.clone()))
            .collect();
        Story { slots: end - start, ops, lanes, marks, axis, crashes, notes }
    }

    /// The op whose span holds `slot`, if any.
    pub fn op_at(&self, slot: u64) -> Option<&OpSpan> {
        let after = self.ops.partition_point(|op| op.start <= slot);
        self.ops.get(after.checked_sub(1)?)
    }
}

impl Builder<'_> {
    fn take_slot(&mut self) -> u64 {
        let slot = self.story.slots;
        self.story.slots += 1;
        slot
    }

    fn event<'p>(
        &mut self,
        event: &Event,
        label: &dyn Fn(u64) -> Option<String>,
        pictures: &mut impl Iterator<Item = &'p CrashPicture>,
    ) {
        match *event {
            Event::Io { index, kind, name, offset, len, ok } => self.io(index, kind, name, offset, len, ok),
            Event::Op { index, tag } => {
                let slot = self.take_slot();
                self.close_op(slot);
                let label = label(index).unwrap_or_else(|| tag.to_string());
                self.story.ops.push(OpSpan { index, label, start: slot, end: slot + 1, reply: None });
            }
            Event::Fault { index, kind } => {
                let title = format!("fault {} at io#{index}", kind.name());
                self.faults.push((index, self.story.slots, title));
            }
            Event::Crash { io_index } => {
                let slot = self.take_slot();
                let title = format!("POWER LOSS after io#{io_index}");
                self.story.axis.push(AxisMark { slot, kind: AxisKind::Crash, title });
                if let Some(picture) = pictures.next() {
                    self.story.crashes.push((slot, picture.clone()));
                }
            }
            Event::Restart { clean } => {
                let slot = self.take_slot();
                let title = if clean { "restart (clean)" } else { "restart (after the crash)" }.to_string();
                self.story.axis.push(AxisMark { slot, kind: AxisKind::Restart, title });
            }
            Event::Mark { .. } | Event::Reply { .. } => {}
        }
    }

    /// The previous op (if any) ends before `slot`.
    fn close_op(&mut self, slot: u64) {
        if let Some(last) = self.story.ops.last_mut() {
            last.end = slot;
        }
    }

    fn lane(&mut self, key: LaneKey, name: &str) -> usize {
        if let Some(&lane) = self.lane_of.get(&key) {
            return lane;
        }
        let lane = self.story.lanes.len();
        self.lane_of.insert(key.clone(), lane);
        self.story.lanes.push(Lane { key, names: vec![name.to_string()] });
        lane
    }

    fn io(&mut self, index: u64, kind: IoKind, name: u32, offset: u64, len: u64, ok: bool) {
        let slot = self.take_slot();
        self.slot_of_io.insert(index, slot);
        let path = self.trace.name(name).to_string();
        let detail = self.trace.detail().io.get(&index).cloned().unwrap_or_default();
        let key = match detail.inode {
            Some(inode) => LaneKey::File(inode),
            None if matches!(kind, IoKind::ListDir | IoKind::SyncDir | IoKind::CreateDir) => LaneKey::Dir(path.clone()),
            None => LaneKey::Dir(parent(&path)),
        };
        let on_file = matches!(key, LaneKey::File(_));
        let lane = self.lane(key, &path);
        // A file by its name now; anything on a directory's lane by its own path.
        let now = if on_file { self.story.lanes[lane].names.last().cloned().unwrap_or_default() } else { path.clone() };
        let mut title = io_title(index, kind, &now, &path, offset, len, ok);
        if let (Some(to), true) = (&detail.renamed_to, ok) {
            title.push_str(&format!(" -> {to}"));
            if self.story.lanes[lane].names.last() != Some(to) {
                self.story.lanes[lane].names.push(to.clone());
            }
        }
        if let Some(op) = self.story.ops.last() {
            title.push_str(&format!("\nduring op#{}: {}", op.index, op.label));
        }
        self.story.marks.push(IoMark { lane, slot, io_index: index, kind, offset, len, ok, title });
    }

    fn finish(mut self) -> Story {
        let end = self.story.slots;
        self.close_op(end);
        for (index, seen_at, title) in std::mem::take(&mut self.faults) {
            let slot = self.slot_of_io.get(&index).copied().unwrap_or(seen_at);
            self.story.axis.push(AxisMark { slot, kind: AxisKind::Fault, title });
        }
        for (slot, text) in self.story.notes.clone() {
            self.story.axis.push(AxisMark { slot, kind: AxisKind::Note, title: text });
        }
        self.story.axis.sort_by_key(|mark| mark.slot);
        self.story
    }
}

/// A path's directory (`/` for a bare name).
fn parent(path: &str) -> String {
    Path::new(path).parent().map_or_else(|| "/".to_string(), |p| p.display().to_string())
}

/// The hover text of one I/O: the file by its name now, and the name its
/// handle was opened under when that differs.
fn io_title(index: u64, kind: IoKind, now: &str, path: &str, offset: u64, len: u64, ok: bool) -> String {
    let status = if ok { "" } else { " -> error" };
    let was = if now != path && !now.is_empty() { format!(" (opened as {path})") } else { String::new() };
    let shown = if now.is_empty() { path } else { now };
    let extent = match kind {
        IoKind::Write | IoKind::Read => format!(" offset={offset} len={len}"),
        IoKind::SetLen => format!(" to {len} bytes"),
        _ => String::new(),
    };
    format!("io#{index} {kind:?} {shown}{was}{extent}{status}")
}
