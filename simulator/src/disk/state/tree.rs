//! Directories as things that come and go: creating one, removing an
//! empty one, renaming one (with everything under it) within its parent,
//! and, after a crash settled every directory's entries, finding where each
//! directory ended up.
//!
//! A removal or a rename is a change of the parent's entries like a file's
//! create or unlink (`DirOp::RemoveDir`, `DirOp::RenameDir`): pending
//! until the parent's `sync_dir` or whatever the profile's fsync rule
//! makes durable, kept or lost by a crash as the parent's other changes
//! are. So the directories are keyed by the path they have now, and a
//! directory taken off the tree (removed, or replaced by a rename) stays
//! in `FileSystem::dirs` under a key no caller can spell
//! ([`detached_key`]) while the change is pending: a crash that loses the
//! change brings it back, with whatever its own pending changes left.
//! A crash never shows half a moved tree: a directory's place is one
//! entry of its parent, and everything under it goes where it goes
//! ([`place`]).
//!
//! A rename across directories (a file's or a directory's) is two
//! changes, the source's `DirOp::MoveOut` and the destination's
//! `DirOp::MoveIn`, made durable together (`state/moves.rs`) and kept or
//! lost together by a crash (`disk/moves.rs`): a directory's parent
//! changes with it, so [`place`] finds every directory from the roots
//! down through the settled entries.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use super::super::dir::{Dir, DirId, DirOp, SubdirEntries};
use super::paths::{not_found, split};
use super::FileSystem;

/// The key under which `FileSystem::dirs` keeps a directory taken off the
/// tree while the change that took it is pending: not a path any caller
/// can spell (it holds a NUL byte, which neither libc nor std passes).
fn detached_key(id: DirId) -> PathBuf {
    PathBuf::from(format!("\0detached-{id:020}"))
}

fn error(kind: io::ErrorKind, path: &Path, what: &str) -> io::Error {
    io::Error::new(kind, format!("{}: {what}", path.display()))
}

impl FileSystem {
    /// Create `dir` and its missing ancestors, each durable at once: a
    /// new directory is in its parent's volatile and durable entries both.
    /// An earlier pending change of the same name in the parent (a removed
    /// directory's, an unlinked file's) is made durable first, with every
    /// change before it, as a journal would commit it before the creation.
    pub fn create_dir_all(&mut self, dir: &Path) {
        let missing: Vec<&Path> =
            dir.ancestors().filter(|a| !a.as_os_str().is_empty() && !self.dirs.contains_key(*a)).collect();
        for path in missing.into_iter().rev() {
            self.create_dir(path);
        }
    }

    /// Create `path` alone, in its parent if the disk holds it (else a
    /// root), durable at once.
    pub(super) fn create_dir(&mut self, path: &Path) {
        let id = self.next_dir;
        self.next_dir += 1;
        let mut parent = None;
        if let (Some(parent_path), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) {
            let carried = self.carried_data();
            if let Some(parent_dir) = self.dirs.get_mut(parent_path) {
                if parent_dir.persist_prefix_through_name(name) {
                    self.persist_split_moves();
                    self.flush_carried(carried);
                    self.after_persisting();
                }
                let parent_dir = self.dirs.get_mut(parent_path).expect("looked up above");
                parent_dir.subdirs_volatile.insert(name.to_string(), id);
                parent_dir.subdirs_durable.insert(name.to_string(), id);
                parent = Some(parent_dir.id);
            }
        }
        self.dirs.insert(path.to_path_buf(), Dir { id, parent, ..Dir::default() });
        self.version += 1;
    }

