//! A whole engine tested through the target kit, as `TESTING-YOUR-ENGINE.md`
//! walks through it: `LogKv` (`store.rs`, written for this example) and
//! its adapter (this file). Run it like the simulator itself:
//!
//! ```text
//! cargo run --release -p sim --example logkv -- --seeds 0..2000 --jobs 2
//! cargo run --release -p sim --example logkv -- --seeds 0..200 --plant lazy-fsync
//! cargo run --release -p sim --example logkv -- explore --seed 1 --depth 2 --faults
//! cargo run --release -p sim --example logkv -- explore --seed 1 --damage
//! cargo run --release -p sim --example logkv -- --seeds 0..500 --clients 4 --interleave
//! ```

mod store;

use std::process::ExitCode;
use std::sync::Arc;

use simkit::vfs::OpenMode;
use simkit::{
    Adapter, Env, KitError, Level, Plant, Previous, Promise, ReadTransactions, Readers, ReadersBeside, RecordSpan,
    RngCore, Rows, Spec,
};

use crate::store::{Bug, LogKv, Readers as LogReaders};

/// `LogKv` as the kit sees it.
#[derive(Clone, Copy, Debug)]
struct LogKvAdapter;

const LOG: &str = "log";

impl Plant for Bug {
    const ALL: &'static [Bug] = &[Bug::LazyFsync, Bug::NoChecksum, Bug::LiveReader, Bug::PastCommit];

    fn name(self) -> &'static str {
        match self {
            Bug::LazyFsync => "lazy-fsync",
            Bug::NoChecksum => "no-checksum",
            Bug::LiveReader => "live-reader",
            Bug::PastCommit => "past-commit",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Bug::LazyFsync => "a sync commit fsyncs only when the log crossed a 4 KiB boundary",
            Bug::NoChecksum => "open replays a record without checking its checksum",
            Bug::LiveReader => "a reader reads the committed state as it is now, not its copy (needs --clients)",
            Bug::PastCommit => {
                "a reader begins on every record written, past the last commit record (needs --clients and --interleave)"
            }
        }
    }
}

impl Adapter for LogKvAdapter {
    type Db = LogKv;
    type Config = ();
    type Plant = Bug;

