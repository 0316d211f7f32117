//! Each crash gap of the eviction protocol, the rewrite, FLUSHALL and the
//! manifest's compaction, built on a real directory: the process "dies" right after a named phase
//! (every later file operation fails), the store is reopened on the plain
//! OS file system, and the logical content must equal the model with a
//! clean audit — and keep doing so through more writes and a second
//! reopen.

mod support;

use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::manifest::COMPACT_MIN_RECORDS;
use engine::store::{Command, Options, Store};
use engine::vfs::{OsVfs, Vfs};
use engine::Phase;
use support::{cmd, CrashAfter};
use testkit::model::Model;

const T0_MS: u64 = 1_700_000_000_000;

fn open(vfs: Arc<dyn Vfs>, clock: &Arc<ManualClock>, dir: &Path) -> Store {
    let (store, _report) = Store::open(vfs, clock.clone(), dir, Options::default()).expect("open");
    store
}

/// Run `command` on both; they must agree on the reply.
fn both(store: &mut Store, model: &mut Model, clock: &ManualClock, command: &Command) {
    let got = store.execute(command).expect("store accepts the command");
    let want = model.execute(command, clock.now()).expect("model accepts the command");
    assert_eq!(got, want, "{command:?}");
}

trait Now {
    fn now(&self) -> u64;
}
impl Now for ManualClock {
    fn now(&self) -> u64 {
        engine::clock::Clock::now_ms(self)
    }
}

fn assert_matches(store: &Store, model: &Model, clock: &ManualClock, when: &str) {
    let dump = store.logical_dump().expect("dump");
    assert_eq!(dump, model.dump(clock.now()), "logical content differs {when}");
    let violations = store.audit();
    assert!(violations.is_empty(), "audit {when}: {violations:?}");
}

/// A windowed table with rows in and out of window, a TTL row that must
/// not be evicted, a row with a field TTL, and a plain string.
fn populate(store: &mut Store, model: &mut Model, clock: &ManualClock) {
    both(store, model, clock, &cmd(&["WINDOW", "t", "ts", "10"]));
    for i in 0..30 {
        let key = format!("t:{i:02}");
        let ts = i.to_string();
        both(store, model, clock, &cmd(&["HSET", &key, "ts", &ts, "payload", &format!("row-{i}")]));
    }
    let far = (T0_MS + 3_600_000).to_string();
    both(store, model, clock, &cmd(&["PEXPIREAT", "t:03", &far]));
    both(store, model, clock, &cmd(&["HPEXPIREAT", "t:04", &far, "payload"]));
    both(store, model, clock, &cmd(&["SET", "plain", "string"]));
}

/// More writes after a recovery from a crash after `crashed_after`: to
/// cold rows, hot rows, deletes, another eviction and a rewrite; then a
/// second reopen. Every check names the crash, so the gap a failure
/// belongs to is in its message.
fn continue_and_reopen(dir: &Path, clock: &Arc<ManualClock>, mut model: Model, crashed_after: Phase) {
    let check = |store: &Store, model: &Model, when: &str| {
        assert_matches(store, model, clock, &format!("{when} (the crash was after {crashed_after})"));
    };
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut store = open(os.clone(), clock, dir);
    check(&store, &model, "after the first reopen");
    both(&mut store, &mut model, clock, &cmd(&["HSET", "t:01", "payload", "rewritten"]));
    both(&mut store, &mut model, clock, &cmd(&["DEL", "t:02", "t:05"]));
    both(&mut store, &mut model, clock, &cmd(&["HSET", "t:40", "ts", "40"]));
    store.evict().expect("evict");
    check(&store, &model, "after a second eviction");
    store.rewrite().expect("rewrite");
    check(&store, &model, "after a rewrite");
    both(&mut store, &mut model, clock, &cmd(&["HDEL", "t:06", "payload"]));
    drop(store);
    let store = open(os, clock, dir);
    check(&store, &model, "after the second reopen");
}

/// A populated store on the real disk whose process "dies" right after
/// the phase `target`: the setup every crash gap below shares.
struct Armed {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    crash: Arc<CrashAfter>,
    model: Model,
    store: Store,
    target: Phase,
}

