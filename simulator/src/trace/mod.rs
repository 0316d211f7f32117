//! The trace: every event of one seed's run, folded into a rolling hash,
//! with the last few kept for a failure report.
//!
//! Determinism is checked by comparing hashes: two runs of one seed must
//! fold the same events in the same order. Events are small plain values
//! (names are interned to ids) so tracing costs no allocation per event;
//! they are only turned into text when a report needs them.
//!
//! A trace that keeps every event (`--trace`, `--report`) also keeps a
//! side record for pictures (`detail.rs`), never hashed.
//!
//! The hashing itself — the word fold, and reply hashes that must equal
//! the hash of a reply's `Debug` text — is `hash.rs`.

mod detail;
mod hash;
pub mod reply_text;

use std::collections::BTreeMap;
use std::fmt;

pub use detail::{CrashPicture, Detail, DirFate, FileFate, IoDetail, OpFate};
pub use hash::{hash_bytes, hash_debug, StreamHasher};

use hash::{fold_byte_string, fold_word, FNV_OFFSET};

/// How many recent events a failure report shows.
pub const RECENT_EVENTS: usize = 48;

/// What a file-system operation was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// A file opened (or created): `Vfs::open`.
    Open,
    /// Bytes read from a file: `VfsFile::read_at`.
    Read,
    /// Bytes written to a file's page cache: `VfsFile::write_at`.
    Write,
    /// A file cut or extended: `VfsFile::set_len`.
    SetLen,
    /// A file's length asked for.
    Len,
    /// A file's fsync: its pending data made durable.
    Sync,
    /// A name moved to another, replacing what it named.
    Rename,
    /// A name removed.
    Unlink,
    /// A directory's names listed.
    ListDir,
    /// A directory created, with any missing parents.
    CreateDir,
    /// A directory's fsync: its pending entry changes made durable.
    SyncDir,
    /// A file mapped for reading (an immutable segment).
    Map,
    /// Whether a name exists, asked.
    Exists,
    /// A file's data sync (`fdatasync`): its pending data and length made
    /// durable, and of its names what the profile says (last, so every
    /// earlier kind keeps the code the trace hash folds).
    SyncData,
    /// An empty directory removed: `Vfs::remove_dir` (after every earlier
    /// kind, for the same reason).
    RemoveDir,
}

impl IoKind {
    /// Whether it is neither a read, a write, an fsync (of either kind) nor
    /// a map: the operations [`FaultKind::MetaEio`] fails, changing nothing.
    pub fn is_metadata(self) -> bool {
        !matches!(self, IoKind::Read | IoKind::Write | IoKind::Sync | IoKind::SyncData | IoKind::Map)
    }
}

