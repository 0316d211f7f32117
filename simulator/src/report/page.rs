//! The page around the timeline: the header and its facts, the crash
//! (per file what survived, was cut, torn or left garbage; the directory's
//! changes; the damage), the recovery, the verdict with the failed check,
//! its diff and the repro, and the operations in view. One self-contained
//! HTML file: inline CSS, SVG and a little script, nothing fetched.

use std::fmt::Write as _;

use super::escape::esc;
use super::story::Story;
use super::svg::{self, fate_class, fate_text};
use super::{Report, Window};
use crate::trace::CrashPicture;

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// The whole page.
pub fn render(report: &Report, window: Window) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style>\
         <script>{ERROR_TRAP}</script></head><body>",
        esc(&report.title)
    );
    header(&mut out, report);
    timeline(&mut out, &report.story, window);
    let crash = report.crash_in_focus();
    match crash {
        Some((slot, picture)) => crash_section(&mut out, &report.story, slot, picture),
        None => out.push_str("<section id=\"crash\"><h2>At the crash</h2><p>No power loss in this run.</p></section>"),
    }
    recovery_section(&mut out, report, crash.map(|(slot, _)| slot));
    verdict_section(&mut out, report);
    ops_section(&mut out, &report.story, window);
    let _ = writeln!(out, "<script>{SCRIPT}</script></body></html>");
    out
}

/// Installed first, so that an error anywhere later is recorded where the
/// browser test reads it (`data-errors` on the root element).
const ERROR_TRAP: &str = "window.onerror=function(m,s,l){var r=document.documentElement;\
r.setAttribute('data-errors',(r.getAttribute('data-errors')||'')+m+' (line '+l+'); ');};";

