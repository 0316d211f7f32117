//! Fuzz entry points: what the cargo-fuzz targets in `fuzz/` run, as plain
//! library functions, so that stable `cargo test` replays the very same
//! bodies over the committed corpus (`corpus/<target>/`) and over every
//! crasher ever found (`corpus/regressions/`).
//!
//! Each function takes arbitrary bytes as one on-disk file and holds the
//! parser and everything downstream of it to the engine's contract for bad
//! bytes: refuse with [`engine::Error::Corrupt`], never panic, never return
//! silently different data. A panic inside one of them is a finding; so is
//! a failed `assert!`, which is how the properties below are stated:
//!
//! - [`aof_recover`]: the bytes as the store's log. The scan and recovery
//!   agree; recovery keeps exactly the valid prefix and quarantines exactly
//!   the rest; a store over the log opens or refuses cleanly, and if it
//!   opens, writes after recovery (commands, an eviction, a rewrite) match
//!   the reference model and survive a reopen.
//! - [`seg_read`]: the bytes as a segment. Open verifies or refuses; a
//!   walk, point lookups and range scans agree with each other.
//! - [`manifest_open`]: the bytes as a manifest. Parse and open agree; a
//!   torn tail is cut; an ADD and a DROP appended after open are what a
//!   reopen reads back.
//!
//! Everything runs on a fresh [`MemVfs`] and a [`ManualClock`] standing at
//! [`NOW_MS`]: an input means one thing, every time.
//!
//! # Behind the checksums
//!
//! A checksum stops almost every mutation at the door: flip a byte inside a
//! frame and the frame is simply invalid, a torn tail, so the record
//! decoders and everything after them never see the mutated bytes. Each
//! target therefore runs twice when that changes anything: on the input as
//! given, and on the input *resealed* — every checksum the input's own
//! lengths and offsets locate recomputed ([`resealed_frames`], and
//! `seg::resealed` for segments). Resealed bytes are still arbitrary bytes
//! to the parser; they are the ones that reach its checks past the
//! checksums.
//!
//! [`ManualClock`]: engine::clock::ManualClock

mod aof;
mod fixture;
#[cfg(test)]
mod flips;
mod manifest;
mod seg;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use aof::aof_recover;
pub use fixture::{fixture, Fixture};
pub use manifest::manifest_open;
pub use seg::seg_read;

use engine::frame::{encode_frame, Log, Place, FRAME_HEADER_BYTES, MAX_FRAME_PAYLOAD_BYTES};
use engine::vfs::{read_whole, MemVfs, OpenMode, Vfs};

/// The clock of every fuzz run (2023-11-14, as in the simulator): fixed,
/// so an input's TTLs are expired or not the same way on every replay.
pub const NOW_MS: u64 = 1_700_000_000_000;

/// The store directory on each run's in-memory disk.
pub const DIR: &str = "/db";

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn path_of(name: &str) -> PathBuf {
    dir().join(name)
}

/// A fresh in-memory disk whose store directory holds `files`.
fn disk_with(files: &[(&str, &[u8])]) -> Arc<MemVfs> {
    let vfs = Arc::new(MemVfs::new());
    vfs.create_dir_all(dir()).expect("MemVfs creates directories");
    for (name, bytes) in files {
        let path = path_of(name);
        let mut handle = vfs.open(&path, OpenMode::Truncate).expect("MemVfs creates files");
        handle.write_at(0, bytes).expect("MemVfs writes");
    }
    vfs
}

/// The bytes of `name` in the store directory.
fn read(vfs: &dyn Vfs, name: &str) -> Vec<u8> {
    read_whole(vfs, &path_of(name)).unwrap_or_else(|e| panic!("reading {name} back from MemVfs: {e}"))
}

/// The names in the store directory.
fn names(vfs: &dyn Vfs) -> Vec<String> {
    let names = vfs.list_dir(dir()).expect("the store directory exists");
    names.into_iter().map(|name| name.into_string().expect("the engine writes UTF-8 names")).collect()
}

/// Where a reseal binds the checksums it recomputes: to the bytes' own
/// place, or to another one — the bytes then read as a misdirected write
/// left them, whole records that are valid somewhere else, which every
/// reader must take for damage (records are bound to their place).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reseal {
    /// Each checksum for where its record lies.
    InPlace,
    /// Each checksum for another place: frames [`MISPLACED_BYTES`] further
    /// on in their log, segment records in the next segment.
    Elsewhere,
}

/// How far [`Reseal::Elsewhere`] moves a frame: one small sector.
pub const MISPLACED_BYTES: u64 = 512;

