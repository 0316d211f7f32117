//! Test support shared by the manifest's test modules: sample entries,
//! hand-built ledgers, generated histories with a model to check them
//! against, a Vfs that records file operations and fails on command, and
//! one whose process stops at a named phase.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;

use crate::vfs::{Interpose, LockGuard, LockMode, Mapping, MemVfs, OpenMode, Vfs, VfsFile};
use crate::Phase;

use super::record::{self, Header, Record};
use super::SegEntry;

/// A valid entry for `seq`, distinct from every other seq's.
pub(super) fn entry(seq: u64) -> SegEntry {
    SegEntry {
        seq,
        file: format!("row-74-{seq}.seg"),
        table: b"t".to_vec(),
        min_key: format!("t:{seq}:a").into_bytes(),
        max_key: format!("t:{seq}:z").into_bytes(),
        records: seq * 10,
    }
}

/// A fresh ledger's header: version 3, never compacted.
pub(super) const APPENDED: Record = Record::Header(Header::Appended);

/// A version-2 header, as an older segsim wrote it.
pub(super) const V2: Record = Record::Header(Header::V2);

/// A compacted ledger's header, promising a snapshot with `next_seq`.
pub(super) fn compacted_header(next_seq: u64) -> Record {
    Record::Header(Header::Compacted { next_seq })
}

/// `records` framed back to back, and the end offset of each frame.
pub(super) fn encode_records(records: &[Record]) -> (Vec<u8>, Vec<usize>) {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for rec in records {
        match rec {
            Record::Header(header) => record::encode_header(&mut bytes, *header),
            Record::Add(entry) => record::encode_add(&mut bytes, 0, entry),
            Record::Drop(seq) => record::encode_drop(&mut bytes, 0, *seq),
            Record::Compacted { next_seq, live_entries } => {
                record::encode_compacted(&mut bytes, *next_seq, *live_entries)
            }
            Record::CompactedEnd { next_seq, live_entries } => {
                record::encode_compacted_end(&mut bytes, *next_seq, *live_entries)
            }
        }
        ends.push(bytes.len());
    }
    (bytes, ends)
}

/// One step of a generated history. A `usize` picks from whatever the
/// step applies to, modulo its size.
#[derive(Clone, Debug)]
pub(super) enum Op {
    /// Allocate a seq and ADD a segment under it.
    Add { table: Vec<u8>, min_key: Vec<u8>, max_suffix: Vec<u8>, records: u64 },
    /// DROP one of the live segments (if any).
    Drop(usize),
    /// Allocate a seq and never use it (a seal that failed).
    Waste,
    /// ADD again a seq that was ADDed before (must be refused).
    AddReused(usize),
    /// DROP a seq that is not live (must be refused).
    DropNotLive(usize),
    /// Close the manifest and open it again.
    Reopen,
    /// Compact the ledger, due or not (histories that track byte offsets
    /// skip it).
    Compact,
}

/// Histories that mostly add and drop, with the odd misuse and reopen.
pub(super) fn op() -> impl Strategy<Value = Op> {
    let bytes = |max| proptest::collection::vec(any::<u8>(), 0..max);
    prop_oneof![
        5 => (bytes(6), bytes(12), bytes(4), any::<u64>())
            .prop_map(|(table, min_key, max_suffix, records)| Op::Add { table, min_key, max_suffix, records }),
        3 => any::<usize>().prop_map(Op::Drop),
        1 => Just(Op::Waste),
        1 => any::<usize>().prop_map(Op::AddReused),
        1 => any::<usize>().prop_map(Op::DropNotLive),
        1 => Just(Op::Reopen),
        1 => Just(Op::Compact),
    ]
}

/// What the manifest should hold: the live set and every seq ever ADDed.
#[derive(Clone, Debug, Default)]
pub(super) struct Model {
    pub(super) live: BTreeMap<u64, SegEntry>,
    pub(super) ever_added: BTreeSet<u64>,
    /// ADD and DROP records in the file: those the manifest accepted since
    /// the last compaction, plus the live entries that compaction wrote
    /// (what replay counts).
    pub(super) records: u64,
}

impl Model {
    /// The entry an `Op::Add` with these fields registers under `seq`.
    pub(super) fn entry_for(seq: u64, table: &[u8], min_key: &[u8], max_suffix: &[u8], records: u64) -> SegEntry {
        let hex: String = table.iter().map(|b| format!("{b:02x}")).collect();
        SegEntry {
            seq,
            file: format!("row-{hex}-{seq}.seg"),
            table: table.to_vec(),
            min_key: min_key.to_vec(),
            max_key: [min_key, max_suffix].concat(),
            records,
        }
    }

    /// A seq that is not live: a dropped one if `pick` finds one, else one
    /// past everything ever added.
    pub(super) fn not_live(&self, pick: usize) -> u64 {
        let dropped: Vec<u64> = self.ever_added.iter().copied().filter(|seq| !self.live.contains_key(seq)).collect();
        if dropped.is_empty() {
            self.ever_added.last().map_or(1, |seq| seq + 1)
        } else {
            dropped[pick % dropped.len()]
        }
    }
}

