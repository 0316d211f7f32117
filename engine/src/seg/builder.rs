//! [`SegBuilder`]: writes one segment file, front to back, in one pass.
//!
//! Records stream out through a 64 KiB buffer as they are pushed, so a
//! large eviction never holds its values in memory twice; only the index
//! (keys plus 16 bytes a record) is kept until [`SegBuilder::finish`]
//! appends it, then the key bounds and the tail, and fsyncs the file.
//!
//! The builder makes the file durable but not its name: the directory
//! fsync is the store's step in the seal protocol, taken after `finish`
//! and before the segment is registered in the manifest.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::format::{put_index_entry, record_crc, Tail, HEAD_BYTES, INDEX_ENTRY_FIXED_BYTES, MAGIC, TAIL_BYTES};
use super::SegMeta;
use crate::codec::put_len_prefixed;
use crate::vfs::{OpenMode, Vfs, VfsFile};
use crate::IoOp;
use crate::{Error, Result};

/// Bytes gathered before one `write_at`. Large enough that a segment is a
/// handful of big writes, small enough not to matter in memory.
pub(super) const CHUNK_BYTES: usize = 64 << 10;

/// Writes a segment file (see the module doc). Keys must be pushed in
/// strictly ascending bytewise order.
pub struct SegBuilder {
    file: Box<dyn VfsFile>,
    path: PathBuf,
    seq: u64,
    /// Bytes not yet handed to `write_at`; they belong at `flushed_bytes`.
    chunk: Vec<u8>,
    /// Bytes of the file already written.
    flushed_bytes: u64,
    /// The encoded index, appended to the file by `finish`.
    index: Vec<u8>,
    /// Where the first and the latest key sit inside `index`: the minimum
    /// for the footer, and the bar the next key must clear.
    first_key: Range<usize>,
    last_key: Range<usize>,
    records: u64,
    /// Set when a write failed: the file's contents past `flushed_bytes`
    /// are unknown, so the builder refuses to go on.
    failed: bool,
}

impl SegBuilder {
    /// Creates (OpenMode::Truncate) the file at `path` for segment `seq`.
    pub fn create(vfs: &dyn Vfs, path: &Path, seq: u64) -> Result<SegBuilder> {
        let file = vfs.open(path, OpenMode::Truncate).map_err(|e| Error::io(IoOp::Create, path, e))?;
        let mut builder = SegBuilder {
            file,
            path: path.to_path_buf(),
            seq,
            chunk: Vec::with_capacity(CHUNK_BYTES),
            flushed_bytes: 0,
            index: Vec::new(),
            first_key: 0..0,
            last_key: 0..0,
            records: 0,
            failed: false,
        };
        builder.write(&MAGIC)?;
        assert_eq!(builder.end_offset_bytes(), HEAD_BYTES as u64);
        Ok(builder)
    }

    /// Keys strictly ascending (bytewise); unsorted or duplicate →
    /// Error::Invalid naming the file and the record index; nothing
    /// written for that push.
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_usable()?;
        let record = self.records;
        if u32::try_from(key.len()).is_err() {
            return Err(self.invalid(record, format!("key of {} bytes is over the 4 GiB limit", key.len())));
        }
        let Ok(value_len) = u32::try_from(value.len()) else {
            return Err(self.invalid(record, format!("value of {} bytes is over the 4 GiB limit", value.len())));
        };
        if record > 0 {
            let previous = &self.index[self.last_key.clone()];
            if key == previous {
                return Err(self.invalid(record, "duplicate key".to_string()));
            }
            if key < previous {
                return Err(self.invalid(record, "key sorts below the previous key".to_string()));
            }
        }

        let value_offset_bytes = self.end_offset_bytes();
        self.write(value)?;
        self.write(&record_crc(self.seq, record, key, value).to_le_bytes())?;

