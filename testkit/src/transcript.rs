//! A logical content written down flat: every visible key's entry, in key
//! order, as one buffer of bytes ([`Transcript`]).
//!
//! It exists for the simulator's read-only inspection. Before about one
//! recovery in four, the store is opened read-only and what it shows is
//! kept, to be held to what the recovery then opens. Kept as a logical dump
//! that is a map of every key, a map of every hash's fields, and a copy of
//! every key, field and value, each its own allocation, and all of them
//! freed again: about 3% of a sweep's instructions went to building and
//! dropping those maps, for a comparison that needs only equality. A
//! transcript is one growing buffer, and two are compared as bytes; the map
//! is built back ([`Transcript::to_dump`]) only where a report or a caller
//! needs it.
//!
//! The encoding is a prefix code (every length is written before its
//! bytes, every optional part behind a tag), so two transcripts are equal
//! exactly when the sequences of `(key, entry)` they were written from
//! are, and a transcript reads back into exactly the dump it was written
//! from. It is never stored and never read from outside the process: a
//! transcript this module did not write is a programmer error, and reading
//! one panics.

use std::collections::BTreeMap;

use engine::store::{EntryView, LogicalEntry, LogicalFields, LogicalValue, Store, ValueView};

/// Tags: what follows a key's expiry, and what follows each of a hash's
/// fields.
const TAG_STR: u8 = 0;
const TAG_HASH: u8 = 1;
const TAG_FIELD: u8 = 1;
const TAG_END: u8 = 0;

/// A logical content as one buffer; see the module doc.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transcript {
    bytes: Vec<u8>,
    entries: usize,
}

impl Transcript {
    /// What `store` shows at its clock, as [`Store::logical_visit`] walks
    /// it; its error, if the walk fails (a cold row that does not read).
    pub fn of_store(store: &Store) -> engine::Result<Self> {
        let mut transcript = Transcript::default();
        store.logical_visit(|key, entry| transcript.push(key, entry))?;
        Ok(transcript)
    }

    /// A dump, written down (keys in the map's order, which is key order).
    pub fn of_dump(dump: &BTreeMap<Vec<u8>, LogicalEntry>) -> Self {
        let mut transcript = Transcript::default();
        for (key, entry) in dump {
            transcript.push(key, entry.view());
        }
        transcript
    }

    /// Write down one more key's entry. Keys come in strictly increasing
    /// order, as a walk of a store yields them.
    pub fn push(&mut self, key: &[u8], entry: EntryView<'_>) {
        write_entry(&mut self.bytes, key, entry);
        self.entries += 1;
    }

    /// Whether `store` shows at its clock exactly what this transcript
    /// holds: what `Transcript::of_store(store)? == *self` says, compared
    /// as the store walks its content, with no second transcript built.
    pub fn same_as_store(&self, store: &Store) -> engine::Result<bool> {
        let mut against = Against { expected: &self.bytes, offset_bytes: 0, same: true };
        let mut entries = 0;
        store.logical_visit(|key, entry| {
            write_entry(&mut against, key, entry);
            entries += 1;
        })?;
        Ok(against.same && against.offset_bytes == self.bytes.len() && entries == self.entries)
    }

    /// Keys written down.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether no key was written down.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The dump this transcript was written from.
    pub fn to_dump(&self) -> BTreeMap<Vec<u8>, LogicalEntry> {
        let mut reader = Reader { bytes: &self.bytes, offset_bytes: 0 };
        let mut dump = BTreeMap::new();
        while reader.offset_bytes < self.bytes.len() {
            let key = reader.bytes().to_vec();
            let expire_at_ms = reader.at();
            let value = match reader.byte() {
                TAG_STR => LogicalValue::Str(reader.bytes().to_vec()),
                TAG_HASH => LogicalValue::Hash(reader.fields()),
                tag => panic!("a transcript's value tag is {TAG_STR} or {TAG_HASH}, not {tag}"),
            };
            let previous = dump.insert(key, LogicalEntry { value, expire_at_ms });
            assert!(previous.is_none(), "a transcript names each key once");
        }
        assert_eq!(dump.len(), self.entries, "a transcript reads back every key it wrote");
        dump
    }
}

