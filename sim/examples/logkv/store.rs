//! `LogKv`: a tiny transactional key-value engine, written for this
//! example: one append-only log file, one record per committed
//! transaction, everything else in memory.
//!
//! A record is `[len u32][crc32 u32][payload]`, the payload `[writes u32]`
//! then each write as `[kind u8][table u8][key len u32][key]` plus, for a
//! put, `[value len u32][value]` (little-endian). Open reads the log
//! (stably: bytes are trusted once two reads agree), replays every record
//! up to the first one that is torn (short, or failing its checksum), and
//! cuts the file there, durably, before anything is appended after it.
//! A payload shorter than its write count is refused: an all-zero header
//! (`len 0, crc 0`, which a lost write can leave) would otherwise pass.
//!
//! Readers beside the writer each take a copy of the committed state when
//! they begin and read only it: later commits do not reach them.
//!
//! A commit appends its record; at the `sync` level it also fsyncs. It
//! names both moments to the file system (`Vfs::mark`: `appended`,
//! `synced`), which on the simulated disk is where crashes can be aimed.
//! Three planted bugs: `lazy-fsync` skips that fsync unless the log has
//! crossed a 4 KiB boundary since the last one — a group-commit
//! "optimisation" that loses commits it acknowledged as durable;
//! `no-checksum` replays a record without checking its checksum, so a
//! damaged byte is served as data; `live-reader` serves a reader the
//! committed state as it is now, not the copy it took when it began.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::Arc;

use simkit::vfs::{read_stable, OpenMode, Vfs, VfsFile};

/// One table's rows.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// A record's header: its payload's length and checksum.
pub const HEADER_BYTES: usize = 8;
const PUT: u8 = 1;
const DELETE: u8 = 2;

/// An open log and the state it replays to.
pub struct LogKv {
    vfs: Arc<dyn Vfs>,
    file: Box<dyn VfsFile>,
    end_bytes: u64,
    synced_end_bytes: u64,
    committed: Vec<Table>,
    /// The open transaction: its view and its encoded writes.
    txn: Option<(Vec<Table>, Vec<u8>, u32)>,
    /// Each open reader's copy of the committed state, by client number.
    readers: BTreeMap<usize, Vec<Table>>,
    lazy_fsync: bool,
    live_reader: bool,
}

fn corrupt(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Take `n` bytes at `*at` of `payload`, or say what is wrong.
fn take<'a>(payload: &'a [u8], at: &mut usize, n: usize) -> io::Result<&'a [u8]> {
    let bytes = payload.get(*at..*at + n).ok_or_else(|| corrupt(format!("record cut at byte {at}")))?;
    *at += n;
    Ok(bytes)
}

fn take_u32(payload: &[u8], at: &mut usize) -> io::Result<u32> {
    Ok(u32::from_le_bytes(take(payload, at, 4)?.try_into().expect("4 bytes")))
}

/// Apply one record's payload to `tables` (refused whole if it does not decode).
fn apply(tables: &mut [Table], payload: &[u8]) -> io::Result<()> {
    let mut at = 0;
    let writes = take_u32(payload, &mut at)?;
    let mut next = tables.to_vec();
    for _ in 0..writes {
        let kind = take(payload, &mut at, 1)?[0];
        let table = usize::from(take(payload, &mut at, 1)?[0]);
        let key_len = take_u32(payload, &mut at)? as usize;
        let key = take(payload, &mut at, key_len)?.to_vec();
        let rows = next.get_mut(table).ok_or_else(|| corrupt(format!("no table {table}")))?;
        match kind {
            PUT => {
                let value_len = take_u32(payload, &mut at)? as usize;
                rows.insert(key, take(payload, &mut at, value_len)?.to_vec());
            }
            DELETE => drop(rows.remove(&key)),
            other => return Err(corrupt(format!("unknown write kind {other}"))),
        }
    }
    tables.clone_from_slice(&next);
    Ok(())
}

/// The whole records of `log` up to the first torn one (short, or failing
/// its checksum unless `check_crc` is off): each one's offset and payload.
pub fn records(log: &[u8], check_crc: bool) -> Vec<(usize, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(header) = log.get(at..at + HEADER_BYTES) {
        let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        let Some(payload) = log.get(at + HEADER_BYTES..at + HEADER_BYTES + len) else { break };
        if len < 4 || (check_crc && crc32fast::hash(payload) != crc) {
            break; // a torn tail: cut here
        }
        out.push((at, payload));
        at += HEADER_BYTES + len;
    }
    out
}

