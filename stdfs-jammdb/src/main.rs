//! `stdfs-jammdb`: jammdb (crates.io, unmodified) on the simulated disk
//! through the stdfs layer, its pages read through a read-only map the
//! layer serves; the kit's whole command line (JAMMDB.md).
//!
//! ```text
//! cargo run --release -p stdfs-jammdb -- --seeds 0..500 --jobs 2
//! cargo run --release -p stdfs-jammdb -- explore --seed 1 --depth 2 --faults --jobs 2
//! ```

#![deny(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    stdfs_layer::main(stdfs_jammdb::JammdbAdapter)
}
