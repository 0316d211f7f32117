//! `sim`: the simulator's command line (`sim --help`; the code is
//! `sim::cli`).
//!
//! Exit status: 0 no failure, 1 a failure found, 2 bad usage.

use std::process::ExitCode;

fn main() -> ExitCode {
    sim::cli::main()
}
