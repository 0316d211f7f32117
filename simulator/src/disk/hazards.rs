//! Persistence hazards: ordering mistakes flagged when they happen, not
//! when a crash happens to expose them.
//!
//! A file whose data was fsynced while its own name — a create or a rename
//! in its directory — was not yet durable is durable data nobody can find
//! after a power loss. That is fine while nothing depends on it. It becomes
//! a hazard when something does:
//!
//! - **relied on**: another file is fsynced while it is so, by the thread
//!   of control that synced it (a log frame, a manifest record naming it
//!   made durable before its name is);
//! - **acknowledged**: the workload operation ends with it still so (the
//!   caller was told the operation is done).
//!
//! A rename is a name too: one still pending when the operation ends — the
//! file renamed into place, its data durable or not — was treated as done
//! while a power loss would undo it (**renamed, acknowledged**).
//!
//! Such a mistake is often masked rather than absent: some other path
//! fsyncs the directory a moment later, and no crash state between the two
//! is ever explored or drawn. The check sees it anyway, the first time it
//! happens. (An unlink is not tracked: removing a file the code no longer
//! needs is never relied on — segsim leaves an orphan segment's unlink
//! pending by design, the next open sweeps it — and whether something
//! relies on a file being gone is beyond what the disk can see. An unlink
//! does take back a pending create or rename of the same file: a file the
//! program made and threw away, both still pending, has no name anything
//! waits for: `Dir::pending_names`.)
//!
//! The check follows the disk's file-system profile without knowing it: a
//! name counts as pending only while the disk still holds it pending, and
//! on a profile where a file's fsync makes its own name durable (ext4, XFS,
//! btrfs: `profile.rs`) the fsync settles it before the check looks.
//!
//! Reliance is per thread of control (`Vfs::act_as`: an engine's threads
//! under the stdfs layer's scheduler; 0 for every other engine). A thread
//! that syncs a file of its own while another thread's new table waits
//! for its directory fsync does not rely on that table: fjall's
//! foreground syncs its journal while its worker installs a table
//! (FJALL.md, finding 4). A thread that builds on another's file learns
//! of it through memory the disk cannot see, so such a reliance is not
//! flagged here; the operation's end still is (an acknowledgement does
//! not care which thread synced), and a crash in the window is still
//! explored.
//!
//! The watch starts afresh with every workload operation and every attempt
//! at an open (`begin_op`): what an operation left was reported when it
//! ended, and what a failed attempt left was abandoned with its error — the
//! retry relies on nothing of it.
//!
//! A hazard names its file by identity, not only by its name when found:
//! by then a rename may have given it another name, or taken its name for
//! another file (the file is then `inode N`). So the watch keeps the names
//! a file bore when it was fsynced under a name not durable, and a hazard
//! carries those and every name the disk still knows it by
//! ([`Hazard::names`]): an engine that documents a hazard on its journal
//! can declare it by the journal's name after the journal was renamed
//! away (`kit::DocumentedHazard::covers`).

use std::collections::{BTreeMap, BTreeSet};

use super::data::InodeId;

/// One hazard (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hazard {
    /// The file whose name was not durable, by its name when the hazard
    /// was found, or `inode N` when nothing names it then (renamed over;
    /// unlinked after the hazard was found).
    pub file: String,
    /// Every path the file bore from its unsafe fsync to the hazard, as far
    /// as the disk knows (the names it had at that fsync; its names when
    /// found, durable or not; every name a directory change not yet synced
    /// gave it or took from it), first seen first, each once: what a
    /// declaration by name matches. Holds `file` unless that is `inode N`.
    pub names: Vec<String>,
    /// The I/O index where it was relied on (another file's fsync), or the
    /// next index when an operation ended with it.
    pub io_index: u64,
    /// The phase last marked before it, if any.
    pub phase: Option<String>,
    /// Which mistake it is.
    pub how: HazardHow,
}

/// The three hazards of the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HazardHow {
    /// Fsynced under a name not durable, then another file's fsync relied on it.
    ReliedOn,
    /// Fsynced under a name not durable, then the operation ended.
    Acknowledged,
    /// Renamed into place, the rename still pending when the operation ended.
    RenamedAcknowledged,
}

