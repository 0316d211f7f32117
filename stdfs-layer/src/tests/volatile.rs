//! Writable shared maps of a file declared volatile (a lock file): served
//! as memory every map of the file shares and no crash keeps; a file not
//! declared is still refused. A fault is watched in a forked child
//! (`super::maps`'s way).

#![allow(unsafe_code)]

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use memmap2::MmapMut;

use crate::demo::strict_disk;
use crate::interpose::maps::{self, PAGE_BYTES};
use crate::session;

/// The suffix these tests declare (the declaration is the process's: no
/// other test names a file so).
const SUFFIX: &str = ".test-volatile-lock";

/// Whether a forked child dies of a signal reading the byte at `at`.
fn read_faults(at: *const u8) -> bool {
    // SAFETY: the child only reads `at` and exits; the parent waits.
    unsafe {
        let child = libc::fork();
        assert!(child >= 0, "fork");
        if child == 0 {
            std::ptr::read_volatile(at);
            libc::_exit(0);
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(child, &mut status, 0), child);
        libc::WIFSIGNALED(status)
    }
}

fn rw(path: &str) -> fs::File {
    OpenOptions::new().read(true).write(true).open(path).unwrap()
}

#[test]
fn a_declared_files_writable_shared_maps_share_stores_that_never_reach_the_disk() {
    crate::declare_volatile(SUFFIX);
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let path = format!("/sim-db/db/shared{SUFFIX}");
    fs::write(&path, [5u8; 2 * PAGE_BYTES]).unwrap();
    let file = rw(&path);
    // SAFETY (memmap2's contract): the file changes only through this test.
    let mut first = unsafe { MmapMut::map_mut(&file) }.unwrap();
    // SAFETY: as above.
    let second = unsafe { MmapMut::map_mut(&file) }.unwrap();
    assert_eq!(&first[..], &[5u8; 2 * PAGE_BYTES][..], "the map starts as the file's bytes");
    first[PAGE_BYTES + 1] = 9;
    assert_eq!(second[PAGE_BYTES + 1], 9, "another map of the file shares the store");
    file.write_all_at(b"w", 3).unwrap();
    assert_eq!((first[3], second[3]), (b'w', b'w'), "the process's write through the layer reaches both maps");
    first.flush().unwrap();
    let on_disk = fs::read(&path).unwrap();
    assert_eq!(on_disk[PAGE_BYTES + 1], 5, "the map's store never reaches the simulated file");
    assert_eq!(on_disk[3], b'w');
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn an_undeclared_files_writable_shared_map_is_still_refused() {
    crate::declare_volatile(SUFFIX);
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let path = format!("/sim-db/db/shared{SUFFIX}.not");
    fs::write(&path, [1u8; 10]).unwrap();
    // SAFETY: as above.
    let err = unsafe { MmapMut::map_mut(&rw(&path)) }.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENODEV));
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(refusals[0].contains("writable shared map") && refusals[0].contains("declare_volatile"), "{refusals:?}");
}

/// The map's stores are memory only: the session's end (the engine's
/// crash) ends the map, a power loss leaves the file as the disk model
/// says (its synced bytes), and the next run's map starts from those.
#[test]
fn a_crash_drops_the_maps_stores() {
    crate::declare_volatile(SUFFIX);
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let path = format!("/sim-db/db/crash{SUFFIX}");
    let mut made = fs::File::create(&path).unwrap();
    made.write_all(&[0u8; PAGE_BYTES]).unwrap();
    made.sync_all().unwrap();
    drop(made); // a simulated descriptor: closed while its session lives
    fs::File::open("/sim-db/db").unwrap().sync_all().unwrap(); // its name survives the power loss
    let file = rw(&path);
    // SAFETY: as above.
    let mut map = unsafe { MmapMut::map_mut(&file) }.unwrap();
    map[..4].copy_from_slice(b"held");
    map.flush().unwrap();
    file.sync_all().unwrap();
    let at = map.as_ptr();
    drop(file);
    drop(guard);
    assert!(maps::overlap(at as usize, PAGE_BYTES).is_none(), "the session's end took the map");
    assert!(read_faults(at), "a stale pointer into the map faults, as after a crash");
    drop(map);
    disk.power_loss(1);
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    assert_eq!(fs::read(&path).unwrap(), vec![0u8; PAGE_BYTES], "no store through the map reached the disk");
    // SAFETY: as above.
    let again = unsafe { MmapMut::map_mut(&rw(&path)) }.unwrap();
    assert_eq!(&again[..4], &[0u8; 4], "the next run's map starts from the disk, not the ended map");
    drop(again);
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}
