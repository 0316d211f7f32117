//! Named phases: the instants inside a multi-step protocol that the
//! engine announces through [`Vfs::mark`](crate::vfs::Vfs::mark).
//!
//! A crash between two phases leaves a different disk than a crash
//! between two others, and each gap has its own recovery rule (see
//! `store/evict.rs`, `store/rewrite.rs` and `manifest/compact.rs`). Naming them lets a test aim a
//! crash at exactly one gap, and lets the simulator say which gap a crash
//! landed in. They are a closed enum rather than strings so that a typo is
//! a compile error, and each has an explicit, stable code: saved inputs
//! (the fuzz corpus, `.ops` files) name a phase by code or by
//! [`Phase::as_str`], and reordering the variants must not change what
//! those inputs mean.

use std::fmt;

/// One phase the engine marks. The code (the discriminant) is fixed
/// forever: add new phases at the end with the next free code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Phase {
    /// Eviction, seal: the segment file is built and fsynced.
    SealBuilt = 0,
    /// Eviction, seal: the directory is fsynced (the segment's name is durable).
    SealDirSynced = 1,
    /// Eviction, seal: the manifest ADD is durable.
    SealRegistered = 2,
    /// Eviction: the `SEGMENTED` frame is appended to the log.
    FrameLogged = 3,
    /// Eviction: the sealed rows are stubs in memory.
    CommitDone = 4,
    /// Rewrite: the new log is written and fsynced under its temp name.
    RewriteSynced = 5,
    /// Rewrite: the new log is renamed over the old one.
    RewriteRenamed = 6,
    /// Rewrite: the directory is fsynced (the rename is durable).
    RewriteDirSynced = 7,
    /// Rewrite: the segments the new log does not name are retired.
    RewriteRetired = 8,
    /// FLUSHALL: the flush is logged and applied (its rewrite follows).
    FlushallLogged = 9,
    /// Open: recovery is complete.
    OpenDone = 10,
    /// Manifest compaction: the new ledger is written and fsynced under its
    /// temp name (`MANIFEST.tmp`); `MANIFEST` is untouched.
    ManifestCompactSynced = 11,
    /// Manifest compaction: the new ledger is renamed over `MANIFEST`, not
    /// yet durably (a power loss leaves either ledger, both whole).
    ManifestCompactRenamed = 12,
    /// Manifest compaction: the directory is fsynced (the rename is
    /// durable); appends may now go to the new ledger.
    ManifestCompactDirSynced = 13,
}

impl Phase {
    /// Every phase, in code order.
    pub const ALL: [Phase; 14] = [
        Phase::SealBuilt,
        Phase::SealDirSynced,
        Phase::SealRegistered,
        Phase::FrameLogged,
        Phase::CommitDone,
        Phase::RewriteSynced,
        Phase::RewriteRenamed,
        Phase::RewriteDirSynced,
        Phase::RewriteRetired,
        Phase::FlushallLogged,
        Phase::OpenDone,
        Phase::ManifestCompactSynced,
        Phase::ManifestCompactRenamed,
        Phase::ManifestCompactDirSynced,
    ];

    /// The phases an eviction passes, in order (the simulator draws from
    /// this list by position, as from the two below).
    pub const EVICT: [Phase; 5] =
        [Phase::SealBuilt, Phase::SealDirSynced, Phase::SealRegistered, Phase::FrameLogged, Phase::CommitDone];

    /// The phases a rewrite passes, in order (the last only when it
    /// retires something).
    pub const REWRITE: [Phase; 4] =
        [Phase::RewriteSynced, Phase::RewriteRenamed, Phase::RewriteDirSynced, Phase::RewriteRetired];

    /// The phases a FLUSHALL passes (its own, then its rewrite's), in
    /// code order: the simulator draws from this list by position, so its
    /// order is part of every seed's meaning.
    pub const FLUSHALL: [Phase; 5] = [
        Phase::RewriteSynced,
        Phase::RewriteRenamed,
        Phase::RewriteDirSynced,
        Phase::RewriteRetired,
        Phase::FlushallLogged,
    ];

    /// The phases a manifest compaction passes, in order. Compaction runs
    /// at the end of a rewrite (so of a FLUSHALL too) and of an open, when
    /// it is due. A list of its own rather than an extension of the ones
    /// above: the simulator draws from those by position, and a longer
    /// list would move every seed that draws from it.
    pub const MANIFEST_COMPACT: [Phase; 3] =
        [Phase::ManifestCompactSynced, Phase::ManifestCompactRenamed, Phase::ManifestCompactDirSynced];

    /// The stable code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The phase with code `code`, if any.
    pub fn from_code(code: u8) -> Option<Phase> {
        Phase::ALL.into_iter().find(|phase| phase.code() == code)
    }

    /// The stable name (`seal.built`, ...), as traces and `.ops` files
    /// print it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::SealBuilt => "seal.built",
            Phase::SealDirSynced => "seal.dir_synced",
            Phase::SealRegistered => "seal.registered",
            Phase::FrameLogged => "frame.logged",
            Phase::CommitDone => "commit.done",
            Phase::RewriteSynced => "rewrite.synced",
            Phase::RewriteRenamed => "rewrite.renamed",
            Phase::RewriteDirSynced => "rewrite.dir_synced",
            Phase::RewriteRetired => "rewrite.retired",
            Phase::FlushallLogged => "flushall.logged",
            Phase::OpenDone => "open.done",
            Phase::ManifestCompactSynced => "manifest.compact_synced",
            Phase::ManifestCompactRenamed => "manifest.compact_renamed",
            Phase::ManifestCompactDirSynced => "manifest.compact_dir_synced",
        }
    }

    /// Every phase's name, in code order: what a parser of `@mark=` takes
    /// (the seam marks a phase by its name, [`Phase::as_str`]).
    pub const NAMES: [&'static str; Phase::ALL.len()] = {
        let mut names = [""; Phase::ALL.len()];
        let mut at = 0;
        while at < names.len() {
            names[at] = Phase::ALL[at].as_str();
            at += 1;
        }
        names
    };

    /// The phase named `name` (see [`Phase::as_str`]).
    pub fn parse(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|phase| phase.as_str() == name)
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_fixed_and_round_trip() {
        // Saved inputs depend on these: a change here changes what the
        // corpus and every saved `.ops` file mean.
        let expected = [
            (0, "seal.built"),
            (1, "seal.dir_synced"),
            (2, "seal.registered"),
            (3, "frame.logged"),
            (4, "commit.done"),
            (5, "rewrite.synced"),
            (6, "rewrite.renamed"),
            (7, "rewrite.dir_synced"),
            (8, "rewrite.retired"),
            (9, "flushall.logged"),
            (10, "open.done"),
            (11, "manifest.compact_synced"),
            (12, "manifest.compact_renamed"),
            (13, "manifest.compact_dir_synced"),
        ];
        assert_eq!(Phase::ALL.len(), expected.len());
        for (phase, (code, name)) in Phase::ALL.into_iter().zip(expected) {
            assert_eq!((phase.code(), phase.as_str()), (code, name));
            assert_eq!(Phase::from_code(code), Some(phase));
            assert_eq!(Phase::parse(name), Some(phase));
            assert_eq!(phase.to_string(), name);
        }
        assert_eq!(Phase::from_code(14), None);
        assert_eq!(Phase::parse("seal"), None);
    }
}
