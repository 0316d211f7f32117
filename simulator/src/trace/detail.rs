//! What a report needs beyond the hashed events, kept only by a trace
//! that keeps every event (`Trace::new(true)`: `--trace`, `--report`).
//!
//! None of it is folded into the hash, none of it draws randomness, and
//! nothing reads it during a run: it is written beside the events and
//! read back when a report is drawn. The disk adds, per I/O, which file
//! (inode) it touched and a rename's new name; at each power loss, what
//! became of every pending change (`CrashPicture`); the drivers add notes
//! (a recovery's report) at the event they follow.

use std::collections::BTreeMap;

/// Per-I/O facts the event itself does not carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoDetail {
    /// The file the I/O touched (its inode number); `None` for a
    /// directory's own operations (listing, directory fsync, creation)
    /// and for a path that named nothing.
    pub inode: Option<u64>,
    /// A rename's new full path.
    pub renamed_to: Option<String>,
}

/// What one pending data operation of a file came to at a power loss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpFate {
    /// The operation, as `write 4096+512` or `set_len 0`.
    pub what: String,
    /// Its byte range in the file (`start..end`; a `set_len`'s cut or
    /// extension), for drawing.
    pub range: (u64, u64),
    /// What the durable bytes show after the crash: `survived`, `lost`,
    /// `cut at byte N`, `garbage in A..B`, ...
    pub fate: String,
}

/// One file at a power loss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileFate {
    /// Its inode number (the report's lane).
    pub inode: u64,
    /// Its full path before the crash (as reads saw it), if it had one.
    pub path_before: Option<String>,
    /// Its full path after (the durable entry that survived), if any.
    pub path_after: Option<String>,
    /// Its durable length before the crash, in bytes.
    pub len_durable: u64,
    /// Its length as reads saw it before the crash (the page cache's).
    pub len_volatile: u64,
    /// Its length after the crash settled.
    pub len_after: u64,
    /// Each unsynced data operation, oldest first.
    pub ops: Vec<OpFate>,
    /// Byte ranges holding neither the old nor the new content.
    pub garbage: Vec<(u64, u64)>,
}

/// One unsynced directory change at a power loss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirFate {
    /// The directory's path.
    pub dir: String,
    /// The change, as `create X`, `unlink X`, `rename X -> Y`.
    pub what: String,
    /// Whether its effect is in the durable directory after the crash.
    pub survived: bool,
}

/// Everything a power loss did, as the report draws it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashPicture {
    /// The I/O count at the power loss (`Event::Crash`'s `io_index`).
    pub io_index: u64,
    /// The disk's sector size.
    pub sector_bytes: u64,
    /// Every file with unsynced data, or named by an unsynced change.
    pub files: Vec<FileFate>,
    /// Every unsynced directory change.
    pub dirs: Vec<DirFate>,
    /// Damage announced (media corruption, the environment's), as text.
    pub damage: Vec<String>,
}

/// The side record a keep-all trace holds (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct Detail {
    /// By I/O index.
    pub io: BTreeMap<u64, IoDetail>,
    /// In order.
    pub crashes: Vec<CrashPicture>,
    /// Notes, each after the event with this position in `Trace::all`.
    pub notes: Vec<(usize, String)>,
    /// Each reply's text (`reply_text.rs`), by its event's position in
    /// `Trace::all`.
    pub replies: BTreeMap<usize, String>,
}