/// The valid records of `log`: how far they reach, and the state.
fn replay(log: &[u8], tables: usize, check_crc: bool) -> io::Result<(u64, Vec<Table>)> {
    let mut state = vec![Table::new(); tables];
    let mut end_bytes = 0;
    for (at, payload) in records(log, check_crc) {
        apply(&mut state, payload)?;
        end_bytes = at + HEADER_BYTES + payload.len();
    }
    Ok((end_bytes as u64, state))
}

/// A bug to plant (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// A sync commit fsyncs only when the log crossed a 4 KiB boundary.
    LazyFsync,
    /// Open replays a record without checking its checksum.
    NoChecksum,
    /// A reader reads the committed state as it is now, not its copy.
    LiveReader,
}

impl LogKv {
    /// Open the log at `path` (created, empty, by the caller), with `bug`
    /// planted if given.
    pub fn open(vfs: Arc<dyn Vfs>, path: &Path, tables: usize, bug: Option<Bug>) -> io::Result<LogKv> {
        let mut file = vfs.open(path, OpenMode::Write)?;
        let log = read_stable(file.as_ref(), file.len()?)?;
        let (end_bytes, committed) = replay(&log, tables, bug != Some(Bug::NoChecksum))?;
        let lazy_fsync = bug == Some(Bug::LazyFsync);
        if end_bytes < log.len() as u64 {
            file.set_len(end_bytes)?;
            file.sync()?;
        }
        let live_reader = bug == Some(Bug::LiveReader);
        let readers = BTreeMap::new();
        Ok(LogKv {
            vfs,
            file,
            end_bytes,
            synced_end_bytes: end_bytes,
            committed,
            txn: None,
            readers,
            lazy_fsync,
            live_reader,
        })
    }

    fn txn(&mut self) -> &mut (Vec<Table>, Vec<u8>, u32) {
        self.txn.get_or_insert_with(|| (self.committed.clone(), 0u32.to_le_bytes().to_vec(), 0))
    }

    /// What a read sees: the open transaction's view, else the committed state.
    pub fn view(&self) -> &[Table] {
        self.txn.as_ref().map_or(&self.committed, |(view, _, _)| view)
    }

    /// The committed state.
    pub fn committed(&self) -> &[Table] {
        &self.committed
    }

    /// Begin reader `reader`'s read-only transaction: a copy of the committed state.
    pub fn begin_read(&mut self, reader: usize) {
        self.readers.insert(reader, self.committed.clone());
    }

    /// What reader `reader` sees: the copy it took.
    pub fn reader_view(&self, reader: usize) -> &[Table] {
        match self.live_reader {
            true => &self.committed,
            false => &self.readers[&reader],
        }
    }

    /// End reader `reader`'s read-only transaction.
    pub fn end_read(&mut self, reader: usize) {
        self.readers.remove(&reader);
    }

    /// Put (or, with `value` `None`, delete) in the transaction; the old value.
    pub fn write(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let (view, writes, count) = self.txn();
        *count += 1;
        writes.extend([if value.is_some() { PUT } else { DELETE }, table as u8]);
        writes.extend((key.len() as u32).to_le_bytes());
        writes.extend(key);
        let Some(value) = value else { return view[table].remove(key) };
        writes.extend((value.len() as u32).to_le_bytes());
        writes.extend(value);
        view[table].insert(key.to_vec(), value.to_vec())
    }

    /// Commit the transaction (an empty one if none is open); with `sync`,
    /// durably.
    pub fn commit(&mut self, sync: bool) -> io::Result<()> {
        let (view, mut payload, count) = self.txn.take().unwrap_or_else(|| (self.committed.clone(), vec![0; 4], 0));
        payload[..4].copy_from_slice(&count.to_le_bytes());
        let mut record = (payload.len() as u32).to_le_bytes().to_vec();
        record.extend(crc32fast::hash(&payload).to_le_bytes());
        record.extend(&payload);
        self.file.write_at(self.end_bytes, &record)?;
        self.vfs.mark("appended");
        self.end_bytes += record.len() as u64;
        self.committed = view;
        let crossed_a_page = self.end_bytes / 4096 != self.synced_end_bytes / 4096;
        if sync && (!self.lazy_fsync || crossed_a_page) {
            self.file.sync()?;
            self.vfs.mark("synced");
            self.synced_end_bytes = self.end_bytes;
        }
        Ok(())
    }

    /// Drop the open transaction.
    pub fn abort(&mut self) {
        self.txn = None;
    }

    /// Abort, and make everything committed durable.
    pub fn close(mut self) -> io::Result<()> {
        self.txn = None;
        self.file.sync()
    }
}
