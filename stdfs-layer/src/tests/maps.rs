//! Memory maps of simulated files, made as an engine makes them
//! (`memmap2`): a map holds the file's bytes and follows the process's
//! later writes through the layer (a `pwrite`, a growth, a truncation, a
//! punched hole); its pages are read-only, and past the file's end
//! inaccessible; a writable shared map is refused; an anonymous or real
//! map is untouched; `munmap` ends a map (any part of it), and so does
//! the session's end. A fault is watched in a forked child, whose death
//! by signal is the answer.

#![allow(unsafe_code)]

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use memmap2::{Mmap, MmapMut, MmapOptions};

use crate::demo::strict_disk;
use crate::interpose::maps;
use crate::session;

const PAGE: usize = maps::PAGE_BYTES;

/// The signal a forked child dies of when it reads (or, `store`, writes)
/// the byte at `at`: `None` if it lived.
fn fault_at(at: *const u8, store: bool) -> Option<i32> {
    // SAFETY: the child only touches `at` and exits, both
    // async-signal-safe; the parent waits for it.
    unsafe {
        let child = libc::fork();
        assert!(child >= 0, "fork");
        if child == 0 {
            if store {
                std::ptr::write_volatile(at as *mut u8, 1);
            } else {
                std::ptr::read_volatile(at);
            }
            libc::_exit(0);
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(child, &mut status, 0), child);
        libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status))
    }
}

/// The byte at `at` of a map, past what the `Mmap` slice shows.
fn byte_at(map: &Mmap, at: usize) -> u8 {
    assert!(at < map.len().next_multiple_of(PAGE));
    // SAFETY: inside the map's last page, which the kernel maps whole.
    unsafe { std::ptr::read_volatile(map.as_ptr().add(at)) }
}

fn rw(path: &str) -> File {
    OpenOptions::new().read(true).write(true).open(path).unwrap()
}

#[test]
fn a_map_holds_the_files_bytes_and_follows_later_writes() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    fs::write("/sim-db/db/pages", &bytes).unwrap();
    let file = rw("/sim-db/db/pages");
    // SAFETY (memmap2's contract): the file changes only through this test.
    let map = unsafe { Mmap::map(&file) }.unwrap();
    assert_eq!(&map[..], &bytes[..], "the map holds the file's bytes");
    assert!((5000..2 * PAGE).all(|at| byte_at(&map, at) == 0), "past the end, the last page reads zeros");
    file.write_all_at(b"written later", 4090).unwrap();
    assert_eq!(&map[4090..4103], b"written later", "a pwrite reaches the live map, across a page edge");
    let mut other = rw("/sim-db/db/pages");
    std::io::Write::write_all(&mut other, b"another handle").unwrap();
    assert_eq!(&map[..14], b"another handle", "a write through another open file reaches it too");
    assert_eq!(&fs::read("/sim-db/db/pages").unwrap()[..], &map[..], "the map is what a read returns");
    assert_eq!(fault_at(map.as_ptr(), true), Some(libc::SIGSEGV), "a store through the map faults: it is read-only");
    assert_eq!(fault_at(map.as_ptr(), false), None, "a load does not");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn a_map_follows_the_file_growing_shrinking_and_punched() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/grows", [9u8; 100]).unwrap();
    let file = rw("/sim-db/db/grows");
    // SAFETY: as above; three pages of a file that has one yet.
    let map = unsafe { MmapOptions::new().len(3 * PAGE).map(&file) }.unwrap();
    assert_eq!(fault_at(map.as_ptr().wrapping_add(PAGE), false), Some(libc::SIGSEGV), "a page past the end faults");
    file.write_all_at(b"far", 2 * PAGE as u64 + 5).unwrap();
    assert_eq!(&map[2 * PAGE + 5..2 * PAGE + 8], b"far", "the file grew under the map");
    assert!(map[100..2 * PAGE + 5].iter().all(|b| *b == 0), "the hole reads zeros");
    assert_eq!(fault_at(map.as_ptr().wrapping_add(PAGE), false), None, "the grown pages are readable");
    file.set_len(50).unwrap();
    assert!(map[..50].iter().all(|b| *b == 9) && map[50..100].iter().all(|b| *b == 0), "cut bytes read zeros");
    assert_eq!(fault_at(map.as_ptr().wrapping_add(PAGE), false), Some(libc::SIGSEGV), "past the new end faults");
    file.set_len(3 * PAGE as u64).unwrap();
    assert!(map[50..].iter().all(|b| *b == 0), "grown again by set_len: zeros, not the old bytes");
    file.write_all_at(&[7u8; 64], 0).unwrap();
    // SAFETY: a descriptor this test owns; no pointer.
    assert_eq!(
        unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, 8, 8) },
        0
    );
    assert_eq!(&map[..24], &[[7u8; 8], [0u8; 8], [7u8; 8]].concat()[..], "a punched hole reads zeros");
    drop(File::create("/sim-db/db/grows").unwrap());
    assert_eq!(fault_at(map.as_ptr(), false), Some(libc::SIGSEGV), "O_TRUNC to nothing: every page is past the end");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn a_writable_shared_map_is_refused_and_a_private_one_is_a_copy() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/data", [1u8; 10]).unwrap();
    let file = rw("/sim-db/db/data");
    // SAFETY: as above.
    let err = unsafe { MmapMut::map_mut(&file) }.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENODEV));
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(refusals[0].contains("mmap of /db/data") && refusals[0].contains("writable shared map"), "{refusals:?}");
    // SAFETY: as above.
    let mut copy = unsafe { MmapOptions::new().map_copy(&file) }.unwrap();
    copy[0] = 2;
    file.write_all_at(&[3], 1).unwrap();
    assert_eq!(&copy[..3], &[2, 1, 1], "a private copy: its own store kept, the later write not shown");
    assert_eq!(fs::read("/sim-db/db/data").unwrap(), [1, 3, 1, 1, 1, 1, 1, 1, 1, 1], "never written back");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn mprotect_to_writable_is_refused_and_hints_change_nothing() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/data", [5u8; PAGE]).unwrap();
    let file = File::open("/sim-db/db/data").unwrap();
    // SAFETY: as above.
    let map = unsafe { Mmap::map(&file) }.unwrap();
    let at = map.as_ptr() as *mut libc::c_void;
    // SAFETY: the map just made, one page.
    unsafe {
        assert_eq!(libc::madvise(at, PAGE, libc::MADV_RANDOM), 0);
        assert_eq!(libc::madvise(at, PAGE, libc::MADV_DONTNEED), 0);
        assert_eq!(libc::msync(at, PAGE, libc::MS_SYNC), 0);
        assert_eq!(libc::mprotect(at, PAGE, libc::PROT_READ), 0);
        assert_eq!(libc::mprotect(at, PAGE, libc::PROT_READ | libc::PROT_WRITE), -1);
        assert_eq!(*libc::__errno_location(), libc::EACCES);
    }
    assert_eq!(&map[..], &[5u8; PAGE][..], "DONTNEED on a read-only map keeps the file's bytes");
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert!(refusals[0].contains("mprotect") && refusals[0].contains("/db/data"), "{refusals:?}");
}

