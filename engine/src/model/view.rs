//! Borrowed views of logical entries: [`EntryView`] and the types under
//! it, over either a logical dump's entry or the store's own row.
//!
//! They exist so a checker can compare content where it lies — a dump's
//! entry, or a row the store hands out while it walks its keys
//! ([`crate::store::Store::logical_visit`]) — without copying it into a
//! [`LogicalEntry`] first. A row's view shows only what a reader would: a
//! hot row's fields alive at the clock, a cold row as its segment holds
//! it. Which fields are alive is decided by a rule the *store* passes in
//! (its own), never by the model's: the checker must compare the store's
//! idea of what is visible with the model's, not the model's with itself.

use crate::store::{LogicalEntry, LogicalFields, LogicalValue, Row};

/// A logical entry as its holder keeps it, borrowed — a logical dump's
/// entry, or the store's own row ([`crate::store::Store::logical_visit`])
/// — for [`Model::shows_as`](super::Model::shows_as) to compare without copying it.
#[derive(Clone, Copy, Debug)]
pub struct EntryView<'a> {
    /// The value.
    pub value: ValueView<'a>,
    /// The key's expiry in Unix ms, if it has one.
    pub expire_at_ms: Option<u64>,
}

/// A logical value, borrowed.
#[derive(Clone, Copy, Debug)]
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
    /// A store row's fields that `alive` keeps at `live_at_ms`, or all of
    /// them (`None`).
    Row { row: &'a Row, live_at_ms: Option<u64>, alive: AliveRule },
}

/// Whether a field with expiry `expire_at_ms` is alive at `now_ms`: the
/// store's rule, handed to [`FieldsView::of_row`].
pub type AliveRule = fn(expire_at_ms: Option<u64>, now_ms: u64) -> bool;

impl<'a> FieldsView<'a> {
    /// A store row: only the fields `alive` keeps at `live_at_ms` if given
    /// (a hot row read at the clock), else every field (a cold row as its
    /// segment holds it). `alive` is the caller's own expiry rule.
    pub fn of_row(row: &'a Row, live_at_ms: Option<u64>, alive: AliveRule) -> Self {
        FieldsView(FieldsSource::Row { row, live_at_ms, alive })
    }

    /// Field, value and field expiry, in field order.
    pub fn iter(self) -> FieldsIter<'a> {
        FieldsIter(match self.0 {
            FieldsSource::Logical(fields) => IterSource::Logical(fields.iter()),
            FieldsSource::Row { row, live_at_ms, alive } => {
                IterSource::Row { iter: row.into_iter(), live_at_ms, alive }
            }
        })
    }
}

/// [`FieldsView::iter`].
pub struct FieldsIter<'a>(IterSource<'a>);

enum IterSource<'a> {
    Logical(std::collections::btree_map::Iter<'a, Vec<u8>, (Vec<u8>, Option<u64>)>),
    Row { iter: <&'a Row as IntoIterator>::IntoIter, live_at_ms: Option<u64>, alive: AliveRule },
}

impl<'a> Iterator for FieldsIter<'a> {
    type Item = (&'a [u8], &'a [u8], Option<u64>);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterSource::Logical(iter) => iter.next().map(|(f, (v, at))| (f.as_slice(), v.as_slice(), *at)),
            IterSource::Row { iter, live_at_ms, alive } => iter
                .find(|(_, slot)| live_at_ms.is_none_or(|now_ms| alive(slot.expire_at_ms, now_ms)))
                .map(|(f, slot)| (f.as_slice(), slot.value.as_slice(), slot.expire_at_ms)),
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
