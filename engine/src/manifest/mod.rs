//! The manifest: the registry of one segment directory's live segments.
//!
//! A segment file exists for the store only once its ADD here is durable.
//! Sealing writes and fsyncs the segment, makes its directory entry durable,
//! and only then ADDs it; retiring a segment DROPs it before unlinking the
//! file. So after any crash every registered segment is a whole, durable
//! file, and a `*.seg` file nobody registered is debris from a crash
//! mid-seal that the store's sweep may delete.
//!
//! The file `MANIFEST` is an append-only ledger of the shared frames
//! (`frame.rs`): a header, then ADD and DROP records (byte layout in
//! `record.rs`). It only ever grows by one fsynced record at a time — the
//! exceptions are open cutting off a torn tail, and compaction replacing
//! the whole file. Replaying it from the start yields the live set and
//! `next_seq`, one more than the highest seq ever registered: an ADD below
//! it is refused, and that is how a seq stays unique for the life of the
//! directory, even after its segment is dropped (the rules are in
//! `ledger.rs`).
//!
//! # Compaction
//!
//! Dropped segments leave their ADD and DROP behind, so a ledger only
//! grows. When dead records dominate, [`Manifest::compact`] writes the
//! live set and `next_seq` to a new file and renames it over the old one
//! (`compact.rs`: the threshold, the protocol and its crash gaps). The
//! store compacts after a rewrite's retirement and at the end of an open,
//! so an open replays a ledger about the size of its live set, however
//! long the directory has lived. A compacted file's header says it is
//! compacted and carries `next_seq` (format version 3, `record.rs`), so
//! damage that destroys its snapshot — even all of it — is refused,
//! never cut into a fresh-looking ledger that forgot which seqs were used.
//! A version-2 file (an older segsim's) still opens by version 2's rules,
//! and compaction rewrites it as version 3.
//!
//! # Torn tail or damage
//!
//! Every append is fsynced before the next begins, so a crash can tear only
//! the last record. Replay (`replay.rs`) reads an invalid frame as a torn
//! tail if no valid record starts anywhere after it — open cuts it, makes
//! the cut durable and reports it in [`ManifestReport::torn_tail_bytes`] —
//! and as damage to durable records otherwise, refused with
//! [`Error::Corrupt`] naming the file and the offset. A compacted ledger's
//! snapshot, from the header that announces it to its `COMPACTED_END`, is
//! never a torn tail: an invalid frame there, or a file that ends there,
//! is damage. Refused, not healed: guessing which registrations to keep
//! could strand or resurrect rows.
//!
//! # The one limit
//!
//! A single flipped bit in the **last** record is indistinguishable from a
//! torn write of it: both are an invalid frame with nothing after it. It is
//! cut and reported (`torn_tail_bytes > 0`), not refused. That is safe for
//! the store because it logs a frame naming a segment only after the
//! segment's ADD is durable:
//!
//! - a cut ADD either belonged to an orphan (no durable log frame names the
//!   segment; its rows are still hot in the log, and the sweep deletes the
//!   file), or the log names a segment the manifest no longer registers and
//!   the store refuses to open with a clear error — never different data;
//! - a cut DROP re-registers a segment that no live log frame names (that
//!   is why it was dropped), so the sweep drops it again; if its file was
//!   already unlinked, loading it fails and the store refuses.
//!
//! # Failures
//!
//! A failed write or fsync leaves the tail of the file unknown: the record
//! may be missing, torn or whole, and after a failed fsync it may vanish
//! later even though it can be read now. The manifest is then poisoned:
//! every later [`Manifest::add`], [`Manifest::drop_seg`] or
//! [`Manifest::compact`] returns [`Error::Poisoned`] until it is reopened
//! and replay decides what survived. A caller must treat the record of a
//! failed call as possibly present after that reopen. A failed compaction
//! poisons too (see `compact.rs`).

