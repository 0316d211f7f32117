//! [`Row`]: a hot hash's fields, kept in field order.
//!
//! Most rows are small (a handful of fields), and replay builds millions
//! of them, so the shape of a small row is what opening a store costs. A
//! small row is one byte buffer: its fields packed in field order, each
//! as a fixed header then the field's name and value bytes. That is one
//! allocation per row for every name and value it holds (a `Vec` per name
//! and per value cost six allocations for a two-field row, and freeing
//! them as much again), lookups scan a few dozen bytes, and an update
//! shifts the bytes after it. A row that grows past [`SMALL_MAX_FIELDS`]
//! becomes a `BTreeMap`, so a huge hash keeps logarithmic updates; it does
//! not shrink back (a row that was once big is likely to be big again, and
//! flapping would cost more than it saves).
//!
//! Both shapes iterate in field order and hand out borrowed [`FieldRef`]s,
//! and equality compares the fields, never the shape: two rows with the
//! same fields are equal.

use std::collections::{btree_map, BTreeMap};
use std::fmt;

/// Above this many fields a row is a `BTreeMap`.
pub const SMALL_MAX_FIELDS: usize = 32;

/// A packed field's header: `[name len u32][value len u32][ttl tag u8]
/// [ttl u64]`, little-endian, then the name, then the value. The tag says
/// whether the TTL is set (every u64 is a valid TTL, so no sentinel).
const HEADER_BYTES: usize = 17;

/// One hash field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field's value.
    pub value: Vec<u8>,
    /// Absolute field expiry, Unix milliseconds.
    pub expire_at_ms: Option<u64>,
}

impl Field {
    /// Whether the field is expired at `now_ms` (reads leave it out).
    pub fn is_expired(&self, now_ms: u64) -> bool {
        !alive(self.expire_at_ms, now_ms)
    }
}

/// The store's one expiry rule, for keys and fields alike: alive while the
/// clock is at or before the deadline, expired only once it has passed it
/// (Redis's rule: `now > deadline`). Reads, purges, rewrites and the row
/// views of `view.rs` all ask it.
pub fn alive(expire_at_ms: Option<u64>, now_ms: u64) -> bool {
    expire_at_ms.is_none_or(|at| at >= now_ms)
}

/// One field, borrowed from a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRef<'a> {
    /// The field's value.
    pub value: &'a [u8],
    /// Absolute field expiry, Unix milliseconds.
    pub expire_at_ms: Option<u64>,
}

impl FieldRef<'_> {
    /// Whether the field is expired at `now_ms` (reads leave it out).
    pub fn is_expired(&self, now_ms: u64) -> bool {
        !alive(self.expire_at_ms, now_ms)
    }

    /// An owned copy.
    pub fn to_field(self) -> Field {
        Field { value: self.value.to_vec(), expire_at_ms: self.expire_at_ms }
    }
}

/// A hash's fields in field order (see the module doc).
#[derive(Clone)]
pub struct Row {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// Packed fields (see [`HEADER_BYTES`]): sorted by name, no name
    /// twice, `fields` of them, at most [`SMALL_MAX_FIELDS`].
    Small {
        bytes: Vec<u8>,
        fields: usize,
    },
    Large(BTreeMap<Vec<u8>, Field>),
}

/// Where one packed field lies in a small row's bytes.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The start of its header.
    at: usize,
    name_len: usize,
    value_len: usize,
}

impl Slot {
    fn read(bytes: &[u8], at: usize) -> Slot {
        let header = &bytes[at..at + HEADER_BYTES];
        let name_len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
        let value_len = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes")) as usize;
        let slot = Slot { at, name_len, value_len };
        assert!(slot.end() <= bytes.len(), "a packed field lies inside its row");
        slot
    }

    fn name<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        let start = self.at + HEADER_BYTES;
        &bytes[start..start + self.name_len]
    }

    fn field<'a>(&self, bytes: &'a [u8]) -> FieldRef<'a> {
        let header = &bytes[self.at..self.at + HEADER_BYTES];
        let ttl = u64::from_le_bytes(header[9..17].try_into().expect("8 bytes"));
        let start = self.at + HEADER_BYTES + self.name_len;
        FieldRef { value: &bytes[start..start + self.value_len], expire_at_ms: (header[8] != 0).then_some(ttl) }
    }

    fn end(&self) -> usize {
        self.at + HEADER_BYTES + self.name_len + self.value_len
    }
}

