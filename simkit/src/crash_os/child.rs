//! The `crash-os` child: this same binary, started by the parent with
//! `--child-from INDEX`, opens the engine on the real directory, says so,
//! and runs the seed's workload from `INDEX` until the parent kills it,
//! printing one line per completed operation with its answer (`line.rs`).
//! It never stops on its own except on an error or a panic, which it
//! reports on a `failed` line before exiting 1: on the real disk there is
//! no injected fault to excuse either.
//!
//! The planted harness mistake `--plant-early-ack` lives here: the child
//! acknowledges a commit *before* running it, so a kill between the two
//! leaves the parent believing in a commit that never happened — which the
//! parent's check must catch (`sim/tests/crash_os.rs`). Between the two it
//! waits [`EARLY_ACK_GAP`], as a slow commit would: an engine whose commit
//! reaches the kernel within microseconds (logkv's `nosync`) would
//! otherwise leave a gap no kill ever lands in, and the plant would prove
//! nothing there.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use super::super::workload::KitOp;
use super::super::Adapter;
use super::line::{Answer, Line};
use super::on_disk::OnDisk;
use super::panicked;
use super::workload::Endless;
use simulator::failure::catch_panic;

/// With `--plant-early-ack`: how long the child waits between a commit's
/// acknowledgement and the commit (see the module doc).
const EARLY_ACK_GAP: Duration = Duration::from_millis(1);

/// The child stops: the engine failed (and said so), or the parent
/// stopped reading (it died, or it is done) and there is no one to tell.
struct Stop;

/// Print `line` whole and flush it: the parent counts a line only once its
/// newline has arrived.
fn say(line: &Line) -> Result<(), Stop> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|_| Stop)
}

/// Run the child (see the module doc); its exit status is 1 whenever it
/// ends, since only a failure ends it.
pub(super) fn run<A: Adapter>(
    disk: &OnDisk<'_, A>,
    workload: &mut Endless<'_, A::Config>,
    from: u64,
    early_ack: bool,
) -> ExitCode {
    let opened = catch_panic(|| disk.open()).unwrap_or_else(|panic| Err(panicked(panic)));
    let mut db = match opened {
        Ok(db) => Some(db),
        Err(e) => {
            let _ = say(&Line::Failed { index: None, message: e.to_string() });
            return ExitCode::from(1);
        }
    };
    if say(&Line::Ready).is_err() {
        return ExitCode::from(1);
    }
    let mut index = from;
    loop {
        let planned = workload.next_at(index);
        if step(disk, &mut db, planned.index, &planned.op, early_ack).is_err() {
            return ExitCode::from(1);
        }
        index = planned.index + 1;
    }
}

/// Run operation `index` and acknowledge it (with `early_ack`, a commit is
/// acknowledged first: the planted mistake). `Err` ends the child.
fn step<A: Adapter>(
    disk: &OnDisk<'_, A>,
    db: &mut Option<A::Db>,
    index: u64,
    op: &KitOp,
    early_ack: bool,
) -> Result<(), Stop> {
    let acked_early = early_ack && matches!(op, KitOp::Commit { .. });
    if acked_early {
        say(&Line::Ack { index, answer: Answer::Done })?;
        std::thread::sleep(EARLY_ACK_GAP);
    }
    let done = catch_panic(|| disk.perform(db, op)).unwrap_or_else(|panic| Err(panicked(panic)));
    match done {
        Ok(_) if acked_early => Ok(()),
        Ok(answer) => say(&Line::Ack { index, answer }),
        Err(e) => {
            say(&Line::Failed { index: Some(index), message: e.to_string() })?;
            Err(Stop)
        }
    }
}
