//! The timeline as inline SVG: the operations' row, the events' row
//! (faults, power losses, restarts, notes) and one row per lane, every
//! mark hoverable (an SVG `<title>`). x is the slot, `SLOT_PX` wide.

use std::fmt::Write as _;

use super::escape::esc;
use super::story::{AxisKind, IoMark, LaneKey, Story};
use crate::trace::{CrashPicture, FileFate, IoKind};

/// Pixels per slot.
pub const SLOT_PX: u64 = 10;
/// The operations' row, the events' row, and each lane.
const OPS_H: u64 = 34;
const AXIS_H: u64 = 26;
const LANE_H: u64 = 30;

/// The y of lane `i`'s top.
fn lane_y(i: usize) -> u64 {
    OPS_H + AXIS_H + i as u64 * LANE_H
}

/// The whole drawing's height.
pub fn height(story: &Story) -> u64 {
    lane_y(story.lanes.len()) + 4
}

/// The lane labels, drawn apart so that they stay put while the timeline
/// scrolls.
pub fn labels(story: &Story) -> String {
    let mut out =
        format!(r#"<svg class="labels" width="290" height="{}" xmlns="http://www.w3.org/2000/svg">"#, height(story));
    let _ = write!(out, r#"<text x="4" y="{}" class="rowname">operations</text>"#, OPS_H / 2 + 4);
    let _ = write!(out, r#"<text x="4" y="{}" class="rowname">events</text>"#, OPS_H + AXIS_H / 2 + 4);
    for (i, lane) in story.lanes.iter().enumerate() {
        let kind = if matches!(lane.key, LaneKey::Dir(_)) { "dir" } else { "file" };
        let shown: Vec<&str> = lane.names.iter().map(|n| short(n)).collect();
        let full = lane.names.join(" -> ");
        let _ = write!(
            out,
            r#"<text x="4" y="{}" class="lane-label {kind}"><title>{}</title>{}</text>"#,
            lane_y(i) + LANE_H / 2 + 4,
            esc(&full),
            esc(&clip(&shown.join(" → "), 44))
        );
    }
    out.push_str("</svg>");
    out
}

/// The timeline itself; `first_slot` is the run's slot at its left edge.
pub fn timeline(story: &Story, first_slot: u64) -> String {
    let width = story.slots.max(1) * SLOT_PX + 110;
    let h = height(story);
    let mut out = format!(
        r#"<svg class="timeline" width="{width}" height="{h}" data-first-slot="{first_slot}" xmlns="http://www.w3.org/2000/svg">"#
    );
    for (i, lane) in story.lanes.iter().enumerate() {
        let name = lane.names.last().map_or("", |n| n.as_str());
        let _ = write!(
            out,
            r#"<rect class="lane lane{}" data-lane="{}" x="0" y="{}" width="{width}" height="{LANE_H}"/>"#,
            i % 2,
            esc(name),
            lane_y(i)
        );
    }
    ops_row(&mut out, story, h);
    for mark in &story.marks {
        io_mark(&mut out, mark);
    }
    for mark in &story.axis {
        axis_mark(&mut out, mark, h);
    }
    for (slot, picture) in &story.crashes {
        crash_glyphs(&mut out, story, *slot, picture);
    }
    out.push_str("</svg>");
    out
}

fn ops_row(out: &mut String, story: &Story, h: u64) {
    for op in &story.ops {
        let x = op.start * SLOT_PX;
        let w = (op.end - op.start).max(1) * SLOT_PX;
        let _ = write!(
            out,
            r#"<g class="op" data-op="{}"><rect class="op-band op{}" x="{x}" y="0" width="{w}" height="{OPS_H}"><title>op#{} {}{}</title></rect>"#,
            op.index,
            op.index % 2,
            op.index,
            esc(&op.label),
            esc(&op.reply.as_ref().map_or(String::new(), |r| format!("\nreply: {r}")))
        );
        if w >= 40 {
            let _ = write!(out, r#"<text class="op-text" x="{}" y="14">#{}</text>"#, x + 2, op.index);
            let room = (w / 7).saturating_sub(1) as usize;
            let _ = write!(
                out,
                r#"<text class="op-text small" x="{}" y="28">{}</text>"#,
                x + 2,
                esc(&clip(&op.label, room))
            );
        }
        let _ = write!(out, r#"<line class="op-start" x1="{x}" y1="{OPS_H}" x2="{x}" y2="{h}"/></g>"#);
    }
}

fn io_mark(out: &mut String, mark: &IoMark) {
    let x = mark.slot * SLOT_PX;
    let top = lane_y(mark.lane);
    let mid = top + LANE_H / 2;
    let err = if mark.ok { "" } else { " err" };
    let title = format!("<title>{}</title>", esc(&mark.title));
    let _ = match mark.kind {
        IoKind::Write => {
            // Taller for longer writes: log2 of the length.
            let hgt = (64 - mark.len.max(1).leading_zeros() as u64).clamp(3, LANE_H as u32 as u64 - 4);
            write!(
                out,
                r#"<rect class="io write{err}" x="{}" y="{}" width="{}" height="{hgt}">{title}</rect>"#,
                x + 1,
                top + LANE_H - 2 - hgt,
                SLOT_PX - 2
            )
        }
        IoKind::Sync | IoKind::SyncData | IoKind::SyncDir => {
            write!(
                out,
                r#"<rect class="io sync{err}" x="{}" y="{}" width="3" height="{}">{title}</rect>"#,
                x + 3,
                top + 2,
                LANE_H - 4
            )
        }
        IoKind::SetLen => write!(
            out,
            r#"<path class="io truncate{err}" d="M{} {} l8 0 l-4 {} z">{title}</path>"#,
            x + 1,
            top + 4,
            LANE_H - 8
        ),
        IoKind::Rename => {
            write!(out, r#"<path class="io rename{err}" d="M{} {mid} l5 -8 l5 8 l-5 8 z">{title}</path>"#, x)
        }
        IoKind::Unlink => write!(
            out,
            r#"<path class="io unlink{err}" d="M{} {} l8 8 M{} {} l-8 8">{title}</path>"#,
            x + 1,
            mid - 4,
            x + 9,
            mid - 4
        ),
        IoKind::Open | IoKind::CreateDir => {
            write!(out, r#"<circle class="io open{err}" cx="{}" cy="{mid}" r="3.5">{title}</circle>"#, x + 5)
        }
        _ => write!(out, r#"<circle class="io look{err}" cx="{}" cy="{mid}" r="2">{title}</circle>"#, x + 5),
    };
}

fn axis_mark(out: &mut String, mark: &super::story::AxisMark, h: u64) {
    let x = mark.slot * SLOT_PX + SLOT_PX / 2;
    let y = OPS_H + AXIS_H / 2;
    let title = format!("<title>{}</title>", esc(&mark.title));
    let _ = match mark.kind {
        AxisKind::Fault => write!(out, r#"<path class="fault" d="M{} {} l6 12 l-12 0 z">{title}</path>"#, x, y - 7),
        AxisKind::Crash => write!(
            out,
            r#"<g class="crash-marker" data-slot="{}"><line x1="{x}" y1="0" x2="{x}" y2="{h}"/><text x="{}" y="{}">⚡ power loss</text>{title}</g>"#,
            mark.slot,
            x + 3,
            y + 4
        ),
        AxisKind::Restart => {
            write!(out, r#"<g class="restart"><line x1="{x}" y1="{OPS_H}" x2="{x}" y2="{h}"/>{title}</g>"#)
        }
        AxisKind::Note => write!(out, r#"<circle class="note" cx="{x}" cy="{y}" r="4">{title}</circle>"#),
    };
}

/// At a power loss, one glyph per file in its lane: what became of its
/// unsynced writes (the worst of them picks the colour).
fn crash_glyphs(out: &mut String, story: &Story, slot: u64, picture: &CrashPicture) {
    let x = slot * SLOT_PX + SLOT_PX / 2 + 2;
    for file in &picture.files {
        let Some(lane) = story.lanes.iter().position(|l| l.key == LaneKey::File(file.inode)) else { continue };
        let class = fate_class(file);
        let title = esc(&fate_text(file));
        let _ = write!(
            out,
            r#"<rect class="fate {class}" x="{x}" y="{}" width="12" height="{}"><title>{title}</title></rect>"#,
            lane_y(lane) + 5,
            LANE_H - 10
        );
    }
}

/// `garbage`, `cut`, `lost` or `kept`: the worst of a file's fates.
pub fn fate_class(file: &FileFate) -> &'static str {
    let any = |word: &str| file.ops.iter().any(|op| op.fate.contains(word));
    if !file.garbage.is_empty() || any("garbage") {
        "garbage"
    } else if any("cut") || any("partly") {
        "cut"
    } else if any("lost") || any("did not survive") || file.path_after.is_none() {
        "lost"
    } else {
        "kept"
    }
}

/// A file's fate at a crash as lines of text.
pub fn fate_text(file: &FileFate) -> String {
    let before = file.path_before.as_deref().unwrap_or("(unlinked, or not yet named)");
    let after = file.path_after.as_deref().unwrap_or("(gone)");
    let mut text = format!(
        "{before} -> {after}: durable {} bytes, reads saw {}, after the crash {}",
        file.len_durable, file.len_volatile, file.len_after
    );
    for op in &file.ops {
        let _ = write!(text, "\n  {}: {}", op.what, op.fate);
    }
    for (a, b) in &file.garbage {
        let _ = write!(text, "\n  garbage in bytes {a}..{b}");
    }
    text
}

/// The last component of a path.
pub fn short(path: &str) -> &str {
    path.rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(path)
}

/// `text` cut to `max` characters, with an ellipsis.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
