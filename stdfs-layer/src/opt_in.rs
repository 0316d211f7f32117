//! How a binary opts in to the layer and names its files: [`main`], a kit
//! target's whole command line on the layer, [`install`], one thread
//! served a simulated disk (a test's way in), and [`db_path`], the
//! convention that puts the kit's directory under the root. Each names
//! the interposed functions (`interpose::link_all`), so that a binary
//! that calls either links the layer's definitions of libc's calls.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use simkit::vfs::Vfs;
use simkit::Adapter;

use crate::plant::LayerPlant;
use crate::session::{SessionGuard, ROOT};

/// A kit target on the layer: `simkit::main(adapter)` (the simulator's
/// whole command line: `--seeds`, `explore`, `--shrink`, …), in a process
/// whose file functions are the layer's. Refuses to start (exit 2) when
/// the real disk has something at [`ROOT`]: a call the layer cannot see
/// would reach it. Fails (exit 1) after its runs when the layer refused a
/// call no one run could answer for (`crate::orphan_refusals`: a thread
/// serving no run, while none or several were live): the sweep's failure,
/// whatever the runs' verdicts.
pub fn main<A: Adapter + Clone>(adapter: A) -> ExitCode {
    crate::interpose::link_all();
    crate::heap::start_filling();
    if !crate::interpose::real_root_is_absent() {
        eprintln!("stdfs-layer: {ROOT} exists on the real disk; remove it first (the layer's root must not be real)");
        return ExitCode::from(2);
    }
    fail_sweep_on_orphans(simkit::main(adapter))
}

/// The sweep's verdict: `runs` (the runs' exit code), or failure (exit 1)
/// when the layer refused a call no one run could answer for
/// (`crate::orphan_refusals`, taken and printed). [`main`] ends with it; a
/// binary that calls `simkit` itself ends with it too.
pub fn fail_sweep_on_orphans(runs: ExitCode) -> ExitCode {
    let orphans = crate::session::orphan_refusals();
    if orphans.is_empty() {
        return runs;
    }
    for what in &orphans {
        eprintln!("stdfs-layer: refused outside any one run: {what}");
    }
    eprintln!("stdfs-layer: the sweep fails: {} call(s) refused that no one run could answer for", orphans.len());
    ExitCode::from(1)
}

/// The path the engine is given for the kit's directory `disk_dir` (an
/// `Env::dir`, absolute on the simulated disk): the same path under
/// [`ROOT`], `/db` as `/sim-db/db`.
pub fn db_path(disk_dir: &Path) -> PathBuf {
    assert!(disk_dir.is_absolute(), "the kit's directory is a disk path: {}", disk_dir.display());
    PathBuf::from(format!("{ROOT}{}", disk_dir.display()))
}

/// Serve `vfs` to this thread under [`ROOT`] until the guard is dropped.
/// `dirs` are disk paths of directories that exist on it (the kit's
/// database directory); `entropy_seed` seeds the randomness and starts
/// the clock this thread is served; `plant` is the mistake planted in the
/// layer for this session, if any ([`LayerPlant`]).
pub fn install(vfs: Arc<dyn Vfs>, dirs: &[&Path], entropy_seed: u64, plant: Option<LayerPlant>) -> SessionGuard {
    crate::interpose::link_all();
    crate::heap::start_filling();
    assert!(
        crate::interpose::fd_limit::real_fds_stay_below(crate::session::FAKE_FD_BASE),
        "the hard RLIMIT_NOFILE reaches FAKE_FD_BASE"
    );
    crate::session::install(vfs, dirs, entropy_seed, plant)
}
