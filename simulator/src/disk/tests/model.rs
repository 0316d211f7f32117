//! Without a crash the simulated disk is a plain file system: random
//! operation sequences on it and on the engine's `MemVfs` give the same
//! answers, errors included.

use std::io;
use std::path::PathBuf;

use proptest::prelude::*;
use vfs::{MemVfs, OpenMode, Vfs, VfsFile};

use super::{dir, pattern, sector_sizes};
use crate::disk::{CrashMode, DiskConfig, SimVfs};
use crate::trace::Trace;

const NAMES: [&str; 3] = ["a", "b", "c"];
const SLOTS: usize = 3;

/// Index `NAMES.len()` is a file in a directory that does not exist.
fn file_path(file: usize) -> PathBuf {
    match NAMES.get(file) {
        Some(name) => dir().join(name),
        None => PathBuf::from("/missing/x"),
    }
}

#[derive(Clone, Debug)]
enum Op {
    Open { slot: usize, file: usize, mode: OpenMode },
    Close { slot: usize },
    Write { slot: usize, offset_bytes: u64, len: usize, seed: u8 },
    SetLen { slot: usize, len_bytes: u64 },
    Read { slot: usize, offset_bytes: u64, len: usize },
    Len { slot: usize },
    Sync { slot: usize },
    Rename { from: usize, to: usize },
    Unlink { file: usize },
    ListDir { missing: bool },
    SyncDir { missing: bool },
    Map { file: usize },
    ReadOnce { file: usize },
    Exists { file: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let file = 0..=NAMES.len();
    let mode =
        prop_oneof![Just(OpenMode::Read), Just(OpenMode::Write), Just(OpenMode::Create), Just(OpenMode::Truncate)];
    prop_oneof![
        3 => (slot.clone(), file.clone(), mode).prop_map(|(slot, file, mode)| Op::Open { slot, file, mode }),
        1 => slot.clone().prop_map(|slot| Op::Close { slot }),
        5 => (slot.clone(), 0..3000u64, 0..1500usize, any::<u8>())
            .prop_map(|(slot, offset_bytes, len, seed)| Op::Write { slot, offset_bytes, len, seed }),
        1 => (slot.clone(), 0..3000u64).prop_map(|(slot, len_bytes)| Op::SetLen { slot, len_bytes }),
        3 => (slot.clone(), 0..3500u64, 0..1500usize).prop_map(|(slot, offset_bytes, len)| Op::Read {
            slot,
            offset_bytes,
            len
        }),
        1 => slot.clone().prop_map(|slot| Op::Len { slot }),
        1 => slot.prop_map(|slot| Op::Sync { slot }),
        // Renames stay inside /db: MemVfs would accept a target in a
        // missing directory, which no real file system does.
        1 => (file.clone(), 0..NAMES.len()).prop_map(|(from, to)| Op::Rename { from, to }),
        1 => file.clone().prop_map(|file| Op::Unlink { file }),
        1 => any::<bool>().prop_map(|missing| Op::ListDir { missing }),
        1 => any::<bool>().prop_map(|missing| Op::SyncDir { missing }),
        1 => file.clone().prop_map(|file| Op::Map { file }),
        1 => file.clone().prop_map(|file| Op::ReadOnce { file }),
        1 => file.prop_map(|file| Op::Exists { file }),
    ]
}

/// What an operation observably did: a value or an error kind.
type Seen = Result<Vec<u8>, io::ErrorKind>;

fn seen<T>(result: io::Result<T>, show: impl FnOnce(T) -> Vec<u8>) -> Seen {
    result.map(show).map_err(|e| e.kind())
}

fn dir_arg(missing: bool) -> PathBuf {
    if missing {
        PathBuf::from("/missing")
    } else {
        dir().to_path_buf()
    }
}

/// Apply `op` to one file system and its handle slots.
fn apply(vfs: &dyn Vfs, slots: &mut [Option<Box<dyn VfsFile>>], op: &Op) -> Option<Seen> {
    let nothing = |()| Vec::new();
    let seen = match op {
        Op::Open { slot, file, mode } => {
            let opened = vfs.open(&file_path(*file), *mode);
            let kind = opened.as_ref().err().map(|e| e.kind());
            slots[*slot] = opened.ok();
            kind.map_or(Ok(Vec::new()), Err)
        }
        Op::Close { slot } => {
            slots[*slot] = None;
            Ok(Vec::new())
        }
        Op::Write { slot, offset_bytes, len, seed } => {
            seen(slots[*slot].as_mut()?.write_at(*offset_bytes, &pattern(*seed, *len)), nothing)
        }
        Op::SetLen { slot, len_bytes } => seen(slots[*slot].as_mut()?.set_len(*len_bytes), nothing),
        Op::Read { slot, offset_bytes, len } => {
            let mut buf = vec![0u8; *len];
            let n = slots[*slot].as_ref()?.read_at(*offset_bytes, &mut buf);
            seen(n, |n| buf[..n].to_vec())
        }
        Op::Len { slot } => seen(slots[*slot].as_ref()?.len(), |len| len.to_le_bytes().to_vec()),
        Op::Sync { slot } => seen(slots[*slot].as_mut()?.sync(), nothing),
        Op::Rename { from, to } => seen(vfs.rename(&file_path(*from), &file_path(*to)), nothing),
        Op::Unlink { file } => seen(vfs.unlink(&file_path(*file)), nothing),
        Op::ListDir { missing } => {
            seen(vfs.list_dir(&dir_arg(*missing)), |names| names.join(std::ffi::OsStr::new("/")).into_encoded_bytes())
        }
        Op::SyncDir { missing } => seen(vfs.sync_dir(&dir_arg(*missing)), nothing),
        Op::Map { file } => seen(vfs.map_readonly(&file_path(*file)), |map| map.to_vec()),
        Op::ReadOnce { file } => seen(vfs.read_once(&file_path(*file)), |bytes| bytes.to_vec()),
        Op::Exists { file } => seen(vfs.exists(&file_path(*file)), |yes| vec![u8::from(yes)]),
    };
    Some(seen)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn without_a_crash_it_behaves_like_mem_vfs(
        ops in prop::collection::vec(op(), 1..60),
        sector_bytes in sector_sizes(),
    ) {
        let mem = MemVfs::new();
        let sim = SimVfs::new(DiskConfig::fault_free(CrashMode::Reorder, sector_bytes), Trace::new(false));
        mem.create_dir_all(dir()).unwrap();
        sim.create_dir_all(dir()).unwrap();
        let mut mem_slots: Vec<Option<Box<dyn VfsFile>>> = (0..SLOTS).map(|_| None).collect();
        let mut sim_slots: Vec<Option<Box<dyn VfsFile>>> = (0..SLOTS).map(|_| None).collect();
        for (step, op) in ops.iter().enumerate() {
            let expected = apply(&mem, &mut mem_slots, op);
            let got = apply(&sim, &mut sim_slots, op);
            prop_assert_eq!(got, expected, "step {}: {:?}", step, op);
        }
        for file in 0..=NAMES.len() {
            let expected = mem.map_readonly(&file_path(file)).map(|m| m.to_vec()).map_err(|e| e.kind());
            let got = sim.map_readonly(&file_path(file)).map(|m| m.to_vec()).map_err(|e| e.kind());
            prop_assert_eq!(got, expected);
        }
        drop(sim_slots);
        let live_bytes: u64 = NAMES
            .iter()
            .filter_map(|name| mem.map_readonly(&dir().join(name)).ok())
            .map(|map| map.len() as u64)
            .sum();
        // Unlinked files whose unlink is durable and that are closed are
        // freed; after a final sync_dir nothing but the live files remain.
        sim.sync_dir(dir()).unwrap();
        prop_assert_eq!(sim.volatile_bytes(), live_bytes);
    }
}

/// The harness's look at a directory says which entries a power loss
/// would keep: a create is durable only once its directory is fsynced,
/// and a rename's new name likewise (the seq ledger binds only those).
#[test]
fn visit_entries_tells_a_durable_name_from_a_pending_one() {
    let sim = SimVfs::new(DiskConfig::fault_free(CrashMode::Reorder, 512), Trace::new(false));
    sim.create_dir_all(dir()).unwrap();
    let seen = |sim: &SimVfs| {
        let mut seen = Vec::new();
        sim.visit_entries(dir(), |entry| seen.push((entry.name.to_string(), entry.durable())));
        seen
    };
    drop(sim.open(&dir().join("a"), OpenMode::Create).unwrap());
    assert_eq!(seen(&sim), vec![("a".to_string(), false)]);
    sim.sync_dir(dir()).unwrap();
    assert_eq!(seen(&sim), vec![("a".to_string(), true)]);
    sim.rename(&dir().join("a"), &dir().join("b")).unwrap();
    assert_eq!(seen(&sim), vec![("b".to_string(), false)]);
    sim.sync_dir(dir()).unwrap();
    assert_eq!(seen(&sim), vec![("b".to_string(), true)]);
}

/// The disk's own whole-file read is the generic one I/O for I/O (an
/// open, a length, one read; no read of an empty file), so a trace cannot
/// tell which of the two a store's open used.
#[test]
fn read_once_is_the_generic_whole_file_read_io_for_io() {
    let sim = SimVfs::new(DiskConfig::fault_free(CrashMode::Reorder, 512), Trace::new(false));
    sim.create_dir_all(dir()).unwrap();
    for (name, bytes) in [("empty", &b""[..]), ("full", &pattern(3, 700)[..])] {
        let path = dir().join(name);
        let mut file = sim.open(&path, OpenMode::Create).unwrap();
        file.write_at(0, bytes).unwrap();
        drop(file);
        let before = sim.io_count();
        let read = sim.read_once(&path).unwrap();
        let own_ios = sim.io_count() - before;
        let file = sim.open(&path, OpenMode::Read).unwrap();
        let mut generic = vec![0u8; usize::try_from(file.len().unwrap()).unwrap()];
        vfs::read_exact_at(file.as_ref(), 0, &mut generic).unwrap();
        drop(file);
        assert_eq!(&read[..], bytes);
        assert_eq!(generic, bytes);
        assert_eq!(own_ios, sim.io_count() - before - own_ios, "{name}");
        assert_eq!(own_ios, if bytes.is_empty() { 2 } else { 3 }, "{name}");
    }
}

/// The names counter moves with every change to entries or to their
/// durability, and with nothing that touches only files' bytes (a check
/// of names skips its walk on it).
#[test]
fn names_changes_counts_names_and_never_bytes_alone() {
    let sim = SimVfs::new(DiskConfig::fault_free(CrashMode::Reorder, 512), Trace::new(false));
    sim.create_dir_all(dir()).unwrap();
    let moved = |sim: &SimVfs, change: &dyn Fn(&SimVfs)| {
        let before = sim.names_changes();
        change(sim);
        sim.names_changes() != before
    };
    let path = dir().join("a");
    assert!(moved(&sim, &|sim| drop(sim.open(&path, OpenMode::Create).unwrap())), "a create");
    assert!(moved(&sim, &|sim| sim.sync_dir(dir()).unwrap()), "a create made durable");
    let write = |sim: &SimVfs| {
        let mut file = sim.open(&path, OpenMode::Write).unwrap();
        file.write_at(0, &pattern(1, 600)).unwrap();
        file.set_len(300).unwrap();
        file.sync().unwrap();
    };
    assert!(!moved(&sim, &write), "bytes written, cut and made durable");
    assert!(moved(&sim, &|sim| sim.rename(&path, &dir().join("b")).unwrap()), "a rename");
    assert!(moved(&sim, &|sim| sim.sync_dir(dir()).unwrap()), "a rename made durable");
    assert!(moved(&sim, &|sim| sim.unlink(&dir().join("b")).unwrap()), "an unlink");
}
