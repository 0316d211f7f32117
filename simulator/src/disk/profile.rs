//! File-system profiles: what the file system under the simulated disk
//! promises beyond POSIX, as named rules the disk consults.
//!
//! The disk's default is `posix`: the weakest behaviour POSIX allows (a
//! file's fsync makes nothing of any directory durable, directory changes
//! survive a crash in any subset, a failed directory fsync leaves later
//! fsyncs free to succeed). Engines run on real file systems that promise
//! more, and a verdict reached on the weakest disk can fail where no real
//! one would: a profile says which file system a verdict holds on.
//!
//! A profile is data, not code: each field is one rule, with its source in
//! `FILESYSTEMS.md` at the repository root. Only rules that can be stated
//! precisely are modelled, and each modelled rule keeps less than the real
//! file system may (a journal commits more than the file's own name, say):
//! a profile may be weaker than reality, never stronger. Under `posix`
//! every rule is off, the disk consults none of them on its hot paths, and
//! nothing draws a random number it did not draw before profiles existed —
//! so every trace under `posix` is what it was.

/// What a successful fsync (or fdatasync) of a file makes durable of the
/// directory entries that name it (its data and length are durable on
/// every profile: that is POSIX's fsync, and fdatasync's too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncNames {
    /// Nothing: only a directory fsync makes a create or a rename durable
    /// (POSIX; what the disk did before profiles).
    Nothing,
    /// ext4's fdatasync: the journal commits in order up to the
    /// transaction that created the file (the create sets the inode's
    /// datasync transaction, a rename does not): every pending change of a
    /// directory, oldest first, up to and including the file's create
    /// becomes durable. A later rename of it stays pending, and so does
    /// everything after the create.
    JournalPrefixToCreate,
    /// The journal commits in order up to the file's last metadata change:
    /// every pending change of a directory, oldest first, up to and
    /// including the last one that names the file (its create or a rename
    /// to it), becomes durable. Later changes stay pending, and so do other
    /// directories' (a journal commits those too; the profile does not
    /// count on it). ext4 (data=ordered) and XFS.
    JournalPrefix,
    /// The file's own changes are logged with it (btrfs's log tree): every
    /// pending change of a directory that is about the file (its create,
    /// a rename of it, an unlink of one of its names) becomes durable, and
    /// the others stay pending. Where one of the others, made before one of
    /// the file's, touches a name the file's changes touch, the order
    /// between them matters and the profile makes nothing durable in that
    /// directory (weaker than btrfs, which resolves such conflicts at log
    /// replay).
    OwnChanges,
}

