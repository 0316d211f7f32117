//! Eviction: the three-phase protocol that moves out-of-window rows of a
//! windowed table into a segment, with no instant at which a row lacks a
//! recoverable home.
//!
//! 1. **seal** — build the segment from exactly the evictable rows, fsync
//!    it, fsync the directory (its name is durable), ADD it to the
//!    manifest durably. The rows are still hot, and still in the log.
//! 2. **frame** — log `SEGMENTED seq file`. From here, replay demotes the
//!    segment's rows to stubs (demote-or-insert).
//! 3. **commit** — phase-change exactly the sealed keys to stubs.
//!
//! A crash before the frame leaves a registered segment nothing names: the
//! next open sweeps it and the rows replay hot. A crash after the frame
//! replays to the committed state. Reversing 1 and 2 would let a durable
//! frame name a segment that never became durable — rows with no home.

use std::ops::Bound;

use super::apply::table_holds;
use super::command::parse_int;
use super::command::Command;
use super::names::{classify, Listed};
use super::row::{FieldRef, Row};
use super::segments::{segment_file_name, seq_of_file_name};
use super::value::{encode_row, Entry, Value};
use super::Store;
use crate::aof::Record;
use crate::manifest::SegEntry;
use crate::seg::{Seg, SegBuilder};
use crate::IoOp;
use crate::{Error, Phase, Result};

/// What one [`Store::evict`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictReport {
    /// Segments sealed, framed and committed.
    pub segments_sealed: u64,
    /// Rows that became cold.
    pub rows_evicted: u64,
}

/// A sealed batch: its identity and exactly the keys it holds.
struct Sealed {
    seq: u64,
    file: String,
    keys: Vec<Vec<u8>>,
}

/// Whether an error is a failed fsync (of a file or a directory): fatal.
pub(super) fn is_sync_failure(error: &Error) -> bool {
    matches!(error, Error::Io { op, .. } if op.is_sync())
}

impl Store {
    /// Slide every window and evict its out-of-window rows, one segment
    /// per table with anything to evict.
    ///
    /// One table's failure does not starve the others: a table whose
    /// eviction fails (its segment could not be written, say) is left hot
    /// and the tables after it are still evicted; the first failure is
    /// returned once every table had its turn. Only a failure that
    /// poisons the store (a failed fsync) stops at once.
    pub fn evict(&mut self) -> Result<EvictReport> {
        self.check_writable()?;
        let now_ms = self.clock.now_ms();
        self.tick_at(now_ms)?;
        let tables: Vec<Vec<u8>> = self.windows.keys().cloned().collect();
        let mut report = EvictReport::default();
        let mut first_failure = None;
        for table in tables {
            match self.evict_table(&table, now_ms) {
                Ok(0) => {}
                Ok(rows) => {
                    report.rows_evicted += rows;
                    report.segments_sealed += 1;
                }
                Err(e) if self.poisoned.is_some() => return Err(e),
                Err(e) => {
                    first_failure.get_or_insert(e);
                }
            }
        }
        first_failure.map_or(Ok(report), Err)
    }

    /// Evict one table's out-of-window rows into one segment: the rows
    /// that became cold (0: nothing to evict).
    fn evict_table(&mut self, table: &[u8], now_ms: u64) -> Result<u64> {
        let rows = self.purged_evictable_rows(table, now_ms)?;
        if rows.is_empty() {
            return Ok(0);
        }
        let sealed = self.seal(table, &rows, now_ms)?;
        if !canary!(FrameBeforeRegister) {
            self.frame(&sealed, now_ms)?;
        }
        Ok(self.commit(table, &sealed))
    }

