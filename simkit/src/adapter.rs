//! The [`Adapter`]: what the kit needs from an engine — a client (create,
//! open, one method per operation, read what is committed, close) and one
//! [`Spec`] per configuration — with the types it speaks: [`Env`] (where
//! the engine lives for one open), [`KitError`] (an engine error as the
//! adapter classifies it), [`Previous`] and [`Rows`] (typed replies).
//!
//! Each operation has its own method and its own reply type, so an adapter
//! cannot answer a read with the wrong kind of value; the kit holds every
//! reply to its model (`run.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rand::RngCore;
use vfs::Vfs;

use super::spec::{Plant, Spec};

/// One table's content: keys to values, in byte order.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// How an engine error is to be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The engine says the bytes on disk are damaged: accepted (as a
    /// refusal) only after damage the disk announced.
    Corrupt,
    /// An I/O error reached the caller: accepted only when the disk
    /// injected a fault in this operation; the kit then reopens.
    Io,
    /// Anything else: accepted only when a fault was injected.
    Other,
    /// Another client holds a lock the operation needs (`SQLITE_BUSY`):
    /// nothing changed, and the operation may be retried. Accepted only
    /// where the spec's readers say the writer waits for them
    /// ([`Readers::writer_waits`](super::Readers::writer_waits)).
    Busy,
    /// The engine refuses because a failure it met earlier, where no
    /// caller heard it (its own background work: a flush, a compaction),
    /// poisoned it until it is reopened (fjall's `Error::Poisoned`).
    /// Accepted only where the spec declares it
    /// ([`Spec::poisoned_after_fault`](super::Spec::poisoned_after_fault))
    /// and a fault was injected since the open in an operation that
    /// returned `Ok`; the kit then reopens. Counted (`poisoned`).
    Poisoned,
}

/// An engine error as the adapter classifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KitError {
    /// How to take it.
    pub kind: ErrorKind,
    /// The engine's own words, for reports.
    pub message: String,
}

impl KitError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl fmt::Display) -> KitError {
        KitError { kind, message: message.to_string() }
    }
}

impl fmt::Display for KitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An I/O error as the kit takes it: `InvalidData` is the engine refusing
/// its own bytes ([`ErrorKind::Corrupt`]: the `io::Error` kind Rust
/// engines use for a bad checksum or a format they cannot read); any other
/// kind is [`ErrorKind::Io`]. So `?` on an engine's `io::Result` classifies
/// corruption right; an engine with its own error type maps it itself.
impl From<std::io::Error> for KitError {
    fn from(error: std::io::Error) -> KitError {
        let kind = match error.kind() {
            std::io::ErrorKind::InvalidData => ErrorKind::Corrupt,
            _ => ErrorKind::Io,
        };
        KitError::new(kind, error)
    }
}

/// What a put or a delete says about the key's value before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    /// The engine does not say (the kit checks nothing).
    NotSaid,
    /// The value it replaced or removed (`None`: the key was absent). The
    /// kit checks it against its model.
    Was(Option<Vec<u8>>),
}

/// One record of one of the engine's files, where `sim explore --damage`
/// damages it ([`Adapter::records`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordSpan {
    /// Where the record starts in its file.
    pub offset_bytes: u64,
    /// Its length, header and checksum included.
    pub len_bytes: u64,
    /// What it is, for reports (`"commit record 3"`).
    pub what: String,
}

/// Where the engine lives, for one open.
pub struct Env<'a, A: Adapter + ?Sized> {
    /// The simulated disk (any [`Vfs`]: the engine must do every file
    /// operation through it).
    pub vfs: Arc<dyn Vfs>,
    /// The directory that is the engine's: it exists, and its own entry is
    /// durable (the kit made it). Names made in it by [`Adapter::create`]
    /// are durable too (the kit fsyncs the directory after it); any name
    /// the engine makes later is the engine's to make durable.
    pub dir: &'a Path,
    /// The seed's configuration of the engine ([`Adapter::configure`]).
    pub config: &'a A::Config,
    /// The bug planted under the engine, if any (`--plant`).
    pub plant: Option<A::Plant>,
    /// The simulated disk's sector size in bytes (what a power loss may
    /// tear), for an engine that asks its file system (SQLite's
    /// `xSectorSize`).
    pub sector_bytes: u64,
}

