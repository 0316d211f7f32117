//! Damage placed by hand in a durable image, for `sim explore --damage`.
//!
//! The random mode's media corruption strikes one random sector at a power
//! loss (`crash.rs`); exploration instead takes the disk as power loss
//! finds it keeping nothing unsynced, lets the target say where its
//! records lie, and damages each one in turn. The disk's part is the same
//! in both: write the bad bytes, and announce the damage — which file,
//! from which byte, and whether a later durable write could have vouched
//! for those bytes (`Inode::vouched`), since that decides whether an
//! engine can tell the damage from a torn write at all.
//!
//! A damage site may also run past a file's end: the file grows to hold
//! it, as a write that grew the file leaves it when the drive put its
//! bytes elsewhere (the file system saw the write: the length is kept,
//! the place holds what it held before). And a snapshot names the writes
//! in flight at its crash index ([`InFlightWrite`]: issued, not yet
//! fsynced), which a drive may yet write back at another record's place:
//! the fault model's misdirected write, for the write the crash caught.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::config::{Damage, DamageKind};
use super::crash_states::CrashState;
use super::data::{vouched, DataOp, InodeId};
use super::history::{self, LostWrites};
use super::image::{DiskImage, ImageFile};
use super::snapshot::DiskSnapshot;

impl DiskSnapshot {
    /// The disk a power loss now leaves when nothing unsynced survives:
    /// every durable entry, every file's durable bytes.
    pub fn durable_image(&self) -> DiskImage {
        let mut image = self.image(&CrashState::strict(self.pending_dir_changes()));
        for id in image.files.keys() {
            if let Some(history) = self.files.get(id).and_then(|file| file.history.clone()) {
                image.histories.insert(*id, history);
            }
        }
        image
    }

    /// `image` (this snapshot's [`DiskSnapshot::durable_image`]) with
    /// `bytes` written over the file at `path` from `offset_bytes` on (the
    /// file grown to hold any that run past its end: see the module doc),
    /// and the damage as the disk announces media corruption: from the
    /// first byte that changed. `None` if no file is at `path`, the offset
    /// lies past its end, or no byte changed.
    pub fn damaged(
        &self,
        image: &DiskImage,
        path: &Path,
        offset_bytes: u64,
        bytes: &[u8],
        kind: DamageKind,
    ) -> Option<(DiskImage, Damage)> {
        let damage = Damage { kind, ..self.damage(image, path, offset_bytes, bytes)? };
        let (id, start) = locate(image, path, offset_bytes)?;
        let mut new = image.files[&id].bytes.to_vec();
        let end = start + bytes.len();
        if new.len() < end {
            new.resize(end, 0);
        }
        new[start..end].copy_from_slice(bytes);
        let mut damaged = image.clone();
        damaged.files.insert(id, ImageFile { bytes: Arc::from(new), hash: None });
        Some((damaged, damage))
    }

    /// The damage [`DiskSnapshot::damaged`] would announce, without
    /// building the damaged image: `None` if it would change no byte.
    pub fn damage(&self, image: &DiskImage, path: &Path, offset_bytes: u64, bytes: &[u8]) -> Option<Damage> {
        let (id, start) = locate(image, path, offset_bytes)?;
        let old = &image.files[&id].bytes;
        let at = start..start + bytes.len();
        // A byte past the old end is new whatever it holds: the file grows.
        let differs = |i: usize| old.get(i) != Some(&bytes[i - start]);
        let first = at.clone().find(|&i| differs(i))?;
        let last = at.rev().find(|&i| differs(i)).expect("first changed");
        let file = self.files.get(&id).expect("a snapshot holds every inode its image names");
        let range = first as u64..last as u64 + 1;
        let vouched = vouched(file.vouching.whole_bytes, &file.vouching.vouchers, range);
        let path = path.to_string_lossy().into_owned();
        Some(Damage {
            kind: DamageKind::Media,
            path,
            offset_bytes: first as u64,
            vouched,
            matches_replacement_bytes: 0,
        })
    }
}

/// A write in flight at a crash index: made to a file the durable image
/// names, not yet made durable by an fsync (one of the snapshot's pending
/// data operations). A power loss may still keep it — whole, torn, or, as
/// the fault model's misdirected write, at another place of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlightWrite<'a> {
    /// The file's full path, as the durable image names it.
    pub path: PathBuf,
    /// Where the write was meant to go.
    pub offset_bytes: u64,
    /// What it writes.
    pub bytes: &'a [u8],
}

impl DiskSnapshot {
    /// The writes in flight at this snapshot to the files `image` (its
    /// [`DiskSnapshot::durable_image`]) names, by directory and name, each
    /// file's oldest first.
    pub fn in_flight_writes(&self, image: &DiskImage) -> Vec<InFlightWrite<'_>> {
        let mut writes = Vec::new();
        for (dir, entries) in &image.dirs {
            for (name, id) in entries {
                let file = self.files.get(id).expect("a snapshot holds every inode its image names");
                for op in &file.pending {
                    if let DataOp::Write { offset_bytes, data } = op {
                        let (path, offset_bytes) = (dir.join(name), *offset_bytes);
                        writes.push(InFlightWrite { path, offset_bytes, bytes: data });
                    }
                }
            }
        }
        writes
    }
}

