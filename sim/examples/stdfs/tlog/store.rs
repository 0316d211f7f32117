//! `TLog`: a key-value log of our own with background threads, written
//! to be correct, through `std::fs` and std's `Mutex`/`Condvar` alone, so
//! that the stdfs layer's scheduler (issue 48) has an engine whose bugs
//! live between threads: a client's commit is appended by a **flusher**
//! thread that batches the queued commits into one write and one fsync
//! (group commit), and a **compactor** thread rewrites the log as one
//! snapshot record when it grows.
//!
//! The file `log` is a sequence of records `[payload len u32][crc32 u32]
//! [payload]` (little-endian); a payload is a count of operations, each
//! `[key len u32][key][1 put | 0 delete][value len u32][value]`. Open
//! replays the records in order and stops at the first that does not
//! check (a torn tail: a crash mid-append of unsynced bytes), cuts the
//! file there and syncs it, so later appends follow a valid prefix.
//!
//! A durable commit returns once the flusher has written and fsynced the
//! batch holding it; a buffered one once it is written (a power loss may
//! take it back, never half of it: records are whole or dropped). After
//! an I/O error the log is poisoned: every later commit fails, and the
//! kit reopens. Compaction writes `log.compact`, fsyncs it, renames it
//! over `log`, fsyncs the directory and appends to it from then on, all
//! under the writer's lock, so no batch lands in the file being replaced;
//! a compaction that fails is given up, never fatal (its error belongs to
//! no client's operation).
//!
//! Three realistic mistakes can be planted ([`TlogPlant`]), each off
//! unless a run names it; the scheduler's interleavings expose each.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use super::waits::{self, EventFd};
use super::TlogPlant;

/// One table's rows.
pub type Table = BTreeMap<Vec<u8>, Vec<u8>>;
/// A write of a transaction: a put, or with `None` a delete.
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// The log's name, and the name a compaction writes first.
pub const LOG: &str = "log";
pub const COMPACT: &str = "log.compact";
/// The log's size past which the flusher asks for a compaction.
const COMPACT_BYTES: u64 = 2048;

fn corrupt(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend((bytes.len() as u32).to_le_bytes());
    out.extend(bytes);
}

/// The record of `ops`, header and all.
pub fn encode(ops: &[Op]) -> Vec<u8> {
    let mut payload = (ops.len() as u32).to_le_bytes().to_vec();
    for (key, value) in ops {
        put_bytes(&mut payload, key);
        payload.push(u8::from(value.is_some()));
        put_bytes(&mut payload, value.as_deref().unwrap_or_default());
    }
    let mut out = (payload.len() as u32).to_le_bytes().to_vec();
    out.extend(crc32fast::hash(&payload).to_le_bytes());
    out.extend(payload);
    out
}

fn take<'a>(bytes: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
    let taken = bytes.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(taken)
}

fn take_u32(bytes: &[u8], at: &mut usize) -> Option<usize> {
    Some(u32::from_le_bytes(take(bytes, at, 4)?.try_into().ok()?) as usize)
}

/// The operations of the payload, or why it does not parse (a payload
/// whose checksum held: so a bug of ours, refused).
fn decode_payload(payload: &[u8]) -> io::Result<Vec<Op>> {
    let bad = || corrupt("a record whose checksum holds does not parse");
    let mut at = 0;
    let count = take_u32(payload, &mut at).ok_or_else(bad)?;
    let mut ops = Vec::new();
    for _ in 0..count {
        let key_len = take_u32(payload, &mut at).ok_or_else(bad)?;
        let key = take(payload, &mut at, key_len).ok_or_else(bad)?.to_vec();
        let put = take(payload, &mut at, 1).ok_or_else(bad)?[0] == 1;
        let value_len = take_u32(payload, &mut at).ok_or_else(bad)?;
        let value = take(payload, &mut at, value_len).ok_or_else(bad)?.to_vec();
        ops.push((key, put.then_some(value)));
    }
    if at != payload.len() {
        return Err(bad());
    }
    Ok(ops)
}

/// The state the valid prefix of `bytes` holds, and that prefix's length.
pub fn replay(bytes: &[u8]) -> io::Result<(Table, usize)> {
    let mut state = Table::new();
    let mut at = 0;
    loop {
        let mut next = at;
        let (Some(len), Some(crc)) = (take_u32(bytes, &mut next), take_u32(bytes, &mut next)) else { break };
        // A payload holds at least its count: a shorter one is no record
        // (zeros where a lost append's length survived: length 0, crc 0).
        if len < 4 {
            break;
        }
        let Some(payload) = take(bytes, &mut next, len) else { break };
        if crc32fast::hash(payload) as usize != crc {
            break;
        }
        apply(&mut state, &decode_payload(payload)?);
        at = next;
    }
    Ok((state, at))
}

