//! persy (crates.io `persy` 1.8.1, unmodified) as a kit target, running
//! through the stdfs layer: its `std::fs` calls on
//! `/sim-db/<Env::dir>/data.persy` land on the seed's simulated disk.
//!
//! Sessions follow the kit's opens: each [`Adapter::open`] (and the
//! setup, [`Adapter::create`]) starts the engine's thread
//! ([`stdfs_layer::Worker`]) with a session of the layer over `Env::vfs`, and
//! dropping the database ends both. The kit's disk is one `SimVfs` for the
//! whole run, which a power loss changes in place, and explore builds a
//! new one per recovery, handed to that open: either way the session of
//! an open serves the disk that open was given. The kit drops the
//! database before a power loss reshapes the disk, so no session outlives
//! its open.
//!
//! Anything the layer refuses fails the run with check `refused`
//! ([`simkit::EnvironmentRefused`]), naming the call. The randomness
//! and time of each engine thread come from the seed's
//! `PersyConfig::entropy_seed` (STDFS.md, the layer's randomness).

mod engine;
pub mod spec;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use simkit::{Adapter, Env, KitError, NoPlant, Previous, Rng, RngCore, Rows, Spec};

use engine::Engine;
use stdfs_layer::{db_path, Place, Worker};

/// The file persy stores everything in, in the kit's directory.
const FILE: &str = "data.persy";

/// A seed's persy settings.
#[derive(Clone, Debug)]
pub struct PersyConfig {
    /// `Config::change_cache_size`: a small cache reads pages back often.
    pub cache_bytes: u64,
    /// Seeds the randomness and the clock of the engine's thread.
    pub entropy_seed: u64,
}

/// persy as the kit sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct PersyAdapter;

/// An open persy on its engine thread.
pub struct PersyDb {
    worker: Worker<Engine>,
}

/// The database file's path as persy is given it: under the layer's root.
fn file_path(env: &Env<'_, PersyAdapter>) -> PathBuf {
    db_path(env.dir).join(FILE)
}

fn place(env: &Env<'_, PersyAdapter>) -> Place {
    Place { entropy_seed: env.config.entropy_seed, ..Place::of(env) }
}

impl PersyDb {
    /// Run `job` on the engine; fail the run if the layer refused a call.
    fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut Engine) -> R + Send + 'static) -> R {
        self.worker.call(job).unless_refused()
    }
}

impl Adapter for PersyAdapter {
    type Db = PersyDb;
    type Config = PersyConfig;
    type Plant = NoPlant;

    fn name(&self) -> &'static str {
        "persy"
    }

    fn configure(&self, rng: &mut dyn RngCore) -> PersyConfig {
        let cache_bytes = [16u64 << 10, 256 << 10, 32 << 20][rng.gen_range(0..3)];
        PersyConfig { cache_bytes, entropy_seed: rng.gen() }
    }

    fn spec(&self, _config: &PersyConfig) -> Spec {
        spec::spec()
    }

    /// `Persy::create`, then both indexes in one commit, on the engine's
    /// thread; the kit then fsyncs the directory (persy does not).
    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let path = file_path(env);
        let created = Worker::<()>::start(place(env), move || engine::create(&path)).unless_refused();
        created.map(drop)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<PersyDb, KitError> {
        let (path, cache_bytes) = (file_path(env), env.config.cache_bytes);
        let worker = Worker::start(place(env), move || Engine::open(&path, cache_bytes)).unless_refused()?;
        Ok(PersyDb { worker })
    }

    fn put(&self, db: &mut PersyDb, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        db.call(move |e| e.write(table, &key, Some(&value))).map(Previous::Was)
    }

    fn delete(&self, db: &mut PersyDb, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        let key = key.to_vec();
        db.call(move |e| e.write(table, &key, None)).map(Previous::Was)
    }

    fn get(&self, db: &mut PersyDb, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let key = key.to_vec();
        db.call(move |e| e.get(table, &key))
    }

    fn scan(&self, db: &mut PersyDb, table: usize) -> Result<Rows, KitError> {
        db.call(move |e| e.scan(table))
    }

    fn commit(&self, db: &mut PersyDb, level: usize) -> Result<(), KitError> {
        db.call(move |e| e.commit(level))
    }

    fn abort(&self, db: &mut PersyDb) -> Result<(), KitError> {
        db.call(Engine::abort)
    }

    fn read_committed(&self, db: &mut PersyDb, table: usize) -> Result<Rows, KitError> {
        db.call(move |e| e.read_committed(table))
    }

    /// Roll back the open transaction; persy has no close (dropping it
    /// releases the file), and every commit is durable already.
    fn close(&self, db: PersyDb) -> Result<(), KitError> {
        db.call(Engine::abort)?;
        drop(db);
        Ok(())
    }
}
