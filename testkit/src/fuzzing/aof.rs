//! [`aof_recover`]: arbitrary bytes as the store's log.
//!
//! Three layers see the bytes, each checked against the one below:
//!
//! 1. [`scan_log`], the pure parser: its report is self-consistent, and the
//!    valid prefix it reports scans again to the same records with nothing
//!    invalid (what one recovery keeps, the next keeps).
//! 2. [`AofWriter::recover`] on a disk holding only the log: it agrees with
//!    the scan (refuses exactly what the scan refuses, and then changes
//!    nothing), leaves exactly the valid prefix in the log and exactly the
//!    rest in the quarantine file, and a record appended afterwards is the
//!    next record a scan finds.
//! 3. [`Store::open`] on the [fixture](super::fixture) directory with the
//!    bytes as its log: it opens or refuses with `Corrupt`. If it opens,
//!    the audit is clean, a fixed set of writes (promotions, deletes of
//!    cold rows, new rows, a window slide), an eviction and a rewrite
//!    reply as the reference model does, and two reopens bring back
//!    exactly the model's content.

use std::path::Path;
use std::sync::Arc;

use super::{dir, disk_with, fixture, names, path_of, read, resealed_aof_frames, with_resealed, NOW_MS};
use crate::model::Model;
use engine::aof::{scan_log, AofWriter, FsyncPolicy, LogScan, Record};
use engine::clock::ManualClock;
use engine::store::{Command, Options, Store, AOF_FILE};
use engine::vfs::MemVfs;
use engine::{Error, Result};

/// Run the bytes through all three layers (see the module doc), as given
/// and with their frames resealed (see [the parent](super)). Panics on any
/// broken property: that is a finding.
pub fn aof_recover(data: &[u8]) {
    with_resealed(data, resealed_aof_frames, check_all);
}

fn check_all(data: &[u8]) {
    let log_path = path_of(AOF_FILE);
    let scan = scan_log(&log_path, data);
    check_scan(&log_path, data, &scan);
    check_recovery(data, &scan);
    check_store(data);
}

fn check_scan(log_path: &Path, data: &[u8], scan: &Result<LogScan>) {
    let scan = match scan {
        Ok(scan) => scan,
        Err(e) => {
            assert!(e.refuses_bytes(), "scan_log failed with something other than Corrupt: {e}");
            return;
        }
    };
    let valid_len_bytes = usize::try_from(scan.valid_len_bytes).expect("within the input");
    assert!(valid_len_bytes <= data.len());
    assert_eq!(scan.invalid.is_some(), valid_len_bytes < data.len(), "{scan:?}");
    if let Some((invalid_at, _)) = scan.invalid {
        assert_eq!(invalid_at, scan.valid_len_bytes);
    }
    assert!(!scan.valid_frames_after_invalid || scan.invalid.is_some());
    assert!(valid_len_bytes > 0 || scan.records.is_empty());

    match scan_log(log_path, &data[..valid_len_bytes]) {
        Ok(again) => {
            assert_eq!(again.records, scan.records, "the valid prefix scans to other records");
            assert_eq!(again.invalid, None);
        }
        // A prefix no recovery keeps: cut inside the snapshot a rewrite
        // made durable, which its header vouches for whole (recovery
        // refuses that damage, and a point-in-time cut never lands inside
        // a snapshot). Re-scanning it must refuse it too — and only then.
        Err(e) => assert!(
            e.refuses_bytes() && scan.damage.as_deref().is_some_and(|why| why.contains("snapshot")),
            "the valid prefix of a log scans: {e}\n  the whole log scanned to {scan:?}"
        ),
    }
}

fn check_recovery(data: &[u8], scan: &Result<LogScan>) {
    let vfs = disk_with(&[(AOF_FILE, data)]);
    let recovered = AofWriter::recover(vfs.clone(), dir(), AOF_FILE, FsyncPolicy::Always, NOW_MS);
    let (mut writer, records, report) = match (scan, recovered) {
        (Err(scan_error), Err(error)) => {
            assert_eq!(error.to_string(), scan_error.to_string(), "recovery refused for another reason");
            assert_eq!(read(vfs.as_ref(), AOF_FILE), data, "a refused log was changed");
            assert_eq!(names(vfs.as_ref()), [AOF_FILE], "a refused recovery left files behind");
            return;
        }
        (Ok(scan), Err(error)) if scan.damage.is_some() => {
            // Damage to durable frames: the default recovery refuses it
            // and changes nothing.
            assert!(error.refuses_bytes(), "damage refused with something other than Corrupt: {error}");
            assert_eq!(read(vfs.as_ref(), AOF_FILE), data, "a refused log was changed");
            assert_eq!(names(vfs.as_ref()), [AOF_FILE], "a refused recovery left files behind");
            return;
        }
        (Ok(scan), Ok(_)) if scan.damage.is_some() => panic!("damage was cut, not refused: {scan:?}"),
        (Ok(scan), Ok((writer, log, report))) => {
            let records = log.to_records();
            assert_eq!(log.frames(), records.len() as u64, "the recovered log miscounts its records");
            assert_eq!(records, scan.records, "recovery returned other records than the scan");
            (writer, records, report)
        }
        (scan, Err(error)) => panic!("the scan accepted the log ({scan:?}) but recovery failed: {error}"),
        (Err(error), Ok(_)) => panic!("the scan refused the log ({error}) but recovery accepted it"),
    };

    let valid_len_bytes = report.valid_len_bytes as usize;
    assert_eq!(report.frames, records.len() as u64);
    assert_eq!(report.dropped_bytes, (data.len() - valid_len_bytes) as u64);
    let log = read(vfs.as_ref(), AOF_FILE);
    if valid_len_bytes > 0 {
        // The valid prefix, then at most the marks recovery vouches with.
        assert_eq!(log[..valid_len_bytes], data[..valid_len_bytes], "the log is not its valid prefix after recovery");
        let whole = scan_log(&path_of(AOF_FILE), &log).expect("a recovered log scans");
        assert_eq!(whole.records, records, "recovery added records after the valid prefix");
        assert_eq!(whole.invalid, None, "recovery left an invalid frame");
    } else {
        let fresh = scan_log(&path_of(AOF_FILE), &log).expect("a fresh header scans");
        assert!(!log.is_empty() && fresh.records.is_empty() && fresh.invalid.is_none(), "no fresh header written");
    }
    match &report.quarantine_file {
        Some(name) => assert_eq!(read(vfs.as_ref(), name), data[valid_len_bytes..], "quarantine lost bytes"),
        None => assert_eq!(report.dropped_bytes, 0, "bytes dropped without a quarantine file"),
    }

    // The next append lands right after the last valid record.
    let appended = Record::Command(vec![b"SET".to_vec(), b"fuzz:appended".to_vec(), b"1".to_vec()]);
    writer.append(&appended, NOW_MS).expect("an append to a recovered log on MemVfs");
    drop(writer);
    let after = scan_log(&path_of(AOF_FILE), &read(vfs.as_ref(), AOF_FILE)).expect("a recovered log scans");
    assert_eq!(after.invalid, None, "an append after recovery left an invalid frame");
    assert_eq!(after.records, [records, vec![appended]].concat(), "the append is not the next record");
}

