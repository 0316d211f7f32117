//! fjall (crates.io `fjall` 3.1.13, unmodified) as a kit target, running
//! through the stdfs layer: its `std::fs` calls on `/sim-db/<Env::dir>/`
//! land on the seed's simulated disk, and the worker pool it always
//! starts (flushes, compactions, journal maintenance) runs under the
//! layer's deterministic scheduler (STDFS.md "Threads", FJALL.md).
//!
//! Sessions follow the kit's opens, as persy's do: each open (and the
//! setup) starts the engine's thread ([`stdfs_layer::Worker`]) with a
//! session over `Env::vfs`; fjall's workers are that run's threads.
//! Dropping the database joins them (`DatabaseInner::drop` waits for
//! every worker). The session's entropy seed is drawn per seed in
//! `configure`: it seeds the scheduler too, so without it every seed
//! would interleave alike.

mod engine;
pub mod spec;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use stdfs_layer::kit::{Adapter, Env, KitError, Previous, Rng, RngCore, Rows, Spec};
use stdfs_layer::{db_path, LayerPlant, Place, Worker};

use engine::Engine;
pub use engine::{Api, Settings};

/// `--set workers=N`: fjall's worker pool size (`Builder::worker_threads`).
/// One by default: with two or more, worker 0 hands every compaction back
/// to the queue and takes the next message at once (`src/worker_pool.rs`
/// lines 250–254), a loop on memory alone while the other workers sleep or
/// work, which the scheduler cannot schedule (it ends the run as a
/// spinning thread; the adapter lowers the spin watch's budget to 2 s
/// then): FJALL.md, finding 2.
pub const WORKERS: &str = "workers";

/// The database's directory, in the kit's directory.
const DIR: &str = "fjall";

/// A seed's fjall settings and the seed of its engine threads.
#[derive(Clone, Debug)]
pub struct FjallConfig {
    pub settings: Settings,
    /// Seeds the randomness, the clock and the scheduler of the run.
    pub entropy_seed: u64,
}

/// fjall as the kit sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FjallAdapter;

/// An open fjall on its engine thread.
pub struct FjallDb {
    worker: Worker<Engine>,
}

impl FjallDb {
    /// Run `job` on the engine; fail the run if the layer refused a call.
    fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut Engine) -> R + Send + 'static) -> R {
        self.worker.call(job).unless_refused()
    }
}

fn path(env: &Env<'_, FjallAdapter>) -> PathBuf {
    db_path(env.dir).join(DIR)
}

/// The session: the seed's entropy, and the layer's planted mistake if
/// the run asks for one (`--plant fastrand-unseeded` proves that
/// `--check-determinism` catches temp names drawn from std's thread ids,
/// FJALL.md finding 5).
fn place(env: &Env<'_, FjallAdapter>) -> Place {
    Place { entropy_seed: env.config.entropy_seed, plant: env.plant, ..Place::of(env) }
}

impl Adapter for FjallAdapter {
    type Db = FjallDb;
    type Config = FjallConfig;
    type Plant = LayerPlant;

    fn name(&self) -> &'static str {
        "fjall"
    }

    /// The API (transactions or batches), a memtable of 4 KiB, 16 KiB,
    /// 64 KiB or fjall's default 64 MiB (the small ones make the worker
    /// flush and compact within a seed), and one worker ([`WORKERS`]).
    fn configure(&self, rng: &mut dyn RngCore) -> FjallConfig {
        let api = if rng.gen_bool(0.5) { Api::Tx } else { Api::Batch };
        let memtable_bytes = [4u64 << 10, 16 << 10, 64 << 10, 64 << 20][rng.gen_range(0..4)];
        let settings = Settings { api, worker_threads: 1, memtable_bytes };
        FjallConfig { settings, entropy_seed: rng.gen() }
    }

    /// `--set workers=N` (1 to 4): the seed otherwise as drawn.
    fn configure_with(&self, rng: &mut dyn RngCore, options: &[(String, String)]) -> Result<FjallConfig, String> {
        let mut config = self.configure(rng);
        for (key, value) in options {
            match (key.as_str(), value.parse::<usize>()) {
                (WORKERS, Ok(n @ 1..=4)) => config.settings.worker_threads = n,
                (WORKERS, _) => return Err(format!("--set {WORKERS}=N takes 1 to 4, not {value:?}")),
                _ => return Err(format!("fjall takes --set {WORKERS}=N only (got {key:?})")),
            }
        }
        Ok(config)
    }

    fn spec(&self, _config: &FjallConfig) -> Spec {
        spec::spec()
    }

    /// The database and its keyspaces made and synced, on the engine's
    /// thread; the kit then fsyncs the directory.
    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let (path, settings) = (path(env), env.config.settings);
        Worker::<()>::start(place(env), move || Engine::create(&path, settings)).unless_refused().map(drop)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<FjallDb, KitError> {
        let (path, settings) = (path(env), env.config.settings);
        if settings.worker_threads > 1 {
            // Worker 0's busy loop (finding 2) ends as a spinning thread;
            // the budget is a detector only, never an input to a pick.
            stdfs_layer::set_spin_budget(std::time::Duration::from_secs(2));
        }
        let worker = Worker::start(place(env), move || Engine::open(&path, settings)).unless_refused()?;
        Ok(FjallDb { worker })
    }

    fn put(&self, db: &mut FjallDb, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        db.call(move |e| e.put(table, &key, Some(&value))).map(Previous::Was)
    }

    fn delete(&self, db: &mut FjallDb, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        let key = key.to_vec();
        db.call(move |e| e.put(table, &key, None)).map(Previous::Was)
    }

    fn get(&self, db: &mut FjallDb, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let key = key.to_vec();
        db.call(move |e| e.get(table, &key))
    }

    fn scan(&self, db: &mut FjallDb, table: usize) -> Result<Rows, KitError> {
        db.call(move |e| e.scan(table))
    }

    fn commit(&self, db: &mut FjallDb, level: usize) -> Result<(), KitError> {
        db.call(move |e| e.commit(level))
    }

    fn abort(&self, db: &mut FjallDb) -> Result<(), KitError> {
        db.call(Engine::abort);
        Ok(())
    }

    fn read_committed(&self, db: &mut FjallDb, table: usize) -> Result<Rows, KitError> {
        db.call(move |e| e.read_committed(table))
    }

    /// Drop the open write and persist the journal with `SyncAll`, which
    /// the database's drop does too but only logs a failure of
    /// (`src/journal/mod.rs` lines 44–56); then drop it, joining its
    /// workers.
    fn close(&self, db: FjallDb) -> Result<(), KitError> {
        let closed = db.call(Engine::close);
        drop(db);
        closed
    }
}
