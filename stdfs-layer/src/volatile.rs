//! Which simulated files are volatile: files whose bytes an engine shares
//! through a writable shared map and never needs after a crash (a lock
//! or coordination file: SQLite's `-shm`, LMDB's `lock.mdb`). The layer
//! serves such a map as memory no crash keeps (`interpose::maps`); every
//! other writable shared map stays refused, because the layer sees no
//! store to memory and so none could reach the simulated disk.
//!
//! The declaration is the process's (the binary's configuration, made
//! before its runs, like the root): a file is volatile when its name
//! ends with a declared suffix.

use std::path::Path;
use std::sync::Mutex;

static SUFFIXES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Declare every simulated file whose name ends with `suffix` volatile
/// (e.g. `"-shm"`, `"lock.mdb"`): a writable shared map (`mmap` with
/// `PROT_WRITE` and `MAP_SHARED`) of it is then served, as memory that
/// every map of the file in the same run shares, that starts as the
/// file's bytes, and that no crash keeps:
/// - the map's stores never reach the simulated disk (a `read` of the
///   file, and the file after a crash, are what the disk model says);
/// - the process's own writes to the file through the layer reach the
///   maps (as a kernel's page cache would show them);
/// - the run's end (a crash, a restart, a close) ends the maps and their
///   memory: a stale pointer faults.
///
/// Call it before the runs that need it (`main` of the target, or the
/// test); declarations add up and last for the process. An empty suffix
/// is refused (it would make every file volatile).
pub fn declare_volatile(suffix: &str) {
    assert!(!suffix.is_empty(), "an empty suffix would declare every file volatile");
    let mut suffixes = SUFFIXES.lock().unwrap_or_else(|p| p.into_inner());
    if !suffixes.iter().any(|s| s == suffix) {
        suffixes.push(suffix.to_string());
    }
}

/// Whether the simulated file at `disk_path` was declared volatile.
pub fn is_volatile(disk_path: &Path) -> bool {
    let Some(name) = disk_path.file_name().and_then(|n| n.to_str()) else { return false };
    let suffixes = SUFFIXES.lock().unwrap_or_else(|p| p.into_inner());
    suffixes.iter().any(|s| name.ends_with(s.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_volatile_by_its_names_suffix_only() {
        declare_volatile(".volatile-test-lock");
        assert!(is_volatile(Path::new("/db/x.volatile-test-lock")));
        assert!(!is_volatile(Path::new("/db/x.volatile-test-lock.bak")), "the name must end with it");
        assert!(!is_volatile(Path::new("/db.volatile-test-lock/x")), "a directory's name does not count");
    }
}
