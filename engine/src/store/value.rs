//! What a key holds in memory: a string, a hash, or a cold stub; the
//! memory weight of each; and the codec that turns a hash row into a
//! segment record and back.
//!
//! A stub keeps only the key hot: its row lives in segment `seq`. Cold rows
//! never carry a key TTL or field TTLs (the eviction filter guarantees it),
//! which is why a stub has room for neither.

use super::row::{alive, packed_bytes, Row};
use crate::codec::{put_len_prefixed, put_u32, ByteReader, DecodeError};

/// A cold row's in-memory identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub {
    /// The segment holding the row.
    pub seq: u64,
    /// The row's hot value weight when it was sealed (informational: it is
    /// what the row will weigh again once promoted).
    pub weight: u64,
}

/// The value of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string.
    Str(Vec<u8>),
    /// A hash; never empty while stored (the last HDEL deletes the key).
    Hash(Row),
    /// A cold hash row, resolved through its segment.
    Cold(Stub),
}

/// One key's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute key expiry, Unix milliseconds. Always `None` for stubs.
    pub expire_at_ms: Option<u64>,
}

impl Entry {
    /// Whether the key is expired at `now_ms` (reads treat it as absent).
    pub fn is_expired(&self, now_ms: u64) -> bool {
        !alive(self.expire_at_ms, now_ms)
    }
}

/// The hot bytes a value costs beyond its key: what `used_memory` counts.
/// A stub costs nothing beyond its key.
pub fn value_weight(value: &Value) -> u64 {
    match value {
        Value::Str(bytes) => bytes.len() as u64,
        Value::Hash(fields) => fields.iter().map(|(f, v)| (f.len() + v.value.len()) as u64).sum(),
        Value::Cold(_) => 0,
    }
}

/// A key's whole weight.
pub fn entry_weight(key: &[u8], entry: &Entry) -> u64 {
    key.len() as u64 + value_weight(&entry.value)
}

/// Encode a TTL-free hash row as a segment record payload:
/// `[field count u32]` then per field `[len u32][field][len u32][value]`.
pub fn encode_row(fields: &Row, out: &mut Vec<u8>) {
    out.clear();
    put_u32(out, u32::try_from(fields.len()).expect("a row of over 4 billion fields"));
    for (field, slot) in fields {
        debug_assert!(slot.expire_at_ms.is_none(), "an evicted row carries no field TTL");
        put_len_prefixed(out, field);
        put_len_prefixed(out, slot.value);
    }
}

/// Decode a segment record payload back into a hash row. The field count
/// is checked against the bytes present before anything is allocated.
pub fn decode_row(payload: &[u8], offset_bytes: u64) -> Result<Row, DecodeError> {
    let mut reader = ByteReader::new(payload, offset_bytes);
    let count = reader.u32()? as usize;
    // Each field needs at least its two 4-byte length prefixes.
    if count > reader.remaining() / 8 {
        return Err(reader.error("row field count exceeds the record's bytes"));
    }
    if count == 0 {
        return Err(reader.error("row has no fields"));
    }
    // The row's packed size: its bytes here less the two length prefixes
    // per field, plus a packed header per field (`count` is bounded above).
    let size_bytes = (reader.remaining() - 8 * count) + count * packed_bytes(b"", b"");
    let mut fields = Row::with_capacity_bytes(size_bytes);
    for _ in 0..count {
        let field = reader.len_prefixed()?;
        let value = reader.len_prefixed()?;
        if fields.insert(field, value, None).is_some() {
            return Err(reader.error("row repeats a field"));
        }
    }
    reader.finish()?;
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn rows_round_trip(row in proptest::collection::btree_map(
            proptest::collection::vec(any::<u8>(), 0..12),
            proptest::collection::vec(any::<u8>(), 0..12),
            1..8,
        )) {
            let mut fields = Row::new();
            for (f, v) in &row {
                fields.insert(f, v, None);
            }
            let mut payload = Vec::new();
            encode_row(&fields, &mut payload);
            prop_assert_eq!(decode_row(&payload, 0).unwrap(), fields);
        }

        #[test]
        fn arbitrary_payloads_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_row(&bytes, 0);
        }
    }

    #[test]
    fn a_huge_count_is_refused_before_allocating() {
        let err = decode_row(&[0xff, 0xff, 0xff, 0xff], 40).unwrap_err();
        assert_eq!(err.offset_bytes, 44);
    }
}
