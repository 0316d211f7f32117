//! jammdb (crates.io `jammdb` 0.11.0, unmodified) as a kit target, running
//! through the stdfs layer: its `std::fs` calls on `/sim-db/<Env::dir>/`
//! land on the seed's simulated disk, its file lock and preallocation
//! (`fs4` on rustix's raw system calls) are trapped and served, and its
//! pages are read through a read-only shared map (`memmap2::Mmap`) that
//! the layer serves and keeps coherent with jammdb's own `write`s
//! (STDFS.md "Memory maps", JAMMDB.md).
//!
//! Sessions follow the kit's opens, as persy's and fjall's do: each open
//! (and the setup) starts the engine's thread ([`stdfs_layer::Worker`])
//! with a session over `Env::vfs`; a session's end (a crash, a restart, a
//! close) ends its maps, as a process's end does. jammdb starts no thread.

mod engine;
pub mod spec;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use stdfs_layer::kit::{Adapter, Env, KitError, NoPlant, Previous, Rng, RngCore, Rows, Spec};
use stdfs_layer::{db_path, Place, Worker};

use engine::Engine;
pub use engine::Settings;

/// The database's file, in the kit's directory.
const FILE: &str = "jammdb.db";

/// A seed's jammdb settings and the seed of its engine thread.
#[derive(Clone, Debug)]
pub struct JammdbConfig {
    pub settings: Settings,
    /// Seeds the randomness and the clock of the run.
    pub entropy_seed: u64,
}

/// jammdb as the kit sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct JammdbAdapter;

/// An open jammdb on its engine thread.
pub struct JammdbDb {
    worker: Worker<Engine>,
}

impl JammdbDb {
    /// Run `job` on the engine; fail the run if the layer refused a call.
    fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut Engine) -> R + Send + 'static) -> R {
        self.worker.call(job).unless_refused()
    }
}

fn path(env: &Env<'_, JammdbAdapter>) -> PathBuf {
    db_path(env.dir).join(FILE)
}

fn place(env: &Env<'_, JammdbAdapter>) -> Place {
    Place { entropy_seed: env.config.entropy_seed, ..Place::of(env) }
}

impl Adapter for JammdbAdapter {
    type Db = JammdbDb;
    type Config = JammdbConfig;
    type Plant = NoPlant;

    fn name(&self) -> &'static str {
        "jammdb"
    }

    /// A page of 1 KiB (jammdb's least) or 4 KiB (the machine's, jammdb's
    /// default), a new file of 4 pages (the least) or 32 (the default), so
    /// that some seeds grow the file (an 8 MiB `fallocate` and a new map:
    /// `DBInner::resize`, `src/db.rs` lines 275–282) within a few commits;
    /// strict mode and `MAP_POPULATE` on or off.
    fn configure(&self, rng: &mut dyn RngCore) -> JammdbConfig {
        let settings = Settings {
            page_bytes: [1024u64, 4096][rng.gen_range(0..2)],
            initial_pages: [4usize, 32][rng.gen_range(0..2)],
            strict: rng.gen_bool(0.5),
            populate: rng.gen_bool(0.5),
        };
        JammdbConfig { settings, entropy_seed: rng.gen() }
    }

    fn spec(&self, _config: &JammdbConfig) -> Spec {
        spec::spec()
    }

    /// The file made and both buckets committed, on the engine's thread;
    /// the kit then fsyncs the directory (jammdb does not: `init_file`,
    /// `src/db.rs` lines 348–390, syncs the file only).
    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let (path, settings) = (path(env), env.config.settings);
        Worker::<()>::start(place(env), move || Engine::create(&path, settings)).unless_refused().map(drop)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<JammdbDb, KitError> {
        let (path, settings) = (path(env), env.config.settings);
        let worker = Worker::start(place(env), move || Engine::open(&path, settings)).unless_refused()?;
        Ok(JammdbDb { worker })
    }

    fn put(&self, db: &mut JammdbDb, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        db.call(move |e| e.put(table, &key, Some(&value))).map(Previous::Was)
    }

    fn delete(&self, db: &mut JammdbDb, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        let key = key.to_vec();
        db.call(move |e| e.put(table, &key, None)).map(Previous::Was)
    }

    fn get(&self, db: &mut JammdbDb, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let key = key.to_vec();
        db.call(move |e| e.get(table, &key))
    }

    fn scan(&self, db: &mut JammdbDb, table: usize) -> Result<Rows, KitError> {
        db.call(move |e| e.scan(table))
    }

    fn commit(&self, db: &mut JammdbDb, level: usize) -> Result<(), KitError> {
        assert_eq!(level, 0, "jammdb's spec declares one level");
        db.call(Engine::commit)
    }

    fn abort(&self, db: &mut JammdbDb) -> Result<(), KitError> {
        db.call(Engine::abort);
        Ok(())
    }

    fn read_committed(&self, db: &mut JammdbDb, table: usize) -> Result<Rows, KitError> {
        db.call(move |e| e.read_committed(table))
    }

    /// jammdb has no close: the open write is dropped and the `DB` with
    /// it (its file closed, its map unmapped).
    fn close(&self, db: JammdbDb) -> Result<(), KitError> {
        db.call(Engine::abort);
        drop(db);
        Ok(())
    }
}