    fn name(&self) -> &'static str {
        "logkv"
    }

    fn configure(&self, _rng: &mut dyn RngCore) {}

    /// `sync` fsyncs the log before the commit returns; `nosync` leaves it
    /// in the page cache, so a power loss may roll it back — but only as a
    /// whole, and only with every commit after it. `LogKv::commit` names
    /// both moments of a commit (crashes are aimed there); every record
    /// carries a checksum, so a damaged one is cut at, as a torn tail is
    /// (an older committed state, never another one), and the adapter
    /// describes the records for `sim explore --damage`. Up to 3 readers
    /// read beside the writer, each the state committed when it began
    /// (`--clients 4`), also from inside the writer's commit
    /// (`--interleave`: `ReadTransactions::beside`).
    fn spec(&self, _config: &()) -> Spec {
        Spec {
            phases: &["appended", "synced"],
            detects_damage: true,
            describes_records: true,
            readers: Some(Readers {
                max: 3,
                across_maintenance: true,
                writer_waits: false,
                refused_at: &[],
                second_writer_refused_at: &[],
                documented: "store.rs's module doc",
            }),
            ..Spec::new(vec![Level::new("sync", Promise::Durable), Level::new("nosync", Promise::Eventual)])
        }
    }

    /// The log's records, as `LogKv::open` reads them (`sim explore --damage`).
    fn records(&self, name: &str, bytes: &[u8]) -> Option<Vec<RecordSpan>> {
        let records = store::records(bytes, true).into_iter().enumerate();
        let span = |(number, (at, payload)): (usize, (usize, &[u8]))| RecordSpan {
            offset_bytes: at as u64,
            len_bytes: (store::HEADER_BYTES + payload.len()) as u64,
            what: match store::continued(payload) {
                true => format!("record {number} (continued)"),
                false => format!("commit record {number}"),
            },
        };
        (name == LOG).then(|| records.map(span).collect())
    }

    /// The application creates the (empty) log; the kit makes its name durable.
    fn create(&self, env: &Env<'_, Self>) -> Result<(), KitError> {
        let file = env.vfs.open(&env.dir.join(LOG), OpenMode::Create)?;
        drop(file);
        Ok(())
    }

    fn open(&self, env: &Env<'_, Self>) -> Result<LogKv, KitError> {
        // `?` takes the engine's `InvalidData` as corruption (`From<io::Error>`).
        Ok(LogKv::open(env.vfs.clone(), &env.dir.join(LOG), 1, env.plant)?)
    }

    fn put(&self, db: &mut LogKv, table: usize, key: &[u8], value: &[u8]) -> Result<Previous, KitError> {
        Ok(Previous::Was(db.write(table, key, Some(value))))
    }

    fn delete(&self, db: &mut LogKv, table: usize, key: &[u8]) -> Result<Previous, KitError> {
        Ok(Previous::Was(db.write(table, key, None)))
    }

    fn get(&self, db: &mut LogKv, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        Ok(db.view()[table].get(key).cloned())
    }

    fn scan(&self, db: &mut LogKv, table: usize) -> Result<Rows, KitError> {
        Ok(db.view()[table].clone())
    }

    fn commit(&self, db: &mut LogKv, level: usize) -> Result<(), KitError> {
        Ok(db.commit(level == 0)?)
    }

    fn abort(&self, db: &mut LogKv) -> Result<(), KitError> {
        db.abort();
        Ok(())
    }

    fn read_committed(&self, db: &mut LogKv, table: usize) -> Result<Rows, KitError> {
        Ok(db.committed()[table].clone())
    }

    fn close(&self, db: LogKv) -> Result<(), KitError> {
        Ok(db.close()?)
    }

    fn readers(&self) -> Option<&dyn ReadTransactions<LogKv>> {
        Some(self)
    }
}

impl ReadTransactions<LogKv> for LogKvAdapter {
    fn begin_read(&self, db: &mut LogKv, reader: usize) -> Result<(), KitError> {
        ReadersBeside::begin_read(db.readers(), reader)
    }

    fn reader_get(&self, db: &mut LogKv, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        ReadersBeside::reader_get(db.readers(), reader, table, key)
    }

    fn reader_scan(&self, db: &mut LogKv, reader: usize, table: usize) -> Result<Rows, KitError> {
        ReadersBeside::reader_scan(db.readers(), reader, table)
    }

    fn end_read(&self, db: &mut LogKv, reader: usize) -> Result<(), KitError> {
        ReadersBeside::end_read(db.readers(), reader)
    }

    /// The readers share their states with the writer behind a lock it
    /// never holds across an I/O, so a reader may step inside its commit.
    fn beside(&self, db: &mut LogKv) -> Option<Arc<dyn ReadersBeside>> {
        Some(Arc::new(db.readers().clone()))
    }
}

impl ReadersBeside for LogReaders {
    fn begin_read(&self, reader: usize) -> Result<(), KitError> {
        LogReaders::begin_read(self, reader);
        Ok(())
    }

    fn reader_get(&self, reader: usize, table: usize, key: &[u8]) -> Result<Option<Vec<u8>>, KitError> {
        Ok(self.reader_view(reader)[table].get(key).cloned())
    }

    fn reader_scan(&self, reader: usize, table: usize) -> Result<Rows, KitError> {
        Ok(self.reader_view(reader)[table].clone())
    }

    fn end_read(&self, reader: usize) -> Result<(), KitError> {
        LogReaders::end_read(self, reader);
        Ok(())
    }

    /// logkv has no locks: a reader is never refused.
    fn writer_lock(&self) -> Option<&'static str> {
        None
    }
}

fn main() -> ExitCode {
    simkit::main(LogKvAdapter)
}