mod compact;
mod ledger;
mod record;
mod replay;
#[cfg(test)]
mod testing;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::frame::MAX_FRAME_PAYLOAD_BYTES;
use crate::vfs::{read_stable, OpenMode, Vfs, VfsFile};
use crate::IoOp;
use crate::{Error, Result};

use ledger::Ledger;
pub(crate) use ledger::MAX_SEQ;
use replay::{replay, SCAN_BUDGET_BYTES};

/// The manifest's file name inside its segment directory.
pub const MANIFEST_FILE: &str = "MANIFEST";
/// Compaction's new ledger before its rename over [`MANIFEST_FILE`]. Never
/// read: at open one is debris of a compaction a crash interrupted, which
/// the store's sweep unlinks (see `compact.rs`).
pub const MANIFEST_TEMP_FILE: &str = "MANIFEST.tmp";

// The thresholds, named for the tests (`testing`); the engine uses them
// only inside `compact.rs`.
#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub use compact::{COMPACT_MIN_RECORDS, COMPACT_RECORDS_PER_LIVE};

/// One registered segment, as its ADD record carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegEntry {
    /// The segment's identity, unique for the life of the directory.
    pub seq: u64,
    /// The segment's file name inside the directory (a plain name).
    pub file: String,
    /// The windowed table whose rows it holds.
    pub table: Vec<u8>,
    /// Its smallest key.
    pub min_key: Vec<u8>,
    /// Its largest key.
    pub max_key: Vec<u8>,
    /// How many rows it holds.
    pub records: u64,
}

/// What opening the manifest found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManifestReport {
    /// ADD and DROP records replayed.
    pub records_replayed: u64,
    /// Bytes after the last whole record, cut as a torn tail.
    pub torn_tail_bytes: u64,
}

/// The parsed content of a manifest's bytes (no I/O), as
/// [`Manifest::parse`] gives it to the fuzz target and the tests (open
/// keeps the replay itself, in a [`ManifestRead`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
pub struct ManifestState {
    /// The live segments by seq.
    pub live: BTreeMap<u64, SegEntry>,
    /// One more than the highest seq ever ADDed, live or dropped (1 when
    /// none was): no seq below it may be registered again.
    pub next_seq: u64,
    /// The end of the last whole record; the bytes after it are a torn
    /// tail. 0 when not even the header is whole.
    pub valid_len_bytes: u64,
    /// ADD and DROP records replayed.
    pub records: u64,
    /// The file is a compacted ledger (it opens with a whole snapshot).
    pub compacted: bool,
    /// The format version its header names (2 or 3, see `record.rs`); 0
    /// when not even the header is whole.
    pub version: u32,
}

/// An open manifest: the live set in memory, and the file to append to.
pub struct Manifest {
    path: PathBuf,
    /// `None` when opened read-only (nothing is ever written then), or
    /// until [`Manifest::finish_recovery`] creates a missing file.
    file: Option<Box<dyn VfsFile>>,
    /// The end of the last whole record: where the next one is written.
    append_offset_bytes: u64,
    /// ADD and DROP records in the file (replayed, appended since, or
    /// written by compaction): what [`Manifest::compaction_due`] weighs
    /// against the live set.
    file_records: u64,
    ledger: Ledger,
    /// The lowest seq [`Manifest::allocate_seq`] may hand out next. Kept
    /// apart from the ledger because a seq handed out but never ADDed (a
    /// seal that failed) must not be handed out again by this instance.
    next_free_seq: u64,
    /// Why appends are refused, once a write or fsync has failed.
    poisoned: Option<String>,
    /// Opening's writes, not yet done: nothing may be appended before.
    pending: Option<PendingOpen>,
}

/// What [`Manifest::finish_recovery`] still has to write.
#[derive(Debug)]
struct PendingOpen {
    dir: PathBuf,
    /// The file's length as read.
    len_bytes: u64,
    /// No whole header: write one.
    write_header: bool,
    /// Cut a torn tail to this length.
    cut_to_bytes: Option<u64>,
}

