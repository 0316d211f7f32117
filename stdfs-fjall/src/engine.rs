//! fjall as the kit drives it, on the engine's thread: the open database,
//! its two keyspaces and the open write, and each kit operation in
//! fjall's own calls. Two ways in, drawn per seed ([`Api`]): fjall's
//! optimistic transactions (`OptimisticTxDatabase::write_tx`, reads see
//! the transaction's own writes), or a plain `Database` whose writes are
//! gathered in an `OwnedWriteBatch` built at the commit (the adapter keeps
//! the pending writes to answer reads, since a batch cannot be read back:
//! README "Transactional modes"). Both commit through
//! `OwnedWriteBatch::commit` (`src/tx/write_tx.rs` line 325).

use std::collections::BTreeMap;
use std::path::Path;

use fjall::{
    Database, Keyspace, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticWriteTx, PersistMode, Readable,
};
use stdfs_layer::kit::{ErrorKind, KitError, Rows};

use crate::spec::{level_mode, TABLES};

/// How the adapter writes: a seed's choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `OptimisticTxDatabase` and its `WriteTransaction`.
    Tx,
    /// `Database` and an `OwnedWriteBatch` per commit.
    Batch,
}

/// A seed's fjall settings, as given to `Database::builder` and
/// `KeyspaceCreateOptions`.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub api: Api,
    /// `Builder::worker_threads`: fixed, since the default reads the
    /// machine's core count.
    pub worker_threads: usize,
    /// `KeyspaceCreateOptions::max_memtable_size`: small ones make the
    /// workers flush tables (and compact them) within a seed.
    pub memtable_bytes: u64,
}

/// fjall's error as the kit takes it: an I/O error is `Io`; bytes fjall
/// cannot read as its own (a checksum, a tag, a journal batch) are
/// `Corrupt`; `Poisoned` is `Poisoned` (an earlier failure, maybe a
/// worker's, refuses writes: `src/error.rs` lines 34–41); anything else
/// `Other`.
pub fn kit_error(error: fjall::Error) -> KitError {
    use fjall::Error as E;
    use fjall::LsmError as L;
    let kind = match &error {
        E::Io(_) | E::Storage(L::Io(_)) => ErrorKind::Io,
        E::Poisoned => ErrorKind::Poisoned,
        E::JournalRecovery(_)
        | E::InvalidTrailer
        | E::InvalidTag(_)
        | E::Decompress(_)
        | E::InvalidVersion(_)
        | E::Storage(
            L::ChecksumMismatch { .. }
            | L::InvalidTag(_)
            | L::InvalidTrailer
            | L::InvalidHeader(_)
            | L::Decompress(_)
            | L::InvalidVersion(_),
        ) => ErrorKind::Corrupt,
        _ => ErrorKind::Other,
    };
    KitError::new(kind, format!("fjall: {error}"))
}

fn options(settings: Settings) -> impl FnOnce() -> KeyspaceCreateOptions {
    move || KeyspaceCreateOptions::default().max_memtable_size(settings.memtable_bytes)
}

/// The open database, by the API the seed drew.
enum Store {
    Tx(OptimisticTxDatabase),
    Batch(Database),
}

/// The write being built: fjall's transaction, or the batch's writes in
/// the order the kit made them (the last one per key wins).
enum Write {
    Tx(OptimisticWriteTx),
    Batch(BTreeMap<(usize, Vec<u8>), Option<Vec<u8>>>),
}

/// An open fjall, its keyspaces (`t0`, `t1`) and the open write.
pub struct Engine {
    write: Option<Write>,
    keyspaces: Vec<Keyspace>,
    store: Store,
}

impl Engine {
    /// Open (or create) the database at `path` and its two keyspaces.
    pub fn open(path: &Path, settings: Settings) -> Result<Engine, KitError> {
        let mut keyspaces = Vec::new();
        let store = match settings.api {
            Api::Tx => {
                let db = OptimisticTxDatabase::builder(path)
                    .worker_threads(settings.worker_threads)
                    .open()
                    .map_err(kit_error)?;
                for table in TABLES {
                    keyspaces.push(db.keyspace(table.name, options(settings)).map_err(kit_error)?.inner().clone());
                }
                Store::Tx(db)
            }
            Api::Batch => {
                let db = Database::builder(path).worker_threads(settings.worker_threads).open().map_err(kit_error)?;
                for table in TABLES {
                    keyspaces.push(db.keyspace(table.name, options(settings)).map_err(kit_error)?);
                }
                Store::Batch(db)
            }
        };
        Ok(Engine { write: None, keyspaces, store })
    }

