//! The recording: what `sim trace record` keeps of one run of a program,
//! as a versioned text file of our own, and its codec.
//!
//! A recording is the watched directory's content before the run (its
//! subdirectories and files, all taken as durable) and then, in the order
//! the kernel completed them, the file-system operations the program made
//! on it and the bytes it printed. Everything the recorder had to work out
//! from the raw calls (which open file a descriptor names, at which offset
//! a plain `write` lands, relative paths) is already resolved, so replay
//! (`replay.rs`) needs no state but the open handles.
//!
//! One line per item, fields split by single spaces:
//!
//! ```text
//! segsim-syscalls 2
//! root /tmp/db
//! dir sub
//! file data.db 68656c6c6f
//! open 1 data.db create,trunc
//! write 1 0 6e6577
//! write 1 append 6e6577
//! truncate 1 3
//! fallocate 1 0 0 4096
//! fsync 1
//! fdatasync 1
//! rangesync 1
//! syncfs
//! rename a.tmp a
//! unlink a
//! mkdir sub2
//! rmdir sub2
//! close 1
//! print 6f6b0a
//! end
//! ```
//!
//! Paths are relative to the root (`.` is the root itself); a byte outside
//! `!`..`~`, and `%`, is written `%XX`. Bytes are lowercase hex. A handle
//! number names one open file description, never reused. `end` is
//! required, so a cut file is refused rather than read as a shorter run.
//! Every refusal is a [`FormatError`] naming the line and the field.

use std::fmt;
use std::path::PathBuf;

/// The first line's word, and the version this build writes and reads.
pub const MAGIC: &str = "segsim-syscalls";
/// The format version (see the module doc). Version 1 recorded every
/// `fdatasync` (and every write through an `O_DSYNC` descriptor) as an
/// `fsync`, which is more than some file systems do: it is refused, to be
/// recorded again.
pub const VERSION: u32 = 2;

/// A path below the recording's root, as bytes (`.` is the root).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelPath(pub Vec<u8>);

impl RelPath {
    /// The path as the simulated disk names it, under `base`.
    pub fn under(&self, base: &std::path::Path) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        if self.0 == b"." {
            return base.to_path_buf();
        }
        base.join(std::ffi::OsStr::from_bytes(&self.0))
    }

    /// The path for a person (lossy UTF-8).
    pub fn show(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    /// Whether it is `dir` or a path under it.
    pub fn is_under(&self, dir: &RelPath) -> bool {
        self.0 == dir.0 || (self.0.starts_with(&dir.0) && self.0.get(dir.0.len()) == Some(&b'/'))
    }

    /// This path (`is_under(from)`) after `from` was renamed `to`.
    pub fn moved(&self, from: &RelPath, to: &RelPath) -> RelPath {
        debug_assert!(self.is_under(from));
        let mut moved = to.0.clone();
        moved.extend_from_slice(&self.0[from.0.len()..]);
        RelPath(moved)
    }
}

/// How a handle was opened: the flags replay needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenFlags {
    /// `O_CREAT`: create the file if missing.
    pub create: bool,
    /// `O_TRUNC`: cut it to length 0.
    pub trunc: bool,
    /// `O_EXCL` (with `O_CREAT`): the file did not exist.
    pub excl: bool,
    /// `O_APPEND`: every write lands at the end.
    pub append: bool,
    /// The path is a directory (opened to fsync it).
    pub dir: bool,
}

/// Where a write lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteAt {
    /// At this byte offset.
    Offset(u64),
    /// At the file's end (`O_APPEND`).
    Append,
}

