//! [`Seg`]: an open, verified segment, answering point lookups and range
//! scans straight out of its mapping.
//!
//! Navigation (which record holds a key) runs on the in-memory index that
//! [`verify`](super::verify) built from checksummed bytes. Every record a
//! read returns has its own checksum verified on the spot, every time: a
//! mapping is only a view of the disk, and a page re-read after open may
//! come back rotten. The checksum binds the record to its key, so rot can
//! make a read fail with `Corrupt` but never make it return other data.

use std::fmt;
use std::path::{Path, PathBuf};

use super::format::{record_crc, u32_at};
use super::index::SegIndex;
use super::verify::verify;
use super::SegMeta;
use crate::vfs::{Mapping, Vfs};
use crate::IoOp;
use crate::{Error, Result};

/// An open segment file (see the module doc).
pub struct Seg {
    path: PathBuf,
    bytes: Mapping,
    /// The mapping's length when it was verified. Every read checks it is
    /// unchanged, which keeps the index's ranges in bounds.
    len_bytes: usize,
    meta: SegMeta,
    /// One entry per record, in key order.
    index: SegIndex,
}

impl Seg {
    /// vfs.map_readonly(path) then from_mapping.
    pub fn open(vfs: &dyn Vfs, path: &Path) -> Result<Seg> {
        let bytes = vfs.map_readonly(path).map_err(|e| Error::io(IoOp::Map, path, e))?;
        Seg::from_mapping(path.to_path_buf(), bytes)
    }

    /// Parse + verify footer and index (everything navigation trusts);
    /// `path` is only for error messages. This is the fuzz target's entry
    /// point.
    pub fn from_mapping(path: PathBuf, bytes: Mapping) -> Result<Seg> {
        let (meta, index) = verify(&path, &bytes)?;
        assert_eq!(index.len() as u64, meta.records);
        let len_bytes = bytes.len();
        Ok(Seg { path, bytes, len_bytes, meta, index })
    }

    /// The segment's identity and key bounds, as its footer states them.
    pub fn meta(&self) -> &SegMeta {
        &self.meta
    }

    /// The file this segment was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Point lookup. Verifies the checksum of the record it returns (and
    /// that it is bound to this key), every time.
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        let bytes = self.bytes()?;
        match self.index.search(bytes, key) {
            Ok(record) => self.verified_value(bytes, record, key).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Inclusive range [lo, hi] in key order; each item verified like get.
    /// lo > hi → empty.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub fn range<'a>(&'a self, lo: &[u8], hi: &[u8]) -> SegRange<'a> {
        if lo > hi {
            return SegRange { seg: self, next: 0, end: 0 };
        }
        let Ok(bytes) = self.bytes() else {
            // The mapping changed size: a walk of one item, which reports it
            // (none if there is nothing to read anyway).
            return SegRange { seg: self, next: 0, end: self.index.len().min(1) };
        };
        let next = match self.index.search(bytes, lo) {
            Ok(record) | Err(record) => record,
        };
        let end = match self.index.search(bytes, hi) {
            Ok(record) => record + 1,
            Err(record) => record,
        };
        assert!(next <= end, "lo <= hi, so its position is not after hi's");
        SegRange { seg: self, next, end }
    }

    /// All records in key order.
    pub fn iter(&self) -> SegRange<'_> {
        SegRange { seg: self, next: 0, end: self.index.len() }
    }

    /// The mapped bytes, provided they are still the length verify saw.
    /// A real mapping never changes length; the check costs one compare
    /// and turns a broken `Mapping` into an error instead of a panic.
    fn bytes(&self) -> Result<&[u8]> {
        let bytes: &[u8] = &self.bytes;
        if bytes.len() != self.len_bytes {
            return Err(Error::corrupt(
                &self.path,
                bytes.len().min(self.len_bytes) as u64,
                format!("mapping changed from {} to {} bytes after open", self.len_bytes, bytes.len()),
            ));
        }
        Ok(bytes)
    }

    /// Record `record`'s key and verified value.
    fn record(&self, record: usize) -> Result<(&[u8], &[u8])> {
        let bytes = self.bytes()?;
        let key = &bytes[self.index.entry(record).key_range()];
        Ok((key, self.verified_value(bytes, record, key)?))
    }

    /// Record `record`'s value, after checking its checksum under `key`.
    fn verified_value<'a>(&self, bytes: &'a [u8], record: usize, key: &[u8]) -> Result<&'a [u8]> {
        let entry = self.index.entry(record);
        let value = &bytes[entry.value_range()];
        let stored_crc = u32_at(bytes, entry.crc_range().start);
        if record_crc(self.meta.seq, record as u64, key, value) != stored_crc && !canary!(SegNoChecksum) {
            return Err(Error::corrupt(
                &self.path,
                entry.value_range().start as u64,
                format!("record {record}: checksum mismatch"),
            ));
        }
        Ok(value)
    }
}

impl fmt::Debug for Seg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not the keys: a bound can be 100 KiB of bytes.
        f.debug_struct("Seg")
            .field("path", &self.path)
            .field("seq", &self.meta.seq)
            .field("records", &self.meta.records)
            .field("len_bytes", &self.len_bytes)
            .finish()
    }
}

/// Records of a [`Seg`] in key order, each verified as it is reached.
/// After yielding an error it ends: the caller learns that the segment is
/// corrupt, not a list of everything still readable around the damage.
#[derive(Debug)]
pub struct SegRange<'a> {
    seg: &'a Seg,
    /// The next record to yield.
    next: usize,
    /// One past the last record to yield.
    end: usize,
}

impl<'a> Iterator for SegRange<'a> {
    type Item = Result<(&'a [u8], &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let record = self.next;
        self.next += 1;
        let item = self.seg.record(record);
        if item.is_err() {
            self.next = self.end;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // At least one item while any remain (an error is an item too);
        // at most all of them.
        let remaining = self.end - self.next;
        (remaining.min(1), Some(remaining))
    }
}

impl std::iter::FusedIterator for SegRange<'_> {}
