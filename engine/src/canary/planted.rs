//! The planted code of the canaries that take more than a line, each a
//! function named for what it does wrong. Called only from an
//! `if canary!(Name)` branch (see the module doc of `canary`).

use std::io;
use std::path::Path;

use crate::vfs::{read_exact_at, OpenMode, Vfs};

/// `single-read-recovery`: the log read once, and whatever came back —
/// a transient bit flip included — taken for the bytes on the disk.
pub(crate) fn read_once(vfs: &dyn Vfs, path: &Path) -> io::Result<Vec<u8>> {
    let file = vfs.open(path, OpenMode::Read)?;
    let len = usize::try_from(file.len()?).map_err(|_| io::Error::other("file too large"))?;
    let mut bytes = vec![0u8; len];
    read_exact_at(file.as_ref(), 0, &mut bytes)?;
    Ok(bytes)
}
