//! `tlog` as a kit target running through the stdfs layer: a key-value
//! log of our own with two background threads ([`store::TLog`]: a
//! flusher that batches commits into one write and one fsync, and a
//! compactor), the layer's scheduler (issue 48) deciding at every
//! scheduling point which of its threads runs. It exists to prove that
//! scheduler: the honest engine passes, and each of three realistic
//! thread bugs ([`TlogPlant`], `--plant NAME`) is caught.
//!
//! Like cowkv, it runs on an engine thread of its own per open
//! ([`Worker`]); the threads it starts are scheduled with it. The seed's
//! scheduling comes from the session's entropy seed, drawn per seed in
//! `configure`: without it every seed would schedule alike.

pub mod store;
#[cfg(test)]
mod tests;
mod waits;

use std::path::PathBuf;

use simkit::{
    Adapter, DocumentedHazard, Env, KitError, Level, Plant, Previous, Promise, RngCore, Rows, Spec, Tolerances,
    ONE_TABLE,
};

use stdfs_layer::{db_path, Place, Worker};
use store::TLog;

/// The thread bugs that can be planted in `tlog`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlogPlant {
    /// The flusher tells the clients their batch is synced before its
    /// fsync: a durable commit is acknowledged while its bytes are not.
    AckBeforeFsync,
    /// The compactor takes its snapshot under the writer's lock but lets
    /// go of it while it writes and renames: a batch the flusher appends
    /// to the old file meanwhile is lost with it.
    CompactRenameRace,
    /// A durable client raises the "sync needed" flag after it wakes the
    /// flusher, outside the lock: a flusher that takes the batch first
    /// writes without syncing and sleeps; the client waits for good.
    UnsyncedFlag,
    /// Not a bug: the flusher waits for work with `poll` on an eventfd, a
    /// blocking call the layer's scheduler cannot model: every run must
    /// end with `unknown blocking call`, and the sweep go on.
    EventfdWait,
    /// Not a bug: the flusher busy-waits for work on an atomic, never
    /// reaching the layer: every run must end with `spinning thread` (the
    /// spin budget lowered to 2 s), and the sweep go on.
    SpinWait,
}

impl Plant for TlogPlant {
    const ALL: &'static [TlogPlant] = &[
        TlogPlant::AckBeforeFsync,
        TlogPlant::CompactRenameRace,
        TlogPlant::UnsyncedFlag,
        TlogPlant::EventfdWait,
        TlogPlant::SpinWait,
    ];

    fn name(self) -> &'static str {
        match self {
            TlogPlant::AckBeforeFsync => "ack-before-fsync",
            TlogPlant::CompactRenameRace => "compact-rename-race",
            TlogPlant::UnsyncedFlag => "unsynced-flag",
            TlogPlant::EventfdWait => "eventfd-wait",
            TlogPlant::SpinWait => "spin-wait",
        }
    }

    fn what(self) -> &'static str {
        match self {
            TlogPlant::AckBeforeFsync => "the flusher acknowledges a durable batch before its fsync",
            TlogPlant::CompactRenameRace => {
                "the compactor lets go of the writer's lock between its snapshot and its rename: appends meanwhile are lost"
            }
            TlogPlant::UnsyncedFlag => {
                "a durable client sets the sync flag after waking the flusher, outside the lock (a lost wakeup)"
            }
            TlogPlant::EventfdWait => {
                "not a bug: the flusher polls an eventfd for work, which the layer's scheduler refuses (proves it fails loudly)"
            }
            TlogPlant::SpinWait => {
                "not a bug: the flusher spins on an atomic for work, never reaching the layer (proves the spin watch, 2 s)"
            }
        }
    }
}

/// `tlog` as the kit sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct TlogAdapter;

/// The seed's configuration: the session's entropy seed, which seeds the
/// layer's scheduler (its policy and every pick).
#[derive(Clone, Debug)]
pub struct TlogConfig {
    pub entropy_seed: u64,
}

/// An open log on its engine thread.
pub struct TlogDb {
    worker: Worker<TLog>,
}

