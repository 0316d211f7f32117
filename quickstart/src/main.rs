//! The simulator's whole command line for the quickstart's engine.

use std::process::ExitCode;

fn main() -> ExitCode {
    simkit::main(quickstart::QuickstartAdapter)
}
