//! `cowkv` as a kit target running through the stdfs layer: a small,
//! correct `std::fs` engine of our own ([`store::CowKv`]) under which the
//! layer's planted mistakes ([`LayerPlant`], `--plant NAME`) are caught.
//! It exists for that proof: persy fails most seeds without any plant
//! (STDFS.md), so a failure of persy's under a plant proves nothing, and
//! this engine passes clean.
//!
//! Like persy, it runs on an engine thread of its own per open
//! ([`Worker`]), whose session of the layer serves the open's `Env::vfs`
//! and carries the run's plant; its file is
//! `/sim-db/<Env::dir>/data`.

pub mod store;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use simkit::{Adapter, Env, KitError, Level, Previous, Promise, RngCore, Rows, Spec, Tolerances, ONE_TABLE};

use stdfs_layer::LayerPlant;
use stdfs_layer::{db_path, Place, Worker};
use store::CowKv;

/// `cowkv` as the kit sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CowKvAdapter;

/// An open store on its engine thread.
pub struct CowKvDb {
    worker: Worker<CowKv>,
}

/// The store's directory as the engine is given it: under the layer's
/// root.
fn dir(env: &Env<'_, CowKvAdapter>) -> PathBuf {
    db_path(env.dir)
}

/// The engine thread's session: the open's disk, the run's plant. The
/// engine draws no randomness, so every open's thread is seeded alike.
fn place(env: &Env<'_, CowKvAdapter>) -> Place {
    Place { plant: env.plant, ..Place::of(env) }
}

impl CowKvDb {
    /// Run `job` on the engine; fail the run if the layer refused a call.
    fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut CowKv) -> R + Send + 'static) -> R {
        self.worker.call(job).unless_refused()
    }
}

impl Adapter for CowKvAdapter {
    type Db = CowKvDb;
    type Config = ();
    type Plant = LayerPlant;

    fn name(&self) -> &'static str {
        "cowkv"
    }

    fn configure(&self, _rng: &mut dyn RngCore) {}

    /// One table, one level: every commit is durable when it returns (the
    /// snapshot and its rename are synced). The engine reads its snapshot
    /// once and trusts it, so reads must not flip bits; a torn sector of
    /// an unsynced `data.tmp` is never read, so garbage there is fine.
    /// No damage detection is promised (the checksum only refuses).
    fn spec(&self, _config: &()) -> Spec {
        Spec {
            tables: ONE_TABLE,
            tolerates: Tolerances { torn_garbage: true, read_bitflips: false },
            ..Spec::new(vec![Level::new("commit", Promise::Durable)])
        }
    }

    /// The first, empty snapshot.
    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let path = dir(env);
        let created = Worker::<()>::start(place(env), move || CowKv::create(&path, ONE_TABLE.len())).unless_refused();
        Ok(created.map(drop)?)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<CowKvDb, KitError> {
        let path = dir(env);
        let worker = Worker::start(place(env), move || CowKv::open(&path, ONE_TABLE.len())).unless_refused()?;
        Ok(CowKvDb { worker })
    }

    fn put(&self, db: &mut CowKvDb, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        Ok(Previous::Was(db.call(move |s| s.write(table, &key, Some(&value)))))
    }

    fn delete(&self, db: &mut CowKvDb, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        let key = key.to_vec();
        Ok(Previous::Was(db.call(move |s| s.write(table, &key, None))))
    }

    fn get(&self, db: &mut CowKvDb, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let key = key.to_vec();
        Ok(db.call(move |s| s.view()[table].get(&key).cloned()))
    }

    fn scan(&self, db: &mut CowKvDb, table: usize) -> Result<Rows, KitError> {
        Ok(db.call(move |s| s.view()[table].clone()))
    }

    fn commit(&self, db: &mut CowKvDb, _level: usize) -> Result<(), KitError> {
        Ok(db.call(CowKv::commit)?)
    }

    fn abort(&self, db: &mut CowKvDb) -> Result<(), KitError> {
        db.call(CowKv::abort);
        Ok(())
    }

    fn read_committed(&self, db: &mut CowKvDb, table: usize) -> Result<Rows, KitError> {
        Ok(db.call(move |s| s.committed()[table].clone()))
    }

    /// Every commit is durable already: closing drops the transaction.
    fn close(&self, db: CowKvDb) -> Result<(), KitError> {
        db.call(CowKv::abort);
        drop(db);
        Ok(())
    }
}