/// A manifest read and checked, nothing changed yet.
#[derive(Debug)]
pub struct ManifestRead {
    dir: PathBuf,
    path: PathBuf,
    exists: bool,
    len_bytes: u64,
    replayed: replay::Replayed,
}

impl ManifestRead {
    /// Whether the file exists.
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// Whether it holds a whole header: a manifest a store opened and made
    /// durable (a new file, or one whose creation a crash tore, has none).
    pub fn has_header(&self) -> bool {
        self.replayed.valid_len_bytes > 0
    }

    /// The live segments, in ascending seq.
    pub fn live(&self) -> impl Iterator<Item = &SegEntry> {
        self.replayed.ledger.live().values()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What opening found (and will cut).
    pub fn report(&self) -> ManifestReport {
        ManifestReport {
            records_replayed: self.replayed.records,
            torn_tail_bytes: self.len_bytes - self.replayed.valid_len_bytes,
        }
    }

    /// Open the file as a manifest to append to, its opening writes pending
    /// until [`Manifest::finish_recovery`] — which also creates the file if
    /// it is missing: nothing is created before then. Takes the read: its
    /// ledger becomes the manifest's, moved, not copied.
    pub fn open(self, vfs: Arc<dyn Vfs>) -> Result<Manifest> {
        let path = self.path;
        let file = match self.exists {
            true => Some(vfs.open(&path, OpenMode::Write).map_err(|e| Error::io(IoOp::Open, &path, e))?),
            false => None,
        };
        let valid_len_bytes = self.replayed.valid_len_bytes;
        let torn_tail_bytes = self.len_bytes - valid_len_bytes;
        // Planted: the torn tail stays, and appends follow it.
        let keep_torn_tail = canary!(ManifestTailKept);
        let write_header = valid_len_bytes == 0;
        let cut = !write_header && torn_tail_bytes > 0 && !keep_torn_tail;
        let pending = PendingOpen {
            dir: self.dir,
            len_bytes: self.len_bytes,
            write_header,
            cut_to_bytes: cut.then_some(valid_len_bytes),
        };
        let append_offset_bytes = if keep_torn_tail && !write_header { self.len_bytes } else { valid_len_bytes };
        let ledger = self.replayed.ledger;
        let next_free_seq = ledger.next_seq();
        let file_records = self.replayed.records;
        Ok(Manifest {
            path,
            file,
            append_offset_bytes,
            file_records,
            ledger,
            next_free_seq,
            poisoned: None,
            pending: Some(pending),
        })
    }

    /// The manifest as read, to look at only (a store opened read-only):
    /// [`Manifest::add`] and [`Manifest::drop_seg`] are refused with
    /// [`Error::ReadOnly`], and a torn tail stays where it is. Takes the
    /// read, as [`ManifestRead::open`] does.
    pub fn read_only(self) -> Manifest {
        let ledger = self.replayed.ledger;
        let next_free_seq = ledger.next_seq();
        Manifest {
            path: self.path,
            file: None,
            append_offset_bytes: self.replayed.valid_len_bytes,
            file_records: self.replayed.records,
            ledger,
            next_free_seq,
            poisoned: None,
            pending: None,
        }
    }
}

impl Manifest {
    /// Parse bytes: header frame then ADD/DROP frames. Returns the state up
    /// to the first invalid frame and whether a torn tail follows (the bytes
    /// past `valid_len_bytes`). Mid-file damage → Err(Corrupt naming `path`
    /// and the offset).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<ManifestState> {
        let replayed = replay(path, bytes, SCAN_BUDGET_BYTES)?;
        Ok(ManifestState {
            next_seq: replayed.ledger.next_seq(),
            live: replayed.ledger.live().clone(),
            valid_len_bytes: replayed.valid_len_bytes,
            records: replayed.records,
            compacted: replayed.compacted,
            version: replayed.header.map_or(0, record::Header::version),
        })
    }

