//! `stdfs-cowkv`: the stdfs layer's own proof target. `cowkv`, a small
//! correct engine of ours that stores through `std::fs` only
//! ([`cowkv::store`]), runs on the simulated disk through the same layer
//! as persy, with the kit's whole command line; `--plant NAME` plants one
//! of the layer's mistakes ([`stdfs_layer::LayerPlant`]), which the random
//! mode and `explore` must catch (STDFS.md, "Planted mistakes in the layer").
//!
//! A binary of its own because the kit's command line tests one engine
//! per binary, and persy's is `stdfs`'s. Its tests run in `stdfs`'s.
//!
//! ```text
//! cargo run --release -p sim --example stdfs-cowkv -- --seeds 0..500 --jobs 2
//! cargo run --release -p sim --example stdfs-cowkv -- --seeds 0..500 --plant tmp-fsync-noop
//! cargo run --release -p sim --example stdfs-cowkv -- explore --seed 1 --plant dir-fsync-parent
//! ```

#![deny(unsafe_code)]

mod cowkv;

use std::process::ExitCode;

fn main() -> ExitCode {
    stdfs_layer::main(cowkv::CowKvAdapter)
}
