//! Compaction: replace a ledger grown long with dead records by one that
//! holds only the live set and `next_seq`.
//!
//! Every retired segment leaves its ADD and its DROP in the ledger for
//! good, so without compaction an open replays every registration the
//! directory ever saw. [`Manifest::compact`] writes a new ledger — a
//! `HEADER` that says the file is compacted and carries `next_seq`,
//! `COMPACTED next_seq n`, the `n` live entries' ADDs in ascending seq,
//! `COMPACTED_END next_seq n` (byte layout in `record.rs`, replay rules in
//! `replay.rs`) — and makes it the manifest. `next_seq` carries the one
//! thing the dead records were still needed for: no seq below it is ever
//! ADDed again, so a seq stays unique for the life of the directory across
//! any number of compactions. The header carries it too, so that damage
//! which destroys the snapshot whole is refused rather than read as a
//! fresh ledger's torn first record (which would forget `next_seq`). The
//! new ledger is always in the current format (version 3), whatever the
//! old one's: compaction is how a version-2 manifest is upgraded.
//!
//! # When
//!
//! [`Manifest::compaction_due`]: the file holds at least
//! [`COMPACT_MIN_RECORDS`] ADD and DROP records, and at least
//! [`COMPACT_RECORDS_PER_LIVE`] per live entry — dead records are at least
//! as many as live ones. The store asks after a rewrite's retirement and at
//! the end of an open (`store/mod.rs`), the two places that DROP.
//!
//! # The protocol and its crash gaps
//!
//! 1. Write the new ledger to [`MANIFEST_TEMP_FILE`] (cut to empty first:
//!    a stale one may be there) and fsync it — mark `manifest.compact_synced`.
//! 2. Rename it over `MANIFEST` — mark `manifest.compact_renamed`.
//! 3. Fsync the directory — mark `manifest.compact_dir_synced`.
//! 4. Append to the new file from then on.
//!
//! - A crash before 2 leaves `MANIFEST` as it was, and maybe a temp file,
//!   whole or not.
//! - A crash between 2 and 3 leaves the name bound to either file: the
//!   rename is atomic but not yet durable. Both are whole (the new one was
//!   fsynced in 1) and replay to the same live set and `next_seq`, so
//!   either is right; a surviving temp file is the new ledger, unused.
//! - Nothing is appended before 3: an ADD fsynced into the new file while
//!   its rename could still be lost would be lost with it, and the store
//!   logs frames naming a segment once its ADD returns.
//! - A process crash (page cache kept) sees every step it got to, each of
//!   which leaves one whole ledger under the name.
//!
//! **The temp file is never read.** `MANIFEST` always names a whole ledger,
//! old or new, so a temp file found at open is debris of an interrupted
//! compaction, whatever it holds: open ignores it, and the store's sweep
//! unlinks it (not in a read-only or point-in-time open, which remove
//! nothing; the audit reports it as a leftover, like the rewrite's).
//!
//! # Failures
//!
//! Any failure poisons the manifest, as a failed append does. Before the
//! rename the old file is still whole, but a failed fsync says this file
//! system may silently drop written pages; after a failed rename or
//! directory fsync which file the name holds is unknown. Either ledger is
//! right, so rather than tell the cases apart the manifest stops, and the
//! next open decides.
//!
//! # Where it must not run
//!
//! Not on a read-only manifest (refused with [`Error::ReadOnly`]), not
//! while opening's writes are pending (a programming error: asserted), and
//! not by a store opened point-in-time — the store's rule, since after
//! damage nothing is removed, and compaction removes the ledger's history.

use std::path::Path;

use crate::vfs::{OpenMode, Vfs, VfsFile};
use crate::IoOp;
use crate::{Error, Phase, Result};

use super::record;
use super::replay::{replay, SCAN_BUDGET_BYTES};
use super::{Manifest, MANIFEST_TEMP_FILE};

/// Compaction waits until the file holds at least this many ADD and DROP
/// records (about a kilobyte). A ledger that short replays in
/// microseconds, while compacting costs a file fsync and a directory fsync:
/// a store that keeps a handful of segments and churns them should pay
/// that at most once per eight retirements (each of which fsyncs the
/// manifest once and came with a rewrite), not on every rewrite. It is kept
/// that small on purpose all the same: the simulator's runs (400
/// operations) must reach compaction in a good share of seeds, or its
/// crash gaps go untested. Measured over seeds 0..5000: 1443 seeds (29%)
/// compact at least once; 17% would at 24 records, 8% at 32, under 1% at
/// 48, and the ceiling (any dead record at all) is 57% — the other seeds
/// never retire a segment.
pub const COMPACT_MIN_RECORDS: u64 = 16;

/// Compaction waits until the file holds at least this many records per
/// live entry: dead records (an ADD and a DROP per retired segment) are at
/// least as many as live ones. Then compaction at least halves the file,
/// and its cost is amortized: if ADDs `a` and DROPs `d` were appended
/// since the last compaction left `l0` entries, it is due only once
/// `l0 + a + d >= 2 * (l0 + a - d)`, that is `3d >= l0 + a`, and it writes
/// `l0 + a - d <= 2d` ADDs — at most two records per record appended. A
/// long-lived store's open replays at most about twice its live set plus
/// what was appended since the last check.
pub const COMPACT_RECORDS_PER_LIVE: u64 = 2;