fn apply(state: &mut Table, ops: &[Op]) {
    for (key, value) in ops {
        match value {
            Some(value) => state.insert(key.clone(), value.clone()),
            None => state.remove(key),
        };
    }
}

/// The commits waiting for the flusher, and how far it got.
#[derive(Default)]
struct Queue {
    pending: Vec<(u64, Vec<Op>)>,
    next_seq: u64,
    written_seq: u64,
    synced_seq: u64,
    failed: Option<String>,
    stop: bool,
    compact_wanted: bool,
}

/// The log file as the flusher appends to it: its handle, its size, and
/// the state its records amount to (what a compaction writes).
struct Writer {
    file: File,
    bytes: u64,
    state: Table,
    unsynced: bool,
    /// A compaction failed: `log` names the old file or the new one, and
    /// the flusher appends to whichever it is (reopened at its next batch,
    /// whose operation then meets any error of it).
    reopen: bool,
    /// A compaction's rename may not be durable yet: the flusher syncs
    /// the directory before the next fsync it acknowledges.
    dir_unsynced: bool,
}

/// What the threads share.
struct Shared {
    dir: PathBuf,
    plant: Option<TlogPlant>,
    queue: Mutex<Queue>,
    /// The flusher waits here for work; clients for their batch; the
    /// compactor for a request.
    work: Condvar,
    done: Condvar,
    compact: Condvar,
    /// A durable commit is queued: the flusher's next batch fsyncs.
    sync_needed: AtomicBool,
    /// Work was queued (or the log stops): what a spinning flusher waits
    /// for (plant `spin-wait`).
    ready: AtomicBool,
    /// What a polling flusher waits on (plant `eventfd-wait`).
    event: Option<EventFd>,
    writer: Mutex<Writer>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn planted(&self, plant: TlogPlant) -> bool {
        self.plant == Some(plant)
    }

    /// Tell a flusher that waits outside the condition variable (the
    /// unschedulable plants) that there is work.
    fn signal(&self) {
        self.ready.store(true, Ordering::SeqCst);
        if let Some(event) = &self.event {
            event.signal();
        }
    }

    /// The flusher's wait for work before it takes the lock, under the
    /// unschedulable plants (`waits`); none otherwise.
    fn wait_outside(&self) -> io::Result<()> {
        match (self.plant, &self.event) {
            (Some(TlogPlant::SpinWait), _) => waits::spin_until(&self.ready),
            (Some(TlogPlant::EventfdWait), Some(event)) => event.wait()?,
            _ => {}
        }
        Ok(())
    }

    /// Poison the log with `error`: every waiting and later commit fails.
    fn fail(&self, error: &io::Error) {
        let mut queue = lock(&self.queue);
        queue.failed.get_or_insert_with(|| error.to_string());
        self.done.notify_all();
    }
}

