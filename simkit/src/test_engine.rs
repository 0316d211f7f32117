//! A tiny engine written for the kit's own tests, so that they need no
//! third-party engine: its `sync` commits rewrite one file aside and
//! rename it in (durable), its `lazy` commits stay in its memory until
//! the next `sync` commit or close (`Eventual`: a power loss may take
//! them, in order). What its adapter declares is the test's to choose:
//! whether `lazy` commits survive a process kill (they do not), and which
//! persistence hazards it documents.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use vfs::{read_whole, OpenMode, Vfs};

use crate::{
    Adapter, DocumentedHazard, Env, ErrorKind, KitError, Level, Maintain, Maintenance, NoPlant, Previous, Promise,
    Readers, RngCore, Rows, Spec, Tolerances,
};

const FILE: &str = "state";
const TMP: &str = "state.tmp";

/// The engine, and what its adapter declares about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buffered {
    /// `lazy` commits declared to survive a process kill (a lie).
    pub declares_lazy_survives_kill: bool,
    /// The persistence hazards it documents (`Spec::hazards`).
    pub hazards: &'static [DocumentedHazard],
    /// Its spec declares a `flush` maintenance (`Spec::maintenance`) ...
    pub declares_flush: bool,
    /// ... and its adapter has it (`Adapter::maintenance`: persist what
    /// is committed).
    pub flushes: bool,
    /// Its spec declares readers (which the adapter never has).
    pub declares_readers: bool,
    /// Its file starts with a byte left from whatever ran before (a
    /// process-wide counter): the same lengths at the same places, other
    /// bytes each run, as an engine that writes uninitialised padding.
    pub pads_from_memory: bool,
}

impl Buffered {
    /// The engine declared honestly, documenting no hazard.
    pub(crate) const HONEST: Buffered = Buffered {
        declares_lazy_survives_kill: false,
        hazards: &[],
        declares_flush: false,
        flushes: false,
        declares_readers: false,
        pads_from_memory: false,
    };
}

/// The byte a padding engine's next file starts with: never reset, so a
/// second run of a seed in the same process writes other bytes.
static LEFT_IN_MEMORY: AtomicU8 = AtomicU8::new(0);

pub(crate) struct Db {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    pads: bool,
    committed: Rows,
    working: Option<Rows>,
}

fn encode(rows: &Rows) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in rows {
        for part in [key, value] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

fn decode(bytes: &[u8]) -> Result<Rows, KitError> {
    let corrupt = || KitError::new(ErrorKind::Corrupt, "a truncated record");
    let mut rows = Rows::new();
    let mut at = 0;
    let take = |at: &mut usize| -> Result<Vec<u8>, KitError> {
        let len_bytes = bytes.get(*at..*at + 4).ok_or_else(corrupt)?;
        let len = u32::from_le_bytes(len_bytes.try_into().expect("four bytes")) as usize;
        let part = bytes.get(*at + 4..*at + 4 + len).ok_or_else(corrupt)?;
        *at += 4 + len;
        Ok(part.to_vec())
    };
    while at < bytes.len() {
        let key = take(&mut at)?;
        rows.insert(key, take(&mut at)?);
    }
    Ok(rows)
}

impl Db {
    /// Write the committed rows aside, fsync, rename in, fsync the directory.
    fn persist(&self) -> Result<(), KitError> {
        let tmp = self.dir.join(TMP);
        let mut file = self.vfs.open(&tmp, OpenMode::Truncate)?;
        let mut bytes = Vec::new();
        if self.pads {
            bytes.push(LEFT_IN_MEMORY.fetch_add(1, Ordering::Relaxed));
        }
        bytes.extend_from_slice(&encode(&self.committed));
        file.write_at(0, &bytes)?;
        file.sync()?;
        self.vfs.rename(&tmp, &self.dir.join(FILE))?;
        Ok(self.vfs.sync_dir(&self.dir)?)
    }

    fn view(&mut self) -> &mut Rows {
        self.working.get_or_insert_with(|| self.committed.clone())
    }
}

fn open_db(env: &Env<'_, Buffered>, pads: bool) -> Result<Db, KitError> {
    // A rename whose directory fsync failed may still be pending.
    env.vfs.sync_dir(env.dir)?;
    let bytes = read_whole(env.vfs.as_ref(), &env.dir.join(FILE))?;
    let records =
        if pads { bytes.get(1..).ok_or_else(|| KitError::new(ErrorKind::Corrupt, "no pad byte"))? } else { &bytes };
    let committed = decode(records)?;
    Ok(Db { vfs: env.vfs.clone(), dir: env.dir.to_path_buf(), pads, committed, working: None })
}

impl Adapter for Buffered {
    type Db = Db;
    type Config = ();
    type Plant = NoPlant;

    fn name(&self) -> &'static str {
        "buffered"
    }

    fn configure(&self, _rng: &mut dyn RngCore) {}

    fn spec(&self, _config: &()) -> Spec {
        let lazy =
            Level { survives_process_kill: self.declares_lazy_survives_kill, ..Level::new("lazy", Promise::Eventual) };
        Spec {
            tolerates: Tolerances { torn_garbage: false, read_bitflips: false },
            default_ops: 120,
            hazards: self.hazards,
            maintenance: self.declares_flush.then_some(Maintenance { name: "flush", makes_durable: true }),
            readers: self.declares_readers.then_some(Readers {
                max: 1,
                across_maintenance: true,
                writer_waits: false,
                refused_at: &[],
                second_writer_refused_at: &[],
                documented: "nowhere: the kit refuses the spec",
            }),
            ..Spec::new(vec![Level::new("sync", Promise::Durable), lazy])
        }
    }

    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let db = Db {
            vfs: env.vfs.clone(),
            dir: env.dir.to_path_buf(),
            pads: self.pads_from_memory,
            committed: Rows::new(),
            working: None,
        };
        db.persist()
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<Db, KitError> {
        open_db(env, self.pads_from_memory)
    }

    fn put(&self, db: &mut Db, _table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        Ok(Previous::Was(db.view().insert(key.to_vec(), value.to_vec())))
    }

    fn delete(&self, db: &mut Db, _table: usize, key: &[u8]) -> Result<Previous, KitError> {
        Ok(Previous::Was(db.view().remove(key)))
    }

    fn get(&self, db: &mut Db, _table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        Ok(db.view().get(key).cloned())
    }

    fn scan(&self, db: &mut Db, _table: usize) -> Result<Rows, KitError> {
        Ok(db.view().clone())
    }

    /// `sync` persists everything committed; `lazy` only moves it in memory.
    fn commit(&self, db: &mut Db, level: usize) -> Result<(), KitError> {
        if let Some(working) = db.working.take() {
            db.committed = working;
        }
        if level == 0 {
            db.persist()?;
        }
        Ok(())
    }

    fn abort(&self, db: &mut Db) -> Result<(), KitError> {
        db.working = None;
        Ok(())
    }

    fn read_committed(&self, db: &mut Db, _table: usize) -> Result<Rows, KitError> {
        Ok(db.committed.clone())
    }

    fn close(&self, db: Db) -> Result<(), KitError> {
        db.persist()
    }

    fn maintenance(&self) -> Option<&dyn Maintain<Db>> {
        self.flushes.then_some(self as &dyn Maintain<Db>)
    }
}

/// `flush`: persist what is committed (the kit aborts the write
/// transaction first), so a `lazy` commit before it is durable after it.
impl Maintain<Db> for Buffered {
    fn maintain(&self, db: &mut Db) -> Result<(), KitError> {
        db.persist()
    }
}
