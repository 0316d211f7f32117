//! Where the writer's operation can be suspended (`--interleave`): a
//! [`Vfs`] in front of the simulated disk that, before each I/O that
//! changes the disk (a write, a truncate, an fsync, an unlink, a rename, a
//! directory sync, a create), and where the engine says it waits for
//! another connection ([`BUSY_WAIT`]), asks its [`PausePoint`] whether a
//! reader's step is due there, and runs it before the I/O goes on. An
//! engine whose I/Os run under a lock its readers take announces its pause
//! points instead (`Vfs::pause_point`, where it holds none;
//! `ReadersBeside::pauses_where_announced`: redb, before each fsync), and
//! its I/Os then are not pause points.
//!
//! Why here and not in the disk: the engine calls back into the disk from
//! inside its operation, so this is the one place every engine's
//! operation can be cut between two of its I/Os — a commit between its
//! WAL frames and its commit frame, a checkpoint between its copy and its
//! truncate, a rollback journal's commit between the journal's write and
//! its unlink — without threads (one seed runs on one thread, as ever) and
//! without touching the disk, whose traces every target shares. With
//! `--interleave` off the kit never puts it in front of the disk, and
//! nothing of a run changes.
//!
//! The step runs on the writer's thread, inside the writer's call, with
//! faults off (an injected fault would end the writer's operation too,
//! and the reader's step is judged on what it read); its own I/Os never
//! pause again. What it did is kept for the run loop to judge once the
//! writer's call returns (`interleave.rs`).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use vfs::{LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile};

use super::adapter::{KitError, OtherWrite, ReadersBeside, Rows, WriteOutcome};
use super::second_writer::ClientAction;
use simulator::disk::SimVfs;

/// The phase an engine marks (`Vfs::mark`) where it waits for another
/// connection — SQLite's busy handler sleeping: with `--interleave` a
/// pause point like an I/O that changes the disk (a reader's step may run
/// there, and may be what the writer waits for), and never passed on to
/// the disk, so a run's trace does not depend on it.
pub const BUSY_WAIT: &str = "busy-wait";

/// A reader's step armed for the writer's next operation: at its
/// `at_pause`-th pause point (1-based), reader `reader` reads `table`
/// whole, having begun afresh first if `fresh` or if it has no
/// transaction open — or, with `try_write`, ends its transaction and tries
/// to write (`ReadersBeside::try_write`), or, with `action` (a seed with
/// a second writer, `second_writer.rs`), to run a write transaction
/// (`ReadersBeside::write_commit`), a checkpoint or close its connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PausedStep {
    pub at_pause: u32,
    pub reader: usize,
    pub table: usize,
    pub fresh: bool,
    pub try_write: bool,
    pub action: Option<ClientAction>,
    /// The second writer's own client (its write and its checkpoint run
    /// there; a close closes `reader`'s connection).
    pub other: usize,
}

