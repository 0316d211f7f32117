//! What one seed's run produced: its counters, its verdict and, when
//! asked for, its whole trace. The driver fills the counters as it goes,
//! the run adds the verdict, and the summary (`summary.rs`) adds seeds up.

use std::collections::BTreeMap;

use crate::disk::{CrashOutcome, SimVfs};
use crate::failure::Failure;
use crate::trace::{Event, FaultKind, Trace};

/// Counters and the verdict of one seed.
#[derive(Clone, Debug, Default)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// Workload operations run.
    pub ops: u64,
    /// Power losses.
    pub crashes: u64,
    /// Store reopens (after crashes and clean restarts), all causes.
    pub restarts: u64,
    /// Of them, after a process kill (memory lost, page cache kept).
    pub kills: u64,
    /// Of them, after a clean close (a restart operation).
    pub clean_restarts: u64,
    /// Of them, after an error left the store poisoned or the engine
    /// failed under an injected fault (a process restart).
    pub error_reopens: u64,
    /// Faults injected, by kind.
    pub faults: BTreeMap<FaultKind, u64>,
    /// Crashes by where they landed (`seal`, `frame`, `commit`, `rewrite`,
    /// `flushall`, `compact`, `boundary`, `in_op`, ...).
    pub crash_gaps: BTreeMap<&'static str, u64>,
    /// Recoveries whose refusal was expected (media corruption) and accepted.
    pub refusals_accepted: u64,
    /// Bad input the store refused as the model predicted (wrong arity, a
    /// misspelled integer, unreadable `SET` options, a `WINDOW` that
    /// declares nothing, the wrong type, an oversized write), changing
    /// nothing.
    pub bad_inputs_refused: u64,
    /// Recoveries accepted after announced damage that went back past a
    /// durable commit: acknowledged durable data silently lost (a kit
    /// engine that detects damage and falls back to an older commit, as
    /// redb's one-phase commit may).
    pub silent_rollbacks: u64,
    /// Recoveries (or refusals) no promise covered, after a commit at a
    /// level that promises nothing: measured, never failed.
    pub unpromised: u64,
    /// Writes (segsim) or commits (kit) whose outcome was left in doubt: an
    /// error returned, or a crash or a kill cut them short (ARCHITECTURE.md,
    /// "Outcomes in doubt"). Counted, never failed.
    pub in_doubt: u64,
    /// Of those, the ones a later recovery showed applied after an earlier
    /// recovery had not: allowed while in doubt, counted apart.
    pub came_back: u64,
    /// Writer operations of a kit engine whose writer waits for readers
    /// (`Readers::writer_waits`) refused as busy: the readers were ended
    /// and the operation retried. Counted, never failed.
    pub busy_waits: u64,
    /// Readers' begins that engine refused as busy while its writer held
    /// its write lock (the reader stayed closed). Counted, never failed.
    pub readers_refused: u64,
    /// Persistence hazards a kit target's engine left that it documents
    /// (`Spec::hazards`: reported, not failed; an undeclared one fails
    /// the run, as every one does for the segsim target, check `hazard`).
    pub hazards: u64,
    /// Read-only inspections of crashed directories (segsim's random mode:
    /// a quarter of its recoveries).
    pub inspections: u64,
    /// Recoveries after damage the disk announced (and the engine promises
    /// to detect), by what came of them: `as-allowed` (content the rule
    /// allows without the damage: it missed everything in use),
    /// `refused`, `rolled-back` (an older commit, not past a durable one),
    /// `silent-rollback` (past a durable one). A kit target's breakdown.
    pub after_damage: BTreeMap<&'static str, u64>,
    /// What the seed drew, in one line (`Target::drew`: a kit target's
    /// configuration), if the target says.
    pub drew: Option<String>,
    /// The rolling hash of every trace event.
    pub trace_hash: u64,
    /// The first failed check, if any.
    pub failure: Option<Failure>,
    /// The whole trace, when asked for.
    pub trace: Option<Trace>,
}

impl SeedOutcome {
    /// Whether every reopen had exactly one cause: a power loss, a process
    /// kill, a clean restart or an error. Holds for every run that passed,
    /// of every target: the summary's "restarts by cause" adds up.
    pub fn reopens_add_up(&self) -> bool {
        self.restarts == self.crashes + self.kills + self.clean_restarts + self.error_reopens
    }

    /// The power goes, counted: the disk keeps what a crash keeps, drawn
    /// from `stream`, and the trace notes an unclean restart. The one
    /// power loss of every run loop (the engine's handles already dropped).
    pub fn lose_power(&mut self, vfs: &SimVfs, stream: u64) -> CrashOutcome {
        self.crashes += 1;
        let crash = vfs.power_loss(stream);
        vfs.with_trace(|t| t.push(Event::Restart { clean: false }));
        crash
    }

    /// The process restarts (memory lost, page cache kept), its handles
    /// already dropped — unless the file system shut itself down, when the
    /// restart is the remount a power loss stands for (`SimVfs::
    /// process_restart`): then its outcome, to be recovered as after a
    /// power loss (counted as crash gap `remount`). The one process
    /// restart of every run loop.
    pub fn restart_process(&mut self, vfs: &SimVfs, clean: bool) -> Option<CrashOutcome> {
        let remount = vfs.process_restart();
        if remount.is_some() {
            *self.crash_gaps.entry("remount").or_default() += 1;
        }
        vfs.with_trace(|t| t.push(Event::Restart { clean }));
        remount
    }

    /// Name what the seed drew, on the outcome and on its failure (if any).
    pub fn name_draw(&mut self, drew: String) {
        if let Some(failure) = &mut self.failure {
            failure.drew = Some(drew.clone());
        }
        self.drew = Some(drew);
    }

    /// At the end of a run, what only the disk knows: the faults it
    /// injected, the hash of its trace and, with `keep_trace`, the trace
    /// itself (the disk is left with an empty one).
    pub fn take_disk(&mut self, vfs: &SimVfs, keep_trace: bool) {
        self.faults = vfs.fault_counts();
        let trace = vfs.take_trace();
        self.trace_hash = trace.hash();
        if keep_trace {
            self.trace = Some(trace);
        }
    }
}
