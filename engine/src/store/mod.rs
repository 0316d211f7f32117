//! The store: hot rows in memory and in the AOF, cold rows in segments.
//!
//! A write runs in this order, and the order is the whole design:
//!
//! 1. **purge** — expired state the command touches is deleted *and the
//!    delete is logged*, so replay (which never looks at the clock) sees
//!    exactly what the live store saw;
//! 2. **check** — the command is validated against that state; a bad
//!    command changes nothing;
//! 3. **promote** — a cold row the command writes to is read from its
//!    segment and becomes hot (in memory only; the log replays to the
//!    same place);
//! 4. **log** — the command's frame is appended, durable per the fsync
//!    policy; if that fails, memory is untouched and the caller gets the
//!    error;
//! 5. **apply** — memory changes, and the write is acknowledged.
//!
//! Replay runs steps 2, 3 and 5 over the logged commands (`recover.rs`).
//! `SET` with options decides them on the live path and logs the plain
//! write they came to (`set.rs`).
//! Eviction (`evict.rs`), rewrite (`rewrite.rs`) and the audit
//! (`audit.rs`) live beside this file.

mod accounting;
mod apply;
mod audit;
mod command;
mod evict;
mod key;
mod logical;
mod names;
mod recover;
mod rewrite;
mod row;
mod segments;
mod set;
mod value;
mod view;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::aof::FsyncPolicy;
pub use audit::Violation;
pub use command::{Command, Reply, SetCondition, SetOptions, SetTtl, INVALID_EXPIRE, SYNTAX_ERROR};
pub use evict::EvictReport;
pub use logical::{LogicalEntry, LogicalFields, LogicalValue};
pub use recover::RecoveryReport;
pub use segments::{segment_file_name, seq_of_file_name};
pub use view::{EntryView, FieldsIter, FieldsView, ValueView};

use crate::aof::{AofWriter, Record};
use crate::clock::Clock;
use crate::manifest::Manifest;
use crate::vfs::{LockGuard, LockMode, Vfs};
use crate::IoOp;
use crate::{Error, Result};
use key::Key;
use segments::Segments;
use value::{Entry, Value};

/// The AOF's file name inside the store directory.
pub const AOF_FILE: &str = "appendonly.aof";
/// The rewrite's temporary log, renamed over [`AOF_FILE`] when durable.
pub const REWRITE_TEMP_FILE: &str = "appendonly.aof.rewrite";

/// How a store is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// When an acknowledged write is fsynced.
    pub fsync: FsyncPolicy,
    /// Point-in-time recovery: open a damaged log as of its first invalid
    /// frame instead of refusing it (the cut bytes go to a quarantine
    /// file; nothing is swept in that open). Off by default: damage to
    /// durable data is refused with [`Error::Corrupt`] and nothing on disk
    /// changes (see `recover.rs`).
    pub point_in_time: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { fsync: FsyncPolicy::Always, point_in_time: false }
    }
}

/// A declared windowed table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub column: Vec<u8>,
    pub span: i64,
    /// The highest window-column value written to a hot row of the table.
    pub max_seen: Option<i64>,
}

impl Window {
    /// Rows whose window column is below this are out of the window
    /// (`None` until a value is seen: nothing is).
    pub fn threshold(&self) -> Option<i64> {
        self.max_seen.map(|max| max.saturating_sub(self.span))
    }
}