/// Where an entry is written: a transcript's buffer, or [`Against`] one.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// A sink that writes nothing: it compares what it is given with the
/// bytes of a transcript already written, in order.
struct Against<'a> {
    expected: &'a [u8],
    offset_bytes: usize,
    same: bool,
}

impl Sink for Against<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.offset_bytes + bytes.len();
        self.same = self.same && self.expected.get(self.offset_bytes..end) == Some(bytes);
        self.offset_bytes = end;
    }
}

fn write_entry(sink: &mut impl Sink, key: &[u8], entry: EntryView<'_>) {
    put_bytes(sink, key);
    put_at(sink, entry.expire_at_ms);
    match entry.value {
        ValueView::Str(value) => {
            sink.put(&[TAG_STR]);
            put_bytes(sink, value);
        }
        ValueView::Hash(fields) => {
            sink.put(&[TAG_HASH]);
            for (field, value, expire_at_ms) in fields.iter() {
                sink.put(&[TAG_FIELD]);
                put_bytes(sink, field);
                put_bytes(sink, value);
                put_at(sink, expire_at_ms);
            }
            sink.put(&[TAG_END]);
        }
    }
}

fn put_bytes(sink: &mut impl Sink, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("a key, field or value the engine took is under 4 GiB");
    sink.put(&len.to_le_bytes());
    sink.put(bytes);
}

fn put_at(sink: &mut impl Sink, at_ms: Option<u64>) {
    match at_ms {
        None => sink.put(&[0]),
        Some(at_ms) => {
            sink.put(&[1]);
            sink.put(&at_ms.to_le_bytes());
        }
    }
}

