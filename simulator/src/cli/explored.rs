//! One exploration as the command line runs it: the request (seed, how,
//! where the output goes) and [`run`], which explores a target and prints
//! the report. Apart from `explore.rs`'s flags so that the registry
//! (`targets.rs`), which calls [`run`] for every target, and the flags,
//! which look targets up in the registry, do not import each other.

use std::process::ExitCode;

use crate::explore::{explore, ExploreOptions};
use crate::output::{emit, verdict};
use crate::seam::Target;

/// One exploration the command line asks for: which seed, how, and where
/// the output goes.
#[derive(Debug)]
pub struct ExploreRequest {
    /// The seed whose workload is explored.
    pub seed: u64,
    /// Its workload's operations.
    pub ops: u64,
    /// How to explore.
    pub options: ExploreOptions,
    /// Print one JSON object on stdout.
    pub json: bool,
    /// `--report FILE.html`: draw the one crash state explored there.
    pub report: Option<std::path::PathBuf>,
}

/// Explore and print the report: exit 1 if a state failed, 2 if the
/// options name a crash index or state that does not exist. With
/// `page` (`--report`, which needs `--only-io` and `--only-state`), also
/// draw that crash state (`crate::report::write_explored`).
pub fn run<T: Target>(target: &T, request: &ExploreRequest) -> ExitCode {
    let ExploreRequest { seed, ops, options, json, report: page } = request;
    let (seed, ops, json, page) = (*seed, *ops, *json, page.as_deref());
    let only = options.only_io.zip(options.only_state);
    if page.is_some() && only.is_none() {
        eprintln!("sim explore: --report draws one crash state: give --only-io I --only-state J (a failure's repro)");
        return ExitCode::from(2);
    }
    let report = match explore(target, seed, ops, options) {
        Ok(report) => report,
        Err(message) => {
            eprintln!("sim explore: {message}");
            return ExitCode::from(2);
        }
    };
    emit(&report.to_text(), json.then(|| report.to_json()).as_ref());
    if let (Some(path), Some(crash)) = (page, only) {
        if let Err(e) = crate::report::write_explored(target, (seed, ops), crash, options, &report, path) {
            eprintln!("sim explore: {e}");
            return ExitCode::from(2);
        }
    }
    verdict(report.failures_total > 0)
}
