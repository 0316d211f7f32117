//! System calls made without libc's functions (rustix's `linux_raw`
//! backend, inline `syscall` instructions; libc's generic `syscall()`):
//! served on a run's thread as their libc forms are, refused loudly where
//! the layer has no function for them, and untouched outside a run.

use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags, CWD};
use rustix::io::Errno as RawErrno;

use crate::demo::strict_disk;
use crate::interpose::raw_trap::trapped_here;
use crate::session;

fn names(disk: &simulator::disk::SimVfs, dir: &str) -> Vec<String> {
    disk.files(Path::new(dir)).keys().cloned().collect()
}

#[test]
fn tempfile_persist_reopen_and_tempfile_in_are_served_on_the_simulated_disk() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let mut temp = tempfile::NamedTempFile::new_in("/sim-db/db").unwrap();
    temp.write_all(b"first").unwrap();
    let mut again = temp.reopen().expect("reopen: a raw fstat of both descriptors, served");
    let mut read = String::new();
    again.read_to_string(&mut read).unwrap();
    assert_eq!(read, "first");
    temp.persist("/sim-db/db/kept").expect("persist: a raw renameat, served");
    let mut second = tempfile::NamedTempFile::new_in("/sim-db/db").unwrap();
    second.write_all(b"second").unwrap();
    let clash = second.persist_noclobber("/sim-db/db/kept").expect_err("the name is taken");
    assert_eq!(clash.error.raw_os_error(), Some(libc::EEXIST), "{}", clash.error);
    clash.file.persist_noclobber("/sim-db/db/other").expect("persist_noclobber: renameat2 NOREPLACE, served");
    let mut unnamed = tempfile::tempfile_in("/sim-db/db").expect("tempfile_in: O_TMPFILE unsupported, a named file");
    unnamed.write_all(b"unnamed").unwrap();
    unnamed.seek(SeekFrom::Start(0)).unwrap();
    let mut back = String::new();
    unnamed.read_to_string(&mut back).unwrap();
    assert_eq!(back, "unnamed");
    assert_eq!(names(&disk, "/db"), ["kept", "other"], "the disk holds the persisted names, no temp file");
    assert_eq!(disk.files(Path::new("/db"))["kept"], b"first");
    assert_eq!(disk.files(Path::new("/db"))["other"], b"second");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
    disk.power_loss(1);
    assert!(names(&disk, "/db").is_empty(), "renames never made durable are lost: they went through the disk");
}

#[test]
fn raw_rustix_file_calls_in_a_run_are_served() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let trapped_before = trapped_here();
    let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(CWD, "/sim-db/db/a", flags, Mode::from_raw_mode(0o644)).expect("a raw openat");
    assert!(fd.as_raw_fd() >= session::FAKE_FD_BASE, "a simulated descriptor");
    assert_eq!(rustix::io::write(&fd, b"raw bytes").unwrap(), 9);
    rustix::fs::fsync(&fd).expect("a raw fsync");
    assert_eq!(rustix::fs::fstat(&fd).unwrap().st_size, 9);
    drop(fd);
    rustix::fs::renameat(CWD, "/sim-db/db/a", CWD, "/sim-db/db/b").expect("a raw renameat");
    let dir = rustix::fs::openat(CWD, "/sim-db/db", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
    rustix::fs::fsync(&dir).expect("a raw directory fsync");
    let listed: Vec<String> = rustix::fs::Dir::read_from(&dir)
        .expect("a raw getdents64 listing")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, [".", "..", "b"]);
    let x = rustix::fs::statx(CWD, "/sim-db/db/b", rustix::fs::AtFlags::empty(), rustix::fs::StatxFlags::SIZE);
    assert_eq!(x.unwrap().stx_size, 9);
    rustix::fs::mkdirat(CWD, "/sim-db/db/sub", Mode::from_raw_mode(0o755)).unwrap();
    assert!(trapped_here() - trapped_before >= 10, "each raw call above was trapped");
    disk.power_loss(2);
    assert_eq!(disk.files(Path::new("/db"))["b"], b"raw bytes", "synced, renamed and the directory synced: durable");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn a_raw_call_the_layer_has_no_function_for_is_refused_loudly() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"x").unwrap();
    let file = fs::File::open("/sim-db/db/f").unwrap();
    let err = rustix::fs::fchown(&file, None, None).unwrap_err();
    assert_eq!(err, RawErrno::NOTSUP);
    let err = rustix::fs::statfs("/sim-db/db").unwrap_err();
    assert_eq!(err, RawErrno::NOTSUP);
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals.iter().all(|r| r.contains("without libc's function")), "{refusals:?}");
}

