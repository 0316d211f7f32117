//! [`Row`]: a hot hash's fields, kept in field order.
//!
//! Most rows are small (a handful of fields), and a `BTreeMap` spends a
//! whole node — over 700 bytes for our field type — on even one field. A
//! small row is instead one sorted `Vec`: one allocation, binary search,
//! and an insert that shifts a few dozen bytes. A row that grows past
//! [`SMALL_MAX_FIELDS`] becomes a `BTreeMap`, so a huge hash keeps
//! logarithmic updates; it does not shrink back (a row that was once big
//! is likely to be big again, and flapping would cost more than it saves).
//!
//! Both shapes iterate in field order, and equality compares the fields,
//! never the shape: two rows with the same fields are equal.

use std::collections::{btree_map, BTreeMap};

use super::value::Field;

/// Above this many fields a row is a `BTreeMap`.
pub const SMALL_MAX_FIELDS: usize = 32;

/// A hash's fields in field order (see the module doc).
#[derive(Clone, Debug)]
pub struct Row {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    /// Sorted by field, no field twice, at most [`SMALL_MAX_FIELDS`].
    Small(Vec<(Vec<u8>, Field)>),
    Large(BTreeMap<Vec<u8>, Field>),
}

impl Default for Row {
    fn default() -> Self {
        Row::new()
    }
}

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row { repr: Repr::Small(Vec::new()) }
    }

    /// An empty row with room for `fields` fields without growing (a
    /// `Vec` grows from nothing to four slots at once; most rows hold two).
    pub fn with_capacity(fields: usize) -> Row {
        Row { repr: Repr::Small(Vec::with_capacity(fields.min(SMALL_MAX_FIELDS))) }
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(fields) => fields.len(),
            Repr::Large(fields) => fields.len(),
        }
    }

    /// Whether the row has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The field named `field`.
    pub fn get(&self, field: &[u8]) -> Option<&Field> {
        match &self.repr {
            Repr::Small(fields) => {
                fields.binary_search_by(|(f, _)| f.as_slice().cmp(field)).ok().map(|at| &fields[at].1)
            }
            Repr::Large(fields) => fields.get(field),
        }
    }

    /// The field named `field`, to change in place.
    pub fn get_mut(&mut self, field: &[u8]) -> Option<&mut Field> {
        match &mut self.repr {
            Repr::Small(fields) => match fields.binary_search_by(|(f, _)| f.as_slice().cmp(field)) {
                Ok(at) => Some(&mut fields[at].1),
                Err(_) => None,
            },
            Repr::Large(fields) => fields.get_mut(field),
        }
    }

    /// Whether the row has a field named `field`.
    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Set `field` to `slot`, returning what it replaced.
    pub fn insert(&mut self, field: Vec<u8>, slot: Field) -> Option<Field> {
        match &mut self.repr {
            Repr::Small(fields) => match fields.binary_search_by(|(f, _)| f.as_slice().cmp(&field)) {
                Ok(at) => Some(std::mem::replace(&mut fields[at].1, slot)),
                Err(at) if fields.len() < SMALL_MAX_FIELDS => {
                    fields.insert(at, (field, slot));
                    None
                }
                Err(_) => {
                    let mut large: BTreeMap<Vec<u8>, Field> = std::mem::take(fields).into_iter().collect();
                    let old = large.insert(field, slot);
                    assert!(old.is_none(), "the field was not in the small row");
                    self.repr = Repr::Large(large);
                    None
                }
            },
            Repr::Large(fields) => fields.insert(field, slot),
        }
    }

    /// Remove `field`, returning it.
    pub fn remove(&mut self, field: &[u8]) -> Option<Field> {
        match &mut self.repr {
            Repr::Small(fields) => match fields.binary_search_by(|(f, _)| f.as_slice().cmp(field)) {
                Ok(at) => Some(fields.remove(at).1),
                Err(_) => None,
            },
            Repr::Large(fields) => fields.remove(field),
        }
    }

    /// The fields in field order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Small(fields) => Iter::Small(fields.iter()),
            Repr::Large(fields) => Iter::Large(fields.iter()),
        }
    }

    /// The field slots in field order.
    pub fn values(&self) -> impl Iterator<Item = &Field> {
        self.iter().map(|(_, slot)| slot)
    }
}

impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Row {}

