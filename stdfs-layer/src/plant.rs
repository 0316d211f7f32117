//! The mistakes that can be planted in the layer itself (`--plant NAME`
//! of a target that runs on it), to prove that the kit catches an
//! interposer that lies about durability, not only an engine that does.
//! Each is a mistake an interposition layer could really make; each is off
//! unless a run asks for it, and lives at one spot of the layer
//! (`serve_fd::sync`), which asks the session ([`crate::session`]).
//!
//! The engine under them must be one that passes without them, or a
//! failure proves nothing: the `cowkv` target (`cowkv/`), whose
//! commit is the textbook temp file, fsync, rename, directory fsync.

use simkit::Plant;

/// A mistake planted in the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerPlant {
    /// `fsync`/`fdatasync` of a file opened under a name ending in
    /// [`SCRATCH_SUFFIX`] answers success and syncs nothing: the layer
    /// took such files for scratch space no one relies on.
    TmpFsyncNoop,
    /// `fsync` of a directory syncs the directory's parent instead: the
    /// layer resolved it with the helper that finds the directory *of* a
    /// file. A name made or renamed inside never becomes durable.
    DirFsyncParent,
}

/// The names [`LayerPlant::TmpFsyncNoop`] takes for scratch.
pub const SCRATCH_SUFFIX: &str = ".tmp";

impl Plant for LayerPlant {
    const ALL: &'static [LayerPlant] = &[LayerPlant::TmpFsyncNoop, LayerPlant::DirFsyncParent];

    fn name(self) -> &'static str {
        match self {
            LayerPlant::TmpFsyncNoop => "tmp-fsync-noop",
            LayerPlant::DirFsyncParent => "dir-fsync-parent",
        }
    }

    fn what(self) -> &'static str {
        match self {
            LayerPlant::TmpFsyncNoop => {
                "the layer's fsync of a file opened as *.tmp answers success and syncs nothing (taken for scratch)"
            }
            LayerPlant::DirFsyncParent => {
                "the layer's fsync of a directory syncs its parent instead: a rename inside is never made durable"
            }
        }
    }
}
