//! A descriptor an ended run left behind names nothing of the next run in
//! its slot: the next session numbers its descriptors from where the last
//! one stopped. One test in a binary of its own, so both runs take the
//! same slot (the first free one) and the stale number would alias.

use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;

use simkit::vfs::Vfs;
use stdfs_layer::demo::strict_disk;

#[test]
fn a_stale_descriptor_of_an_ended_run_is_bad_in_the_next_run_of_its_slot() {
    let earlier = stdfs_layer::install(strict_disk(), &[Path::new("/db")], 0, None);
    let stale = File::create("/sim-db/db/earlier").unwrap().as_raw_fd();
    drop(earlier);
    let disk = strict_disk();
    let later = stdfs_layer::install(disk.clone(), &[Path::new("/db")], 0, None);
    let file = File::create("/sim-db/db/later").unwrap();
    assert_ne!(file.as_raw_fd(), stale, "the later run's first file does not take the stale number");
    // SAFETY: the number is only written through, never closed (the
    // `ManuallyDrop`), as a program that kept a stale descriptor would.
    let mut kept = ManuallyDrop::new(unsafe { File::from_raw_fd(stale) });
    let err = kept.write_all(b"into the wrong run").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EBADF), "{err}");
    drop(file);
    assert_eq!(disk.list_dir(Path::new("/db")).unwrap(), ["later"]);
    assert!(disk.files(Path::new("/db"))["later"].is_empty(), "nothing reached the later run's file");
    drop(later);
}
