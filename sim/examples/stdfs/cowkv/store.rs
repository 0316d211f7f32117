//! `CowKv`: a tiny key-value engine of our own that stores through
//! `std::fs` alone, written to be correct, so that a failure under a
//! mistake planted in the layer ([`stdfs_layer::LayerPlant`]) is the plant's and
//! nobody else's (persy fails most seeds on its own, STDFS.md).
//!
//! The whole state is one snapshot file, `data`, replaced at every commit
//! by the textbook sequence: write `data.tmp` (created, truncated), fsync
//! it, rename it over `data`, fsync the directory. A crash at any point
//! leaves `data` either the old snapshot or the new one, both complete
//! and synced. The snapshot is `[magic 8][payload len u64][crc32 u32]
//! [payload]` (little-endian), the payload each table in turn as `[rows
//! u32]` then per row `[key len u32][key][value len u32][value]`. Open
//! reads `data` once and refuses bytes that do not check (`InvalidData`):
//! on a correct disk that never happens, since no byte is ever read that
//! was not synced under its final name. A `data.tmp` left by a crash is
//! never read; the next commit truncates it. Open syncs the directory
//! before it reads: a commit whose directory fsync failed may have left
//! the rename unsynced, and an open must not serve a state a power loss
//! can still take back.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One table's rows.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// The snapshot's name, and the name it is written under first.
pub const DATA: &str = "data";
pub const TEMP: &str = "data.tmp";
const MAGIC: &[u8; 8] = b"cowkv\0\0\x01";
const HEADER_BYTES: usize = 8 + 8 + 4;

/// An open store: its directory (a real path, which the layer serves),
/// the committed state, and the open transaction's view.
pub struct CowKv {
    dir: PathBuf,
    committed: Vec<Table>,
    txn: Option<Vec<Table>>,
}

fn corrupt(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend((bytes.len() as u32).to_le_bytes());
    out.extend(bytes);
}

/// The snapshot of `tables`, header and all.
fn encode(tables: &[Table]) -> Vec<u8> {
    let mut payload = Vec::new();
    for table in tables {
        payload.extend((table.len() as u32).to_le_bytes());
        for (key, value) in table {
            put_bytes(&mut payload, key);
            put_bytes(&mut payload, value);
        }
    }
    let mut out = MAGIC.to_vec();
    out.extend((payload.len() as u64).to_le_bytes());
    out.extend(crc32fast::hash(&payload).to_le_bytes());
    out.extend(payload);
    out
}

/// The `n` bytes at `*at`, or why not.
fn take<'a>(bytes: &'a [u8], at: &mut usize, n: usize) -> io::Result<&'a [u8]> {
    let taken = bytes.get(*at..*at + n).ok_or_else(|| corrupt(format!("snapshot cut at byte {at}")))?;
    *at += n;
    Ok(taken)
}

fn take_u32(bytes: &[u8], at: &mut usize) -> io::Result<usize> {
    Ok(u32::from_le_bytes(take(bytes, at, 4)?.try_into().expect("4 bytes")) as usize)
}

/// The `tables` tables a snapshot holds, or why its bytes do not check.
fn decode(bytes: &[u8], tables: usize) -> io::Result<Vec<Table>> {
    let header = bytes.get(..HEADER_BYTES).ok_or_else(|| corrupt(format!("a {}-byte snapshot", bytes.len())))?;
    if &header[..8] != MAGIC {
        return Err(corrupt("not a cowkv snapshot (magic)"));
    }
    let len = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(header[16..].try_into().expect("4 bytes"));
    let payload = &bytes[HEADER_BYTES..];
    if payload.len() as u64 != len || crc32fast::hash(payload) != crc {
        return Err(corrupt(format!("snapshot payload of {} bytes fails its length {len} or checksum", payload.len())));
    }
    let mut at = 0;
    let mut out = vec![Table::new(); tables];
    for table in &mut out {
        for _ in 0..take_u32(payload, &mut at)? {
            let key_len = take_u32(payload, &mut at)?;
            let key = take(payload, &mut at, key_len)?.to_vec();
            let value_len = take_u32(payload, &mut at)?;
            table.insert(key, take(payload, &mut at, value_len)?.to_vec());
        }
    }
    if at != payload.len() {
        return Err(corrupt(format!("{} bytes after the last table", payload.len() - at)));
    }
    Ok(out)
}

/// Replace `dir`'s snapshot with `tables`: temp file, fsync, rename,
/// directory fsync. Each step's error is returned as it is; the next open
/// finds the old snapshot or the new one.
fn write_snapshot(dir: &Path, tables: &[Table]) -> io::Result<()> {
    let temp = dir.join(TEMP);
    let mut file = File::create(&temp)?;
    file.write_all(&encode(tables))?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, dir.join(DATA))?;
    // The rename is an entry of the directory: durable only once the
    // directory is synced, and the commit promises durability.
    File::open(dir)?.sync_all()
}

impl CowKv {
    /// The application's setup: the first (empty) snapshot of `tables`
    /// tables in `dir`.
    pub fn create(dir: &Path, tables: usize) -> io::Result<()> {
        write_snapshot(dir, &vec![Table::new(); tables])
    }

    /// Open the store in `dir` (made by [`CowKv::create`]). The directory
    /// is synced first: a commit whose directory fsync failed left its
    /// rename in the page cache, and what this open serves must survive a
    /// power loss (the kit's persistence-hazard check caught the open
    /// that did not).
    pub fn open(dir: &Path, tables: usize) -> io::Result<CowKv> {
        File::open(dir)?.sync_all()?;
        let committed = decode(&fs::read(dir.join(DATA))?, tables)?;
        Ok(CowKv { dir: dir.to_path_buf(), committed, txn: None })
    }

    /// What a read sees: the open transaction's view, else the committed
    /// state.
    pub fn view(&self) -> &[Table] {
        self.txn.as_deref().unwrap_or(&self.committed)
    }

    /// The committed state.
    pub fn committed(&self) -> &[Table] {
        &self.committed
    }

    /// Put (or, with `value` `None`, delete) in the transaction: the value
    /// before.
    pub fn write(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let view = self.txn.get_or_insert_with(|| self.committed.clone());
        match value {
            Some(value) => view[table].insert(key.to_vec(), value.to_vec()),
            None => view[table].remove(key),
        }
    }

    /// Commit the transaction (an empty one if none is open), durably.
    pub fn commit(&mut self) -> io::Result<()> {
        let next = self.txn.take().unwrap_or_else(|| self.committed.clone());
        write_snapshot(&self.dir, &next)?;
        self.committed = next;
        Ok(())
    }

    /// Drop the open transaction.
    pub fn abort(&mut self) {
        self.txn = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_decodes_to_what_was_encoded_and_any_cut_or_flip_is_refused() {
        let mut tables = vec![Table::new(), Table::new()];
        tables[0].insert(b"k".to_vec(), b"v".to_vec());
        tables[1].insert(Vec::new(), vec![7; 300]);
        let bytes = encode(&tables);
        assert_eq!(decode(&bytes, 2).expect("decodes"), tables);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], 2).is_err(), "a snapshot cut at {cut} is refused");
        }
        let mut flipped = bytes.clone();
        flipped[HEADER_BYTES + 3] ^= 1;
        assert_eq!(decode(&flipped, 2).expect_err("refused").kind(), io::ErrorKind::InvalidData);
    }
}
