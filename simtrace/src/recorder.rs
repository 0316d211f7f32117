//! From strace's calls to a recording's operations: what each call on the
//! watched directory means, with every descriptor, offset and relative
//! path resolved (see `fds.rs`, `paths.rs`).
//!
//! Three kinds of call: the ones the recording keeps (opens, writes,
//! truncations, syncs, renames, unlinks, `mkdir`, closes, and writes to the
//! program's standard output, which are its acknowledgements); the ones
//! that only move the recorder's own bookkeeping (`dup`s, `lseek`, `read`,
//! `chdir`, `clone`, `execve`); and the ones that cannot change what a
//! crash leaves (`stat`s, listings, locks). Any other call that names a
//! path under the directory or a descriptor of a file in it is refused
//! with its name and line, as is anything the simulated disk cannot
//! replay (hard and symbolic links, `O_TMPFILE`, renaming a
//! directory, moving a file across the directory's edge, shared writable
//! `mmap`, asynchronous I/O anywhere in the run): a recording is never
//! silently smaller than the run.
//!
//! A write through a descriptor opened with `O_DSYNC` is durable when it
//! returns, as its data: it is recorded followed by an `fdatasync` of its
//! handle (what `open(2)` says it is); with `O_SYNC` (which includes
//! `O_DSYNC`'s bit) by an `fsync`. `fsync` and `fdatasync` are recorded
//! each as itself: a file system may persist less after the second
//! (FILESYSTEMS.md). `rmdir` of a directory and a directory's rename are
//! kept (the disk removes and renames directories, `replay.rs`). A thread (`CLONE_THREAD`) or a child cloned with
//! `CLONE_FILES` shares its parent's descriptor table; any other child
//! gets a copy.

use std::collections::BTreeSet;

use super::fds::{Processes, SyncEachWrite};
use super::paths::{resolve, strip_deleted, under};
use super::recording::{Op, OpenFlags, RelPath, WriteAt};
use super::strace::{clone_flags, iovec_bytes, number_and_path, parse_flags, string_arg, struct_field, Call, Ret};

const O_CREAT: u64 = 0o100;
const O_EXCL: u64 = 0o200;
const O_TRUNC: u64 = 0o1000;
const O_APPEND: u64 = 0o2000;
const O_DIRECTORY: u64 = 0o200000;
const O_CLOEXEC: u64 = 0o2000000;
const O_PATH: u64 = 0o10000000;
const O_TMPFILE_BIT: u64 = 0o20000000;
const O_DSYNC: u64 = 0o10000;
/// `O_SYNC` is `__O_SYNC | O_DSYNC`.
const O_SYNC_BIT: u64 = 0o4000000;
const CLONE_FILES: u64 = 0x400;
const CLONE_THREAD: u64 = 0x10000;
const AT_REMOVEDIR: u64 = 0x200;

/// Calls that change nothing a crash can leave, whatever they name.
const HARMLESS: &[&str] = &[
    "fstat",
    "newfstatat",
    "stat",
    "lstat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "getdents",
    "getdents64",
    "fstatfs",
    "statfs",
    "readlink",
    "readlinkat",
    "flock",
    "fadvise64",
    "getcwd",
    "pread64",
    "preadv",
    "preadv2",
    "utimensat",
    "futimesat",
    "utimes",
    "utime",
    "fchmod",
    "fchmodat",
    "chmod",
    "fchown",
    "fchownat",
    "chown",
    "lchown",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "inotify_add_watch",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_ctl",
    "exit",
    "exit_group",
    "wait4",
    "waitid",
    "msync",
];

/// A call the recorder refuses: where, which call, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// The strace output line (1-based).
    pub line: usize,
    /// The system call.
    pub call: String,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "strace output line {}: {}: {}", self.line, self.call, self.reason)
    }
}

/// Whether a clone with `flags` shares the parent's descriptor table.
fn shares_files(flags: u64) -> bool {
    flags & (CLONE_FILES | CLONE_THREAD) != 0
}

