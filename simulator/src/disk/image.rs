//! [`DiskImage`]: a whole disk just after power loss — each directory's
//! entries and each named file's bytes, everything durable, nothing
//! pending. A crash state of a snapshot (`crash_states.rs`) is turned into
//! one (`crash_image.rs`), then hashed, so that byte-identical disks are
//! recovered once, and turned into a fresh [`SimVfs`](super::SimVfs) for
//! the engine to open.
//!
//! The hash covers exactly what the engine can observe: directory paths,
//! entry names and each named file's bytes, in sorted order. Inode numbers
//! are left out — the engine never sees them — so two crash states that
//! leave the same bytes under the same names are the same image.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use super::data::InodeId;
use super::history::History;

/// A disk after power loss (see the module doc).
#[derive(Clone, Debug)]
pub struct DiskImage {
    pub(super) dirs: BTreeMap<PathBuf, BTreeMap<String, InodeId>>,
    /// Exactly the inodes some entry names.
    pub(super) files: BTreeMap<InodeId, ImageFile>,
    /// For a durable image (`DiskSnapshot::durable_image`), each file's
    /// durable history where it has one, to place lost and misdirected
    /// writes (`history.rs`); empty for any other image. Not hashed: the
    /// engine cannot observe it.
    pub(super) histories: BTreeMap<InodeId, History>,
}

/// One file's bytes, and maybe their hash.
#[derive(Clone, Debug)]
pub(super) struct ImageFile {
    /// Shared with the snapshot when power loss left the durable bytes as
    /// they were, which is most files in most crash states.
    pub bytes: Arc<[u8]>,
    /// Known for bytes shared with the snapshot; computed on demand for
    /// new ones, since an image built only to be recovered is never hashed.
    pub hash: Option<u64>,
}

impl ImageFile {
    pub fn new(bytes: Vec<u8>) -> Self {
        ImageFile { bytes: Arc::from(bytes), hash: None }
    }
}

/// A 64-bit hash of `bytes`. Deterministic within a build (SipHash with
/// fixed keys); collisions among the few thousand images of one
/// exploration are vanishingly unlikely (about n²/2⁶⁵).
pub(super) fn content_hash(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

impl DiskImage {
    /// The hash of what the engine can observe (see the module doc).
    pub fn hash(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        for (path, entries) in &self.dirs {
            path.hash(&mut hasher);
            entries.len().hash(&mut hasher);
            for (name, id) in entries {
                let file = &self.files[id];
                name.hash(&mut hasher);
                file.bytes.len().hash(&mut hasher);
                file.hash.unwrap_or_else(|| content_hash(&file.bytes)).hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// Every file as its full path and bytes, sorted by path.
    pub fn files(&self) -> Vec<(PathBuf, &[u8])> {
        let mut out = Vec::new();
        for (path, entries) in &self.dirs {
            for (name, id) in entries {
                out.push((path.join(name), &self.files[id].bytes[..]));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Every directory's path, sorted, empty ones included (a crash
    /// state written out as a real directory needs them).
    pub fn dir_paths(&self) -> Vec<&std::path::Path> {
        self.dirs.keys().map(PathBuf::as_path).collect()
    }

    /// The sum of the files' lengths.
    pub fn total_bytes(&self) -> u64 {
        self.files.values().map(|file| file.bytes.len() as u64).sum()
    }
}