/// An open store. Single-threaded: one caller at a time (`&mut self`).
///
/// It holds its directory's lock for its whole life (exclusive, or shared
/// when opened read-only) and releases it when dropped or closed.
pub struct Store {
    vfs: Arc<dyn Vfs>,
    clock: Arc<dyn Clock>,
    dir: PathBuf,
    options: Options,
    /// The log's writer; `None` exactly when the store is read-only.
    aof: Option<AofWriter>,
    manifest: Manifest,
    map: BTreeMap<Key, Entry>,
    segments: Segments,
    windows: BTreeMap<Vec<u8>, Window>,
    /// Hot bytes: keys plus hot values; a stub counts only its key.
    used_memory: u64,
    /// Set by the first fatal failure (a failed fsync): writes are refused
    /// until the store is reopened.
    poisoned: Option<String>,
    /// A point-in-time open skipped its sweep: orphan and stray segment
    /// files may remain until a rewrite or the next open, and the audit
    /// does not count them.
    sweep_pending: bool,
    /// While `sweep_pending`: the directory's unregistered segment files
    /// were listed and their seqs noted, so none is handed out again
    /// (`evict.rs`, `fresh_seq`).
    debris_seqs_noted: bool,
    /// Files this store made and then failed to remove when the step that
    /// made them failed (a half-built segment, a failed rewrite's temp
    /// file: the failure's cleanup `unlink` failed too). Harmless — no log
    /// names them, the next open's sweep removes them — but not forgotten:
    /// the audit expects exactly these.
    leftovers: BTreeSet<String>,
    /// The directory's lock: `Exclusive`, or `Shared` for a read-only
    /// store. Declared last because fields drop in order: the lock goes
    /// only after every file the store holds is closed.
    lock: LockGuard,
}

impl Store {
    /// Remove `path` (called `name` in the directory), a file a failed step
    /// made; if that fails too, remember it (see [`Store::leftovers`]).
    fn remove_or_remember(&mut self, path: &std::path::Path, name: String) {
        if self.vfs.unlink(path).is_err() {
            self.leftovers.insert(name);
        }
    }

    /// Run one command at the store's clock.
    pub fn execute(&mut self, command: &Command) -> Result<Reply> {
        let now_ms = self.clock.now_ms();
        if !command.is_write() {
            return self.read(command, now_ms);
        }
        self.check_writable()?;
        self.tick_at(now_ms)?;
        match command {
            Command::FlushAll => return self.flush_all(now_ms),
            Command::SetWith { .. } => return self.execute_set(command, now_ms),
            _ => {}
        }
        let deleting = apply::past_deadline(command, now_ms);
        let command = deleting.as_ref().unwrap_or(command);
        // Replay, which never reads the clock, refuses a negative deadline
        // as the log's damage: none may be logged.
        debug_assert!(
            !matches!(command, Command::PExpireAt { at_ms, .. } | Command::HPExpireAt { at_ms, .. } if *at_ms < 0),
            "a deadline at or before the clock became a delete"
        );
        self.purge_expired(command, now_ms)?;
        if !self.check(command)? {
            return Ok(apply::unchanged_reply(command));
        }
        self.promote_for(command)?;
        self.log_command(command, now_ms)?;
        let reply = self.apply(command);
        debug_assert!(reply.is_ok(), "apply after a passing check cannot fail: {reply:?}");
        reply
    }

    /// Parse and run one command given as arguments (`["SET", "k", "v"]`).
    pub fn execute_args(&mut self, args: &[Vec<u8>]) -> Result<Reply> {
        let command = Command::parse(args)?;
        self.execute(&command)
    }

    /// Durability barrier: every acknowledged write is durable on return.
    pub fn sync(&mut self) -> Result<()> {
        self.check_writable()?;
        let now_ms = self.clock.now_ms();
        let result = self.writer().sync(now_ms);
        self.poison_on_error(result)
    }

    /// The store's background duty, for the `everysec` policy: fsync the
    /// log if a second has passed since the last fsync. Every write calls
    /// it; a caller with idle periods (the simulator, a server's timer)
    /// calls it when time passes.
    pub fn tick(&mut self) -> Result<()> {
        if self.poisoned.is_some() || self.is_read_only() {
            return Ok(());
        }
        let now_ms = self.clock.now_ms();
        self.tick_at(now_ms)
    }

    /// Close cleanly: the log is fsynced whatever the policy, and marked
    /// so that every byte of it is vouched durable (see the module doc of
    /// `aof`). A read-only store has nothing to fsync. The directory's lock
    /// is released either way.
    pub fn close(mut self) -> Result<()> {
        if self.is_read_only() {
            return Ok(());
        }
        self.check_writable()?;
        let now_ms = self.clock.now_ms();
        let result = self.writer().sync_and_vouch(now_ms);
        self.poison_on_error(result)
    }

    /// Hot bytes (keys plus hot values; a stub counts only its key).
    pub fn used_memory(&self) -> u64 {
        self.used_memory
    }