impl Hazard {
    /// One line for a report.
    pub fn describe(&self) -> String {
        let what = match self.how {
            HazardHow::ReliedOn => "fsynced while its name was not durable, then relied on by another file's fsync",
            HazardHow::Acknowledged => {
                "fsynced while its name was not durable, then acknowledged (the operation ended)"
            }
            HazardHow::RenamedAcknowledged => {
                "renamed into place, the rename not durable when the operation ended (acknowledged)"
            }
        };
        let phase = self.phase.as_deref().map_or(String::new(), |p| format!(" after phase {p}"));
        let earlier: Vec<&str> = self.names.iter().map(String::as_str).filter(|name| *name != self.file).collect();
        let earlier = if earlier.is_empty() { String::new() } else { format!(" (earlier {})", earlier.join(", ")) };
        format!("{}{earlier}: {what} at io#{}{phase}", self.file, self.io_index)
    }
}

/// What the watch asks the disk about a file, each part only where it is
/// needed: the names it bears or bore at every fsync of a file whose name
/// is pending (most of a store's fsyncs), its path now only for a report.
pub(super) trait Names {
    /// Its path now, or `inode N`.
    fn now(&self, id: InodeId) -> String;
    /// Every path the disk knows it by (`FileSystem::names_borne`).
    fn borne(&self, id: InodeId) -> Vec<String>;
    /// A count that moves at every change of any name or of a name's
    /// durability (`FileSystem::names_version`): where it has not moved,
    /// `borne` would answer as before. `None`: no such count, always ask.
    fn version(&self) -> Option<u64>;
}

/// `names` with each of `more` not in it yet appended.
fn merge_names(names: &mut Vec<String>, more: Vec<String>) {
    for name in more {
        if !names.contains(&name) {
            names.push(name);
        }
    }
}

/// A file fsynced while its name was not durable.
#[derive(Debug, Default)]
struct SyncedUnnamed {
    /// The names it bore at those fsyncs.
    names: Vec<String>,
    /// The threads of control that synced it (`Vfs::act_as`).
    by: BTreeSet<u32>,
    /// [`Names::version`] when `names` last took in what it bore: an
    /// fsync at the same version adds no name, so it does not ask again.
    names_at: Option<u64>,
}

/// What the disk tracks for hazards.
#[derive(Debug, Default)]
pub(super) struct HazardWatch {
    /// Inodes fsynced while a pending create or rename names them, with
    /// the names they bore at those fsyncs (a later rename may take them)
    /// and the threads that synced them.
    synced_unnamed: BTreeMap<InodeId, SyncedUnnamed>,
    /// Those already reported, so one mistake is one hazard.
    reported: BTreeSet<InodeId>,
    /// Found since the last take.
    found: Vec<Hazard>,
}

impl HazardWatch {
    /// A file fsync of `synced` by thread `actor` succeeded at `io_index`;
    /// `unnamed` holds the inodes a pending create or rename names now,
    /// `names` names one.
    pub fn on_fsync(
        &mut self,
        synced: InodeId,
        actor: u32,
        unnamed: &BTreeSet<InodeId>,
        io_index: u64,
        phase: Option<&str>,
        names: impl Names,
    ) {
        self.forget_named(unnamed);
        let relied: Vec<InodeId> = (self.synced_unnamed.iter())
            .filter(|(f, s)| **f != synced && s.by.contains(&actor) && !self.reported.contains(f))
            .map(|(f, _)| *f)
            .collect();
        for file in relied {
            self.reported.insert(file);
            let hazard = self.hazard(file, io_index, phase, HazardHow::ReliedOn, &names);
            self.found.push(hazard);
        }
        if unnamed.contains(&synced) {
            let version = names.version();
            let entry = self.synced_unnamed.entry(synced).or_default();
            debug_assert!(version.is_none() || version >= entry.names_at, "the names' version never goes back");
            if version.is_none() || entry.names_at != version {
                merge_names(&mut entry.names, names.borne(synced));
                entry.names_at = version;
            }
            entry.by.insert(actor);
        }
    }

    /// The hazard `how` of `file` found at `io_index`, named by what the
    /// watch kept of it and what the disk knows now.
    fn hazard(
        &self,
        file: InodeId,
        io_index: u64,
        phase: Option<&str>,
        how: HazardHow,
        names_of: &impl Names,
    ) -> Hazard {
        let now = names_of.now(file);
        let mut names = self.synced_unnamed.get(&file).map(|s| s.names.clone()).unwrap_or_default();
        merge_names(&mut names, names_of.borne(file));
        debug_assert!(names.contains(&now) || now.starts_with("inode "), "a file's name now is one it bore");
        Hazard { file: now, names, io_index, phase: phase.map(str::to_string), how }
    }

