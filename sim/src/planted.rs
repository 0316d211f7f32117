//! Bugs planted *under* the engine, for tests that prove the checker can
//! fail without building the engine's `canaries` feature.
//!
//! [`skip_fsync`] wraps a disk so every file fsync reports success and
//! syncs nothing: acknowledged writes then vanish at the next power loss,
//! and the simulator and the explorer (a `SegsimTarget` whose `wrap` is it)
//! must both say so.

use std::io;
use std::sync::Arc;

use engine::vfs::{Interpose, Vfs, VfsFile};

/// `disk`, except that every file fsync silently does nothing.
pub fn skip_fsync(disk: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    Arc::new(SkipFsync(disk))
}

#[derive(Clone)]
struct SkipFsync(Arc<dyn Vfs>);

impl Interpose for SkipFsync {
    fn inner(&self) -> &dyn Vfs {
        self.0.as_ref()
    }
    fn on_sync(&self, _file: &mut dyn VfsFile) -> io::Result<()> {
        Ok(())
    }
}
