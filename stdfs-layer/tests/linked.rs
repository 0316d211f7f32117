//! A test binary outside the crate that names it, as a user's test does:
//! linking the rlib gives this binary the layer's file functions ahead of
//! glibc's (std's own calls land on the simulated disk), and a thread
//! serving no run is refused a path under the root.

use std::io::ErrorKind;
use std::path::Path;

use simkit::vfs::Vfs;

#[test]
fn std_fs_calls_of_a_binary_that_links_the_layer_are_served_on_the_simulated_disk() {
    let disk = stdfs_layer::demo::strict_disk();
    let guard = stdfs_layer::install(disk.clone(), &[Path::new("/db")], 0, None);
    std::fs::write("/sim-db/db/file", b"served").expect("a served write");
    let names: Vec<_> = disk.list_dir(Path::new("/db")).unwrap();
    assert_eq!(names, ["file"], "std's write landed on the simulated disk");
    assert_eq!(std::fs::read("/sim-db/db/file").unwrap(), b"served");
    assert!(guard.refusals().is_empty());
    drop(guard);
    let orphan = std::fs::metadata("/sim-db/db/file").unwrap_err();
    assert_eq!(orphan.raw_os_error(), Some(libc::EPERM), "a thread serving no run is refused: {orphan}");
    assert_ne!(orphan.kind(), ErrorKind::NotFound);
    assert!(stdfs_layer::orphan_refusals().iter().any(|r| r.contains("serves no simulated run")));
}

/// An engine's read-only map (`memmap2`) of a simulated file, in a binary
/// that links the layer: the file's bytes, and a later `pwrite` seen
/// through the live map.
#[test]
#[allow(unsafe_code)]
fn a_memory_map_of_a_simulated_file_follows_its_writes() {
    use std::os::unix::fs::FileExt;
    let disk = stdfs_layer::demo::strict_disk();
    let guard = stdfs_layer::install(disk, &[Path::new("/db")], 0, None);
    std::fs::write("/sim-db/db/mapped", b"mapped bytes").unwrap();
    let file = std::fs::OpenOptions::new().read(true).write(true).open("/sim-db/db/mapped").unwrap();
    // SAFETY: (memmap2's contract) the file changes only through this test.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    assert_eq!(&map[..], b"mapped bytes");
    file.write_all_at(b"MAPPED", 0).unwrap();
    assert_eq!(&map[..], b"MAPPED bytes", "the layer's write reached the live map");
    drop(map);
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}