    /// The workload operation ends (its result goes to the caller);
    /// `renamed` holds the inodes a pending rename names (a subset of
    /// `unnamed`).
    pub fn on_op_end(
        &mut self,
        unnamed: &BTreeSet<InodeId>,
        renamed: &BTreeSet<InodeId>,
        io_index: u64,
        phase: Option<&str>,
        names: impl Names,
    ) {
        debug_assert!(renamed.is_subset(unnamed), "a pending rename names its inode");
        self.forget_named(unnamed);
        let left: Vec<InodeId> = self.synced_unnamed.keys().copied().filter(|f| !self.reported.contains(f)).collect();
        let renamed_left: Vec<InodeId> = renamed.iter().copied().filter(|f| !self.reported.contains(f)).collect();
        let synced = left.into_iter().map(|f| (f, HazardHow::Acknowledged));
        for (file, how) in synced.chain(renamed_left.into_iter().map(|f| (f, HazardHow::RenamedAcknowledged))) {
            if !self.reported.insert(file) {
                continue;
            }
            let hazard = self.hazard(file, io_index, phase, how, &names);
            self.found.push(hazard);
        }
    }

    /// Files whose names became durable (or went away) are no hazard.
    fn forget_named(&mut self, unnamed: &BTreeSet<InodeId>) {
        self.synced_unnamed.retain(|f, _| unnamed.contains(f));
        self.reported.retain(|f| unnamed.contains(f));
    }

    /// Every hazard found since the last take.
    pub fn take(&mut self) -> Vec<Hazard> {
        std::mem::take(&mut self.found)
    }

    /// A power loss or a restart: what was pending is gone or stays
    /// pending with no process relying on it.
    pub fn reset(&mut self) {
        self.synced_unnamed.clear();
        self.reported.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How a test names a file for a hazard, whole (the disk's own
    /// [`Names`] is `ops.rs`'s, asked part by part).
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    struct FileNames {
        /// Its path now, or `inode N`.
        now: String,
        /// Every path it bore.
        borne: Vec<String>,
    }

    /// A function that names a file whole.
    impl<F: Fn(InodeId) -> FileNames> Names for F {
        fn now(&self, id: InodeId) -> String {
            self(id).now
        }

        fn borne(&self, id: InodeId) -> Vec<String> {
            self(id).borne
        }

        fn version(&self) -> Option<u64> {
            None
        }
    }

    /// Names that never change under one version, counting what is asked.
    struct Counted {
        version: u64,
        asked: std::cell::Cell<u32>,
    }

    impl Names for &Counted {
        fn now(&self, id: InodeId) -> String {
            format!("f{id}")
        }

        fn borne(&self, id: InodeId) -> Vec<String> {
            self.asked.set(self.asked.get() + 1);
            vec![format!("f{id}"), format!("f{id}.v{}", self.version)]
        }

        fn version(&self) -> Option<u64> {
            Some(self.version)
        }
    }

    #[test]
    fn an_unnamed_file_synced_again_with_no_name_changed_is_not_asked_again() {
        let mut watch = HazardWatch::default();
        let unnamed: BTreeSet<InodeId> = [7].into();
        let names = Counted { version: 3, asked: std::cell::Cell::new(0) };
        watch.on_fsync(7, 0, &unnamed, 10, None, &names);
        watch.on_fsync(7, 0, &unnamed, 11, None, &names);
        assert_eq!(names.asked.get(), 1, "the same version: nothing new to take in");
        let renamed = Counted { version: 4, asked: std::cell::Cell::new(0) };
        watch.on_fsync(7, 0, &unnamed, 12, None, &renamed);
        assert_eq!(renamed.asked.get(), 1, "a name changed: asked again");
        watch.on_op_end(&unnamed, &BTreeSet::new(), 13, None, &renamed);
        let hazards = watch.take();
        assert_eq!(hazards.len(), 1);
        assert_eq!(hazards[0].names, ["f7", "f7.v3", "f7.v4"], "both versions' names kept");
    }

    /// A file called `f<id>` that has borne that name alone.
    fn name(id: InodeId) -> FileNames {
        FileNames { now: format!("f{id}"), borne: vec![format!("f{id}")] }
    }

    #[test]
    fn another_fsync_relies_once_and_a_durable_name_clears() {
        let mut watch = HazardWatch::default();
        let unnamed: BTreeSet<InodeId> = [1].into();
        watch.on_fsync(1, 0, &unnamed, 3, None, name);
        assert!(watch.take().is_empty(), "its own fsync relies on nothing");
        watch.on_fsync(2, 0, &unnamed, 5, Some("seal.built"), name);
        let found = watch.take();
        assert_eq!(found.len(), 1);
        assert!(found[0].how == HazardHow::ReliedOn && found[0].io_index == 5 && found[0].file == "f1", "{found:?}");
        assert_eq!(found[0].names, ["f1"]);
        assert!(!found[0].describe().contains("earlier"), "one name, said once: {}", found[0].describe());
        watch.on_fsync(2, 0, &unnamed, 6, None, name);
        assert!(watch.take().is_empty(), "one mistake, one hazard");
        watch.on_op_end(&BTreeSet::new(), &BTreeSet::new(), 7, None, name);
        assert!(watch.take().is_empty(), "its name became durable");
    }

    /// FJALL.md, finding 4 (seed 658): the worker (thread 1) syncs its new
    /// table before its directory; the foreground (thread 0) syncs the
    /// journal meanwhile, which does not rely on the table. The worker's
    /// own next fsync (a manifest naming the table) still does.
    #[test]
    fn only_the_thread_that_synced_an_unnamed_file_relies_on_it() {
        let mut watch = HazardWatch::default();
        let unnamed: BTreeSet<InodeId> = [1].into();
        watch.on_fsync(1, 1, &unnamed, 3, None, name);
        watch.on_fsync(2, 0, &unnamed, 4, None, name);
        assert!(watch.take().is_empty(), "another thread's fsync relies on nothing of thread 1's");
        watch.on_fsync(3, 1, &unnamed, 5, None, name);
        let found = watch.take();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].how == HazardHow::ReliedOn && found[0].file == "f1" && found[0].io_index == 5);
    }

