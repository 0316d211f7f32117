//! Memory is bounded by the input: no bytes make a parser allocate more
//! than a small multiple of what it was given. A counting global allocator
//! measures the peak of live heap bytes on this thread while each parser
//! reads adversarial inputs — lengths and counts that claim gigabytes, and
//! inputs built to be the worst honest case (the most records per input
//! byte) — and each peak must stay within `FACTOR × input + SLACK_BYTES`.
//!
//! The honest worst cases are what set the factor: a log of empty
//! commands, an index of empty keys, a manifest of minimal ADDs. A parser
//! that allocated from a length it had not checked would blow through it
//! by orders of magnitude.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use engine::aof::scan_log;
use engine::frame::{encode_frame, Log, Place, MAX_FRAME_PAYLOAD_BYTES};
use engine::manifest::Manifest;
use engine::seg::{Seg, SegBuilder};
use engine::vfs::{read_whole, Mapping, MemVfs, Vfs};

/// Peak heap bytes allowed per input byte.
const FACTOR: usize = 16;

/// Peak heap bytes allowed whatever the input (error messages, paths, the
/// first allocations of empty collections).
const SLACK_BYTES: usize = 16 << 10;

thread_local! {
    static LIVE_BYTES: Cell<usize> = const { Cell::new(0) };
    static PEAK_BYTES: Cell<usize> = const { Cell::new(0) };
}

/// Counts this thread's live heap bytes and their peak; tests run on
/// threads of their own, so each measures only itself.
struct Counting;

