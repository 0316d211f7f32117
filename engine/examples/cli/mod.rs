//! What the examples' command lines share: how one ends when its
//! arguments do not parse. Each example includes this as `mod cli;` (a
//! folder, so cargo does not take it for an example of its own).

use std::process::ExitCode;

/// The end of `program` when its arguments did not parse: why (nothing
/// after `--help`, which asked for the usage and got it), the usage, and
/// exit status 2, the usual status of a usage error.
pub fn usage_error(program: &str, usage: &str, why: &str) -> ExitCode {
    if !why.is_empty() {
        eprintln!("{program}: {why}");
    }
    eprintln!("{usage}");
    ExitCode::from(2)
}
