//! A crash state written out as a real directory for a checker outside the
//! process (`sim trace explore`'s and `sim live`'s checkers, per state or
//! as a server, `check_server`): the disk image's files and directories
//! under one root, and what the program printed before the crash, each in
//! a fresh directory under the scratch directory, removed when done.

use std::path::{Path, PathBuf};

use crate::disk::DiskImage;

/// A crash state written out: a fresh directory under the scratch
/// directory (removed when this drops) holding the state as `dir` and what
/// the program had printed as the file `printed`.
pub struct WrittenState {
    scratch: tempfile::TempDir,
    /// The crash state as a directory.
    pub dir: PathBuf,
    /// What the program printed before the crash.
    pub printed: PathBuf,
}

impl WrittenState {
    /// The fresh directory holding `dir` and `printed` (room for a
    /// checker's output file beside them).
    pub fn path(&self) -> &Path {
        self.scratch.path()
    }
}

/// Write `image`'s tree under `root` (a disk path) and `printed` out under
/// `scratch`, in a fresh directory named `PREFIX…` (see [`WrittenState`]);
/// `Err` says what could not be written.
pub fn write_state(
    image: &DiskImage,
    root: &Path,
    printed: &[u8],
    scratch: &Path,
    prefix: &str,
) -> Result<WrittenState, String> {
    let scratch = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(scratch)
        .map_err(|e| format!("no directory in {}: {e}", scratch.display()))?;
    let dir = scratch.path().join("state");
    let printed_file = scratch.path().join("printed");
    materialise(image, root, &dir)
        .and_then(|()| std::fs::write(&printed_file, printed))
        .map_err(|e| format!("writing the state out: {e}"))?;
    Ok(WrittenState { scratch, dir, printed: printed_file })
}

/// Write `image`'s directories and files under `root` (a disk path) as real
/// ones under `dir` (made if missing); what lies outside `root` is left out.
pub fn materialise(image: &DiskImage, root: &Path, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for path in image.dir_paths() {
        if let Ok(rel) = path.strip_prefix(root) {
            std::fs::create_dir_all(dir.join(rel))?;
        }
    }
    for (path, bytes) in image.files() {
        if let Ok(rel) = path.strip_prefix(root) {
            std::fs::write(dir.join(rel), bytes)?;
        }
    }
    Ok(())
}
