//! `sim explore --damage` for segsim: where the records of its three kinds
//! of file lie, how each is damaged, and the recovery of a damaged image
//! judged by the random mode's rule.
//!
//! Each record of the log, the manifest and every segment is damaged three
//! ways, one at a time: a bit flipped in its payload (the quietest rot), a
//! length that runs past the end of the file (a reader must not trust it,
//! let alone allocate by it), and a record of the *other* log's kind
//! written in its place (whole and checksummed, but not this file's). A
//! frame of either log is also damaged a fourth way (issue 25): a later
//! frame of the same size written whole in its place, as a misdirected
//! write leaves it (the later frame's own place left as it was before its
//! write: what the disk's durable history says it held, zeros for an
//! append), for each of the next few such frames — the case only a
//! checksum that covers the place can tell from history. And every record
//! of every file a fifth way (issue 32): the write that put it in place
//! lost, alone and with the rest of its fsync, its place back to the
//! bytes it held before — for a rewrite's log's last batch, a snapshot
//! with no `SNAPSHOT_END`. And the write in flight at a crash index (issue
//! 51), the next frame of either log, issued and not yet fsynced, is
//! misdirected onto the file's last durable frame: the landed frame whole
//! there, the file grown to the write's end, its own place as before it
//! (`in_flight_sites`). The
//! records are found by walking the formats as the engine documents them
//! (`engine::frame` for both logs, the layout in `engine::seg`'s module
//! doc for segments) over the undamaged image; the judgement is none of
//! this file's business — it is the random mode's own recovery, told of
//! the damage as the disk announces media corruption (`Driver::
//! recover_damaged`): refuse with nothing changed, or hold a state the
//! rule allows, where only damage nothing later vouched for may be cut
//! like a torn tail, and a point-in-time open cuts at the damage and
//! quarantines the rest.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use engine::aof::frame_place;
use engine::clock::ManualClock;
use engine::frame::{decode_frame, Place, FRAME_HEADER_BYTES};
use engine::manifest::MANIFEST_FILE;
use engine::store::AOF_FILE;

use super::record::RecoveryContext;
use super::SegsimTarget;
use crate::canary::CanarySwitch;
use crate::drive::Driver;
use simulator::disk::{CrashOutcome, Damage, DamageKind, DiskImage, InFlightWrite, LostWrites, SimVfs};
use simulator::failure::{catch_panic, Check};
use simulator::harness::Reopening;
use simulator::seam::{DamageSite, DamageVerdict, DamageWays};
use simulator::trace::Trace;

/// A segment's fixed-size tail, and where its index and bounds offsets
/// lie in it (`engine::seg`'s layout).
const SEG_TAIL_BYTES: usize = 56;
const SEG_TAIL_INDEX_OFFSET_AT: usize = 16;
const SEG_TAIL_BOUNDS_OFFSET_AT: usize = 24;
/// A record's checksum, after its value.
const SEG_RECORD_CRC_BYTES: usize = 4;

/// The record kinds, as the reach report names them.
const LOG_FRAME: &str = "log frame";
const MANIFEST_RECORD: &str = "manifest record";
const SEGMENT_RECORD: &str = "segment record";

/// Every kind of record [`sites`] damages, and how (see the module doc):
/// both logs' frames all five ways, a segment's records all but the
/// misdirected frame.
pub(super) const DAMAGE_WAYS: &[DamageWays] = &[
    DamageWays {
        record_kind: LOG_FRAME,
        ways: &[DamageKind::Media, DamageKind::MisdirectedWrite, DamageKind::LostWrite],
    },
    DamageWays {
        record_kind: MANIFEST_RECORD,
        ways: &[DamageKind::Media, DamageKind::MisdirectedWrite, DamageKind::LostWrite],
    },
    DamageWays { record_kind: SEGMENT_RECORD, ways: &[DamageKind::Media, DamageKind::LostWrite] },
];

