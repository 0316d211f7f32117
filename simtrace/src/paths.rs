//! Paths as the recorder resolves them: absolute, lexically normalised
//! byte strings, and whether one lies under the watched directory.
//!
//! strace shows a descriptor's path as the kernel resolved it (`-y`), so a
//! path that came with a descriptor is already canonical; a path argument
//! is as the program wrote it, relative to a directory descriptor or the
//! process's working directory. Resolution here is lexical (`.` and `..`),
//! which is what the kernel does unless a symbolic link is in the way: the
//! recorder asks the kernel's view (a returned descriptor's path) whenever
//! one exists, and the watched directory itself is canonicalised before
//! the run, so the only miss is a program that reaches the directory
//! through a link of its own, which the README states.

use super::recording::RelPath;

/// `path` made absolute against `base` (itself absolute) and normalised.
pub fn resolve(base: &[u8], path: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    let joined_base: &[u8] = if path.first() == Some(&b'/') { b"" } else { base };
    for part in joined_base.split(|b| *b == b'/').chain(path.split(|b| *b == b'/')) {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let mut out = Vec::with_capacity(path.len() + base.len() + 1);
    for part in parts {
        out.push(b'/');
        out.extend_from_slice(part);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}

/// A `-y` path without the kernel's ` (deleted)` note for an unlinked file.
pub fn strip_deleted(path: &[u8]) -> &[u8] {
    path.strip_suffix(b" (deleted)").unwrap_or(path)
}

/// `absolute` below `root` (`.` for the root itself), or `None` outside.
pub fn under(root: &[u8], absolute: &[u8]) -> Option<RelPath> {
    if absolute == root {
        return Some(RelPath(b".".to_vec()));
    }
    let rest = absolute.strip_prefix(root)?;
    let rest = if root == b"/" { rest } else { rest.strip_prefix(b"/")? };
    (!rest.is_empty()).then(|| RelPath(rest.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_is_lexical_and_absolute() {
        assert_eq!(resolve(b"/a/b", b"c"), b"/a/b/c");
        assert_eq!(resolve(b"/a/b", b"../c/./d"), b"/a/c/d");
        assert_eq!(resolve(b"/a/b", b"/x//y/"), b"/x/y");
        assert_eq!(resolve(b"/", b".."), b"/");
    }

    #[test]
    fn under_the_root_is_the_root_or_below_it_never_a_sibling() {
        assert_eq!(under(b"/t/db", b"/t/db"), Some(RelPath(b".".to_vec())));
        assert_eq!(under(b"/t/db", b"/t/db/x/y"), Some(RelPath(b"x/y".to_vec())));
        assert_eq!(under(b"/t/db", b"/t/dbx"), None);
        assert_eq!(under(b"/t/db", b"/t"), None);
        assert_eq!(strip_deleted(b"/t/db/f (deleted)"), b"/t/db/f");
    }
}