/// Turns calls into operations (see the module doc).
#[derive(Debug)]
pub struct Recorder {
    root: Vec<u8>,
    stdout: Vec<u8>,
    start_cwd: Vec<u8>,
    processes: Processes,
    dirs: BTreeSet<RelPath>,
    /// The operations so far.
    pub ops: Vec<Op>,
}

type Outcome = Result<(), RecordError>;

impl Recorder {
    /// A recorder for the directory `root` (canonical, absolute), whose
    /// program's standard output `-y` shows as `stdout` (`pipe:[N]`), and
    /// which starts in `cwd` with the subdirectories `dirs` (relative).
    pub fn new(root: Vec<u8>, stdout: Vec<u8>, cwd: Vec<u8>, dirs: impl IntoIterator<Item = RelPath>) -> Self {
        let mut known: BTreeSet<RelPath> = dirs.into_iter().collect();
        known.insert(RelPath(b".".to_vec()));
        Recorder { root, stdout, start_cwd: cwd, processes: Processes::default(), dirs: known, ops: Vec::new() }
    }

    /// One completed call; `pending_clone`: the parent and flags of a
    /// clone not yet returned, for a process seen before its parent's
    /// clone returns (strace prints the child's first calls first).
    pub fn call(&mut self, call: &Call, pending_clone: Option<(u32, u64)>) -> Outcome {
        if !self.processes.knows(call.pid) {
            match pending_clone.filter(|(parent, _)| self.processes.knows(*parent)) {
                Some((parent, flags)) => self.processes.fork(parent, call.pid, shares_files(flags)),
                None => self.processes.start(call.pid, self.start_cwd.clone()),
            }
        }
        match &call.ret {
            Ret::Value(value, path) => self.succeeded(call, *value, path.as_deref()),
            Ret::Error(_) | Ret::Unknown => self.failed(call),
        }
    }

    /// The run ended: every handle still open is closed.
    pub fn finish(mut self) -> Vec<Op> {
        for handle in self.processes.open_handles() {
            self.ops.push(Op::Close { handle });
        }
        self.ops
    }

    fn refuse(&self, call: &Call, reason: impl Into<String>) -> Outcome {
        Err(RecordError { line: call.line, call: call.name.clone(), reason: reason.into() })
    }

    /// A failed call changed nothing, but `close` releases its descriptor
    /// whatever it returns, and an unknown call on the directory is still
    /// refused (it would have been, had it worked).
    fn failed(&mut self, call: &Call) -> Outcome {
        if call.name == "close" {
            self.close_fd(call, 0)?;
        }
        Ok(())
    }

    fn succeeded(&mut self, call: &Call, value: i64, path: Option<&[u8]>) -> Outcome {
        match call.name.as_str() {
            "open" | "creat" | "openat" | "openat2" => self.open(call, value, path),
            "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => self.write(call, value),
            "read" | "readv" | "lseek" => self.move_offset(call, value),
            "ftruncate" | "fallocate" | "fsync" | "fdatasync" | "sync_file_range" | "syncfs" => self.data_call(call),
            "sync" => {
                self.ops.push(Op::SyncAll);
                Ok(())
            }
            "truncate" => self.truncate_path(call),
            "close" => self.close_fd(call, 0),
            "close_range" => self.close_range(call),
            "dup" | "dup2" | "dup3" | "fcntl" => self.descriptors(call, value),
            "rename" | "renameat" | "renameat2" => self.rename(call),
            "unlink" | "unlinkat" | "rmdir" | "mkdir" | "mkdirat" => self.names(call),
            "link" | "linkat" | "symlink" | "symlinkat" => self.links(call),
            "chdir" | "fchdir" => self.chdir(call),
            "clone" | "clone3" | "fork" | "vfork" => self.cloned(call, value),
            "execve" | "execveat" => self.executed(call),
            "mmap" => self.mapped(call),
            // Their writes happen later, out of any call strace decodes
            // with a descriptor: a recording would silently miss them.
            "io_setup" | "io_submit" | "io_uring_setup" => {
                self.refuse(call, "asynchronous I/O (aio, io_uring) cannot be recorded: its writes are invisible here")
            }
            name if HARMLESS.contains(&name) => Ok(()),
            _ => self.unknown(call),
        }
    }