/// Every damage site of `image`, file by file in path order, record by
/// record, three ways each, frames a fourth, writes lost a fifth (see the
/// module doc).
pub(super) fn sites(image: &DiskImage) -> Vec<DamageSite> {
    let files = image.files();
    let first_frame = |name: &str, place: Place| {
        let (_, bytes) = files.iter().find(|(path, _)| path.file_name().is_some_and(|n| n == name))?;
        let frame = decode_frame(bytes, place).ok()?;
        Some(bytes[..frame.total_bytes].to_vec())
    };
    let log_header = first_frame(AOF_FILE, frame_place(&[], 0));
    let manifest_header = first_frame(MANIFEST_FILE, Place::manifest(0));
    let mut sites = Vec::new();
    for (path, bytes) in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name == AOF_FILE {
            let foreign = (manifest_header.as_deref(), "the manifest's header frame");
            frame_sites(&mut sites, image, (path, LOG_FRAME), bytes, |at| frame_place(bytes, at), foreign);
        } else if name == MANIFEST_FILE {
            let foreign = (log_header.as_deref(), "the log's header frame");
            frame_sites(&mut sites, image, (path, MANIFEST_RECORD), bytes, |at| Place::manifest(at as u64), foreign);
        } else if name.ends_with(".seg") {
            segment_sites(&mut sites, image, path, bytes, log_header.as_deref());
        }
    }
    sites
}

