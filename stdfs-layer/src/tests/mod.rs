//! The layer's tests, engine-independent: a `std::fs` program lands on
//! the simulated disk and a power loss takes what it did not sync; a call
//! outside the root reaches the real disk; what the layer cannot serve (a
//! call from another thread) fails loudly. Memory maps: `maps`. Each test thread serves its own run, so they run in parallel.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

mod copy;
mod dirs;
mod errno;
mod maps;
mod meta;
mod names;
mod raw;
mod stdio;
mod threads;
mod volatile;

use crate::demo::{program, read_back, strict_disk, DB};
use crate::session;

#[test]
fn a_std_fs_program_lands_on_the_simulated_disk_and_power_loss_takes_the_unsynced() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let listing = program(Path::new(DB)).expect("the program runs on the simulated disk");
    assert_eq!(listing, ["kept (13 bytes)", "sub/ (4096 bytes)", "unsynced (14 bytes)"]);
    let volatile = disk.files(Path::new("/db"));
    assert_eq!(volatile.keys().collect::<Vec<_>>(), ["kept", "unsynced"], "the disk holds what the program wrote");
    assert_eq!(volatile["kept"], b"durable bytes");
    disk.power_loss(1);
    let durable = disk.files(Path::new("/db"));
    assert_eq!(durable.keys().collect::<Vec<_>>(), ["kept"], "the power loss took the unsynced file");
    let after = read_back(Path::new(DB));
    assert_eq!(after[0], "kept: \"durable bytes\"");
    assert!(after[1].starts_with("unsynced: ") && after[1].contains("No such file"), "{after:?}");
    assert!(guard.refusals().is_empty(), "the program used only served calls");
    assert!(crate::interpose::real_root_is_absent());
}

#[test]
fn a_synced_file_without_its_directory_fsync_is_lost_too() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let mut file = File::create("/sim-db/db/data").unwrap();
    file.write_all(b"synced, but its name is not").unwrap();
    file.sync_all().unwrap();
    drop(file);
    disk.power_loss(2);
    assert_eq!(fs::read("/sim-db/db/data").unwrap_err().kind(), ErrorKind::NotFound);
    assert!(guard.refusals().is_empty());
}

#[test]
fn a_change_outside_the_root_fails_loudly_on_a_run_thread() {
    let real = tempfile::tempdir().unwrap();
    let path = real.path().join("real-file");
    fs::write(&path, b"on the real disk").unwrap();
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    assert_eq!(fs::read(&path).unwrap(), b"on the real disk", "reading outside the root passes");
    let refused = [
        fs::write(&path, b"changed").unwrap_err(),
        fs::write(real.path().join("new-file"), b"x").unwrap_err(),
        fs::rename(&path, real.path().join("moved")).unwrap_err(),
        fs::remove_file(&path).unwrap_err(),
        fs::create_dir(real.path().join("dir")).unwrap_err(),
    ];
    for err in &refused {
        assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
    }
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), refused.len(), "{refusals:?}");
    assert!(refusals.iter().all(|r| r.contains("a change outside /sim-db")), "{refusals:?}");
    let err = fs::rename(&path, "/sim-db/db/moved").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EXDEV), "real to simulated is another device");
    assert!(disk.files(Path::new("/db")).is_empty(), "nothing landed on the simulated disk");
    drop(guard);
    assert_eq!(fs::read(&path).unwrap(), b"on the real disk", "nothing reached the real disk");
    assert_eq!(std::fs::read_dir(real.path()).unwrap().count(), 1);
    fs::write(&path, b"changed").expect("a thread serving no run changes real files");
}

#[test]
fn a_call_from_another_thread_fails_loudly() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let file = File::create("/sim-db/db/shared").unwrap();
    let (on_fd, on_path) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let on_fd = file.write_all_at(b"from elsewhere", 0).unwrap_err();
                let on_path = fs::write("/sim-db/db/from-a-stranger", b"x").unwrap_err();
                (on_fd, on_path)
            })
            .join()
            .unwrap()
    });
    assert_eq!(on_fd.raw_os_error(), Some(libc::EBADF));
    assert_eq!(on_path.raw_os_error(), Some(libc::EPERM));
    let refusals = guard.refusals();
    let on_fd: Vec<_> = refusals.iter().filter(|r| r.contains("write on simulated fd")).collect();
    assert!(on_fd.len() == 1 && on_fd[0].contains("from thread"), "{refusals:?}");
    // The path call's thread serves no run: it fails this run when this
    // is the one live (tests run in parallel), the sweep otherwise
    // (`tests/orphans.rs` tells the cases apart).
    let mut orphans = session::orphan_refusals();
    orphans.extend(refusals.iter().filter(|r| !r.contains("write on simulated fd")).cloned());
    assert!(
        orphans.iter().any(|r| r.contains("/from-a-stranger") && r.contains("serves no simulated run")),
        "{orphans:?}"
    );
    assert_eq!(disk.files(Path::new("/db"))["shared"], b"", "neither write landed");
    assert!(crate::interpose::real_root_is_absent(), "nor on the real disk");
}

