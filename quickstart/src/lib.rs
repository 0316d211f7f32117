//! The quickstart: an engine (`store.rs`, a stub to replace with yours) and
//! its adapter for the simulator's target kit (this file). Run it:
//!
//! ```text
//! cargo run --release -- --seeds 0..2000 --jobs 2
//! cargo run --release -- explore --seed 1 --depth 2 --faults
//! cargo test --release
//! ```

pub mod store;

use sim::kit::{Adapter, Env, KitError, Level, Op, Promise, Reply, Rows};

use crate::store::Store;

/// The store as the kit sees it.
#[derive(Clone, Copy, Debug)]
pub struct QuickstartAdapter;

impl Adapter for QuickstartAdapter {
    type Db = Store;
    type Config = ();

    fn name(&self) -> &'static str {
        "quickstart"
    }

    /// One level: a commit returns once it is durable.
    fn levels(&self) -> &'static [Level] {
        &[Level { name: "durable", promise: Promise::Durable }]
    }

    fn configure(&self, _rng: &mut dyn rand::RngCore) {}

    fn create(&self, env: &Env<'_, ()>) -> Result<(), KitError> {
        Ok(Store::create(env.vfs.as_ref(), env.dir)?)
    }

    fn open(&self, env: &Env<'_, ()>) -> Result<Store, KitError> {
        Ok(Store::open(env.vfs.clone(), env.dir)?)
    }

    fn apply(&self, db: &mut Store, op: Op<'_>) -> Result<Reply, KitError> {
        Ok(match op {
            Op::Put { key, value, .. } => Reply::Value(db.write(key, Some(value))),
            Op::Delete { key, .. } => Reply::Value(db.write(key, None)),
            Op::Get { key, .. } => Reply::Value(db.view().get(key).cloned()),
            Op::Scan { .. } => Reply::Rows(db.view().clone()),
            Op::Commit { .. } => {
                db.commit()?;
                Reply::Done
            }
            Op::Abort => {
                db.abort();
                Reply::Done
            }
            Op::Maintain => unreachable!("no maintenance operation is declared"),
        })
    }

    fn read_committed(&self, db: &mut Store, _table: usize) -> Result<Rows, KitError> {
        Ok(db.committed().clone())
    }

    fn close(&self, _db: Store) -> Result<(), KitError> {
        Ok(())
    }
}