/// The sites of a log made of frames, `place_at` the place a frame at an
/// offset is bound to: each valid frame from the start on (the walk stops
/// at the first invalid one: a durable image's logs end with their last
/// whole frame).
fn frame_sites(
    sites: &mut Vec<DamageSite>,
    image: &DiskImage,
    (path, record_kind): (&Path, &'static str),
    bytes: &[u8],
    place_at: impl Fn(usize) -> Place,
    (foreign, foreign_what): (Option<&[u8]>, &str),
) {
    let mut at = 0usize;
    let mut number = 0usize;
    let mut frames = Vec::new();
    while let Ok(frame) = decode_frame(&bytes[at..], place_at(at)) {
        let what =
            |how: &str| format!("{} frame {number} (bytes {at}..{}): {how}", path.display(), at + frame.total_bytes);
        let flip_at = if frame.payload.is_empty() {
            at + FRAME_HEADER_BYTES - 1
        } else {
            at + FRAME_HEADER_BYTES + frame.payload.len() / 2
        };
        let what_flip = what("a bit flipped in its payload (in its kind, if empty)");
        sites.push(flipped((path, record_kind), bytes, flip_at, what_flip));
        let past_end = u32::try_from(bytes.len() - at - FRAME_HEADER_BYTES + 1).unwrap_or(u32::MAX);
        let length = DamageSite {
            path: path.to_path_buf(),
            offset_bytes: at as u64,
            bytes: past_end.to_le_bytes().to_vec(),
            kind: DamageKind::Media,
            what: what("its length runs one byte past the end of the file"),
            record_kind,
        };
        sites.push(length);
        if let Some(foreign) = foreign {
            let what = what(&format!("{foreign_what} written in its place"));
            // Clipped at the file's end: media damage never grows a file.
            let foreign = &foreign[..foreign.len().min(bytes.len() - at)];
            let (offset_bytes, bytes, kind) = (at as u64, foreign.to_vec(), DamageKind::Media);
            sites.push(DamageSite { path: path.to_path_buf(), offset_bytes, bytes, kind, what, record_kind });
        }
        frames.push((at, at + frame.total_bytes));
        at += frame.total_bytes;
        number += 1;
    }
    misdirected_sites(sites, image, (path, record_kind), bytes, &frames);
    lost_write_sites(sites, image, (path, record_kind), &frames);
}

/// How many later frames of the same size each frame is replaced by (the
/// nearest ones): bounds the sites to a few per frame.
const MISDIRECTED_PER_FRAME: usize = 4;

/// The fourth way: for each frame after the first (a header is written
/// before any other frame, so none is ever misdirected onto it within its
/// own file), each of the next few later frames of the same size, as a
/// drive that put that frame's write at this one's place leaves the file:
/// the later frame's bytes here — whole, once valid, bound to the other
/// place — the frames between unchanged, and where the later frame
/// belonged what its place held before (zeros for an append). A frame with
/// no later frame of its size gets the nearest later frame of any size
/// instead (issue 51): a log whose records all differ in size (a
/// manifest's, at many seeds) would else never test that a checksum
/// covers the place. A shorter frame leaves the end of this one behind it,
/// a longer one runs over the next; the landed frame is whole either way.
/// One contiguous site, from this frame to the later one's end.
fn misdirected_sites(
    sites: &mut Vec<DamageSite>,
    image: &DiskImage,
    (path, record_kind): (&Path, &'static str),
    bytes: &[u8],
    frames: &[(usize, usize)],
) {
    for (number, &(at, end)) in frames.iter().enumerate().skip(1) {
        let later_frames = &frames[number + 1..];
        let same_size: Vec<&(usize, usize)> =
            later_frames.iter().filter(|(a, e)| e - a == end - at).take(MISDIRECTED_PER_FRAME).collect();
        let chosen = if same_size.is_empty() { later_frames.iter().take(1).collect() } else { same_size };
        for (later, &&(later_at, later_end)) in chosen.iter().enumerate() {
            debug_assert!(later_at >= end, "a later frame starts at or after this one's end");
            let mut moved = bytes[at..later_end].to_vec();
            // Its own place as before the write, then the write where it
            // landed (a longer frame lands over part of the next ones).
            let own_place = image.before_newest_write(path, later_at as u64..later_end as u64);
            moved[later_at - at..].copy_from_slice(&own_place);
            moved[..later_end - later_at].copy_from_slice(&bytes[later_at..later_end]);
            let size = if later_end - later_at == end - at { "of its size" } else { "of another size" };
            let what = format!(
                "{} frame {number} (bytes {at}..{end}): the write of the frame at bytes {later_at}..{later_end} \
                 (later frame #{} {size}) misdirected onto it, its own place left as before it",
                path.display(),
                later + 1
            );
            let (offset_bytes, kind) = (at as u64, DamageKind::MisdirectedWrite);
            let bytes = moved;
            sites.push(DamageSite { path: path.to_path_buf(), offset_bytes, bytes, kind, what, record_kind });
        }
    }
}

/// Where each valid frame of a log lies, from the start on (`place_at` the
/// place a frame at an offset is bound to), as byte ranges.
fn frame_spans(bytes: &[u8], place_at: impl Fn(usize) -> Place) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 0usize;
    while let Ok(frame) = decode_frame(&bytes[at..], place_at(at)) {
        spans.push((at, at + frame.total_bytes));
        at += frame.total_bytes;
    }
    spans
}

/// The misdirected frame of the write in flight (issue 51): for each log,
/// its first write in flight at the crash index — the next frame, issued
/// and not yet fsynced (a manifest has one at most: every append is
/// fsynced before the next) — written back by the drive at the place of
/// the last durable frame instead of its own. The site holds the landed
/// frame whole, the rest of the old frame behind a shorter one, and the
/// file to the write's end as before the write (zeros for an append): the
/// file system saw the write, so the file keeps the length it gave it.
/// This is the one misdirected record nothing valid follows when it is the
/// newest durable one that the write replaced (the durable misdirected
/// frames of `misdirected_sites` always leave a whole later frame's
/// replacement behind them, and their later frame is durable: its log
/// record, for the manifest, may already name the segment the replaced
/// ADD registered, which the store's cross-check then refuses anyway).
pub(super) fn in_flight_sites(image: &DiskImage, in_flight: &[InFlightWrite<'_>]) -> Vec<DamageSite> {
    let mut sites = Vec::new();
    for (path, bytes) in image.files() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let Some(write) = in_flight.iter().find(|write| write.path == path) else { continue };
        if name == AOF_FILE {
            sites.extend(in_flight_site((&path, LOG_FRAME), bytes, write, |at| frame_place(bytes, at)));
        } else if name == MANIFEST_FILE {
            sites.extend(in_flight_site((&path, MANIFEST_RECORD), bytes, write, |at| Place::manifest(at as u64)));
        }
    }
    sites
}

/// `write` (in flight to the log at `path`, whose durable bytes these
/// are) landed on the log's last durable frame, if that is not its header
/// and the write is a whole frame at its own place after it.
fn in_flight_site(
    (path, record_kind): (&Path, &'static str),
    bytes: &[u8],
    write: &InFlightWrite<'_>,
    place_at: impl Fn(usize) -> Place,
) -> Option<DamageSite> {
    let frames = frame_spans(bytes, &place_at);
    let number = frames.len().checked_sub(1).filter(|&number| number > 0)?;
    let (at, end) = frames[number];
    let write_at = usize::try_from(write.offset_bytes).ok().filter(|&write_at| write_at >= end)?;
    decode_frame(write.bytes, place_at(write_at)).ok()?;
    let write_end = write_at + write.bytes.len();
    let mut landed = bytes[at..].to_vec();
    landed.resize(bytes.len().max(write_end) - at, 0);
    debug_assert!(landed.len() >= write.bytes.len(), "the write ends at or past its landing's end");
    landed[..write.bytes.len()].copy_from_slice(write.bytes);
    let what = format!(
        "{} frame {number} (bytes {at}..{end}): the write in flight at the crash (bytes {write_at}..{write_end}, the \
         next frame) misdirected onto it, the file grown to that write's end, its own place left as before it",
        path.display()
    );
    let (path, offset_bytes, kind) = (path.to_path_buf(), at as u64, DamageKind::MisdirectedWrite);
    Some(DamageSite { path, offset_bytes, bytes: landed, kind, what, record_kind })
}

/// The fifth way, for every kind of file: the write that put each record
/// (`records`, byte ranges) in place lost, as if it never reached the
/// media — its place holding what it held before that write (the disk's
/// durable history says what: `DiskImage::lost_write`) — and, apart, that
/// write with the rest of its fsync lost (a drive that acknowledged the
/// flush with writes still in its cache). Records one write put in place
/// share one site; a file without a history has none.
fn lost_write_sites(
    sites: &mut Vec<DamageSite>,
    image: &DiskImage,
    (path, record_kind): (&Path, &'static str),
    records: &[(usize, usize)],
) {
    let mut seen = BTreeSet::new();
    for (number, &(at, end)) in records.iter().enumerate() {
        for (how, what) in [
            (LostWrites::One, "the write that put it there lost"),
            (LostWrites::FlushTail, "the write that put it there lost, with every later write of its fsync"),
        ] {
            let Some((offset_bytes, bytes)) = image.lost_write(path, at as u64..end as u64, how) else { continue };
            if !seen.insert((offset_bytes, bytes.clone())) {
                continue;
            }
            let what = format!(
                "{} record {number} (bytes {at}..{end}): {what} (bytes {offset_bytes}..{} back to what they held \
                 before)",
                path.display(),
                offset_bytes + bytes.len() as u64
            );
            let kind = DamageKind::LostWrite;
            sites.push(DamageSite { path: path.to_path_buf(), offset_bytes, bytes, kind, what, record_kind });
        }
    }
}

/// The sites of a segment: each record its index names (the index read
/// as the layout says, over an undamaged file; a file that does not
/// parse so yields none).
fn segment_sites(sites: &mut Vec<DamageSite>, image: &DiskImage, path: &Path, bytes: &[u8], foreign: Option<&[u8]>) {
    let mut records = Vec::new();
    for (number, entry) in segment_index(bytes).into_iter().enumerate() {
        let (start, end) = (entry.value_offset, entry.value_offset + entry.value_len + SEG_RECORD_CRC_BYTES);
        records.push((start, end));
        let what = |how: &str| format!("{} record {number} (bytes {start}..{end}): {how}", path.display());
        let flip_at = if entry.value_len == 0 { start } else { start + entry.value_len / 2 };
        let what_flip = what("a bit flipped in its value (in its checksum, if empty)");
        sites.push(flipped((path, SEGMENT_RECORD), bytes, flip_at, what_flip));
        let past_end = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let what_len = what("its index entry's length runs past the end of the file");
        sites.push(DamageSite {
            path: path.to_path_buf(),
            offset_bytes: entry.len_field_at as u64,
            bytes: past_end.to_le_bytes().to_vec(),
            kind: DamageKind::Media,
            what: what_len,
            record_kind: SEGMENT_RECORD,
        });
        if let Some(foreign) = foreign {
            let what = what("the log's header frame written in its place");
            // Clipped at the file's end: media damage never grows a file.
            let foreign = &foreign[..foreign.len().min(bytes.len() - start)];
            sites.push(DamageSite {
                path: path.to_path_buf(),
                offset_bytes: start as u64,
                bytes: foreign.to_vec(),
                kind: DamageKind::Media,
                what,
                record_kind: SEGMENT_RECORD,
            });
        }
    }
    lost_write_sites(sites, image, (path, SEGMENT_RECORD), &records);
}

/// The lowest bit of `bytes[at]` flipped.
fn flipped((path, record_kind): (&Path, &'static str), bytes: &[u8], at: usize, what: String) -> DamageSite {
    let (offset_bytes, bytes, kind) = (at as u64, vec![bytes[at] ^ 1], DamageKind::Media);
    DamageSite { path: path.to_path_buf(), offset_bytes, bytes, kind, what, record_kind }
}

/// One index entry of a segment: where its record's value lies, and
/// where the entry's own length field is.
struct SegEntry {
    value_offset: usize,
    value_len: usize,
    len_field_at: usize,
}

/// A segment's index entries, `[key_len u32][value_offset u64][value_len
/// u32][key]` back to back between the tail's index and bounds offsets;
/// empty if the file is not laid out so.
fn segment_index(bytes: &[u8]) -> Vec<SegEntry> {
    let Some(tail_at) = bytes.len().checked_sub(SEG_TAIL_BYTES) else { return Vec::new() };
    let u64_at = |at: usize| bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    let offsets = (u64_at(tail_at + SEG_TAIL_INDEX_OFFSET_AT), u64_at(tail_at + SEG_TAIL_BOUNDS_OFFSET_AT));
    let (Some(index_at), Some(bounds_at)) = offsets else { return Vec::new() };
    let (Ok(mut at), Ok(bounds_at)) = (usize::try_from(index_at), usize::try_from(bounds_at)) else {
        return Vec::new();
    };
    let mut entries = Vec::new();
    while at < bounds_at.min(tail_at) {
        let parsed = (u32_at(at), u64_at(at + 4), u32_at(at + 12));
        let (Some(key_len), Some(value_offset), Some(value_len)) = parsed else { return Vec::new() };
        let (value_offset, value_len) = (value_offset as usize, value_len as usize);
        if value_offset.saturating_add(value_len).saturating_add(SEG_RECORD_CRC_BYTES) > index_at as usize {
            return Vec::new();
        }
        entries.push(SegEntry { value_offset, value_len, len_field_at: at + 12 });
        at += 16 + key_len as usize;
    }
    entries
}

/// Open `image`, damaged as `damage` says, the default way or at a point
/// in time, at `context`'s clock, with `context`'s checker: the random
/// mode's recovery and rule (see the module doc).
pub(super) fn recover(
    target: &SegsimTarget,
    seed: u64,
    image: &DiskImage,
    damage: &Damage,
    point_in_time: bool,
    context: &RecoveryContext,
) -> Result<DamageVerdict, (Check, String)> {
    let mut config = target.config(seed);
    config.point_in_time = point_in_time;
    let disk = SegsimTarget::explore_disk(&config);
    let vfs = Arc::new(SimVfs::from_image(disk, image, Trace::new(false)));
    let _canary = CanarySwitch::on(target.overrides.canary);
    let clock = Arc::new(ManualClock::new(context.now_ms));
    let mut driver = Driver::new(&config, vfs.clone(), (target.wrap)(vfs), clock);
    *driver.checker_mut() = context.checker.clone();
    let mut run = driver.into_loop(&target.overrides);
    // The disk as it is, after a power loss that left `damage`: the
    // loop's recovery, by the rule; whether the store opened (else it
    // refused the damage, changing nothing).
    let crash = CrashOutcome { damage: vec![damage.clone()], ..CrashOutcome::default() };
    let opened = catch_panic(|| {
        let refusals = run.h.outcome.counters.refusals_accepted;
        run.recover(Reopening::PowerLoss(crash), 0).map(|()| run.h.outcome.counters.refusals_accepted == refusals)
    })
    .map_err(|panic| (Check::Panic, panic))?;
    match opened {
        Ok(true) => Ok(DamageVerdict::Opened),
        Ok(false) => Ok(DamageVerdict::Refused),
        Err(failure) => Err((failure.check, failure.detail)),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use engine::frame::{encode_frame, Place};
    use engine::vfs::{OpenMode, Vfs};

    use super::*;
    use simulator::disk::{CrashMode, DiskConfig};

    /// A log of three frames, each written and fsynced on its own; the
    /// third frame's place held `old` (durable) before the frame was
    /// written over it, and the second and third are the same size.
    fn log_image(old: &[u8]) -> (DiskImage, PathBuf, [Vec<u8>; 3]) {
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        disk.start_recording();
        let dir = PathBuf::from("/db");
        disk.create_dir_all(&dir).unwrap();
        let path = dir.join(AOF_FILE);
        let mut file = disk.open(&path, OpenMode::Create).unwrap();
        disk.sync_dir(&dir).unwrap();
        let mut frames: [Vec<u8>; 3] = Default::default();
        let mut at = 0u64;
        // A header's payload as the format lays it out: magic, version,
        // generation 1, made fresh.
        let header = [&b"SEGS-AOF"[..], &4u32.to_le_bytes(), &1u64.to_le_bytes(), &[0]].concat();
        for (number, payload) in [&header[..], b"first", b"other"].into_iter().enumerate() {
            let place = if number == 0 { Place::aof(0, 0) } else { Place::aof(1, at) };
            encode_frame(&mut frames[number], place, 1, payload);
            if number == 2 {
                file.write_at(at, old).unwrap();
                file.sync().unwrap();
            }
            file.write_at(at, &frames[number]).unwrap();
            file.sync().unwrap();
            at += frames[number].len() as u64;
        }
        let recording = disk.take_recording();
        (recording.snapshots.last().unwrap().durable_image(), path, frames)
    }

    #[test]
    fn a_misdirected_frame_leaves_its_own_place_as_it_was_and_lands_on_an_earlier_one() {
        let old = vec![b'o'; 20];
        let (image, path, frames) = log_image(&old);
        assert_eq!(frames[1].len(), frames[2].len());
        let (first_at, second_at) = (frames[0].len(), frames[0].len() + frames[1].len());
        let all = sites(&image);
        let misdirected: Vec<&DamageSite> = all.iter().filter(|s| s.kind == DamageKind::MisdirectedWrite).collect();
        assert_eq!(misdirected.len(), 1, "one later frame of the first's size");
        let site = misdirected[0];
        assert_eq!(site.offset_bytes, first_at as u64, "it lands on the earlier frame's place");
        assert_eq!(&site.bytes[..frames[2].len()], &frames[2][..], "the later frame, whole");
        let own_place = &site.bytes[second_at - first_at..];
        assert_eq!(own_place, &old[..frames[2].len()], "its own place holds what it held before the write");
        assert!(decode_frame(&site.bytes, Place::aof(1, first_at as u64)).is_err(), "invalid where it landed");
        assert_eq!(image.before_newest_write(&path, second_at as u64..second_at as u64 + 4), old[..4]);
    }

    /// A frame with no later frame of its size: the nearest later frame
    /// (shorter here) lands on it whole, the rest of its own bytes behind.
    #[test]
    fn a_frame_of_no_repeated_size_is_misdirected_onto_by_the_next_of_another_size() {
        let old = vec![b'o'; 20];
        let (image, path, frames) = log_image(&old);
        let files = image.files();
        let (_, bytes) = files.iter().find(|(p, _)| *p == path).expect("the log");
        // The same log with the second frame's payload one byte longer:
        // built by hand from the first image's frames.
        let first_at = frames[0].len();
        let mut longer = Vec::new();
        encode_frame(&mut longer, Place::aof(1, first_at as u64), 1, b"first!");
        assert_ne!(longer.len(), frames[2].len());
        let mut sites = Vec::new();
        let second_at = first_at + longer.len();
        let mut log = bytes[..first_at].to_vec();
        log.extend_from_slice(&longer);
        log.extend_from_slice(&frames[2]);
        let spans = [(0, first_at), (first_at, second_at), (second_at, second_at + frames[2].len())];
        misdirected_sites(&mut sites, &image, (&path, LOG_FRAME), &log, &spans);
        assert_eq!(sites.len(), 1, "{sites:?}");
        let site = &sites[0];
        assert_eq!(site.offset_bytes, first_at as u64);
        assert_eq!(&site.bytes[..frames[2].len()], &frames[2][..], "the later frame, whole, where it landed");
        assert_eq!(&site.bytes[frames[2].len()..longer.len()], &longer[frames[2].len()..], "the rest left");
        assert!(site.what.contains("of another size"), "{}", site.what);
    }

    /// The log of `log_image` with a fourth frame written and not yet
    /// fsynced: the write in flight lands on the last durable frame whole,
    /// the file grown to its end with its own place as before (zeros).
    #[test]
    fn the_write_in_flight_is_misdirected_onto_the_last_durable_frame() {
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        let dir = PathBuf::from("/db");
        disk.create_dir_all(&dir).unwrap();
        let path = dir.join(AOF_FILE);
        let mut file = disk.open(&path, OpenMode::Create).unwrap();
        disk.sync_dir(&dir).unwrap();
        let header = [&b"SEGS-AOF"[..], &4u32.to_le_bytes(), &1u64.to_le_bytes(), &[0]].concat();
        let mut at = 0u64;
        let mut frames = Vec::new();
        for (number, payload) in [&header[..], b"first", b"a longer next"].into_iter().enumerate() {
            let mut frame = Vec::new();
            encode_frame(&mut frame, if number == 0 { Place::aof(0, 0) } else { Place::aof(1, at) }, 1, payload);
            file.write_at(at, &frame).unwrap();
            if number < 2 {
                file.sync().unwrap();
            }
            at += frame.len() as u64;
            frames.push(frame);
        }
        disk.start_recording();
        let _ = file.len();
        let recording = disk.take_recording();
        let snapshot = recording.snapshots.last().unwrap();
        let image = snapshot.durable_image();
        let in_flight = snapshot.in_flight_writes(&image);
        assert_eq!(in_flight.len(), 1, "the third frame, unsynced");
        let sites = in_flight_sites(&image, &in_flight);
        assert_eq!(sites.len(), 1, "{sites:?}");
        let site = &sites[0];
        let (last_at, write_at) = (frames[0].len(), frames[0].len() + frames[1].len());
        assert_eq!(
            (site.offset_bytes, site.kind, site.record_kind),
            (last_at as u64, DamageKind::MisdirectedWrite, LOG_FRAME)
        );
        assert!(frames[2].len() > frames[1].len(), "a longer frame: it runs past the durable end");
        assert_eq!(&site.bytes[..frames[2].len()], &frames[2][..], "the write in flight, whole, where it landed");
        assert_eq!(last_at + site.bytes.len(), write_at + frames[2].len(), "the file grown to the write's end");
        assert!(site.bytes[frames[2].len()..].iter().all(|&b| b == 0), "its own place as before: nothing");
        assert!(decode_frame(&site.bytes, Place::aof(1, last_at as u64)).is_err(), "invalid where it landed");
        let (damaged, damage) =
            snapshot.damaged(&image, &path, site.offset_bytes, &site.bytes, site.kind).expect("a change");
        assert_eq!(damaged.files()[0].1.len(), write_at + frames[2].len());
        assert!(damage.offset_bytes >= last_at as u64 && !damage.vouched, "{damage:?}");
        assert!(in_flight_sites(&image, &[]).is_empty(), "nothing in flight, no site");
    }

    #[test]
    fn a_lost_write_leaves_the_records_place_as_it_was_before_that_write() {
        let old = vec![b'o'; 20];
        let (image, path, frames) = log_image(&old);
        let second_at = (frames[0].len() + frames[1].len()) as u64;
        let all = sites(&image);
        let lost: Vec<&DamageSite> = all.iter().filter(|s| s.kind == DamageKind::LostWrite).collect();
        let third = lost.iter().find(|s| s.offset_bytes == second_at).expect("the last frame's write lost");
        assert_eq!(third.bytes, old[..frames[2].len()], "the place keeps its old bytes");
        let first = lost.iter().find(|s| s.offset_bytes == frames[0].len() as u64).expect("an append lost");
        assert!(first.bytes.iter().all(|&b| b == 0), "an append's place held nothing: zeros, the length kept");
        // Each write was its own fsync: no flush tail apart from the write.
        assert_eq!(lost.len(), 3, "{lost:?}");
        assert!(image.lost_write(&path, 0..4, LostWrites::One).is_some());
    }
}
