//! Test helpers shared by the AOF's tests: record generators, a log
//! builder, and [`FailingVfs`], a [`MemVfs`] whose next write, set_len or
//! fsync can be told to fail (and which counts writes and fsyncs).

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use proptest::prelude::*;

use super::header::encode_header;
use super::Record;
use crate::vfs::{read_whole, Interpose, MemVfs, Vfs, VfsFile};

/// Any record, with small fields so that logs stay small.
pub fn arb_record() -> impl Strategy<Value = Record> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..12);
    prop_oneof![
        4 => proptest::collection::vec(bytes(), 0..5).prop_map(Record::Command),
        1 => (any::<u64>(), "[a-z0-9.-]{0,20}").prop_map(|(seq, file)| Record::Segmented { seq, file }),
        2 => (bytes(), any::<u64>(), any::<u64>()).prop_map(|(key, seq, weight)| Record::Stub { key, seq, weight }),
        1 => (bytes(), any::<i64>()).prop_map(|(table, max_seen)| Record::WindowMark { table, max_seen }),
    ]
}

/// Up to `max` records.
pub fn arb_records(max: usize) -> impl Strategy<Value = Vec<Record>> {
    proptest::collection::vec(arb_record(), 0..=max)
}

/// A few records of every kind.
pub fn sample_records() -> Vec<Record> {
    vec![
        Record::Command(vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]),
        Record::Segmented { seq: 3, file: "row-74-3.seg".to_string() },
        Record::Stub { key: b"t:1".to_vec(), seq: 3, weight: 40 },
        Record::Command(vec![b"DEL".to_vec(), b"k".to_vec()]),
    ]
}

/// The bytes of a whole log holding `records`.
pub fn log_bytes(records: &[Record]) -> Vec<u8> {
    let mut bytes = Vec::new();
    encode_header(&mut bytes, 1);
    for record in records {
        record.encode_frame(&mut bytes, crate::frame::Place::aof(1, 0));
    }
    bytes
}

/// The offsets where each frame after the header ends, for `records`.
pub fn frame_ends(records: &[Record]) -> Vec<u64> {
    let mut bytes = log_bytes(&[]);
    let mut ends = Vec::with_capacity(records.len());
    for record in records {
        record.encode_frame(&mut bytes, crate::frame::Place::aof(1, 0));
        ends.push(bytes.len() as u64);
    }
    ends
}

/// The whole contents of the file at `path`.
pub fn file_bytes(vfs: &dyn Vfs, path: &str) -> Vec<u8> {
    read_whole(vfs, Path::new(path)).unwrap()
}

/// Faults armed for the next matching call, and call counters.
#[derive(Debug, Default)]
pub struct Faults {
    /// The next fsync fails.
    pub fail_next_sync: bool,
    /// The next write lands only its first `n` bytes, then fails.
    pub fail_next_write_after_bytes: Option<usize>,
    /// The next set_len fails.
    pub fail_next_set_len: bool,
    /// File fsyncs that succeeded.
    pub syncs: u64,
    /// File writes that succeeded.
    pub writes: u64,
}

/// A [`MemVfs`] with armed faults; starts with the directory `/db`.
#[derive(Clone, Debug)]
pub struct FailingVfs {
    inner: Arc<MemVfs>,
    faults: Arc<Mutex<Faults>>,
}

impl FailingVfs {
    pub fn new() -> Arc<FailingVfs> {
        let inner = MemVfs::new();
        inner.create_dir_all(Path::new("/db")).unwrap();
        Arc::new(FailingVfs { inner: Arc::new(inner), faults: Arc::default() })
    }

    pub fn faults(&self) -> MutexGuard<'_, Faults> {
        lock_faults(&self.faults)
    }
}

/// Tests are single-threaded, so a held lock means the test itself still
/// holds a guard: fail loudly rather than deadlock.
fn lock_faults(faults: &Mutex<Faults>) -> MutexGuard<'_, Faults> {
    faults.try_lock().expect("Faults is still locked: hold one guard at a time, and none across I/O")
}

fn injected(what: &str) -> io::Error {
    io::Error::other(format!("injected {what} failure"))
}

impl Interpose for FailingVfs {
    fn inner(&self) -> &dyn Vfs {
        self.inner.as_ref()
    }
    fn on_write_at(&self, file: &mut dyn VfsFile, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        let mut faults = self.faults();
        if let Some(landed_bytes) = faults.fail_next_write_after_bytes.take() {
            file.write_at(offset_bytes, &data[..landed_bytes.min(data.len())])?;
            return Err(injected("write"));
        }
        faults.writes += 1;
        file.write_at(offset_bytes, data)
    }
    fn on_set_len(&self, file: &mut dyn VfsFile, len_bytes: u64) -> io::Result<()> {
        if std::mem::take(&mut self.faults().fail_next_set_len) {
            return Err(injected("set_len"));
        }
        file.set_len(len_bytes)
    }
    fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        let mut faults = self.faults();
        if std::mem::take(&mut faults.fail_next_sync) {
            return Err(injected("fsync"));
        }
        faults.syncs += 1;
        file.sync()
    }
}
