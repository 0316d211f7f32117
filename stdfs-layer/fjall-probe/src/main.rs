//! fjall 3 on the simulated disk with rustix's raw system calls trapped
//! (STDFS.md, "System calls made without libc"). For each seed of the
//! command line (default 0..5): open `/sim-db/db/fjall` on a `Worker`
//! over a fault-free disk with strict power loss, one keyspace, 200
//! inserts of 100 bytes, `persist(SyncAll)`, a read back, drop; then a
//! power loss, a reopen on the same disk and the same read. Every answer
//! is taken `unless_refused` (a refusal fails the probe). Prints, per
//! seed, the raw calls trapped, the files fjall left and a digest of
//! their bytes (the same seed must give the same digest). Exit 0 when
//! every seed passed.

use std::path::PathBuf;
use std::sync::Arc;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use simulator::disk::SimVfs;
use stdfs_layer::{Place, Worker};

const ROWS: u32 = 200;

struct Open {
    db: Database,
    items: Keyspace,
}

fn open() -> fjall::Result<Open> {
    let db = Database::builder("/sim-db/db/fjall").open()?;
    let items = db.keyspace("items", KeyspaceCreateOptions::default)?;
    Ok(Open { db, items })
}

fn key(i: u32) -> String {
    format!("key{i:05}")
}

fn value(seed: u64, i: u32) -> Vec<u8> {
    vec![(seed as u8).wrapping_add(i as u8); 100]
}

/// A digest of every durable file on the disk, path and bytes (FNV-1a).
fn digest(disk: &SimVfs) -> (usize, u64) {
    let image = disk.snapshot().durable_image();
    let files = image.files();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, bytes) in &files {
        for b in path.as_os_str().as_encoded_bytes().iter().chain(bytes.iter()) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    (files.len(), h)
}

fn place(disk: &Arc<SimVfs>, seed: u64) -> Place {
    Place { vfs: disk.clone(), dir: PathBuf::from("/db"), entropy_seed: seed, plant: None }
}

fn run(seed: u64) -> Result<String, String> {
    let disk = stdfs_layer::demo::strict_disk();
    let trapped_before = stdfs_layer::raw_calls_trapped();
    let worker = Worker::start(place(&disk, seed), open).unless_refused().map_err(|e| format!("open: {e}"))?;
    let read = worker
        .call(move |s: &mut Open| -> fjall::Result<Option<Vec<u8>>> {
            for i in 0..ROWS {
                s.items.insert(key(i), value(seed, i))?;
            }
            s.db.persist(PersistMode::SyncAll)?;
            Ok(s.items.get(key(100))?.map(|v| v.to_vec()))
        })
        .unless_refused()
        .map_err(|e| format!("write: {e}"))?;
    if read != Some(value(seed, 100)) {
        return Err(format!("read back {read:?}"));
    }
    drop(worker);
    if std::env::var_os("FJALL_PROBE_LIST").is_some() {
        for (path, bytes) in disk.snapshot().durable_image().files() {
            let used = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
            println!("  durable {} ({} bytes, nonzero up to {used})", path.display(), bytes.len());
        }
    }
    let (durable_files, durable_digest) = digest(&disk);
    if std::env::var_os("FJALL_PROBE_NO_CRASH").is_none() {
        disk.power_loss(seed);
    }
    let worker = Worker::start(place(&disk, seed), open).unless_refused().map_err(|e| format!("reopen: {e}"))?;
    let after = worker
        .call(|s: &mut Open| -> fjall::Result<(Option<Vec<u8>>, usize)> {
            Ok((s.items.get(key(ROWS - 1))?.map(|v| v.to_vec()), s.items.len()?))
        })
        .unless_refused()
        .map_err(|e| format!("read after power loss: {e}"))?;
    drop(worker);
    if after != (Some(value(seed, ROWS - 1)), ROWS as usize) {
        return Err(format!("after the power loss: {:?} rows, last {:?}", after.1, after.0.map(|v| v.len())));
    }
    let trapped = stdfs_layer::raw_calls_trapped() - trapped_before;
    Ok(format!("{durable_files} durable files, digest {durable_digest:016x}, {trapped} raw calls trapped"))
}

fn main() {
    let seeds: Vec<u64> = match std::env::args().nth(1) {
        Some(range) => {
            let (a, b) = range.split_once("..").expect("seeds as A..B");
            (a.parse().unwrap()..b.parse().unwrap()).collect()
        }
        None => (0..5).collect(),
    };
    assert!(stdfs_layer::real_root_is_absent(), "the real /sim-db must not exist");
    let mut failed = 0;
    for seed in seeds {
        match run(seed) {
            Ok(line) => println!("seed {seed}: ok: {line}"),
            Err(why) => {
                failed += 1;
                println!("seed {seed}: FAILED: {why}");
            }
        }
    }
    let orphans = stdfs_layer::orphan_refusals();
    if !orphans.is_empty() {
        println!("orphan refusals: {orphans:?}");
    }
    std::process::exit(i32::from(failed > 0 || !orphans.is_empty()));
}
