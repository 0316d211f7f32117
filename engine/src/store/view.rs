//! Borrowed views of logical entries: [`EntryView`] and the types under
//! it, over either a logical dump's entry or the store's own row.
//!
//! They exist so a checker can compare content where it lies — a dump's
//! entry, or a row the store hands out while it walks its keys
//! ([`Store::logical_visit`](super::Store::logical_visit)) — without
//! copying it into a [`LogicalEntry`] first. A row's view shows only what
//! a reader would: a hot row's fields alive at the clock by the store's own
//! expiry rule ([`alive`]), a cold row as its segment holds it. The store
//! owns these views; a checker (the simulator's reference model) only
//! reads them, so what is compared is the store's idea of what is visible,
//! never the model's idea fed back to itself.

use super::row::alive;
use super::row::Row;
use super::{LogicalEntry, LogicalFields, LogicalValue};

/// A logical entry as its holder keeps it, borrowed — a logical dump's
/// entry, or the store's own row ([`Store::logical_visit`](super::Store::logical_visit))
/// — for a checker to compare without copying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryView<'a> {
    /// The value.
    pub value: ValueView<'a>,
    /// The key's expiry in Unix ms, if it has one.
    pub expire_at_ms: Option<u64>,
}

/// A logical value, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueView<'a> {
    /// A string.
    Str(&'a [u8]),
    /// A hash (never empty).
    Hash(FieldsView<'a>),
}

/// A hash's logical fields, borrowed: iterate with [`FieldsView::iter`].
#[derive(Clone, Copy, Debug)]
pub struct FieldsView<'a>(FieldsSource<'a>);

#[derive(Clone, Copy, Debug)]
enum FieldsSource<'a> {
    /// A logical dump's fields, all of them.
    Logical(&'a LogicalFields),
    /// A store row's fields alive at `live_at_ms`, or all of
    /// them (`None`).
    Row { row: &'a Row, live_at_ms: Option<u64> },
}

impl<'a> FieldsView<'a> {
    /// A store row: only the fields alive at `live_at_ms` if given
    /// (a hot row read at the clock), else every field (a cold row as its
    /// segment holds it).
    pub(super) fn of_row(row: &'a Row, live_at_ms: Option<u64>) -> Self {
        FieldsView(FieldsSource::Row { row, live_at_ms })
    }

    /// Field, value and field expiry, in field order.
    pub fn iter(self) -> FieldsIter<'a> {
        FieldsIter(match self.0 {
            FieldsSource::Logical(fields) => IterSource::Logical(fields.iter()),
            FieldsSource::Row { row, live_at_ms } => IterSource::Row { iter: row.into_iter(), live_at_ms },
        })
    }
}

/// Equal when the fields are, one for one, wherever each view's fields
/// lie: what comparing their owned copies ([`EntryView::to_entry`]) says,
/// since both yield their fields in field order, each once.
impl PartialEq for FieldsView<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for FieldsView<'_> {}

/// [`FieldsView::iter`].
pub struct FieldsIter<'a>(IterSource<'a>);

enum IterSource<'a> {
    Logical(std::collections::btree_map::Iter<'a, Vec<u8>, (Vec<u8>, Option<u64>)>),
    Row { iter: <&'a Row as IntoIterator>::IntoIter, live_at_ms: Option<u64> },
}

impl<'a> Iterator for FieldsIter<'a> {
    type Item = (&'a [u8], &'a [u8], Option<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterSource::Logical(iter) => iter.next().map(|(f, (v, at))| (f.as_slice(), v.as_slice(), *at)),
            IterSource::Row { iter, live_at_ms } => iter
                .find(|(_, slot)| live_at_ms.is_none_or(|now_ms| alive(slot.expire_at_ms, now_ms)))
                .map(|(f, slot)| (f, slot.value, slot.expire_at_ms)),
        }
    }
}

impl EntryView<'_> {
    /// An owned copy.
    pub fn to_entry(&self) -> LogicalEntry {
        let value = match self.value {
            ValueView::Str(bytes) => LogicalValue::Str(bytes.to_vec()),
            ValueView::Hash(fields) => {
                LogicalValue::Hash(fields.iter().map(|(f, v, at)| (f.to_vec(), (v.to_vec(), at))).collect())
            }
        };
        LogicalEntry { value, expire_at_ms: self.expire_at_ms }
    }
}

impl LogicalEntry {
    /// This entry as an [`EntryView`].
    pub fn view(&self) -> EntryView<'_> {
        let value = match &self.value {
            LogicalValue::Str(bytes) => ValueView::Str(bytes),
            LogicalValue::Hash(fields) => ValueView::Hash(FieldsView(FieldsSource::Logical(fields))),
        };
        EntryView { value, expire_at_ms: self.expire_at_ms }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(fields: &[(&str, &str, Option<u64>)], expire_at_ms: Option<u64>) -> LogicalEntry {
        let fields = fields.iter().map(|(f, v, at)| (f.as_bytes().to_vec(), (v.as_bytes().to_vec(), *at))).collect();
        LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms }
    }

    /// Two views are equal exactly when their owned copies are.
    #[test]
    fn views_are_equal_as_their_entries_are() {
        let entries = [
            LogicalEntry { value: LogicalValue::Str(b"v".to_vec()), expire_at_ms: None },
            LogicalEntry { value: LogicalValue::Str(b"v".to_vec()), expire_at_ms: Some(5) },
            LogicalEntry { value: LogicalValue::Str(b"w".to_vec()), expire_at_ms: None },
            hash(&[("a", "v", None)], None),
            hash(&[("a", "v", None)], Some(5)),
            hash(&[("a", "v", Some(7))], None),
            hash(&[("a", "w", None)], None),
            hash(&[("a", "v", None), ("b", "v", None)], None),
            hash(&[("b", "v", None)], None),
        ];
        for a in &entries {
            for b in &entries {
                assert_eq!(a.view() == b.view(), a == b, "{a:?} against {b:?}");
            }
        }
    }
}
