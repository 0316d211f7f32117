//! Shrinking a failing live run: the fewest faults, then the earliest
//! crash. A run's drawn faults are replaced by none, then by each injected
//! fault alone, armed at its I/O index (`--fault-at`; the disk holds one
//! armed fault, so a failure that needs two is left as it was, said so);
//! then the crash is moved to the earliest index after that fault at which
//! the run still fails. Each try is a whole run of the program: a few
//! hundred at most for the programs in `programs/`.

use crate::faults::FaultSpec;
use crate::run::{run, RunOptions};

/// What shrinking found: the smaller run, if any, and how many runs it took.
pub struct Shrunk {
    pub options: Option<RunOptions>,
    pub tries: usize,
}

fn fails(options: &RunOptions, tries: &mut usize) -> Option<u64> {
    *tries += 1;
    match run(options) {
        Ok(outcome) if outcome.failed() => Some(outcome.io_count),
        _ => None,
    }
}

/// Shrink `failing` (a run that failed with `injected` faults).
pub fn shrink(failing: &RunOptions, injected: &[(u64, simulator::disk::ArmedFault)]) -> Shrunk {
    let mut tries = 0;
    let quiet = RunOptions { echo: false, show_ios: false, ..failing.clone() };
    let candidates = std::iter::once(Vec::new()).chain(injected.iter().map(|fault| vec![*fault]));
    for armed in candidates {
        let faults = FaultSpec { rates: Vec::new(), armed, capacity_bytes: failing.faults.capacity_bytes };
        let fewer = RunOptions { faults, ..quiet.clone() };
        let Some(io_count) = fails(&fewer, &mut tries) else { continue };
        let first = fewer.faults.armed.first().map_or(1, |(index, _)| index + 1);
        let last = fewer.crash_at.unwrap_or(io_count);
        for at in first..last {
            let earlier = RunOptions { crash_at: Some(at), ..fewer.clone() };
            if fails(&earlier, &mut tries).is_some() {
                return Shrunk { options: Some(earlier), tries };
            }
        }
        return Shrunk { options: Some(fewer), tries };
    }
    Shrunk { options: None, tries }
}