/// Reads back what [`Transcript::push`] wrote.
struct Reader<'a> {
    bytes: &'a [u8],
    offset_bytes: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> &'a [u8] {
        let taken = &self.bytes[self.offset_bytes..self.offset_bytes + len];
        self.offset_bytes += len;
        taken
    }

    fn byte(&mut self) -> u8 {
        self.take(1)[0]
    }

    fn bytes(&mut self) -> &'a [u8] {
        let len = u32::from_le_bytes(self.take(4).try_into().expect("four bytes"));
        self.take(len as usize)
    }

    fn at(&mut self) -> Option<u64> {
        match self.byte() {
            0 => None,
            1 => Some(u64::from_le_bytes(self.take(8).try_into().expect("eight bytes"))),
            tag => panic!("a transcript's expiry tag is 0 or 1, not {tag}"),
        }
    }

    fn fields(&mut self) -> LogicalFields {
        let mut fields = LogicalFields::new();
        while self.byte() == TAG_FIELD {
            let field = self.bytes().to_vec();
            let value = self.bytes().to_vec();
            let expire_at_ms = self.at();
            let previous = fields.insert(field, (value, expire_at_ms));
            assert!(previous.is_none(), "a transcript names each field of a hash once");
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entry() -> impl Strategy<Value = LogicalEntry> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..6);
        let at = || proptest::option::of(any::<u64>());
        let value = prop_oneof![
            bytes().prop_map(LogicalValue::Str),
            proptest::collection::btree_map(bytes(), (bytes(), at()), 1..4).prop_map(LogicalValue::Hash),
        ];
        (value, at()).prop_map(|(value, expire_at_ms)| LogicalEntry { value, expire_at_ms })
    }

    fn dump() -> impl Strategy<Value = BTreeMap<Vec<u8>, LogicalEntry>> {
        proptest::collection::btree_map(proptest::collection::vec(any::<u8>(), 0..6), entry(), 0..5)
    }

    proptest! {
        /// A transcript reads back into the dump it was written from.
        #[test]
        fn reads_back_what_it_wrote(dump in dump()) {
            let transcript = Transcript::of_dump(&dump);
            prop_assert_eq!(transcript.len(), dump.len());
            prop_assert_eq!(transcript.to_dump(), dump);
        }

        /// Two transcripts are equal exactly when their dumps are: the
        /// inspection's verdict is the one comparing dumps gave.
        #[test]
        fn equal_exactly_when_the_dumps_are(a in dump(), b in dump()) {
            prop_assert_eq!(Transcript::of_dump(&a) == Transcript::of_dump(&b), a == b);
        }
    }

    fn store_with(commands: &[&[&str]]) -> Store {
        use engine::clock::ManualClock;
        use engine::store::Options;
        use engine::vfs::MemVfs;
        use std::sync::Arc;
        let clock = Arc::new(ManualClock::new(1_000));
        let opened = Store::open(Arc::new(MemVfs::new()), clock, std::path::Path::new("/db"), Options::default());
        let (mut store, _) = opened.expect("an empty directory opens");
        for command in commands {
            let args: Vec<Vec<u8>> = command.iter().map(|arg| arg.as_bytes().to_vec()).collect();
            store.execute_args(&args).unwrap_or_else(|e| panic!("{command:?}: {e}"));
        }
        store
    }

    /// A store's transcript is its dump's, and the walk that compares
    /// against one says what comparing transcripts would: equal for the
    /// same content, hot or cold, and not for a key more or a key fewer.
    #[test]
    fn a_store_compares_as_its_transcript_does() {
        let mut store = store_with(&[
            &["WINDOW", "t0", "ts", "1"],
            &["HSET", "t0:0", "ts", "0", "name", "ada"],
            &["HSET", "t0:5", "ts", "5", "name", "zed"],
            &["SET", "a", "1"],
            &["HSET", "h", "f", "v", "g", "w"],
            &["HPEXPIREAT", "h", "99000", "FIELDS", "1", "g"],
            &["PEXPIREAT", "a", "50000"],
        ]);
        let hot = Transcript::of_store(&store).expect("the walk reads");
        assert_eq!(hot, Transcript::of_dump(&store.logical_dump().expect("the dump reads")));
        assert_eq!(hot.len(), 4);
        assert!(hot.same_as_store(&store).expect("the walk reads"));

        store.evict().expect("an eviction on a memory disk");
        assert!(store.cold_count() > 0, "the eviction sealed a row");
        assert!(hot.same_as_store(&store).expect("cold rows read"), "eviction changes no logical content");

        store.execute_args(&[b"SET".to_vec(), b"b".to_vec(), b"2".to_vec()]).expect("a SET");
        assert!(!hot.same_as_store(&store).expect("the walk reads"), "a key more");
        let more = Transcript::of_store(&store).expect("the walk reads");
        assert!(more.same_as_store(&store).expect("the walk reads"));
        store.execute_args(&[b"DEL".to_vec(), b"a".to_vec(), b"b".to_vec()]).expect("a DEL");
        assert!(!more.same_as_store(&store).expect("the walk reads"), "keys fewer");
        assert!(!hot.same_as_store(&store).expect("the walk reads"), "a key fewer");
    }

    /// The same contents apart in each place a prefix code must keep
    /// apart: a length, an expiry's presence, a value's kind.
    #[test]
    fn contents_that_differ_only_in_framing_are_apart() {
        let str_entry =
            |value: &[u8], expire_at_ms| LogicalEntry { value: LogicalValue::Str(value.to_vec()), expire_at_ms };
        let one = |key: &[u8], entry: LogicalEntry| BTreeMap::from([(key.to_vec(), entry)]);
        let pairs = [
            (one(b"ab", str_entry(b"c", None)), one(b"a", str_entry(b"bc", None))),
            (one(b"a", str_entry(b"", None)), one(b"a", str_entry(b"", Some(0)))),
            (
                one(b"a", str_entry(b"", None)),
                one(b"a", LogicalEntry { value: LogicalValue::Hash(BTreeMap::new()), expire_at_ms: None }),
            ),
        ];
        for (a, b) in pairs {
            assert_ne!(a, b);
            assert_ne!(Transcript::of_dump(&a), Transcript::of_dump(&b), "{a:?} and {b:?}");
        }
    }
}