    #[test]
    fn an_operation_that_ends_with_an_unnamed_synced_file_is_a_hazard() {
        let mut watch = HazardWatch::default();
        let unnamed: BTreeSet<InodeId> = [4].into();
        let log = |_| FileNames { now: "log".into(), borne: vec!["log".into()] };
        watch.on_fsync(4, 0, &unnamed, 1, None, log);
        watch.on_op_end(&unnamed, &BTreeSet::new(), 2, None, log);
        let found = watch.take();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].how, HazardHow::Acknowledged);
        assert!(found[0].describe().contains("acknowledged"), "{}", found[0].describe());
    }

    /// The name a file was fsynced under stays with it when a later rename
    /// takes it, and the description says both.
    #[test]
    fn a_hazard_keeps_the_name_its_file_was_fsynced_under() {
        let mut watch = HazardWatch::default();
        let unnamed: BTreeSet<InodeId> = [3].into();
        let journal = |_| FileNames { now: "/db/x-journal".into(), borne: vec!["/db/x-journal".into()] };
        watch.on_fsync(3, 0, &unnamed, 1, None, journal);
        // Renamed over since: the disk knows it by number alone.
        let gone = |_| FileNames { now: "inode 3".into(), borne: Vec::new() };
        watch.on_op_end(&unnamed, &BTreeSet::new(), 4, None, gone);
        let found = watch.take();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].file.as_str(), found[0].names.as_slice()),
            ("inode 3", &["/db/x-journal".to_string()][..])
        );
        let line = found[0].describe();
        assert!(line.starts_with("inode 3 (earlier /db/x-journal): fsynced"), "{line}");
    }

    #[test]
    fn an_operation_that_ends_with_a_rename_pending_is_a_hazard_once() {
        let mut watch = HazardWatch::default();
        let (unnamed, renamed): (BTreeSet<InodeId>, BTreeSet<InodeId>) = ([5, 6].into(), [6].into());
        watch.on_fsync(5, 0, &unnamed, 1, None, name);
        watch.take();
        watch.on_op_end(&unnamed, &renamed, 2, Some("rewrite.renamed"), name);
        let found = watch.take();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[1].how == HazardHow::RenamedAcknowledged && found[1].file == "f6", "{found:?}");
        assert!(found[1].describe().contains("renamed into place"), "{}", found[1].describe());
        watch.on_op_end(&unnamed, &renamed, 3, None, name);
        assert!(watch.take().is_empty(), "one mistake, one hazard");
    }
}