impl FromIterator<(Vec<u8>, Field)> for Row {
    /// Later pairs win over earlier ones with the same field, as with a map.
    fn from_iter<I: IntoIterator<Item = (Vec<u8>, Field)>>(pairs: I) -> Row {
        let pairs = pairs.into_iter();
        let mut row = Row::with_capacity(pairs.size_hint().0);
        for (field, slot) in pairs {
            row.insert(field, slot);
        }
        row
    }
}

/// Iterator over a [`Row`]'s fields, in field order.
pub enum Iter<'a> {
    /// Over a small row.
    Small(std::slice::Iter<'a, (Vec<u8>, Field)>),
    /// Over a large row.
    Large(btree_map::Iter<'a, Vec<u8>, Field>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Vec<u8>, &'a Field);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(fields) => fields.next().map(|(field, slot)| (field, slot)),
            Iter::Large(fields) => fields.next(),
        }
    }
}

impl<'a> IntoIterator for &'a Row {
    type Item = (&'a Vec<u8>, &'a Field);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Owning iterator over a [`Row`]'s fields, in field order.
pub enum IntoIter {
    /// Over a small row.
    Small(std::vec::IntoIter<(Vec<u8>, Field)>),
    /// Over a large row.
    Large(btree_map::IntoIter<Vec<u8>, Field>),
}

impl Iterator for IntoIter {
    type Item = (Vec<u8>, Field);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            IntoIter::Small(fields) => fields.next(),
            IntoIter::Large(fields) => fields.next(),
        }
    }
}

impl IntoIterator for Row {
    type Item = (Vec<u8>, Field);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        match self.repr {
            Repr::Small(fields) => IntoIter::Small(fields.into_iter()),
            Repr::Large(fields) => IntoIter::Large(fields.into_iter()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn slot(value: u8) -> Field {
        Field { value: vec![value], expire_at_ms: None }
    }

    #[derive(Clone, Debug)]
    enum Step {
        Insert(u8, u8),
        Remove(u8),
        Touch(u8, u64),
    }

    fn arb_step() -> impl Strategy<Value = Step> {
        // Field names from a range wide enough to cross SMALL_MAX_FIELDS.
        prop_oneof![
            4 => (0u8..80, any::<u8>()).prop_map(|(f, v)| Step::Insert(f, v)),
            2 => (0u8..80).prop_map(Step::Remove),
            1 => (0u8..80, any::<u64>()).prop_map(|(f, at)| Step::Touch(f, at)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// A row behaves exactly like a BTreeMap, in both shapes.
        #[test]
        fn a_row_is_a_map(steps in proptest::collection::vec(arb_step(), 0..200)) {
            let mut row = Row::new();
            let mut map: BTreeMap<Vec<u8>, Field> = BTreeMap::new();
            for step in steps {
                match step {
                    Step::Insert(f, v) => prop_assert_eq!(row.insert(vec![f], slot(v)), map.insert(vec![f], slot(v))),
                    Step::Remove(f) => prop_assert_eq!(row.remove(&[f]), map.remove(&vec![f])),
                    Step::Touch(f, at) => {
                        let (a, b) = (row.get_mut(&[f]), map.get_mut(&vec![f]));
                        prop_assert_eq!(a.is_some(), b.is_some());
                        if let (Some(a), Some(b)) = (a, b) {
                            a.expire_at_ms = Some(at);
                            b.expire_at_ms = Some(at);
                        }
                    }
                }
                prop_assert_eq!(row.len(), map.len());
                prop_assert!(row.iter().eq(map.iter()));
                for f in 0u8..80 {
                    prop_assert_eq!(row.get(&[f]), map.get(&vec![f]));
                }
            }
            let rebuilt: Row = map.clone().into_iter().collect();
            prop_assert_eq!(&rebuilt, &row);
            prop_assert!(row.into_iter().eq(map));
        }
    }

    #[test]
    fn equality_ignores_the_shape() {
        let big: Row = (0..=SMALL_MAX_FIELDS as u8).map(|f| (vec![f], slot(f))).collect();
        let mut shrunk = big.clone();
        shrunk.remove(&[SMALL_MAX_FIELDS as u8]);
        let small: Row = (0..SMALL_MAX_FIELDS as u8).map(|f| (vec![f], slot(f))).collect();
        assert!(matches!(shrunk.repr, Repr::Large(_)) && matches!(small.repr, Repr::Small(_)));
        assert_eq!(shrunk, small);
        assert_ne!(big, small);
    }
}
