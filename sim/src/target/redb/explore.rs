//! What `sim explore --target redb` needs from this target: the recording
//! run, the recovery of one crash image, and the verdict on it in one
//! context (the one explorer, `crate::explore`, does the rest).
//!
//! The recording is the random mode's runner on a fault-free disk in
//! `strict` mode, with no planned crash points, noting the model at every
//! operation — with what the operation may publish marked pending, as the
//! random mode marks it — so every crash index is judged by exactly the
//! rule the random mode applies (`Model::allows`). It begins once the
//! database exists: creating the file and its tables is the application's
//! setup, done before the first explored I/O.
//!
//! A recovery opens redb on the image (a fresh disk, fault-free), reads
//! both tables, and probes: one more durable commit, a clean close, a
//! power loss and a reopen must give back what was recovered plus that
//! write — the next step the random mode would take, where a recovery
//! that left the allocator or the header inconsistent shows.
//!
//! For `--depth 2` the same recovery runs on a recording disk
//! (`record_recovery`): a second crash inside redb's open is judged in the
//! image's own contexts (by the explorer); from the open's return on, by
//! the model of the recovered database — that state durable, then the
//! probe's commit in flight, then everything durable for the close and
//! the reopen after the power loss.

use std::sync::Arc;

use redb::Database;

use super::backend::Plant;
use super::config::RedbConfig;
use super::model::{diff, Model, Pending, State};
use super::run::{create_tables, open_db, read_committed, Runner};
use super::workload::PlannedRedbOp;
use crate::disk::{CrashMode, DiskConfig, DiskImage, SimVfs};
use crate::failure::{catch_panic, Check, Failure};
use crate::target::{RecordedContext, Recording, RecoveryRecording};
use crate::trace::Trace;

/// The probe's key in `t1`. No workload draws it: theirs are `k<n>`.
const PROBE_KEY: &[u8] = b"explore-probe";

/// What one crash image gave back: the content, and the probe's verdict;
/// or the check that failed before there was content (`open`, `panic`).
pub type RedbRecovered = Result<(State, Result<(), String>), (Check, String)>;

/// `config` on a fault-free disk whose power losses keep exactly what was
/// synced, with no power loss of its own inside a recovery (every crash
/// index is explored instead): the recording's disk.
fn recording_config(config: &RedbConfig) -> RedbConfig {
    RedbConfig {
        disk: DiskConfig::fault_free(CrashMode::Strict, config.disk.sector_bytes),
        p_crash_in_recovery: 0.0,
        ..config.clone()
    }
}

/// Run `workload` once on a recording disk (see the module doc).
pub(super) fn record(config: &RedbConfig, plant: Option<Plant>, workload: &[PlannedRedbOp]) -> Recording<Model> {
    let config = recording_config(config);
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::new(false)));
    let mut runner = Runner::new(&config, plant, String::new(), vfs.clone());
    let result = catch_panic(|| -> Result<(), Failure> {
        runner.start()?;
        vfs.start_recording();
        runner.contexts = Some(vec![RecordedContext {
            first_io_index: vfs.io_count(),
            what: "the database as created".to_string(),
            context: runner.model.clone(),
        }]);
        runner.drive(workload)
    });
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some((failure.check, failure.detail)),
        Err(message) => Some((Check::Panic, message)),
    };
    let contexts = runner.contexts.take().unwrap_or_default();
    let recording_started = !contexts.is_empty();
    drop(runner);
    let disk = if recording_started {
        vfs.take_recording()
    } else {
        // The setup itself failed: an empty recording, and the failure.
        vfs.start_recording();
        vfs.take_recording()
    };
    Recording { disk, contexts, failure }
}

/// Open redb on `image` and take its content and the probe's verdict.
pub(super) fn recover(config: &RedbConfig, plant: Option<Plant>, image: &DiskImage) -> RedbRecovered {
    let config = recording_config(config);
    let vfs = SimVfs::from_image(config.disk.clone(), image, Trace::new(false));
    recover_on(&vfs, &config, plant, &mut |_, _, _| {})
}

