//! jammdb as the kit drives it, on the engine's thread: the open `DB`,
//! the open write's pending changes, and each kit operation in jammdb's
//! own calls.
//!
//! A jammdb `Tx` borrows its `DB` (`Tx<'tx>` holds `&'tx DB`), so it
//! cannot be kept beside the `DB` between two kit calls without a
//! self-referential struct. The open write is therefore the adapter's:
//! its puts and deletes are kept in order (the last one per key wins)
//! and answered over jammdb's committed view, and the commit applies
//! them all in one jammdb write transaction (`db.tx(true)`, the bucket's
//! `put`/`delete`, `Tx::commit`). Every read outside the write is a
//! jammdb read-only transaction of its own (`db.tx(false)`): a page of
//! the read-only map (`memmap2::Mmap`) the layer serves.

use std::collections::BTreeMap;
use std::path::Path;

use jammdb::{OpenOptions, DB};
use stdfs_layer::kit::{ErrorKind, KitError, Rows};

use crate::spec::TABLES;

/// A seed's jammdb settings, as given to `jammdb::OpenOptions`. The page
/// size must be the same at every open (a database opened with another
/// one panics: `OpenOptions::pagesize`'s doc, `src/db.rs` lines 60–67),
/// so it is the seed's, never the machine's.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// `OpenOptions::pagesize`, bytes.
    pub page_bytes: u64,
    /// `OpenOptions::num_pages`: the new file's length in pages.
    pub initial_pages: usize,
    /// `OpenOptions::strict_mode`: the tree checked before each commit's
    /// meta page is written (`src/tx.rs` lines 320–322).
    pub strict: bool,
    /// `OpenOptions::mmap_populate`: `MAP_POPULATE` on the map (a hint
    /// the layer serves: the map is filled at `mmap` anyway).
    pub populate: bool,
}

/// jammdb's error as the kit takes it: an I/O error is `Io`; jammdb's
/// own finding that the file is not a valid database (`InvalidDB`, strict
/// mode's check) is `Corrupt`; anything else `Other`.
pub fn kit_error(error: jammdb::Error) -> KitError {
    let kind = match &error {
        jammdb::Error::Io(_) => ErrorKind::Io,
        jammdb::Error::InvalidDB(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Other,
    };
    KitError::new(kind, format!("jammdb: {error}"))
}

/// The open write: each changed key's last change (`None`: deleted).
type Pending = BTreeMap<(usize, Vec<u8>), Option<Vec<u8>>>;

/// An open jammdb and the open write.
pub struct Engine {
    pending: Pending,
    db: DB,
}

impl Engine {
    /// Open (or create: jammdb makes the file when the path does not
    /// exist, `OpenOptions::open`, `src/db.rs` lines 138–155) the
    /// database at `path`.
    pub fn open(path: &Path, settings: Settings) -> Result<Engine, KitError> {
        let db = OpenOptions::new()
            .pagesize(settings.page_bytes)
            .num_pages(settings.initial_pages)
            .strict_mode(settings.strict)
            .mmap_populate(settings.populate)
            .open(path)
            .map_err(kit_error)?;
        Ok(Engine { pending: Pending::new(), db })
    }

    /// The application's setup: the file made and the kit's two buckets
    /// created in one committed transaction.
    pub fn create(path: &Path, settings: Settings) -> Result<(), KitError> {
        let engine = Engine::open(path, settings)?;
        let tx = engine.db.tx(true).map_err(kit_error)?;
        for table in TABLES {
            tx.create_bucket(table.name).map_err(kit_error)?;
        }
        tx.commit().map_err(kit_error)
    }

    /// Put (`Some`) or remove (`None`) in the open write: the value
    /// before, as the write reads it.
    pub fn put(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>, KitError> {
        let before = self.get(table, key)?;
        self.pending.insert((table, key.to_vec()), value.map(<[u8]>::to_vec));
        Ok(before)
    }

    /// One key: the open write's change if it has one, else committed.
    pub fn get(&mut self, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        if let Some(pending) = self.pending.get(&(table, key.to_vec())) {
            return Ok(pending.clone());
        }
        let tx = self.db.tx(false).map_err(kit_error)?;
        let bucket = tx.get_bucket(TABLES[table].name).map_err(kit_error)?;
        let found = bucket.get_kv(key).map(|kv| kv.value().to_vec());
        Ok(found)
    }

    /// A whole bucket, as [`Engine::get`] reads.
    pub fn scan(&mut self, table: usize) -> Result<Rows, KitError> {
        let mut out = self.read_committed(table)?;
        for ((_, key), value) in self.pending.range((table, Vec::new())..(table + 1, Vec::new())) {
            match value {
                Some(v) => out.insert(key.clone(), v.clone()),
                None => out.remove(key),
            };
        }
        Ok(out)
    }

    /// The committed content of a bucket, in one read-only transaction.
    pub fn read_committed(&self, table: usize) -> Result<Rows, KitError> {
        let tx = self.db.tx(false).map_err(kit_error)?;
        let bucket = tx.get_bucket(TABLES[table].name).map_err(kit_error)?;
        let mut out = Rows::new();
        for kv in bucket.kv_pairs() {
            out.insert(kv.key().to_vec(), kv.value().to_vec());
        }
        Ok(out)
    }

    /// Commit the open write in one jammdb write transaction. An empty
    /// write commits too: jammdb's commit always writes a new meta page
    /// and syncs (`TxInner::write_data`, `src/tx.rs` lines 281–357).
    pub fn commit(&mut self) -> Result<(), KitError> {
        let pending = std::mem::take(&mut self.pending);
        let tx = self.db.tx(true).map_err(kit_error)?;
        for ((table, key), value) in pending {
            let bucket = tx.get_bucket(TABLES[table].name).map_err(kit_error)?;
            match value {
                Some(v) => drop(bucket.put(key, v).map_err(kit_error)?),
                // A delete of an absent key is jammdb's `KeyValueMissing`:
                // the kit's delete of an absent key changes nothing.
                None => match bucket.delete(&key) {
                    Ok(_) | Err(jammdb::Error::KeyValueMissing) => {}
                    Err(error) => return Err(kit_error(error)),
                },
            }
        }
        tx.commit().map_err(kit_error)
    }

    /// Drop the open write.
    pub fn abort(&mut self) {
        self.pending.clear();
    }
}
