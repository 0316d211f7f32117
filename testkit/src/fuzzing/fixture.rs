//! The fixture: a small store directory written by the engine itself, which
//! [`super::aof_recover`] puts beside every log it is given.
//!
//! A log on its own can only ever name segments that do not exist, so its
//! `SEGMENTED` and `STUB` frames would all be refused at the first lookup
//! and the replay code behind them would never run. With a registered,
//! valid segment beside it, a log that names segment 1 replays through
//! stitching, stub insertion, promotion and the orphan sweep. The corpus
//! generator (`sim::fuzzing::corpus`) starts its logs from [`Fixture::log`],
//! so the fuzzer begins with logs that name this very segment.
//!
//! Built once per process, deterministically: the same engine code writes
//! the same bytes.

use std::sync::{Arc, OnceLock};

use super::{dir, disk_with, names, read, NOW_MS};
use engine::clock::ManualClock;
use engine::store::{Options, Store, AOF_FILE};

/// The commands that build the fixture, before its one eviction: a windowed
/// table `t0` (window column `ts`, span 5) with six rows below the window
/// and one row that holds it open.
const COMMANDS: &[&[&str]] = &[
    &["WINDOW", "t0", "ts", "5"],
    &["HSET", "t0:0", "ts", "0", "name", "ada"],
    &["HSET", "t0:1", "ts", "1", "name", "brian"],
    &["HSET", "t0:2", "ts", "2", "name", "cleo", "team", "red"],
    &["HSET", "t0:3", "ts", "3"],
    &["HSET", "t0:4", "ts", "4", "name", "dmitri"],
    &["HSET", "t0:5", "ts", "5", "note", ""],
    &["HSET", "t0:100", "ts", "100", "name", "zed"],
    &["SET", "greeting", "hello"],
];

/// The rows the eviction seals into segment 1.
pub const SEALED_ROWS: u64 = 6;

/// A store directory after one eviction (see the module doc).
#[derive(Debug)]
pub struct Fixture {
    /// Every file but the log, by name, in name order: `MANIFEST` and the
    /// segment it registers (seq 1, table `t0`).
    pub files: Vec<(String, Vec<u8>)>,
    /// The log as the store left it: its commands, then the `SEGMENTED`
    /// frame of segment 1.
    pub log: Vec<u8>,
}

/// The fixture, built on first use.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(build)
}

fn build() -> Fixture {
    let vfs = disk_with(&[]);
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let (mut store, _) = Store::open(vfs.clone(), clock, dir(), Options::default()).expect("an empty directory opens");
    for command in COMMANDS {
        let args: Vec<Vec<u8>> = command.iter().map(|arg| arg.as_bytes().to_vec()).collect();
        store.execute_args(&args).unwrap_or_else(|e| panic!("fixture command {command:?}: {e}"));
    }
    let report = store.evict().expect("the fixture's eviction");
    assert_eq!((report.segments_sealed, report.rows_evicted), (1, SEALED_ROWS));
    store.close().expect("the fixture closes");

    let mut files = Vec::new();
    let mut log = None;
    for name in names(vfs.as_ref()) {
        let bytes = read(vfs.as_ref(), &name);
        if name == AOF_FILE {
            log = Some(bytes);
        } else {
            files.push((name, bytes));
        }
    }
    assert_eq!(files.len(), 2, "the fixture is a manifest and one segment: {files:?}");
    Fixture { files, log: log.expect("the store wrote its log") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::aof::{scan_log, Record};
    use engine::manifest::{Manifest, MANIFEST_FILE};
    use engine::store::segment_file_name;
    use std::path::Path;

    #[test]
    fn the_fixture_is_a_manifest_a_segment_and_a_log_naming_it() {
        let fixture = fixture();
        let segment = segment_file_name(b"t0", 1);
        let names: Vec<&str> = fixture.files.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, [MANIFEST_FILE, segment.as_str()]);

        let manifest = Manifest::parse(Path::new(MANIFEST_FILE), &fixture.files[0].1).unwrap();
        assert_eq!(manifest.live.keys().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(manifest.live[&1].records, SEALED_ROWS);

        let scan = scan_log(Path::new(AOF_FILE), &fixture.log).unwrap();
        assert_eq!(scan.records.len(), COMMANDS.len() + 1);
        assert_eq!(scan.records.last(), Some(&Record::Segmented { seq: 1, file: segment }));
    }

    #[test]
    fn the_fixture_is_built_the_same_way_every_time() {
        let again = build();
        assert_eq!(again.files, fixture().files);
        assert_eq!(again.log, fixture().log);
    }
}