    /// The argument `index`, or a refusal naming the call.
    fn arg<'a>(&self, call: &'a Call, index: usize) -> Result<&'a str, RecordError> {
        match call.args.get(index) {
            Some(arg) => Ok(arg.as_str()),
            None => Err(RecordError {
                line: call.line,
                call: call.name.clone(),
                reason: format!("argument {} missing", index + 1),
            }),
        }
    }

    fn number(&self, call: &Call, index: usize) -> Result<i64, RecordError> {
        let arg = self.arg(call, index)?;
        match number_and_path(arg).map(|(value, _)| value).or_else(|| parse_flags(arg).map(|v| v as i64)) {
            Some(value) => Ok(value),
            None => {
                Err(RecordError { line: call.line, call: call.name.clone(), reason: format!("{arg:?}: not a number") })
            }
        }
    }

    /// The handle a descriptor argument names, if followed. A descriptor
    /// that `-y` shows under the directory but that the recorder never saw
    /// opened is refused: its offset and flags are unknown.
    fn handle(&self, call: &Call, index: usize) -> Result<Option<u64>, RecordError> {
        let arg = self.arg(call, index)?;
        let Some((fd, path)) = number_and_path(arg) else { return Ok(None) };
        if let Some(handle) = self.processes.handle(call.pid, fd) {
            return Ok(Some(handle));
        }
        match path.as_deref().and_then(|p| under(&self.root, strip_deleted(p))) {
            Some(rel) => Err(RecordError {
                line: call.line,
                call: call.name.clone(),
                reason: format!("descriptor {fd} names {} but was not opened while recording", rel.show()),
            }),
            None => Ok(None),
        }
    }

    /// The absolute path of a path argument, relative to the directory
    /// descriptor argument `dirfd` (`None`: the working directory).
    fn path_arg(&self, call: &Call, dirfd: Option<usize>, index: usize) -> Result<Vec<u8>, RecordError> {
        let arg = self.arg(call, index)?;
        let Some(path) = string_arg(arg) else {
            return self.refuse(call, format!("path argument {} unreadable: {arg}", index + 1)).map(|_| Vec::new());
        };
        let base = match dirfd.map(|i| self.arg(call, i)).transpose()?.and_then(number_and_path) {
            Some((_, Some(dir))) => strip_deleted(&dir).to_vec(),
            _ => self.processes.cwd(call.pid).to_vec(),
        };
        Ok(resolve(&base, &path))
    }

    fn open(&mut self, call: &Call, fd: i64, returned: Option<&[u8]>) -> Outcome {
        let (dirfd, path_index, flags) = match call.name.as_str() {
            "open" => (None, 0, parse_flags(self.arg(call, 1)?).unwrap_or(0)),
            "creat" => (None, 0, O_CREAT | O_TRUNC | 1),
            "openat" => (Some(0), 1, parse_flags(self.arg(call, 2)?).unwrap_or(0)),
            _ => (Some(0), 1, struct_field(self.arg(call, 2)?, "flags").and_then(|f| parse_flags(&f)).unwrap_or(0)),
        };
        let absolute = match returned {
            Some(kernel) => strip_deleted(kernel).to_vec(),
            None => self.path_arg(call, dirfd, path_index)?,
        };
        let Some(rel) = under(&self.root, &absolute) else { return Ok(()) };
        if flags & O_TMPFILE_BIT != 0 {
            return self.refuse(call, format!("O_TMPFILE in {} is not supported (an unnamed file)", rel.show()));
        }
        if flags & O_PATH != 0 {
            return Ok(());
        }
        let dir = flags & O_DIRECTORY != 0 || self.dirs.contains(&rel);
        let append = flags & O_APPEND != 0;
        let open_flags = OpenFlags {
            create: flags & O_CREAT != 0,
            trunc: flags & O_TRUNC != 0,
            excl: flags & O_EXCL != 0,
            append,
            dir,
        };
        let handle = self.processes.open(call.pid, fd, rel.clone(), append, flags & O_CLOEXEC != 0);
        self.processes.description_mut(handle).sync = match (flags & O_DSYNC != 0 && !dir, flags & O_SYNC_BIT != 0) {
            (false, _) => SyncEachWrite::No,
            (true, false) => SyncEachWrite::Data,
            (true, true) => SyncEachWrite::Full,
        };
        self.ops.push(Op::Open { handle, path: rel, flags: open_flags });
        Ok(())
    }

    fn write(&mut self, call: &Call, written: i64) -> Outcome {
        let fd_arg = self.arg(call, 0)?;
        let to_stdout = number_and_path(fd_arg).and_then(|(_, path)| path).is_some_and(|path| path == self.stdout);
        let handle = self.handle(call, 0)?;
        if !to_stdout && handle.is_none() {
            return Ok(());
        }
        let data = self.arg(call, 1)?;
        let bytes = if call.name.contains('v') { iovec_bytes(data) } else { string_arg(data) };
        let Some(mut bytes) = bytes else {
            return self.refuse(call, "the written bytes are cut short or unreadable (strace -s too small?)");
        };
        bytes.truncate(usize::try_from(written).unwrap_or(0));
        let Some(handle) = handle else {
            self.ops.push(Op::Print { bytes });
            return Ok(());
        };
        let explicit = match call.name.as_str() {
            "pwrite64" | "pwritev" => Some(self.number(call, 3)?),
            "pwritev2" => Some(self.number(call, 3)?).filter(|offset| *offset != -1),
            _ => None,
        };
        let description = self.processes.description_mut(handle);
        let sync = description.sync;
        // Linux appends under O_APPEND even where pwrite names an offset
        // (pwrite(2), BUGS).
        let at = match explicit {
            _ if description.append => WriteAt::Append,
            Some(offset) => WriteAt::Offset(offset as u64),
            None => {
                let at = description.offset;
                description.offset += bytes.len() as u64;
                WriteAt::Offset(at)
            }
        };
        self.ops.push(Op::Write { handle, at, bytes });
        match sync {
            SyncEachWrite::No => {}
            SyncEachWrite::Data => self.ops.push(Op::Fdatasync { handle }),
            SyncEachWrite::Full => self.ops.push(Op::Fsync { handle }),
        }
        Ok(())
    }

    /// `read`, `readv` (raw: no bytes printed) and `lseek` move the offset.
    fn move_offset(&mut self, call: &Call, value: i64) -> Outcome {
        let Some(fd) = number_and_path(self.arg(call, 0)?).map(|(fd, _)| fd) else { return Ok(()) };
        let Some(handle) = self.processes.handle(call.pid, fd) else { return Ok(()) };
        let description = self.processes.description_mut(handle);
        if call.name == "lseek" {
            description.offset = value as u64;
        } else {
            description.offset += value as u64;
        }
        Ok(())
    }

    fn data_call(&mut self, call: &Call) -> Outcome {
        if call.name == "syncfs" {
            self.ops.push(Op::SyncAll);
            return Ok(());
        }
        let Some(handle) = self.handle(call, 0)? else { return Ok(()) };
        let op = match call.name.as_str() {
            "ftruncate" => Op::Truncate { handle, len: self.number(call, 1)? as u64 },
            "fallocate" => {
                let (mode, offset, len) = (self.number(call, 1)?, self.number(call, 2)?, self.number(call, 3)?);
                Op::Fallocate { handle, mode: mode as u64, offset: offset as u64, len: len as u64 }
            }
            "sync_file_range" => Op::RangeSync { handle },
            "fdatasync" => Op::Fdatasync { handle },
            _ => Op::Fsync { handle },
        };
        self.ops.push(op);
        Ok(())
    }

    fn truncate_path(&mut self, call: &Call) -> Outcome {
        let absolute = self.path_arg(call, None, 0)?;
        let Some(path) = under(&self.root, &absolute) else { return Ok(()) };
        let len = self.number(call, 1)? as u64;
        // A handle of its own, opened and closed around the cut: replay
        // needs a handle, and no descriptor of the program's is involved.
        let handle = self.processes.open(call.pid, i64::MIN, path.clone(), false, false);
        self.processes.close(call.pid, i64::MIN);
        self.ops.push(Op::Open { handle, path, flags: OpenFlags::default() });
        self.ops.push(Op::Truncate { handle, len });
        self.ops.push(Op::Close { handle });
        Ok(())
    }

    fn close_fd(&mut self, call: &Call, index: usize) -> Outcome {
        let Some(fd) = number_and_path(self.arg(call, index)?).map(|(fd, _)| fd) else { return Ok(()) };
        if let Some(handle) = self.processes.close(call.pid, fd) {
            self.ops.push(Op::Close { handle });
        }
        Ok(())
    }

    fn close_range(&mut self, call: &Call) -> Outcome {
        let (first, last, flags) = (self.number(call, 0)?, self.number(call, 1)?, self.number(call, 2)?);
        for fd in self.processes.fds_in(call.pid, first, last) {
            if flags & 4 != 0 {
                self.processes.set_cloexec(call.pid, fd, true);
            } else if let Some(handle) = self.processes.close(call.pid, fd) {
                self.ops.push(Op::Close { handle });
            }
        }
        Ok(())
    }

    /// `dup`, `dup2`, `dup3`, and `fcntl`'s duplicates and flag changes.
    fn descriptors(&mut self, call: &Call, new_fd: i64) -> Outcome {
        let old = self.handle(call, 0)?;
        let command = if call.name == "fcntl" { self.number(call, 1)? } else { -1 };
        let cloexec = match (call.name.as_str(), command) {
            ("dup3", _) => self.number(call, 2)? as u64 & O_CLOEXEC != 0,
            ("fcntl", 0x406) => true,
            ("fcntl", 0) | ("dup", _) | ("dup2", _) => false,
            ("fcntl", 2) => {
                let fd = self.number(call, 0)?;
                let on = self.number(call, 2)? & 1 != 0;
                self.processes.set_cloexec(call.pid, fd, on);
                return Ok(());
            }
            ("fcntl", 4) => {
                if let Some(handle) = old {
                    let append = self.number(call, 2)? as u64 & O_APPEND != 0;
                    self.processes.description_mut(handle).append = append;
                }
                return Ok(());
            }
            _ => return Ok(()),
        };
        let closed = match old {
            Some(handle) => self.processes.install(call.pid, new_fd, handle, cloexec),
            None => self.processes.close(call.pid, new_fd),
        };
        if let Some(handle) = closed {
            self.ops.push(Op::Close { handle });
        }
        Ok(())
    }

    fn rename(&mut self, call: &Call) -> Outcome {
        let (from, to) = match call.name.as_str() {
            "rename" => (self.path_arg(call, None, 0)?, self.path_arg(call, None, 1)?),
            _ => (self.path_arg(call, Some(0), 1)?, self.path_arg(call, Some(2), 3)?),
        };
        if call.name == "renameat2" && self.number(call, 4)? & !1 != 0 {
            return self.refuse(call, "RENAME_EXCHANGE and RENAME_WHITEOUT are not supported");
        }
        match (under(&self.root, &from), under(&self.root, &to)) {
            (None, None) => Ok(()),
            (Some(from), Some(to)) => {
                // A directory's rename carries the directories under it.
                let moved: Vec<RelPath> = self.dirs.iter().filter(|d| d.is_under(&from)).cloned().collect();
                for dir in moved {
                    self.dirs.remove(&dir);
                    self.dirs.insert(dir.moved(&from, &to));
                }
                self.ops.push(Op::Rename { from, to });
                Ok(())
            }
            (Some(inside), None) | (None, Some(inside)) => {
                self.refuse(call, format!("{} moves across the watched directory's edge: not supported", inside.show()))
            }
        }
    }

    /// `unlink`, `unlinkat`, `rmdir`, `mkdir`, `mkdirat`.
    fn names(&mut self, call: &Call) -> Outcome {
        let at = call.name.ends_with("at");
        let absolute = self.path_arg(call, at.then_some(0), usize::from(at))?;
        let Some(path) = under(&self.root, &absolute) else { return Ok(()) };
        let removes_dir =
            call.name == "rmdir" || (call.name == "unlinkat" && self.number(call, 2)? as u64 & AT_REMOVEDIR != 0);
        if removes_dir {
            if path.0 == b"." {
                return self.refuse(call, "removing the watched directory itself is not supported");
            }
            self.dirs.remove(&path);
            self.ops.push(Op::Rmdir { path });
        } else if call.name.starts_with("mkdir") {
            self.dirs.insert(path.clone());
            self.ops.push(Op::Mkdir { path });
        } else {
            self.ops.push(Op::Unlink { path });
        }
        Ok(())
    }

    fn links(&mut self, call: &Call) -> Outcome {
        let paths = match call.name.as_str() {
            "link" => vec![self.path_arg(call, None, 0)?, self.path_arg(call, None, 1)?],
            "linkat" => vec![self.path_arg(call, Some(0), 1)?, self.path_arg(call, Some(2), 3)?],
            "symlink" => vec![self.path_arg(call, None, 1)?],
            _ => vec![self.path_arg(call, Some(1), 2)?],
        };
        match paths.iter().find_map(|p| under(&self.root, p)) {
            Some(path) => {
                self.refuse(call, format!("links are not supported (the simulated disk has none): {}", path.show()))
            }
            None => Ok(()),
        }
    }

    fn chdir(&mut self, call: &Call) -> Outcome {
        let cwd = if call.name == "chdir" {
            self.path_arg(call, None, 0)?
        } else {
            match number_and_path(self.arg(call, 0)?).and_then(|(_, path)| path) {
                Some(path) => strip_deleted(&path).to_vec(),
                None => return self.refuse(call, "fchdir's directory is unknown (no -y path)"),
            }
        };
        self.processes.chdir(call.pid, cwd);
        Ok(())
    }

    fn cloned(&mut self, call: &Call, child: i64) -> Outcome {
        let child = u32::try_from(child).map_err(|_| RecordError {
            line: call.line,
            call: call.name.clone(),
            reason: format!("child {child} is not a process id"),
        })?;
        if child == 0 || self.processes.knows(child) {
            return Ok(());
        }
        let flags = clone_flags(&call.name, &call.args);
        self.processes.fork(call.pid, child, shares_files(flags));
        Ok(())
    }

    fn executed(&mut self, call: &Call) -> Outcome {
        for handle in self.processes.exec(call.pid) {
            self.ops.push(Op::Close { handle });
        }
        Ok(())
    }

    fn mapped(&mut self, call: &Call) -> Outcome {
        let (prot, flags) = (self.number(call, 2)? as u64, self.number(call, 3)? as u64);
        let shared_writable = prot & 2 != 0 && matches!(flags & 0xf, 1 | 3);
        let handle = self.handle(call, 4)?;
        match handle.filter(|_| shared_writable) {
            Some(handle) => {
                let path = self.processes.description_mut(handle).path.show();
                self.refuse(
                    call,
                    format!("a shared writable map of {path} is not supported: its writes bypass write()"),
                )
            }
            None => Ok(()),
        }
    }

    /// Any other call: refused if an argument names the directory.
    fn unknown(&mut self, call: &Call) -> Outcome {
        for (index, arg) in call.args.iter().enumerate() {
            let by_fd = number_and_path(arg).and_then(|(fd, path)| {
                let followed = self.processes.handle(call.pid, fd).is_some() && path.is_some();
                let inside = path.as_deref().and_then(|p| under(&self.root, strip_deleted(p)));
                inside.or_else(|| followed.then(|| RelPath(b"?".to_vec())))
            });
            let by_path = string_arg(arg).and_then(|p| under(&self.root, &resolve(self.processes.cwd(call.pid), &p)));
            if let Some(path) = by_fd.or(by_path) {
                let what = format!(
                    "an unrecognised call on {} (argument {}): not recorded, so refused",
                    path.show(),
                    index + 1
                );
                return self.refuse(call, what);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
