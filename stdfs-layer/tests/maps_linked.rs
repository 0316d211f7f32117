//! A memory map of a simulated file in a binary that links the layer, as
//! a user's engine makes one (`memmap2`). A binary of its own: the
//! orphan check of `linked.rs` needs no other run live in its process.

use std::path::Path;

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
