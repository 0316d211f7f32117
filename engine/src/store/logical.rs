//! The logical content of a store: what a user could observe, with cold
//! rows resolved and expired keys and fields left out. The simulator's
//! reference model is a map of exactly these values, so two stores (or a
//! store and the model) agree iff their logical dumps are equal — however
//! differently their rows happen to be laid out between memory, log and
//! segments.

use std::collections::BTreeMap;

use super::value::Value;
use super::Store;
use crate::Result;

/// A hash's logical fields: field → (value, field expiry in Unix ms).
pub type LogicalFields = BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)>;

/// A key's logical value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogicalValue {
    /// A string.
    Str(Vec<u8>),
    /// A hash: field → (value, field expiry in Unix ms). Never empty.
    Hash(LogicalFields),
}

/// A key's logical entry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogicalEntry {
    /// The value.
    pub value: LogicalValue,
    /// The key's expiry in Unix ms, if it has one.
    pub expire_at_ms: Option<u64>,
}

impl Store {
    /// The logical content at the store's clock: stubs resolved through
    /// their segments, expired keys and fields excluded, TTLs included (so
    /// a TTL lost by a rewrite shows at once, not only when it would have
    /// fired). A segment that fails to read is an error, never a gap.
    pub fn logical_dump(&self) -> Result<BTreeMap<Vec<u8>, LogicalEntry>> {
        let now_ms = self.clock.now_ms();
        let mut dump = BTreeMap::new();
        for (key, entry) in &self.map {
            if entry.is_expired(now_ms) {
                continue;
            }
            let value = match &entry.value {
                Value::Str(bytes) => LogicalValue::Str(bytes.clone()),
                Value::Hash(_) | Value::Cold(_) => {
                    let Some(fields) = self.visible_fields(key, now_ms)? else { continue };
                    LogicalValue::Hash(
                        fields.into_iter().map(|(f, slot)| (f, (slot.value, slot.expire_at_ms))).collect(),
                    )
                }
            };
            dump.insert(key.clone(), LogicalEntry { value, expire_at_ms: entry.expire_at_ms });
        }
        Ok(dump)
    }
}
