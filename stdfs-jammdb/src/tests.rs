//! jammdb on the kit, in the test profile: a few seeds run clean and a
//! seed's second run in this process gives the same trace. The sweeps'
//! figures are JAMMDB.md's; `make stdfs` replays `corpus/jammdb/`.

use stdfs_layer::kit::{run_seed, Kit, KitSettings};

use super::JammdbAdapter;

#[test]
fn seeds_run_clean_and_a_second_run_agrees() {
    assert!(stdfs_layer::real_root_is_absent(), "{} exists on the real disk", stdfs_layer::ROOT);
    let kit = Kit::new(JammdbAdapter, KitSettings::default());
    for seed in 0..4 {
        let first = run_seed(&kit, seed, false);
        assert!(first.failure.is_none(), "jammdb seed {seed}: {:?}", first.failure);
        assert!(first.counters.ops > 0, "jammdb seed {seed} ran no operation");
        let again = run_seed(&kit, seed, false);
        assert_eq!(first.trace_hash, again.trace_hash, "jammdb seed {seed}: two runs traced otherwise");
    }
    let orphans = stdfs_layer::orphan_refusals();
    assert!(orphans.is_empty(), "refused outside any one run: {orphans:?}");
}

/// JAMMDB.md finding 4: every page jammdb writes starts with a
/// `#[repr(C)]` header (`Page`, `src/page.rs` lines 40–51) whose 7
/// padding bytes after `page_type` are never written, in a page taken
/// uninitialised from a `bumpalo` arena (`TxFreelist::allocate`,
/// `src/freelist.rs` lines 62–64). Those bytes reach the file. With the
/// heap dirtied on the engine's thread before each commit, they must
/// still read zeros: the layer's allocator (`stdfs_layer::ZeroedHeap`)
/// fills every allocation, so what earlier runs left in the process
/// never reaches a run's disk. Without it they read 0x77.
#[test]
fn pages_carry_none_of_what_the_heap_held_before() {
    use std::path::Path;
    let disk = stdfs_layer::demo::strict_disk();
    let guard = stdfs_layer::install(disk, &[Path::new("/db")], 0, None);
    let path = Path::new("/sim-db/db/jammdb.db");
    let settings = crate::Settings { page_bytes: 1024, initial_pages: 4, strict: false, populate: false };
    crate::engine::Engine::create(path, settings).expect("the database is made");
    let mut engine = crate::engine::Engine::open(path, settings).expect("the database opens");
    for round in 0..3u8 {
        let dirt: Vec<Vec<u8>> = (0..2000).map(|i| vec![0x77u8; 16 + (i % 64) * 16]).collect();
        drop(dirt);
        engine.put(0, &[round], Some(b"value")).expect("a put");
        engine.commit().expect("a commit");
    }
    drop(engine);
    let bytes = std::fs::read(path).expect("the file reads back");
    let written: Vec<&[u8]> = bytes.chunks(1024).filter(|page| matches!(page[8], 1 | 2 | 4)).collect();
    assert!(written.len() >= 4, "the commits wrote tree and freelist pages");
    for page in written {
        assert_eq!(&page[9..16], &[0u8; 7], "a page header's padding holds bytes the heap held before");
    }
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}