/// The header of one packed field.
fn header(name: &[u8], value: &[u8], expire_at_ms: Option<u64>) -> [u8; HEADER_BYTES] {
    let name_len = u32::try_from(name.len()).expect("a field name under 4 GiB");
    let value_len = u32::try_from(value.len()).expect("a field value under 4 GiB");
    let mut header = [0u8; HEADER_BYTES];
    header[0..4].copy_from_slice(&name_len.to_le_bytes());
    header[4..8].copy_from_slice(&value_len.to_le_bytes());
    header[8] = u8::from(expire_at_ms.is_some());
    header[9..17].copy_from_slice(&expire_at_ms.unwrap_or(0).to_le_bytes());
    header
}

/// Write one packed field into `out`, which is exactly its size.
fn pack_into(out: &mut [u8], name: &[u8], value: &[u8], expire_at_ms: Option<u64>) {
    assert_eq!(out.len(), packed_bytes(name, value));
    let (header_bytes, rest) = out.split_at_mut(HEADER_BYTES);
    header_bytes.copy_from_slice(&header(name, value, expire_at_ms));
    let (name_bytes, value_bytes) = rest.split_at_mut(name.len());
    name_bytes.copy_from_slice(name);
    value_bytes.copy_from_slice(value);
}

/// Put one packed field in place of `bytes[range]` (empty to insert),
/// shifting the bytes after it once, without a temporary buffer.
fn pack_over(bytes: &mut Vec<u8>, range: std::ops::Range<usize>, name: &[u8], value: &[u8], expire_at_ms: Option<u64>) {
    let new_len = packed_bytes(name, value);
    if range.start == bytes.len() {
        // An append (a field after every other in name order, as each of a
        // row decoded in order is): nothing to shift, nothing to zero first.
        debug_assert!(range.is_empty(), "an append replaces nothing");
        bytes.reserve(new_len);
        bytes.extend_from_slice(&header(name, value, expire_at_ms));
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        return;
    }
    let old_len = range.end - range.start;
    let tail_len = bytes.len() - range.end;
    if new_len > old_len {
        bytes.resize(bytes.len() + (new_len - old_len), 0);
    }
    bytes.copy_within(range.end..range.end + tail_len, range.start + new_len);
    bytes.truncate(range.start + new_len + tail_len);
    pack_into(&mut bytes[range.start..range.start + new_len], name, value, expire_at_ms);
}

/// The bytes one packed field takes.
pub fn packed_bytes(name: &[u8], value: &[u8]) -> usize {
    HEADER_BYTES + name.len() + value.len()
}

/// Find `name` in packed `bytes`: `Ok(slot)` if present, else `Err(at)`,
/// where a field of that name would be inserted to keep the order.
fn find(bytes: &[u8], name: &[u8]) -> Result<Slot, usize> {
    let mut at = 0;
    while at < bytes.len() {
        let slot = Slot::read(bytes, at);
        match slot.name(bytes).cmp(name) {
            std::cmp::Ordering::Less => at = slot.end(),
            std::cmp::Ordering::Equal => return Ok(slot),
            std::cmp::Ordering::Greater => return Err(at),
        }
    }
    Err(at)
}

