//! The std::fs quickstart: an engine that stores through plain `std::fs`
//! (`store.rs`, a stub to replace with yours) and its adapter for the
//! simulator's target kit (this file), run on the simulated disk by the
//! interposition layer, `stdfs-layer` (STDFS.md, "Bring your own std::fs
//! engine"). Run it:
//!
//! ```text
//! cargo run --release -- --seeds 0..200 --jobs 2
//! cargo run --release -- explore --seed 1 --depth 2 --faults --jobs 2
//! cargo test --release
//! ```
//!
//! The layer's conventions, which the adapter follows: the engine is given
//! `db_path(env.dir)` (the kit's directory under `/sim-db`, a path the
//! layer serves from the seed's disk), runs on a [`Worker`] started at each
//! open with [`Place::of`], and every answer is taken with
//! `.unless_refused()`, so a call the layer cannot serve fails the run.

pub mod store;

use stdfs_layer::kit::{Adapter, Env, KitError, Level, NoPlant, Previous, Promise, RngCore, Rows, Spec, Tolerances};
use stdfs_layer::{db_path, Place, Worker};

use crate::store::Store;

/// The store as the kit sees it.
#[derive(Clone, Copy, Debug)]
pub struct SegStoreAdapter;

/// An open store, on its engine thread.
pub struct SegStoreDb {
    worker: Worker<Store>,
}

impl SegStoreDb {
    /// Run `job` on the engine; fail the run if the layer refused a call.
    fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut Store) -> R + Send + 'static) -> R {
        self.worker.call(job).unless_refused()
    }
}

impl Adapter for SegStoreAdapter {
    type Db = SegStoreDb;
    type Config = ();
    type Plant = NoPlant;

    fn name(&self) -> &'static str {
        "quickstart-stdfs"
    }

    fn configure(&self, _rng: &mut dyn RngCore) {}

    /// One level: a commit returns once it is durable. A torn sector of an
    /// unsynced `.tmp` is never read, so garbage there is fine; a segment
    /// is read once and trusted, so reads must not flip bits.
    fn spec(&self, _config: &()) -> Spec {
        Spec {
            tolerates: Tolerances { torn_garbage: true, read_bitflips: false },
            ..Spec::new(vec![Level::new("durable", Promise::Durable)])
        }
    }

    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let dir = db_path(env.dir);
        Ok(Worker::<()>::start(Place::of(env), move || Store::create(&dir)).unless_refused().map(drop)?)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<SegStoreDb, KitError> {
        let dir = db_path(env.dir);
        let worker = Worker::start(Place::of(env), move || Store::open(&dir)).unless_refused()?;
        Ok(SegStoreDb { worker })
    }

    fn put(&self, db: &mut SegStoreDb, _table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        Ok(Previous::Was(db.call(move |s| s.write(&key, Some(&value)))))
    }

    fn delete(&self, db: &mut SegStoreDb, _table: usize, key: &[u8]) -> Result<Previous, KitError> {
        let key = key.to_vec();
        Ok(Previous::Was(db.call(move |s| s.write(&key, None))))
    }

    fn get(&self, db: &mut SegStoreDb, _table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let key = key.to_vec();
        Ok(db.call(move |s| s.view().get(&key).cloned()))
    }

    fn scan(&self, db: &mut SegStoreDb, _table: usize) -> Result<Rows, KitError> {
        Ok(db.call(|s| s.view().clone()))
    }

    fn commit(&self, db: &mut SegStoreDb, _level: usize) -> Result<(), KitError> {
        Ok(db.call(Store::commit)?)
    }

    fn abort(&self, db: &mut SegStoreDb) -> Result<(), KitError> {
        db.call(Store::abort);
        Ok(())
    }

    fn read_committed(&self, db: &mut SegStoreDb, _table: usize) -> Result<Rows, KitError> {
        Ok(db.call(|s| s.committed().clone()))
    }

    /// Every commit is durable already: closing drops the transaction, and
    /// the worker's drop closes the engine's files on its thread.
    fn close(&self, db: SegStoreDb) -> Result<(), KitError> {
        db.call(Store::abort);
        drop(db);
        Ok(())
    }
}
