//! The engine under test, a stub to replace with yours: a key-value store
//! that keeps everything in memory and, at every commit, writes the whole
//! table to `data.tmp`, fsyncs it, renames it over `data` and fsyncs the
//! directory. All its file I/O goes through the `Vfs` it is given, which is
//! what lets the simulator crash it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use simkit::vfs::{read_whole, OpenMode, Vfs};

/// One table's rows.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;

/// An open store.
pub struct Store {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    committed: Rows,
    /// The open transaction's view, if it wrote.
    txn: Option<Rows>,
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// `[count u32]` then per row `[key len u32][key][value len u32][value]`.
fn encode(rows: &Rows) -> Vec<u8> {
    let mut out = (rows.len() as u32).to_le_bytes().to_vec();
    for (key, value) in rows {
        for bytes in [key, value] {
            out.extend((bytes.len() as u32).to_le_bytes());
            out.extend(bytes);
        }
    }
    out
}

/// The rows `encode` wrote, or `InvalidData` (which the kit takes as the
/// engine refusing its bytes) where the file does not parse.
fn decode(bytes: &[u8]) -> io::Result<Rows> {
    let mut at = 0usize;
    // The next `n` bytes, checked against the file's end: a length read
    // from disk never indexes past it.
    let mut take = |n: usize| -> io::Result<&[u8]> {
        let slice = bytes.get(at..at.saturating_add(n)).ok_or_else(|| invalid("data file cut short"))?;
        at += n;
        Ok(slice)
    };
    let len = |slice: &[u8]| u32::from_le_bytes(slice.try_into().expect("4 bytes")) as usize;
    let count = len(take(4)?);
    let mut rows = Rows::new();
    for _ in 0..count {
        let key_len = len(take(4)?);
        let key = take(key_len)?.to_vec();
        let value_len = len(take(4)?);
        let value = take(value_len)?.to_vec();
        rows.insert(key, value);
    }
    Ok(rows)
}

impl Store {
    /// Create the empty store's `data` file in `dir` (the kit makes its
    /// name durable).
    pub fn create(vfs: &dyn Vfs, dir: &Path) -> io::Result<()> {
        let mut file = vfs.open(&dir.join("data"), OpenMode::Truncate)?;
        file.write_at(0, &encode(&Rows::new()))?;
        file.sync()
    }

    /// Open the store in `dir`. The directory is fsynced first: a commit
    /// whose directory fsync failed may have left its rename pending, and
    /// what the open is about to serve must not be taken back by a later
    /// power loss. (The first version of this stub did not, and the kit's
    /// first sweep failed it: a persistence hazard at seed 4.)
    pub fn open(vfs: Arc<dyn Vfs>, dir: &Path) -> io::Result<Store> {
        vfs.sync_dir(dir)?;
        let committed = decode(&read_whole(vfs.as_ref(), &dir.join("data"))?)?;
        Ok(Store { vfs, dir: dir.to_path_buf(), committed, txn: None })
    }

    /// What a read sees: the transaction's view, else the committed rows.
    pub fn view(&self) -> &Rows {
        self.txn.as_ref().unwrap_or(&self.committed)
    }

    /// The committed rows.
    pub fn committed(&self) -> &Rows {
        &self.committed
    }

    /// Put (`Some`) or delete (`None`) in the transaction; the old value.
    pub fn write(&mut self, key: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let view = self.txn.get_or_insert_with(|| self.committed.clone());
        match value {
            Some(value) => view.insert(key.to_vec(), value.to_vec()),
            None => view.remove(key),
        }
    }

    /// Commit durably: the whole table, written aside, then renamed in.
    pub fn commit(&mut self) -> io::Result<()> {
        let Some(view) = self.txn.take() else { return Ok(()) };
        let (tmp, data) = (self.dir.join("data.tmp"), self.dir.join("data"));
        let mut file = self.vfs.open(&tmp, OpenMode::Truncate)?;
        file.write_at(0, &encode(&view))?;
        file.sync()?;
        self.vfs.rename(&tmp, &data)?;
        self.vfs.sync_dir(&self.dir)?;
        self.committed = view;
        Ok(())
    }

    /// Drop the open transaction.
    pub fn abort(&mut self) {
        self.txn = None;
    }
}