impl Default for Row {
    fn default() -> Self {
        Row::new()
    }
}

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row { repr: Repr::Small { bytes: Vec::new(), fields: 0 } }
    }

    /// An empty row with room for fields whose packed sizes
    /// ([`packed_bytes`]) add up to `bytes`, so building it allocates once.
    pub fn with_capacity_bytes(bytes: usize) -> Row {
        Row { repr: Repr::Small { bytes: Vec::with_capacity(bytes), fields: 0 } }
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small { fields, .. } => *fields,
            Repr::Large(fields) => fields.len(),
        }
    }

    /// Whether the row has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The field named `name`.
    pub fn get(&self, name: &[u8]) -> Option<FieldRef<'_>> {
        match &self.repr {
            Repr::Small { bytes, .. } => find(bytes, name).ok().map(|slot| slot.field(bytes)),
            Repr::Large(fields) => fields.get(name).map(Field::view),
        }
    }

    /// Whether the row has a field named `name`.
    pub fn contains_key(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }

    /// Set the expiry of the field named `name`; false if there is none.
    pub fn set_expiry(&mut self, name: &[u8], expire_at_ms: Option<u64>) -> bool {
        match &mut self.repr {
            Repr::Small { bytes, .. } => match find(bytes, name) {
                Ok(slot) => {
                    bytes[slot.at + 8] = u8::from(expire_at_ms.is_some());
                    bytes[slot.at + 9..slot.at + 17].copy_from_slice(&expire_at_ms.unwrap_or(0).to_le_bytes());
                    true
                }
                Err(_) => false,
            },
            Repr::Large(fields) => match fields.get_mut(name) {
                Some(field) => {
                    field.expire_at_ms = expire_at_ms;
                    true
                }
                None => false,
            },
        }
    }

    /// Set `name` to `value` with `expire_at_ms`; returns the length in
    /// bytes of the value it replaced, if the field was there.
    pub fn insert(&mut self, name: &[u8], value: &[u8], expire_at_ms: Option<u64>) -> Option<usize> {
        let Repr::Small { bytes, fields } = &mut self.repr else {
            let Repr::Large(large) = &mut self.repr else { unreachable!("not small") };
            let old = large.insert(name.to_vec(), Field { value: value.to_vec(), expire_at_ms });
            return old.map(|old| old.value.len());
        };
        match find(bytes, name) {
            Ok(slot) => {
                pack_over(bytes, slot.at..slot.end(), name, value, expire_at_ms);
                Some(slot.value_len)
            }
            Err(at) if *fields < SMALL_MAX_FIELDS => {
                pack_over(bytes, at..at, name, value, expire_at_ms);
                *fields += 1;
                None
            }
            Err(_) => {
                let mut large: BTreeMap<Vec<u8>, Field> =
                    self.iter().map(|(name, field)| (name.to_vec(), field.to_field())).collect();
                let old = large.insert(name.to_vec(), Field { value: value.to_vec(), expire_at_ms });
                assert!(old.is_none(), "the field was not in the small row");
                self.repr = Repr::Large(large);
                None
            }
        }
    }

    /// Remove `name`; returns the length in bytes of its value, if it was
    /// there.
    pub fn remove(&mut self, name: &[u8]) -> Option<usize> {
        match &mut self.repr {
            Repr::Small { bytes, fields } => match find(bytes, name) {
                Ok(slot) => {
                    bytes.drain(slot.at..slot.end());
                    *fields -= 1;
                    Some(slot.value_len)
                }
                Err(_) => None,
            },
            Repr::Large(fields) => fields.remove(name).map(|old| old.value.len()),
        }
    }

    /// The fields in field order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Small { bytes, .. } => Iter::Small { bytes, at: 0 },
            Repr::Large(fields) => Iter::Large(fields.iter()),
        }
    }

    /// The field slots in field order.
    pub fn values(&self) -> impl Iterator<Item = FieldRef<'_>> {
        self.iter().map(|(_, field)| field)
    }
}

impl Field {
    /// This field, borrowed.
    pub fn view(&self) -> FieldRef<'_> {
        FieldRef { value: &self.value, expire_at_ms: self.expire_at_ms }
    }
}

impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Row {}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(name, field)| (String::from_utf8_lossy(name), field))).finish()
    }
}

impl<'a> FromIterator<(&'a [u8], FieldRef<'a>)> for Row {
    /// Later pairs win over earlier ones with the same field, as with a map.
    fn from_iter<I: IntoIterator<Item = (&'a [u8], FieldRef<'a>)>>(pairs: I) -> Row {
        let mut row = Row::new();
        for (name, field) in pairs {
            row.insert(name, field.value, field.expire_at_ms);
        }
        row
    }
}

