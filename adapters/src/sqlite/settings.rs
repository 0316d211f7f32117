//! A seed's SQLite settings: `journal_mode`, `synchronous`, the page and
//! cache sizes and the VFS's claims, each drawn from the seed or forced by
//! `--set`, printed back as `--set` spells them; and what a commit
//! promises under each (journal_mode, synchronous), per SQLite's own
//! documentation ([`promise_of`]; SQLITE.md says why). Apart from the
//! adapter (`adapter.rs`) because these are the knobs a run is described
//! by, read by the VFS, the connection and the spec alike.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use simkit::{Promise, Rng, RngCore};

/// `PRAGMA journal_mode` (the rollback modes and WAL; MEMORY and OFF keep
/// no journal on disk and promise nothing at a crash).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JournalMode {
    /// A rollback journal, deleted at each commit (SQLite's default).
    Delete,
    /// A rollback journal, truncated to zero at each commit.
    Truncate,
    /// A rollback journal, kept and its header zeroed at each commit.
    Persist,
    /// A write-ahead log, checkpointed into the database now and then.
    Wal,
}

/// `PRAGMA synchronous`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Synchronous {
    /// No fsync at all: a crash can lose or corrupt committed data.
    Off,
    /// Fsync at the critical moments only: in WAL mode a crash can lose
    /// the last commits, but not corrupt the database.
    Normal,
    /// Fsync before each commit completes (SQLite's default).
    Full,
    /// As `Full`, and the directory fsynced after a rollback journal is
    /// deleted.
    Extra,
}

impl JournalMode {
    const ALL: [JournalMode; 4] = [JournalMode::Delete, JournalMode::Truncate, JournalMode::Persist, JournalMode::Wal];

    /// The pragma's word.
    pub fn name(self) -> &'static str {
        match self {
            JournalMode::Delete => "delete",
            JournalMode::Truncate => "truncate",
            JournalMode::Persist => "persist",
            JournalMode::Wal => "wal",
        }
    }
}

impl Synchronous {
    const ALL: [Synchronous; 4] = [Synchronous::Off, Synchronous::Normal, Synchronous::Full, Synchronous::Extra];

    /// The pragma's word.
    pub fn name(self) -> &'static str {
        match self {
            Synchronous::Off => "off",
            Synchronous::Normal => "normal",
            Synchronous::Full => "full",
            Synchronous::Extra => "extra",
        }
    }
}

/// Opens so far in one run: each connection's PRNG stream starts apart,
/// as a long-running process's would continue. Shared by the clones of
/// one run's configuration; not part of what the configuration says.
#[derive(Clone, Default)]
pub struct OpenCount(pub(super) Arc<AtomicU64>);

impl std::fmt::Debug for OpenCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenCount")
    }
}

/// A seed's SQLite settings.
#[derive(Clone, Debug)]
pub struct SqliteConfig {
    /// `PRAGMA journal_mode`: with `synchronous`, it decides what a
    /// commit promises.
    pub journal_mode: JournalMode,
    /// `PRAGMA synchronous`.
    pub synchronous: Synchronous,
    /// `PRAGMA page_size`, set when the database is created.
    pub page_bytes: u32,
    /// `PRAGMA cache_size`, in pages.
    pub cache_pages: u32,
    /// The VFS claims `SQLITE_IOCAP_POWERSAFE_OVERWRITE`, as os_unix does
    /// by default (`--set powersafe=off` claims nothing).
    pub powersafe: bool,
    /// `xSectorSize` reports the disk's own sector size (`--set
    /// sector=disk`) instead of os_unix's 4096 (`sector=4096`, the default).
    pub sector_from_disk: bool,
    /// Every commit declared durable (`--set claim=durable`; SQLITE.md).
    pub claim_durable: bool,
    /// Every `xSync` an `fdatasync`, as SQLite built with `HAVE_FDATASYNC`
    /// (distributions' builds) does (`--set fdatasync=on`); off, the
    /// bundled build's `fsync` (vfs.rs).
    pub fdatasync: bool,
    /// Seeds each connection's PRNG stream.
    pub prng_seed: u64,
    /// Opens so far in this run, so each connection's PRNG stream starts
    /// apart.
    pub opens: OpenCount,
}

