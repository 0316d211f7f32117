//! # The target kit: test your own transactional key-value engine
//!
//! Everything the simulator does for the engines in this repository —
//! the swarm-drawn workload, the reference model with its committed and
//! durable history, the durability oracle, the random mode with power
//! losses and I/O faults on the simulated disk, shrinking, `.ops` replay,
//! exhaustive crash exploration (`explore`, depth 2 and `--faults`
//! included), `--check-determinism`, JSON summaries and `merge` — for any
//! engine that looks like a transactional, ordered key-value store, at
//! the cost of one [`Adapter`].
//!
//! The adapter is small on purpose: open the engine over the simulated
//! disk (any [`Vfs`]), apply one [`Op`], read what is committed, close —
//! and declare what each durability [`Level`] promises. The kit owns the
//! loop: it reseeds the disk's faults before every operation (so
//! shrinking keeps the faults of the operations it keeps), catches
//! panics, loses the power, reopens, holds what came back to the model,
//! and records runs for the explorer. An adapter never sees a crash: to
//! it, the engine is simply opened again.
//!
//! ```no_run
//! use std::process::ExitCode;
//! # use sim::kit::*;
//! # #[derive(Clone)]
//! # struct MyAdapter;
//! # impl Adapter for MyAdapter {
//! #     type Db = ();
//! #     type Config = ();
//! #     fn name(&self) -> &'static str { "mine" }
//! #     fn levels(&self) -> &'static [Level] { &[Level { name: "sync", promise: Promise::Durable }] }
//! #     fn configure(&self, _: &mut dyn rand::RngCore) {}
//! #     fn open(&self, _: &Env<'_, ()>) -> Result<(), KitError> { Ok(()) }
//! #     fn apply(&self, _: &mut (), _: Op<'_>) -> Result<Reply, KitError> { Ok(Reply::Done) }
//! #     fn read_committed(&self, _: &mut (), _: usize) -> Result<Rows, KitError> { Ok(Rows::new()) }
//! #     fn close(&self, _: ()) -> Result<(), KitError> { Ok(()) }
//! # }
//! fn main() -> ExitCode {
//!     // `--seed N`, `--seeds A..B`, `--shrink`, `--replay F`, `explore ...`,
//!     // `--json`, `merge ...`: the simulator's whole command line.
//!     sim::kit::main(MyAdapter)
//! }
//! ```
//!
//! `sim/examples/logkv/` is a whole engine (`store.rs`) and its adapter (`main.rs`), and
//! `TESTING-YOUR-ENGINE.md` walks through writing one; `sim/src/systems/redb/`
//! is redb's.
//!
//! # The contract the kit checks
//! Tables of byte keys to byte values ([`TableSpec`]); one write
//! transaction at a time, begun implicitly by the first operation that
//! needs it; reads see the open write transaction's own writes, and the
//! committed state when none is open. After a power loss (or a reopen
//! after an I/O error) the content must be a state the declared promises
//! allow (see [`Promise`]): never a mix of two commits, never a state no
//! commit had. A refusal to open is accepted only after damage the disk
//! announced, and only as [`ErrorKind::Corrupt`]; an error with no fault
//! injected is a failure; a panic is a failure.
//!
//! [`Vfs`]: vfs::Vfs

mod config;
pub mod crash_os;
mod damage;
mod explore;
mod model;
mod run;
mod target;
mod workload;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use engine::vfs::Vfs;

/// The file-system seam an engine under test talks to (`Env::vfs`): the
/// segsim engine's `Vfs`, re-exported so that an adapter needs no path
/// dependency of its own on `engine`. Its contract — an fsync that failed
/// dropped the dirty data (fsyncgate), re-read before trusting a bad
/// checksum — is in [`vfs::Vfs`]'s docs.
pub use engine::vfs;

pub use crate::cli::kit::main;
pub use config::{Harsh, KitConfig};
pub use model::{Accepted, Model, State};
pub use target::{Kit, KitSettings};
pub use workload::{KitOp, PlannedKitOp};