/// `bytes` with the checksum of every frame recomputed, walking frames by
/// their length fields from the start until one does not fit. Shared by
/// the log and the manifest (`log`), whose files are frames back to back;
/// the checksum is `frame.rs`'s own, through [`encode_frame`], for each
/// frame's place (or another one, per `how`).
pub fn resealed_frames(bytes: &[u8], log: Log, how: Reseal) -> Vec<u8> {
    resealed_frames_by(bytes, |_| log, how)
}

/// [`resealed_frames`] for an AOF: its header bound to generation 0, every
/// later frame to the generation its header's field holds (as written or as
/// mutated: the reseal makes it the file's), as `frame.rs` and
/// `aof/header.rs` bind them.
pub fn resealed_aof_frames(bytes: &[u8], how: Reseal) -> Vec<u8> {
    let generation_field = FRAME_HEADER_BYTES + 12..FRAME_HEADER_BYTES + 20;
    let generation = bytes.get(generation_field).map_or(1, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    resealed_frames_by(bytes, |at| Log::Aof { generation: if at == 0 { 0 } else { generation } }, how)
}

/// [`resealed_frames`], each frame bound to the log `log_at` names for
/// its offset.
fn resealed_frames_by(bytes: &[u8], log_at: impl Fn(usize) -> Log, how: Reseal) -> Vec<u8> {
    let shift_bytes = if how == Reseal::Elsewhere { MISPLACED_BYTES } else { 0 };
    let mut out = bytes.to_vec();
    let mut at = 0usize;
    let mut frame = Vec::new();
    while out.len() - at >= FRAME_HEADER_BYTES {
        let len_bytes = u32::from_le_bytes([out[at], out[at + 1], out[at + 2], out[at + 3]]) as usize;
        if len_bytes > MAX_FRAME_PAYLOAD_BYTES || len_bytes > out.len() - at - FRAME_HEADER_BYTES {
            break;
        }
        let end = at + FRAME_HEADER_BYTES + len_bytes;
        frame.clear();
        let place = Place { log: log_at(at), offset_bytes: at as u64 + shift_bytes };
        encode_frame(&mut frame, place, out[at + 8], &out[at + FRAME_HEADER_BYTES..end]);
        out[at..end].copy_from_slice(&frame);
        at = end;
    }
    out
}

/// Run `check` on `data`, then on each of its reseals that differs.
fn with_resealed(data: &[u8], reseal: fn(&[u8], Reseal) -> Vec<u8>, check: fn(&[u8])) {
    check(data);
    for how in [Reseal::InPlace, Reseal::Elsewhere] {
        let resealed = reseal(data, how);
        if resealed != data {
            check(&resealed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::frame::decode_frame;

    #[test]
    fn resealing_makes_every_whole_frame_valid_and_touches_nothing_else() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place::manifest(0), 2, b"first");
        encode_frame(&mut bytes, Place::manifest(0), 3, b"second frame");
        let whole = bytes.len();
        bytes.extend_from_slice(&[40, 0, 0, 0, 1, 2]);
        let in_place = |bytes: &[u8]| resealed_frames(bytes, Log::Manifest, Reseal::InPlace);
        assert_eq!(in_place(&bytes), bytes, "valid frames are resealed to themselves");

        let mut mutated = bytes.clone();
        mutated[FRAME_HEADER_BYTES + 1] ^= 0xff;
        mutated[whole - 2] ^= 0x01;
        assert!(decode_frame(&mutated, Place::manifest(0)).is_err());
        let resealed = in_place(&mutated);
        let first = decode_frame(&resealed, Place::manifest(0)).unwrap();
        assert_eq!(first.payload, &mutated[FRAME_HEADER_BYTES..FRAME_HEADER_BYTES + 5]);
        let second_at = Place::manifest(first.total_bytes as u64);
        assert!(decode_frame(&resealed[first.total_bytes..], second_at).is_ok());
        assert_eq!(resealed[whole..], bytes[whole..], "the cut-short tail is left as it was");
    }

    #[test]
    fn resealing_elsewhere_makes_whole_frames_valid_only_at_another_place() {
        let mut bytes = Vec::new();
        encode_frame(&mut bytes, Place::aof(0, 0), 2, b"first");
        let elsewhere = resealed_aof_frames(&bytes, Reseal::Elsewhere);
        assert!(decode_frame(&elsewhere, Place::aof(0, 0)).is_err());
        assert!(decode_frame(&elsewhere, Place::aof(0, MISPLACED_BYTES)).is_ok());
        assert!(decode_frame(&resealed_frames(&bytes, Log::Manifest, Reseal::InPlace), Place::aof(0, 0)).is_err());
    }
}