impl Armed {
    fn new(target: Phase) -> Armed {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0_MS));
        let crash = Arc::new(CrashAfter::new(Arc::new(OsVfs), target));
        let mut model = Model::new();
        let mut store = open(crash.clone(), &clock, dir.path());
        populate(&mut store, &mut model, &clock);
        Armed { dir, clock, crash, model, store, target }
    }

    /// Run `command` on the store and the model; they must agree.
    fn both(&mut self, command: &[&str]) {
        both(&mut self.store, &mut self.model, &self.clock, &cmd(command));
    }

    /// The crash must have happened; then recover on the plain disk and
    /// go on (see [`continue_and_reopen`]).
    fn recover(self) {
        assert!(self.crash.crashed(), "the engine never reached {}", self.target);
        drop(self.store);
        continue_and_reopen(self.dir.path(), &self.clock, self.model, self.target);
    }
}

fn crash_during_evict(target: Phase) {
    let mut armed = Armed::new(target);
    let result = armed.store.evict();
    // Commit is in memory only: a crash after the frame cannot fail it.
    if !matches!(target, Phase::FrameLogged | Phase::CommitDone) {
        assert!(result.is_err(), "evict should fail once the process is gone after {target}");
    }
    armed.recover();
}

/// Evict cleanly, write to cold rows, then crash inside the rewrite.
fn crash_during_rewrite(target: Phase) {
    let mut armed = Armed::new(target);
    armed.store.evict().expect("evict");
    // Segment A keeps live stubs (the rewrite must keep naming it);
    // segment B ends fully stranded (the rewrite must retire it).
    armed.both(&["DEL", "t:00", "t:01"]);
    armed.both(&["HSET", "t:07", "payload", "promoted"]);
    armed.both(&["HSET", "t:50", "ts", "50"]);
    let second = armed.store.evict().expect("second evict");
    assert_eq!(second.segments_sealed, 1);
    armed.both(&["DEL", "t:07"]);
    for i in 19..40 {
        armed.both(&["DEL", &format!("t:{i:02}")]);
    }
    assert_eq!(armed.store.segment_count(), 2);
    let result = armed.store.rewrite();
    if target != Phase::RewriteRetired {
        assert!(result.is_err(), "rewrite should fail once the process is gone after {target}");
    }
    armed.recover();
}

fn crash_during_flushall(target: Phase) {
    let mut armed = Armed::new(target);
    armed.store.evict().expect("evict");
    let flush = cmd(&["FLUSHALL"]);
    // The flush is durable once logged; the crash lands in its rewrite.
    let _ = armed.store.execute(&flush);
    armed.model.execute(&flush, armed.clock.now()).unwrap();
    armed.recover();
}

/// Every gap of the eviction protocol, in its order: after the segment
/// is built, after its name is durable, after the manifest registers it,
/// after the frame naming it is logged, and after the commit.
#[test]
fn a_crash_in_every_gap_of_an_eviction_recovers() {
    let gaps = [Phase::SealBuilt, Phase::SealDirSynced, Phase::SealRegistered, Phase::FrameLogged, Phase::CommitDone];
    for target in gaps {
        crash_during_evict(target);
    }
}

/// Every gap of the rewrite: after its temp file is durable, after the
/// rename over the log, after that rename is durable, and after the
/// stranded segments are retired.
#[test]
fn a_crash_in_every_gap_of_a_rewrite_recovers() {
    for target in [Phase::RewriteSynced, Phase::RewriteRenamed, Phase::RewriteDirSynced, Phase::RewriteRetired] {
        crash_during_rewrite(target);
    }
}

/// FLUSHALL's gaps: after it is logged, after its rewrite's rename, and
/// after the segments it empties are retired.
#[test]
fn a_crash_in_every_gap_of_a_flushall_recovers() {
    for target in [Phase::FlushallLogged, Phase::RewriteRenamed, Phase::RewriteRetired] {
        crash_during_flushall(target);
    }
}

/// The seqs of the segment files in `dir`.
fn segment_seqs(dir: &Path) -> Vec<u64> {
    let mut seqs: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".seg")?.rsplit_once('-')?.1.parse().ok())
        .collect();
    seqs.sort_unstable();
    seqs
}

/// Rounds of churn until the crash: each round writes three rows of table
/// `c`, evicts (sealing the previous round's rows: one ADD), deletes those
/// rows and rewrites (retiring their segment: one DROP). The manifest is
/// due for compaction after about `COMPACT_MIN_RECORDS / 2` rounds, and compacts inside that
/// rewrite. Returns the highest segment seq the directory held.
fn churn_until_crash(armed: &mut Armed) -> u64 {
    armed.both(&["WINDOW", "c", "ts", "10"]);
    let mut highest_seq = 0;
    for round in 0..100u64 {
        for i in 0..3 {
            let ts = (100 * (round + 1) + i).to_string();
            armed.both(&["HSET", &format!("c:{round}:{i}"), "ts", &ts, "payload", "x"]);
        }
        let evicted = armed.store.evict().expect("evict");
        highest_seq = highest_seq.max(segment_seqs(armed.dir.path()).last().copied().unwrap_or(0));
        if round > 0 {
            assert_eq!(evicted.rows_evicted, 3, "round {round}: the previous round's rows go cold");
            for i in 0..3 {
                armed.both(&["DEL", &format!("c:{}:{i}", round - 1)]);
            }
        }
        let result = armed.store.rewrite();
        if armed.crash.crashed() {
            // The last mark of compaction is its last step: the rewrite
            // succeeded before the process went.
            assert_eq!(result.is_ok(), armed.target == Phase::ManifestCompactDirSynced, "{result:?}");
            return highest_seq;
        }
        result.expect("rewrite");
    }
    panic!("the manifest never compacted in 100 rounds of churn");
}

