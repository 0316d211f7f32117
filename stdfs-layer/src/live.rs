//! The layer preloaded into a program that is not ours (`stdfs-preload`,
//! `sim live`, LIVE.md): the process-wide settings that differ from a kit
//! target's. Set once, by the preloaded object's constructor, before any
//! session exists; a process that never sets them (every kit target, every
//! test) keeps the conventions of the rest of this crate unchanged.
//!
//! - the root is the directory the program was told (`sim live --dir`),
//!   not [`ROOT`]: a C program names its files by the path it was given;
//! - a relative path from the real working directory is the layer's when
//!   it lands under the root (`sqlite3 db/db` run from the parent);
//! - a change to a real path passes to glibc: the program's own business
//!   outside the root (a shell's `> /dev/null`, a `mktemp`) is not the
//!   seed's disk, and refusing it would stop the program before it reaches
//!   the calls under test. The refusal exists for an engine in the
//!   harness's own process, where such a write would escape the seed.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::session::ROOT;

static LIVE_ROOT: OnceLock<String> = OnceLock::new();

/// Serve `root` (absolute, no trailing `/`) instead of [`ROOT`] and let
/// real changes pass, for the rest of this process. Called once, before
/// any session; a second call is a bug of the caller.
pub fn set_live_root(root: &str) {
    assert!(root.starts_with('/') && root.len() > 1 && !root.ends_with('/'), "the live root is absolute: {root}");
    assert!(!crate::session::has_session(), "the live root is set before any session");
    LIVE_ROOT.set(root.to_string()).expect("the live root is set once");
}

/// Whether this process is a preloaded program's ([`set_live_root`]).
pub fn is_live() -> bool {
    LIVE_ROOT.get().is_some()
}

/// The root paths are served under: the live one, else [`ROOT`].
pub fn root() -> &'static str {
    LIVE_ROOT.get().map_or(ROOT, String::as_str)
}

/// In a live process, `path` (relative) joined onto the real working
/// directory, asked of glibc; `None` elsewhere or when it cannot be read.
pub fn from_real_cwd(path: &[u8]) -> Option<Vec<u8>> {
    if !is_live() {
        return None;
    }
    let mut buf = crate::interpose::real_cwd()?;
    if buf.last() != Some(&b'/') {
        buf.push(b'/');
    }
    buf.extend_from_slice(path);
    Some(buf)
}

/// The simulated descriptors this thread's run holds open: a `fork` that
/// would copy them is refused (their open file descriptions live in this
/// process's memory and cannot be shared with a child).
pub fn open_descriptors() -> usize {
    crate::session::open_descriptor_count()
}

/// What the layer refused in this process so far, taken (the preloaded
/// object reports them to `sim live` when the process ends).
pub fn take_refusals() -> Vec<String> {
    crate::session::take_all_refusals()
}

/// The root as a path.
pub fn root_path() -> PathBuf {
    PathBuf::from(root())
}

/// The low descriptors a simulated file was placed at (`dup2(fd, 1)`)
/// that an `exec` would hand the next program (no close-on-exec): the
/// preloaded object refuses such an `exec`.
pub fn low_descriptors_kept_on_exec() -> Vec<i32> {
    crate::session::low_placed_kept_on_exec()
}
