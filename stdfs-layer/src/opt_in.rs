//! How a binary opts in to the layer and names its files: [`main`], a kit
//! target's whole command line on the layer, and [`db_path`], the
//! convention that puts the kit's directory under the root.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use simkit::Adapter;

use crate::session::ROOT;

/// A kit target on the layer: `simkit::main(adapter)` (the simulator's
/// whole command line: `--seeds`, `explore`, `--shrink`, …), in a process
/// whose file functions are the layer's. Refuses to start (exit 2) when
/// the real disk has something at [`ROOT`]: a call the layer cannot see
/// would reach it.
pub fn main<A: Adapter + Clone>(adapter: A) -> ExitCode {
    crate::interpose::link_all();
    if !crate::interpose::real_root_is_absent() {
        eprintln!("stdfs-layer: {ROOT} exists on the real disk; remove it first (the layer's root must not be real)");
        return ExitCode::from(2);
    }
    simkit::main(adapter)
}

/// The path the engine is given for the kit's directory `disk_dir` (an
/// `Env::dir`, absolute on the simulated disk): the same path under
/// [`ROOT`], `/db` as `/sim-db/db`.
pub fn db_path(disk_dir: &Path) -> PathBuf {
    assert!(disk_dir.is_absolute(), "the kit's directory is a disk path: {}", disk_dir.display());
    PathBuf::from(format!("{ROOT}{}", disk_dir.display()))
}