#[test]
fn anonymous_and_real_maps_are_untouched() {
    let real = tempfile::tempfile().unwrap();
    real.set_len(PAGE as u64).unwrap();
    let disk = strict_disk();
    let guard = session::install(disk, &[Path::new("/db")], 0, None);
    let mut anon = MmapMut::map_anon(3 * PAGE).unwrap();
    anon[PAGE] = 42;
    assert_eq!(anon[PAGE], 42);
    // SAFETY: a file this test owns.
    let mut shared = unsafe { MmapMut::map_mut(&real) }.unwrap();
    shared[7] = 7;
    shared.flush().unwrap();
    let mut back = [0u8; 8];
    real.read_exact_at(&mut back, 0).unwrap();
    assert_eq!(back[7], 7, "a real file's writable shared map is the kernel's, written through");
    assert!(
        maps::overlap(anon.as_ptr() as usize, 3 * PAGE).is_none()
            && maps::overlap(shared.as_ptr() as usize, PAGE).is_none()
    );
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn munmap_ends_a_map_or_any_part_of_it() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/data", [0u8; 3 * PAGE]).unwrap();
    let file = rw("/sim-db/db/data");
    // SAFETY: as above.
    let whole = unsafe { Mmap::map(&file) }.unwrap();
    let at = whole.as_ptr() as usize;
    assert!(maps::overlap(at, 1).is_some());
    drop(whole);
    assert!(maps::overlap(at, 3 * PAGE).is_none(), "memmap2's drop unmapped it");
    file.write_all_at(&[1u8; 8], 0).unwrap();
    // SAFETY: as above; its middle page is unmapped below, and only the
    // two left are read.
    let split = unsafe { Mmap::map(&file) }.unwrap();
    let at = split.as_ptr();
    // SAFETY: the middle page of the map just made, not read again.
    assert_eq!(unsafe { libc::munmap(at.add(PAGE) as *mut libc::c_void, PAGE) }, 0);
    file.write_all_at(&[2u8; 3 * PAGE], 0).unwrap();
    // SAFETY: the first and last pages are still mapped.
    let (first, last) = unsafe { (*at, *at.add(2 * PAGE + 9)) };
    assert_eq!((first, last), (2, 2), "both sides of the hole follow the write");
    assert!(maps::overlap(at as usize + PAGE, PAGE).is_none(), "the unmapped page is no map");
    drop(split); // memmap2's munmap of all three pages, the hole with them
    assert!(maps::overlap(at as usize, 3 * PAGE).is_none());
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn the_maps_end_with_the_session() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/data", [3u8; PAGE]).unwrap();
    let file = File::open("/sim-db/db/data").unwrap();
    // SAFETY: as above.
    let map = unsafe { Mmap::map(&file) }.unwrap();
    let at = map.as_ptr();
    assert_eq!(fault_at(at, false), None);
    assert!(guard.refusals().is_empty());
    drop(file);
    drop(guard);
    assert!(maps::overlap(at as usize, PAGE).is_none(), "the session's end took its maps");
    assert_eq!(fault_at(at, false), Some(libc::SIGSEGV), "a stale pointer faults, as after a crash");
    drop(map); // the engine's own munmap, later, releases the reservation
    assert!(maps::overlap(at as usize, PAGE).is_none());
}

