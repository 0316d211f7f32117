//! A simulated file at a low descriptor, handed across `exec` in a
//! preloaded program (`crate::live`): a shell's `cmd > FILE` under the
//! root forks, opens FILE, `dup2`s it onto fd 1 and `exec`s `cmd`, whose
//! new image must find FILE at fd 1. The open file description lives in
//! the old image's memory, so the `exec` passes what names it — the disk
//! path, the access, the cursor — in [`INHERIT_VAR`], and the new image's
//! layer opens the path again (one more open on the disk, traced like any)
//! and places it at the same number. The kernel's number stays held
//! across the `exec` by the placeholder `dup2` put there.
//!
//! A file placed at 0, 1 or 2 becomes glibc's `stdin`, `stdout` or
//! `stderr` too (`interpose::adopt_standard_stream`): stdio's own writes
//! would otherwise miss the layer.
//!
//! Not the kernel's sharing: the new image's description is its own, so a
//! cursor it moves is not seen by another holder of the old one (the old
//! image is gone; a shell that kept a copy and forked would have been
//! refused at the fork). A file renamed or unlinked since it was opened is
//! refused at the `exec`'s restore, not silently a different file.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::errno::Errno;
use crate::files::{EachWrite, Target};
use crate::route::At;
use crate::session::{self, LOW_FDS};

/// The environment variable an `exec` passes the placed files in.
pub const INHERIT_VAR: &str = "SIM_LIVE_INHERIT";
/// The environment variable an `exec` passes the run's working directory
/// in, once a served `chdir` moved it under the root (a shell's `cd DIR`
/// before it runs `git`): the real one could not follow, DIR not being
/// on the real disk.
pub const CWD_VAR: &str = "SIM_LIVE_CWD";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// The run's working directory to pass an `exec`, if a served `chdir` set
/// one.
pub fn cwd_to_pass() -> Option<String> {
    session::cwd().map(|dir| hex(dir.as_os_str().as_bytes()))
}

/// In the new image: the working directory the old one had.
pub fn restore_cwd(encoded: &str) -> Result<(), String> {
    let dir = unhex(encoded).ok_or_else(|| format!("a bad {CWD_VAR}: {encoded}"))?;
    let dir = PathBuf::from(OsStr::from_bytes(&dir));
    crate::serve_names::chdir(&At::Abs(dir.clone())).map_err(|e| format!("chdir {}: errno {}", dir.display(), e.0))
}

/// One placed file: `low:flags:cursor:path-in-hex`, `;` between them.
fn encode_one(low: i32, s: &mut session::Session) -> Result<String, String> {
    let d = s.fds.get(low).map_err(|_| format!("fd {low} is not open"))?;
    if !matches!(d.target, Target::File(_)) {
        return Err(format!("fd {low} is a directory"));
    }
    let a = d.access;
    let mut flags = match (a.read, a.write) {
        (true, true) => libc::O_RDWR,
        (false, true) => libc::O_WRONLY,
        _ => libc::O_RDONLY,
    };
    flags |= if a.append { libc::O_APPEND } else { 0 };
    flags |= match a.sync_each_write {
        EachWrite::Buffered => 0,
        EachWrite::DataSync => libc::O_DSYNC,
        EachWrite::Sync => libc::O_SYNC,
    };
    Ok(format!("{low}:{flags}:{}:{}", d.cursor_bytes, hex(d.disk_path.as_os_str().as_bytes())))
}

/// What an `exec` must pass for `lows` (placed, without close-on-exec);
/// `Err` names what cannot pass (a directory).
pub fn encode(lows: &[i32]) -> Result<String, String> {
    let parts: Result<Vec<String>, String> =
        session::with_current(|s| lows.iter().map(|&low| encode_one(low, s)).collect());
    Ok(parts?.join(";"))
}

fn parse_one(part: &str) -> Option<(i32, i32, u64, PathBuf)> {
    let mut fields = part.splitn(4, ':');
    let low: i32 = fields.next()?.parse().ok()?;
    let flags: i32 = fields.next()?.parse().ok()?;
    let cursor: u64 = fields.next()?.parse().ok()?;
    let bytes = unhex(fields.next()?)?;
    if !(0..LOW_FDS).contains(&low) {
        return None;
    }
    Some((low, flags, cursor, PathBuf::from(OsStr::from_bytes(&bytes))))
}

/// In the new image, before the program runs: open each passed file again
/// and place it at its number. `Err` says which could not be.
pub fn restore(encoded: &str) -> Result<(), String> {
    for part in encoded.split(';').filter(|p| !p.is_empty()) {
        let (low, flags, cursor, path) = parse_one(part).ok_or_else(|| format!("a bad {INHERIT_VAR} entry: {part}"))?;
        let what = |e: Errno| format!("fd {low}, {} at byte {cursor}: errno {}", path.display(), e.0);
        let fd = crate::serve_path::open(&At::Abs(path.clone()), flags).map_err(what)?;
        session::with_fd(fd, "exec", |s| {
            s.fds.get(fd)?.cursor_bytes = cursor;
            Ok(())
        })
        .map_err(what)?;
        crate::interpose::hold_low(low, false).map_err(what)?;
        session::place_low(fd, low, false).map_err(what)?;
        crate::serve_fd::close(fd).map_err(what)?;
        debug_assert!(session::is_fake_fd(low));
        if low <= 2 {
            let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
            crate::interpose::adopt_standard_stream(low, writable).map_err(what)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_one;

    #[test]
    fn an_entry_parses_and_a_bad_one_is_refused() {
        let (low, flags, cursor, path) = parse_one("1:1025:7:2f6e6f7465732e747874").unwrap();
        assert_eq!((low, flags, cursor), (1, libc::O_WRONLY | libc::O_APPEND, 7));
        assert_eq!(path.to_str(), Some("/notes.txt"));
        assert!(parse_one("1:1:7:2f6").is_none(), "an odd hex length");
        assert!(parse_one("99:1:7:2f").is_none(), "past the low numbers");
        assert!(parse_one("1:1:x:2f").is_none());
    }
}