/// An injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    /// A write failed (EIO), writing nothing.
    WriteEio,
    /// A write failed (EIO) after writing a sector-aligned prefix of its
    /// bytes.
    ShortWrite,
    /// An fsync failed (EIO) and the file's dirty pages were dropped: the
    /// next fsync succeeds, proving nothing about them (fsyncgate).
    FsyncEio,
    /// A read or a map failed (EIO).
    ReadEio,
    /// A write or `set_len` that would grow the disk past its capacity
    /// failed (ENOSPC), changing nothing.
    NoSpace,
    /// A read returned its bytes with one bit flipped; the disk is
    /// unchanged.
    BitFlip,
    /// At a power loss, one durable sector of one file was damaged: garbage,
    /// or one flipped bit.
    MediaCorruption,
    /// At a power loss, a sector an unsynced write was writing holds
    /// garbage.
    TornSector,
    /// At a power loss, a durable file's name was lost.
    FileLost,
    /// At a power loss, a durable file was cut to zero bytes.
    FileTruncated,
    /// At a power loss, junk was put before a durable file's first byte.
    JunkPrepended,
    /// At a power loss, a file the engine never made appeared in its
    /// directory.
    StrayFile,
    /// An operation other than a read, write, fsync or map failed (EIO).
    MetaEio,
    /// A write reported done that the drive will not write (`silent.rs`).
    LostWrite,
    /// A write reported done that the drive will write elsewhere.
    MisdirectedWrite,
    /// A read that returned another sector's bytes for one sector.
    MisdirectedRead,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 16] = [
        FaultKind::WriteEio,
        FaultKind::ShortWrite,
        FaultKind::FsyncEio,
        FaultKind::ReadEio,
        FaultKind::NoSpace,
        FaultKind::BitFlip,
        FaultKind::MediaCorruption,
        FaultKind::TornSector,
        FaultKind::FileLost,
        FaultKind::FileTruncated,
        FaultKind::JunkPrepended,
        FaultKind::StrayFile,
        FaultKind::MetaEio,
        FaultKind::LostWrite,
        FaultKind::MisdirectedWrite,
        FaultKind::MisdirectedRead,
    ];

    /// The name used in summaries and JSON.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::WriteEio => "write_eio",
            FaultKind::ShortWrite => "short_write",
            FaultKind::FsyncEio => "fsync_eio",
            FaultKind::ReadEio => "read_eio",
            FaultKind::NoSpace => "enospc",
            FaultKind::BitFlip => "read_bitflip",
            FaultKind::MediaCorruption => "media_corruption",
            FaultKind::TornSector => "torn_sector",
            FaultKind::FileLost => "file_lost",
            FaultKind::FileTruncated => "file_truncated",
            FaultKind::JunkPrepended => "junk_prepended",
            FaultKind::StrayFile => "stray_file",
            FaultKind::MetaEio => "meta_eio",
            FaultKind::LostWrite => "lost_write",
            FaultKind::MisdirectedWrite => "misdirected_write",
            FaultKind::MisdirectedRead => "misdirected_read",
        }
    }
}

/// One traced event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A file-system operation: its global index, kind, file (interned
    /// name id), offset and length (0 where they do not apply), and
    /// whether it succeeded.
    Io {
        /// The operation's index among every I/O of the run, from 0.
        index: u64,
        /// What it did (read, write, fsync, rename, ...).
        kind: IoKind,
        /// The file or directory, as an id interned by the trace.
        name: u32,
        /// Where in the file it started, in bytes (0 where it does not apply).
        offset: u64,
        /// How many bytes it covered (0 where it does not apply).
        len: u64,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A fault injected into the operation with this index.
    Fault {
        /// The index of the I/O the fault struck.
        index: u64,
        /// Which fault.
        kind: FaultKind,
    },
    /// The system under test named a phase (`Vfs::mark`).
    Mark {
        /// The phase's name (segsim's `Phase::as_str`, or a name a kit
        /// target declares).
        phase: &'static str,
    },
    /// A workload operation began (its index and a short kind tag).
    Op {
        /// The operation's index in the workload, from 0.
        index: u64,
        /// A short word for its kind (`set`, `hget`, `put`, `scan`, ...).
        tag: &'static str,
    },
    /// What an operation answered, as a hash of its reply.
    Reply {
        /// The operation's index in the workload.
        index: u64,
        /// A hash of the reply: equal replies hash alike, so the trace
        /// hash covers what the engine answered without storing it.
        hash: u64,
    },
    /// Power loss; `io_index` is the number of I/O operations so far.
    Crash {
        /// How many I/O operations the run had made before it.
        io_index: u64,
    },
    /// The store was reopened.
    Restart {
        /// The store was closed first; `false` after a power loss or a
        /// killed process, when the open is a recovery.
        clean: bool,
    },
}