fn header(out: &mut String, report: &Report) {
    let _ = write!(out, "<header><h1>{}</h1>", esc(&report.title));
    match &report.failure {
        Some(f) => {
            let _ = write!(out, r#"<p class="verdict bad">FAILED check '{}' at op #{}</p>"#, esc(&f.check), f.op_index);
        }
        None => out.push_str(r#"<p class="verdict good">no failure</p>"#),
    }
    out.push_str("<table class=\"facts\">");
    for (key, value) in &report.facts {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(key), esc(value));
    }
    out.push_str("</table></header>");
}

fn timeline(out: &mut String, story: &Story, window: Window) {
    out.push_str(r#"<section id="picture"><h2>The run in time</h2><p class="legend"><span class="k write"></span>write
<span class="k sync"></span>fsync / dir fsync <span class="k truncate"></span>truncate (set_len)
<span class="k rename"></span>rename <span class="k unlink">✕</span>unlink <span class="k open"></span>open
<span class="k look"></span>read, length, listing <span class="k fault"></span>fault <span class="k crash"></span>power loss
<span class="k restart"></span>restart <span class="k note"></span>recovery note — at a power loss, per file:
<span class="k fate kept"></span>all kept <span class="k fate lost"></span>lost <span class="k fate cut"></span>cut
<span class="k fate garbage"></span>garbage. Hover any mark for details.</p>"#);
    let whole = window.start == 0 && window.end >= story.slots;
    let _ = write!(
        out,
        r#"<p><button id="toggle" type="button"{}>show the whole run</button> <span id="status"></span></p>"#,
        if whole { " disabled" } else { "" }
    );
    if !whole {
        strip(out, "view-window", &story.restricted(window.start, window.end), window.start, false);
    }
    strip(out, "view-whole", story, 0, !whole);
    out.push_str("</section>");
}

/// One view: the lane labels beside a scrolling timeline.
fn strip(out: &mut String, id: &str, story: &Story, first_slot: u64, shown: bool) {
    let hidden = if shown { "" } else { " hidden" };
    let _ = write!(out, r#"<div class="strip" id="{id}" data-slots="{}"{hidden}>"#, story.slots);
    out.push_str(&svg::labels(story));
    out.push_str("<div class=\"scroll\">");
    out.push_str(&svg::timeline(story, first_slot));
    out.push_str("</div></div>");
}

fn crash_section(out: &mut String, story: &Story, slot: u64, picture: &CrashPicture) {
    let op = story.op_at(slot).map_or(String::new(), |op| format!(", during op #{}: {}", op.index, op.label));
    let _ = write!(
        out,
        r#"<section id="crash"><h2>At the crash</h2><p class="crash-point">Power lost after {} I/Os (sector size {} bytes){}.</p>"#,
        picture.io_index,
        picture.sector_bytes,
        esc(&op)
    );
    if picture.files.is_empty() {
        out.push_str("<p>No file had unsynced data.</p>");
    }
    out.push_str(r#"<table class="fates"><tr><th>file (before → after)</th><th>bytes: durable / reads saw / after</th><th>unsynced change</th><th>what the disk kept</th></tr>"#);
    for file in &picture.files {
        let names = format!(
            "{} → {}",
            file.path_before.as_deref().unwrap_or("(unlinked, or not yet named)"),
            file.path_after.as_deref().unwrap_or("(gone)")
        );
        let rows = file.ops.len().max(1) + file.garbage.len();
        let _ = write!(
            out,
            r#"<tr class="file {}" title="{}"><td rowspan="{rows}">{}</td><td rowspan="{rows}">{} / {} / {}</td>"#,
            fate_class(file),
            esc(&fate_text(file)),
            esc(&names),
            file.len_durable,
            file.len_volatile,
            file.len_after
        );
        if file.ops.is_empty() {
            out.push_str("<td>—</td><td>(no unsynced data: only its name changed)</td></tr>");
        }
        for (i, op) in file.ops.iter().enumerate() {
            if i > 0 {
                out.push_str("<tr>");
            }
            let _ = write!(out, "<td>{}</td><td>{}</td></tr>", esc(&op.what), esc(&op.fate));
        }
        for (a, b) in &file.garbage {
            let _ = write!(out, "<tr><td>garbage</td><td>bytes {a}..{b} hold neither old nor new content</td></tr>");
        }
    }
    out.push_str("</table>");
    if !picture.dirs.is_empty() {
        out.push_str(
            r#"<table class="dirs"><tr><th>directory</th><th>unsynced change</th><th>after the crash</th></tr>"#,
        );
        for dir in &picture.dirs {
            let (class, word) = if dir.survived { ("kept", "survived") } else { ("lost", "lost") };
            let _ = write!(
                out,
                r#"<tr class="{class}"><td>{}</td><td>{}</td><td>{word}</td></tr>"#,
                esc(&dir.dir),
                esc(&dir.what)
            );
        }
        out.push_str("</table>");
    }
    for damage in &picture.damage {
        let _ = write!(out, r#"<p class="damage">damage announced: {}</p>"#, esc(damage));
    }
    out.push_str("</section>");
}

fn recovery_section(out: &mut String, report: &Report, crash_slot: Option<u64>) {
    out.push_str(r#"<section id="recovery"><h2>The recovery</h2>"#);
    let after = crash_slot.unwrap_or(0);
    let notes: Vec<&(u64, String)> = report.story.notes.iter().filter(|(slot, _)| *slot >= after).take(3).collect();
    if notes.is_empty() && report.recovery.is_empty() {
        out.push_str("<p>No recovery was recorded after this crash.</p>");
    }
    for (_, note) in notes {
        let _ = write!(out, "<pre class=\"note\">{}</pre>", esc(note));
    }
    for line in &report.recovery {
        let _ = write!(out, "<pre class=\"note\">{}</pre>", esc(line));
    }
    out.push_str("</section>");
}

fn verdict_section(out: &mut String, report: &Report) {
    out.push_str(r#"<section id="verdict"><h2>The checker's verdict</h2>"#);
    let Some(f) = &report.failure else {
        out.push_str("<p class=\"verdict good\">Every check passed.</p></section>");
        return;
    };
    let op = f.op_line.as_ref().map_or(String::new(), |line| format!(": {line}"));
    let _ = write!(
        out,
        r#"<p class="verdict bad">seed {} failed check '{}' at op #{}{}</p><pre id="diff">{}</pre>"#,
        f.seed,
        esc(&f.check),
        f.op_index,
        esc(&op),
        esc(&f.detail)
    );
    let _ = write!(out, r#"<p>repro: <code id="repro">{}</code></p>"#, esc(&f.repro));
    if !f.recent.is_empty() {
        out.push_str("<details><summary>last events</summary><pre>");
        for line in &f.recent {
            let _ = writeln!(out, "{}", esc(line));
        }
        out.push_str("</pre></details>");
    }
    out.push_str("</section>");
}

fn ops_section(out: &mut String, story: &Story, window: Window) {
    out.push_str(
        r#"<section id="ops"><h2>Operations</h2><table class="ops"><tr><th>op</th><th>line</th><th>reply</th></tr>"#,
    );
    for op in &story.ops {
        let outside = op.end <= window.start || op.start >= window.end;
        let _ = write!(
            out,
            r#"<tr{}><td>#{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>"#,
            if outside { r#" class="outside""# } else { "" },
            op.index,
            esc(&op.label),
            esc(op.reply.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table></section>");
}