    /// [`Store::evictable_rows`], once the out-of-window rows with expired
    /// fields are purged of them. A row whose TTL'd fields have all expired
    /// is TTL-free to a reader: its purge is logged, as every purge is, so
    /// the hot row is exactly what the segment will hold. Most evictions
    /// find none to purge, and then the one scan serves both.
    fn purged_evictable_rows(&mut self, table: &[u8], now_ms: u64) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let out = self.out_of_window(table, false, now_ms);
        let stale: Vec<Vec<u8>> = out
            .iter()
            .filter(|(_, row)| row.values().any(|slot| slot.is_expired(now_ms)))
            .map(|(key, _)| key.to_vec())
            .collect();
        if stale.is_empty() {
            return Ok(encode_rows(out));
        }
        for key in stale {
            self.purge_expired(&Command::HDel { key, fields: Vec::new() }, now_ms)?;
        }
        Ok(self.evictable_rows(table, now_ms))
    }

    /// The keys [`Store::evict`] would seal now: each windowed table's
    /// out-of-window rows without a live TTL, tables in name order, keys
    /// ascending. A function of what a reader sees and of the windows'
    /// high-water marks alone, so a clean restart (with or without a
    /// rewrite before it) never changes it. For checkers and operators.
    pub fn eviction_candidates(&self) -> Vec<Vec<u8>> {
        let now_ms = self.clock.now_ms();
        let mut keys = Vec::new();
        for table in self.windows.keys() {
            keys.extend(self.out_of_window(table, false, now_ms).into_iter().map(|(key, _)| key.to_vec()));
        }
        keys
    }

    /// The table's rows that may go cold now, key-ascending, each with its
    /// encoded payload: the out-of-window rows without any TTL (purged of
    /// expired fields by the caller).
    fn evictable_rows(&self, table: &[u8], now_ms: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
        encode_rows(self.out_of_window(table, false, now_ms))
    }

    /// The table's hot hash rows, as a reader at `now_ms` sees them, whose
    /// window column is a number below the window's threshold,
    /// key-ascending: those carrying a live key or field TTL if `with_ttl`,
    /// else those carrying none (a segment record keeps no TTL, so only
    /// these may be sealed). Expired keys and rows with no live field are
    /// no rows at all.
    fn out_of_window(&self, table: &[u8], with_ttl: bool, now_ms: u64) -> Vec<(&[u8], &Row)> {
        let window = &self.windows[table];
        let Some(threshold) = window.threshold() else { return Vec::new() };
        let prefix = super::apply::table_prefix(table);
        let mut rows = Vec::new();
        for (key, entry) in self.map.range::<[u8], _>((Bound::Included(&prefix[..]), Bound::Unbounded)) {
            if !table_holds(table, key) {
                break;
            }
            let Entry { value: Value::Hash(fields), expire_at_ms } = entry else { continue };
            if entry.is_expired(now_ms) || fields.values().all(|slot| slot.is_expired(now_ms)) {
                continue;
            }
            let live = |slot: &FieldRef<'_>| !slot.is_expired(now_ms);
            let has_ttl = expire_at_ms.is_some() || fields.values().filter(live).any(|f| f.expire_at_ms.is_some());
            let out =
                fields.get(&window.column).filter(live).and_then(|f| parse_int(f.value)).is_some_and(|v| v < threshold);
            if out && has_ttl == with_ttl {
                rows.push((key.as_slice(), fields));
            }
        }
        rows
    }

    /// A seq for a new segment, above every seq a file in the directory
    /// bears. After a sweep that holds by the manifest alone (the sweep
    /// reserved the debris' seqs before removing it); while a
    /// point-in-time open's sweep is pending, a failed seal's debris may
    /// still lie there unregistered, so the first seal lists the directory
    /// once and starts above it.
    fn fresh_seq(&mut self) -> Result<u64> {
        if self.sweep_pending && !self.debris_seqs_noted {
            let names = Self::io(IoOp::ListDir, &self.dir, self.vfs.list_dir(&self.dir))?;
            for name in &names {
                if let Listed::UnregisteredSegment(file) = classify(name, |file| self.manifest.is_live_file(file)) {
                    let seq = seq_of_file_name(file).expect("classified as a segment file by its seq");
                    self.manifest.note_seq_in_use(seq);
                }
            }
            self.debris_seqs_noted = true;
        }
        Ok(self.manifest.allocate_seq())
    }

    /// Phase 1. On failure nothing in memory has changed; a half-built
    /// file is unlinked (or left for the next open's sweep).
    fn seal(&mut self, table: &[u8], rows: &[(Vec<u8>, Vec<u8>)], now_ms: u64) -> Result<Sealed> {
        let seq = self.fresh_seq()?;
        let file = segment_file_name(table, seq);
        let path = self.dir.join(&file);
        let built = (|| {
            let mut builder = SegBuilder::create(&*self.vfs, &path, seq)?;
            for (key, payload) in rows {
                builder.push(key, payload)?;
            }
            builder.finish()
        })();
        let meta = match built {
            Ok(meta) => meta,
            Err(e) => {
                if is_sync_failure(&e) {
                    self.poison(&e);
                }
                self.remove_or_remember(&path, file);
                return Err(e);
            }
        };
        if canary!(FrameBeforeRegister) {
            // Planted: the frame goes out while the segment is neither
            // named durably nor registered.
            self.log(&[Record::Segmented { seq, file: file.clone() }], now_ms)?;
        }
        self.vfs.mark(Phase::SealBuilt.as_str());
        if !canary!(SealNoDirSync) {
            let synced = Self::io(IoOp::SyncDir, &self.dir, self.vfs.sync_dir(&self.dir));
            if !canary!(DirSyncErrorIgnored) {
                self.poison_on_error(synced)?;
            }
        }
        self.vfs.mark(Phase::SealDirSynced.as_str());
        let entry = SegEntry {
            seq,
            file: file.clone(),
            table: table.to_vec(),
            min_key: meta.min_key.clone(),
            max_key: meta.max_key.clone(),
            records: meta.records,
        };
        let added = self.manifest.add(entry);
        self.poison_on_error(added)?;
        self.vfs.mark(Phase::SealRegistered.as_str());
        let seg = match Seg::open(&*self.vfs, &path) {
            Ok(seg) => seg,
            Err(e) => {
                // Registered but unreadable (a failed or flipped read):
                // unregister it so no frame ever names it.
                self.retire_segment(seq, &file)?;
                return Err(e);
            }
        };
        assert_eq!(seg.meta().records, rows.len() as u64, "the segment holds exactly the sealed rows");
        self.segments.insert(seq, seg, file.clone());
        Ok(Sealed { seq, file, keys: rows.iter().map(|(k, _)| k.clone()).collect() })
    }

    /// Phase 2. If the frame could not be appended (and the log was cut
    /// back cleanly), the segment is unregistered again; if the log is
    /// poisoned the frame may or may not be durable, and the next open
    /// settles it either way.
    fn frame(&mut self, sealed: &Sealed, now_ms: u64) -> Result<()> {
        let record = Record::Segmented { seq: sealed.seq, file: sealed.file.clone() };
        if let Err(e) = self.log(&[record], now_ms) {
            if self.poisoned.is_none() {
                self.segments.remove(sealed.seq);
                self.retire_segment(sealed.seq, &sealed.file)?;
            }
            return Err(e);
        }
        self.vfs.mark(Phase::FrameLogged.as_str());
        Ok(())
    }

    /// Phase 3: exactly the sealed keys become stubs. Nothing ran between
    /// seal and commit, so each is still the hot row that was sealed.
    fn commit(&mut self, table: &[u8], sealed: &Sealed) -> u64 {
        self.demote_all(&sealed.keys, sealed.seq);
        if canary!(GhostStubs) {
            // Planted: the out-of-window rows again, without the seal's TTL filter.
            let now_ms = self.clock.now_ms();
            let ghosts: Vec<Vec<u8>> =
                self.out_of_window(table, true, now_ms).into_iter().map(|(k, _)| k.to_vec()).collect();
            self.demote_all(&ghosts, sealed.seq);
        }
        self.vfs.mark(Phase::CommitDone.as_str());
        sealed.keys.len() as u64
    }
}

/// Each row with its segment payload, in the rows' order.
fn encode_rows(rows: Vec<(&[u8], &Row)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    rows.into_iter()
        .map(|(key, row)| {
            let mut payload = Vec::new();
            encode_row(row, &mut payload);
            (key.to_vec(), payload)
        })
        .collect()
}