/// The writes run after a store opened over the input: they touch the
/// fixture's cold rows (read, promote, delete, mutate), add rows, and slide
/// the window so the eviction after them seals something.
const WRITES: &[&[&str]] = &[
    &["HGETALL", "t0:1"],
    &["HSET", "t0:2", "name", "promoted"],
    &["DEL", "t0:3", "fuzz:absent"],
    &["HDEL", "t0:4", "name"],
    &["SET", "fuzz:s", "v"],
    &["PEXPIREAT", "fuzz:s", "1700000100000"],
    &["HSET", "fuzz:h", "f", "v"],
    &["HSET", "t0:200", "ts", "200"],
    &["GET", "greeting"],
];

fn check_store(data: &[u8]) {
    let vfs = fixture_disk(data);
    let mut store = match open(&vfs) {
        Ok(store) => store,
        Err(e) => {
            assert!(e.refuses_bytes(), "a log made the store fail to open with something other than Corrupt: {e}");
            return;
        }
    };
    check_audit(&store, "after open");
    let mut model = Model::from_dump(store.logical_dump().expect("a store that opened dumps its content"));

    for write in WRITES {
        let args: Vec<Vec<u8>> = write.iter().map(|arg| arg.as_bytes().to_vec()).collect();
        let command = Command::parse(&args).expect("the probe writes parse");
        match (store.execute(&command), model.execute(&command, NOW_MS)) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{write:?}"),
            (Err(Error::Invalid(_)), Err(_)) => {}
            (got, want) => panic!("{write:?}: the store answered {got:?}, the model {want:?}"),
        }
    }
    store.evict().expect("an eviction after recovery");
    check_content(&store, &model, "after the writes and an eviction");

    drop(store);
    let mut store = open(&vfs).expect("a store reopens after its own writes");
    check_content(&store, &model, "after a reopen");
    store.rewrite().expect("a rewrite after recovery");
    check_content(&store, &model, "after a rewrite");

    drop(store);
    let store = open(&vfs).expect("a store reopens after its own rewrite");
    check_content(&store, &model, "after a rewrite and a reopen");
}

/// A disk holding the fixture's manifest and segment, and `log` as the log.
fn fixture_disk(log: &[u8]) -> Arc<MemVfs> {
    let mut files: Vec<(&str, &[u8])> =
        fixture().files.iter().map(|(name, bytes)| (name.as_str(), bytes.as_slice())).collect();
    files.push((AOF_FILE, log));
    disk_with(&files)
}

fn open(vfs: &Arc<MemVfs>) -> Result<Store> {
    let clock = Arc::new(ManualClock::new(NOW_MS));
    Store::open(vfs.clone(), clock, dir(), Options::default()).map(|(store, _)| store)
}

fn check_audit(store: &Store, when: &str) {
    let violations = store.audit();
    assert!(violations.is_empty(), "audit {when}: {violations:?}");
}

fn check_content(store: &Store, model: &Model, when: &str) {
    check_audit(store, when);
    let dump = store.logical_dump().unwrap_or_else(|e| panic!("logical_dump {when}: {e}"));
    assert_eq!(dump, model.dump(NOW_MS), "content {when} differs from the model");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::flips::{byte_flips, flipped};
    use proptest::prelude::*;

    #[test]
    fn the_fixture_log_and_every_cut_of_it_pass() {
        let log = &fixture().log;
        for cut in 0..=log.len() {
            aof_recover(&log[..cut]);
        }
    }

    #[test]
    fn the_fixture_log_opens_over_its_segment() {
        // Otherwise every write check above would be vacuous.
        let store = open(&fixture_disk(&fixture().log)).unwrap();
        assert_eq!(store.cold_count() as u64, crate::fuzzing::fixture::SEALED_ROWS);
        assert_eq!(store.segment_count(), 1);
    }

    #[test]
    fn a_refused_log_passes_as_a_refusal() {
        aof_recover(b"this is not a log at all, but it is long enough to hold a frame");
        aof_recover(&[]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn flipped_bytes_in_the_fixture_log_never_break_a_property(
            flips in byte_flips(),
        ) {
            aof_recover(&flipped(fixture().log.clone(), &flips));
        }
    }
}
