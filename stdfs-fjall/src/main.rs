//! `stdfs-fjall`: fjall (crates.io, unmodified) on the simulated disk
//! through the stdfs layer, its worker threads under the layer's
//! deterministic scheduler; the kit's whole command line (FJALL.md).
//!
//! ```text
//! cargo run --release -p stdfs-fjall -- --seeds 0..500 --jobs 2
//! cargo run --release -p stdfs-fjall -- explore --seed 1 --depth 2 --faults --jobs 2
//! ```

#![deny(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    stdfs_layer::main(stdfs_fjall::FjallAdapter)
}
