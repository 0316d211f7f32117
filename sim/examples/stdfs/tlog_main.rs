//! `stdfs-tlog`: the stdfs layer's scheduler's proof target (issue 48).
//! `tlog`, a key-value log of ours with a flusher thread and a
//! compactor thread ([`tlog::store`]), runs on the simulated disk through
//! the layer, its threads scheduled by the seed; `--plant NAME` plants
//! one of three thread bugs ([`tlog::TlogPlant`]), which the random mode
//! and `explore` must catch (STDFS.md, "Threads").
//!
//! ```text
//! cargo run --release -p sim --example stdfs-tlog -- --seeds 0..2000 --jobs 2
//! cargo run --release -p sim --example stdfs-tlog -- --seeds 0..200 --plant ack-before-fsync
//! ```

#![deny(unsafe_code)]

mod tlog;

use std::process::ExitCode;

fn main() -> ExitCode {
    stdfs_layer::main(tlog::TlogAdapter)
}
