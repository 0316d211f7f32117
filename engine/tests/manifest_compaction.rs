//! The manifest's compaction as a store sees it: a long-lived store's open
//! replays about its live set, not its history; a point-in-time or
//! read-only store never compacts; a compaction's leftover temp file is
//! swept by a writer's open, left by the others, and reported by the
//! audit.

mod support;

use std::path::Path;
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::manifest::{Manifest, COMPACT_MIN_RECORDS, MANIFEST_FILE, MANIFEST_TEMP_FILE};
use engine::store::{Options, RecoveryReport, Store};
use engine::vfs::{read_whole, MemVfs, OpenMode, Vfs};
use support::cmd;
use testkit::model::Model;

const T0_MS: u64 = 1_700_000_000_000;

fn dir() -> &'static Path {
    Path::new("/db")
}

/// A store, its disk and clock, and the model of what it must hold.
struct Churn {
    vfs: Arc<MemVfs>,
    clock: Arc<ManualClock>,
    store: Option<Store>,
    model: Model,
    /// Rounds run so far.
    round: u64,
}

impl Churn {
    fn new(options: Options) -> Churn {
        let vfs = Arc::new(MemVfs::new());
        let clock = Arc::new(ManualClock::new(T0_MS));
        let mut churn = Churn { vfs, clock, store: None, model: Model::new(), round: 0 };
        churn.reopen(options);
        churn.both(&["WINDOW", "c", "ts", "10"]);
        churn
    }

    fn store(&mut self) -> &mut Store {
        self.store.as_mut().expect("open")
    }

    fn both(&mut self, words: &[&str]) {
        let command = cmd(words);
        let now_ms = self.clock.now_ms();
        let got = self.store().execute(&command).expect("store accepts the command");
        let want = self.model.execute(&command, now_ms).expect("model accepts the command");
        assert_eq!(got, want, "{command:?}");
    }

    /// Close (if open) and reopen, checking the content.
    fn reopen(&mut self, options: Options) -> RecoveryReport {
        if let Some(store) = self.store.take() {
            store.close().expect("close");
        }
        let vfs: Arc<dyn Vfs> = self.vfs.clone();
        let (store, report) = Store::open(vfs, self.clock.clone(), dir(), options).expect("open");
        self.store = Some(store);
        self.check();
        report
    }

    fn check(&mut self) {
        let now_ms = self.clock.now_ms();
        let store = self.store.as_ref().expect("open");
        assert_eq!(store.logical_dump().expect("dump"), self.model.dump(now_ms));
        let violations = store.audit();
        assert!(violations.is_empty(), "{violations:?}");
    }

    /// One round: three rows; an eviction that seals the previous round's
    /// rows (one ADD); their deletion and a rewrite that retires their
    /// segment (one DROP).
    fn round(&mut self) {
        let round = self.round;
        for i in 0..3 {
            let ts = (100 * (round + 1) + i).to_string();
            self.both(&["HSET", &format!("c:{round}:{i}"), "ts", &ts, "payload", "x"]);
        }
        self.store().evict().expect("evict");
        if round > 0 {
            for i in 0..3 {
                self.both(&["DEL", &format!("c:{}:{i}", round - 1)]);
            }
        }
        self.store().rewrite().expect("rewrite");
        self.round += 1;
    }

    fn manifest(&self) -> engine::manifest::ManifestState {
        let path = dir().join(MANIFEST_FILE);
        Manifest::parse(&path, &read_whole(self.vfs.as_ref(), &path).unwrap()).unwrap()
    }
}

#[test]
fn opening_a_long_lived_store_replays_about_its_live_set_not_its_history() {
    let mut churn = Churn::new(Options::default());
    let mut largest_replay = 0;
    for _ in 0..10 {
        for _ in 0..50 {
            churn.round();
        }
        let report = churn.reopen(Options::default());
        largest_replay = largest_replay.max(report.manifest_records_replayed);
    }
    // 500 rounds registered and retired about 500 segments: a thousand
    // records written, and every open replayed a handful.
    let state = churn.manifest();
    assert!(state.next_seq > 499, "{} segments sealed", state.next_seq - 1);
    assert!(state.compacted);
    assert!(largest_replay < COMPACT_MIN_RECORDS, "an open replayed {largest_replay} records");
    assert!(state.records < COMPACT_MIN_RECORDS, "{state:?}");
}

#[test]
fn a_store_opened_point_in_time_never_compacts() {
    let mut churn = Churn::new(Options::default());
    for _ in 0..20 {
        churn.round();
    }
    assert!(churn.manifest().compacted, "the default store compacted");
    let records_before = churn.manifest().records;

    let point_in_time = Options { point_in_time: true, ..Options::default() };
    churn.reopen(point_in_time);
    for _ in 0..40 {
        churn.round();
    }
    let state = churn.manifest();
    assert_eq!(state.records, records_before + 80, "a point-in-time store appended and never compacted");
    let report = churn.reopen(point_in_time);
    assert!(!report.manifest_compacted && report.sweep_skipped, "{report:?}");
    // The next writer's open compacts what is due.
    let report = churn.reopen(Options::default());
    assert!(report.manifest_compacted, "{report:?}");
    assert!(churn.manifest().records < COMPACT_MIN_RECORDS);
}

#[test]
fn a_leftover_temp_file_is_swept_by_a_writer_left_by_a_reader_and_reported_by_the_audit() {
    let mut churn = Churn::new(Options::default());
    for _ in 0..3 {
        churn.round();
    }
    let temp = dir().join(MANIFEST_TEMP_FILE);
    // What a compaction a crash interrupted may leave: any bytes at all.
    let mut file = churn.vfs.open(&temp, OpenMode::Create).unwrap();
    file.write_at(0, b"half a ledger").unwrap();
    drop(file);
    let manifest_before = read_whole(churn.vfs.as_ref(), &dir().join(MANIFEST_FILE)).unwrap();
    churn.store.take().unwrap().close().unwrap();

    let vfs: Arc<dyn Vfs> = churn.vfs.clone();
    let (reader, report) = Store::open_read_only(vfs.clone(), churn.clock.clone(), dir()).unwrap();
    assert_eq!(report.stray_files_swept, 0);
    assert!(!report.manifest_compacted);
    let violations = reader.audit();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].0.contains("leftover manifest compaction temp file"), "{violations:?}");
    drop(reader);
    assert!(churn.vfs.exists(&temp).unwrap(), "a reader removes nothing");
    assert_eq!(
        read_whole(vfs.as_ref(), &dir().join(MANIFEST_FILE)).unwrap(),
        manifest_before,
        "the temp is never read"
    );

    let report = churn.reopen(Options::default());
    assert_eq!(report.stray_files_swept, 1, "{report:?}");
    assert!(!churn.vfs.exists(&temp).unwrap());
}
