//! [`Key`]: a key of the store's hot map, its bytes held inline when short.
//!
//! Every key the store holds is one entry of a `BTreeMap`, and replay
//! inserts every key of the log again at each open. Held as a `Vec<u8>`,
//! each key is an allocation of its own (and a free when it goes), and a
//! search compares the wanted key against bytes behind a pointer per node
//! it passes. Most keys are short — the simulator's are a few bytes, a
//! table's row keys a dozen or two — so a key of up to [`INLINE_MAX_BYTES`]
//! is stored in the map's node itself, in the 24 bytes a `Vec` header would
//! take: no allocation to insert it, none to free it, and its bytes on the
//! same cache line as the search that compares them. A longer key is one
//! boxed slice.
//!
//! A key orders, compares and borrows as its bytes, so the map is still
//! searched with a plain `&[u8]` and walks in the same key order as before.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::ops::Deref;

/// The longest key held inline: a `Key` is as large as a `Vec<u8>` (on
/// a 64-bit target).
pub(super) const INLINE_MAX_BYTES: usize = 22;

/// A key's bytes, inline up to [`INLINE_MAX_BYTES`], boxed beyond.
#[derive(Clone)]
pub(super) struct Key(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len_bytes: u8, bytes: [u8; INLINE_MAX_BYTES] },
    Boxed(Box<[u8]>),
}

impl Key {
    /// A key holding a copy of `bytes`: no allocation when short.
    pub(super) fn new(bytes: &[u8]) -> Key {
        if bytes.len() > INLINE_MAX_BYTES {
            return Key(Repr::Boxed(bytes.into()));
        }
        let mut inline = [0u8; INLINE_MAX_BYTES];
        inline[..bytes.len()].copy_from_slice(bytes);
        Key(Repr::Inline { len_bytes: bytes.len() as u8, bytes: inline })
    }

    /// The key's bytes.
    #[inline]
    pub(super) fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len_bytes, bytes } => &bytes[..usize::from(*len_bytes)],
            Repr::Boxed(bytes) => bytes,
        }
    }
}

impl Deref for Key {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Bytewise, as `[u8]` orders: `Borrow` requires the two orders to agree.
///
/// Two inline keys compare as three big-endian words and then their
/// lengths, with no call to `memcmp`: a map search (replay inserts every
/// key through one) compares a dozen keys a level, most of them sharing a
/// long prefix. Inline bytes past a key's length are always zero, so the
/// first word that differs differs where the keys do, or where the shorter
/// one ended (its zero against the longer one's byte: shorter first, as a
/// prefix sorts first); equal words leave the lengths to decide.
impl Ord for Key {
    #[inline]
    fn cmp(&self, other: &Key) -> Ordering {
        match (&self.0, &other.0) {
            (Repr::Inline { len_bytes: a_len, bytes: a }, Repr::Inline { len_bytes: b_len, bytes: b }) => {
                inline_words(a).cmp(&inline_words(b)).then(a_len.cmp(b_len))
            }
            _ => self.as_slice().cmp(other.as_slice()),
        }
    }
}

/// An inline key's bytes (zero past its length) as words that order as
/// the bytes do.
#[inline]
fn inline_words(bytes: &[u8; INLINE_MAX_BYTES]) -> [u64; 3] {
    let word = |at: usize| {
        let mut chunk = [0u8; 8];
        let end = (at + 8).min(INLINE_MAX_BYTES);
        chunk[..end - at].copy_from_slice(&bytes[at..end]);
        u64::from_be_bytes(chunk)
    };
    [word(0), word(8), word(16)]
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?})", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_key_is_as_large_as_a_vec() {
        assert_eq!(std::mem::size_of::<Key>(), std::mem::size_of::<Vec<u8>>());
    }

    #[test]
    fn short_keys_are_inline_and_long_ones_boxed() {
        for len_bytes in [0, 1, INLINE_MAX_BYTES - 1, INLINE_MAX_BYTES, INLINE_MAX_BYTES + 1, 300] {
            let bytes: Vec<u8> = (0..len_bytes).map(|i| i as u8).collect();
            let key = Key::new(&bytes);
            assert_eq!(key.as_slice(), &bytes[..]);
            assert_eq!(matches!(key.0, Repr::Inline { .. }), len_bytes <= INLINE_MAX_BYTES, "{len_bytes} bytes");
        }
    }

    /// The padding that makes word comparison right: zero, whatever the
    /// key was built from.
    #[test]
    fn inline_padding_is_zero() {
        let key = Key::new(b"abc");
        let Repr::Inline { bytes, .. } = &key.0 else { panic!("inline") };
        assert!(bytes[3..].iter().all(|&b| b == 0));
        assert_eq!(key.clone().cmp(&Key::new(b"abc\0")), Ordering::Less, "a prefix sorts first, zero byte or not");
    }

    proptest! {
        /// Keys order exactly as their bytes do, inline, boxed and mixed.
        #[test]
        fn keys_order_as_their_bytes(
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..30),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(255u8), any::<u8>()], 0..30),
            shared in 0usize..30,
        ) {
            // Often a long shared prefix, as real keys have.
            let b = [&a[..shared.min(a.len())], &b[..]].concat();
            prop_assert_eq!(Key::new(&a).cmp(&Key::new(&b)), a.cmp(&b));
            prop_assert_eq!(Key::new(&b).cmp(&Key::new(&a)), b.cmp(&a));
            prop_assert_eq!(Key::new(&a) == Key::new(&b), a == b);
        }

        /// A map keyed by `Key` holds, finds and walks exactly what a map
        /// keyed by the same bytes as `Vec<u8>` does, inline and boxed
        /// keys mixed (a shared prefix across the inline limit included).
        #[test]
        fn a_key_map_behaves_as_a_byte_map(
            keys in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..6), 0usize..30).prop_map(|(mut head, pad)| {
                    head.resize(head.len() + pad, 7);
                    head
                }),
                0..60,
            ),
        ) {
            let mut by_key = BTreeMap::new();
            let mut by_vec = BTreeMap::new();
            for (i, bytes) in keys.iter().enumerate() {
                prop_assert_eq!(by_key.insert(Key::new(bytes), i), by_vec.insert(bytes.clone(), i));
            }
            let walked: Vec<(Vec<u8>, usize)> = by_key.iter().map(|(k, v)| (k.to_vec(), *v)).collect();
            let expected: Vec<(Vec<u8>, usize)> = by_vec.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(walked, expected);
            for bytes in &keys {
                prop_assert_eq!(by_key.get(bytes.as_slice()), by_vec.get(bytes));
                let from_key: Vec<usize> = by_key.range::<[u8], _>((std::ops::Bound::Included(&bytes[..]), std::ops::Bound::Unbounded)).map(|(_, v)| *v).collect();
                let from_vec: Vec<usize> = by_vec.range(bytes.clone()..).map(|(_, v)| *v).collect();
                prop_assert_eq!(from_key, from_vec);
            }
        }
    }
}
