//! `LogKv`: a tiny transactional key-value engine, written for this
//! example: one append-only log file, one commit per record (or per run
//! of records, for a large one), everything else in memory.
//!
//! A record is `[len u32][crc32 u32][payload]`, the payload `[writes u32]`
//! then each write as `[kind u8][table u8][key len u32][key]` plus, for a
//! put, `[value len u32][value]` (little-endian). A record holds at most
//! [`WRITES_PER_RECORD`] writes: a larger transaction is written as a run
//! of records, one write call each, every one but the last flagged
//! [`CONTINUED`] in its write count — the last is the commit's *commit
//! record* (a WAL's commit frame). Open reads the log (stably: bytes are
//! trusted once two reads agree), replays every record up to the first one
//! that is torn (short, or failing its checksum), keeps the state of the
//! last commit record, and cuts the file after it, durably, before
//! anything is appended after it: a run of records with no commit record
//! after it is a commit that never happened. A payload shorter than its
//! write count is refused: an all-zero header (`len 0, crc 0`, which a
//! lost write can leave) would otherwise pass.
//!
//! Readers beside the writer (`Readers`, shared with the adapter's handle
//! that steps them from inside the writer's I/O) each take the committed
//! state when they begin and read only it: later commits do not reach
//! them. The writer keeps two states there: the *committed* one, which
//! moves at each commit record, and the *applied* one, every record
//! written so far (the state a replay of the log as it is would reach,
//! commit record or not) — the two differ only inside a commit of a run of
//! records, between two of its writes.
//!
//! A commit appends its records; at the `sync` level it also fsyncs. It
//! names both moments to the file system (`Vfs::mark`: `appended`,
//! `synced`), which on the simulated disk is where crashes can be aimed.
//! Four planted bugs: `lazy-fsync` skips that fsync unless the log has
//! crossed a 4 KiB boundary since the last one — a group-commit
//! "optimisation" that loses commits it acknowledged as durable;
//! `no-checksum` replays a record without checking its checksum, so a
//! damaged byte is served as data; `live-reader` serves a reader the
//! committed state as it is now, not the copy it took when it began;
//! `past-commit` begins a reader on the applied state, not the committed
//! one — a reader that reads the log past the last commit record (the
//! shape of a snapshot taken at the last sequence written instead of the
//! last one published), which only a reader that begins inside a commit
//! of several records can see.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use simkit::vfs::{read_stable, OpenMode, Vfs, VfsFile};

/// One table's rows.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// A record's header: its payload's length and checksum.
pub const HEADER_BYTES: usize = 8;
const PUT: u8 = 1;
const DELETE: u8 = 2;
/// The most writes one record holds (a bounded record, as a log writer's
/// fixed buffer makes it): a larger transaction takes a run of records.
pub const WRITES_PER_RECORD: usize = 8;
/// The write count's top bit: more records of this commit follow.
pub const CONTINUED: u32 = 1 << 31;

/// An open log and the state it replays to.
pub struct LogKv {
    vfs: Arc<dyn Vfs>,
    file: Box<dyn VfsFile>,
    end_bytes: u64,
    synced_end_bytes: u64,
    committed: Arc<Vec<Table>>,
    /// The open transaction: its view and each write, encoded.
    txn: Option<(Vec<Table>, Vec<Vec<u8>>)>,
    readers: Readers,
    lazy_fsync: bool,
}

/// The readers' side, shared by the writer and the adapter's handle.
#[derive(Clone)]
pub struct Readers {
    shared: Arc<Mutex<Shared>>,
    live_reader: bool,
    past_commit: bool,
}

