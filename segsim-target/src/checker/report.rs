//! What a person reads when a recovered content matched nothing allowed:
//! the [`Mismatch`] with the counts the rule weighed, and [`diff`], the
//! readable difference between the content and the state after every
//! acknowledged write (also used by the driver when an audit's content
//! is wrong).
//!
//! Kept apart from the rule because it never decides anything: it runs
//! only once a verdict is in, and may be as slow and as wordy as helps.

use std::collections::BTreeMap;

use engine::store::{Command, LogicalEntry, LogicalValue};

use super::Checker;

/// The recovered state matched nothing allowed.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Which rule failed and how, for a person.
    pub detail: String,
}

impl Checker {
    /// Why a recovered `dump` matched nothing allowed, for a person.
    pub(super) fn mismatch(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Mismatch {
        let (acked, durable) = self.counts();
        let detail = format!(
            "recovered state equals no allowed prefix: {acked} writes acknowledged since the log's base (its \
             start or last rewrite, which must survive whole), {durable} of them known durable (fsync {}), \
             in-flight write: {}\n{}",
            self.fsync.name(),
            self.uncertain.as_ref().map_or("none".to_string(), |(_, c)| show_command(c)),
            diff(&self.current.dump(now_ms), dump)
        );
        Mismatch { detail }
    }
}

/// A command as its line would read (`HSET t0:1 ts 5 f1 abc`), each
/// argument cut to 40 bytes: the in-flight write of a mismatch.
fn show_command(command: &Command) -> String {
    const MAX_ARG_BYTES: usize = 40;
    let args: Vec<String> = command
        .to_args()
        .iter()
        .map(|arg| match arg.get(..MAX_ARG_BYTES) {
            Some(head) if arg.len() > MAX_ARG_BYTES => {
                format!("{}…({} bytes)", String::from_utf8_lossy(head), arg.len())
            }
            _ => String::from_utf8_lossy(arg).into_owned(),
        })
        .collect();
    format!("`{}`", args.join(" "))
}

fn show_entry(entry: Option<&LogicalEntry>) -> String {
    let Some(entry) = entry else { return "(absent)".to_string() };
    let ttl = entry.expire_at_ms.map_or(String::new(), |at| format!(" ttl@{at}"));
    match &entry.value {
        LogicalValue::Str(v) => format!("{:?}{ttl}", String::from_utf8_lossy(v)),
        LogicalValue::Hash(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(f, (v, at))| {
                    let field_ttl = at.map_or(String::new(), |at| format!(" ttl@{at}"));
                    format!("{}={:?}{field_ttl}", String::from_utf8_lossy(f), String::from_utf8_lossy(v))
                })
                .collect();
            format!("{{{}}}{ttl}", inner.join(", "))
        }
    }
}

/// A readable difference between the expected (all acknowledged) and the
/// recovered content: at most 12 keys.
pub fn diff(expected: &BTreeMap<Vec<u8>, LogicalEntry>, got: &BTreeMap<Vec<u8>, LogicalEntry>) -> String {
    let mut keys: Vec<&Vec<u8>> = expected.keys().chain(got.keys()).collect();
    keys.sort();
    keys.dedup();
    let differing: Vec<&Vec<u8>> = keys.into_iter().filter(|k| expected.get(*k) != got.get(*k)).collect();
    let mut out = format!("  {} keys differ from the state after every acknowledged write:\n", differing.len());
    for key in differing.iter().take(12) {
        out.push_str(&format!(
            "    key {:?}: expected {}, got {}\n",
            String::from_utf8_lossy(key),
            show_entry(expected.get(*key)),
            show_entry(got.get(*key))
        ));
    }
    out
}