/// What a commit promises under `journal_mode` and `synchronous`, per
/// SQLite's documentation (pragma.html#pragma_synchronous, wal.html,
/// atomiccommit.html; the reasoning is SQLITE.md's):
///
/// - `OFF`: nothing ("the database might become corrupted" at a power loss).
/// - WAL with `FULL`/`EXTRA`: durable ("the WAL file is synchronized after
///   each transaction commit"). WAL with `NORMAL`: consistent, not durable
///   ("might roll back following a power loss").
/// - `DELETE` with `FULL`: consistent, not durable. The commit is the
///   journal's unlink, and only `EXTRA` syncs the directory after it
///   ("EXTRA provides additional durability if the commit is followed
///   closely by a power loss"). `DELETE` with `EXTRA`: durable.
/// - `TRUNCATE`/`PERSIST` with `FULL`/`EXTRA`: durable: the pager syncs the
///   journal after truncating it or zeroing its header (`fullSync`).
/// - rollback modes with `NORMAL`: nothing. The docs: "a very small
///   (though non-zero) chance that a power failure at just the wrong time
///   could corrupt the database". The final journal sync is skipped, and
///   SQLITE.md has a four-operation repro of that corruption on our disk
///   (TRUNCATE: a lost truncate revives the old journal under the next
///   transaction's torn records, which its sampled checksum accepts).
pub fn promise_of(journal_mode: JournalMode, synchronous: Synchronous) -> Promise {
    use JournalMode::*;
    use Synchronous::*;
    match (journal_mode, synchronous) {
        (_, Off) | (Delete | Truncate | Persist, Normal) => Promise::Nothing,
        (Wal, Full | Extra) | (Delete, Extra) | (Truncate | Persist, Full | Extra) => Promise::Durable,
        (Wal, Normal) | (Delete, Full) => Promise::Eventual,
    }
}

impl SqliteConfig {
    /// A seed's settings, drawn from `rng` (the adapter's `configure`).
    pub(super) fn drawn(rng: &mut dyn RngCore) -> SqliteConfig {
        SqliteConfig {
            journal_mode: JournalMode::ALL[rng.gen_range(0..4)],
            synchronous: Synchronous::ALL[rng.gen_range(0..4)],
            page_bytes: [512, 1024, 4096, 8192][rng.gen_range(0..4)],
            cache_pages: [8, 16, 100, 2000][rng.gen_range(0..4)],
            powersafe: true,
            sector_from_disk: false,
            claim_durable: false,
            fdatasync: false,
            prng_seed: rng.next_u64(),
            opens: OpenCount::default(),
        }
    }

    /// [`SqliteConfig::drawn`], then each `--set` option in `options`
    /// forced (the adapter's `configure_with`), or why one does not read.
    pub(super) fn drawn_with(rng: &mut dyn RngCore, options: &[(String, String)]) -> Result<SqliteConfig, String> {
        let mut config = SqliteConfig::drawn(rng);
        for (key, value) in options {
            match key.as_str() {
                "journal_mode" => {
                    config.journal_mode = option(key, value, |v| JournalMode::ALL.into_iter().find(|m| m.name() == v))?
                }
                "synchronous" => {
                    config.synchronous = option(key, value, |v| Synchronous::ALL.into_iter().find(|s| s.name() == v))?
                }
                "page_size" => {
                    config.page_bytes = option(key, value, |v| {
                        v.parse().ok().filter(|p: &u32| p.is_power_of_two() && (512..=65536).contains(p))
                    })?
                }
                "cache_size" => config.cache_pages = option(key, value, |v| v.parse().ok().filter(|c| *c > 0))?,
                "powersafe" => config.powersafe = option(key, value, on_off)?,
                "sector" => {
                    config.sector_from_disk = option(key, value, |v| match v {
                        "disk" => Some(true),
                        "4096" => Some(false),
                        _ => None,
                    })?
                }
                "claim" => config.claim_durable = option(key, value, |v| (v == "durable").then_some(true))?,
                "fdatasync" => config.fdatasync = option(key, value, on_off)?,
                _ => {
                    return Err(format!(
                        "sqlite takes --set journal_mode=, synchronous=, page_size=, cache_size=, powersafe=, \
                         sector=disk|4096, claim=durable, fdatasync= (got {key:?})"
                    ))
                }
            }
        }
        Ok(config)
    }

    /// The drawn settings as `--set` spells them (the PRNG seed and the
    /// open count are the run's, not settings).
    pub(super) fn described(&self) -> Vec<(String, String)> {
        let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
        let mut pairs = vec![
            ("journal_mode", self.journal_mode.name().to_string()),
            ("synchronous", self.synchronous.name().to_string()),
            ("page_size", self.page_bytes.to_string()),
            ("cache_size", self.cache_pages.to_string()),
            ("powersafe", on_off(self.powersafe)),
            ("sector", if self.sector_from_disk { "disk" } else { "4096" }.to_string()),
        ];
        if self.claim_durable {
            pairs.push(("claim", "durable".to_string()));
        }
        pairs.into_iter().map(|(key, value)| (key.to_string(), value)).collect()
    }
}

/// `--set` option `key` parsed from `value` by `parse`, or why not.
fn option<T>(key: &str, value: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T, String> {
    parse(value).ok_or_else(|| format!("--set {key}={value}: not a value sqlite's {key} takes"))
}

fn on_off(value: &str) -> Option<bool> {
    match value {
        "on" | "true" | "1" => Some(true),
        "off" | "false" | "0" => Some(false),
        _ => None,
    }
}