#[test]
fn a_raw_change_to_a_real_path_from_a_run_thread_is_refused_and_a_read_passes() {
    let real = tempfile::tempdir().unwrap();
    let path = real.path().join("real-file");
    fs::write(&path, b"on the real disk").unwrap();
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let err = rustix::fs::renameat(CWD, &path, CWD, real.path().join("moved")).unwrap_err();
    assert_eq!(err, RawErrno::PERM, "as libc's rename from a run's thread");
    let fd = rustix::fs::openat(CWD, &path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap();
    assert!(fd.as_raw_fd() < session::FAKE_FD_BASE, "a real descriptor");
    let mut buf = [0u8; 16];
    assert_eq!(rustix::io::read(&fd, &mut buf).unwrap(), 16, "a raw read of a real file passes");
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    drop(guard);
    assert_eq!(fs::read(&path).unwrap(), b"on the real disk");
}

/// Raw calls creating, writing, syncing and renaming a real file, checked
/// on the real disk; how many of them this thread had trapped.
fn real_round(dir: &Path) -> u64 {
    let (a, b) = (dir.join("a"), dir.join("b"));
    let trapped_before = trapped_here();
    let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(CWD, &a, flags, Mode::from_raw_mode(0o644)).unwrap();
    rustix::io::write(&fd, b"real").unwrap();
    rustix::fs::fsync(&fd).unwrap();
    drop(fd);
    rustix::fs::renameat(CWD, &a, CWD, &b).expect("the real kernel renames");
    let trapped = trapped_here() - trapped_before;
    assert_eq!(fs::read(&b).unwrap(), b"real");
    fs::remove_file(&b).unwrap();
    trapped
}

#[test]
fn outside_a_run_raw_calls_reach_the_real_kernel() {
    let real = tempfile::tempdir().unwrap();
    let dir = real.path().to_path_buf();
    // A thread that served a run and ended it: no longer trapped.
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let during = trapped_here();
    let _ = rustix::fs::statx(CWD, "/sim-db/db", rustix::fs::AtFlags::empty(), rustix::fs::StatxFlags::BASIC_STATS);
    assert_eq!(trapped_here(), during + 1, "during the run, trapped");
    drop(guard);
    assert_eq!(real_round(&dir), 0, "after the run, the kernel's");
    // A thread that never served one.
    let fresh = std::thread::spawn(move || real_round(&dir)).join().unwrap();
    assert_eq!(fresh, 0, "a thread serving no run, the kernel's");
    let unseen = rustix::fs::openat(CWD, "/sim-db/db/x", OFlags::RDONLY, Mode::empty()).unwrap_err();
    assert_eq!(unseen, RawErrno::NOENT, "no run: the kernel, which has no /sim-db");
}

#[test]
fn a_raw_syscall_through_libc_on_a_simulated_fd_is_served() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let file = fs::File::create("/sim-db/db/raw").unwrap();
    // SAFETY: the buffer is valid for its length; the call only reads it.
    #[allow(unsafe_code)]
    let written = unsafe { libc::syscall(libc::SYS_write, file.as_raw_fd(), b"seen".as_ptr(), 4usize) };
    assert_eq!(written, 4);
    assert_eq!(disk.files(Path::new("/db"))["raw"], b"seen");
    assert!(guard.refusals().is_empty());
}

#[test]
fn a_raw_call_from_a_thread_the_engine_starts_is_served() {
    let disk = strict_disk();
    let place = crate::Place { vfs: disk.clone(), dir: "/db".into(), entropy_seed: 3, plant: None };
    let worker = crate::Worker::start(place, || Ok::<(), ()>(())).unless_refused().expect("set up");
    let trapped = worker
        .call(|_| {
            fs::write("/sim-db/db/from", b"moved by a thread of the engine").unwrap();
            std::thread::spawn(|| {
                let before = trapped_here();
                rustix::fs::renameat(CWD, "/sim-db/db/from", CWD, "/sim-db/db/to").expect("served");
                trapped_here() - before
            })
            .join()
            .unwrap()
        })
        .unless_refused();
    assert_eq!(trapped, 1, "the engine's thread traps its raw calls");
    drop(worker);
    assert_eq!(names(&disk, "/db"), ["to"]);
}

/// A raw `getdents64` of `fd` into a fresh buffer: the bytes it filled.
#[allow(unsafe_code)]
fn getdents(fd: i32) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: the buffer is valid for its length.
    let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
    assert!(n >= 0, "{}", std::io::Error::last_os_error());
    buf.truncate(n as usize);
    buf
}

#[allow(unsafe_code)]
#[test]
fn a_directory_listing_rewinds_and_a_seek_into_it_is_refused() {
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"f").unwrap();
    let dir = fs::File::open("/sim-db/db").unwrap();
    let fd = dir.as_raw_fd();
    let first = getdents(fd);
    assert!(!first.is_empty());
    assert!(getdents(fd).is_empty(), "the listing's end");
    // SAFETY: plain calls on a descriptor this test owns.
    assert_eq!(unsafe { libc::lseek(fd, 0, libc::SEEK_SET) }, 0);
    assert_eq!(getdents(fd), first, "a rewind lists again");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::lseek(fd, 24, libc::SEEK_SET) }, -1);
    assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOTSUP));
    let refusals = guard.refusals();
    assert!(refusals.len() == 1 && refusals[0].contains("only a rewind"), "{refusals:?}");
}
