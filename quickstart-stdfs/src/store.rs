//! The engine under test, a stub to replace with yours: a key-value store
//! that stores through plain `std::fs` (it knows nothing of the simulator)
//! as one file per commit. A commit writes its changes to `seg-<n>.tmp`,
//! fsyncs it, renames it to `seg-<n>` and fsyncs the directory; open lists
//! the directory (`read_dir`), reads `seg-0`, `seg-1`, … in order and
//! replays them. A crash leaves every acknowledged segment complete under
//! its final name and at most one `.tmp` that is never read (the next
//! commit of that number truncates it).
//!
//! A segment is `[magic 4][payload len u32][FNV-1a 64 of the payload]
//! [payload]` (little-endian), the payload per change `[1][key len u32]
//! [key][value len u32][value]` (a put) or `[0][key len u32][key]` (a
//! delete). Bytes that do not check, or a gap in the numbering, are
//! refused (`InvalidData`), never replayed.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One table's rows.
pub type Rows = BTreeMap<Vec<u8>, Vec<u8>>;
/// A commit's changes: a key's new value, or `None` for a delete.
type Changes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

const MAGIC: &[u8; 4] = b"seg1";
const HEADER_BYTES: usize = 4 + 4 + 8;

/// An open store.
pub struct Store {
    dir: PathBuf,
    /// The number the next commit's segment takes.
    next_segment: u64,
    committed: Rows,
    /// The open transaction: its view and its changes.
    txn: Option<(Rows, Changes)>,
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend((bytes.len() as u32).to_le_bytes());
    out.extend(bytes);
}

fn encode(changes: &Changes) -> Vec<u8> {
    let mut payload = Vec::new();
    for (key, value) in changes {
        payload.push(u8::from(value.is_some()));
        put_bytes(&mut payload, key);
        if let Some(value) = value {
            put_bytes(&mut payload, value);
        }
    }
    let mut out = MAGIC.to_vec();
    out.extend((payload.len() as u32).to_le_bytes());
    out.extend(fnv1a_64(&payload).to_le_bytes());
    out.extend(payload);
    out
}

/// The `n` bytes at `*at` of segment `name`, or why not.
fn take<'a>(bytes: &'a [u8], at: &mut usize, n: usize, name: &str) -> io::Result<&'a [u8]> {
    let taken = bytes.get(*at..*at + n).ok_or_else(|| invalid(format!("{name} cut at payload byte {at}")))?;
    *at += n;
    Ok(taken)
}

fn take_bytes<'a>(bytes: &'a [u8], at: &mut usize, name: &str) -> io::Result<&'a [u8]> {
    let len = u32::from_le_bytes(take(bytes, at, 4, name)?.try_into().expect("4 bytes"));
    take(bytes, at, len as usize, name)
}

/// Apply segment `name`'s changes (its bytes) to `rows`.
fn replay(bytes: &[u8], name: &str, rows: &mut Rows) -> io::Result<()> {
    let header = bytes.get(..HEADER_BYTES).ok_or_else(|| invalid(format!("{name}: {} bytes", bytes.len())))?;
    let len = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes")) as usize;
    let hash = u64::from_le_bytes(header[8..].try_into().expect("8 bytes"));
    let payload = &bytes[HEADER_BYTES..];
    if &header[..4] != MAGIC || payload.len() != len || fnv1a_64(payload) != hash {
        return Err(invalid(format!("{name}: its magic, length {len} or checksum does not check")));
    }
    let mut at = 0;
    while at < payload.len() {
        let is_put = take(payload, &mut at, 1, name)?[0] == 1;
        let key = take_bytes(payload, &mut at, name)?.to_vec();
        match is_put {
            true => rows.insert(key, take_bytes(payload, &mut at, name)?.to_vec()),
            false => rows.remove(&key),
        };
    }
    Ok(())
}

/// The segment numbers in `dir`, in order (a `.tmp` or another name is not
/// a segment).
fn list_segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut numbers = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let number = name.to_str().and_then(|n| n.strip_prefix("seg-")).and_then(|n| n.parse::<u64>().ok());
        numbers.extend(number);
    }
    numbers.sort_unstable();
    Ok(numbers)
}