fn grew(bytes: usize) {
    let _ = LIVE_BYTES.try_with(|live| {
        live.set(live.get() + bytes);
        let _ = PEAK_BYTES.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

fn shrank(bytes: usize) {
    let _ = LIVE_BYTES.try_with(|live| live.set(live.get().saturating_sub(bytes)));
}

// SAFETY: every call is forwarded unchanged to `System`; the counting
// touches only const-initialized thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let new_ptr = unsafe { System.realloc(ptr, layout, new_size) };
        if !new_ptr.is_null() {
            // Counted as if old and new coexisted, as they do when the
            // block moves: an upper bound.
            grew(new_size);
            shrank(layout.size());
        }
        new_ptr
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak of live heap bytes above the starting level while `parse`
/// runs (what it returns is dropped inside, so it counts).
fn peak_bytes_during(parse: impl FnOnce()) -> usize {
    let base = LIVE_BYTES.with(Cell::get);
    PEAK_BYTES.with(|peak| peak.set(base));
    parse();
    PEAK_BYTES.with(Cell::get) - base
}

/// Check one input against the bound, and report its ratio.
fn check(what: &str, input: &[u8], parse: impl FnOnce(&[u8])) -> usize {
    let peak = peak_bytes_during(|| parse(input));
    let bound = FACTOR * input.len() + SLACK_BYTES;
    eprintln!("{what}: {} input bytes, peak {peak} heap bytes ({:.2}x)", input.len(), peak as f64 / input.len() as f64);
    assert!(peak <= bound, "{what}: peak {peak} heap bytes for {} input bytes (bound {bound})", input.len());
    peak
}

fn u32le(value: u32) -> [u8; 4] {
    value.to_le_bytes()
}

/// The header frame a file of frames starts with: frame type
/// `header_type`, eight magic bytes, format `version` and `rest`, at byte 0
/// of `log`. The log and the manifest both open this way.
fn header_frame(log: Log, header_type: u8, magic: &[u8; 8], version: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let payload = [magic.as_slice(), &u32le(version), rest].concat();
    encode_frame(&mut out, Place { log, offset_bytes: 0 }, header_type, &payload);
    out
}

// ---- the AOF -------------------------------------------------------------

const AOF_HEADER: u8 = 1;
const AOF_COMMAND: u8 = 2;
const AOF_STUB: u8 = 4;

fn aof_header() -> Vec<u8> {
    // Version 4, generation 1, made fresh (no snapshot): a header the scan
    // accepts, so what follows it is parsed. Every header is bound to
    // generation 0, what follows to the header's.
    let rest = [&1u64.to_le_bytes()[..], &[0]].concat();
    header_frame(Log::Aof { generation: 0 }, AOF_HEADER, b"SEGS-AOF", 4, &rest)
}

fn scan(bytes: &[u8]) {
    let _ = scan_log(Path::new("/db/appendonly.aof"), bytes);
}

#[test]
fn the_aof_scan_allocates_in_proportion_to_its_input() {
    // A length field of 4 GiB, and one at the frame limit, on 64 bytes.
    let mut bytes = aof_header();
    bytes.extend_from_slice(&u32le(u32::MAX));
    bytes.extend_from_slice(&[0xAB; 60]);
    check("aof: frame length u32::MAX", &bytes, scan);
    let mut bytes = aof_header();
    bytes.extend_from_slice(&u32le(MAX_FRAME_PAYLOAD_BYTES as u32));
    bytes.extend_from_slice(&[0xAB; 60]);
    check("aof: frame length at the limit, cut short", &bytes, scan);

    // Checksummed frames whose counts and lengths lie.
    let mut bytes = aof_header();
    encode_frame(&mut bytes, Place::aof(1, 0), AOF_COMMAND, &[u32le(u32::MAX), u32le(0)].concat());
    check("aof: argument count u32::MAX", &bytes, scan);
    let mut bytes = aof_header();
    encode_frame(&mut bytes, Place::aof(1, 0), AOF_COMMAND, &[u32le(1), u32le(u32::MAX - 1)].concat());
    check("aof: argument length u32::MAX - 1", &bytes, scan);
    let mut bytes = aof_header();
    let mut payload = u32le(1 << 30).to_vec();
    payload.extend_from_slice(&[0; 16]);
    encode_frame(&mut bytes, Place::aof(1, 0), AOF_STUB, &payload);
    check("aof: stub key length 1 GiB", &bytes, scan);

    // The honest worst cases: the most records, and the most arguments,
    // that a byte of log can describe.
    let mut bytes = aof_header();
    for _ in 0..20_000 {
        encode_frame(&mut bytes, Place::aof(1, 0), AOF_COMMAND, &u32le(0));
    }
    check("aof: 20000 empty commands", &bytes, scan);
    let mut payload = u32le(60_000).to_vec();
    payload.extend(std::iter::repeat_n(0u8, 4 * 60_000));
    let mut bytes = aof_header();
    encode_frame(&mut bytes, Place::aof(1, 0), AOF_COMMAND, &payload);
    check("aof: one command of 60000 empty arguments", &bytes, scan);
}

// ---- segments ------------------------------------------------------------

/// Bytes of the segment tail; its fields' offsets (see `seg/format.rs`).
const TAIL_BYTES: usize = 56;
const TAIL_RECORDS_AT: usize = 8;
const TAIL_INDEX_CRC_AT: usize = 32;
const TAIL_CRC_AT: usize = 44;

fn segment(keys: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
    let vfs = MemVfs::new();
    let dir = Path::new("/db");
    vfs.create_dir_all(dir).unwrap();
    let path = dir.join("s.seg");
    let mut builder = SegBuilder::create(&vfs, &path, 1).unwrap();
    for key in keys {
        builder.push(&key, b"").unwrap();
    }
    builder.finish().unwrap();
    read_whole(&vfs, &path).unwrap()
}

/// Recompute the tail's checksum after a field was changed, so the lie
/// reaches the checks behind it.
fn reseal_tail(bytes: &mut [u8]) {
    let tail = bytes.len() - TAIL_BYTES;
    let crc = crc32fast::hash(&bytes[tail..tail + TAIL_CRC_AT]);
    bytes[tail + TAIL_CRC_AT..tail + TAIL_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

fn open_segment(bytes: &[u8]) {
    if let Ok(seg) = Seg::from_mapping("/db/s.seg".into(), Mapping::from_vec(bytes.to_vec())) {
        for item in seg.iter() {
            let _ = item;
        }
    }
}

#[test]
fn a_segment_open_allocates_in_proportion_to_its_input() {
    // Many two-byte keys with empty values: about the most index entries
    // a byte of segment can hold.
    let keys = (0u16..20_000).map(|i| i.to_be_bytes().to_vec());
    let honest = segment(keys);
    check("seg: 20000 tiny records", &honest, open_segment);

    // A record count of 2^64 - 1 behind a valid tail checksum.
    let mut bytes = honest.clone();
    let tail = bytes.len() - TAIL_BYTES;
    bytes[tail + TAIL_RECORDS_AT..tail + TAIL_RECORDS_AT + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal_tail(&mut bytes);
    check("seg: record count u64::MAX", &bytes, open_segment);

    // A count that fits the index, with a broken index checksum: the
    // entries are sized before the checksum is checked is what this would
    // catch.
    let mut bytes = honest.clone();
    bytes[tail + TAIL_INDEX_CRC_AT] ^= 1;
    reseal_tail(&mut bytes);
    check("seg: index checksum wrong", &bytes, open_segment);

    // Garbage of every size a mapping might hold.
    check("seg: 1 MiB of 0xff", &vec![0xff; 1 << 20], open_segment);
}

// ---- the manifest ----------------------------------------------------------

const MANIFEST_HEADER: u8 = 1;
const MANIFEST_ADD: u8 = 2;
const MANIFEST_DROP: u8 = 3;

fn manifest_header() -> Vec<u8> {
    header_frame(Log::Manifest, MANIFEST_HEADER, b"SEGSMANI", 2, &[])
}

/// An ADD payload: seq, records, then file, table, min and max as
/// length-prefixed bytes.
fn add_payload(seq: u64, file: &[u8], table_len: u32) -> Vec<u8> {
    let mut out = seq.to_le_bytes().to_vec();
    out.extend_from_slice(&1u64.to_le_bytes());
    out.extend_from_slice(&u32le(file.len() as u32));
    out.extend_from_slice(file);
    out.extend_from_slice(&u32le(table_len));
    out.extend_from_slice(&u32le(0));
    out.extend_from_slice(&u32le(0));
    out
}

fn parse_manifest(bytes: &[u8]) {
    let _ = Manifest::parse(Path::new("/db/MANIFEST"), bytes);
}

#[test]
fn a_manifest_parse_allocates_in_proportion_to_its_input() {
    // A table length of 4 GiB in a checksummed ADD.
    let mut bytes = manifest_header();
    encode_frame(&mut bytes, Place::manifest(0), MANIFEST_ADD, &add_payload(1, b"a", u32::MAX));
    check("manifest: table length u32::MAX", &bytes, parse_manifest);

    // A torn tail of a megabyte, which the scan for later records reads.
    let mut bytes = manifest_header();
    bytes.extend_from_slice(&u32le(u32::MAX));
    bytes.extend(std::iter::repeat_n(0x17u8, 1 << 20));
    check("manifest: 1 MiB torn tail", &bytes, parse_manifest);

    // The honest worst cases: minimal ADDs, all live; and ADD-DROP pairs,
    // every dropped seq remembered.
    let mut bytes = manifest_header();
    for seq in 1..=10_000u64 {
        encode_frame(&mut bytes, Place::manifest(0), MANIFEST_ADD, &add_payload(seq, format!("{seq:x}").as_bytes(), 0));
    }
    check("manifest: 10000 minimal ADDs", &bytes, parse_manifest);
    let mut bytes = manifest_header();
    for seq in 1..=10_000u64 {
        encode_frame(&mut bytes, Place::manifest(0), MANIFEST_ADD, &add_payload(seq, b"f", 0));
        encode_frame(&mut bytes, Place::manifest(0), MANIFEST_DROP, &seq.to_le_bytes());
    }
    check("manifest: 10000 ADD-DROP pairs", &bytes, parse_manifest);
}

#[test]
fn the_counter_sees_an_allocation_over_the_bound() {
    // The check must be able to fail: a "parser" that allocates from the
    // length it reads is caught.
    let input = u32le(1 << 24);
    let result = std::panic::catch_unwind(|| {
        check("a parser that trusts its length field", &input, |bytes| {
            let len = u32::from_le_bytes(bytes.try_into().unwrap()) as usize;
            std::hint::black_box(vec![0u8; len]);
        })
    });
    assert!(result.is_err(), "a 16 MiB allocation from a 4-byte input passed the bound");
}