/// One file-system profile (see the module doc and `FILESYSTEMS.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsProfile {
    /// The name on the command line, in `.ops` files and in JSON.
    pub name: &'static str,
    /// The name for a person: the file system and the mode it models.
    pub title: &'static str,
    /// What a file's fsync persists of its own names.
    pub fsync_names: FsyncNames,
    /// What a file's fdatasync (and a write through an `O_DSYNC`
    /// descriptor) persists of its own names: its data and length, never
    /// less, and of its names at most what its fsync does.
    pub fdatasync_names: FsyncNames,
    /// ext4's `auto_da_alloc`: a rename that replaces an existing file
    /// first allocates the renamed file's delayed blocks, so under
    /// `data=ordered` its data reaches the disk before the rename commits.
    /// The disk keeps, with such a rename that survives a crash, the
    /// renamed file's data written before it, where that is sure: the file
    /// had nothing durable and only writes pending, no two in one 4 KiB
    /// block (`state/carried.rs`, `FileSystem::delayed_ops`).
    pub auto_da_alloc: bool,
    /// An append's size update can reach the disk before its bytes, so a
    /// crash may leave the file grown with zeros where the write was
    /// (crash-state family 5). ext4 does, for an append into an
    /// already-allocated block (its `i_disksize` update is journaled, the
    /// bytes are not ordered: probe `append_unsynced`); XFS updates the
    /// on-disk size at I/O completion (`xfs_setfilesize`: "Update on-disk
    /// file size now that data has been written to disk.") and btrfs at
    /// ordered-extent completion (`btrfs_inode_safe_disk_i_size_write`),
    /// so neither does (FILESYSTEMS.md). The explorers only: the random
    /// mode's `reorder` draws the write's end with old sectors anywhere.
    pub size_ahead_of_data: bool,
    /// A directory's pending changes survive a power loss as a prefix, in
    /// the order they were made, in every crash mode (a journal or a log
    /// replays in order); off, `reorder` keeps any subset.
    pub dir_changes_in_order: bool,
    /// A file's `set_len` (ftruncate, either way) is a metadata change the
    /// journal commits in order with the directory changes, in one
    /// transaction stream: at a power loss it survives only if every
    /// directory change made before it survives, and a file fsync that
    /// makes it durable makes those durable too (ext4's `ext4_setattr`
    /// sets `i_disksize` in a journal handle, XFS's `xfs_setattr_size`
    /// logs `i_disk_size`: `FILESYSTEMS.md`). Off, a cut may outlive an
    /// earlier lost unlink. Modelled one way only: a directory change may
    /// still survive a lost `set_len` made before it (weaker than the
    /// journal).
    pub set_len_journaled: bool,
    /// A directory fsync that fails (the journal's commit failed) shuts the
    /// file system down: every later directory fsync fails with EIO,
    /// changing nothing, and every later file fsync fails with EIO and
    /// writes nothing back, leaving the file's dirty pages readable, until
    /// the next power loss or restart (which is then a remount: what a
    /// power loss keeps). Only a drawn failure does: exploration's armed
    /// one shuts nothing down.
    pub failed_sync_dir_shuts_down: bool,
    /// A block a kept cut freed (a pending `set_len` below it that the
    /// power loss kept) and a later write grew the file back over can show
    /// its bytes from before the cut. Off, such a block holds what the page
    /// cache held (the write's bytes, zeros where none) once the length
    /// that covers it survives: ext4's `data=ordered` writes a newly
    /// allocated block before the size that exposes it commits, XFS
    /// updates the size at I/O completion, btrfs writes it copy-on-write
    /// (FILESYSTEMS.md, Known discrepancies 11). The random mode's
    /// `reorder` only.
    pub freed_blocks_stale: bool,
}

impl FsProfile {
    /// The weakest POSIX allows: every rule off (the default).
    pub const POSIX: FsProfile = FsProfile {
        name: "posix",
        title: "posix (the weakest POSIX allows)",
        fsync_names: FsyncNames::Nothing,
        fdatasync_names: FsyncNames::Nothing,
        auto_da_alloc: false,
        size_ahead_of_data: true,
        dir_changes_in_order: false,
        set_len_journaled: false,
        failed_sync_dir_shuts_down: false,
        freed_blocks_stale: true,
    };

    /// ext4 mounted as `mount` mounts it: `data=ordered`, `auto_da_alloc`.
    pub const EXT4: FsProfile = FsProfile {
        name: "ext4",
        title: "ext4 (data=ordered, auto_da_alloc)",
        fsync_names: FsyncNames::JournalPrefix,
        fdatasync_names: FsyncNames::JournalPrefixToCreate,
        auto_da_alloc: true,
        size_ahead_of_data: true,
        dir_changes_in_order: true,
        set_len_journaled: true,
        failed_sync_dir_shuts_down: true,
        freed_blocks_stale: false,
    };

    /// ext4 mounted `data=ordered,noauto_da_alloc`.
    pub const EXT4_NOAUTO: FsProfile = FsProfile {
        name: "ext4-noauto",
        title: "ext4 (data=ordered, noauto_da_alloc)",
        auto_da_alloc: false,
        ..FsProfile::EXT4
    };

    /// XFS with its default (delayed) logging.
    pub const XFS: FsProfile = FsProfile {
        name: "xfs",
        title: "xfs (default mount)",
        fsync_names: FsyncNames::JournalPrefix,
        // The rename logs the inode's core, which an fdatasync forces too.
        fdatasync_names: FsyncNames::JournalPrefix,
        auto_da_alloc: false,
        size_ahead_of_data: false,
        dir_changes_in_order: true,
        set_len_journaled: true,
        failed_sync_dir_shuts_down: true,
        freed_blocks_stale: false,
    };

