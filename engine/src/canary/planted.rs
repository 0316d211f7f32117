//! The planted code of the canaries that take more than a line, each a
//! function named for what it does wrong. Called only from an
//! `if canary!(Name)` branch (see the module doc of `canary`).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use crate::store::{Entry, Value};
use crate::vfs::{read_exact_at, OpenMode, Vfs};

/// `ghost-stubs`: the table's out-of-window rows walked again at commit,
/// *without* the seal's TTL filter — so rows with a key or field TTL,
/// which the segment does not hold, come out too.
pub(crate) fn ghost_rows(
    map: &BTreeMap<Vec<u8>, Entry>,
    table: &[u8],
    column: &[u8],
    threshold: Option<i64>,
) -> Vec<Vec<u8>> {
    let threshold = threshold.unwrap_or(i64::MIN);
    let mut prefix = table.to_vec();
    prefix.push(b':');
    map.range(prefix.clone()..)
        .take_while(|(key, _)| key.starts_with(&prefix))
        .filter(|(_, entry)| {
            let Value::Hash(fields) = &entry.value else { return false };
            let ttl = entry.expire_at_ms.is_some() || fields.values().any(|f| f.expire_at_ms.is_some());
            let value = fields.get(column).and_then(|f| std::str::from_utf8(&f.value).ok()?.parse::<i64>().ok());
            ttl && value.is_some_and(|v| v < threshold)
        })
        .map(|(key, _)| key.clone())
        .collect()
}

/// `single-read-recovery`: the log read once, and whatever came back —
/// a transient bit flip included — taken for the bytes on the disk.
pub(crate) fn read_once(vfs: &dyn Vfs, path: &Path) -> io::Result<Vec<u8>> {
    let file = vfs.open(path, OpenMode::Read)?;
    let len = usize::try_from(file.len()?).map_err(|_| io::Error::other("file too large"))?;
    let mut bytes = vec![0u8; len];
    read_exact_at(file.as_ref(), 0, &mut bytes)?;
    Ok(bytes)
}