// A compacted ledger is never due again at once: it holds one record per
// live entry, so it would take a minimum of zero records and a ratio of one.
const _: () = assert!(COMPACT_MIN_RECORDS > 0 && COMPACT_RECORDS_PER_LIVE > 1);

impl Manifest {
    /// Whether dead records dominate the file (see the module doc).
    pub fn compaction_due(&self) -> bool {
        let live = self.ledger.live().len() as u64;
        assert!(self.file_records >= live, "every live entry has its ADD in the file");
        self.file_records >= COMPACT_MIN_RECORDS && self.file_records >= COMPACT_RECORDS_PER_LIVE * live
    }

    /// ADD and DROP records in the file as it stands.
    #[cfg(test)]
    pub fn file_records(&self) -> u64 {
        self.file_records
    }

    /// Replace the file by a compacted ledger of the live set and
    /// `next_seq` (see the module doc), durably; later appends go to the
    /// new file. Refused on a read-only manifest ([`Error::ReadOnly`]) or a
    /// poisoned one ([`Error::Poisoned`]); any failure poisons it.
    pub fn compact(&mut self, vfs: &dyn Vfs) -> Result<()> {
        self.refuse_unless_writable()?;
        let dir = self.path.parent().expect("the manifest lives in a directory").to_path_buf();
        let temp_path = dir.join(MANIFEST_TEMP_FILE);
        let image = self.compacted_image();
        let live = self.ledger.live().len() as u64;
        match self.write_and_rename(vfs, &dir, &temp_path, &image) {
            Ok(file) => {
                // The old file's handle closes here; its inode is gone.
                self.file = Some(file);
                self.append_offset_bytes = image.len() as u64;
                self.file_records = live;
                assert!(!self.compaction_due(), "a compacted ledger is due again at once");
                Ok(())
            }
            Err(err) => {
                self.poisoned = Some(format!("manifest compaction failed: {err}"));
                Err(err)
            }
        }
    }

    /// The compacted ledger's bytes, checked to replay to exactly this
    /// ledger before anything is written.
    fn compacted_image(&self) -> Vec<u8> {
        let live = self.ledger.live();
        let next_seq = self.ledger.next_seq();
        let mut image = Vec::new();
        // The header says "compacted", so that damage that destroys the
        // whole snapshot is refused rather than read as a torn first record.
        record::encode_header(&mut image, record::Header::Compacted { next_seq });
        record::encode_compacted(&mut image, next_seq, live.len() as u64);
        for entry in live.values() {
            // It was appended once, so it fits a frame.
            assert!(record::add_payload_bytes(entry) <= crate::frame::MAX_FRAME_PAYLOAD_BYTES);
            assert!(entry.seq < next_seq);
            record::encode_add(&mut image, 0, entry);
        }
        record::encode_compacted_end(&mut image, next_seq, live.len() as u64);
        // Cheap next to the fsyncs, and the one place a ledger is rewritten
        // rather than appended to: never write one that reads back as
        // anything else.
        let replayed = replay(&self.path, &image, SCAN_BUDGET_BYTES).expect("a compacted ledger replays");
        assert_eq!(replayed.ledger, self.ledger, "a compacted ledger replays to the ledger it compacts");
        assert_eq!(replayed.valid_len_bytes, image.len() as u64);
        assert!(replayed.compacted);
        assert_eq!(replayed.header, Some(record::Header::Compacted { next_seq }));
        // What `compact` counts as the file's records once it is renamed.
        assert_eq!(replayed.records, live.len() as u64, "a compacted ledger holds one ADD per live entry");
        image
    }

    /// Steps 1 to 3 of the module doc; the new file's handle on success.
    fn write_and_rename(&self, vfs: &dyn Vfs, dir: &Path, temp_path: &Path, image: &[u8]) -> Result<Box<dyn VfsFile>> {
        let mut file = vfs.open(temp_path, OpenMode::Truncate).map_err(|e| Error::io(IoOp::Create, temp_path, e))?;
        file.write_at(0, image).map_err(|e| Error::io(IoOp::Write, temp_path, e))?;
        // Planted: the rename goes first and the fsync after it, so for a
        // moment the name may reach the disk before the bytes it names.
        let rename_first = canary!(CompactRenameBeforeFsync);
        if !rename_first {
            file.sync().map_err(|e| Error::io(IoOp::Sync, temp_path, e))?;
        }
        vfs.mark(Phase::ManifestCompactSynced.as_str());
        vfs.rename(temp_path, &self.path).map_err(|e| Error::io(IoOp::Rename, temp_path, e))?;
        vfs.mark(Phase::ManifestCompactRenamed.as_str());
        if rename_first {
            file.sync().map_err(|e| Error::io(IoOp::Sync, &self.path, e))?;
        }
        vfs.sync_dir(dir).map_err(|e| Error::io(IoOp::SyncDir, dir, e))?;
        vfs.mark(Phase::ManifestCompactDirSynced.as_str());
        Ok(file)
    }
}
