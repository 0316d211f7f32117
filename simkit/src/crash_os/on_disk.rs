//! The engine on the real file system: every call `crash-os` makes into
//! an [`Adapter`], in this one file, each the way the kit's run loop makes
//! it (`run.rs`), only over [`OsVfs`] in a real directory instead of the
//! simulated disk.
//!
//! Kept small and apart on purpose: the adapter's interface is the kit's
//! to change, and this is all of `crash-os` that would follow it.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use vfs::{OsVfs, Vfs};

use super::super::adapter::{maintenance_of, readers_of};
use super::super::client::call;
use super::super::config::KitConfig;
use super::super::model::State;
use super::super::run::{create, read_all};
use super::super::workload::{KitOp, ReaderStep};
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
    /// The readers with a transaction open (`--clients`), as the kit's
    /// loop keeps them (`reader_ops.rs`).
    readers: RefCell<BTreeSet<usize>>,
}

impl<'a, A: Adapter> OnDisk<'a, A> {
    /// `adapter`'s engine with `config`'s engine settings and `plant`, in `dir`.
    pub fn new(adapter: &'a A, config: &'a KitConfig<A::Config>, plant: Option<A::Plant>, dir: &'a Path) -> Self {
        OnDisk { adapter, config, plant, dir, vfs: Arc::new(OsVfs), readers: RefCell::default() }
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
    /// clean close and reopen (answering the content it reopened to), the
    /// readers ended first, as before maintenance they may not stay open
    /// across; a maintenance that makes everything durable first aborts
    /// the write transaction; a reader's step as `reader_ops.rs` carries it
    /// out; the rest are one call. `db` is `None` afterwards only if a
    /// reopen failed.
    pub fn perform(&self, db: &mut Option<A::Db>, op: &KitOp) -> Result<Answer, KitError> {
        let open = db.as_mut().expect("the child holds an open database between operations");
        let across = self.config.spec.readers.is_some_and(|readers| readers.across_maintenance);
        if matches!(op, KitOp::Restart) || matches!(op, KitOp::Maintain(_)) && !across {
            self.end_readers(open)?;
        }
        match op {
            KitOp::Reader { reader, step } => self.reader_step(open, *reader, step),
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

    /// End every open reader's transaction.
    fn end_readers(&self, db: &mut A::Db) -> Result<(), KitError> {
        let open = std::mem::take(&mut *self.readers.borrow_mut());
        open.into_iter().try_for_each(|reader| readers_of(self.adapter).end_read(db, reader))
    }

    /// A reader's step: a `BEGIN` or an `END` ends its open transaction
    /// first, a read begins one if none is open (`reader_ops.rs`).
    fn reader_step(&self, db: &mut A::Db, reader: usize, step: &ReaderStep) -> Result<Answer, KitError> {
        let reading = readers_of(self.adapter);
        let was_open = self.readers.borrow().contains(&reader);
        if was_open && matches!(step, ReaderStep::Begin | ReaderStep::End) {
            self.readers.borrow_mut().remove(&reader);
            reading.end_read(db, reader)?;
        }
        if matches!(step, ReaderStep::End) {
            return Ok(Answer::Done);
        }
        if !self.readers.borrow().contains(&reader) {
            reading.begin_read(db, reader)?;
            self.readers.borrow_mut().insert(reader);
        }
        match step {
            ReaderStep::Get { table, key } => reading.reader_get(db, reader, table.index, key).map(Answer::Value),
            ReaderStep::Scan { table } => {
                reading.reader_scan(db, reader, table.index).map(|rows| Answer::of_rows(&rows))
            }
            ReaderStep::Begin | ReaderStep::End => Ok(Answer::Done),
        }
    }
}