        let entry_start = self.index.len();
        put_index_entry(&mut self.index, key, value_offset_bytes, value_len);
        let key_range = entry_start + INDEX_ENTRY_FIXED_BYTES..self.index.len();
        if record == 0 {
            self.first_key = key_range.clone();
        }
        self.last_key = key_range;
        self.records += 1;
        Ok(())
    }

    /// Writes the index and footer, then fsyncs the file (VfsFile::sync).
    /// Does NOT fsync the directory (that is the store's protocol step).
    /// Returns the meta.
    pub fn finish(mut self) -> Result<SegMeta> {
        self.check_usable()?;
        let index_offset_bytes = self.end_offset_bytes();
        let index = std::mem::take(&mut self.index);
        self.write(&index)?;

        let (min_key, max_key) = if self.records == 0 {
            (Vec::new(), Vec::new())
        } else {
            (index[self.first_key.clone()].to_vec(), index[self.last_key.clone()].to_vec())
        };
        let bounds_offset_bytes = self.end_offset_bytes();
        let mut footer = Vec::with_capacity(8 + min_key.len() + max_key.len() + TAIL_BYTES);
        put_len_prefixed(&mut footer, &min_key);
        put_len_prefixed(&mut footer, &max_key);
        let tail = Tail {
            seq: self.seq,
            records: self.records,
            index_offset_bytes,
            bounds_offset_bytes,
            index_crc: crc32fast::hash(&index),
            bounds_crc: crc32fast::hash(&footer),
        };
        footer.extend_from_slice(&tail.encode());
        self.write(&footer)?;
        self.flush()?;

        if !canary!(SegNoFsync) {
            self.file.sync().map_err(|e| Error::io(IoOp::Sync, &self.path, e))?;
        }
        Ok(SegMeta { seq: self.seq, records: self.records, min_key, max_key })
    }

    /// The file offset the next byte written will land at.
    fn end_offset_bytes(&self) -> u64 {
        self.flushed_bytes + self.chunk.len() as u64
    }

    /// Append `data` at the end of the file, through the chunk buffer.
    fn write(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            if self.chunk.is_empty() && data.len() >= CHUNK_BYTES {
                // Copying a piece this big through the buffer would cost a
                // memcpy and save no write.
                return self.write_at_end(data);
            }
            let take = (CHUNK_BYTES - self.chunk.len()).min(data.len());
            self.chunk.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.chunk.len() == CHUNK_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Hand the buffered bytes to the file.
    fn flush(&mut self) -> Result<()> {
        if self.chunk.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.chunk);
        let result = self.write_at_end(&chunk);
        // Keep the allocation: the buffer is reused for the whole file.
        self.chunk = chunk;
        self.chunk.clear();
        result
    }

    /// One `write_at` at `flushed_bytes`; only ever called with the
    /// buffer empty, so the bytes land in file order.
    fn write_at_end(&mut self, data: &[u8]) -> Result<()> {
        assert!(self.chunk.is_empty(), "buffered bytes would be overtaken");
        if let Err(e) = self.file.write_at(self.flushed_bytes, data) {
            self.failed = true;
            return Err(Error::io(IoOp::Write, &self.path, e));
        }
        self.flushed_bytes += data.len() as u64;
        Ok(())
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed {
            return Err(Error::Invalid(format!(
                "segment {}: an earlier write failed; the builder cannot continue",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn invalid(&self, record: u64, why: String) -> Error {
        Error::Invalid(format!("segment {}: record {record}: {why}", self.path.display()))
    }
}

impl fmt::Debug for SegBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegBuilder")
            .field("path", &self.path)
            .field("seq", &self.seq)
            .field("records", &self.records)
            .field("end_offset_bytes", &self.end_offset_bytes())
            .field("failed", &self.failed)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::vfs::{Interpose, MemVfs};

    /// What the builder did to the disk, in order.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Op {
        Write { offset_bytes: u64, len_bytes: usize },
        Sync,
        SyncDir,
    }

    /// A `MemVfs` that records writes and syncs, and can fail writes.
    #[derive(Clone, Default)]
    struct Recording {
        inner: Arc<MemVfs>,
        ops: Arc<Mutex<Vec<Op>>>,
        fail_writes: Arc<AtomicBool>,
    }

    impl Interpose for Recording {
        fn inner(&self) -> &dyn Vfs {
            self.inner.as_ref()
        }
        fn on_write_at(&self, file: &mut dyn VfsFile, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
            if self.fail_writes.load(Ordering::Relaxed) {
                return Err(io::Error::other("injected write failure"));
            }
            self.ops.lock().unwrap().push(Op::Write { offset_bytes, len_bytes: data.len() });
            file.write_at(offset_bytes, data)
        }
        fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
            self.ops.lock().unwrap().push(Op::Sync);
            file.sync()
        }
        fn on_sync_dir(&self, dir: &Path) -> io::Result<()> {
            self.ops.lock().unwrap().push(Op::SyncDir);
            self.inner.sync_dir(dir)
        }
    }

    fn recording() -> (Recording, PathBuf) {
        let vfs = Recording::default();
        vfs.create_dir_all(Path::new("/db")).unwrap();
        (vfs, PathBuf::from("/db/row-74-3.seg"))
    }

    #[test]
    fn writes_big_contiguous_chunks_then_syncs_the_file_once_and_not_the_directory() {
        let (vfs, path) = recording();
        let mut builder = SegBuilder::create(&vfs, &path, 3).unwrap();
        for i in 0u32..2000 {
            builder.push(format!("key-{i:05}").as_bytes(), &[i as u8; 100]).unwrap();
        }
        builder.push(b"zz-big", &vec![7u8; 3 * CHUNK_BYTES + 5]).unwrap();
        let meta = builder.finish().unwrap();
        assert_eq!(meta.records, 2001);

        let ops = vfs.ops.lock().unwrap().clone();
        assert_eq!(ops.last(), Some(&Op::Sync), "the sync comes after every write");
        let writes: Vec<(u64, usize)> = ops[..ops.len() - 1]
            .iter()
            .map(|op| match op {
                Op::Write { offset_bytes, len_bytes } => (*offset_bytes, *len_bytes),
                other => panic!("only writes before the final sync, got {other:?}"),
            })
            .collect();
        let mut end_bytes = 0u64;
        for (i, &(offset_bytes, len_bytes)) in writes.iter().enumerate() {
            assert_eq!(offset_bytes, end_bytes, "write {i} is not at the end of the file");
            if i + 1 < writes.len() {
                assert!(len_bytes >= CHUNK_BYTES, "write {i} of {len_bytes} bytes is smaller than a chunk");
            }
            end_bytes += len_bytes as u64;
        }
        assert_eq!(end_bytes, vfs.map_readonly(&path).unwrap().len() as u64);
    }

    #[test]
    fn a_failed_write_is_an_io_error_and_the_builder_refuses_to_go_on() {
        let (vfs, path) = recording();
        let mut builder = SegBuilder::create(&vfs, &path, 3).unwrap();
        builder.push(b"a", b"1").unwrap();
        vfs.fail_writes.store(true, Ordering::Relaxed);
        let err = builder.push(b"b", &vec![0u8; CHUNK_BYTES]).unwrap_err();
        assert!(matches!(&err, Error::Io { op: IoOp::Write, path: p, .. } if *p == path), "{err}");
        vfs.fail_writes.store(false, Ordering::Relaxed);
        assert!(matches!(builder.push(b"c", b"3"), Err(Error::Invalid(_))));
        assert!(matches!(builder.finish(), Err(Error::Invalid(_))));
        assert!(!vfs.ops.lock().unwrap().contains(&Op::Sync), "a failed segment is never synced");
    }

    #[test]
    fn create_fails_as_io_without_a_directory() {
        let err = SegBuilder::create(&MemVfs::new(), Path::new("/nowhere/x.seg"), 1).unwrap_err();
        assert!(matches!(err, Error::Io { op: IoOp::Create, .. }), "{err}");
    }
}
