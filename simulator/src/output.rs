//! How every subcommand ends: a report for a person, maybe a JSON object
//! for a script, and an exit status scripts can trust (0 nothing failed,
//! 1 a failure found; usage errors, 2, are each command's own).

use std::process::ExitCode;

use serde_json::Value;

/// Print `text` for a person on stdout; or, with `json`, the JSON object
/// on stdout and `text` on stderr, so `> summary.json` keeps only JSON.
pub fn emit(text: &str, json: Option<&Value>) {
    match json {
        Some(value) => {
            eprint!("{text}");
            println!("{}", serde_json::to_string_pretty(value).expect("a JSON value serializes"));
        }
        None => print!("{text}"),
    }
}

/// The exit status for a run that did (`true`) or did not find a failure.
pub fn verdict(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
