//! The trace: every event of one seed's run, folded into a rolling hash,
//! with the last few kept for a failure report.
//!
//! Determinism is checked by comparing hashes: two runs of one seed must
//! fold the same events in the same order. Events are small plain values
//! (names are interned to ids) so tracing costs no allocation per event;
//! they are only turned into text when a report needs them.

use std::collections::BTreeMap;
use std::fmt;

use engine::store::Reply;

/// How many recent events a failure report shows.
pub const RECENT_EVENTS: usize = 48;

/// What a file-system operation was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum IoKind {
    Open,
    Read,
    Write,
    SetLen,
    Len,
    Sync,
    Rename,
    Unlink,
    ListDir,
    CreateDir,
    SyncDir,
    Map,
    Exists,
}

/// An injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum FaultKind {
    WriteEio,
    ShortWrite,
    FsyncEio,
    ReadEio,
    NoSpace,
    BitFlip,
    MediaCorruption,
    TornSector,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::WriteEio,
        FaultKind::ShortWrite,
        FaultKind::FsyncEio,
        FaultKind::ReadEio,
        FaultKind::NoSpace,
        FaultKind::BitFlip,
        FaultKind::MediaCorruption,
        FaultKind::TornSector,
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
        }
    }
}

/// One traced event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A file-system operation: its global index, kind, file (interned
    /// name id), offset and length (0 where they do not apply), and
    /// whether it succeeded.
    Io { index: u64, kind: IoKind, name: u32, offset: u64, len: u64, ok: bool },
    /// A fault injected into the operation with this index.
    Fault { index: u64, kind: FaultKind },
    /// The engine named a phase.
    Mark { label: &'static str },
    /// A workload operation began (its index and a short kind tag).
    Op { index: u64, tag: &'static str },
    /// What an operation answered, as a hash of its reply.
    Reply { index: u64, hash: u64 },
    /// Power loss; `io_index` is the number of I/O operations so far.
    Crash { io_index: u64 },
    /// The store was reopened.
    Restart { clean: bool },
}

/// The rolling record of one run.
#[derive(Clone, Debug)]
pub struct Trace {
    hash: u64,
    events: u64,
    recent: Vec<Event>,
    next_slot: usize,
    names: BTreeMap<String, u32>,
    name_list: Vec<String>,
    /// Keep every event (for `--trace`); off by default.
    keep_all: bool,
    all: Vec<Event>,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Default for Trace {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Trace {
    /// An empty trace; `keep_all` also keeps every event for printing.
    pub fn new(keep_all: bool) -> Self {
        Trace {
            hash: FNV_OFFSET,
            events: 0,
            recent: Vec::with_capacity(RECENT_EVENTS),
            next_slot: 0,
            names: BTreeMap::new(),
            name_list: Vec::new(),
            keep_all,
            all: Vec::new(),
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
            Event::Mark { label } => {
                self.fold(3);
                self.fold_bytes(label.as_bytes());
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

    /// A line of text for `event`.
    pub fn describe(&self, event: &Event) -> String {
        let name = |id: u32| self.name_list.get(id as usize).map_or("?", String::as_str);
        match *event {
            Event::Io { index, kind, name: id, offset, len, ok } => {
                let status = if ok { "" } else { " -> error" };
                format!("io#{index} {kind:?} {} off={offset} len={len}{status}", name(id))
            }
            Event::Fault { index, kind } => format!("fault {} at io#{index}", kind.name()),
            Event::Mark { label } => format!("mark {label}"),
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

/// One FNV-1a step over a whole 64-bit word: the trace's only mixing.
fn fold_word(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(FNV_PRIME)
}

/// `bytes` folded into `hash` as 8-byte little-endian words (the last one
/// zero-padded), then their length.
fn fold_byte_string(mut hash: u64, bytes: &[u8]) -> u64 {
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = fold_word(hash, u64::from_le_bytes(word));
    }
    fold_word(hash, bytes.len() as u64)
}

/// Hash arbitrary bytes the way the trace folds them (for reply hashes).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    fold_byte_string(FNV_OFFSET, bytes)
}

/// `hash_bytes(format!("{value:?}").as_bytes())`, bit for bit, without
/// building the string: the driver hashes every reply, and the `String`
/// (grown by reallocation as `Debug` writes it) cost more than the engine
/// call it described.
pub fn hash_debug(value: &impl fmt::Debug) -> u64 {
    let mut hasher = StreamHasher { hash: FNV_OFFSET, word: [0; 8], word_len_bytes: 0, total_len_bytes: 0 };
    fmt::write(&mut hasher, format_args!("{value:?}")).expect("hashing never fails to write");
    hasher.finish()
}

/// `hash_debug(reply)`, bit for bit, writing the derived `Debug` text of
/// [`Reply`] by hand: the driver hashes every reply, and the formatting
/// machinery (a virtual call per byte of a value) cost more than the
/// hashing. `hash_reply_matches_the_debug_text` holds it to `hash_debug`.
pub fn hash_reply(reply: &Reply) -> u64 {
    let mut hasher = StreamHasher { hash: FNV_OFFSET, word: [0; 8], word_len_bytes: 0, total_len_bytes: 0 };
    match reply {
        Reply::Ok => hasher.put(b"Ok"),
        Reply::Nil => hasher.put(b"Nil"),
        Reply::Int(n) => {
            hasher.put(b"Int(");
            hasher.put_decimal(n.unsigned_abs(), *n < 0);
            hasher.put(b")");
        }
        Reply::Bulk(bytes) => {
            hasher.put(b"Bulk(");
            hasher.put_byte_list(bytes);
            hasher.put(b")");
        }
        Reply::Pairs(pairs) => {
            hasher.put(b"Pairs([");
            for (i, (field, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    hasher.put(b", ");
                }
                hasher.put(b"(");
                hasher.put_byte_list(field);
                hasher.put(b", ");
                hasher.put_byte_list(value);
                hasher.put(b")");
            }
            hasher.put(b"])");
        }
    }
    hasher.finish()
}

/// [`fold_byte_string`] over text that arrives in pieces: whole 8-byte
/// words are folded as they fill, the zero-padded tail and the length at
/// the end, so piece boundaries never show in the hash.
struct StreamHasher {
    hash: u64,
    /// The word being filled: `word[..word_len_bytes]` is pending.
    word: [u8; 8],
    word_len_bytes: usize,
    total_len_bytes: u64,
}

impl StreamHasher {
    fn finish(mut self) -> u64 {
        debug_assert!(self.word_len_bytes < 8, "a full word is folded as soon as it fills");
        if self.word_len_bytes > 0 {
            self.word[self.word_len_bytes..].fill(0);
            self.hash = fold_word(self.hash, u64::from_le_bytes(self.word));
        }
        fold_word(self.hash, self.total_len_bytes)
    }
}

impl StreamHasher {
    /// `Debug` of a byte slice: `[1, 2, 3]`. Staged in a buffer and
    /// hashed a run at a time: a `put` per piece was most of the cost of a
    /// long value's reply (four text bytes per value byte).
    fn put_byte_list(&mut self, bytes: &[u8]) {
        /// The longest a byte's text gets: `, 255`.
        const MAX_ITEM_BYTES: usize = 5;
        let mut staged = [0u8; 256];
        staged[0] = b'[';
        let mut len = 1;
        for (i, &byte) in bytes.iter().enumerate() {
            if len > staged.len() - MAX_ITEM_BYTES - 1 {
                self.put(&staged[..len]);
                len = 0;
            }
            if i > 0 {
                staged[len..len + 2].copy_from_slice(b", ");
                len += 2;
            }
            if byte >= 100 {
                staged[len] = b'0' + byte / 100;
                len += 1;
            }
            if byte >= 10 {
                staged[len] = b'0' + byte / 10 % 10;
                len += 1;
            }
            staged[len] = b'0' + byte % 10;
            len += 1;
        }
        // The loop leaves room for this one byte.
        staged[len] = b']';
        self.put(&staged[..len + 1]);
    }

    /// `magnitude` in decimal, after a `-` if `negative`.
    fn put_decimal(&mut self, mut magnitude: u64, negative: bool) {
        // u64::MAX has 20 digits; the sign makes 21.
        let mut digits = [0u8; 21];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (magnitude % 10) as u8;
            magnitude /= 10;
            if magnitude == 0 {
                break;
            }
        }
        if negative {
            start -= 1;
            digits[start] = b'-';
        }
        self.put(&digits[start..]);
    }

    fn put(&mut self, mut bytes: &[u8]) {
        self.total_len_bytes += bytes.len() as u64;
        // Top up a started word; then whole words straight from `bytes`;
        // the rest starts the next word.
        if self.word_len_bytes > 0 {
            let take = (8 - self.word_len_bytes).min(bytes.len());
            self.word[self.word_len_bytes..self.word_len_bytes + take].copy_from_slice(&bytes[..take]);
            self.word_len_bytes += take;
            bytes = &bytes[take..];
            if self.word_len_bytes < 8 {
                return;
            }
            self.hash = fold_word(self.hash, u64::from_le_bytes(self.word));
            self.word_len_bytes = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for word in words.by_ref() {
            self.hash = fold_word(self.hash, u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.word[..rest.len()].copy_from_slice(rest);
        self.word_len_bytes = rest.len();
    }
}

impl fmt::Write for StreamHasher {
    fn write_str(&mut self, piece: &str) -> fmt::Result {
        self.put(piece.as_bytes());
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
            t.push(Event::Mark { label: "seal.built" });
            t.push(Event::Crash { io_index: 7 });
        }
        assert_eq!(a.hash(), b.hash());
        let mut c = Trace::new(false);
        c.push(Event::Crash { io_index: 7 });
        c.push(Event::Mark { label: "seal.built" });
        assert_ne!(a.hash(), c.hash());
    }

    #[test]
    fn hash_debug_is_hash_bytes_of_the_debug_text() {
        let values: Vec<Vec<Vec<u8>>> = vec![
            vec![],
            vec![vec![]],
            vec![b"a".to_vec()],
            vec![b"seven77".to_vec(), b"eight888".to_vec()],
            vec![(0..=255).collect(), vec![7; 33]],
        ];
        for value in &values {
            assert_eq!(hash_debug(value), hash_bytes(format!("{value:?}").as_bytes()), "{value:?}");
        }
        for text in ["", "1234567", "12345678", "123456789", "a string of some length, split in many pieces"] {
            assert_eq!(hash_debug(&text), hash_bytes(format!("{text:?}").as_bytes()));
        }
        let replies = [
            Reply::Ok,
            Reply::Nil,
            Reply::Int(-42),
            Reply::Bulk(b"value".to_vec()),
            Reply::Pairs(vec![(b"f".to_vec(), b"v".to_vec()), (b"field2".to_vec(), vec![0, 255])]),
        ];
        for reply in &replies {
            assert_eq!(hash_debug(reply), hash_bytes(format!("{reply:?}").as_bytes()), "{reply:?}");
        }
    }

    #[test]
    fn hash_reply_matches_the_debug_text() {
        let mut replies = vec![
            Reply::Ok,
            Reply::Nil,
            Reply::Int(0),
            Reply::Int(i64::MIN),
            Reply::Int(i64::MAX),
            Reply::Bulk(vec![]),
            Reply::Pairs(vec![]),
        ];
        // Every byte value and lengths around the 8-byte word, in both
        // byte-carrying variants.
        let mut seed = 0x5eed_u64;
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    (seed >> 56) as u8
                })
                .collect();
            replies.push(Reply::Int(seed as i64 >> (len % 64)));
            replies.push(Reply::Bulk(bytes.clone()));
            let pairs = (0..len % 5).map(|i| (bytes[..i].to_vec(), bytes[i..].to_vec())).collect();
            replies.push(Reply::Pairs(pairs));
        }
        replies.push(Reply::Bulk((0..=255).collect()));
        for reply in &replies {
            assert_eq!(hash_reply(reply), hash_debug(reply), "{reply:?}");
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