/// What [`FaultyVfs`] does: the faults switched on, and a log of the file
/// operations it saw, in order.
#[derive(Debug, Default)]
pub(super) struct Faults {
    /// Every write writes half its bytes and then fails.
    pub(super) fail_write: AtomicBool,
    /// Every file sync fails (after doing nothing).
    pub(super) fail_sync: AtomicBool,
    /// Every directory sync fails (after doing nothing).
    pub(super) fail_sync_dir: AtomicBool,
    log: Mutex<Vec<String>>,
}

impl Faults {
    /// The operations seen so far: `write`, `set_len`, `sync`, `sync_dir`.
    pub(super) fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Forget the operations seen so far.
    pub(super) fn clear_log(&self) {
        self.log.lock().unwrap().clear();
    }

    fn note(&self, op: &str) {
        self.log.lock().unwrap().push(op.to_owned());
    }
}

/// A [`MemVfs`] that logs writes, cuts and syncs, and fails them when told.
#[derive(Clone, Debug, Default)]
pub(super) struct FaultyVfs {
    inner: Arc<MemVfs>,
    pub(super) faults: Arc<Faults>,
}

impl FaultyVfs {
    /// A vfs with the directory `/db` and nothing failing.
    pub(super) fn new() -> Self {
        let vfs = Self::default();
        vfs.inner.create_dir_all(Path::new("/db")).unwrap();
        vfs
    }
}

impl Interpose for FaultyVfs {
    fn inner(&self) -> &dyn Vfs {
        self.inner.as_ref()
    }
    fn on_write_at(&self, file: &mut dyn VfsFile, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.faults.note("write");
        if self.faults.fail_write.load(Ordering::SeqCst) {
            file.write_at(offset_bytes, &data[..data.len() / 2])?;
            return Err(io::Error::other("injected write failure"));
        }
        file.write_at(offset_bytes, data)
    }
    fn on_set_len(&self, file: &mut dyn VfsFile, len_bytes: u64) -> io::Result<()> {
        self.faults.note("set_len");
        file.set_len(len_bytes)
    }
    fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        self.faults.note("sync");
        if self.faults.fail_sync.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected sync failure"));
        }
        file.sync()
    }
    fn on_sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.faults.note("sync_dir");
        if self.faults.fail_sync_dir.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected directory sync failure"));
        }
        self.inner.sync_dir(dir)
    }
}

/// A process that stops at a named phase: once the code marks `target`,
/// every later call fails and changes nothing, so the [`MemVfs`] holds
/// exactly what a killed process leaves (its page cache). What a power
/// loss could leave besides, a test builds from that by hand.
#[derive(Clone, Debug)]
pub(super) struct StopAt {
    pub(super) inner: Arc<MemVfs>,
    target: Phase,
    stopped: Arc<AtomicBool>,
}

impl StopAt {
    /// Stop `inner`'s process at `target`.
    pub(super) fn new(inner: Arc<MemVfs>, target: Phase) -> Self {
        Self { inner, target, stopped: Arc::new(AtomicBool::new(false)) }
    }

    /// Whether the process has stopped.
    pub(super) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn check(stopped: &AtomicBool) -> io::Result<()> {
        match stopped.load(Ordering::SeqCst) {
            true => Err(io::Error::other("the process stopped")),
            false => Ok(()),
        }
    }
}

/// A file of a [`StopAt`] process.
struct StopAtFile {
    inner: Box<dyn VfsFile>,
    stopped: Arc<AtomicBool>,
}

impl Vfs for StopAt {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Self::check(&self.stopped)?;
        let inner = self.inner.open(path, mode)?;
        Ok(Box::new(StopAtFile { inner, stopped: self.stopped.clone() }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        Self::check(&self.stopped)?;
        self.inner.rename(from, to)
    }
    fn unlink(&self, path: &Path) -> io::Result<()> {
        Self::check(&self.stopped)?;
        self.inner.unlink(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        Self::check(&self.stopped)?;
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        Self::check(&self.stopped)?;
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Self::check(&self.stopped)?;
        self.inner.sync_dir(dir)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        Self::check(&self.stopped)?;
        self.inner.map_readonly(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        Self::check(&self.stopped)?;
        self.inner.exists(path)
    }
    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        Self::check(&self.stopped)?;
        self.inner.lock(dir, mode)
    }
    fn mark(&self, phase: &'static str) {
        if phase == self.target.as_str() {
            self.stopped.store(true, Ordering::SeqCst);
        }
    }
}

impl VfsFile for StopAtFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        StopAt::check(&self.stopped)?;
        self.inner.read_at(offset_bytes, buf)
    }
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        StopAt::check(&self.stopped)?;
        self.inner.write_at(offset_bytes, data)
    }
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        StopAt::check(&self.stopped)?;
        self.inner.set_len(len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        StopAt::check(&self.stopped)?;
        self.inner.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        StopAt::check(&self.stopped)?;
        self.inner.sync()
    }
}
