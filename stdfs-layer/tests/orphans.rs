//! Refusals from a thread serving no run (orphans) are never dropped: the
//! one run live in the process fails, or, with none or several live, the
//! sweep (`stdfs_layer::orphan_refusals`, which `stdfs_layer::main`
//! checks after its runs). One test in a binary of its own, so that the
//! runs live in the process are the ones it starts.

use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;

use stdfs_layer::demo::strict_disk;

/// A path call under the root from a fresh thread serving no run: its
/// errno.
fn orphan_write(name: &str) -> Option<i32> {
    let path = format!("/sim-db/db/{name}");
    std::thread::spawn(move || std::fs::write(path, b"x").unwrap_err().raw_os_error()).join().unwrap()
}

/// A run on a thread of its own, live until the sender is dropped.
fn live_run_elsewhere() -> (mpsc::Sender<()>, std::thread::JoinHandle<Vec<String>>) {
    let (end, ended) = mpsc::channel::<()>();
    let (ready, started) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let guard = stdfs_layer::install(strict_disk(), &[Path::new("/db")], 0, None);
        ready.send(()).unwrap();
        let _ = ended.recv();
        guard.refusals()
    });
    started.recv().unwrap();
    (end, thread)
}

#[test]
fn an_orphan_refusal_fails_the_one_live_run_or_else_the_sweep() {
    assert!(stdfs_layer::orphan_refusals().is_empty());
    // No run live: the sweep's.
    assert_eq!(orphan_write("while-none-live"), Some(libc::EPERM));
    let swept = stdfs_layer::orphan_refusals();
    assert!(swept.len() == 1 && swept[0].contains("while-none-live") && swept[0].contains("0 runs live"), "{swept:?}");

    // One run live: the only run the call could belong to fails.
    let disk = strict_disk();
    let guard = stdfs_layer::install(disk.clone(), &[Path::new("/db")], 0, None);
    assert_eq!(orphan_write("while-one-live"), Some(libc::EPERM));
    let mine = guard.refusals();
    assert!(mine.len() == 1 && mine[0].contains("while-one-live") && mine[0].contains("the one run live"), "{mine:?}");
    assert!(stdfs_layer::orphan_refusals().is_empty());

    // A descriptor of a run that ended, used by another: that run's
    // refusal, not one left in the ended run's slot for its next occupant.
    let stale_fd = std::thread::spawn(|| {
        let _ended = stdfs_layer::install(strict_disk(), &[Path::new("/db")], 0, None);
        std::os::unix::io::IntoRawFd::into_raw_fd(std::fs::File::create("/sim-db/db/stale").unwrap())
    })
    .join()
    .unwrap();
    #[allow(unsafe_code)]
    // SAFETY: a write of 1 valid byte to a descriptor number the layer
    // answers (it names no live run).
    let wrote = unsafe { libc::write(stale_fd, b"x".as_ptr().cast(), 1) };
    assert_eq!(wrote, -1);
    let refused = guard.refusals();
    assert!(refused.len() == 1 && refused[0].contains("no live run"), "{refused:?}");

    // Two runs live: neither is blamed; the sweep fails.
    let (end, other) = live_run_elsewhere();
    assert_eq!(orphan_write("while-two-live"), Some(libc::EPERM));
    assert!(guard.refusals().is_empty());
    drop(end);
    assert!(other.join().unwrap().is_empty(), "the other run is not blamed either");
    let swept = stdfs_layer::orphan_refusals();
    assert!(swept.len() == 1 && swept[0].contains("while-two-live") && swept[0].contains("2 runs live"), "{swept:?}");

    // A refusal the run never took: the sweep's when the run ends.
    std::fs::write("/sim-db/db/kept", b"x").unwrap();
    assert!(std::fs::hard_link("/sim-db/db/kept", "/sim-db/db/linked").is_err());
    drop(guard);
    let swept = stdfs_layer::orphan_refusals();
    assert!(swept.len() == 1 && swept[0].contains("left untaken"), "{swept:?}");
    assert_eq!(disk.files(Path::new("/db")).keys().collect::<Vec<_>>(), ["kept"], "no orphan's write landed");

    // The sweep's verdict: failure while the sweep holds a refusal.
    assert_eq!(orphan_write("before-the-verdict"), Some(libc::EPERM));
    assert_eq!(stdfs_layer::fail_sweep_on_orphans(ExitCode::SUCCESS), ExitCode::from(1));
    assert_eq!(stdfs_layer::fail_sweep_on_orphans(ExitCode::SUCCESS), ExitCode::SUCCESS, "taken once");
}