    /// Open `dir/MANIFEST` in one go: [`Manifest::read`], then
    /// [`ManifestRead::open`] and [`Manifest::finish_recovery`]. `dir`
    /// must exist.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn open(vfs: Arc<dyn Vfs>, dir: &Path) -> Result<(Manifest, ManifestReport)> {
        let read = Manifest::read(vfs.as_ref(), dir)?;
        let report = read.report();
        let mut manifest = read.open(vfs.clone())?;
        manifest.finish_recovery(vfs.as_ref())?;
        Ok((manifest, report))
    }

    /// Open `dir/MANIFEST` to read it only (see [`ManifestRead::read_only`]):
    /// damage is refused as by [`Manifest::open`]; a missing file is an
    /// empty ledger; nothing is written or fsynced.
    #[cfg(test)]
    pub fn open_read_only(vfs: &dyn Vfs, dir: &Path) -> Result<(Manifest, ManifestReport)> {
        let read = Manifest::read(vfs, dir)?;
        let report = read.report();
        Ok((read.read_only(), report))
    }

    /// Read and check `dir/MANIFEST`, changing nothing: its registry, or
    /// [`Error::Corrupt`] for damage to durable records. A missing file
    /// reads as an empty manifest.
    pub fn read(vfs: &dyn Vfs, dir: &Path) -> Result<ManifestRead> {
        let path = dir.join(MANIFEST_FILE);
        let exists = vfs.exists(&path).map_err(|e| Error::io(IoOp::Stat, &path, e))?;
        let bytes = if exists {
            let file = vfs.open(&path, OpenMode::Read).map_err(|e| Error::io(IoOp::Open, &path, e))?;
            let len_bytes = file.len().map_err(|e| Error::io(IoOp::Stat, &path, e))?;
            read_all(file.as_ref(), &path, len_bytes)?
        } else {
            Vec::new()
        };
        let replayed = replay(&path, &bytes, SCAN_BUDGET_BYTES)?;
        Ok(ManifestRead { dir: dir.to_path_buf(), path, exists, len_bytes: bytes.len() as u64, replayed })
    }

    /// Do the writes opening owes (see [`ManifestRead::open`]): a fresh
    /// header (file fsync, directory fsync) where none is whole, else the
    /// torn tail cut and the file fsynced. A manifest not made by
    /// [`ManifestRead::open`] owes none.
    pub fn finish_recovery(&mut self, vfs: &dyn Vfs) -> Result<()> {
        let Some(pending) = self.pending.take() else { return Ok(()) };
        let path = self.path.clone();
        if self.file.is_none() {
            // Created only now: its name must not reach the disk before
            // whatever the caller made durable first (the store's log).
            let created = vfs.open(&path, OpenMode::Create).map_err(|e| Error::io(IoOp::Create, &path, e))?;
            self.file = Some(created);
        }
        let file = self.file.as_mut().expect("opened or created above");
        if pending.write_header {
            // A new file, or a crash right after creating one tore its
            // header: either way nothing was ever registered in it.
            assert_eq!(self.file_records, 0, "no whole header, yet records replayed");
            self.append_offset_bytes = write_header(vfs, file.as_mut(), &path, &pending.dir, pending.len_bytes)?;
            return Ok(());
        }
        if let Some(len_bytes) = pending.cut_to_bytes {
            // Cut before the first append: a record written after torn
            // bytes would read as damage followed by a valid record.
            file.set_len(len_bytes).map_err(|e| Error::io(IoOp::Truncate, &path, e))?;
        }
        // Always fsync what was replayed: after a process crash it may be
        // page cache the dead process never fsynced (an ADD whose fsync
        // never ran), and the store is about to log frames that name those
        // segments.
        file.sync().map_err(|e| Error::io(IoOp::Sync, &path, e))
    }

    /// The live segments, in ascending seq.
    pub fn live(&self) -> impl Iterator<Item = &SegEntry> {
        self.ledger.live().values()
    }

    /// The live segment with this seq.
    pub fn get(&self, seq: u64) -> Option<&SegEntry> {
        self.ledger.live().get(&seq)
    }

    /// Whether a live segment has this file name.
    pub fn is_live_file(&self, file: &str) -> bool {
        self.ledger.is_live_file(file)
    }

    /// Hand out a fresh seq: strictly greater than every seq ever ADDed
    /// (live or dropped) and every seq handed out before by this instance.
    pub fn allocate_seq(&mut self) -> u64 {
        // Planted: one past the highest *live* seq, as if the dropped ones
        // were free again.
        if canary!(SeqFromLiveSet) {
            return self.ledger.live().keys().max().map_or(1, |seq| seq + 1);
        }
        let seq = self.next_free_seq.max(self.ledger.next_seq());
        // Replay caps seqs at half the u64 range, so this overflows only
        // after 2^63 allocations by one instance.
        self.next_free_seq = seq.checked_add(1).expect("seq space exhausted");
        seq
    }

    /// The lowest seq [`Manifest::allocate_seq`] would hand out now.
    pub fn next_free_seq(&self) -> u64 {
        self.next_free_seq.max(self.ledger.next_seq())
    }

    /// Note that a file in the directory bears `seq` though no ADD
    /// registered it (a failed seal's debris a point-in-time open left in
    /// place): this instance hands out only seqs above it. Memory only:
    /// the file itself stays as the evidence until a sweep, which makes
    /// the reservation durable first ([`Manifest::reserve_through`]).
    pub fn note_seq_in_use(&mut self, seq: u64) {
        assert!((1..=MAX_SEQ).contains(&seq), "a segment file's seq is in 1..=MAX_SEQ");
        self.next_free_seq = self.next_free_seq.max(seq + 1);
    }

    /// Make sure no instance ever hands out `seq` or any seq below it
    /// again: a segment file bearing it is in the directory, the manifest
    /// never registered it (debris of a seal that failed or crashed before
    /// its ADD), and the sweep is about to remove it — the last evidence
    /// that the seq named a file. Where the ledger's `next_seq` is not
    /// already above it, it is raised past `seq` and made durable by a
    /// compaction (whose header carries `next_seq`: no new record kind).
    /// Whether it wrote anything; a failure poisons, as a compaction's.
    pub fn reserve_through(&mut self, vfs: &dyn Vfs, seq: u64) -> Result<bool> {
        assert!((1..=MAX_SEQ).contains(&seq), "a segment file's seq is in 1..=MAX_SEQ");
        self.note_seq_in_use(seq);
        if seq < self.ledger.next_seq() {
            return Ok(false);
        }
        self.refuse_unless_writable()?;
        self.ledger.raise_next_seq(seq + 1);
        self.compact(vfs)?;
        debug_assert!(self.ledger.next_seq() > seq, "the reservation is what the new file replays to");
        Ok(true)
    }

    /// Append ADD and fsync; durable when it returns Ok. A seq already
    /// ADDed at any time (even dropped) → Error::Invalid. So is an entry
    /// that breaks another ledger rule (`ledger.rs`): seq 0 or above
    /// 2^63 - 1, a file name that is not a plain name in the directory or
    /// that a live entry already holds, `min_key > max_key`, or keys too
    /// large for one frame. Nothing is written for an invalid entry.
    pub fn add(&mut self, entry: SegEntry) -> Result<()> {
        self.refuse_unless_writable()?;
        if let Err(why) = self.ledger.check_add(&entry) {
            return Err(Error::Invalid(format!("manifest ADD of seq {} ({}): {why}", entry.seq, entry.file)));
        }
        if record::add_payload_bytes(&entry) > MAX_FRAME_PAYLOAD_BYTES {
            return Err(Error::Invalid(format!("manifest ADD of seq {}: keys too large for one record", entry.seq)));
        }
        let mut frame = Vec::new();
        record::encode_add(&mut frame, self.append_offset_bytes, &entry);
        self.append(&frame)?;
        self.ledger.apply_add(entry);
        self.file_records += 1;
        Ok(())
    }

    /// Append DROP and fsync. Unknown/not-live seq → Error::Invalid.
    pub fn drop_seg(&mut self, seq: u64) -> Result<()> {
        self.refuse_unless_writable()?;
        if let Err(why) = self.ledger.check_drop(seq) {
            return Err(Error::Invalid(format!("manifest DROP of seq {seq}: {why}")));
        }
        let mut frame = Vec::new();
        record::encode_drop(&mut frame, self.append_offset_bytes, seq);
        self.append(&frame)?;
        self.ledger.apply_drop(seq);
        self.file_records += 1;
        Ok(())
    }

    /// The manifest file's path.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn refuse_unless_writable(&self) -> Result<()> {
        assert!(self.pending.is_none(), "a manifest append before opening's writes are done");
        // With nothing pending, only a read-only manifest has no file.
        if self.file.is_none() {
            let dir = self.path.parent().unwrap_or(Path::new(""));
            return Err(Error::ReadOnly { dir: dir.to_path_buf() });
        }
        match &self.poisoned {
            Some(cause) => Err(Error::Poisoned { cause: cause.clone() }),
            None => Ok(()),
        }
    }

    /// Write `frame` at the end of the ledger and fsync it; poison on any
    /// failure, since the tail of the file is then unknown.
    fn append(&mut self, frame: &[u8]) -> Result<()> {
        assert!(self.poisoned.is_none(), "append on a poisoned manifest");
        let path = &self.path;
        let file = self.file.as_mut().expect("refuse_unless_writable checked the manifest is writable");
        let written = file
            .write_at(self.append_offset_bytes, frame)
            .map_err(|e| Error::io(IoOp::Write, path, e))
            .and_then(|()| file.sync().map_err(|e| Error::io(IoOp::Sync, path, e)));
        match written {
            Ok(()) => {
                self.append_offset_bytes += frame.len() as u64;
                Ok(())
            }
            Err(err) => {
                self.poisoned = Some(format!("manifest append failed: {err}"));
                Err(err)
            }
        }
    }
}