/// What the kit needs from an engine (see the [crate] doc).
///
/// Tables are numbered by their position in [`Spec::tables`], commit
/// levels by theirs in [`Spec::levels`]; keys of a
/// [`super::KeyKind::U64`] table are 8 big-endian bytes. One write
/// transaction at a time, begun implicitly by the first put or delete that
/// needs it; reads see the open write transaction's own writes, and the
/// committed state when none is open. An engine whose spec declares
/// [`super::Readers`] also serves read-only transactions of other
/// clients beside it ([`ReadTransactions`], held through
/// [`Adapter::readers`]); one that declares [`Spec::maintenance`] runs it
/// through [`Maintain`] ([`Adapter::maintenance`]).
///
/// Every method runs on the one thread of one seed's run, but runs of
/// different seeds share the adapter across threads, hence `Sync`;
/// [`crate::main`] clones it for its replay paths, hence `Clone`
/// there.
pub trait Adapter: Send + Sync + 'static {
    /// An open database: whatever handles the engine needs, with the open
    /// write transaction if there is one. Dropping it must release
    /// everything (the kit drops it at a power loss with every I/O
    /// failing, as with the power off).
    type Db;
    /// What a seed decides about the engine (cache sizes, options), drawn
    /// by [`Adapter::configure`].
    type Config: Clone + fmt::Debug + Send + Sync;
    /// The bugs the adapter can plant ([`super::NoPlant`] for none).
    type Plant: Plant;

    /// The target's name (`--target NAME`, `.ops` files, reports).
    fn name(&self) -> &'static str;

    /// Draw the engine's configuration for a seed. `rng` is
    /// [`simkit::rand`](crate::rand)'s: use its `Rng` trait
    /// (`simkit::rand::Rng`) to draw, no `rand` dependency of your own
    /// needed.
    fn configure(&self, rng: &mut dyn RngCore) -> Self::Config;

    /// Draw the configuration with `options` (`--set KEY=VALUE`, in the
    /// order given) forcing parts of it, or say which option is wrong. The
    /// draws must not depend on the options, so a forced seed is the same
    /// seed otherwise. Default: no options.
    fn configure_with(&self, rng: &mut dyn RngCore, options: &[(String, String)]) -> Result<Self::Config, String> {
        match options.first() {
            None => Ok(self.configure(rng)),
            Some((key, _)) => Err(format!("{} takes no --set options (got {key:?})", self.name())),
        }
    }

    /// What the engine, so configured, is and promises (see [`Spec`]).
    fn spec(&self, config: &Self::Config) -> Spec;

    /// The engine's settings a seed drew, for reports: every failure and
    /// a one-seed summary name them (`drew: ...`), the first thing a
    /// reader of a failure asks. `(key, value)` pairs, spelled as `--set
    /// KEY=VALUE` takes them where the adapter takes options, so the draw
    /// can be pinned from the report. Default: the configuration's
    /// `Debug` as one pair (nothing for `()`).
    fn describe_config(&self, config: &Self::Config) -> Vec<(String, String)> {
        let debug = format!("{config:?}");
        match debug.as_str() {
            "()" => Vec::new(),
            _ => vec![("config".to_string(), debug)],
        }
    }

    /// For `sim explore --damage` (with [`Spec::describes_records`]): the
    /// records of the engine's file `name` (in the database directory)
    /// holding `bytes` — a durable image, what a power loss kept — in file
    /// order; `None` (the default) for a file the adapter does not
    /// describe. Each record is then damaged in turn, one at a time: a bit
    /// flipped in its middle, its bytes zeroed, the write that put it
    /// there lost (its place keeping what it held before). Explored only
    /// where the engine, so configured, [`Spec::detects_damage`]: the
    /// damaged image must then open to a state the rule after damage
    /// allows — a refusal as corrupt, or an older committed state (a
    /// silent rollback) — never to a state no commit had. Walk the bytes
    /// as the engine's own reader would, and stop at the first record that
    /// does not parse: a torn tail holds no record to damage.
    fn records(&self, _name: &str, _bytes: &[u8]) -> Option<Vec<RecordSpan>> {
        None
    }

    /// The application's setup before the first open, once, on a
    /// fault-free disk: create the database file if the engine's own open
    /// does not (redb's `Builder` opens a file it is given), say. The kit
    /// then fsyncs the directory, so every name made here is durable
    /// before the workload starts. Default: nothing.
    fn create(&self, _env: &Env<'_, Self>) -> Result<(), KitError> {
        Ok(())
    }

    /// Open (on a fresh directory: create) the database.
    fn open(&self, env: &Env<'_, Self>) -> Result<Self::Db, KitError>;

    /// Insert or overwrite in the write transaction (begin one if none is
    /// open).
    fn put(&self, db: &mut Self::Db, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError>;

    /// Remove in the write transaction (begin one if none is open); an
    /// absent key is not an error.
    fn delete(&self, db: &mut Self::Db, table: usize, key: &[u8]) -> Result<Previous, KitError>;

    /// Read one key: in the write transaction if one is open, else the
    /// committed state.
    fn get(&self, db: &mut Self::Db, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError>;

    /// Read a whole table, the same way.
    fn scan(&self, db: &mut Self::Db, table: usize) -> Result<Rows, KitError>;

    /// Commit the write transaction at [`Spec::levels`]`[level]` (an empty
    /// one if none is open: still a commit at that level, which decides
    /// what it promises to keep at a crash).
    fn commit(&self, db: &mut Self::Db, level: usize) -> Result<(), KitError>;

    /// Abort the write transaction, if one is open.
    fn abort(&self, db: &mut Self::Db) -> Result<(), KitError>;

    /// The engine's [`Spec::maintenance`] operation, if it has one: `Some(self)`
    /// from an adapter that implements [`Maintain`] (default `None`). The
    /// kit asserts, before any seed runs, that this and the spec agree.
    fn maintenance(&self) -> Option<&dyn Maintain<Self::Db>> {
        None
    }

    /// The engine's read-only transactions beside the writer
    /// ([`Spec::readers`]), if it has them: `Some(self)` from an adapter that
    /// implements [`ReadTransactions`] (default `None`). The kit asserts,
    /// before any seed runs, that this and the spec agree.
    fn readers(&self) -> Option<&dyn ReadTransactions<Self::Db>> {
        None
    }

    /// The committed content of one table (not the open write
    /// transaction's), for the kit's observations. A table that does not
    /// exist is empty.
    fn read_committed(&self, db: &mut Self::Db, table: usize) -> Result<Rows, KitError>;

    /// Close cleanly: abort the open write transaction, and (if
    /// [`Spec::close_makes_durable`]) make everything committed durable.
    fn close(&self, db: Self::Db) -> Result<(), KitError>;
}

/// An engine's maintenance operation (compaction, checkpoint): the
/// capability behind [`Spec::maintenance`]. An adapter whose spec declares
/// one implements it and returns `Some(self)` from
/// [`Adapter::maintenance`].
pub trait Maintain<Db>: Send + Sync {
    /// Run the maintenance operation. If it [`makes_durable`], the kit
    /// calls it after an [`Adapter::abort`], and an `Ok` means everything
    /// committed is durable; if not, it must change no content.
    ///
    /// [`makes_durable`]: super::Maintenance::makes_durable
    fn maintain(&self, db: &mut Db) -> Result<(), KitError>;
}

/// Read-only transactions of other clients beside the one writer: the
/// capability behind [`Spec::readers`]. An adapter whose spec declares
/// readers implements it and returns `Some(self)` from
/// [`Adapter::readers`]; the kit draws readers with `--clients N`.
pub trait ReadTransactions<Db>: Send + Sync {
    /// Begin reader `reader`'s read-only transaction, on a connection of
    /// its own: from now until [`ReadTransactions::end_read`] its reads
    /// must see the state committed at this moment, whatever the writer
    /// does meanwhile (see [`super::Readers`]). The kit calls it with
    /// `reader` in `1..=readers.max`, never for a reader already open; a
    /// crash, a clean close or a reopen ends every reader (the handles
    /// dropped with `Db`).
    fn begin_read(&self, db: &mut Db, reader: usize) -> Result<(), KitError>;

    /// Read one key in reader `reader`'s open transaction.
    fn reader_get(&self, db: &mut Db, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError>;

    /// Read a whole table in reader `reader`'s open transaction.
    fn reader_scan(&self, db: &mut Db, reader: usize, table: usize) -> Result<Rows, KitError>;

    /// End reader `reader`'s open transaction.
    fn end_read(&self, db: &mut Db, reader: usize) -> Result<(), KitError>;

    /// The lock the writer's connection holds now, by the engine's own
    /// name (`"RESERVED"`), as the engine's lock table records it; `None`
    /// (the default): the adapter does not say. The kit asks when a
    /// reader's begin was refused, and holds the answer to
    /// [`super::Readers::refused_at`].
    fn writer_lock(&self, _db: &mut Db) -> Option<&'static str> {
        None
    }

    /// Client `writer` (a connection of its own, numbered after the
    /// readers; a reader's, its read transaction ended first, works the
    /// same) runs a write transaction of its own, in turn with the
    /// kit's writer: begin it as the engine's writers do when they mean to
    /// write (SQLite's `BEGIN IMMEDIATE`), put `value` at `key` of
    /// `table`, and commit at the spec's first level; refused as busy at
    /// the begin or the commit, it rolls back and gives up (see
    /// [`WriteOutcome`]). `None` (the default): the engine has one writer.
    /// The kit holds a refusal to [`super::Readers::second_writer_refused_at`]
    /// and a commit to its model, as the writer's own.
    fn write_commit(
        &self,
        _db: &mut Db,
        _writer: usize,
        _write: &OtherWrite,
    ) -> Option<Result<WriteOutcome, KitError>> {
        None
    }

    /// Client `client` (as for [`ReadTransactions::write_commit`]) runs
    /// the engine's checkpoint in mode `mode` (an index into
    /// the engine's modes: SQLite's `PASSIVE`, `FULL`, `RESTART`,
    /// `TRUNCATE`), which changes no content; a checkpoint the engine
    /// reports blocked is `Ok`. `None` (the default): only the writer
    /// checkpoints.
    fn checkpoint(&self, _db: &mut Db, _client: usize, _mode: usize) -> Option<Result<(), KitError>> {
        None
    }

    /// Close client `client`'s connection (its read transaction, if open,
    /// ended with it) while the others stay open, as a pool does; its next
    /// begin opens one afresh. `None` (the default): connections close
    /// only with the database.
    fn close_client(&self, _db: &mut Db, _client: usize) -> Option<Result<(), KitError>> {
        None
    }

    /// The readers as a handle of their own, that the kit can step while
    /// the writer's operation is suspended at one of its I/Os
    /// (`--interleave`: the engine calls back into the disk, and the kit
    /// runs a reader's step there before the I/O goes on). `None` (the
    /// default): the engine's readers live inside its `Db`, and they step
    /// only between the writer's operations.
    fn beside(&self, _db: &mut Db) -> Option<Arc<dyn ReadersBeside>> {
        None
    }
}

/// A second writer's one write ([`ReadTransactions::write_commit`]):
/// `value` put at `key` of `table`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtherWrite {
    /// The table written.
    pub table: usize,
    /// The key (a `u64` table's: 8 big-endian bytes).
    pub key: Vec<u8>,
    /// The value it now holds.
    pub value: Vec<u8>,
}

/// What a second writer's transaction came to
/// ([`ReadTransactions::write_commit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// It committed (acknowledged).
    Committed,
    /// Its begin was refused as busy; nothing changed.
    RefusedAtBegin,
    /// Its commit was refused as busy and it rolled back; nothing changed.
    RefusedAtCommit,
}