/// The flusher: take every queued commit, write them as records, fsync
/// when a durable one is among them, tell the clients.
fn flusher(shared: Arc<Shared>) {
    loop {
        if let Err(e) = shared.wait_outside() {
            shared.fail(&e);
        }
        let (batch, sync) = {
            let mut queue = lock(&shared.queue);
            while queue.pending.is_empty() && !queue.stop {
                queue = shared.work.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            if queue.pending.is_empty() || queue.failed.is_some() {
                drop(queue);
                final_sync(&shared);
                return;
            }
            (std::mem::take(&mut queue.pending), shared.sync_needed.swap(false, Ordering::SeqCst))
        };
        let last = batch.last().expect("a batch is not empty").0;
        if let Err(e) = write_batch(&shared, &batch, sync, last) {
            shared.fail(&e);
        }
    }
}

/// Write `batch` (and fsync it when `sync`) under the writer's lock;
/// publish how far the log is written and synced.
fn write_batch(shared: &Shared, batch: &[(u64, Vec<Op>)], sync: bool, last: u64) -> io::Result<()> {
    let mut writer = lock(&shared.writer);
    if writer.reopen {
        writer.file = OpenOptions::new().read(true).append(true).open(shared.dir.join(LOG))?;
        writer.bytes = writer.file.metadata()?.len();
        writer.reopen = false;
    }
    if sync && writer.dir_unsynced {
        File::open(&shared.dir)?.sync_all()?;
        writer.dir_unsynced = false;
    }
    let mut bytes = Vec::new();
    for (_, ops) in batch {
        bytes.extend(encode(ops));
        apply(&mut writer.state, ops);
    }
    writer.file.write_all(&bytes)?;
    writer.bytes += bytes.len() as u64;
    writer.unsynced = true;
    let log_bytes = writer.bytes;
    let publish = |synced: bool| {
        let mut queue = lock(&shared.queue);
        queue.written_seq = last;
        if synced {
            queue.synced_seq = last;
        }
        if log_bytes > COMPACT_BYTES && !queue.compact_wanted {
            queue.compact_wanted = true;
            shared.compact.notify_one();
        }
        shared.done.notify_all();
    };
    if shared.planted(TlogPlant::AckBeforeFsync) && sync {
        publish(true);
        writer.file.sync_data()?;
        writer.unsynced = false;
        return Ok(());
    }
    if sync {
        writer.file.sync_data()?;
        writer.unsynced = false;
    }
    publish(sync);
    Ok(())
}

/// At close: what is written and not synced is synced (a clean close
/// makes every commit durable).
fn final_sync(shared: &Shared) {
    let mut writer = lock(&shared.writer);
    if (writer.unsynced || writer.dir_unsynced) && lock(&shared.queue).failed.is_none() {
        let dir_synced = if writer.dir_unsynced { File::open(&shared.dir).and_then(|d| d.sync_all()) } else { Ok(()) };
        match dir_synced.and_then(|()| writer.file.sync_data()) {
            Ok(()) => (writer.unsynced, writer.dir_unsynced) = (false, false),
            Err(e) => shared.fail(&e),
        }
    }
}

/// The compactor: on request, replace the log by one record of its state.
fn compactor(shared: Arc<Shared>) {
    loop {
        {
            let mut queue = lock(&shared.queue);
            while !queue.compact_wanted && !queue.stop {
                queue = shared.compact.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
            if queue.stop || queue.failed.is_some() {
                return;
            }
        }
        compact(&shared);
        lock(&shared.queue).compact_wanted = false;
    }
}

/// Write the state as `log.compact`, fsync, rename over `log`, fsync the
/// directory, and append to the new file from now on: all under the
/// writer's lock, unless the plant lets go of it after the snapshot. A
/// compaction that fails is given up, not fatal: the flusher reopens
/// `log`, whichever file it names, and syncs the directory before its
/// next acknowledged fsync (see [`Writer`]).
fn compact(shared: &Shared) {
    let writer = lock(&shared.writer);
    let ops: Vec<Op> = writer.state.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
    let state = writer.state.clone();
    let held = if shared.planted(TlogPlant::CompactRenameRace) {
        drop(writer);
        None
    } else {
        Some(writer)
    };
    let record = encode(&ops);
    let replaced = replace_log(&shared.dir, &record);
    let mut writer = held.unwrap_or_else(|| lock(&shared.writer));
    match replaced {
        Ok(file) => {
            *writer =
                Writer { file, bytes: record.len() as u64, state, unsynced: false, reopen: false, dir_unsynced: false }
        }
        Err(_) => (writer.reopen, writer.dir_unsynced) = (true, true),
    }
}

/// `record` as the new `log`: temp file, fsync, rename, directory fsync.
fn replace_log(dir: &Path, record: &[u8]) -> io::Result<File> {
    let temp = dir.join(COMPACT);
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&temp)?;
    file.write_all(record)?;
    file.sync_all()?;
    fs::rename(&temp, dir.join(LOG))?;
    File::open(dir)?.sync_all()?;
    Ok(file)
}

/// An open log: the client's side (its committed view and open
/// transaction) and the two threads behind it.
pub struct TLog {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    committed: Table,
    txn: Option<(Table, Vec<Op>)>,
}

impl TLog {
    /// The application's setup: an empty log in `dir`.
    pub fn create(dir: &Path) -> io::Result<()> {
        File::create(dir.join(LOG))?.sync_all()
    }

    /// Open the log in `dir`: sync the directory (a rename whose
    /// directory fsync failed must not be served before it is durable),
    /// replay, cut a torn tail, sync the log, start the flusher and the
    /// compactor.
    pub fn open(dir: &Path, plant: Option<TlogPlant>) -> io::Result<TLog> {
        File::open(dir)?.sync_all()?;
        let mut file = OpenOptions::new().read(true).append(true).open(dir.join(LOG))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (state, valid) = replay(&bytes)?;
        if valid < bytes.len() {
            file.set_len(valid as u64)?;
        }
        // What this open serves must survive a power loss: the bytes read
        // may be a failed instance's, written and never synced (the kit's
        // durability check caught the open that trusted them).
        file.sync_all()?;
        let writer = Writer {
            file,
            bytes: valid as u64,
            state: state.clone(),
            unsynced: false,
            reopen: false,
            dir_unsynced: false,
        };
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            plant,
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            done: Condvar::new(),
            compact: Condvar::new(),
            sync_needed: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            event: if plant == Some(TlogPlant::EventfdWait) { Some(EventFd::new()?) } else { None },
            writer: Mutex::new(writer),
        });
        let start = |name: &str, run: fn(Arc<Shared>)| {
            let shared = Arc::clone(&shared);
            thread::Builder::new().name(name.into()).spawn(move || run(shared))
        };
        let threads = vec![start("tlog-flusher", flusher)?, start("tlog-compactor", compactor)?];
        Ok(TLog { shared, threads, committed: state, txn: None })
    }

    /// What a read sees: the open transaction's view, else the committed
    /// state.
    pub fn view(&self) -> &Table {
        self.txn.as_ref().map_or(&self.committed, |(view, _)| view)
    }

    /// The committed state.
    pub fn committed(&self) -> &Table {
        &self.committed
    }

    /// Put (or, with `value` `None`, delete) in the transaction: the value
    /// before.
    pub fn write(&mut self, key: &[u8], value: Option<&[u8]>) -> Option<Vec<u8>> {
        let (view, ops) = self.txn.get_or_insert_with(|| (self.committed.clone(), Vec::new()));
        ops.push((key.to_vec(), value.map(<[u8]>::to_vec)));
        match value {
            Some(value) => view.insert(key.to_vec(), value.to_vec()),
            None => view.remove(key),
        }
    }

    /// Drop the open transaction.
    pub fn abort(&mut self) {
        self.txn = None;
    }

    /// Commit the transaction (an empty one if none is open): queued for
    /// the flusher, and returned once written, and with `durable` synced.
    pub fn commit(&mut self, durable: bool) -> io::Result<()> {
        let (view, ops) = self.txn.take().unwrap_or_else(|| (self.committed.clone(), Vec::new()));
        let seq = self.enqueue(ops, durable)?;
        let mut queue = lock(&self.shared.queue);
        loop {
            if let Some(failed) = &queue.failed {
                return Err(io::Error::other(format!("the log failed: {failed}")));
            }
            if queue.written_seq >= seq && (!durable || queue.synced_seq >= seq) {
                break;
            }
            queue = self.shared.done.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
        drop(queue);
        self.committed = view;
        Ok(())
    }

    /// Queue `ops` for the flusher and wake it: the commit's sequence.
    fn enqueue(&self, ops: Vec<Op>, durable: bool) -> io::Result<u64> {
        let shared = &self.shared;
        let late_flag = shared.planted(TlogPlant::UnsyncedFlag);
        let seq = {
            let mut queue = lock(&shared.queue);
            if let Some(failed) = &queue.failed {
                return Err(io::Error::other(format!("the log failed: {failed}")));
            }
            queue.next_seq += 1;
            let seq = queue.next_seq;
            if durable && !late_flag {
                shared.sync_needed.store(true, Ordering::SeqCst);
            }
            queue.pending.push((seq, ops));
            seq
        };
        shared.work.notify_one();
        shared.signal();
        if durable && late_flag {
            shared.sync_needed.store(true, Ordering::SeqCst);
        }
        Ok(seq)
    }

    /// Stop the threads (the flusher syncs what is written first) and
    /// wait for them: the log's error, if it failed.
    pub fn close_in_place(&mut self) -> io::Result<()> {
        self.stop();
        match lock(&self.shared.queue).failed.take() {
            Some(failed) => Err(io::Error::other(format!("the log failed: {failed}"))),
            None => Ok(()),
        }
    }

    fn stop(&mut self) {
        lock(&self.shared.queue).stop = true;
        self.shared.work.notify_all();
        self.shared.signal();
        self.shared.compact.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for TLog {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_replay_to_the_state_and_a_torn_tail_is_cut() {
        let first: Vec<Op> = vec![(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), Some(vec![9; 40]))];
        let second: Vec<Op> = vec![(b"a".to_vec(), None)];
        let mut bytes = encode(&first);
        let one = bytes.len();
        bytes.extend(encode(&second));
        let (state, valid) = replay(&bytes).expect("replays");
        assert_eq!(valid, bytes.len());
        assert_eq!(state.keys().collect::<Vec<_>>(), [b"b"]);
        for cut in one..bytes.len() {
            let (state, valid) = replay(&bytes[..cut]).expect("a torn tail is not an error");
            assert_eq!((valid, state.len()), (one, 2), "cut at {cut}: the first record only");
        }
        let mut flipped = bytes.clone();
        flipped[one + 8 + 2] ^= 1;
        assert_eq!(replay(&flipped).expect("replays").1, one, "a flipped record ends the log");
    }
}
