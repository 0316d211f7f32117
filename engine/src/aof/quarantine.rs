//! Quarantine: where a log's invalid tail goes instead of the void.
//!
//! Recovery treats the bytes from the first invalid frame on as never
//! written, but it does not destroy them: a torn tail is worthless, yet
//! the same shape can be bit rot in the middle of the log, and then those
//! bytes are the only copy of acknowledged writes. They are copied to
//! `<log>.quarantine.<n>` for a human to inspect, and the copy is made
//! durable before the log is cut. Nothing ever reads a quarantine file
//! back; a crash between the copy and the cut just quarantines the same
//! bytes again under the next number.

use std::ffi::OsString;
use std::path::Path;

use crate::vfs::{OpenMode, Vfs};
use crate::IoOp;
use crate::{Error, Result};

/// Durably copy `bytes` to a new quarantine file beside `log_name` in
/// `dir`, numbered one past the highest already there. Returns its name.
pub(super) fn quarantine(vfs: &dyn Vfs, dir: &Path, log_name: &str, bytes: &[u8]) -> Result<String> {
    let names = vfs.list_dir(dir).map_err(|e| Error::io(IoOp::ListDir, dir, e))?;
    let number = next_number(&names, log_name)?;
    let name = format!("{}{number}", prefix(log_name));
    let path = dir.join(&name);
    let mut file = vfs.open(&path, OpenMode::Truncate).map_err(|e| Error::io(IoOp::Create, &path, e))?;
    file.write_at(0, bytes).map_err(|e| Error::io(IoOp::Write, &path, e))?;
    file.sync().map_err(|e| Error::io(IoOp::Sync, &path, e))?;
    // Planted: the copy's name is left to recovery's own directory fsync,
    // which comes a moment later — after the cut was made durable.
    if !canary!(QuarantineNoDirSync) {
        vfs.sync_dir(dir).map_err(|e| Error::io(IoOp::SyncDir, dir, e))?;
    }
    Ok(name)
}

fn prefix(log_name: &str) -> String {
    format!("{log_name}.quarantine.")
}

/// The digits `<n>` of `name` if it is a quarantine copy of `log_name`,
/// `<log_name>.quarantine.<n>`. Names with anything but digits after the
/// prefix are not ours.
pub(crate) fn quarantine_number_text<'a>(name: &'a str, log_name: &str) -> Option<&'a str> {
    let digits = name.strip_prefix(log_name)?.strip_prefix(".quarantine.")?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// One past the highest `<log_name>.quarantine.<n>` in `names` (1 if none).
fn next_number(names: &[OsString], log_name: &str) -> Result<u64> {
    let prefix = prefix(log_name);
    let highest = names
        .iter()
        .filter_map(|name| quarantine_number_text(name.to_str()?, log_name))
        .filter_map(|digits| digits.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    highest
        .checked_add(1)
        .ok_or_else(|| Error::Invalid(format!("no quarantine number is left after {prefix}{highest}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aof::testing::file_bytes;
    use crate::vfs::MemVfs;

    fn names(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn numbers_continue_past_the_highest_and_ignore_strangers() {
        assert_eq!(next_number(&[], "aof").unwrap(), 1);
        let list = names(&[
            "aof",
            "aof.quarantine.2",
            "aof.quarantine.10",
            "aof.quarantine.",
            "aof.quarantine.+99",
            "aof.quarantine.x7",
            "other.quarantine.50",
        ]);
        assert_eq!(next_number(&list, "aof").unwrap(), 11);
        assert_eq!(next_number(&list, "other").unwrap(), 51);
        let mut with_bytes = list.clone();
        with_bytes.push(std::os::unix::ffi::OsStringExt::from_vec(b"aof.quarantine.9\xff".to_vec()));
        assert_eq!(next_number(&with_bytes, "aof").unwrap(), 11, "a name that is not UTF-8 is a stranger's");
        assert!(matches!(next_number(&names(&["aof.quarantine.18446744073709551615"]), "aof"), Err(Error::Invalid(_))));
    }

    #[test]
    fn quarantine_files_hold_exactly_the_bytes_given() {
        let vfs = MemVfs::new();
        let dir = Path::new("/db");
        vfs.create_dir_all(dir).unwrap();
        assert_eq!(quarantine(&vfs, dir, "aof", b"torn").unwrap(), "aof.quarantine.1");
        assert_eq!(quarantine(&vfs, dir, "aof", b"again").unwrap(), "aof.quarantine.2");
        assert_eq!(file_bytes(&vfs, "/db/aof.quarantine.1"), b"torn");
        assert_eq!(file_bytes(&vfs, "/db/aof.quarantine.2"), b"again");
    }
}