#[test]
fn a_failed_write_is_read_back_into_the_map() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/torn", [b'a'; 2 * PAGE]).unwrap();
    let file = rw("/sim-db/db/torn");
    // SAFETY: (memmap2's contract) the file changes only through this test.
    let map = unsafe { Mmap::map(&file) }.unwrap();
    // The disk keeps the longest whole-sector prefix (512-byte sectors).
    disk.arm_fault_at(disk.io_count(), simulator::disk::ArmedFault::ShortWrite);
    let err = file.write_all_at(&[b'b'; 1100], 0).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(disk.armed_fault(), Some(true));
    assert_eq!(&map[..], &fs::read("/sim-db/db/torn").unwrap()[..], "the map is what a read returns after the fault");
    assert!(map[..1024].iter().all(|b| *b == b'b') && map[1024..].iter().all(|b| *b == b'a'), "the kept prefix only");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn a_map_follows_its_file_through_a_rename() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/old", b"before").unwrap();
    fs::write("/sim-db/db/new", b"replaced").unwrap();
    let file = File::open("/sim-db/db/old").unwrap();
    // SAFETY: as above.
    let map = unsafe { Mmap::map(&file) }.unwrap();
    fs::rename("/sim-db/db/old", "/sim-db/db/new").unwrap();
    fs::rename("/sim-db/db/new", "/sim-db/db/new").unwrap();
    rw("/sim-db/db/new").write_all_at(b"BEFORE", 0).unwrap();
    assert_eq!(&map[..], b"BEFORE", "a write to the renamed file's new name reaches its map");
    fs::write("/sim-db/db/old", b"another file").unwrap();
    assert_eq!(&map[..], b"BEFORE", "a new file at the old name is another file");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

/// Another thread's anonymous page, mapped and made inaccessible (what
/// std does for every new thread's signal stack guard) until `stop`: how
/// many of its `mprotect`s failed, of how many.
fn guard_pages_until(stop: &std::sync::atomic::AtomicBool) -> (usize, usize) {
    let (mut failed, mut made) = (0, 0);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let (rw, anon) = (libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS);
        // SAFETY: a fresh anonymous page of this thread's own, protected
        // and unmapped here, never read.
        unsafe {
            let page = libc::mmap(std::ptr::null_mut(), PAGE, rw, anon, -1, 0);
            assert_ne!(page, libc::MAP_FAILED);
            failed += usize::from(libc::mprotect(page, PAGE, libc::PROT_NONE) != 0);
            libc::munmap(page, PAGE);
        }
        made += 1;
    }
    (failed, made)
}

/// A map's `munmap` frees its pages and forgets its record as one step:
/// with the record forgotten only after the kernel freed the pages,
/// another thread's anonymous page, given the same address in between,
/// was taken for the simulated file's map and its `mprotect` refused
/// (found by jammdb's `explore --depth 2 --faults --jobs 2`: std's new
/// thread panicked, "failed to set up alternative stack guard page").
#[test]
fn a_freed_maps_pages_are_never_taken_for_it_by_another_thread() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/page", [5u8; PAGE]).unwrap();
    let file = File::open("/sim-db/db/page").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = std::thread::spawn({
        let stop = std::sync::Arc::clone(&stop);
        move || guard_pages_until(&stop)
    });
    for round in 0..20_000 {
        if round % 1000 == 0 {
            // Each round is a call of its own, as an engine's would be
            // (the layer counts a long run of calls in one as a livelock).
            crate::interpose::start_engine_call();
        }
        // SAFETY: as above.
        drop(unsafe { Mmap::map(&file) }.unwrap());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (failed, made) = other.join().unwrap();
    assert!(made > 0, "the other thread mapped nothing");
    assert_eq!(failed, 0, "{failed} of {made} anonymous pages were refused as a simulated file's map");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}