/// Readers the kit steps from inside the writer's operation
/// ([`ReadTransactions::beside`]): the same four calls as
/// [`ReadTransactions`], on state the adapter shares with its `Db`, made
/// on the writer's thread while the writer waits inside one of its I/Os.
/// An engine that holds a lock of its own across that I/O must not take
/// it again here (SQLite's connections share nothing but the file locks
/// and the wal-index, which the VFS holds only inside each call).
pub trait ReadersBeside: Send + Sync {
    /// As [`ReadTransactions::begin_read`].
    fn begin_read(&self, reader: usize) -> Result<(), KitError>;
    /// As [`ReadTransactions::reader_get`].
    fn reader_get(&self, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError>;
    /// As [`ReadTransactions::reader_scan`].
    fn reader_scan(&self, reader: usize, table: usize) -> Result<Rows, KitError>;
    /// As [`ReadTransactions::end_read`].
    fn end_read(&self, reader: usize) -> Result<(), KitError>;
    /// As [`ReadTransactions::writer_lock`].
    fn writer_lock(&self) -> Option<&'static str>;

    /// Reader `reader` tries to become a second writer (its read
    /// transaction ended first), and gives up at once if it may:
    /// `Ok(true)` granted, `Ok(false)` refused as busy. `None` (the
    /// default): the engine's readers never try. A grant while the writer
    /// is in a write transaction ([`ReadersBeside::writer_writing`]) fails
    /// the run: one writer at a time is every engine's promise here.
    fn try_write(&self, _reader: usize) -> Option<Result<bool, KitError>> {
        None
    }

    /// As [`ReadTransactions::write_commit`], from inside the writer's
    /// operation (`--interleave`): granted only where the writer is not in
    /// a write transaction.
    fn write_commit(&self, _writer: usize, _write: &OtherWrite) -> Option<Result<WriteOutcome, KitError>> {
        None
    }

    /// As [`ReadTransactions::checkpoint`], from inside the writer's
    /// operation.
    fn checkpoint(&self, _client: usize, _mode: usize) -> Option<Result<(), KitError>> {
        None
    }

    /// As [`ReadTransactions::close_client`], from inside the writer's
    /// operation.
    fn close_client(&self, _client: usize) -> Option<Result<(), KitError>> {
        None
    }

    /// Whether the writer is in a write transaction now, by the engine's
    /// own account (not its lock table, which a bug may have emptied);
    /// `None`: the adapter does not say.
    fn writer_writing(&self) -> Option<bool> {
        None
    }

    /// Whether a step may run only where the engine announces it
    /// (`Vfs::pause_point`: `true`), not at each of its I/Os that change
    /// the disk (`false`, the default): for an engine that holds, across
    /// its I/Os, a lock that a reader takes (redb's header lock across its
    /// header writes; the redb adapter's backend lock across its fsyncs),
    /// where a step on the writer's thread would wait on itself.
    fn pauses_where_announced(&self) -> bool {
        false
    }
}

/// Assert that `adapter`'s capabilities and its reference `spec` agree: a
/// spec that declares maintenance or readers comes with the capability,
/// and a capability with the spec's declaration (else the kit would never
/// call it). Called where a kit target is made ([`crate::Kit::new`]), so
/// a disagreement is the adapter's mistake, found before any seed runs.
pub(crate) fn check_capabilities<A: Adapter>(adapter: &A, spec: &Spec) {
    let name = adapter.name();
    assert_eq!(
        spec.maintenance.is_some(),
        adapter.maintenance().is_some(),
        "{name}: the spec's maintenance and Adapter::maintenance disagree (declare both or neither)"
    );
    assert_eq!(
        spec.readers.is_some(),
        adapter.readers().is_some(),
        "{name}: the spec's readers and Adapter::readers disagree (declare both or neither)"
    );
}

/// `adapter`'s maintenance, for an operation the spec's maintenance drew.
pub(crate) fn maintenance_of<A: Adapter>(adapter: &A) -> &dyn Maintain<A::Db> {
    adapter.maintenance().expect("the spec declares maintenance, so the adapter has it (check_capabilities)")
}

/// `adapter`'s readers, for a reader the spec's readers drew.
pub(crate) fn readers_of<A: Adapter>(adapter: &A) -> &dyn ReadTransactions<A::Db> {
    adapter.readers().expect("the spec declares readers, so the adapter has them (check_capabilities)")
}
