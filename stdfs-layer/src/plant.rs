//! The mistakes that can be planted in the layer itself (`--plant NAME`
//! of a target that runs on it), to prove that the kit catches an
//! interposer that lies about durability, not only an engine that does.
//! Each is a mistake an interposition layer could really make; each is off
//! unless a run asks for it, and lives at one spot of the layer: the two
//! durability lies at `serve_fd::sync`, which asks the session
//! ([`crate::session`]); the determinism one where a run's threads are
//! seeded (`crate::thread_seed`'s callers).
//!
//! The engine under them must be one that passes without them, or a
//! failure proves nothing: for the durability lies the `cowkv` target
//! (`cowkv/`), whose commit is the textbook temp file, fsync, rename,
//! directory fsync; for [`LayerPlant::FastrandUnseeded`] fjall, whose temp
//! names come from `fastrand` (FJALL.md).

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
    /// The threads of a run keep `fastrand`'s generator as std's thread
    /// ids seed it (`crate::thread_seed` skipped): a seed's temp names
    /// depend on the threads the process made before. Not a durability
    /// lie: `--check-determinism` must catch it (FJALL.md, finding 5).
    FastrandUnseeded,
}

/// The names [`LayerPlant::TmpFsyncNoop`] takes for scratch.
pub const SCRATCH_SUFFIX: &str = ".tmp";

impl Plant for LayerPlant {
    const ALL: &'static [LayerPlant] =
        &[LayerPlant::TmpFsyncNoop, LayerPlant::DirFsyncParent, LayerPlant::FastrandUnseeded];

    fn name(self) -> &'static str {
        match self {
            LayerPlant::TmpFsyncNoop => "tmp-fsync-noop",
            LayerPlant::DirFsyncParent => "dir-fsync-parent",
            LayerPlant::FastrandUnseeded => "fastrand-unseeded",
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
            LayerPlant::FastrandUnseeded => {
                "the layer leaves fastrand's per-thread generator seeded from std's thread ids: temp names depend on \
                 the threads made before in the process"
            }
        }
    }
}
