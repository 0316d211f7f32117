//! Bugs planted *under* the engine, for tests that prove the checker can
//! fail without building the engine's `canaries` feature.
//!
//! [`skip_fsync`] wraps a disk so every file fsync reports success and
//! syncs nothing: acknowledged writes then vanish at the next power loss,
//! and the simulator and the explorer (a `SegsimTarget` whose `wrap` is it)
//! must both say so.
//!
//! [`unsynced_cut`] is subtler: after a file is cut (`set_len`, which only
//! recovery's cut of a torn tail does on a fault-free disk), that file's
//! fsyncs do nothing until another file is fsynced. The next open cuts the
//! tail again, so one crash shows nothing; only a crash *during* the
//! recovery, after the manifest was made durable beside a log that is not,
//! does — the proof that `sim explore --depth 2` reaches what depth 1
//! cannot, without the `canaries` feature.
//!
//! [`swallowed_fsync_error`] reports every fsync as a success, failed or
//! not: on a fault-free disk it is the honest disk, so only a recovery
//! whose fsync fails — `sim explore --faults` — can show the acknowledged
//! data the disk dropped (fsyncgate).

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use engine::vfs::{Interpose, Vfs, VfsFile};

/// `disk`, except that every file fsync silently does nothing.
pub fn skip_fsync(disk: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    Arc::new(FsyncLie { disk, syncs: false })
}

/// `disk`, except that a failed file fsync reports success.
pub fn swallowed_fsync_error(disk: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    Arc::new(FsyncLie { disk, syncs: true })
}

/// A file fsync that always reports success: having synced (`syncs`),
/// its error forgotten, or having done nothing at all.
#[derive(Clone)]
struct FsyncLie {
    disk: Arc<dyn Vfs>,
    syncs: bool,
}

impl Interpose for FsyncLie {
    fn inner(&self) -> &dyn Vfs {
        self.disk.as_ref()
    }
    fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        if self.syncs {
            // Planted: the error (and the dirty data the disk dropped with
            // it) is forgotten.
            let _ = file.sync();
        }
        Ok(())
    }
}

/// `disk`, except that a file cut with `set_len` is not fsynced (each
/// fsync of it silently does nothing) until some other file is.
pub fn unsynced_cut(disk: Arc<dyn Vfs>) -> Arc<dyn Vfs> {
    Arc::new(UnsyncedCut { disk, cut: Arc::new(AtomicUsize::new(NONE)) })
}

/// No file is cut and unsynced.
const NONE: usize = 0;

#[derive(Clone)]
struct UnsyncedCut {
    disk: Arc<dyn Vfs>,
    /// The cut file, by the address of its open handle: it stays open (the
    /// log's writer holds it) for as long as the address is compared, so no
    /// other live handle shares it. Only ever compared, never ordered.
    cut: Arc<AtomicUsize>,
}

/// A handle's identity while it is open.
fn handle_id(file: &dyn VfsFile) -> usize {
    (file as *const dyn VfsFile).cast::<u8>() as usize
}

impl Interpose for UnsyncedCut {
    fn inner(&self) -> &dyn Vfs {
        self.disk.as_ref()
    }
    fn on_set_len(&self, file: &mut dyn VfsFile, len_bytes: u64) -> io::Result<()> {
        file.set_len(len_bytes)?;
        self.cut.store(handle_id(file), Ordering::Relaxed);
        Ok(())
    }
    fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        let cut = self.cut.load(Ordering::Relaxed);
        if cut != NONE && cut == handle_id(file) {
            // Planted: the cut (and what followed it) stays unsynced.
            return Ok(());
        }
        self.cut.store(NONE, Ordering::Relaxed);
        file.sync()
    }
}