/// What a fresh thread serving a session of `seed` draws: its `HashMap`
/// keys (std seeds them from `getrandom`), 16 bytes through the
/// `getrandom` function, 16 through the raw system call, and two clock
/// readings.
fn draws_on_a_fresh_thread(seed: u64) -> (u64, Vec<u8>, Vec<u8>, std::time::Duration) {
    use std::hash::BuildHasher;
    std::thread::spawn(move || {
        let _guard = session::install(strict_disk(), &[Path::new("/db")], seed, None);
        let hashed = std::collections::hash_map::RandomState::new().hash_one(42u64);
        let (mut through_fn, mut through_syscall) = (vec![0u8; 16], vec![0u8; 16]);
        #[allow(unsafe_code)]
        // SAFETY: each buffer is valid for its 16 bytes.
        let (a, b) = unsafe {
            (
                libc::getrandom(through_fn.as_mut_ptr().cast(), 16, 0),
                libc::syscall(libc::SYS_getrandom, through_syscall.as_mut_ptr(), 16, 0),
            )
        };
        assert_eq!((a, b), (16, 16));
        let start = std::time::Instant::now();
        (hashed, through_fn, through_syscall, start.elapsed())
    })
    .join()
    .unwrap()
}

#[test]
fn randomness_and_time_on_a_run_thread_are_the_seeds() {
    let (first, again, other) = (draws_on_a_fresh_thread(7), draws_on_a_fresh_thread(7), draws_on_a_fresh_thread(8));
    assert_eq!(first, again, "the same seed draws the same keys, bytes and times");
    assert_ne!(first.0, other.0, "another seed, other HashMap keys: std's keys come from the layer");
    assert_ne!(first.1, other.1, "another seed, other getrandom bytes");
    assert_ne!(first.2, other.2, "another seed, other bytes from the raw system call");
    assert_eq!(first.3, std::time::Duration::from_nanos(crate::entropy::CLOCK_STEP_NS), "one virtual tick");
    let mut real = [0u8; 16];
    #[allow(unsafe_code)]
    // SAFETY: `real` is valid for its 16 bytes.
    let got = unsafe { libc::getrandom(real.as_mut_ptr().cast(), 16, 0) };
    assert_eq!(got, 16, "a thread serving no run still gets the system's randomness");
}

#[test]
fn a_program_that_loops_is_taken_for_a_livelock_and_its_later_calls_fail_unserved() {
    use crate::interpose::LIVELOCK_CALLS;
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/page", b"page").unwrap();
    let file = File::open("/sim-db/db/page").unwrap();
    // A walk that only an error ends, as persy's free-list walk (STDFS.md
    // finding 3): the same page read forever.
    let mut page = [0u8; 4];
    let mut reads = 0u64;
    let error = loop {
        match file.read_exact_at(&mut page, 0) {
            Ok(()) => reads += 1,
            Err(error) => break error,
        }
    };
    assert_eq!(error.raw_os_error(), Some(libc::EIO), "the layer failed the loop's next call");
    assert!(reads < LIVELOCK_CALLS && reads + 10 > LIVELOCK_CALLS, "{reads} reads, not about {LIVELOCK_CALLS}");
    let livelock = guard.livelock().expect("the session records the livelock for its run");
    assert!(livelock.contains("loops forever"), "{livelock}");
    let after = fs::write("/sim-db/db/after", b"never lands").unwrap_err();
    assert_eq!(after.raw_os_error(), Some(libc::EIO), "every later call fails, unserved");
    assert_eq!(disk.files(Path::new("/db")).keys().collect::<Vec<_>>(), ["page"], "nothing more reached the disk");
    assert!(guard.refusals().is_empty(), "a livelock is the program's, not a refusal");
}

#[test]
fn an_engine_that_loops_on_after_every_call_failed_hangs_and_its_waiter_is_told() {
    use crate::worker::{Place, Worker};
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let place = Place { vfs: strict_disk(), dir: Path::new("/db").to_path_buf(), entropy_seed: 0, plant: None };
    let worker = Worker::<()>::start(place, || Ok::<(), ()>(())).unless_refused().expect("the engine starts");
    // A retry loop that no error ends, as persy's failing read (STDFS.md
    // finding 2): the layer's failed calls cannot stop it.
    let hung = catch_unwind(AssertUnwindSafe(|| {
        worker.call(|_: &mut ()| loop {
            let _ = fs::read("/sim-db/db/never-there");
        })
    }));
    let panic = hung.err().expect("the waiter is told the engine will never answer");
    let message = panic.downcast_ref::<String>().expect("a message");
    assert!(message.starts_with("livelock: the engine never returned") && message.contains("parked"), "{message}");
    drop(worker); // never joined: the thread stays parked, leaked
}
