//! The audit: recompute every invariant the store keeps incrementally and
//! report each one that does not hold. The simulator runs it after every
//! recovery and every few operations; a clean audit is part of the
//! durability contract, not a debugging aid.

use std::collections::BTreeMap;
use std::ffi::OsStr;

use super::names::{classify, Listed};
use super::segments::seq_of_file_name;
use super::value::{entry_weight, Value};
use super::{Store, REWRITE_TEMP_FILE};
use crate::manifest::MANIFEST_TEMP_FILE;

/// One broken invariant, described for a person.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation(pub String);

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Store {
    /// Check every invariant; an empty list means the store is sound.
    ///
    /// - every stub names a loaded segment that holds its key, and carries
    ///   no TTL; no stored hash is empty;
    /// - each segment's live count equals the stubs pointing at it, and
    ///   `live + dead == records`;
    /// - `used_memory` equals a recount;
    /// - the loaded segments are exactly the manifest's live entries, each
    ///   with the seq of its file name and footer;
    /// - the directory holds exactly the registered `*.seg` files, and no
    ///   leftover rewrite or manifest-compaction temp file.
    pub fn audit(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut v = |s: String| out.push(Violation(s));
        let show = |k: &[u8]| String::from_utf8_lossy(k).into_owned();

        let mut stubs_per_seq: BTreeMap<u64, u64> = BTreeMap::new();
        let mut used_memory = 0u64;
        for (key, entry) in &self.map {
            used_memory += entry_weight(key, entry);
            match &entry.value {
                Value::Cold(stub) => {
                    *stubs_per_seq.entry(stub.seq).or_default() += 1;
                    if entry.expire_at_ms.is_some() {
                        v(format!("stub {} carries a key TTL", show(key)));
                    }
                    match self.segments.get(stub.seq) {
                        None => v(format!("stub {} names segment seq {}, which is not loaded", show(key), stub.seq)),
                        Some(slot) => match slot.seg.get(key) {
                            Ok(Some(_)) => {}
                            Ok(None) => v(format!("stub {} names {}, which does not hold it", show(key), slot.file)),
                            Err(e) => v(format!("stub {}: its segment does not read: {e}", show(key))),
                        },
                    }
                }
                Value::Hash(fields) if fields.is_empty() => v(format!("hash {} is stored empty", show(key))),
                _ => {}
            }
        }
        if used_memory != self.used_memory {
            v(format!("used_memory is {} but a recount gives {used_memory}", self.used_memory));
        }

        for (seq, slot) in self.segments.iter() {
            let stubs = stubs_per_seq.remove(&seq).unwrap_or(0);
            if slot.live != stubs {
                v(format!("segment {}: live count {} but {stubs} stubs point at it", slot.file, slot.live));
            }
            let records = slot.seg.meta().records;
            if slot.live + slot.dead != records {
                v(format!("segment {}: live {} + dead {} != {records} records", slot.file, slot.live, slot.dead));
            }
            if slot.seg.meta().seq != seq || seq_of_file_name(&slot.file) != Some(seq) {
                v(format!("segment {}: seq {seq} disagrees with its footer or file name", slot.file));
            }
            match self.manifest.get(seq) {
                Some(entry) if entry.file == slot.file => {}
                _ => v(format!("segment {} (seq {seq}) is loaded but not registered", slot.file)),
            }
        }
        for (seq, stubs) in stubs_per_seq {
            v(format!("{stubs} stubs point at segment seq {seq}, which is not loaded"));
        }
        for entry in self.manifest.live() {
            if !self.segments.contains(entry.seq) {
                v(format!("manifest registers {} (seq {}), which is not loaded", entry.file, entry.seq));
            }
        }

        self.audit_directory(&mut v);
        out
    }

    /// The directory against the manifest: every registered segment is
    /// there, and none of the engine's own leftovers is (but for those the
    /// store knows it could not remove, and until the sweep a point-in-time
    /// cut postponed). A name the engine never writes is not its business.
    fn audit_directory(&self, v: &mut impl FnMut(String)) {
        let names = match self.vfs.list_dir(&self.dir) {
            Ok(names) => names,
            Err(e) => return v(format!("cannot list {}: {e}", self.dir.display())),
        };
        // After a point-in-time cut the sweep waits (nothing is removed
        // after damage): strays are expected until then.
        for name in names.iter().filter(|_| !self.sweep_pending) {
            match classify(name, |file| self.manifest.is_live_file(file)) {
                Listed::Kept | Listed::Foreign => {}
                // A failed step's file whose removal failed too: the store
                // knows it (see `Store::leftovers`).
                Listed::UnregisteredSegment(file) if self.leftovers.contains(file) => {
                    // Its seq was handed out once: never again.
                    let seq = seq_of_file_name(file).expect("classified as a segment file by its seq");
                    if seq >= self.manifest.next_free_seq() {
                        v(format!(
                            "leftover segment file {file} bears seq {seq}, which the store would hand out again"
                        ));
                    }
                }
                Listed::LeftoverTemp(file) if self.leftovers.contains(file) => {}
                Listed::UnregisteredSegment(file) => v(format!("unregistered segment file {file} in the directory")),
                Listed::LeftoverTemp(file) if file == REWRITE_TEMP_FILE => {
                    v(format!("leftover rewrite temp file {file}"))
                }
                Listed::LeftoverTemp(file) => {
                    debug_assert_eq!(file, MANIFEST_TEMP_FILE, "the two temp files the engine writes");
                    v(format!("leftover manifest compaction temp file {file}"))
                }
            }
        }
        for entry in self.manifest.live() {
            if names.binary_search_by(|name| name.as_os_str().cmp(OsStr::new(&entry.file))).is_err() {
                v(format!("registered segment {} is missing from the directory", entry.file));
            }
        }
    }
}