/// Iterator over a [`Row`]'s fields, in field order.
pub enum Iter<'a> {
    /// Over a small row's packed bytes, from `at`.
    Small {
        /// The packed fields.
        bytes: &'a [u8],
        /// The next field's header.
        at: usize,
    },
    /// Over a large row.
    Large(btree_map::Iter<'a, Vec<u8>, Field>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], FieldRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small { bytes, at } => {
                if *at == bytes.len() {
                    return None;
                }
                let slot = Slot::read(bytes, *at);
                *at = slot.end();
                Some((slot.name(bytes), slot.field(bytes)))
            }
            Iter::Large(fields) => fields.next().map(|(name, field)| (name.as_slice(), field.view())),
        }
    }
}

impl<'a> IntoIterator for &'a Row {
    type Item = (&'a [u8], FieldRef<'a>);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Step {
        Insert(u8, Vec<u8>),
        Remove(u8),
        Expire(u8, Option<u64>),
    }

    fn arb_step() -> impl Strategy<Value = Step> {
        // Field names from a range wide enough to cross SMALL_MAX_FIELDS;
        // values of varying length so updates shift bytes both ways.
        prop_oneof![
            4 => (0u8..80, proptest::collection::vec(any::<u8>(), 0..6)).prop_map(|(f, v)| Step::Insert(f, v)),
            2 => (0u8..80).prop_map(Step::Remove),
            1 => (0u8..80, any::<Option<u64>>()).prop_map(|(f, at)| Step::Expire(f, at)),
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
                    Step::Insert(f, v) => {
                        let old = map.insert(vec![f], Field { value: v.clone(), expire_at_ms: None });
                        prop_assert_eq!(row.insert(&[f], &v, None), old.map(|old| old.value.len()));
                    }
                    Step::Remove(f) => {
                        prop_assert_eq!(row.remove(&[f]), map.remove(&vec![f]).map(|old| old.value.len()));
                    }
                    Step::Expire(f, at) => {
                        let found = map.get_mut(&vec![f]).map(|field| field.expire_at_ms = at).is_some();
                        prop_assert_eq!(row.set_expiry(&[f], at), found);
                    }
                }
                prop_assert_eq!(row.len(), map.len());
                prop_assert!(row.iter().eq(map.iter().map(|(f, field)| (f.as_slice(), field.view()))));
                for f in 0u8..80 {
                    prop_assert_eq!(row.get(&[f]), map.get(&vec![f]).map(Field::view));
                }
            }
            let rebuilt: Row = map.iter().map(|(f, field)| (f.as_slice(), field.view())).collect();
            prop_assert_eq!(&rebuilt, &row);
        }
    }

    #[test]
    fn equality_ignores_the_shape() {
        let field = |f: u8| (f, [f]);
        let build = |names: std::ops::Range<u8>| {
            let mut row = Row::new();
            for (name, value) in names.map(field) {
                row.insert(&[name], &value, None);
            }
            row
        };
        let big = build(0..SMALL_MAX_FIELDS as u8 + 1);
        let mut shrunk = big.clone();
        shrunk.remove(&[SMALL_MAX_FIELDS as u8]);
        let small = build(0..SMALL_MAX_FIELDS as u8);
        assert!(matches!(shrunk.repr, Repr::Large(_)) && matches!(small.repr, Repr::Small { .. }));
        assert_eq!(shrunk, small);
        assert_ne!(big, small);
    }

    #[test]
    fn a_row_built_with_its_size_allocates_once() {
        let pairs: [(&[u8], &[u8]); 2] = [(b"ts", b"17"), (b"v", b"value")];
        let size_bytes = pairs.iter().map(|(name, value)| packed_bytes(name, value)).sum();
        let mut row = Row::with_capacity_bytes(size_bytes);
        for (name, value) in pairs {
            row.insert(name, value, None);
        }
        let Repr::Small { bytes, fields } = &row.repr else { panic!("a two-field row is small") };
        assert_eq!((bytes.len(), bytes.capacity(), *fields), (size_bytes, size_bytes, 2));
    }
}