impl DiskImage {
    /// For a durable image: the file at `path` as it would be had the
    /// drive lost the newest write that touched `range` (with `how`, the
    /// rest of that write's fsync too), everything else durable — as the
    /// first byte that changes and the bytes from there to the last that
    /// does (`history.rs` says what the lost writes' places hold). `None`
    /// if the file has no history, no write touched the range, or nothing
    /// would change.
    pub fn lost_write(&self, path: &Path, range: Range<u64>, how: LostWrites) -> Option<(u64, Vec<u8>)> {
        let (id, _) = locate(self, path, range.start)?;
        history::undo(&self.files[&id].bytes, self.histories.get(&id)?, range, how)
    }

    /// For a durable image: what `range` of the file at `path` held
    /// before the newest write that touched it — a misdirected write's
    /// own place after the drive put it elsewhere. Zeros where the
    /// history does not say (no history, or no write there).
    pub fn before_newest_write(&self, path: &Path, range: Range<u64>) -> Vec<u8> {
        let history = locate(self, path, range.start).and_then(|(id, _)| self.histories.get(&id));
        match history {
            Some(history) => history::before_newest(history, range),
            None => vec![0; usize::try_from(range.end - range.start).expect("a range of a file in memory")],
        }
    }
}

/// The file at `path` in `image` and `offset_bytes` as an index into
/// it; `None` if there is no such file or the offset lies past its end.
fn locate(image: &DiskImage, path: &Path, offset_bytes: u64) -> Option<(InodeId, usize)> {
    let (dir, name) = (path.parent()?, path.file_name()?.to_str()?);
    let id = *image.dirs.get(dir)?.get(name)?;
    let old_len = image.files.get(&id)?.bytes.len();
    let start = usize::try_from(offset_bytes).ok().filter(|&start| start < old_len)?;
    Some((id, start))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use vfs::{OpenMode, Vfs};

    use super::super::{CrashMode, DamageKind, DiskConfig, SimVfs};
    use crate::trace::Trace;

    /// A strict disk holding `/db/log`, its first write (`first`) synced;
    /// the directory, the log's path, and the log open.
    fn log_with_first_synced() -> (SimVfs, PathBuf, PathBuf, Box<dyn vfs::VfsFile>) {
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        let dir = PathBuf::from("/db");
        disk.create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let mut file = disk.open(&path, OpenMode::Create).unwrap();
        file.write_at(0, b"first").unwrap();
        file.sync().unwrap();
        (disk, dir, path, file)
    }

    /// The disk as a recording finds it at `file`'s next I/O (a `len`).
    fn snapshot_at_next_io(disk: &SimVfs, file: &dyn vfs::VfsFile) -> std::sync::Arc<super::super::DiskSnapshot> {
        disk.start_recording();
        let _ = file.len();
        disk.take_recording().snapshots.pop().expect("the len passed the recorder")
    }

    /// A file of two synced writes: damage to the first is vouched (the
    /// second write was made when the first was durable), damage to the
    /// second is not; and nothing unsynced reaches the durable image.
    #[test]
    fn damage_is_vouched_where_a_later_durable_write_could_say_so() {
        let (disk, dir, path, mut file) = log_with_first_synced();
        file.write_at(5, b"second").unwrap();
        file.sync().unwrap();
        disk.sync_dir(&dir).unwrap();
        file.write_at(11, b"unsynced").unwrap();
        let snapshot = snapshot_at_next_io(&disk, file.as_ref());
        let image = snapshot.durable_image();
        assert_eq!(image.files(), vec![(path.clone(), &b"firstsecond"[..])]);
        let (damaged, damage) = snapshot.damaged(&image, &path, 1, b"X", DamageKind::Media).unwrap();
        assert_eq!((damage.offset_bytes, damage.vouched), (1, true));
        assert_eq!(damaged.files()[0].1, b"fXrstsecond");
        let (_, damage) = snapshot.damaged(&image, &path, 6, b"Xcond-and-past-the-end", DamageKind::Media).unwrap();
        assert_eq!((damage.offset_bytes, damage.vouched), (6, false));
        assert!(snapshot.damaged(&image, &path, 0, b"f", DamageKind::Media).is_none(), "no byte changed");
        assert!(snapshot.damaged(&image, &dir.join("other"), 0, b"X", DamageKind::Media).is_none());
        assert!(snapshot.damaged(&image, &path, 11, b"X", DamageKind::Media).is_none(), "an offset past the end");
    }

    /// The unsynced write is in flight, not durable; a site that runs past
    /// the end grows the file, and growth alone is a change.
    #[test]
    fn a_snapshot_names_its_writes_in_flight_and_a_site_past_the_end_grows_the_file() {
        let (disk, dir, path, mut file) = log_with_first_synced();
        disk.sync_dir(&dir).unwrap();
        file.write_at(5, b"next").unwrap();
        let snapshot = snapshot_at_next_io(&disk, file.as_ref());
        let image = snapshot.durable_image();
        assert_eq!(image.files(), vec![(path.clone(), &b"first"[..])]);
        let in_flight = snapshot.in_flight_writes(&image);
        assert_eq!(in_flight, vec![super::InFlightWrite { path: path.clone(), offset_bytes: 5, bytes: b"next" }]);
        let (damaged, damage) =
            snapshot.damaged(&image, &path, 1, b"next\0\0\0\0", DamageKind::MisdirectedWrite).unwrap();
        assert_eq!(damaged.files()[0].1, b"fnext\0\0\0\0", "landed at byte 1, the file grown to the write's end");
        assert_eq!((damage.offset_bytes, damage.kind, damage.vouched), (1, DamageKind::MisdirectedWrite, false));
        let (_, damage) = snapshot.damaged(&image, &path, 4, b"t\0", DamageKind::Media).unwrap();
        assert_eq!(damage.offset_bytes, 5, "the same bytes, then one past the end: a change");
    }
}
