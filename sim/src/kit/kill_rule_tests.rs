//! The simulator's rule for a process kill, proven both ways on a tiny
//! engine written for the test: its `sync` commits rewrite a file aside
//! and rename it in (durable), its `lazy` commits stay in its memory until
//! the next `sync` commit or close (`Eventual`: a power loss may take
//! them, in order). Declared as a level whose commits survive a kill —
//! [`Level::new`]'s default for `Eventual` — the engine is wrong, and the
//! kill rule must catch it; declared honestly, it must pass.

use std::path::PathBuf;
use std::sync::Arc;

use engine::vfs::{read_whole, OpenMode, Vfs};

use super::workload::TableRef;
use super::{Adapter, Env, ErrorKind, Kit, KitError, KitSettings, Level, NoPlant, Previous, Promise, Rows, Spec};
use super::{KitOp, PlannedKitOp, RngCore, Tolerances, ONE_TABLE};
use crate::disk::CrashPoint;
use crate::seam::{run_seed, Target};
use crate::seeds;

const FILE: &str = "state";
const TMP: &str = "state.tmp";

/// The engine, and what its adapter declares about `lazy` commits.
#[derive(Clone, Copy, Debug)]
struct Buffered {
    declares_lazy_survives_kill: bool,
}

struct Db {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
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
        file.write_at(0, &encode(&self.committed))?;
        file.sync()?;
        self.vfs.rename(&tmp, &self.dir.join(FILE))?;
        Ok(self.vfs.sync_dir(&self.dir)?)
    }

    fn view(&mut self) -> &mut Rows {
        self.working.get_or_insert_with(|| self.committed.clone())
    }
}

fn open_db(env: &Env<'_, Buffered>) -> Result<Db, KitError> {
    // A rename whose directory fsync failed may still be pending.
    env.vfs.sync_dir(env.dir)?;
    let committed = decode(&read_whole(env.vfs.as_ref(), &env.dir.join(FILE))?)?;
    Ok(Db { vfs: env.vfs.clone(), dir: env.dir.to_path_buf(), committed, working: None })
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
            ..Spec::new(vec![Level::new("sync", Promise::Durable), lazy])
        }
    }

    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let db = Db { vfs: env.vfs.clone(), dir: env.dir.to_path_buf(), committed: Rows::new(), working: None };
        db.persist()
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<Db, KitError> {
        open_db(env)
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
}

/// A lazy commit, then a clean restart killed at its first I/O: the
/// engine's memory (the lazy commit) is gone, its file holds the state
/// before it. Run for the first few seeds whose coin makes that crash
/// point a kill; the failures' details.
fn killed_after_a_lazy_commit(declares_lazy_survives_kill: bool) -> Vec<String> {
    let kit = Kit::new(Buffered { declares_lazy_survives_kill }, KitSettings::default());
    let table = TableRef { index: 0, spec: ONE_TABLE[0] };
    let put = KitOp::Put { table, key: b"k1".to_vec(), value: b"v1".to_vec() };
    let ops = |restart_at: u64| {
        let planned = |index, op, crash| PlannedKitOp { index, op, crash };
        vec![
            planned(restart_at - 2, put.clone(), None),
            planned(restart_at - 1, KitOp::Commit { level: 1, name: "lazy" }, None),
            planned(restart_at, KitOp::Restart, Some(CrashPoint::AfterIos(0))),
        ]
    };
    let killed = (0..40).flat_map(|seed| (2..40).map(move |index| (seed, index)));
    let killed = killed.filter(|&(seed, index)| seeds::kill_in_op(seed, index)).take(20);
    let outcomes = killed.map(|(seed, index)| kit.run(seed, &ops(index), false));
    outcomes
        .filter_map(|outcome| outcome.failure)
        .map(|failure| format!("{}: {}", failure.check, failure.detail))
        .collect()
}

#[test]
fn a_lazy_commit_held_in_memory_is_caught_at_a_kill_unless_declared() {
    let honest = killed_after_a_lazy_commit(false);
    assert!(honest.is_empty(), "declared honestly, the engine passes: {honest:?}");
    let wrong = killed_after_a_lazy_commit(true);
    assert!(!wrong.is_empty(), "a lazy commit a kill took must fail the kill rule");
    assert!(wrong.iter().all(|detail| detail.contains("after a process kill")), "{wrong:?}");
}

#[test]
fn a_sweep_of_the_honest_declaration_passes() {
    let kit = Kit::new(Buffered { declares_lazy_survives_kill: false }, KitSettings::default());
    for seed in 0..200 {
        let outcome = run_seed(&kit, seed, false);
        assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
    }
}