    /// The application's setup: the keyspaces made and the journal
    /// synced (`Database::persist(SyncAll)`), so that they are durable
    /// before the first commit.
    pub fn create(path: &Path, settings: Settings) -> Result<(), KitError> {
        let engine = Engine::open(path, settings)?;
        engine.persist(PersistMode::SyncAll)
    }

    fn persist(&self, mode: PersistMode) -> Result<(), KitError> {
        match &self.store {
            Store::Tx(db) => db.persist(mode),
            Store::Batch(db) => db.persist(mode),
        }
        .map_err(kit_error)
    }

    fn write(&mut self) -> Result<&mut Write, KitError> {
        if self.write.is_none() {
            self.write = Some(match &self.store {
                Store::Tx(db) => Write::Tx(db.write_tx().map_err(kit_error)?),
                Store::Batch(_) => Write::Batch(BTreeMap::new()),
            });
        }
        Ok(self.write.as_mut().expect("begun above"))
    }

    /// Put (`Some`) or remove (`None`) in the open write: the value
    /// before, as the write reads it.
    pub fn put(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>, KitError> {
        let before = self.get(table, key)?;
        let keyspace = self.keyspaces[table].clone();
        match self.write()? {
            Write::Tx(tx) => match value {
                Some(v) => tx.insert(&keyspace, key, v),
                None => tx.remove(&keyspace, key),
            },
            Write::Batch(pending) => {
                pending.insert((table, key.to_vec()), value.map(<[u8]>::to_vec));
            }
        }
        Ok(before)
    }

    /// One key: in the open write if there is one, else committed.
    pub fn get(&mut self, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let keyspace = &self.keyspaces[table];
        let found = match &self.write {
            Some(Write::Tx(tx)) => tx.get(keyspace, key).map_err(kit_error)?,
            Some(Write::Batch(pending)) => match pending.get(&(table, key.to_vec())) {
                Some(pending) => return Ok(pending.clone()),
                None => keyspace.get(key).map_err(kit_error)?,
            },
            None => keyspace.get(key).map_err(kit_error)?,
        };
        Ok(found.map(|v| v.to_vec()))
    }

    /// A whole keyspace, as [`Engine::get`] reads.
    pub fn scan(&mut self, table: usize) -> Result<Rows, KitError> {
        match &self.write {
            Some(Write::Tx(tx)) => rows(tx.iter(&self.keyspaces[table])),
            Some(Write::Batch(pending)) => {
                let mut out = self.read_committed(table)?;
                for ((_, key), value) in pending.range((table, Vec::new())..(table + 1, Vec::new())) {
                    match value {
                        Some(v) => out.insert(key.clone(), v.clone()),
                        None => out.remove(key),
                    };
                }
                Ok(out)
            }
            None => self.read_committed(table),
        }
    }

    /// The committed content of a keyspace.
    pub fn read_committed(&self, table: usize) -> Result<Rows, KitError> {
        rows(self.keyspaces[table].iter())
    }

    /// Commit the open write (nothing, if none) at kit level `level`:
    /// its `PersistMode` as the write's durability.
    pub fn commit(&mut self, level: usize) -> Result<(), KitError> {
        let mode = level_mode(level);
        match self.write.take() {
            None => Ok(()),
            Some(Write::Tx(tx)) => match tx.durability(mode).commit().map_err(kit_error)? {
                Ok(()) => Ok(()),
                Err(conflict) => Err(KitError::new(ErrorKind::Other, format!("fjall: {conflict:?} with one writer"))),
            },
            Some(Write::Batch(pending)) => {
                let Store::Batch(db) = &self.store else { unreachable!("a batch write on a batch store") };
                let mut batch = db.batch().durability(mode);
                for ((table, key), value) in pending {
                    match value {
                        Some(v) => batch.insert(&self.keyspaces[table], key, v),
                        None => batch.remove(&self.keyspaces[table], key),
                    }
                }
                batch.commit().map_err(kit_error)
            }
        }
    }

    /// A clean close's work: the open write dropped, the journal synced.
    pub fn close(&mut self) -> Result<(), KitError> {
        self.abort();
        self.persist(PersistMode::SyncAll)
    }

    /// Drop the open write: a transaction's `rollback`, a batch's writes.
    pub fn abort(&mut self) {
        if let Some(Write::Tx(tx)) = self.write.take() {
            tx.rollback();
        }
    }
}

/// An iterator's rows as the kit holds them.
fn rows(iter: fjall::Iter) -> Result<Rows, KitError> {
    let mut out = Rows::new();
    for guard in iter {
        let (key, value) = guard.into_inner().map_err(kit_error)?;
        out.insert(key.to_vec(), value.to_vec());
    }
    Ok(out)
}
