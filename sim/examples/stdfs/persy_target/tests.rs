//! persy through the layer, without the kit: the same seed writes the
//! same bytes (persy mixes `rand::random` into the segment ids of its
//! indexes, `src/address/segment.rs` line 422), another seed other bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::engine;
use stdfs_layer::demo::strict_disk;
use stdfs_layer::{Place, Worker};

/// The database's files after the application's setup, on a fresh disk,
/// with the engine's randomness from `entropy_seed`.
fn created_bytes(entropy_seed: u64) -> BTreeMap<String, Vec<u8>> {
    let disk = strict_disk();
    let place = Place { vfs: disk.clone(), dir: PathBuf::from("/db"), entropy_seed, plant: None };
    let path = PathBuf::from("/sim-db/db/data.persy");
    let served = Worker::<()>::start(place, move || engine::create(&path));
    assert!(served.refusals.is_empty(), "{:?}", served.refusals);
    served.value.expect("persy creates its file on the simulated disk");
    disk.files(Path::new("/db"))
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_another_seed_other_bytes() {
    let (first, again, other) = (created_bytes(1), created_bytes(1), created_bytes(2));
    assert_eq!(first.keys().collect::<Vec<_>>(), ["data.persy"]);
    assert!(first["data.persy"].len() >= 4096, "persy wrote its pages");
    assert!(first == again, "one seed, one file, byte for byte");
    assert!(first != other, "the segment ids come from the seed's stream, so another seed writes other bytes");
}