/// A second writer's transaction inside the writer's operation: what it
/// came to, whether the writer was in a write transaction then (by the
/// engine's account), and the strongest lock held right after a refusal.
pub(crate) type Wrote = (Result<WriteOutcome, KitError>, Option<bool>, Option<&'static str>);

/// What a paused step did, for the run loop to judge.
#[derive(Debug)]
pub(crate) struct StepDone {
    pub step: PausedStep,
    /// The disk's I/O index when the writer was suspended.
    pub io_index: u64,
    /// It ended the reader's open transaction first.
    pub ended: bool,
    /// It began one (`Ok`, or the refusal), with the writer's lock as the
    /// adapter reported it right after.
    pub begun: Option<(Result<(), KitError>, Option<&'static str>)>,
    /// What the scan read, if the reader was open by then.
    pub scanned: Option<Result<Rows, KitError>>,
    /// A write attempt's answer (granted or not), with whether the writer
    /// was in a write transaction then, by the engine's account.
    pub tried: Option<(Result<bool, KitError>, Option<bool>)>,
    /// A second writer's transaction ([`Wrote`]).
    pub wrote: Option<Wrote>,
    /// A checkpoint's or a close's answer.
    pub acted: Option<Result<(), KitError>>,
}

/// The plan for the writer's current operation and what it did.
#[derive(Default)]
struct Plan {
    beside: Option<Arc<dyn ReadersBeside>>,
    armed: Option<PausedStep>,
    /// The readers open, as the kit knows them, updated by the steps.
    open: BTreeSet<usize>,
    pauses_seen: u32,
    running: bool,
    done: Vec<StepDone>,
}

/// The pause points of one run (see the module doc).
pub(crate) struct PausePoint {
    disk: Arc<SimVfs>,
    plan: Mutex<Plan>,
}

impl PausePoint {
    pub(crate) fn new(disk: Arc<SimVfs>) -> Arc<PausePoint> {
        Arc::new(PausePoint { disk, plan: Mutex::default() })
    }

    fn plan(&self) -> MutexGuard<'_, Plan> {
        self.plan.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Arm `step` for the writer's next call, the readers `open` now.
    pub(crate) fn arm(&self, beside: Arc<dyn ReadersBeside>, step: PausedStep, open: BTreeSet<usize>) {
        let mut plan = self.plan();
        debug_assert!(plan.armed.is_none() && plan.done.is_empty(), "one operation's plan at a time");
        *plan = Plan { beside: Some(beside), armed: Some(step), open, ..Plan::default() };
    }

    /// The writer's call returned: what the paused steps did (none if the
    /// call never reached the armed pause point).
    pub(crate) fn disarm(&self) -> Vec<StepDone> {
        let mut plan = self.plan();
        debug_assert!(!plan.running, "a step runs only inside the writer's call");
        std::mem::take(&mut *plan).done
    }

    /// An I/O that changes the disk is about to run (or, `announced`, the
    /// engine announced a pause point): run the armed step first if this
    /// is its pause point.
    fn before_io(&self, announced: bool) {
        let (beside, step, was_open) = {
            let mut plan = self.plan();
            if plan.running || plan.armed.is_none() {
                return;
            }
            if plan.beside.as_ref().is_some_and(|beside| beside.pauses_where_announced()) != announced {
                return;
            }
            plan.pauses_seen += 1;
            if plan.armed.as_ref().map(|step| step.at_pause) != Some(plan.pauses_seen) {
                return;
            }
            let step = plan.armed.take().expect("armed, checked above");
            plan.running = true;
            let beside = plan.beside.clone().expect("armed with its readers");
            let was_open = plan.open.contains(&step.reader);
            (beside, step, was_open)
        };
        let reader = step.reader;
        let io_index = self.disk.io_count();
        self.disk.set_faults_enabled(false);
        let done = run_step(beside.as_ref(), step, was_open, io_index);
        self.disk.set_faults_enabled(true);
        let mut plan = self.plan();
        plan.running = false;
        match done.scanned.is_some() {
            true => plan.open.insert(reader),
            false => plan.open.remove(&reader),
        };
        plan.done.push(done);
    }
}

/// Carry out `step` on the readers (`was_open`: the reader had a
/// transaction open).
fn run_step(beside: &dyn ReadersBeside, step: PausedStep, was_open: bool, io_index: u64) -> StepDone {
    let (reader, table, fresh, tries) = (step.reader, step.table, step.fresh, step.try_write);
    let action = step.action.clone().filter(|_| tries);
    let mut done =
        StepDone { step, io_index, ended: false, begun: None, scanned: None, tried: None, wrote: None, acted: None };
    let mut open = was_open;
    match action {
        Some(ClientAction::Write(write)) => return write_commit(beside, done, &write),
        Some(action) => return act(beside, done, open, &action),
        None => {}
    }
    if tries && beside.try_write(reader).is_some() {
        return try_write(beside, done, open);
    }
    if open && fresh {
        done.ended = true;
        open = false;
        if let Err(e) = beside.end_read(reader) {
            done.begun = Some((Err(e), None));
            return done;
        }
    }
    if !open {
        let begun = beside.begin_read(reader);
        let refused = begun.is_err();
        done.begun = Some((begun, beside.writer_lock()));
        if refused {
            return done;
        }
    }
    done.scanned = Some(beside.reader_scan(reader, table));
    done
}

/// A write attempt by `done`'s reader, its transaction ended first if
/// `open`.
fn try_write(beside: &dyn ReadersBeside, mut done: StepDone, open: bool) -> StepDone {
    let reader = done.step.reader;
    if open {
        done.ended = true;
        if let Err(e) = beside.end_read(reader) {
            done.tried = Some((Err(e), None));
            return done;
        }
    }
    let writing = beside.writer_writing();
    let granted = beside.try_write(reader).expect("asked only of readers that try");
    done.tried = Some((granted, writing));
    done
}

/// A second writer's transaction, on its own connection.
fn write_commit(beside: &dyn ReadersBeside, mut done: StepDone, write: &OtherWrite) -> StepDone {
    let writing = beside.writer_writing();
    let outcome =
        beside.write_commit(done.step.other, write).expect("a seed draws a second writer only where one runs");
    let lock = match outcome {
        Ok(WriteOutcome::Committed) => None,
        _ => beside.writer_lock(),
    };
    done.wrote = Some((outcome, writing, lock));
    done
}

/// A checkpoint on the second writer's connection, or `done`'s reader's
/// connection closed (ending its transaction, if `open`).
fn act(beside: &dyn ReadersBeside, mut done: StepDone, open: bool, action: &ClientAction) -> StepDone {
    let answer = match action {
        ClientAction::Checkpoint(mode) => beside.checkpoint(done.step.other, *mode),
        _ => {
            done.ended = open;
            beside.close_client(done.step.reader)
        }
    };
    let result = answer.expect("a seed draws a client's action only where the engine runs it");
    done.acted = Some(result);
    done
}

/// The simulated disk with the run's pause points in front of it.
pub(crate) struct PausingVfs {
    pub(crate) disk: Arc<SimVfs>,
    pub(crate) pause: Arc<PausePoint>,
}

impl Vfs for PausingVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        if mode != OpenMode::Read && mode != OpenMode::Write {
            self.pause.before_io(false);
        }
        let file = self.disk.open(path, mode)?;
        Ok(Box::new(PausingFile { file, pause: self.pause.clone() }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.pause.before_io(false);
        self.disk.rename(from, to)
    }
    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.pause.before_io(false);
        self.disk.unlink(path)
    }
    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.pause.before_io(false);
        self.disk.remove_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        self.disk.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.disk.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.pause.before_io(false);
        self.disk.sync_dir(dir)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        self.disk.map_readonly(path)
    }
    fn read_once(&self, path: &Path) -> io::Result<Mapping> {
        self.disk.read_once(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.disk.exists(path)
    }
    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        self.disk.lock(dir, mode)
    }
    /// [`BUSY_WAIT`] is a pause point (the engine sleeps, waiting for
    /// another connection), not a phase: it stays here.
    fn mark(&self, phase: &'static str) {
        match phase {
            BUSY_WAIT => self.pause.before_io(false),
            _ => self.disk.mark(phase),
        }
    }

    fn act_as(&self, thread: u32) {
        self.disk.act_as(thread);
    }

    fn pause_point(&self) {
        self.pause.before_io(true);
    }
}

/// A file of [`PausingVfs`].
struct PausingFile {
    file: Box<dyn VfsFile>,
    pause: Arc<PausePoint>,
}

impl VfsFile for PausingFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read_at(offset_bytes, buf)
    }
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.pause.before_io(false);
        self.file.write_at(offset_bytes, data)
    }
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        self.pause.before_io(false);
        self.file.set_len(len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.pause.before_io(false);
        self.file.sync()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        self.pause.before_io(false);
        self.file.sync_data()
    }
}
