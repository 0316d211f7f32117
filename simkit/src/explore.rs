//! What `sim explore` needs from a kit target: the recording run, the
//! recovery of one crash image, the verdict on it in one context, the same
//! recovery recorded (`--depth 2`) or with one I/O failing (`--faults`).
//! The one explorer (`simulator::explore`) does the rest.
//!
//! The recording is the random mode's runner on a fault-free disk in
//! `strict` mode, with no planned crash points, noting the model at every
//! operation — with what the operation may publish marked pending, as the
//! random mode marks it — so every crash index is judged by exactly the
//! rule the random mode applies (`Model::allows`). It begins once the
//! database exists: the directory and the adapter's `create` are the
//! application's setup, done before the first explored I/O.
//!
//! A recovery opens the engine on the image (a fresh disk, fault-free),
//! reads every table, and probes: one more commit at the first durable
//! level, a clean close, a power loss and a reopen must give back what the
//! model of the recovered database allows — the next step the random mode
//! would take, where a recovery that left the engine inconsistent shows.
//!
//! With `--faults`, one I/O of all that fails. The engine must treat the
//! error as what it is: a failed open is retried, and an operation that
//! failed is followed by a reopen whose content the model of that moment
//! must allow (the failed step in doubt). A transient error may fail an
//! open, never change what it recovers ([`same_recovery`]).

use std::sync::Arc;

use super::config::KitConfig;
use super::model::{diff, Model, Pending, State};
use super::run::{env, read_all, runner};
use super::spec::Level;
use super::workload::PlannedKitOp;
use super::{Adapter, KeyKind, KitError, Promise};
use simulator::disk::{ArmedFault, CrashMode, DiskConfig, DiskImage, SimVfs};
use simulator::failure::{catch_failure, Check, Failure};
use simulator::seam::{FaultedRecovery, FaultedRun, RecordedContext, Recording, RecoveryRecording};
use simulator::trace::Trace;

/// What one crash image gave back: the content and the probe's verdict;
/// or the check that failed before there was content (`open`, `panic`).
pub type KitRecovered = Result<(State, Result<(), String>), Refusal>;

/// Why a recovery brought back no content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The check it fails where nothing allows it (`open`, `panic`).
    pub check: Check,
    /// What happened.
    pub detail: String,
    /// The engine refused the bytes as corrupt ([`ErrorKind::Corrupt`]):
    /// allowed where a commit promised nothing.
    ///
    /// [`ErrorKind::Corrupt`]: super::ErrorKind::Corrupt
    pub corrupt: bool,
}

impl Refusal {
    fn open(error: &KitError) -> Refusal {
        let detail = format!("the engine refused to open after a crash: {error}");
        Refusal { check: Check::Open, detail, corrupt: error.kind == super::ErrorKind::Corrupt }
    }
}

/// `config` on a fault-free disk whose power losses keep exactly what was
/// synced, with no power loss of its own inside a recovery (every crash
/// index is explored instead): the recording's disk.
pub(super) fn recording_config<C: Clone>(config: &KitConfig<C>) -> KitConfig<C> {
    KitConfig {
        disk: DiskConfig { fs: config.disk.fs, ..DiskConfig::fault_free(CrashMode::Strict, config.disk.sector_bytes) },
        p_crash_in_recovery: 0.0,
        ..config.clone()
    }
}

/// Run `workload` once on a recording disk (see the module doc).
pub(super) fn record<A: Adapter>(
    adapter: &A,
    config: &KitConfig<A::Config>,
    plant: Option<A::Plant>,
    workload: &[PlannedKitOp],
) -> Recording<Model> {
    let config = recording_config(config);
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::for_recording()));
    let mut runner = runner(adapter, &config, plant, String::new(), vfs.clone());
    let result = catch_failure(|| -> Result<(), Failure> {
        runner.start()?;
        vfs.start_recording();
        vfs.note_workload_faultable_ios();
        let first = RecordedContext {
            first_io_index: vfs.io_count(),
            what: "the database as created".to_string(),
            context: runner.w.model.clone(),
        };
        runner.w.contexts = Some(vec![first]);
        runner.drive(workload)
    });
    let failure = run_failure(result);
    let contexts = runner.w.contexts.take().unwrap_or_default();
    let operations = std::mem::take(&mut runner.w.operations);
    let started = !contexts.is_empty();
    drop(runner);
    if !started {
        // The setup itself failed: an empty recording, and the failure.
        vfs.start_recording();
    }
    let (faultable_ios, faultable_writes) = (vfs.faultable_ios(), vfs.faultable_writes());
    let trace = Some(vfs.take_trace()).filter(Trace::keeps_all);
    Recording { disk: vfs.take_recording(), contexts, failure, faultable_ios, faultable_writes, trace, operations }
}

/// How a run under `catch_failure` failed, if it did: its check and why
/// (a panic is check `panic`, an environment's refusal `refused`).
fn run_failure(result: Result<Result<(), Failure>, (Check, String)>) -> Option<(Check, String)> {
    match result {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some((failure.check, failure.detail)),
        Err(caught) => Some(caught),
    }
}