/// One table's content: keys to values, in byte order.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// What a durability level promises about a commit that returned `Ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    /// It survives any power loss (and so does every commit before it).
    Durable,
    /// A power loss may roll it back, never half-apply it: the recovered
    /// content is some committed state between the last durable commit
    /// and the last acknowledged one.
    Eventual,
    /// It lives in memory until a later durable commit or a clean close
    /// persists it: a power loss before then returns to the last durable
    /// commit, and the commit never survives on its own. (redb's
    /// `Durability::None`.)
    Volatile,
    /// Nothing: after a power loss the content may be anything, even a
    /// half-applied commit, and the engine may refuse to open. Measured
    /// and counted (`unpromised` in the summary), never failed. (SQLite
    /// with `synchronous=OFF`.)
    Nothing,
}

impl Promise {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Promise::Durable => "durable",
            Promise::Eventual => "eventual",
            Promise::Volatile => "volatile",
            Promise::Nothing => "nothing",
        }
    }
}

/// One way to commit, as the engine names it, and what it promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// Printed in operation lines (`COMMIT <name>`): letters, digits and
    /// `-`, no spaces.
    pub name: &'static str,
    /// What a commit at this level that returned `Ok` promises.
    pub promise: Promise,
}

/// How a table's keys are drawn and printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Printable tokens (`k17`), handed over as their bytes.
    Bytes,
    /// Numbers spread over the whole `u64` range, handed over as 8
    /// big-endian bytes (so byte order is numeric order) and printed in
    /// decimal.
    U64,
}

/// One table of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSpec {
    /// Its name in operation lines.
    pub name: &'static str,
    /// Its keys.
    pub keys: KeyKind,
}

/// The table a kit declares when the adapter declares none of its own.
pub const ONE_TABLE: &[TableSpec] = &[TableSpec { name: "t0", keys: KeyKind::Bytes }];

/// A maintenance operation the engine offers (compaction, checkpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maintenance {
    /// Printed in operation lines (upper-cased): `COMPACT`.
    pub name: &'static str,
    /// Whether it aborts the open write transaction first and, when it
    /// returns `Ok`, has made everything committed durable (redb's
    /// `compact()` does). If not, it must change no content.
    pub makes_durable: bool,
}

/// A bug the adapter can plant under its engine, to prove the checks can
/// fail (`--plant NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plant {
    /// The command-line name.
    pub name: &'static str,
    /// What it does, for `--help` and reports.
    pub what: &'static str,
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

/// A persistence hazard the engine documents ([`Adapter::hazards`]): it
/// fsyncs data in a file whose name is not durable yet (created or renamed
/// with no directory fsync since) and then relies on it, or acknowledges,
/// and says so in its documentation — a durability level that does not
/// sync a journal's directory entry, say. The simulated disk flags every
/// such moment; a declared one is reported (counted in `hazards`), an
/// undeclared one fails the run (check `hazard`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentedHazard {
    /// The files it concerns: names ending with this (`-journal`).
    pub file_suffix: &'static str,
    /// Where the engine documents it, for the report.
    pub documented: &'static str,
}

impl DocumentedHazard {
    /// Whether a hazard in the file named `file` (a path) is this one.
    pub fn covers(&self, file: &str) -> bool {
        file.ends_with(self.file_suffix)
    }
}

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

/// One operation for the engine. Table indices are positions in
/// [`Adapter::tables`]; keys of a [`KeyKind::U64`] table are 8 big-endian
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// Insert or overwrite in the write transaction (begin one if none is open).
    Put {
        /// The table, by its position in [`Adapter::tables`].
        table: usize,
        /// The key's bytes (8 big-endian for a [`KeyKind::U64`] table).
        key: &'a [u8],
        /// The value's bytes.
        value: &'a [u8],
    },
    /// Remove in the write transaction (begin one if none is open).
    Delete {
        /// The table, by its position in [`Adapter::tables`].
        table: usize,
        /// The key to remove (absent is not an error).
        key: &'a [u8],
    },
    /// Read one key: in the write transaction if one is open, else the
    /// committed state.
    Get {
        /// The table, by its position in [`Adapter::tables`].
        table: usize,
        /// The key to read.
        key: &'a [u8],
    },
    /// Read a whole table, the same way.
    Scan {
        /// The table, by its position in [`Adapter::tables`].
        table: usize,
    },
    /// Commit the write transaction at [`Adapter::levels`]`[level]` (an
    /// empty one if none is open: still a commit at that level).
    Commit {
        /// The commit level, by its position in [`Adapter::levels`]: it
        /// decides what the commit promises to keep at a crash.
        level: usize,
    },
    /// Abort the write transaction, if one is open.
    Abort,
    /// The engine's [`Maintenance`] operation.
    Maintain,
}