/// Crash inside the manifest's compaction (a process crash: what was
/// written stays), recover, and check that no seq is handed out again and
/// the temp file is swept.
fn crash_during_compaction(target: Phase) {
    let mut armed = Armed::new(target);
    let highest_seq = churn_until_crash(&mut armed);
    assert!(highest_seq >= COMPACT_MIN_RECORDS / 2, "a compaction needs a retired segment per two records");
    let temp_left = armed.dir.path().join(engine::manifest::MANIFEST_TEMP_FILE).exists();
    assert_eq!(temp_left, target == Phase::ManifestCompactSynced, "the temp file exists only before the rename");
    let dir = armed.dir.path().to_path_buf();
    let clock = armed.clock.clone();
    let mut model = armed.model;
    drop(armed.store);

    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let (mut store, report) = Store::open(os.clone(), clock.clone(), &dir, Options::default()).expect("open");
    assert_eq!(report.stray_files_swept, u64::from(temp_left), "{report:?}");
    // Before the rename the old, long ledger is the manifest, and the open
    // compacts it; after, the compacted one is.
    assert_eq!(report.manifest_compacted, target == Phase::ManifestCompactSynced, "{report:?}");
    assert!(report.manifest_records_replayed < COMPACT_MIN_RECORDS || temp_left, "{report:?}");
    assert_matches(&store, &model, &clock, "after the compaction crash");
    both(&mut store, &mut model, &clock, &cmd(&["HSET", "c:500:0", "ts", "50000", "payload", "y"]));
    both(&mut store, &mut model, &clock, &cmd(&["HSET", "c:501:0", "ts", "50100", "payload", "y"]));
    store.evict().expect("evict after recovery");
    let fresh = segment_seqs(&dir).last().copied().unwrap();
    assert!(fresh > highest_seq, "seq {fresh} handed out again (the directory held up to {highest_seq})");
    assert_matches(&store, &model, &clock, "after an eviction");
    drop(store);
    continue_and_reopen(&dir, &clock, model, target);
}

#[test]
fn crash_after_the_compacted_manifest_is_durable_under_its_temp_name() {
    crash_during_compaction(Phase::ManifestCompactSynced);
}

#[test]
fn crash_after_the_compacted_manifest_is_renamed() {
    crash_during_compaction(Phase::ManifestCompactRenamed);
}

#[test]
fn crash_after_the_compacted_manifest_rename_is_durable() {
    crash_during_compaction(Phase::ManifestCompactDirSynced);
}

#[test]
fn a_deleted_cold_row_never_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0_MS));
    let os: Arc<dyn Vfs> = Arc::new(OsVfs);
    let mut model = Model::new();
    let mut store = open(os.clone(), &clock, dir.path());
    populate(&mut store, &mut model, &clock);
    let report = store.evict().unwrap();
    assert!(report.rows_evicted > 10, "{report:?}");
    assert_eq!(
        store.execute(&cmd(&["HGET", "t:00", "payload"])).unwrap(),
        engine::store::Reply::Bulk(b"row-0".to_vec())
    );
    both(&mut store, &mut model, &clock, &cmd(&["DEL", "t:00"]));
    both(&mut store, &mut model, &clock, &cmd(&["HSET", "t:01", "payload", "new"]));
    for round in 0..3 {
        store.rewrite().unwrap();
        drop(store);
        store = open(os.clone(), &clock, dir.path());
        assert_matches(&store, &model, &clock, &format!("after rewrite+reopen round {round}"));
        assert_eq!(store.execute(&cmd(&["HGETALL", "t:00"])).unwrap(), engine::store::Reply::Pairs(vec![]));
        assert_eq!(
            store.execute(&cmd(&["HGET", "t:01", "payload"])).unwrap(),
            engine::store::Reply::Bulk(b"new".to_vec())
        );
    }
}