/// [`record`]'s run without its snapshots, with the I/O at `fault.0`
/// failing as `fault.1` says (`sim explore --faults`): the runner handles
/// it as the random mode's faults, every check of the run applying.
pub(super) fn run_with_fault<A: Adapter>(
    adapter: &A,
    config: &KitConfig<A::Config>,
    plant: Option<A::Plant>,
    workload: &[PlannedKitOp],
    fault: (u64, ArmedFault),
) -> FaultedRun {
    let config = recording_config(config);
    let vfs = Arc::new(SimVfs::new(config.disk.clone(), Trace::new(false)));
    let mut runner = runner(adapter, &config, plant, String::new(), vfs.clone());
    vfs.arm_workload_fault_at(fault.0, fault.1);
    let result = catch_failure(|| -> Result<(), Failure> {
        runner.start()?;
        runner.drive(workload)
    });
    let failure = run_failure(result);
    drop(runner);
    FaultedRun { failure, fired: vfs.armed_fault() == Some(true) }
}

/// How a recovery tells of each context from the moment the open
/// returned: the first crash index it applies to, what is under way, the
/// model.
pub(super) type Note<'a> = &'a mut dyn FnMut(u64, &str, &Model);

/// One recovery of an image on `vfs`.
pub(super) struct Recovery<'a, A: Adapter> {
    pub adapter: &'a A,
    pub config: &'a KitConfig<A::Config>,
    pub plant: Option<A::Plant>,
    pub vfs: Arc<SimVfs>,
}

impl<'a, A: Adapter> Recovery<'a, A> {
    /// A fresh disk holding `image`.
    pub fn new(adapter: &'a A, config: &'a KitConfig<A::Config>, plant: Option<A::Plant>, image: &DiskImage) -> Self {
        let vfs = Arc::new(SimVfs::from_image(config.disk.clone(), image, Trace::new(false)));
        Recovery { adapter, config, plant, vfs }
    }

    fn open(&self) -> Result<A::Db, KitError> {
        self.adapter.open(&env::<A>(&self.vfs, self.config, self.plant, None))
    }

    /// The model of a database just recovered holding `state`. Where every
    /// level of the seed promises nothing, so does everything the engine
    /// writes from then on, its own recovery's writes included (as in the
    /// random mode, `run.rs`).
    fn recovered_model(&self, state: State) -> Model {
        let mut model = Model::recovered_at(state);
        if self.config.spec.promises_nothing() {
            model.unpromise();
        }
        model
    }

    /// Whether the one armed fault (`--faults`) has fired.
    fn fault_fired(&self) -> bool {
        self.vfs.armed_fault() == Some(true)
    }

    /// Open and read, retrying once after a fault that fired (see the
    /// module doc).
    fn open_and_read(&self) -> Result<(A::Db, State), Refusal> {
        let attempt = || -> Result<(A::Db, State), KitError> {
            let mut db = self.open()?;
            let state = read_all(self.adapter, self.config, &mut db)?;
            Ok((db, state))
        };
        match attempt() {
            Ok(opened) => Ok(opened),
            Err(_) if self.fault_fired() => {
                // On a file system the fault shut down, this restart is a
                // remount that loses the recovery's unsynced writes: the
                // image's own content is still there, and the recovery is
                // judged in the image's contexts either way.
                let _remount = self.vfs.process_restart();
                attempt().map_err(|e| Refusal::open(&e))
            }
            Err(e) => Err(Refusal::open(&e)),
        }
    }

    /// The recovery and its probe (see the module doc), telling `note` of
    /// each context from the moment the open returned.
    pub fn run(&self, note: Note<'_>) -> KitRecovered {
        let attempt = catch_failure(|| {
            let (db, state) = self.open_and_read()?;
            // Reading changes nothing on the disk: the recovered model
            // holds from the open's return on.
            note(self.vfs.io_count(), "the recovered database", &self.recovered_model(state.clone()));
            let probe = self.probe(db, &state, note);
            Ok((state, probe))
        });
        attempt.unwrap_or_else(|(check, detail)| Err(Refusal { check, detail, corrupt: false }))
    }

    /// After `step` failed: if the armed fault fired, reopen (a process
    /// restart) and hold the content to `model`; otherwise the failure.
    fn after_error(&self, step: &str, error: KitError, model: &Model) -> Result<(), String> {
        if !self.fault_fired() {
            return Err(format!("the recovered database failed {step} with no fault injected: {error}"));
        }
        // A remount (the fault shut the file system down) keeps what was
        // durable: `model.allows` spans durable to in flight either way.
        let _remount = self.vfs.process_restart();
        let (_, got) = self.open_and_read().map_err(|r| format!("after a fault in {step}: {}", r.detail))?;
        model.allows(&got, false).map(|_| ()).map_err(|detail| format!("after a fault in {step}: {detail}"))
    }