/// One operation of the run (see the module doc for its line). `handle`
/// is always the open file description's handle number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A file or directory opened as handle `handle`.
    Open {
        /// The new handle.
        handle: u64,
        /// What was opened.
        path: RelPath,
        /// How.
        flags: OpenFlags,
    },
    /// Bytes written through a handle.
    Write {
        /// The handle.
        handle: u64,
        /// Where the bytes land.
        at: WriteAt,
        /// The bytes the call wrote (its return value's worth).
        bytes: Vec<u8>,
    },
    /// `ftruncate`/`truncate`: the file's length set.
    Truncate {
        /// The handle.
        handle: u64,
        /// The new length.
        len: u64,
    },
    /// `fallocate(mode, offset, len)`.
    Fallocate {
        /// The handle.
        handle: u64,
        /// The mode flags, as the kernel took them.
        mode: u64,
        /// The range's start.
        offset: u64,
        /// The range's length.
        len: u64,
    },
    /// `fsync` of a handle (a directory's: its entries), or the `fsync`
    /// after a write through an `O_SYNC` descriptor.
    Fsync {
        /// The handle.
        handle: u64,
    },
    /// `fdatasync` of a handle, or the one after a write through an
    /// `O_DSYNC` descriptor: the file's data and length, and of its names
    /// what the profile says (a directory's: its entries, as `fsync`).
    Fdatasync {
        /// The handle.
        handle: u64,
    },
    /// `sync_file_range`: starts writeback, promises nothing durable.
    RangeSync {
        /// The handle.
        handle: u64,
    },
    /// `sync` or `syncfs`: everything made durable.
    SyncAll,
    /// A rename, replacing the target.
    Rename {
        /// The old name.
        from: RelPath,
        /// The new name.
        to: RelPath,
    },
    /// A name removed.
    Unlink {
        /// The name.
        path: RelPath,
    },
    /// A directory created.
    Mkdir {
        /// The directory.
        path: RelPath,
    },
    /// An empty directory removed (`rmdir`, `unlinkat(AT_REMOVEDIR)`).
    Rmdir {
        /// The directory.
        path: RelPath,
    },
    /// A handle closed (its last descriptor).
    Close {
        /// The handle.
        handle: u64,
    },
    /// Bytes the program printed on its standard output.
    Print {
        /// The bytes.
        bytes: Vec<u8>,
    },
}

/// A whole recording (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recording {
    /// The watched directory, as the recorder saw it (for people only:
    /// replay and exploration work below a root of their own).
    pub root: Vec<u8>,
    /// Subdirectories present before the run, parents first.
    pub initial_dirs: Vec<RelPath>,
    /// Files present before the run, with their bytes.
    pub initial_files: Vec<(RelPath, Vec<u8>)>,
    /// The run's operations, in order.
    pub ops: Vec<Op>,
}

/// A recording refused: which line (1-based), which field (1-based; 0 for
/// the line as a whole) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// The line, counting from 1.
    pub line: usize,
    /// The field, counting from 1 (the keyword is field 1); 0: the line.
    pub field: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field == 0 {
            write!(f, "recording line {}: {}", self.line, self.reason)
        } else {
            write!(f, "recording line {}, field {}: {}", self.line, self.field, self.reason)
        }
    }
}