impl TlogDb {
    /// Run `job` on the engine; fail the run if the layer refused a call.
    fn call<R: Send + 'static>(&self, job: impl FnOnce(&mut TLog) -> R + Send + 'static) -> R {
        self.worker.call(job).unless_refused()
    }
}

fn dir(env: &Env<'_, TlogAdapter>) -> PathBuf {
    db_path(env.dir)
}

fn place(env: &Env<'_, TlogAdapter>) -> Place {
    Place { entropy_seed: env.config.entropy_seed, ..Place::of(env) }
}

/// Level 0 waits for the fsync, level 1 for the write only.
const DURABLE: usize = 0;

impl Adapter for TlogAdapter {
    type Db = TlogDb;
    type Config = TlogConfig;
    type Plant = TlogPlant;

    fn name(&self) -> &'static str {
        "tlog"
    }

    fn configure(&self, rng: &mut dyn RngCore) -> TlogConfig {
        TlogConfig { entropy_seed: rng.next_u64() }
    }

    /// One table; `durable` returns after the batch's fsync, `buffered`
    /// after its write (a power loss may take it back, never half of it).
    /// A compaction's `log.compact` is fsynced before its rename is made
    /// durable, in the background, so a kit operation may end meanwhile:
    /// nothing acknowledged relies on it (the old log holds every commit
    /// until the directory's fsync, and no batch is written meanwhile).
    fn spec(&self, _config: &TlogConfig) -> Spec {
        const COMPACTION: &[DocumentedHazard] = &[DocumentedHazard {
            file_suffix: ".compact",
            documented: "tlog/store.rs `compact`: the old log holds every commit until the rename is durable",
        }];
        Spec {
            tables: ONE_TABLE,
            hazards: COMPACTION,
            tolerates: Tolerances { torn_garbage: true, read_bitflips: false },
            ..Spec::new(vec![Level::new("durable", Promise::Durable), Level::new("buffered", Promise::Eventual)])
        }
    }

    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let path = dir(env);
        let created = Worker::<()>::start(place(env), move || TLog::create(&path)).unless_refused();
        Ok(created.map(drop)?)
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<TlogDb, KitError> {
        let (path, plant) = (dir(env), env.plant);
        if plant == Some(TlogPlant::SpinWait) {
            stdfs_layer::set_spin_budget(std::time::Duration::from_secs(2));
        }
        let worker = Worker::start(place(env), move || TLog::open(&path, plant)).unless_refused()?;
        Ok(TlogDb { worker })
    }

    fn put(&self, db: &mut TlogDb, _table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        let (key, value) = (key.to_vec(), value.to_vec());
        Ok(Previous::Was(db.call(move |s| s.write(&key, Some(&value)))))
    }

    fn delete(&self, db: &mut TlogDb, _table: usize, key: &[u8]) -> Result<Previous, KitError> {
        let key = key.to_vec();
        Ok(Previous::Was(db.call(move |s| s.write(&key, None))))
    }

    fn get(&self, db: &mut TlogDb, _table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        let key = key.to_vec();
        Ok(db.call(move |s| s.view().get(&key).cloned()))
    }

    fn scan(&self, db: &mut TlogDb, _table: usize) -> Result<Rows, KitError> {
        Ok(db.call(|s| s.view().clone()))
    }

    fn commit(&self, db: &mut TlogDb, level: usize) -> Result<(), KitError> {
        Ok(db.call(move |s| s.commit(level == DURABLE))?)
    }

    fn abort(&self, db: &mut TlogDb) -> Result<(), KitError> {
        db.call(TLog::abort);
        Ok(())
    }

    fn read_committed(&self, db: &mut TlogDb, _table: usize) -> Result<Rows, KitError> {
        Ok(db.call(|s| s.committed().clone()))
    }

    /// A clean close syncs what the flusher wrote: every commit durable.
    fn close(&self, db: TlogDb) -> Result<(), KitError> {
        db.call(TLog::abort);
        let TlogDb { worker } = db;
        let closed = worker.call(|s| s.close_in_place()).unless_refused();
        drop(worker);
        Ok(closed?)
    }
}
