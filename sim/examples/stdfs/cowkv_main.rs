//! `stdfs-cowkv`: the stdfs layer's own proof target. `cowkv`, a small
//! correct engine of ours that stores through `std::fs` only
//! ([`cowkv::store`]), runs on the simulated disk through the same layer
//! as persy, with the kit's whole command line; `--plant NAME` plants one
//! of the layer's mistakes ([`plant::LayerPlant`]), which the random mode
//! and `explore` must catch (STDFS.md, "Planted mistakes in the layer").
//!
//! A binary of its own (the same modules as `stdfs`, whose `main.rs`
//! documents the layer) because the kit's command line tests one engine
//! per binary, and persy's is `stdfs`'s.
//!
//! ```text
//! cargo run --release -p sim --example stdfs-cowkv -- --seeds 0..500 --jobs 2
//! cargo run --release -p sim --example stdfs-cowkv -- --seeds 0..500 --plant tmp-fsync-noop
//! cargo run --release -p sim --example stdfs-cowkv -- explore --seed 1 --plant dir-fsync-parent
//! ```

#![deny(unsafe_code)]

mod cowkv;
mod dirstream;
mod entropy;
mod errno;
mod files;
#[allow(unsafe_code)]
mod interpose;
mod meta;
mod plant;
mod route;
mod serve_fd;
mod serve_path;
// The layer's modules are `stdfs`'s, which uses all of them (and checks
// them for dead code); this binary does not collect orphan refusals.
#[allow(dead_code)]
mod session;
mod worker;

use std::process::ExitCode;

fn main() -> ExitCode {
    if !interpose::real_root_is_absent() {
        eprintln!(
            "stdfs-cowkv: {} exists on the real disk; remove it first (the layer's root must not be real)",
            session::ROOT
        );
        return ExitCode::from(2);
    }
    sim::kit::main(cowkv::CowKvAdapter)
}