    /// Whether an earlier fatal failure has made the store refuse writes.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The number of keys (hot and cold, expired ones not yet purged
    /// included).
    pub fn key_count(&self) -> usize {
        self.map.len()
    }

    /// The number of cold stubs.
    pub fn cold_count(&self) -> usize {
        self.map.values().filter(|e| matches!(e.value, Value::Cold(_))).count()
    }

    /// The number of loaded segments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The options the store was opened with.
    pub fn options(&self) -> Options {
        self.options
    }

    /// Whether the store was opened with [`Store::open_read_only`]: it
    /// refuses every write with [`Error::ReadOnly`].
    pub fn is_read_only(&self) -> bool {
        self.lock.mode() == LockMode::Shared
    }

    /// The log's writer. Only write paths call this, after
    /// [`Store::check_writable`], so a read-only store never gets here.
    fn writer(&mut self) -> &mut AofWriter {
        self.aof.as_mut().expect("a write path on a read-only store passed check_writable")
    }

    fn check_writable(&self) -> Result<()> {
        if self.is_read_only() {
            return Err(Error::ReadOnly { dir: self.dir.clone() });
        }
        match &self.poisoned {
            Some(cause) => Err(Error::Poisoned { cause: cause.clone() }),
            None => Ok(()),
        }
    }

    fn tick_at(&mut self, now_ms: u64) -> Result<()> {
        let result = self.writer().tick(now_ms);
        self.poison_on_error(result)
    }

    /// Append `records` to the log. A failure that leaves the log's tail
    /// unknown (a failed fsync, a write that could not be cut back)
    /// poisons the store.
    fn log(&mut self, records: &[Record], now_ms: u64) -> Result<()> {
        let aof = self.writer();
        let result = match records {
            [record] => aof.append(record, now_ms),
            _ => aof.append_all(records, now_ms),
        };
        self.logged(result)
    }

    /// [`Store::log`] of one command, encoded from the command as it is.
    fn log_command(&mut self, command: &Command, now_ms: u64) -> Result<()> {
        let aof = self.writer();
        let result = command.with_args(|args| aof.append_command(args, now_ms));
        self.logged(result)
    }

    /// What an append's `result` means for the store.
    fn logged(&mut self, result: Result<()>) -> Result<()> {
        let aof_poisoned = self.writer().is_poisoned();
        if result.is_err() && aof_poisoned {
            self.poison_with(&result);
        }
        if canary!(AckFailedAppend) && matches!(result, Err(Error::Io { op: IoOp::Write, .. })) && !aof_poisoned {
            // Planted: the write was cut back, and acknowledged anyway.
            return Ok(());
        }
        result
    }

    /// Poison on any error: for steps where every failure is fatal.
    fn poison_on_error<T>(&mut self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.poison_with(&result);
        }
        result
    }

    fn poison_with<T>(&mut self, result: &Result<T>) {
        if let Err(e) = result {
            self.poison(e);
        }
    }

    /// Refuse every later write: the first fatal failure is the cause.
    fn poison(&mut self, error: &Error) {
        if self.poisoned.is_none() {
            self.poisoned = Some(error.to_string());
        }
    }

    /// Compact the manifest if dead records dominate it (see
    /// `manifest/compact.rs`); whether it did. Called where records were
    /// just DROPped: after a rewrite's retirement and at the end of an
    /// open. Never on a read-only store, and never while a point-in-time
    /// open's sweep is pending: nothing is removed after damage, and
    /// compaction removes the ledger's history (the DROPs an operator may
    /// want to read). A failure poisons the store, as the manifest is.
    fn compact_manifest_if_due(&mut self) -> Result<bool> {
        if self.is_read_only() || self.sweep_pending || !self.manifest.compaction_due() {
            return Ok(false);
        }
        assert!(self.poisoned.is_none(), "a poisoned store compacts nothing");
        let vfs = self.vfs.clone();
        let compacted = self.manifest.compact(vfs.as_ref());
        self.poison_on_error(compacted)?;
        Ok(true)
    }

    /// Wrap a Vfs call's error with its operation and path.
    fn io<T>(op: IoOp, path: &Path, result: std::io::Result<T>) -> Result<T> {
        result.map_err(|e| Error::io(op, path, e))
    }
}
