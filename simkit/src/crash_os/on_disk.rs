//! The engine on the real file system: every call `crash-os` makes into
//! an [`Adapter`], in this one file, each the way the kit's run loop makes
//! it (`run.rs`), only over [`OsVfs`] in a real directory instead of the
//! simulated disk.
//!
//! Kept small and apart on purpose: the adapter's interface is the kit's
//! to change, and this is all of `crash-os` that would follow it.

use std::path::Path;
use std::sync::Arc;

use vfs::{OsVfs, Vfs};

use super::super::adapter::maintenance_of;
use super::super::client::call;
use super::super::config::KitConfig;
use super::super::model::State;
use super::super::run::{create, read_all};
use super::super::workload::KitOp;
use super::super::{Adapter, Env, KitError};
use super::line::Answer;

/// The sector size an engine that asks (SQLite's `xSectorSize`) is told:
/// what most disks report. The kit's engines ask only to shape their
/// journals; nothing here tears sectors.
const REAL_SECTOR_BYTES: u64 = 4096;

/// One engine, so configured, in one real directory.
pub(super) struct OnDisk<'a, A: Adapter> {
    adapter: &'a A,
    config: &'a KitConfig<A::Config>,
    plant: Option<A::Plant>,
    dir: &'a Path,
    vfs: Arc<dyn Vfs>,
}

impl<'a, A: Adapter> OnDisk<'a, A> {
    /// `adapter`'s engine with `config`'s engine settings and `plant`, in `dir`.
    pub fn new(adapter: &'a A, config: &'a KitConfig<A::Config>, plant: Option<A::Plant>, dir: &'a Path) -> Self {
        OnDisk { adapter, config, plant, dir, vfs: Arc::new(OsVfs) }
    }

    fn env(&self) -> Env<'_, A> {
        Env {
            vfs: self.vfs.clone(),
            dir: self.dir,
            config: &self.config.engine,
            plant: self.plant,
            sector_bytes: REAL_SECTOR_BYTES,
        }
    }

    /// The application's setup: make the directory (emptied, with
    /// `replace`) and run the adapter's `create`, then fsync the directory.
    pub fn create(&self, replace: bool) -> Result<(), KitError> {
        create(self.adapter, &self.env(), replace)
    }

    /// Open the engine.
    pub fn open(&self) -> Result<A::Db, KitError> {
        self.adapter.open(&self.env())
    }

    /// The committed content, every table.
    pub fn read(&self, db: &mut A::Db) -> Result<State, KitError> {
        read_all(self.adapter, self.config, db)
    }

    /// Close cleanly.
    pub fn close(&self, db: A::Db) -> Result<(), KitError> {
        self.adapter.close(db)
    }

    /// Run one workload operation as the kit's loop does: a `RESTART` is a
    /// clean close and reopen (answering the content it reopened to), a
    /// maintenance that makes everything durable first aborts the write
    /// transaction; the rest are one call. `db` is `None` afterwards only
    /// if a reopen failed.
    pub fn perform(&self, db: &mut Option<A::Db>, op: &KitOp) -> Result<Answer, KitError> {
        let open = db.as_mut().expect("the child holds an open database between operations");
        match op {
            KitOp::Restart => {
                self.close(db.take().expect("checked above"))?;
                let reopened = db.insert(self.open()?);
                Ok(Answer::of_reopened(&self.read(reopened)?))
            }
            KitOp::Maintain(maintenance) if maintenance.makes_durable => {
                self.adapter.abort(open)?;
                maintenance_of(self.adapter).maintain(open).map(|()| Answer::Done)
            }
            KitOp::Crash => unreachable!("crash-os skips CRASH (workload.rs)"),
            _ => call(self.adapter, open, op).map(|reply| Answer::of_reply(&reply)),
        }
    }
}