/// What the readers share with the writer (see the module doc).
struct Shared {
    committed: Arc<Vec<Table>>,
    applied: Arc<Vec<Table>>,
    /// Each open reader's state, by client number.
    open: BTreeMap<usize, Arc<Vec<Table>>>,
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

/// Whether a record's payload is followed by more of its commit.
pub fn continued(payload: &[u8]) -> bool {
    payload.get(..4).is_some_and(|count| u32::from_le_bytes(count.try_into().expect("4 bytes")) & CONTINUED != 0)
}

/// Apply one record's payload to `tables` (refused whole if it does not decode).
fn apply(tables: &mut [Table], payload: &[u8]) -> io::Result<()> {
    let mut at = 0;
    let writes = take_u32(payload, &mut at)? & !CONTINUED;
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

/// The valid records of `log` up to the last commit record: how far they
/// reach, and the state.
fn replay(log: &[u8], tables: usize, check_crc: bool) -> io::Result<(u64, Vec<Table>)> {
    let mut state = vec![Table::new(); tables];
    let mut applied = state.clone();
    let mut end_bytes = 0;
    for (at, payload) in records(log, check_crc) {
        apply(&mut applied, payload)?;
        if !continued(payload) {
            state.clone_from(&applied);
            end_bytes = at + HEADER_BYTES + payload.len();
        }
    }
    Ok((end_bytes as u64, state))
}

/// A commit's records: runs of at most [`WRITES_PER_RECORD`] writes, all
/// but the last flagged [`CONTINUED`] (one record, of no write, for an
/// empty commit).
fn encode(writes: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let runs: Vec<&[Vec<u8>]> = match writes.is_empty() {
        true => vec![&[]],
        false => writes.chunks(WRITES_PER_RECORD).collect(),
    };
    let last = runs.len() - 1;
    let record = |(number, run): (usize, &&[Vec<u8>])| {
        let flag = if number == last { 0 } else { CONTINUED };
        let mut payload = (run.len() as u32 | flag).to_le_bytes().to_vec();
        run.iter().for_each(|write| payload.extend(write));
        let mut record = (payload.len() as u32).to_le_bytes().to_vec();
        record.extend(crc32fast::hash(&payload).to_le_bytes());
        record.extend(&payload);
        record
    };
    runs.iter().enumerate().map(record).collect()
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
    /// A reader begins on every record written, not the last commit's.
    PastCommit,
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
        let committed = Arc::new(committed);
        let shared = Shared { committed: committed.clone(), applied: committed.clone(), open: BTreeMap::new() };
        let readers = Readers {
            shared: Arc::new(Mutex::new(shared)),
            live_reader: bug == Some(Bug::LiveReader),
            past_commit: bug == Some(Bug::PastCommit),
        };
        Ok(LogKv { vfs, file, end_bytes, synced_end_bytes: end_bytes, committed, txn: None, readers, lazy_fsync })
    }

    fn txn(&mut self) -> &mut (Vec<Table>, Vec<Vec<u8>>) {
        self.txn.get_or_insert_with(|| (self.committed.to_vec(), Vec::new()))
    }

    /// What a read sees: the open transaction's view, else the committed state.
    pub fn view(&self) -> &[Table] {
        self.txn.as_ref().map_or(&self.committed, |(view, _)| view)
    }

    /// The committed state.
    pub fn committed(&self) -> &[Table] {
        &self.committed
    }

    /// The readers, as a handle of their own.
    pub fn readers(&self) -> &Readers {
        &self.readers
    }

    /// Put (or, with `value` `None`, delete) in the transaction; the old value.
    pub fn write(&mut self, table: usize, key: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let (view, writes) = self.txn();
        let mut write = vec![if value.is_some() { PUT } else { DELETE }, table as u8];
        write.extend((key.len() as u32).to_le_bytes());
        write.extend(key);
        let Some(value) = value else {
            writes.push(write);
            return view[table].remove(key);
        };
        write.extend((value.len() as u32).to_le_bytes());
        write.extend(value);
        writes.push(write);
        view[table].insert(key.to_vec(), value.to_vec())
    }

    /// Commit the transaction (an empty one if none is open); with `sync`,
    /// durably. Each record but the commit record is applied to the
    /// readers' applied state once written; the commit record publishes
    /// the transaction's view as the committed state.
    pub fn commit(&mut self, sync: bool) -> io::Result<()> {
        let (view, writes) = self.txn.take().unwrap_or_else(|| (self.committed.to_vec(), Vec::new()));
        let records = encode(&writes);
        let (last, records) = records.split_last().expect("a commit writes one record at least");
        for record in records {
            self.file.write_at(self.end_bytes, record)?;
            self.end_bytes += record.len() as u64;
            self.readers.applied(&record[HEADER_BYTES..]);
        }
        self.file.write_at(self.end_bytes, last)?;
        self.vfs.mark("appended");
        self.end_bytes += last.len() as u64;
        self.committed = Arc::new(view);
        self.readers.published(&self.committed);
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

impl Readers {
    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A record of a commit's run, not its commit record, is written.
    fn applied(&self, payload: &[u8]) {
        let mut shared = self.shared();
        let mut applied = shared.applied.to_vec();
        apply(&mut applied, payload).expect("a record the writer encoded decodes");
        shared.applied = Arc::new(applied);
    }

    /// A commit record is written: `committed` is the committed state.
    fn published(&self, committed: &Arc<Vec<Table>>) {
        let mut shared = self.shared();
        shared.committed = committed.clone();
        shared.applied = committed.clone();
    }

    /// Begin reader `reader`'s read-only transaction on the committed state.
    pub fn begin_read(&self, reader: usize) {
        let mut shared = self.shared();
        let state = match self.past_commit {
            true => shared.applied.clone(),
            false => shared.committed.clone(),
        };
        shared.open.insert(reader, state);
    }

    /// What reader `reader` sees: the state it began on.
    pub fn reader_view(&self, reader: usize) -> Arc<Vec<Table>> {
        let shared = self.shared();
        match self.live_reader {
            true => shared.committed.clone(),
            false => shared.open[&reader].clone(),
        }
    }

    /// End reader `reader`'s read-only transaction.
    pub fn end_read(&self, reader: usize) {
        self.shared().open.remove(&reader);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: u8) -> Vec<u8> {
        let mut write = vec![PUT, 0];
        write.extend(1u32.to_le_bytes());
        write.push(key);
        write.extend(1u32.to_le_bytes());
        write.push(key);
        write
    }

    fn log_of(records: &[Vec<u8>]) -> Vec<u8> {
        records.concat()
    }

    /// A transaction of more writes than a record holds is a run of
    /// records whose last alone is the commit record: a replay that ends
    /// before it keeps none of the run, and one of a small transaction is
    /// byte for byte the record of old (one record, no flag).
    #[test]
    fn a_run_of_records_commits_only_at_its_commit_record() {
        let writes: Vec<Vec<u8>> = (0..WRITES_PER_RECORD as u8 + 1).map(put).collect();
        let records = encode(&writes);
        assert_eq!(records.len(), 2);
        assert!(continued(&records[0][HEADER_BYTES..]) && !continued(&records[1][HEADER_BYTES..]));
        let (end_bytes, state) = replay(&records[0], 1, true).unwrap();
        assert_eq!((end_bytes, state[0].len()), (0, 0), "a run cut before its commit record is no commit");
        let (end_bytes, state) = replay(&log_of(&records), 1, true).unwrap();
        assert_eq!((end_bytes as usize, state[0].len()), (records[0].len() + records[1].len(), writes.len()));
        let small = encode(&writes[..2]);
        assert_eq!(small.len(), 1);
        assert_eq!(&small[0][HEADER_BYTES..HEADER_BYTES + 4], &2u32.to_le_bytes(), "no flag on a lone record");
    }

    /// Between a run's records a reader begins on the committed state;
    /// under `past-commit` on the half-applied one.
    #[test]
    fn only_the_planted_reader_sees_a_run_before_its_commit_record() {
        let writes: Vec<Vec<u8>> = (0..WRITES_PER_RECORD as u8 + 1).map(put).collect();
        let first = &encode(&writes)[0];
        for past_commit in [false, true] {
            let empty = Arc::new(vec![Table::new()]);
            let shared = Shared { committed: empty.clone(), applied: empty, open: BTreeMap::new() };
            let readers = Readers { shared: Arc::new(Mutex::new(shared)), live_reader: false, past_commit };
            readers.applied(&first[HEADER_BYTES..]);
            readers.begin_read(1);
            let seen = readers.reader_view(1)[0].len();
            assert_eq!(seen, if past_commit { WRITES_PER_RECORD } else { 0 }, "past_commit {past_commit}");
        }
    }
}
