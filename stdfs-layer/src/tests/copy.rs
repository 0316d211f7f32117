//! Copies and allocations on the simulated disk: `fs::copy`/`io::copy`,
//! `copy_file_range` and `sendfile` between simulated files served as a
//! read and a write (lost with the rest at a power loss when unsynced),
//! refused when one side is real, with the real file untouched;
//! `fallocate`/`posix_fallocate` served as size changes with the disk's
//! durability.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::demo::strict_disk;
use crate::session;

#[test]
fn std_copies_between_simulated_files_are_served() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/a", b"the bytes to copy").unwrap();
    fs::set_permissions("/sim-db/db/a", fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(fs::copy("/sim-db/db/a", "/sim-db/db/b").unwrap(), 17);
    assert_eq!(disk.files(Path::new("/db"))["b"], b"the bytes to copy", "the copy landed on the disk");
    assert_eq!(fs::metadata("/sim-db/db/b").unwrap().permissions().mode() & 0o777, 0o600, "fs::copy's fchmod");
    let mut from = File::open("/sim-db/db/a").unwrap();
    from.seek(SeekFrom::Start(4)).unwrap();
    let mut to = File::create("/sim-db/db/c").unwrap();
    assert_eq!(std::io::copy(&mut from, &mut to).unwrap(), 13, "io::copy from the reader's cursor");
    assert_eq!(disk.files(Path::new("/db"))["c"], b"bytes to copy");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
    disk.power_loss(1);
    assert!(disk.files(Path::new("/db")).is_empty(), "unsynced copies are lost like any unsynced write");
}

#[allow(unsafe_code)]
#[test]
fn copy_file_range_and_sendfile_move_offsets_as_the_kernel_does() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/src", b"0123456789").unwrap();
    let from = File::open("/sim-db/db/src").unwrap();
    let to = File::options().read(true).write(true).create(true).truncate(true).open("/sim-db/db/dst").unwrap();
    let (mut off_in, mut off_out) = (2i64, 1i64);
    // SAFETY: valid descriptors and offsets.
    let n = unsafe { libc::copy_file_range(from.as_raw_fd(), &mut off_in, to.as_raw_fd(), &mut off_out, 4, 0) };
    assert_eq!((n, off_in, off_out), (4, 6, 5), "explicit offsets move, the cursors do not");
    let mut at = 7i64;
    // SAFETY: as above; sendfile writes at the output's cursor (0).
    let sent = unsafe { libc::sendfile(to.as_raw_fd(), from.as_raw_fd(), &mut at, 100) };
    assert_eq!((sent, at), (3, 10), "a short copy at the input's end");
    assert_eq!(disk.files(Path::new("/db"))["dst"], b"78945", "sendfile wrote at the output's cursor, over the copy");
    assert!(guard.refusals().is_empty());
}

#[test]
fn a_copy_between_a_simulated_and_a_real_file_fails_loudly_and_the_real_file_is_untouched() {
    let real_dir = tempfile::tempdir().unwrap();
    let real_path = real_dir.path().join("real");
    fs::write(&real_path, b"real bytes").unwrap();
    let mut real_writer = File::options().write(true).open(&real_path).unwrap();
    let mut real_reader = File::open(&real_path).unwrap();
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/sim", b"simulated").unwrap();
    let mut sim = File::open("/sim-db/db/sim").unwrap();
    let out = std::io::copy(&mut sim, &mut real_writer).unwrap_err();
    let mut sim_out = File::create("/sim-db/db/in").unwrap();
    let into = std::io::copy(&mut real_reader, &mut sim_out).unwrap_err();
    assert_eq!((out.raw_os_error(), into.raw_os_error()), (Some(libc::EIO), Some(libc::EIO)));
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals.iter().all(|r| r.contains("copy_file_range") && r.contains("one simulated and one real")));
    assert_eq!(disk.files(Path::new("/db"))["in"], b"", "no real byte reached the simulated disk");
    drop((sim, sim_out, guard));
    let mut now = String::new();
    File::open(&real_path).unwrap().read_to_string(&mut now).unwrap();
    assert_eq!(now, "real bytes", "no simulated byte reached the real file");
}

#[allow(unsafe_code)]
#[test]
fn fallocate_extends_keeps_size_or_punches_and_unsynced_length_is_lost() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"abcdefgh").unwrap();
    let file = File::options().read(true).write(true).open("/sim-db/db/f").unwrap();
    let fd = file.as_raw_fd();
    file.sync_all().unwrap();
    File::open("/sim-db/db").unwrap().sync_all().unwrap();
    // SAFETY: plain calls on a valid descriptor.
    unsafe {
        assert_eq!(libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, 4096), 0);
        assert_eq!(file.metadata().unwrap().len(), 8, "KEEP_SIZE changes nothing readable");
        assert_eq!(libc::fallocate(fd, libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, 2, 3), 0);
        assert_eq!(libc::posix_fallocate(fd, 4, 12), 0, "mode 0 to 16 bytes");
        assert_eq!(libc::posix_fallocate(fd, -1, 1), libc::EINVAL, "its failure is its value");
        assert_eq!(libc::fallocate(fd, libc::FALLOC_FL_COLLAPSE_RANGE, 0, 4096), -1);
    }
    assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOTSUP));
    let mut back = [0u8; 16];
    file.read_exact_at(&mut back, 0).unwrap();
    assert_eq!(&back, b"ab\0\0\0fgh\0\0\0\0\0\0\0\0", "a hole of zeros, then zeros to the new length");
    let refusals = guard.refusals();
    assert!(refusals.len() == 1 && refusals[0].contains("fallocate mode"), "{refusals:?}");
    disk.power_loss(1);
    assert_eq!(disk.files(Path::new("/db"))["f"], b"abcdefgh", "the unsynced hole and length are lost");
}

#[allow(unsafe_code)]
#[test]
fn truncate_by_path_is_served_and_refused_on_a_real_path() {
    let real = tempfile::NamedTempFile::new().unwrap();
    fs::write(real.path(), b"real bytes").unwrap();
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"0123456789").unwrap();
    let sim = std::ffi::CString::new("/sim-db/db/f").unwrap();
    let real_c = std::ffi::CString::new(real.path().as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid C strings.
    let (on_sim, on_real) = unsafe { (libc::truncate(sim.as_ptr(), 3), libc::truncate(real_c.as_ptr(), 0)) };
    assert_eq!((on_sim, on_real), (0, -1));
    assert_eq!(fs::read("/sim-db/db/f").unwrap(), b"012");
    let refusals = guard.refusals();
    assert!(refusals.len() == 1 && refusals[0].contains("truncate"), "{refusals:?}");
    drop(guard);
    assert_eq!(fs::read(real.path()).unwrap(), b"real bytes", "the real file is untouched");
}
