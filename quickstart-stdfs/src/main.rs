//! The simulator's whole command line for the quickstart's std::fs engine,
//! in a process whose file functions are the layer's.

use std::process::ExitCode;

fn main() -> ExitCode {
    stdfs_layer::main(quickstart_stdfs::SegStoreAdapter)
}
