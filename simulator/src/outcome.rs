//! What one seed's run produced: its counters (`counters.rs`), its verdict
//! and, when asked for, its whole trace. The driver fills the counters as
//! it goes, the run adds the verdict, and the summary (`summary.rs`) adds
//! seeds up.

use crate::counters::Counters;
use crate::disk::{CrashOutcome, SimVfs};
use crate::failure::Failure;
use crate::trace::{Event, Trace};

/// Counters and the verdict of one seed.
#[derive(Clone, Debug, Default)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// What the run counted (`counters.rs`).
    pub counters: Counters,
    /// What the seed drew, in one line (`Target::drew`: a kit target's
    /// configuration), if the target says.
    pub drew: Option<String>,
    /// The rolling hash of every trace event.
    pub trace_hash: u64,
    /// The hash of every byte written, with its offset, in order
    /// ([`Trace::written_hash`]): not in `trace_hash`, compared by
    /// `--check-determinism` beside it.
    pub written_hash: u64,
    /// The first failed check, if any.
    pub failure: Option<Failure>,
    /// The whole trace, when asked for.
    pub trace: Option<Trace>,
}

impl SeedOutcome {
    /// The power goes, counted: the disk keeps what a crash keeps, drawn
    /// from `stream`, and the trace notes an unclean restart. The one
    /// power loss of every run loop (the engine's handles already dropped).
    pub fn lose_power(&mut self, vfs: &SimVfs, stream: u64) -> CrashOutcome {
        self.counters.crashes += 1;
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
            self.counters.count_crash_gap("remount");
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
        self.counters.faults = vfs.fault_counts();
        let trace = vfs.take_trace();
        self.trace_hash = trace.hash();
        self.written_hash = trace.written_hash();
        if keep_trace {
            self.trace = Some(trace);
        }
    }
}
