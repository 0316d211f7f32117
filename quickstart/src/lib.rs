//! The quickstart: an engine (`store.rs`, a stub to replace with yours) and
//! its adapter for the simulator's target kit (this file). Run it:
//!
//! ```text
//! cargo run --release -- --seeds 0..2000 --jobs 2
//! cargo run --release -- explore --seed 1 --depth 2 --faults
//! cargo test --release
//! ```

pub mod store;

use simkit::{Adapter, Env, KitError, Level, NoPlant, Previous, Promise, RngCore, Rows, Spec};

use crate::store::Store;

/// The store as the kit sees it.
#[derive(Clone, Copy, Debug)]
pub struct QuickstartAdapter;

impl Adapter for QuickstartAdapter {
    type Db = Store;
    type Config = ();
    type Plant = NoPlant;

    fn name(&self) -> &'static str {
        "quickstart"
    }

    fn configure(&self, _rng: &mut dyn RngCore) {}

    /// One level: a commit returns once it is durable.
    fn spec(&self, _config: &()) -> Spec {
        Spec::new(vec![Level::new("durable", Promise::Durable)])
    }

    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        Ok(Store::create(env.vfs.as_ref(), env.dir)?)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<Store, KitError> {
        Ok(Store::open(env.vfs.clone(), env.dir)?)
    }

    fn put(&self, db: &mut Store, _table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        Ok(Previous::Was(db.write(key, Some(value))))
    }

    fn delete(&self, db: &mut Store, _table: usize, key: &[u8]) -> Result<Previous, KitError> {
        Ok(Previous::Was(db.write(key, None)))
    }

    fn get(&self, db: &mut Store, _table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        Ok(db.view().get(key).cloned())
    }

    fn scan(&self, db: &mut Store, _table: usize) -> Result<Rows, KitError> {
        Ok(db.view().clone())
    }

    fn commit(&self, db: &mut Store, _level: usize) -> Result<(), KitError> {
        Ok(db.commit()?)
    }

    fn abort(&self, db: &mut Store) -> Result<(), KitError> {
        db.abort();
        Ok(())
    }

    fn read_committed(&self, db: &mut Store, _table: usize) -> Result<Rows, KitError> {
        Ok(db.committed().clone())
    }

    fn close(&self, _db: Store) -> Result<(), KitError> {
        Ok(())
    }
}
