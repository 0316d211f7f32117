//! persy as the kit drives it, on the engine's thread: the open database
//! and its open write transaction, and each kit operation in persy's own
//! calls. Table `t0` is index `t0` of `u64` keys, `t1` index `t1` of
//! `ByteVec` keys ([`KitKey`]); values are `ByteVec`, one per key
//! (`ValueMode::Replace`).

use std::path::Path;

use persy::{ByteVec, Config, IndexType, Persy, PersyError, Transaction, ValueMode, PE};
use simkit::{ErrorKind, KitError, Rows};

use super::spec::{COMMIT, PREPARE_COMMIT, TABLES};

/// A key type of one of the kit's tables, and how the kit's key bytes map
/// onto it.
pub trait KitKey: IndexType {
    /// The persy index (and kit table) of this key type.
    const INDEX: &'static str;
    fn from_kit(bytes: &[u8]) -> Self;
    fn to_kit(&self) -> Vec<u8>;
}

impl KitKey for u64 {
    const INDEX: &'static str = TABLES[0].name;
    fn from_kit(bytes: &[u8]) -> u64 {
        u64::from_be_bytes(bytes.try_into().expect("the kit's u64 keys are 8 bytes"))
    }
    fn to_kit(&self) -> Vec<u8> {
        self.to_be_bytes().to_vec()
    }
}

impl KitKey for ByteVec {
    const INDEX: &'static str = TABLES[1].name;
    fn from_kit(bytes: &[u8]) -> ByteVec {
        ByteVec::new(bytes.to_vec())
    }
    fn to_kit(&self) -> Vec<u8> {
        self.to_vec()
    }
}

/// Call `$body` with `$K` the key type of kit table `$table`.
macro_rules! on_table {
    ($table:expr, |$K:ident| $body:expr) => {
        match $table {
            0 => {
                type $K = u64;
                $body
            }
            _ => {
                type $K = ByteVec;
                $body
            }
        }
    };
}

/// persy's error as the kit takes it: an I/O error is `Io`; a file or
/// bytes persy cannot read as its own are `Corrupt`; anything else
/// `Other`.
pub fn kit_error<T: Into<PersyError>>(error: PE<T>) -> KitError {
    let error: PersyError = error.error().into();
    let kind = match &error {
        PersyError::Io { .. } => ErrorKind::Io,
        PersyError::NotPersyFile
        | PersyError::DecodingUtf8(_)
        | PersyError::DecodingDataEncoding(_)
        | PersyError::VarIntError(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Other,
    };
    KitError::new(kind, format!("persy: {error}"))
}

/// The application's setup: create the file, and both indexes in one
/// commit.
pub fn create(path: &Path) -> Result<(), KitError> {
    Persy::create(path).map_err(kit_error)?;
    let persy = Persy::open(path, Config::new()).map_err(kit_error)?;
    let mut txn = persy.begin().map_err(kit_error)?;
    txn.create_index::<u64, ByteVec>(<u64 as KitKey>::INDEX, ValueMode::Replace).map_err(kit_error)?;
    txn.create_index::<ByteVec, ByteVec>(<ByteVec as KitKey>::INDEX, ValueMode::Replace).map_err(kit_error)?;
    txn.commit().map_err(kit_error)
}

/// An open persy and its open write transaction.
pub struct Engine {
    txn: Option<Transaction>,
    persy: Persy,
}

/// The kit drops the database at a power loss or a process kill with
/// every I/O failing (the process is gone); persy's own `Drop` of an open
/// transaction rolls it back and panics if that fails ("no failure on
/// rollback transaction on drop", `src/transaction.rs` line 643). So the
/// open transaction is rolled back here through the call that returns
/// its error, which is dropped with the process: an error here has no
/// one left to hear it. The database drops after.
impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(txn) = self.txn.take() {
            let _ignored_as_the_process_is_gone = txn.rollback();
        }
    }
}

impl Engine {
    pub fn open(path: &Path, cache_bytes: u64) -> Result<Engine, KitError> {
        let mut config = Config::new();
        config.change_cache_size(cache_bytes);
        Ok(Engine { txn: None, persy: Persy::open(path, config).map_err(kit_error)? })
    }

    fn txn(&mut self) -> Result<&mut Transaction, KitError> {
        if self.txn.is_none() {
            self.txn = Some(self.persy.begin().map_err(kit_error)?);
        }
        Ok(self.txn.as_mut().expect("begun above"))
    }

    /// Put (`Some`) or remove (`None`) in the write transaction: the
    /// value before, as the transaction read it.
    pub fn write(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Result<Option<Vec<u8>>, KitError> {
        on_table!(table, |K| {
            let k = K::from_kit(key);
            let txn = self.txn()?;
            let before = txn.one::<K, ByteVec>(K::INDEX, &k).map_err(kit_error)?.map(|v| v.to_vec());
            match value {
                Some(v) => txn.put::<K, ByteVec>(K::INDEX, k, ByteVec::new(v.to_vec())).map_err(kit_error)?,
                None => txn.remove::<K, ByteVec>(K::INDEX, k, None).map_err(kit_error)?,
            }
            Ok(before)
        })
    }

    /// One key: in the write transaction if one is open, else committed.
    pub fn get(&mut self, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        on_table!(table, |K| {
            let k = K::from_kit(key);
            let found = match &mut self.txn {
                Some(txn) => txn.one::<K, ByteVec>(K::INDEX, &k).map_err(kit_error)?,
                None => self.persy.one::<K, ByteVec>(K::INDEX, &k).map_err(kit_error)?,
            };
            Ok(found.map(|v| v.to_vec()))
        })
    }

    /// A whole table, as [`Engine::get`] reads.
    pub fn scan(&mut self, table: usize) -> Result<Rows, KitError> {
        if self.txn.is_none() {
            return self.read_committed(table);
        }
        let txn = self.txn.as_mut().expect("checked above");
        on_table!(table, |K| {
            let range = txn.range::<K, ByteVec, _>(K::INDEX, ..).map_err(kit_error)?;
            Ok(rows(range))
        })
    }

    /// The committed content of a table.
    pub fn read_committed(&self, table: usize) -> Result<Rows, KitError> {
        on_table!(table, |K| {
            let range = self.persy.range::<K, ByteVec, _>(K::INDEX, ..).map_err(kit_error)?;
            Ok(rows(range))
        })
    }

    /// Commit at kit level `level` (an empty transaction if none is open).
    pub fn commit(&mut self, level: usize) -> Result<(), KitError> {
        self.txn()?;
        let txn = self.txn.take().expect("begun above");
        match level {
            COMMIT => txn.commit().map_err(kit_error),
            PREPARE_COMMIT => txn.prepare().map_err(kit_error)?.commit().map_err(kit_error),
            _ => unreachable!("persy's spec declares two levels, not {level}"),
        }
    }

    pub fn abort(&mut self) -> Result<(), KitError> {
        self.txn.take().map_or(Ok(()), |txn| txn.rollback().map_err(kit_error))
    }
}

/// A range's rows as the kit holds them (one value per key: `Replace`).
fn rows<K: KitKey, I: Iterator<Item = (K, persy::ValueIter<ByteVec>)>>(range: I) -> Rows {
    let mut out = Rows::new();
    for (key, mut values) in range {
        let value = values.next().expect("a key in a Replace index holds a value");
        assert!(values.next().is_none(), "a key in a Replace index holds one value");
        out.insert(key.to_kit(), value.to_vec());
    }
    out
}