/// Write segment `number` of `changes`: temp file, fsync, rename,
/// directory fsync. Each step's error is returned as it is.
fn write_segment(dir: &Path, number: u64, changes: &Changes) -> io::Result<()> {
    let temp = dir.join(format!("seg-{number}.tmp"));
    let mut file = File::create(&temp)?;
    file.write_all(&encode(changes))?;
    file.sync_all()?;
    drop(file);
    fs::rename(&temp, dir.join(format!("seg-{number}")))?;
    // The rename is an entry of the directory: durable only once the
    // directory is synced, and a commit promises durability.
    File::open(dir)?.sync_all()
}

impl Store {
    /// The application's setup: the first, empty segment in `dir`.
    pub fn create(dir: &Path) -> io::Result<()> {
        write_segment(dir, 0, &Changes::new())
    }

    /// Open the store in `dir` (made by [`Store::create`]). The directory is
    /// synced first: a commit whose directory fsync failed left its rename
    /// in the page cache, and what an open serves must survive a power loss.
    pub fn open(dir: &Path) -> io::Result<Store> {
        File::open(dir)?.sync_all()?;
        let numbers = list_segments(dir)?;
        if numbers.is_empty() {
            return Err(invalid(format!("{}: no seg-0, not a store", dir.display())));
        }
        let mut committed = Rows::new();
        for (expected, &number) in numbers.iter().enumerate() {
            if number != expected as u64 {
                return Err(invalid(format!("{}: seg-{expected} is missing (next is seg-{number})", dir.display())));
            }
            let name = format!("seg-{number}");
            replay(&fs::read(dir.join(&name))?, &name, &mut committed)?;
        }
        Ok(Store { dir: dir.to_path_buf(), next_segment: numbers.len() as u64, committed, txn: None })
    }

    /// What a read sees: the transaction's view, else the committed rows.
    pub fn view(&self) -> &Rows {
        self.txn.as_ref().map_or(&self.committed, |(view, _)| view)
    }

    pub fn committed(&self) -> &Rows {
        &self.committed
    }

    /// Put (or, with `value` `None`, delete) in the transaction: the value
    /// before.
    pub fn write(&mut self, key: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let (view, changes) = self.txn.get_or_insert_with(|| (self.committed.clone(), Changes::new()));
        changes.insert(key.to_vec(), value.map(<[u8]>::to_vec));
        match value {
            Some(value) => view.insert(key.to_vec(), value.to_vec()),
            None => view.remove(key),
        }
    }

    /// Commit the transaction (an empty one if none is open), durably. On
    /// an error the transaction is dropped and the next commit reuses the
    /// segment's number, replacing what this one may have left.
    pub fn commit(&mut self) -> io::Result<()> {
        let (view, changes) = self.txn.take().unwrap_or_else(|| (self.committed.clone(), Changes::new()));
        write_segment(&self.dir, self.next_segment, &changes)?;
        self.next_segment += 1;
        self.committed = view;
        Ok(())
    }

    pub fn abort(&mut self) {
        self.txn = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_replays_what_was_encoded_and_any_cut_or_flip_is_refused() {
        let changes = Changes::from([(b"k".to_vec(), Some(b"v".to_vec())), (b"gone".to_vec(), None)]);
        let bytes = encode(&changes);
        let mut rows = Rows::from([(b"gone".to_vec(), b"x".to_vec())]);
        replay(&bytes, "seg-1", &mut rows).expect("replays");
        assert_eq!(rows, Rows::from([(b"k".to_vec(), b"v".to_vec())]));
        for cut in 0..bytes.len() {
            assert!(replay(&bytes[..cut], "seg-1", &mut Rows::new()).is_err(), "a segment cut at {cut} is refused");
        }
        let mut flipped = bytes.clone();
        flipped[HEADER_BYTES + 2] ^= 1;
        assert!(replay(&flipped, "seg-1", &mut Rows::new()).is_err());
    }
}
