//! A whole engine tested through the target kit, as `TESTING-YOUR-ENGINE.md`
//! walks through it: `LogKv` (`store.rs`, written for this example) and
//! its adapter (this file). Run it like the simulator itself:
//!
//! ```text
//! cargo run --release -p sim --example logkv -- --seeds 0..2000 --jobs 2
//! cargo run --release -p sim --example logkv -- --seeds 0..200 --plant lazy-fsync
//! cargo run --release -p sim --example logkv -- explore --seed 1 --depth 2 --faults
//! cargo run --release -p sim --example logkv -- explore --seed 1 --damage
//! ```

mod store;

use std::process::ExitCode;

use rand::RngCore;
use sim::kit::vfs::OpenMode;
use sim::kit::{Adapter, Env, KitError, Level, Op, Plant, Promise, RecordSpan, Reply, Rows};

use crate::store::LogKv;

/// `LogKv` as the kit sees it.
#[derive(Clone, Copy, Debug)]
struct LogKvAdapter;

const LOG: &str = "log";

impl Adapter for LogKvAdapter {
    type Db = LogKv;
    type Config = ();

    fn name(&self) -> &'static str {
        "logkv"
    }

    /// `sync` fsyncs the log before the commit returns; `nosync` leaves it
    /// in the page cache, so a power loss may roll it back — but only as a
    /// whole, and only with every commit after it.
    fn levels(&self) -> &'static [Level] {
        &[Level { name: "sync", promise: Promise::Durable }, Level { name: "nosync", promise: Promise::Eventual }]
    }

    fn configure(&self, _rng: &mut dyn RngCore) {}

    /// `LogKv::commit` names both moments of a commit: crashes are aimed there.
    fn phases(&self) -> &'static [&'static str] {
        &["appended", "synced"]
    }

    fn plants(&self) -> &'static [Plant] {
        &[
            Plant { name: "lazy-fsync", what: "a sync commit fsyncs only when the log crossed a 4 KiB boundary" },
            Plant { name: "no-checksum", what: "open replays a record without checking its checksum" },
        ]
    }

    /// Every record carries a checksum: a damaged one is cut at, as a torn
    /// tail is (an older committed state, never another one).
    fn detects_damage(&self, _config: &()) -> bool {
        true
    }

    /// The log's records, as `LogKv::open` reads them (`sim explore --damage`).
    fn records(&self, name: &str, bytes: &[u8]) -> Option<Vec<RecordSpan>> {
        let records = store::records(bytes, true).into_iter().enumerate();
        let span = |(number, (at, payload)): (usize, (usize, &[u8]))| RecordSpan {
            offset_bytes: at as u64,
            len_bytes: (store::HEADER_BYTES + payload.len()) as u64,
            what: format!("commit record {number}"),
        };
        (name == LOG).then(|| records.map(span).collect())
    }

    fn describes_records(&self) -> bool {
        true
    }

    /// The application creates the (empty) log; the kit makes its name durable.
    fn create(&self, env: &Env<'_, ()>) -> Result<(), KitError> {
        let file = env.vfs.open(&env.dir.join(LOG), OpenMode::Create)?;
        drop(file);
        Ok(())
    }

    fn open(&self, env: &Env<'_, ()>) -> Result<LogKv, KitError> {
        // `?` takes the engine's `InvalidData` as corruption (`From<io::Error>`).
        Ok(LogKv::open(env.vfs.clone(), &env.dir.join(LOG), 1, env.plant)?)
    }

    fn apply(&self, db: &mut LogKv, op: Op<'_>) -> Result<Reply, KitError> {
        Ok(match op {
            Op::Put { table, key, value } => Reply::Value(db.write(table, key, Some(value))),
            Op::Delete { table, key } => Reply::Value(db.write(table, key, None)),
            Op::Get { table, key } => Reply::Value(db.view()[table].get(key).cloned()),
            Op::Scan { table } => Reply::Rows(db.view()[table].clone()),
            Op::Commit { level } => {
                db.commit(level == 0)?;
                Reply::Done
            }
            Op::Abort => {
                db.abort();
                Reply::Done
            }
            Op::Maintain => unreachable!("LogKv declares no maintenance operation"),
        })
    }

    fn read_committed(&self, db: &mut LogKv, table: usize) -> Result<Rows, KitError> {
        Ok(db.committed()[table].clone())
    }

    fn close(&self, db: LogKv) -> Result<(), KitError> {
        Ok(db.close()?)
    }
}

fn main() -> ExitCode {
    sim::kit::main(LogKvAdapter)
}
