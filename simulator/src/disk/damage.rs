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

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use super::config::{Damage, DamageKind};
use super::crash_states::CrashState;
use super::data::{vouched, InodeId};
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
    /// `bytes` written over the file at `path` from `offset_bytes` on
    /// (clipped at the file's end), and the damage as the disk announces
    /// media corruption: from the first byte that changed. `None` if no
    /// file is at `path` or no byte changed.
    pub fn damaged(
        &self,
        image: &DiskImage,
        path: &Path,
        offset_bytes: u64,
        bytes: &[u8],
        kind: DamageKind,
    ) -> Option<(DiskImage, Damage)> {
        let damage = Damage { kind, ..self.damage(image, path, offset_bytes, bytes)? };
        let (id, at) = locate(image, path, offset_bytes, bytes.len())?;
        let mut new = image.files[&id].bytes.to_vec();
        new[at.clone()].copy_from_slice(&bytes[..at.len()]);
        let mut damaged = image.clone();
        damaged.files.insert(id, ImageFile { bytes: Arc::from(new), hash: None });
        Some((damaged, damage))
    }

    /// The damage [`DiskSnapshot::damaged`] would announce, without
    /// building the damaged image: `None` if it would change no byte.
    pub fn damage(&self, image: &DiskImage, path: &Path, offset_bytes: u64, bytes: &[u8]) -> Option<Damage> {
        let (id, at) = locate(image, path, offset_bytes, bytes.len())?;
        let old = &image.files[&id].bytes;
        let start = at.start;
        let differs = |i: usize| bytes[i - start] != old[i];
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

impl DiskImage {
    /// For a durable image: the file at `path` as it would be had the
    /// drive lost the newest write that touched `range` (with `how`, the
    /// rest of that write's fsync too), everything else durable — as the
    /// first byte that changes and the bytes from there to the last that
    /// does (`history.rs` says what the lost writes' places hold). `None`
    /// if the file has no history, no write touched the range, or nothing
    /// would change.
    pub fn lost_write(&self, path: &Path, range: Range<u64>, how: LostWrites) -> Option<(u64, Vec<u8>)> {
        let (id, _) = locate(self, path, range.start, 0)?;
        history::undo(&self.files[&id].bytes, self.histories.get(&id)?, range, how)
    }

    /// For a durable image: what `range` of the file at `path` held
    /// before the newest write that touched it — a misdirected write's
    /// own place after the drive put it elsewhere. Zeros where the
    /// history does not say (no history, or no write there).
    pub fn before_newest_write(&self, path: &Path, range: Range<u64>) -> Vec<u8> {
        let history = locate(self, path, range.start, 0).and_then(|(id, _)| self.histories.get(&id));
        match history {
            Some(history) => history::before_newest(history, range),
            None => vec![0; usize::try_from(range.end - range.start).expect("a range of a file in memory")],
        }
    }
}

/// The file at `path` in `image` and the bytes of it that `len_bytes`
/// written from `offset_bytes` cover (clipped at its end); `None` if there
/// is no such file or the offset lies past its end.
fn locate(image: &DiskImage, path: &Path, offset_bytes: u64, len_bytes: usize) -> Option<(InodeId, Range<usize>)> {
    let (dir, name) = (path.parent()?, path.file_name()?.to_str()?);
    let id = *image.dirs.get(dir)?.get(name)?;
    let old_len = image.files.get(&id)?.bytes.len();
    let start = usize::try_from(offset_bytes).ok().filter(|&start| start < old_len)?;
    Some((id, start..start + len_bytes.min(old_len - start)))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use vfs::{OpenMode, Vfs};

    use super::super::{CrashMode, DamageKind, DiskConfig, SimVfs};
    use crate::trace::Trace;

    /// A file of two synced writes: damage to the first is vouched (the
    /// second write was made when the first was durable), damage to the
    /// second is not; and nothing unsynced reaches the durable image.
    #[test]
    fn damage_is_vouched_where_a_later_durable_write_could_say_so() {
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        let dir = PathBuf::from("/db");
        disk.create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let mut file = disk.open(&path, OpenMode::Create).unwrap();
        file.write_at(0, b"first").unwrap();
        file.sync().unwrap();
        file.write_at(5, b"second").unwrap();
        file.sync().unwrap();
        disk.sync_dir(&dir).unwrap();
        file.write_at(11, b"unsynced").unwrap();
        disk.start_recording();
        let _ = file.len();
        let recording = disk.take_recording();
        let snapshot = recording.snapshots.last().unwrap();
        let image = snapshot.durable_image();
        assert_eq!(image.files(), vec![(path.clone(), &b"firstsecond"[..])]);
        let (damaged, damage) = snapshot.damaged(&image, &path, 1, b"X", DamageKind::Media).unwrap();
        assert_eq!((damage.offset_bytes, damage.vouched), (1, true));
        assert_eq!(damaged.files()[0].1, b"fXrstsecond");
        let (_, damage) = snapshot.damaged(&image, &path, 6, b"Xcond-and-past-the-end", DamageKind::Media).unwrap();
        assert_eq!((damage.offset_bytes, damage.vouched), (6, false));
        assert!(snapshot.damaged(&image, &path, 0, b"f", DamageKind::Media).is_none(), "no byte changed");
        assert!(snapshot.damaged(&image, &dir.join("other"), 0, b"X", DamageKind::Media).is_none());
    }
}
