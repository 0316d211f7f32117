//! `stdfs`: persy, an unmodified `std::fs` engine, run on the simulated
//! disk through the interposition layer (`stdfs-layer`, STDFS.md), with
//! the kit's whole command line; `stdfs demo` runs the layer's
//! demonstration program ([`stdfs_layer::demo`]) on a simulated disk,
//! cuts the power, and prints what survived.
//!
//! It uses the layer as any binary outside this repository would: one
//! dependency, `stdfs_layer::main` as its `main`, the library's
//! conventions (`stdfs_layer::db_path`, `stdfs_layer::Worker`) in its
//! adapter. The layer's own tests are the library's
//! (`cargo test -p stdfs-layer`); this one's are persy's and `cowkv`'s.

#![deny(unsafe_code)]

#[cfg(test)]
mod cowkv;
#[cfg(feature = "persy")]
mod persy_target;
#[cfg(test)]
mod tlog;

use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("demo") {
        return demo_main();
    }
    target_main()
}

/// Without a first argument `demo`: persy on the kit (the simulator's
/// whole command line: `--seeds`, `explore`, `--shrink`, …).
#[cfg(feature = "persy")]
fn target_main() -> ExitCode {
    stdfs_layer::main(persy_target::PersyAdapter)
}

#[cfg(not(feature = "persy"))]
fn target_main() -> ExitCode {
    eprintln!("stdfs: built without the `persy` feature: only `stdfs demo` runs");
    ExitCode::from(2)
}

/// `stdfs demo`: the demonstration program on a simulated disk.
fn demo_main() -> ExitCode {
    if !stdfs_layer::real_root_is_absent() {
        eprintln!(
            "stdfs: {} exists on the real disk; remove it first (the layer's root must not be real)",
            stdfs_layer::ROOT
        );
        return ExitCode::from(2);
    }
    match stdfs_layer::demo::run_and_cut_power() {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("stdfs demo failed: {message}");
            ExitCode::FAILURE
        }
    }
}
