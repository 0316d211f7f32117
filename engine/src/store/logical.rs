//! The logical content of a store: what a user could observe, with cold
//! rows resolved and expired keys and fields left out. The simulator's
//! reference model is a map of exactly these values, so two stores (or a
//! store and the model) agree iff their logical dumps are equal — however
//! differently their rows happen to be laid out between memory, log and
//! segments.

use std::collections::BTreeMap;

use super::row::Row;
use super::value::Value;
use super::view::{EntryView, FieldsView, ValueView};
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

/// A row's fields, owned, leaving out those expired at `now_ms` (`None`:
/// a cold row's, which carry no TTL). Inserted one by one in the row's
/// own field order, each at the map's right edge: a `collect` first
/// gathers, sorts and deduplicates a vector of them, an allocation and a
/// pass per row that a dump of every key pays for.
fn logical_fields(row: &Row, now_ms: Option<u64>) -> LogicalFields {
    let mut fields = LogicalFields::new();
    for (field, slot) in row.iter() {
        if now_ms.is_some_and(|now_ms| slot.is_expired(now_ms)) {
            continue;
        }
        debug_assert!(
            fields.last_key_value().is_none_or(|(last, _)| last.as_slice() < field),
            "a row iterates in field order"
        );
        fields.insert(field.to_vec(), (slot.value.to_vec(), slot.expire_at_ms));
    }
    fields
}

/// One visible key's content as [`Store::walk`] finds it.
enum Found<'a> {
    Str(&'a [u8]),
    /// A hot row with at least one field alive at the clock (others may
    /// be in it).
    Hot(&'a Row),
    /// A cold row as its segment holds it, never empty.
    Cold(Row),
}

impl Store {
    /// The logical content at the store's clock: stubs resolved through
    /// their segments, expired keys and fields excluded, TTLs included (so
    /// a TTL lost by a rewrite shows at once, not only when it would have
    /// fired). A segment that fails to read is an error, never a gap.
    pub fn logical_dump(&self) -> Result<BTreeMap<Vec<u8>, LogicalEntry>> {
        let now_ms = self.clock.now_ms();
        let mut dump = BTreeMap::new();
        self.walk(now_ms, |key, expire_at_ms, found| {
            let value = match found {
                Found::Str(bytes) => LogicalValue::Str(bytes.to_vec()),
                Found::Hot(row) => LogicalValue::Hash(logical_fields(row, Some(now_ms))),
                Found::Cold(row) => LogicalValue::Hash(logical_fields(&row, None)),
            };
            dump.insert(key.to_vec(), LogicalEntry { value, expire_at_ms });
        })?;
        Ok(dump)
    }

    /// The content [`Store::logical_dump`] returns, one key at a time in
    /// key order, borrowed where the store holds it: for a checker that
    /// only compares (an audit every few operations), without copying
    /// every value into a map. Stops at, and returns, the error the dump
    /// would return.
    pub fn logical_visit(&self, mut visit: impl FnMut(&[u8], EntryView<'_>)) -> Result<()> {
        let now_ms = self.clock.now_ms();
        self.walk(now_ms, |key, expire_at_ms, found| {
            let fields = match &found {
                Found::Str(bytes) => {
                    visit(key, EntryView { value: ValueView::Str(bytes), expire_at_ms });
                    return;
                }
                Found::Hot(row) => FieldsView::of_row(row, Some(now_ms)),
                Found::Cold(row) => FieldsView::of_row(row, None),
            };
            visit(key, EntryView { value: ValueView::Hash(fields), expire_at_ms });
        })
    }

    /// Every key a reader at `now_ms` sees, in key order, with its expiry
    /// and content: the one walk both [`Store::logical_dump`] and
    /// [`Store::logical_visit`] are, so they cannot disagree. A hash is
    /// visible with at least one live field (a cold row's fields carry no
    /// TTL); an expired key is not.
    fn walk<'a>(&'a self, now_ms: u64, mut visit: impl FnMut(&'a [u8], Option<u64>, Found<'a>)) -> Result<()> {
        for (key, entry) in &self.map {
            if entry.is_expired(now_ms) {
                continue;
            }
            let found = match &entry.value {
                Value::Str(bytes) => Found::Str(bytes),
                Value::Hash(row) => {
                    if row.values().all(|slot| slot.is_expired(now_ms)) {
                        continue;
                    }
                    Found::Hot(row)
                }
                Value::Cold(stub) => {
                    let row = self.segments.read_row(key, *stub)?;
                    if row.is_empty() {
                        continue;
                    }
                    Found::Cold(row)
                }
            };
            visit(key, entry.expire_at_ms, found);
        }
        Ok(())
    }
}