    /// btrfs with its log tree (fsync without a full transaction commit).
    pub const BTRFS: FsProfile = FsProfile {
        name: "btrfs",
        title: "btrfs (log tree)",
        fsync_names: FsyncNames::OwnChanges,
        // btrfs_sync_file logs the same for fsync and fdatasync.
        fdatasync_names: FsyncNames::OwnChanges,
        auto_da_alloc: false,
        size_ahead_of_data: false,
        dir_changes_in_order: false,
        set_len_journaled: false,
        failed_sync_dir_shuts_down: true,
        freed_blocks_stale: false,
    };

    /// Every profile, the default first.
    pub const ALL: [FsProfile; 5] =
        [FsProfile::POSIX, FsProfile::EXT4, FsProfile::EXT4_NOAUTO, FsProfile::XFS, FsProfile::BTRFS];

    /// The profile called `name`, if any.
    pub fn parse(name: &str) -> Option<FsProfile> {
        FsProfile::ALL.into_iter().find(|profile| profile.name == name)
    }

    /// The profile called `name`, or a message listing every name (for a
    /// command line, which exits 2 with it).
    pub fn parse_or_list(name: &str) -> Result<FsProfile, String> {
        FsProfile::parse(name).ok_or_else(|| {
            let names: Vec<&str> = FsProfile::ALL.iter().map(|profile| profile.name).collect();
            format!("no file-system profile is called {name:?}; the profiles are: {}", names.join(", "))
        })
    }

    /// Whether this is the default, `posix` (then no `.ops` line or flag
    /// names it).
    pub fn is_posix(&self) -> bool {
        *self == FsProfile::POSIX
    }
}

impl Default for FsProfile {
    fn default() -> Self {
        FsProfile::POSIX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_round_trip_through_their_names_and_posix_is_every_rule_off() {
        for profile in FsProfile::ALL {
            assert_eq!(FsProfile::parse(profile.name), Some(profile));
        }
        let posix = FsProfile::default();
        assert!(posix.is_posix() && posix.fsync_names == FsyncNames::Nothing);
        assert!(posix.fdatasync_names == FsyncNames::Nothing && !posix.auto_da_alloc && posix.size_ahead_of_data);
        assert!(!posix.dir_changes_in_order && !posix.set_len_journaled && !posix.failed_sync_dir_shuts_down);
        for profile in FsProfile::ALL {
            // `Dir::persist_before` relies on pending changes staying in
            // the order made, which only prefix-taking rules keep.
            let ordered = profile.dir_changes_in_order && profile.fsync_names == FsyncNames::JournalPrefix;
            assert!(!profile.set_len_journaled || ordered, "{}: set_len_journaled needs ordered names", profile.name);
        }
        let message = FsProfile::parse_or_list("zfs").unwrap_err();
        assert!(message.contains("posix, ext4, ext4-noauto, xfs, btrfs"), "{message}");
        let noauto = FsProfile::EXT4_NOAUTO;
        assert!(
            !noauto.auto_da_alloc
                && FsProfile { name: "ext4", title: FsProfile::EXT4.title, auto_da_alloc: true, ..noauto }
                    == FsProfile::EXT4
        );
    }

    #[test]
    fn no_profile_makes_an_fdatasync_persist_more_names_than_its_fsync() {
        // An order on the rules by what they persist: Nothing persists
        // nothing; JournalPrefixToCreate a prefix of what JournalPrefix does.
        let at_most = |weaker: FsyncNames, stronger: FsyncNames| {
            weaker == stronger
                || weaker == FsyncNames::Nothing
                || (weaker == FsyncNames::JournalPrefixToCreate && stronger == FsyncNames::JournalPrefix)
        };
        for profile in FsProfile::ALL {
            assert!(at_most(profile.fdatasync_names, profile.fsync_names), "{}", profile.name);
            assert!(!profile.auto_da_alloc || profile.name == "ext4", "{}: auto_da_alloc is ext4's", profile.name);
        }
    }
}