/// The rolling record of one run.
#[derive(Clone, Debug)]
pub struct Trace {
    hash: u64,
    /// Every written byte with its offset, in order ([`Trace::note_written`]):
    /// kept apart from `hash`, which folds a write's place and length only,
    /// so that published trace hashes stay what they were.
    written_hash: u64,
    events: u64,
    recent: Vec<Event>,
    next_slot: usize,
    names: BTreeMap<String, u32>,
    name_list: Vec<String>,
    /// Keep every event (for `--trace`); off by default.
    keep_all: bool,
    all: Vec<Event>,
    /// With `keep_all`: what a report needs beyond the events (never hashed).
    detail: Detail,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new(false)
    }
}

thread_local! {
    /// Set while `sim explore --report` records its run on this thread
    /// (see [`Trace::for_recording`]).
    static KEEP_ALL_FOR_REPORT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with every [`Trace::for_recording`] made on this thread keeping
/// every event: `sim explore --report` records its run once more this way,
/// to draw it. The hash is the same either way.
pub fn keeping_all_for_report<R>(f: impl FnOnce() -> R) -> R {
    KEEP_ALL_FOR_REPORT.with(|flag| flag.set(true));
    let result = f();
    KEEP_ALL_FOR_REPORT.with(|flag| flag.set(false));
    result
}

impl Trace {
    /// The trace of an exploration's recording run: keeps every event only
    /// inside [`keeping_all_for_report`].
    pub fn for_recording() -> Self {
        Self::new(KEEP_ALL_FOR_REPORT.with(std::cell::Cell::get))
    }

    /// An empty trace; `keep_all` also keeps every event for printing.
    pub fn new(keep_all: bool) -> Self {
        Trace {
            hash: FNV_OFFSET,
            written_hash: FNV_OFFSET,
            events: 0,
            recent: Vec::with_capacity(RECENT_EVENTS),
            next_slot: 0,
            names: BTreeMap::new(),
            name_list: Vec::new(),
            keep_all,
            all: Vec::new(),
            detail: Detail::default(),
        }
    }

    /// The id of `name`, interning it on first sight.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.names.get(name) {
            return *id;
        }
        let id = self.name_list.len() as u32;
        self.names.insert(name.to_string(), id);
        self.name_list.push(name.to_string());
        self.fold_bytes(name.as_bytes());
        id
    }

    fn fold(&mut self, word: u64) {
        self.hash = fold_word(self.hash, word);
    }

    fn fold_bytes(&mut self, bytes: &[u8]) {
        self.hash = fold_byte_string(self.hash, bytes);
    }

    /// Record `event`.
    pub fn push(&mut self, event: Event) {
        match event {
            Event::Io { index, kind, name, offset, len, ok } => {
                self.fold(1);
                self.fold(index);
                self.fold(kind as u64);
                self.fold(u64::from(name));
                self.fold(offset);
                self.fold(len);
                self.fold(u64::from(ok));
            }
            Event::Fault { index, kind } => {
                self.fold(2);
                self.fold(index);
                self.fold(kind as u64);
            }
            Event::Mark { phase } => {
                self.fold(3);
                self.fold_bytes(phase.as_bytes());
            }
            Event::Op { index, tag } => {
                self.fold(4);
                self.fold(index);
                self.fold_bytes(tag.as_bytes());
            }
            Event::Reply { index, hash } => {
                self.fold(5);
                self.fold(index);
                self.fold(hash);
            }
            Event::Crash { io_index } => {
                self.fold(6);
                self.fold(io_index);
            }
            Event::Restart { clean } => {
                self.fold(7);
                self.fold(u64::from(clean));
            }
        }
        self.events += 1;
        if self.recent.len() < RECENT_EVENTS {
            self.recent.push(event);
        } else {
            self.recent[self.next_slot] = event;
        }
        self.next_slot = (self.next_slot + 1) % RECENT_EVENTS;
        if self.keep_all {
            self.all.push(event);
        }
    }

    /// The rolling hash of every event so far.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// Fold the bytes an engine hands a write, at `offset_bytes`, into
    /// [`Trace::written_hash`] (whether the write then succeeds or not: the
    /// bytes offered are the engine's, whatever the disk does with them).
    /// Each write is folded as its place, its length and its CRC-32 (the
    /// CPU's carry-less multiply makes that a small fraction of what
    /// folding every word cost: 1.5% of a sweep's instructions): two runs
    /// that write other bytes somewhere differ here but for one chance in
    /// 2^32 per differing write.
    pub fn note_written(&mut self, offset_bytes: u64, data: &[u8]) {
        let folded = fold_word(self.written_hash, offset_bytes);
        self.written_hash = fold_word(folded, (data.len() as u64) << 32 | u64::from(crc32fast::hash(data)));
    }

    /// The hash of every byte written so far, with its offset, in order.
    /// Two runs of a seed with equal trace hashes can still differ here: an
    /// engine that writes uninitialised memory (JAMMDB.md finding 4) writes
    /// the same lengths at the same places with other bytes.
    /// `--check-determinism` compares both.
    pub fn written_hash(&self) -> u64 {
        self.written_hash
    }

    /// How many events were recorded.
    pub fn event_count(&self) -> u64 {
        self.events
    }

    /// The most recent events, oldest first.
    pub fn recent(&self) -> Vec<Event> {
        if self.recent.len() < RECENT_EVENTS {
            return self.recent.clone();
        }
        let mut out = self.recent[self.next_slot..].to_vec();
        out.extend_from_slice(&self.recent[..self.next_slot]);
        out
    }

    /// Every event (empty unless made with `keep_all`).
    pub fn all(&self) -> &[Event] {
        &self.all
    }

    /// Whether every event is kept (and with it the side record for
    /// reports, [`Trace::detail`]).
    pub fn keeps_all(&self) -> bool {
        self.keep_all
    }

    /// The side record (empty unless made with `keep_all`).
    pub fn detail(&self) -> &Detail {
        &self.detail
    }

    /// The side record, to add to; `None` unless made with `keep_all`.
    /// Nothing written there is hashed.
    pub fn detail_mut(&mut self) -> Option<&mut Detail> {
        self.keep_all.then_some(&mut self.detail)
    }

    /// With `keep_all`, note `text()` after the latest event (a recovery's
    /// report, say); otherwise `text` is never called.
    pub fn note(&mut self, text: impl FnOnce() -> String) {
        if self.keep_all {
            let at = self.all.len();
            self.detail.notes.push((at, text()));
        }
    }

    /// With `keep_all`, keep `text()` as the words of the reply event just
    /// pushed (printed by [`Trace::describe_all`] instead of its hash);
    /// otherwise `text` is never called.
    pub fn note_reply(&mut self, text: impl FnOnce() -> String) {
        if self.keep_all && !self.all.is_empty() {
            let at = self.all.len() - 1;
            self.detail.replies.insert(at, text());
        }
    }

    /// Every kept event as a line, as `--trace` prints them: like
    /// [`Trace::describe`], but a file is named by what it is at that
    /// moment, with the name its handle was opened under when that
    /// differs (after a rename), and a reply by its words when kept.
    pub fn describe_all(&self) -> Vec<String> {
        let mut now: BTreeMap<u64, String> = BTreeMap::new();
        let mut lines = Vec::with_capacity(self.all.len());
        for (position, event) in self.all.iter().enumerate() {
            let line = match *event {
                Event::Io { index, kind, name, offset, len, ok } => {
                    let opened = self.name(name);
                    let detail = self.detail.io.get(&index);
                    let inode = detail.and_then(|d| d.inode);
                    if let (Some(inode), true) = (inode, kind == IoKind::Open && ok) {
                        now.insert(inode, opened.to_string());
                    }
                    let current = inode.and_then(|i| now.get(&i)).map_or(opened, String::as_str);
                    let shown =
                        if current == opened { opened.to_string() } else { format!("{current} (opened as {opened})") };
                    let status = if ok { "" } else { " -> error" };
                    let mut line = format!("io#{index} {kind:?} {shown} off={offset} len={len}{status}");
                    if let (Some(to), Some(inode), true) = (detail.and_then(|d| d.renamed_to.as_ref()), inode, ok) {
                        line.push_str(&format!(" -> {to}"));
                        now.insert(inode, to.clone());
                    }
                    line
                }
                Event::Reply { index, .. } if self.detail.replies.contains_key(&position) => {
                    format!("op#{index} reply {}", self.detail.replies[&position])
                }
                _ => self.describe(event),
            };
            lines.push(line);
        }
        lines
    }

    /// The interned name with this id (`?` for an unknown id).
    pub fn name(&self, id: u32) -> &str {
        self.name_list.get(id as usize).map_or("?", String::as_str)
    }

    /// A line of text for `event`.
    pub fn describe(&self, event: &Event) -> String {
        let name = |id: u32| self.name_list.get(id as usize).map_or("?", String::as_str);
        match *event {
            Event::Io { index, kind, name: id, offset, len, ok } => {
                let status = if ok { "" } else { " -> error" };
                format!("io#{index} {kind:?} {} off={offset} len={len}{status}", name(id))
            }
            Event::Fault { index, kind } => format!("fault {} at io#{index}", kind.name()),
            Event::Mark { phase } => format!("mark {phase}"),
            Event::Op { index, tag } => format!("op#{index} {tag}"),
            Event::Reply { index, hash } => format!("op#{index} reply {hash:016x}"),
            Event::Crash { io_index } => format!("CRASH after io#{io_index}"),
            Event::Restart { clean } => format!("restart ({})", if clean { "clean" } else { "after crash" }),
        }
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for event in self.recent() {
            writeln!(f, "  {}", self.describe(&event))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_events_same_hash_and_order_matters() {
        let mut a = Trace::new(false);
        let mut b = Trace::new(false);
        for t in [&mut a, &mut b] {
            t.push(Event::Mark { phase: "seal.built" });
            t.push(Event::Crash { io_index: 7 });
        }
        assert_eq!(a.hash(), b.hash());
        let mut c = Trace::new(false);
        c.push(Event::Crash { io_index: 7 });
        c.push(Event::Mark { phase: "seal.built" });
        assert_ne!(a.hash(), c.hash());
    }

    /// The written bytes' hash sees bytes the trace hash does not: the
    /// same write with one bit changed, or at another place, or the same
    /// writes in another order.
    #[test]
    fn the_written_hash_sees_each_byte_and_place_the_trace_hash_does_not() {
        let written = |writes: &[(u64, &[u8])]| {
            let mut trace = Trace::new(false);
            for (offset_bytes, data) in writes {
                trace.note_written(*offset_bytes, data);
            }
            (trace.hash(), trace.written_hash())
        };
        let base = written(&[(0, b"header"), (6, b"body")]);
        assert_eq!(base, written(&[(0, b"header"), (6, b"body")]));
        for other in [
            written(&[(0, b"heaDer"), (6, b"body")]),
            written(&[(0, b"header"), (7, b"body")]),
            written(&[(6, b"body"), (0, b"header")]),
            written(&[(0, b"header"), (6, b"body"), (10, b"")]),
        ] {
            assert_eq!(other.0, base.0, "the trace hash folds events, not bytes");
            assert_ne!(other.1, base.1);
        }
    }

    #[test]
    fn recent_keeps_the_last_events_in_order() {
        let mut t = Trace::new(false);
        for i in 0..(RECENT_EVENTS as u64 + 5) {
            t.push(Event::Crash { io_index: i });
        }
        let recent = t.recent();
        assert_eq!(recent.len(), RECENT_EVENTS);
        assert_eq!(recent[0], Event::Crash { io_index: 5 });
        assert_eq!(*recent.last().unwrap(), Event::Crash { io_index: RECENT_EVENTS as u64 + 4 });
    }
}
