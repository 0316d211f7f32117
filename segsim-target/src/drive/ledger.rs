//! The segsim workload's bookkeeping beyond the model: the run-wide seq
//! ledger (a segment seq is never reused), the floor a recovery after
//! damage may fall to, what an open after damage or at a point in time
//! must keep of the directory, and the audit (the store's own, then its
//! content against the model).

use std::collections::BTreeMap;
use std::path::Path;

use engine::manifest::MANIFEST_FILE;
use engine::store::{RecoveryReport, AOF_FILE};

use super::{Driver, DB_DIR};
use crate::checker::{diff, Floor, LogPosition};
use simulator::disk::{Damage, DamageKind};
use simulator::failure::Check;
use simulator::harness::{Harness, Step};

impl Driver<'_> {
    /// Fail if a segment file now bears a seq the run-wide ledger knows
    /// from a different file; with `registered` (a clean audit just saw
    /// the directory), note every segment file in it whose name is durable
    /// in the ledger.
    ///
    /// Only a durable name binds its seq for the rest of the run: a file
    /// whose create a power loss may still take back (a failed seal's
    /// debris, before any directory fsync) leaves no trace the engine could
    /// find after the crash, so no engine can promise never to hand its seq
    /// out again. Every registered segment's name is durable before its ADD
    /// (the seal's directory fsync), and a debris file whose name is
    /// durable is still there at the next open, whose sweep reserves its
    /// seq before removing it: those seqs are never reused.
    pub(super) fn check_seqs(&mut self, h: &Harness, registered: bool) -> Step {
        let record = registered && !self.sweep_skipped;
        let names_now = self.vfs.names_changes();
        if self.seqs_checked.is_some_and(|(names, recorded)| names == names_now && (recorded || !record)) {
            // No entry, and no entry's durability, changed since a walk
            // that recorded at least as much passed: this one would see
            // exactly what it saw.
            return Ok(());
        }
        let mut reused = None;
        self.vfs.visit_entries(Path::new(DB_DIR), |entry| {
            let Some(seq) = segment_seq(entry.name) else { return };
            let (name, inode) = (entry.name, entry.inode);
            match self.segment_seqs.get(&seq) {
                // Durability is a lookup of its own: asked last, and only
                // of a name the ledger does not hold yet.
                None if record && entry.durable() => {
                    self.segment_seqs.insert(seq, (name.to_string(), inode));
                }
                Some((first_name, first_inode))
                    if reused.is_none() && (*first_inode, first_name.as_str()) != (inode, name) =>
                {
                    reused = Some(format!(
                        "segment seq {seq} was {first_name} (inode {first_inode}); now it is {name} (inode {inode})"
                    ));
                }
                _ => {}
            }
        });
        match reused {
            Some(why) => Err(h.fail(Check::SeqReuse, why)),
            None => {
                self.seqs_checked = Some((names_now, record));
                Ok(())
            }
        }
    }

    /// How far back a recovery after `damage` may go (see [`Floor`]): to
    /// the damaged byte of the log, where a point-in-time recovery cuts,
    /// and so may the default one where the damage was unvouched (no later
    /// durable write could have recorded that the bytes were durable, so no
    /// file format tells the damage from a torn write). Everywhere else
    /// nothing may be lost.
    pub(super) fn floor(&self, damage: &[Damage]) -> Floor {
        let log = Path::new(DB_DIR).join(AOF_FILE);
        let cut_there = |d: &&Damage| {
            Path::new(&d.path) == log
                && match d.kind {
                    DamageKind::Media | DamageKind::LostWrite | DamageKind::MisdirectedWrite => {
                        self.config.point_in_time || !d.vouched
                    }
                    DamageKind::JunkPrepended => self.config.point_in_time,
                    _ => false,
                }
        };
        // The earliest such damage: a silent write fault leaves two (its
        // place and where it landed), and the cut is at the first.
        let Some(damage) = damage.iter().filter(cut_there).min_by_key(|d| d.offset_bytes) else {
            return Floor::Durable;
        };
        match self.vfs.identity(&log) {
            Some((file, _)) => Floor::DamagedAt(LogPosition { file, len_bytes: damage.offset_bytes }),
            None => Floor::Durable,
        }
    }

    /// Where the log ends now: for each acknowledged write, so a damage
    /// floor knows which writes lie wholly before the damage.
    pub(super) fn log_position(&self) -> Option<LogPosition> {
        let (file, len_bytes) = self.vfs.identity(&self.log_path)?;
        Some(LogPosition { file, len_bytes })
    }

    /// Fail `check` unless the store's directory holds exactly `before`,
    /// naming the files `who` changed.
    pub(super) fn directory_unchanged(
        &self,
        h: &Harness,
        before: &BTreeMap<String, Vec<u8>>,
        check: Check,
        who: &str,
    ) -> Step {
        let changed = self.vfs.files_changed(Path::new(DB_DIR), before);
        if changed.is_empty() {
            return Ok(());
        }
        Err(h.fail(check, format!("{who} changed the directory: {changed:?}")))
    }

    /// After an open that watched the directory: a file the store does not
    /// own (a stray) is never removed; a point-in-time open removes no file
    /// at all, and every byte it cut from the log is in its quarantine file.
    /// The manifest and the log are replayed as prefixes: whatever an open
    /// that took them kept, it read from their first byte up to a cut. No
    /// changed byte may lie inside that prefix — damage is refused or cut
    /// at, never replayed. This sees what the content cannot: a record
    /// misdirected onto the place of the record before it and accepted
    /// there (a checksum that forgot its place) replays a ledger no prefix
    /// of the manifest ever held, yet one the sweep may tidy into an
    /// honest-looking registry. A file an earlier, failed open attempt
    /// already rewrote (its cut at the damage, a mark after it) no longer
    /// holds what the damage left (`at_crash`, the directory before the
    /// first attempt, differs): the offsets no longer apply to it. Nor is
    /// it a replay of damage when every replayed byte is what the page
    /// cache held under the same name when power went, in the file a
    /// rename the crash took back had put there: misdirected writes that
    /// rebuilt that file's bytes at their own offsets in the file it
    /// replaced left what no format can tell from the replacement (the
    /// soak's seed 29129617).
    pub(super) fn check_replayed_before_damage(
        &self,
        h: &Harness,
        report: &RecoveryReport,
        before: &BTreeMap<String, Vec<u8>>,
        at_crash: Option<&BTreeMap<String, Vec<u8>>>,
        damage: &[Damage],
    ) -> Step {
        let manifest_len = before.get(MANIFEST_FILE).map_or(0, |bytes| bytes.len() as u64);
        let prefixes = [
            (MANIFEST_FILE, manifest_len.saturating_sub(report.manifest_torn_bytes)),
            (AOF_FILE, report.aof.valid_len_bytes),
        ];
        for changed in damage.iter().filter(|d| d.kind.changes_bytes_in_place()) {
            let name = Path::new(&changed.path).file_name().map(|n| n.to_string_lossy().into_owned());
            let Some((file, replayed_bytes)) = prefixes.iter().find(|(file, _)| name.as_deref() == Some(*file)) else {
                continue;
            };
            if at_crash.is_some_and(|at_crash| at_crash.get(*file) != before.get(*file)) {
                continue;
            }
            // Every replayed byte is the replacement's own (see
            // `Damage::matches_replacement_bytes`): what the engine wrote
            // for this path, where it wrote it. A replay that reads one
            // byte past that prefix is still held to the rule.
            if *replayed_bytes <= changed.matches_replacement_bytes {
                continue;
            }
            if *replayed_bytes > changed.offset_bytes {
                return Err(h.fail(
                    Check::Durability,
                    format!(
                        "the open replayed {file} through byte {replayed_bytes}, past byte {} that damage changed \
                         ({:?}): damage must be refused or cut at, never replayed",
                        changed.offset_bytes, changed.kind
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn check_nothing_destroyed(
        &self,
        h: &Harness,
        report: &RecoveryReport,
        before: &BTreeMap<String, Vec<u8>>,
        damage: &[Damage],
    ) -> Step {
        let after = self.vfs.files(Path::new(DB_DIR));
        for stray in damage.iter().filter(|d| d.kind == DamageKind::StrayFile) {
            let name = Path::new(&stray.path).file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|name| !after.contains_key(&name)) {
                return Err(
                    h.fail(Check::Destroyed, format!("the open removed {}, a file it does not own", stray.path))
                );
            }
        }
        if !self.config.point_in_time {
            return Ok(());
        }
        let gone: Vec<&String> = before.keys().filter(|name| !after.contains_key(*name)).collect();
        if !gone.is_empty() {
            return Err(h.fail(Check::Destroyed, format!("a point-in-time open removed {gone:?}")));
        }
        let cut_bytes = report.aof.dropped_bytes;
        if cut_bytes == 0 {
            return Ok(());
        }
        let log_before = before.get(AOF_FILE).map_or(&[][..], Vec::as_slice);
        let log_after = after.get(AOF_FILE).map_or(&[][..], Vec::as_slice);
        let valid_len = report.aof.valid_len_bytes as usize;
        let quarantined = report.aof.quarantine_file.as_ref().and_then(|name| after.get(name));
        let kept = valid_len <= log_before.len() && log_after.get(..valid_len) == log_before.get(..valid_len);
        let moved = quarantined.is_some_and(|q| log_before.get(valid_len..) == Some(q.as_slice()));
        if kept && moved {
            return Ok(());
        }
        Err(h.fail(
            Check::Destroyed,
            format!(
                "a point-in-time cut at byte {valid_len} lost bytes: the log's prefix kept: {kept}, the {cut_bytes} \
                 bytes after it in the quarantine file ({:?}): {moved}",
                report.aof.quarantine_file
            ),
        ))
    }

    /// The store's audit with faults off: an observation, not part of the
    /// workload (it lists the directory, and a failed listing would only
    /// test the observer).
    pub fn audit_fault_free(&mut self) -> Vec<engine::store::Violation> {
        self.vfs.set_observing(true);
        let violations = self.store().audit();
        self.vfs.set_observing(false);
        violations
    }

    /// The audit, then the content compared with the model as the store
    /// walks it (a dump, every value copied, is built only for a report).
    pub(super) fn audit_content(&mut self, h: &Harness) -> Step {
        let violations = self.audit_fault_free();
        if !violations.is_empty() {
            return Err(h.fail(Check::Audit, format!("{violations:?}")));
        }
        self.check_seqs(h, true)?;
        let now_ms = self.now_ms();
        let store = self.store();
        let mut in_order = self.checker.shows_in_order(now_ms);
        let visited = store.logical_visit(|key, entry| in_order.next(key, entry));
        match visited {
            Ok(()) if in_order.finish() => Ok(()),
            Ok(()) => match store.logical_dump() {
                Ok(dump) => Err(h.fail(Check::Content, diff(&self.checker.expected(now_ms), &dump))),
                Err(e) => Err(h.fail(Check::Content, format!("logical_dump failed: {e}"))),
            },
            Err(e) => Err(h.fail(Check::Content, format!("logical_dump failed: {e}"))),
        }
    }
}

/// The seq in a segment file's name (`row-<hex table>-<seq>.seg`).
fn segment_seq(name: &str) -> Option<u64> {
    let stem = name.strip_prefix("row-")?.strip_suffix(".seg")?;
    stem.rsplit_once('-')?.1.parse().ok()
}
