//! The kit's side of `sim explore --damage`: where an engine's records lie
//! (the adapter says, [`Adapter::records`]), how each is damaged, and the
//! verdict on a damaged image's recovery.
//!
//! The explorer (`simulator::explore::damage`) takes each distinct durable
//! image of the recording and, one site at a time, damages it and recovers
//! it. For a kit engine that promises to detect damage
//! ([`Spec::detects_damage`](super::Spec::detects_damage)) the rule is the random mode's after
//! announced damage: the open may refuse the bytes as corrupt, or come
//! back with an older committed state (a silent rollback: what a reader
//! that cuts at the first bad record does), never with a state no commit
//! had — which is what a record read without its checksum gives. The
//! recovery is the plain one (open, read, probe); the kit has no
//! point-in-time mode, so each damaged image is opened one way.

use std::path::Path;

use super::explore::{Recovery, Refusal};
use super::model::Model;
use super::{Adapter, RecordSpan};
use simulator::disk::{DamageKind, DiskImage, LostWrites};
use simulator::failure::Check;
use simulator::seam::{DamageSite, DamageVerdict, DamageWays};

/// The one kind of record the kit damages: whatever the adapter's
/// [`Adapter::records`] names, in whichever file.
const RECORD: &str = "record the adapter describes";

/// The kit's kind of record and its ways (see [`sites`]): a bit flipped
/// and the bytes zeroed are media damage; the lost write, where history
/// has one.
pub(super) const DAMAGE_WAYS: &[DamageWays] =
    &[DamageWays { record_kind: RECORD, ways: &[DamageKind::Media, DamageKind::LostWrite] }];

/// Every site of `image` the adapter describes: per record, a bit flipped
/// in its middle byte, its bytes zeroed, and the write that put it there
/// lost (where the disk's history says what its place held before).
pub(super) fn sites<A: Adapter>(adapter: &A, image: &DiskImage) -> Vec<DamageSite> {
    let mut sites = Vec::new();
    for (path, bytes) in image.files() {
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else { continue };
        let Some(records) = adapter.records(name, bytes) else { continue };
        for record in &records {
            record_sites(&mut sites, image, &path, bytes, record);
        }
    }
    sites
}

/// The sites of one record of the file at `path` (holding `bytes`).
fn record_sites(sites: &mut Vec<DamageSite>, image: &DiskImage, path: &Path, bytes: &[u8], record: &RecordSpan) {
    let start = usize::try_from(record.offset_bytes).expect("a record of a file in memory");
    let len = usize::try_from(record.len_bytes).expect("a record of a file in memory");
    assert!(
        len > 0 && start.checked_add(len).is_some_and(|end| end <= bytes.len()),
        "Adapter::records named {} bytes at {start} of a {}-byte file {}: a record past the end",
        len,
        bytes.len(),
        path.display()
    );
    let what = |how: &str| format!("{} {} (bytes {start}..{}): {how}", path.display(), record.what, start + len);
    let middle = start + len / 2;
    sites.push(DamageSite {
        path: path.to_path_buf(),
        offset_bytes: middle as u64,
        bytes: vec![bytes[middle] ^ 0x10],
        kind: DamageKind::Media,
        what: what("a bit flipped in its middle byte"),
        record_kind: RECORD,
    });
    sites.push(DamageSite {
        path: path.to_path_buf(),
        offset_bytes: record.offset_bytes,
        bytes: vec![0; len],
        kind: DamageKind::Media,
        what: what("its bytes zeroed"),
        record_kind: RECORD,
    });
    let range = record.offset_bytes..record.offset_bytes + record.len_bytes;
    if let Some((offset_bytes, old)) = image.lost_write(path, range, LostWrites::One) {
        let what = what("the write that put it there lost, its place left as before");
        sites.push(DamageSite {
            path: path.to_path_buf(),
            offset_bytes,
            bytes: old,
            kind: DamageKind::LostWrite,
            what,
            record_kind: RECORD,
        });
    }
}

/// The verdict on `recovery` of a damaged image, in `context` (see the
/// module doc).
pub(super) fn recover<A: Adapter>(
    recovery: Recovery<'_, A>,
    context: &Model,
) -> Result<DamageVerdict, (Check, String)> {
    match recovery.run(&mut |_, _, _| {}) {
        Err(Refusal { corrupt: true, .. }) => Ok(DamageVerdict::Refused),
        Err(refusal) => Err((refusal.check, refusal.detail)),
        Ok((state, probe)) => {
            context.allows(&state, true).map_err(|detail| (Check::Durability, detail))?;
            probe.map_err(|detail| (Check::Probe, detail))?;
            Ok(DamageVerdict::Opened)
        }
    }
}