/// What an operation answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Nothing to check (commits, aborts; puts and deletes of an engine
    /// that does not say what they replaced).
    Done,
    /// A value: a get's, or what a put replaced or a delete removed.
    Value(Option<Vec<u8>>),
    /// A scan's rows.
    Rows(Rows),
}

/// Where the engine lives, for one open.
pub struct Env<'a, C> {
    /// The simulated disk (any [`Vfs`]: the engine must do every file
    /// operation through it).
    pub vfs: Arc<dyn Vfs>,
    /// The directory that is the engine's: it exists, and its own entry is
    /// durable. A one-file engine keeps its file in it.
    pub dir: &'a Path,
    /// The seed's configuration of the engine ([`Adapter::configure`]).
    pub config: &'a C,
    /// The bug planted under the engine, if any ([`Adapter::plants`]).
    pub plant: Option<&'static str>,
    /// The simulated disk's sector size in bytes (what a power loss may
    /// tear), for an engine that asks its file system (SQLite's
    /// `xSectorSize`).
    pub sector_bytes: u64,
}

/// What the kit needs from an engine (see the module doc).
///
/// Every method runs on the one thread of one seed's run, but runs of
/// different seeds share the adapter across threads, hence `Sync`.
pub trait Adapter: Send + Sync + 'static {
    /// An open database: whatever handles the engine needs, with the open
    /// write transaction if there is one. Dropping it must release
    /// everything (the kit drops it at a power loss with every I/O
    /// failing, as with the power off).
    type Db;
    /// What a seed decides about the engine (cache sizes, options), drawn
    /// by [`Adapter::configure`].
    type Config: Clone + fmt::Debug + Send + Sync;

    /// The target's name (`--target NAME`, `.ops` files, reports).
    fn name(&self) -> &'static str;

    /// The commit levels, at least one. Each seed draws how often each is used.
    fn levels(&self) -> &'static [Level];

    /// The tables, at least one.
    fn tables(&self) -> &'static [TableSpec] {
        ONE_TABLE
    }

    /// Draw the engine's configuration for a seed.
    fn configure(&self, rng: &mut dyn rand::RngCore) -> Self::Config;

    /// Draw the configuration with `options` (`--set KEY=VALUE`, in the
    /// order given) forcing parts of it, or say which option is wrong. The
    /// draws must not depend on the options, so a forced seed is the same
    /// seed otherwise. Default: no options.
    fn configure_with(
        &self,
        rng: &mut dyn rand::RngCore,
        options: &[(String, String)],
    ) -> Result<Self::Config, String> {
        match options.first() {
            None => Ok(self.configure(rng)),
            Some((key, _)) => Err(format!("{} takes no --set options (got {key:?})", self.name())),
        }
    }

    /// What a commit at `level` promises under `config` (default: the
    /// level's declared promise). SQLite's depends on the seed's
    /// `journal_mode` and `synchronous`.
    fn promise(&self, _config: &Self::Config, level: usize) -> Promise {
        self.levels()[level].promise
    }

    /// Whether the engine documents that a commit at `level` which returned
    /// an error has been rolled back, so configured. Default `false`: a
    /// failed commit is *in doubt* — it may or may not have taken effect,
    /// never half — until a power loss's recovery, a recovery that shows it
    /// or the next acknowledged commit that changes the content settles it
    /// (the kit's model, "Outcomes in doubt"). Declare `true` only with the
    /// place the engine documents it: then the failed commit's state
    /// appearing at any later recovery fails the run.
    fn failed_commit_rolls_back(&self, _config: &Self::Config, _level: usize) -> bool {
        false
    }

    /// Whether the engine, so configured, promises to detect damage to its
    /// bytes (verify checksums): only then does the disk damage durable
    /// bytes at power losses, and a `Corrupt` refusal or a rollback to an
    /// older commit is accepted after it.
    fn detects_damage(&self, _config: &Self::Config) -> bool {
        false
    }

    /// For `sim explore --damage`: the records of the engine's file
    /// `name` (in the database directory) holding `bytes` — a durable
    /// image, what a power loss kept — in file order; `None` (the default)
    /// for a file the adapter does not describe. Each record is then
    /// damaged in turn, one at a time: a bit flipped in its middle, its
    /// bytes zeroed, the write that put it there lost (its place keeping
    /// what it held before). Explored only where the engine, so configured,
    /// [`Adapter::detects_damage`]: the damaged image must then open to a
    /// state the rule after damage allows — a refusal as corrupt, or an
    /// older committed state (a silent rollback) — never to a state no
    /// commit had. Walk the bytes as the engine's own reader would, and
    /// stop at the first record that does not parse: a torn tail holds no
    /// record to damage.
    fn records(&self, _name: &str, _bytes: &[u8]) -> Option<Vec<RecordSpan>> {
        None
    }

    /// Whether [`Adapter::records`] describes the engine's files, so that
    /// `sim explore --damage` can run.
    fn describes_records(&self) -> bool {
        false
    }

    /// Faults the engine documents that the disk does not do, left out
    /// unless asked for (`--torn-garbage`, `--read-bitflips`): `(torn
    /// sectors may hold garbage, reads may flip a bit)`. Default: both on.
    fn tolerates(&self) -> (bool, bool) {
        (true, true)
    }

    /// Workload operations per seed by default.
    fn default_ops(&self) -> u64 {
        200
    }

    /// The engine's maintenance operation, if it has one.
    fn maintenance(&self) -> Option<Maintenance> {
        None
    }

    /// Bugs the adapter can plant.
    fn plants(&self) -> &'static [Plant] {
        &[]
    }

    /// The phases the engine names through `Vfs::mark_named` (say, "log
    /// appended", "synced"): the kit aims some crashes at them
    /// (`@mark=NAME` in an operation line), and traces them. Names are
    /// letters, digits and `-`.
    fn phases(&self) -> &'static [&'static str] {
        &[]
    }

    /// The persistence hazards the engine, so configured, documents (see
    /// [`DocumentedHazard`]): reported, not failed. Default: none, so
    /// every hazard the disk flags fails the run.
    fn hazards(&self, _config: &Self::Config) -> &'static [DocumentedHazard] {
        &[]
    }

    /// The application's setup before the first open, on a fault-free
    /// disk: create the database file and make its name durable, say.
    fn create(&self, _env: &Env<'_, Self::Config>) -> Result<(), KitError> {
        Ok(())
    }

    /// Open (on a fresh directory: create) the database.
    fn open(&self, env: &Env<'_, Self::Config>) -> Result<Self::Db, KitError>;

    /// Apply one operation.
    fn apply(&self, db: &mut Self::Db, op: Op<'_>) -> Result<Reply, KitError>;

    /// The committed content of one table (not the open write
    /// transaction's), for the kit's observations. A table that does not
    /// exist is empty.
    fn read_committed(&self, db: &mut Self::Db, table: usize) -> Result<Rows, KitError>;

    /// Close cleanly: abort the open write transaction, and (if
    /// [`Adapter::close_makes_durable`]) make everything committed durable.
    fn close(&self, db: Self::Db) -> Result<(), KitError>;

    /// Whether a clean close that returned `Ok` has made every commit durable.
    fn close_makes_durable(&self) -> bool {
        true
    }

    /// Whether a `Durable` commit of a transaction that wrote nothing makes
    /// every earlier commit durable, as one that wrote does. Default `true`
    /// (redb documents that a later `Durability::Immediate` commit persists
    /// the `Durability::None` ones before it). Declare `false` for an engine
    /// that syncs nothing for an empty transaction: the kit then holds such
    /// a commit to `Eventual` — it promises nothing about the state before
    /// it, which a later power loss may still take (a failed commit that a
    /// process restart's reopen showed, say).
    fn empty_commit_makes_durable(&self) -> bool {
        true
    }
}