impl std::error::Error for FormatError {}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// `bytes` as a path field: printable ASCII but `%` as itself, the rest `%XX`.
pub fn escape_path(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &byte in bytes {
        if (b'!'..=b'~').contains(&byte) && byte != b'%' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn flags_field(flags: OpenFlags) -> String {
    let names = [
        (flags.create, "create"),
        (flags.trunc, "trunc"),
        (flags.excl, "excl"),
        (flags.append, "append"),
        (flags.dir, "dir"),
    ];
    let set: Vec<&str> = names.iter().filter(|(on, _)| *on).map(|(_, name)| *name).collect();
    if set.is_empty() {
        "-".to_string()
    } else {
        set.join(",")
    }
}

impl Op {
    /// The operation's line (without the newline).
    pub fn to_line(&self) -> String {
        match self {
            Op::Open { handle, path, flags } => {
                format!("open {handle} {} {}", escape_path(&path.0), flags_field(*flags))
            }
            Op::Write { handle, at: WriteAt::Offset(offset), bytes } => {
                format!("write {handle} {offset} {}", hex(bytes))
            }
            Op::Write { handle, at: WriteAt::Append, bytes } => format!("write {handle} append {}", hex(bytes)),
            Op::Truncate { handle, len } => format!("truncate {handle} {len}"),
            Op::Fallocate { handle, mode, offset, len } => format!("fallocate {handle} {mode} {offset} {len}"),
            Op::Fsync { handle } => format!("fsync {handle}"),
            Op::Fdatasync { handle } => format!("fdatasync {handle}"),
            Op::RangeSync { handle } => format!("rangesync {handle}"),
            Op::SyncAll => "syncfs".to_string(),
            Op::Rename { from, to } => format!("rename {} {}", escape_path(&from.0), escape_path(&to.0)),
            Op::Unlink { path } => format!("unlink {}", escape_path(&path.0)),
            Op::Mkdir { path } => format!("mkdir {}", escape_path(&path.0)),
            Op::Rmdir { path } => format!("rmdir {}", escape_path(&path.0)),
            Op::Close { handle } => format!("close {handle}"),
            Op::Print { bytes } => format!("print {}", hex(bytes)),
        }
    }

    /// A short line for a report: the op's line with long byte fields
    /// shortened to their length.
    pub fn summary(&self) -> String {
        match self {
            Op::Write { handle, at, bytes } => {
                let at = match at {
                    WriteAt::Offset(offset) => offset.to_string(),
                    WriteAt::Append => "append".to_string(),
                };
                format!("write {handle} {at} ({} bytes)", bytes.len())
            }
            Op::Print { bytes } => format!("print {:?}", String::from_utf8_lossy(bytes)),
            other => other.to_line(),
        }
    }
}

impl Recording {
    /// The whole file, newline-terminated lines.
    pub fn encode(&self) -> String {
        let mut out = format!("{MAGIC} {VERSION}\nroot {}\n", escape_path(&self.root));
        for dir in &self.initial_dirs {
            out.push_str(&format!("dir {}\n", escape_path(&dir.0)));
        }
        for (path, bytes) in &self.initial_files {
            out.push_str(&format!("file {} {}\n", escape_path(&path.0), hex(bytes)));
        }
        for op in &self.ops {
            out.push_str(&op.to_line());
            out.push('\n');
        }
        out.push_str("end\n");
        out
    }

    /// Read a recording back; every refusal names its line and field.
    pub fn decode(text: &str) -> Result<Recording, FormatError> {
        // The last line's newline ends it; it does not begin an empty line.
        let body = text.strip_suffix('\n').unwrap_or(text);
        let mut lines = body.split('\n').enumerate().map(|(index, line)| (index + 1, line));
        let (_, first) = lines.next().unwrap_or((1, ""));
        let header = Fields::new(1, first);
        header.expect_len(2)?;
        if header.word(0) != MAGIC {
            return Err(header.error(1, format!("expected {MAGIC:?}: not a segsim syscall recording")));
        }
        if header.word(1) == "1" {
            let why = "version 1 recorded every fdatasync and O_DSYNC write as an fsync (more than ext4 persists): \
                       record the program again";
            return Err(header.error(2, why.into()));
        }
        if header.word(1) != VERSION.to_string() {
            return Err(
                header.error(2, format!("version {:?} is not the one this build reads ({VERSION})", header.word(1)))
            );
        }
        let mut recording = Recording::default();
        let mut ended = false;
        for (number, line) in lines {
            if ended {
                if line.is_empty() {
                    continue;
                }
                return Err(FormatError { line: number, field: 0, reason: "text after `end`".into() });
            }
            let fields = Fields::new(number, line);
            match fields.word(0) {
                "end" => {
                    fields.expect_len(1)?;
                    ended = true;
                }
                _ => recording.read_line(&fields)?,
            }
        }
        if !ended {
            let last = body.split('\n').count();
            return Err(FormatError {
                line: last,
                field: 0,
                reason: "no `end` line: the recording is cut short".into(),
            });
        }
        Ok(recording)
    }

    fn read_line(&mut self, fields: &Fields<'_>) -> Result<(), FormatError> {
        match fields.word(0) {
            "root" => {
                fields.expect_len(2)?;
                self.root = fields.path(1)?.0;
            }
            "dir" => {
                fields.expect_len(2)?;
                self.initial_dirs.push(fields.path(1)?);
            }
            "file" => {
                fields.expect_len(3)?;
                self.initial_files.push((fields.path(1)?, fields.bytes(2)?));
            }
            _ => self.ops.push(read_op(fields)?),
        }
        Ok(())
    }
}

fn read_op(fields: &Fields<'_>) -> Result<Op, FormatError> {
    let op = match fields.word(0) {
        "open" => {
            fields.expect_len(4)?;
            Op::Open { handle: fields.number(1)?, path: fields.path(2)?, flags: fields.flags(3)? }
        }
        "write" => {
            fields.expect_len(4)?;
            let at = if fields.word(2) == "append" { WriteAt::Append } else { WriteAt::Offset(fields.number(2)?) };
            Op::Write { handle: fields.number(1)?, at, bytes: fields.bytes(3)? }
        }
        "truncate" => {
            fields.expect_len(3)?;
            Op::Truncate { handle: fields.number(1)?, len: fields.number(2)? }
        }
        "fallocate" => {
            fields.expect_len(5)?;
            let (handle, mode) = (fields.number(1)?, fields.number(2)?);
            Op::Fallocate { handle, mode, offset: fields.number(3)?, len: fields.number(4)? }
        }
        "fsync" => fields.expect_len(2).and_then(|_| Ok(Op::Fsync { handle: fields.number(1)? }))?,
        "fdatasync" => fields.expect_len(2).and_then(|_| Ok(Op::Fdatasync { handle: fields.number(1)? }))?,
        "rangesync" => fields.expect_len(2).and_then(|_| Ok(Op::RangeSync { handle: fields.number(1)? }))?,
        "syncfs" => fields.expect_len(1).map(|_| Op::SyncAll)?,
        "rename" => {
            fields.expect_len(3)?;
            Op::Rename { from: fields.path(1)?, to: fields.path(2)? }
        }
        "unlink" => fields.expect_len(2).and_then(|_| Ok(Op::Unlink { path: fields.path(1)? }))?,
        "mkdir" => fields.expect_len(2).and_then(|_| Ok(Op::Mkdir { path: fields.path(1)? }))?,
        "rmdir" => fields.expect_len(2).and_then(|_| Ok(Op::Rmdir { path: fields.path(1)? }))?,
        "close" => fields.expect_len(2).and_then(|_| Ok(Op::Close { handle: fields.number(1)? }))?,
        "print" => fields.expect_len(2).and_then(|_| Ok(Op::Print { bytes: fields.bytes(1)? }))?,
        other => return Err(fields.error(1, format!("unknown keyword {other:?}"))),
    };
    Ok(op)
}

/// One line split into fields, for typed reads that name their place.
struct Fields<'a> {
    line: usize,
    words: Vec<&'a str>,
}

impl<'a> Fields<'a> {
    fn new(line: usize, text: &'a str) -> Self {
        Fields { line, words: text.split(' ').collect() }
    }

    fn word(&self, index: usize) -> &'a str {
        self.words.get(index).copied().unwrap_or("")
    }

    fn error(&self, field: usize, reason: String) -> FormatError {
        FormatError { line: self.line, field, reason }
    }

    fn expect_len(&self, len: usize) -> Result<(), FormatError> {
        if self.words.len() == len {
            return Ok(());
        }
        let what = if self.words.len() < len { "too few" } else { "too many" };
        Err(self.error(0, format!("{what} fields for {:?}: {} (expected {len})", self.word(0), self.words.len())))
    }

    fn number(&self, index: usize) -> Result<u64, FormatError> {
        let word = self.word(index);
        let plain =
            !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()) && (word == "0" || !word.starts_with('0'));
        match word.parse::<u64>() {
            Ok(value) if plain => Ok(value),
            _ => Err(self.error(index + 1, format!("{word:?} is not a decimal number (u64, no leading zeros)"))),
        }
    }

    fn bytes(&self, index: usize) -> Result<Vec<u8>, FormatError> {
        let word = self.word(index).as_bytes();
        if !word.len().is_multiple_of(2) {
            return Err(self.error(index + 1, format!("odd number of hex digits ({})", word.len())));
        }
        let digit = |byte: u8| match byte {
            b'0'..=b'9' => Some(byte - b'0'),
            b'a'..=b'f' => Some(byte - b'a' + 10),
            _ => None,
        };
        let mut out = Vec::with_capacity(word.len() / 2);
        for (at, pair) in word.chunks_exact(2).enumerate() {
            match (digit(pair[0]), digit(pair[1])) {
                (Some(high), Some(low)) => out.push(high << 4 | low),
                _ => return Err(self.error(index + 1, format!("not lowercase hex at byte {}", at * 2))),
            }
        }
        Ok(out)
    }

    fn path(&self, index: usize) -> Result<RelPath, FormatError> {
        let word = self.word(index).as_bytes();
        if word.is_empty() {
            return Err(self.error(index + 1, "empty path".into()));
        }
        let mut out = Vec::with_capacity(word.len());
        let mut at = 0;
        while at < word.len() {
            if word[at] != b'%' {
                out.push(word[at]);
                at += 1;
                continue;
            }
            let code = word.get(at + 1..at + 3).and_then(|pair| std::str::from_utf8(pair).ok());
            let value = code.filter(|c| c.bytes().all(|b| b.is_ascii_hexdigit())).map(|c| u8::from_str_radix(c, 16));
            match value {
                Some(Ok(byte)) => out.push(byte),
                _ => return Err(self.error(index + 1, format!("bad %-escape at byte {at}"))),
            }
            at += 3;
        }
        Ok(RelPath(out))
    }

    fn flags(&self, index: usize) -> Result<OpenFlags, FormatError> {
        let mut flags = OpenFlags::default();
        if self.word(index) == "-" {
            return Ok(flags);
        }
        for name in self.word(index).split(',') {
            let flag = match name {
                "create" => &mut flags.create,
                "trunc" => &mut flags.trunc,
                "excl" => &mut flags.excl,
                "append" => &mut flags.append,
                "dir" => &mut flags.dir,
                other => return Err(self.error(index + 1, format!("unknown open flag {other:?}"))),
            };
            *flag = true;
        }
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn path() -> impl Strategy<Value = RelPath> {
        proptest::collection::vec(any::<u8>(), 1..12).prop_map(RelPath)
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..40)
    }

    fn flags() -> impl Strategy<Value = OpenFlags> {
        any::<[bool; 5]>().prop_map(|[create, trunc, excl, append, dir]| OpenFlags { create, trunc, excl, append, dir })
    }

    fn op() -> impl Strategy<Value = Op> {
        let at = prop_oneof![any::<u64>().prop_map(WriteAt::Offset), Just(WriteAt::Append)];
        prop_oneof![
            (any::<u64>(), path(), flags()).prop_map(|(handle, path, flags)| Op::Open { handle, path, flags }),
            (any::<u64>(), at, bytes()).prop_map(|(handle, at, bytes)| Op::Write { handle, at, bytes }),
            (any::<u64>(), any::<u64>()).prop_map(|(handle, len)| Op::Truncate { handle, len }),
            any::<[u64; 4]>().prop_map(|[handle, mode, offset, len]| Op::Fallocate { handle, mode, offset, len }),
            any::<u64>().prop_map(|handle| Op::Fsync { handle }),
            any::<u64>().prop_map(|handle| Op::Fdatasync { handle }),
            any::<u64>().prop_map(|handle| Op::RangeSync { handle }),
            Just(Op::SyncAll),
            (path(), path()).prop_map(|(from, to)| Op::Rename { from, to }),
            path().prop_map(|path| Op::Unlink { path }),
            path().prop_map(|path| Op::Mkdir { path }),
            path().prop_map(|path| Op::Rmdir { path }),
            any::<u64>().prop_map(|handle| Op::Close { handle }),
            bytes().prop_map(|bytes| Op::Print { bytes }),
        ]
    }

    fn recording() -> impl Strategy<Value = Recording> {
        let files = proptest::collection::vec((path(), bytes()), 0..4);
        (path(), proptest::collection::vec(path(), 0..3), files, proptest::collection::vec(op(), 0..20)).prop_map(
            |(root, initial_dirs, initial_files, ops)| Recording { root: root.0, initial_dirs, initial_files, ops },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn every_recording_decodes_to_itself(recording in recording()) {
            prop_assert_eq!(Recording::decode(&recording.encode()), Ok(recording));
        }

        #[test]
        fn any_text_is_decoded_or_refused_without_panic(text in ".{0,200}") {
            let _ = Recording::decode(&format!("{MAGIC} {VERSION}\n{text}"));
        }
    }

    fn refusal(text: &str) -> FormatError {
        Recording::decode(text).expect_err("refused")
    }

    #[test]
    fn refusals_name_their_line_and_field() {
        assert_eq!(refusal("hello 1\nend\n").field, 1);
        assert_eq!(refusal("segsim-syscalls 9\nend\n").field, 2);
        let cut = refusal("segsim-syscalls 2\nroot /x\nfsync 1\n");
        assert!(cut.reason.contains("cut short"), "{cut}");
        let bad_hex = refusal("segsim-syscalls 2\nwrite 1 0 6g\nend\n");
        assert_eq!((bad_hex.line, bad_hex.field), (2, 4), "{bad_hex}");
        let bad_number = refusal("segsim-syscalls 2\nfsync 01\nend\n");
        assert_eq!((bad_number.line, bad_number.field), (2, 2), "{bad_number}");
        let unknown = refusal("segsim-syscalls 2\nchmod x\nend\n");
        assert!(unknown.reason.contains("chmod"), "{unknown}");
        let arity = refusal("segsim-syscalls 2\nrename a\nend\n");
        assert!(arity.reason.contains("too few"), "{arity}");
        let after = refusal("segsim-syscalls 2\nend\nfsync 1\n");
        assert_eq!(after.line, 3);
        let old = refusal("segsim-syscalls 1\nend\n");
        assert!(old.field == 2 && old.reason.contains("record the program again"), "{old}");
    }
}