    /// The probe on a just recovered `db` holding `state`.
    fn probe(&self, mut db: A::Db, state: &State, note: Note<'_>) -> Result<(), String> {
        let adapter = self.adapter;
        let (level, promise) = probe_level(&self.config.spec.levels);
        let key = probe_key(self.config.spec.tables[0].keys);
        let mut model = self.recovered_model(state.clone());
        model.put(0, &key, b"1");
        if promise != Promise::Volatile {
            model.set_pending(Pending::Commit(model.commit_target()));
        }
        note(self.vfs.io_count(), "a commit of one write", &model);
        let write = adapter.put(&mut db, 0, &key, b"1").and_then(|_| adapter.commit(&mut db, level));
        if let Err(e) = write {
            drop(db);
            return self.after_error("a commit", e, &model);
        }
        model.commit(promise);
        model.set_pending(Pending::PublishAll);
        note(self.vfs.io_count(), "a clean close", &model);
        if let Err(e) = adapter.close(db) {
            return self.after_error("a clean close", e, &model);
        }
        if self.config.spec.close_makes_durable {
            model.all_durable();
        }
        note(self.vfs.io_count(), "a power loss and a reopen", &model);
        self.vfs.power_loss(0);
        let (_, got) = self.open_and_read().map_err(|r| format!("after the probe's power loss: {}", r.detail))?;
        model.allows(&got, false).map(|_| ()).map_err(|detail| {
            format!(
                "after one commit, a clean close and a power loss, the engine holds what its promises do not \
                 allow:\n{detail}"
            )
        })
    }
}

/// The level the probe commits at, and what it promises as configured:
/// the first durable one, else the first.
fn probe_level(levels: &[Level]) -> (usize, Promise) {
    let level = levels.iter().position(|l| l.promise == Promise::Durable).unwrap_or(0);
    (level, levels[level].promise)
}

/// The probe's key in the first table. No workload draws it: theirs are
/// `k<n>`, and `u64` keys below 2^56.
fn probe_key(kind: KeyKind) -> Vec<u8> {
    match kind {
        KeyKind::Bytes => b"explore-probe".to_vec(),
        KeyKind::U64 => u64::MAX.to_be_bytes().to_vec(),
    }
}

/// [`Recovery::run`] on a disk that keeps a snapshot before every I/O.
pub(super) fn record_recovery<A: Adapter>(recovery: Recovery<'_, A>) -> RecoveryRecording<Model> {
    recovery.vfs.start_recording();
    let mut contexts = Vec::new();
    let mut note = |first_io_index: u64, what: &str, model: &Model| {
        let what = format!("probe: {what}");
        contexts.push(RecordedContext { first_io_index, what, context: model.clone() });
    };
    // The verdict is the plain recovery's: only the snapshots are wanted.
    let _ = recovery.run(&mut note);
    let disk = recovery.vfs.take_recording();
    let recovered_at_io = contexts.first().map_or(disk.io_indices().end, |first| first.first_io_index);
    RecoveryRecording { disk, recovered_at_io, contexts }
}

/// [`Recovery::run`] with the I/O at `fault.0` failing as `fault.1` says
/// (`None`: noting where a fault could fire).
pub(super) fn recover_with_fault<A: Adapter>(
    recovery: Recovery<'_, A>,
    fault: Option<(u64, ArmedFault)>,
) -> FaultedRecovery<KitRecovered> {
    match fault {
        Some((io_index, kind)) => recovery.vfs.arm_fault_at(io_index, kind),
        None => recovery.vfs.note_faultable_ios(),
    }
    let recovered = recovery.run(&mut |_, _, _| {});
    let fired = recovery.fault_fired();
    let (faultable_ios, faultable_writes) = (recovery.vfs.faultable_ios(), recovery.vfs.faultable_writes());
    FaultedRecovery { recovered, fired, faultable_ios, faultable_writes }
}

/// The verdict on `recovered` in `context`: the random mode's rule, then
/// the probe.
/// A refusal as corrupt passes where a commit promised nothing, as in the
/// random mode.
pub(super) fn judge(recovered: &KitRecovered, context: &Model) -> Result<(), (Check, String)> {
    let (state, probe) = match recovered {
        Ok(opened) => opened,
        Err(refusal) if refusal.corrupt && context.unpromised() => return Ok(()),
        Err(refusal) => return Err((refusal.check, refusal.detail.clone())),
    };
    context.allows(state, false).map_err(|detail| (Check::Durability, detail))?;
    probe.clone().map_err(|detail| (Check::Probe, detail))
}

/// A transient error in a recovery may fail it, never change what it
/// brought back where both opened.
pub(super) fn same_recovery(faulted: &KitRecovered, plain: &KitRecovered) -> Result<(), (Check, String)> {
    let (Ok((faulted, _)), Ok((plain, _))) = (faulted, plain) else { return Ok(()) };
    if faulted == plain {
        return Ok(());
    }
    Err((
        Check::Durability,
        format!(
            "a transient I/O error in the recovery changed what it brought back (against the same image \
             recovered with no fault):\n{}",
            diff(plain, faulted)
        ),
    ))
}