impl fmt::Debug for Manifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manifest")
            .field("path", &self.path)
            .field("append_offset_bytes", &self.append_offset_bytes)
            .field("file_records", &self.file_records)
            .field("live", &self.ledger.live().len())
            .field("next_free_seq", &self.next_free_seq)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

/// The whole file, `len_bytes` long by the file system's account (so not a
/// length read from the untrusted bytes).
fn read_all(file: &dyn VfsFile, path: &Path, len_bytes: u64) -> Result<Vec<u8>> {
    // Read until two reads agree: a torn tail found here is cut, so a
    // transient read fault must not pass for one.
    read_stable(file, len_bytes).map_err(|e| Error::io(IoOp::Read, path, e))
}

/// Make `file` hold exactly a header, durably, including its directory
/// entry (the file may have just been created). Returns the header's size.
fn write_header(vfs: &dyn Vfs, file: &mut dyn VfsFile, path: &Path, dir: &Path, len_bytes: u64) -> Result<u64> {
    if len_bytes > 0 {
        file.set_len(0).map_err(|e| Error::io(IoOp::Truncate, path, e))?;
    }
    let mut header = Vec::new();
    // Nothing is registered in it yet: an appended ledger, never compacted.
    record::encode_header(&mut header, record::Header::Appended);
    assert_eq!(header.len() as u64, record::HEADER_FRAME_BYTES);
    file.write_at(0, &header).map_err(|e| Error::io(IoOp::Write, path, e))?;
    file.sync().map_err(|e| Error::io(IoOp::Sync, path, e))?;
    vfs.sync_dir(dir).map_err(|e| Error::io(IoOp::SyncDir, dir, e))?;
    Ok(record::HEADER_FRAME_BYTES)
}

#[cfg(test)]
mod compact_tests;
#[cfg(test)]
mod tests;