/// [`recover`] on a disk that keeps a snapshot before every I/O, for
/// `sim explore --depth 2`: crash indices inside the open are judged in
/// the image's own contexts; from the moment it returned, by the model of
/// the recovered database as each probe step begins.
pub(super) fn record_recovery(
    config: &RedbConfig,
    plant: Option<Plant>,
    image: &DiskImage,
) -> RecoveryRecording<Model> {
    let config = recording_config(config);
    let vfs = SimVfs::from_image(config.disk.clone(), image, Trace::new(false));
    vfs.start_recording();
    let mut contexts = Vec::new();
    let mut note = |first_io_index: u64, what: &str, model: &Model| {
        let what = format!("probe: {what}");
        contexts.push(RecordedContext { first_io_index, what, context: model.clone() });
    };
    // The verdict is the plain recovery's: only the snapshots are wanted.
    let _ = recover_on(&vfs, &config, plant, &mut note);
    let disk = vfs.take_recording();
    let recovered_at_io = contexts.first().map_or(disk.io_indices().end, |first| first.first_io_index);
    RecoveryRecording { disk, recovered_at_io, contexts }
}

/// How a recovery tells of each context from the moment the open
/// returned: the first crash index it applies to, what is under way, the
/// model.
type Note<'a> = &'a mut dyn FnMut(u64, &str, &Model);

/// The recovery of [`recover`] on `vfs` (a disk holding a crash image),
/// telling `note` of each context from the moment the open returned.
fn recover_on(vfs: &SimVfs, config: &RedbConfig, plant: Option<Plant>, note: Note<'_>) -> RedbRecovered {
    let attempt = catch_panic(|| {
        let db = open_db(vfs, config, plant)
            .map_err(|e| (Check::Open, format!("redb refused to open after a crash: {e}")))?;
        let opened_at_io = vfs.io_count();
        let state = read_committed(&db)
            .map_err(|e| (Check::Open, format!("redb opened but reading its content failed: {e}")))?;
        // Reading changes nothing on the disk: the recovered model holds
        // from the open's return on.
        note(opened_at_io, "the recovered database", &Model::recovered_at(state.clone()));
        let probe = probe(db, &state, vfs, config, plant, note);
        Ok((state, probe))
    });
    attempt.unwrap_or_else(|message| Err((Check::Panic, message)))
}

/// The probe (see the module doc) on a just recovered `db` holding `state`;
/// `note` hears the model each step is judged by, as it begins.
fn probe(
    db: Database,
    state: &State,
    vfs: &SimVfs,
    config: &RedbConfig,
    plant: Option<Plant>,
    note: Note<'_>,
) -> Result<(), String> {
    let mut model = Model::recovered_at(state.clone());
    // The tables' creation publishes nothing new; the write's commit may.
    model.begin();
    model.put(1, PROBE_KEY.to_vec(), b"1");
    model.set_pending(Pending::Commit(model.commit_target()));
    note(vfs.io_count(), "a durable commit of one write", &model);
    let write = || -> Result<(), redb::Error> {
        // The tables exist unless the state is the file's first commit;
        // opening them in a write transaction creates them either way.
        create_tables(&db)?;
        let txn = db.begin_write()?;
        txn.open_table(redb::TableDefinition::<&[u8], &[u8]>::new("t1"))?.insert(PROBE_KEY, b"1".as_slice())?;
        txn.commit()?;
        Ok(())
    };
    write().map_err(|e| format!("the recovered database refused a durable commit: {e}"))?;
    model.commit(true);
    model.set_pending(Pending::PublishAll);
    note(vfs.io_count(), "a clean close", &model);
    db.close().map_err(|e| format!("the recovered database failed to close: {e}"))?;
    model.all_durable();
    note(vfs.io_count(), "a power loss and a reopen", &model);
    vfs.power_loss(0);
    let again = open_db(vfs, config, plant)
        .map_err(|e| format!("after one durable commit, a clean close and power loss: open refused: {e}"))?;
    let got = read_committed(&again).map_err(|e| format!("reading the reopened database failed: {e}"))?;
    let mut expected = state.clone();
    expected.tables[1].insert(PROBE_KEY.to_vec(), Arc::from(&b"1"[..]));
    if got != expected {
        return Err(format!(
            "after one durable commit, a clean close and power loss, redb does not hold the recovered content plus \
             that write:\n{}",
            diff(&expected, &got)
        ));
    }
    Ok(())
}

/// The verdict on `recovered` in `context`: the random mode's rule, then
/// the probe.
pub(super) fn judge(recovered: &RedbRecovered, context: &Model) -> Result<(), (Check, String)> {
    let (state, probe) = recovered.as_ref().map_err(|(check, detail)| (*check, detail.clone()))?;
    context.allows(state, false).map_err(|detail| (Check::Durability, detail))?;
    probe.clone().map_err(|detail| (Check::Probe, detail))
}
