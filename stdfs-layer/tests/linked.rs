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