    /// `rmdir`: remove the empty directory `path`, a pending change of its
    /// parent. Errors as the kernel's: no such directory, not a directory,
    /// not empty, the root of the tree (busy).
    pub fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
        let Some(dir) = self.dir_at(path) else {
            if self.lookup(path).is_ok() {
                return Err(error(io::ErrorKind::NotADirectory, path, "not a directory"));
            }
            return Err(not_found(path));
        };
        if dir.parent.is_none() {
            return Err(error(io::ErrorKind::ResourceBusy, path, "the root of the disk's tree"));
        }
        if !dir.volatile.is_empty() || !dir.subdirs_volatile.is_empty() {
            return Err(error(io::ErrorKind::DirectoryNotEmpty, path, "directory not empty"));
        }
        let id = dir.id;
        let (parent_path, name) = split(path)?;
        let seq = self.next_meta_seq();
        self.detach(path, id);
        let parent = self.dir_mut(parent_path)?;
        parent.subdirs_volatile.remove(name);
        parent.pending.push(DirOp::RemoveDir { name: name.to_string(), dir: id, seq });
        self.tree_changed = true;
        self.version += 1;
        Ok(())
    }

    /// Move the directory at `path` (`id`) off the tree, under its
    /// [`detached_key`].
    pub(super) fn detach(&mut self, path: &Path, id: DirId) {
        let mut dir = self.dirs.remove(path).expect("a directory to detach");
        dir.detached = true;
        self.dirs.insert(detached_key(id), dir);
    }

    /// `rename` of the directory `from`, with everything under it, to
    /// `to` in the same parent: one pending change of the parent. An empty
    /// directory at `to` is replaced; errors as the kernel's: `to` a file
    /// (not a directory), a directory not empty, inside `from` (invalid),
    /// `from` the root (busy). Into another directory: `moves.rs`.
    pub fn rename_dir(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let dir = self.dir_at(from).ok_or_else(|| not_found(from))?;
        let (id, parent) = (dir.id, dir.parent);
        if parent.is_none() {
            return Err(error(io::ErrorKind::ResourceBusy, from, "the root of the disk's tree"));
        }
        if to.starts_with(from) && to != from {
            return Err(error(io::ErrorKind::InvalidInput, to, "a directory cannot move into itself"));
        }
        let (from_parent, from_name) = split(from)?;
        let (to_parent, to_name) = split(to)?;
        let to_parent_id = self.dir(to_parent)?.id;
        if self.lookup(to).is_ok() {
            return Err(error(io::ErrorKind::NotADirectory, to, "not a directory"));
        }
        let replaced = match self.dir_at(to) {
            Some(target) if target.volatile.is_empty() && target.subdirs_volatile.is_empty() => Some(target.id),
            Some(target) if target.id == id => None,
            Some(_) => return Err(error(io::ErrorKind::DirectoryNotEmpty, to, "directory not empty")),
            None => None,
        };
        if to_parent_id != self.dir(from_parent)?.id {
            return self.move_dir(from, to, id, replaced);
        }
        if from_name == to_name {
            return Ok(());
        }
        let seq = self.next_meta_seq();
        if let Some(replaced) = replaced {
            self.detach(to, replaced);
        }
        let to_key = self.dirs.get_key_value(from).expect("the directory to move").0.with_file_name(to_name);
        self.move_subtree(from, to_key);
        let parent = self.dir_mut(from_parent)?;
        parent.subdirs_volatile.remove(from_name);
        parent.subdirs_volatile.insert(to_name.to_string(), id);
        let (from, to) = (from_name.to_string(), to_name.to_string());
        parent.pending.push(DirOp::RenameDir { from, to, dir: id, replaced, seq });
        self.tree_changed = true;
        self.version += 1;
        Ok(())
    }

    /// Re-key the directory at `from` and every directory under it to
    /// `to_key`.
    pub(super) fn move_subtree(&mut self, from: &Path, to_key: PathBuf) {
        let (from_key, _) = self.dirs.get_key_value(from).expect("the directory to move");
        let from_key = from_key.clone();
        let moving: Vec<PathBuf> = self.dirs.keys().filter(|key| key.starts_with(&from_key)).cloned().collect();
        for key in moving {
            let dir = self.dirs.remove(&key).expect("listed above");
            let rest = key.strip_prefix(&from_key).expect("under the moved directory");
            let new_key = if rest.as_os_str().is_empty() { to_key.clone() } else { to_key.join(rest) };
            self.dirs.insert(new_key, dir);
        }
    }

    /// Some pending changes became durable: a detached directory whose
    /// removal (or replacement) is among them is gone for good, and what
    /// only it held goes with it.
    pub(super) fn after_persisting(&mut self) {
        if !self.dirs.values().any(|dir| dir.detached) {
            return;
        }
        let pending: Vec<DirId> =
            self.dirs.values().flat_map(|dir| dir.pending.iter().filter_map(DirOp::detached_dir)).collect();
        self.dirs.retain(|_, dir| !dir.detached || pending.contains(&dir.id));
        self.collect_garbage();
    }

    /// After a power loss settled every directory's durable entries: each
    /// directory goes where its parent's settled entries put it, and one
    /// no entry reaches (removed, or under a removed one) is gone. Nothing
    /// to do on a disk where no directory was ever removed or renamed.
    pub(in super::super) fn place_after_crash(&mut self) {
        if !self.tree_changed {
            return;
        }
        let old = std::mem::take(&mut self.dirs);
        let placed = place(old.iter().map(|(key, dir)| (key.as_path(), dir.id, dir.parent, &dir.subdirs_durable)));
        for (_, mut dir) in old {
            if let Some(path) = placed.get(&dir.id) {
                dir.detached = false;
                self.dirs.insert(path.clone(), dir);
            }
        }
        // A move across directories the crash lost puts a directory back
        // under its old parent: each placed directory's parent is the one
        // whose entry placed it.
        let ids: BTreeMap<PathBuf, DirId> = self.dirs.iter().map(|(path, dir)| (path.clone(), dir.id)).collect();
        for (path, dir) in &mut self.dirs {
            if dir.parent.is_some() {
                dir.parent = path.parent().and_then(|parent| ids.get(parent)).copied();
                debug_assert!(dir.parent.is_some(), "a placed directory other than a root has a placed parent");
            }
        }
        self.version += 1;
    }
}

/// Where each directory is when every directory's subdirectories are as
/// given: `(key, id, parent, subdirectories)` per directory, keyed by its
/// path before (a root, `parent` `None`, keeps it). Every other directory
/// is where a placed directory's entries name it, found from the roots
/// down: a move across directories changes a directory's parent, so a
/// crash that keeps or loses it decides where it is. A directory no
/// placed directory names (removed, under a removed one, or moved into a
/// directory a `reorder` crash lost a move of) is not in the result.
pub(in super::super) fn place<'a>(
    dirs: impl Iterator<Item = (&'a Path, DirId, Option<DirId>, &'a SubdirEntries)>,
) -> BTreeMap<DirId, PathBuf> {
    let dirs: Vec<_> = dirs.collect();
    let subdirs: BTreeMap<DirId, &SubdirEntries> = dirs.iter().map(|(_, id, _, subdirs)| (*id, *subdirs)).collect();
    let mut placed: BTreeMap<DirId, PathBuf> = BTreeMap::new();
    let mut todo: Vec<DirId> = Vec::new();
    for (key, id, parent, _) in &dirs {
        if parent.is_none() {
            placed.insert(*id, key.to_path_buf());
            todo.push(*id);
        }
    }
    while let Some(id) = todo.pop() {
        let Some(children) = subdirs.get(&id) else { continue };
        let here = placed[&id].clone();
        for (name, child) in children.iter() {
            // A directory named twice is a tree split in two: never left.
            let fresh = placed.insert(*child, here.join(name)).is_none();
            assert!(fresh, "directory {child} named twice after a crash");
            todo.push(*child);
        }
    }
    placed
}
