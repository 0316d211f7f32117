//! No bytes make the reader panic, allocate without bound or loop: not
//! arbitrary bytes, and not valid segments mutated behind resealed
//! checksums (which reach the checks that checksums otherwise shield).
//! Only the absence of panics and the error kind (damage, or an older
//! format where the version field says so) are asserted here; the
//! "never different data" property is [`super::damage`]'s.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use super::*;
use crate::codec::put_len_prefixed;
use crate::seg::format::{
    Tail, FORMAT_VERSION, HEAD_BYTES, MAGIC, TAIL_BOUNDS_OFFSET_AT, TAIL_BYTES, TAIL_INDEX_OFFSET_AT, TAIL_RECORDS_AT,
    TAIL_VERSION_AT,
};
use crate::Error;

/// A mutation for the structured fuzz.
#[derive(Clone, Debug)]
enum Mutation {
    /// Overwrite one byte anywhere.
    Byte(Index, u8),
    /// Overwrite one u64 field of the tail.
    TailField(Index, u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let interesting = prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::from(u32::MAX)), 0u64..512, any::<u64>(),];
    prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Byte(at, byte)),
        1 => (any::<Index>(), interesting).prop_map(|(field, value)| Mutation::TailField(field, value)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn mutations_behind_resealed_checksums_never_panic(
        model in model(12),
        probes in vec(key(), 0..6),
        mutations in vec(mutation(), 1..6),
    ) {
        let mut bytes = build_bytes(&model);
        let tail = bytes.len() - TAIL_BYTES;
        for mutation in &mutations {
            match mutation {
                Mutation::Byte(at, byte) => {
                    let at = at.index(bytes.len());
                    bytes[at] = *byte;
                }
                Mutation::TailField(field, value) => {
                    let field = [TAIL_RECORDS_AT, TAIL_INDEX_OFFSET_AT, TAIL_BOUNDS_OFFSET_AT][field.index(3)];
                    bytes[tail + field..][..8].copy_from_slice(&value.to_le_bytes());
                }
            }
        }
        reseal(&mut bytes);
        // A mutation of the version field that names an older version
        // makes the file an older format's, refused by its version.
        let tail_version = u32::from_le_bytes(bytes[tail + TAIL_VERSION_AT..][..4].try_into().expect("4 bytes"));
        match open_bytes(bytes) {
            Ok(seg) => read_everything(&seg, &probes),
            Err(Error::OldFormat { version, .. }) => {
                prop_assert!(version == tail_version && version < FORMAT_VERSION, "old format {} read from version field {}", version, tail_version)
            }
            Err(e) => prop_assert!(e.is_corrupt(), "{}", e),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..600), probes in vec(key(), 0..4)) {
        match open_bytes(bytes) {
            Ok(seg) => read_everything(&seg, &probes),
            Err(e) => prop_assert!(e.is_corrupt(), "{}", e),
        }
    }

    #[test]
    fn arbitrary_indexes_behind_a_valid_footer_never_panic(
        body in vec(any::<u8>(), 0..600),
        split in any::<Index>(),
        records in 0u64..8,
        bounds in (vec(0u8..4, 0..3), vec(0u8..4, 0..3)),
        probes in vec(key(), 0..4),
    ) {
        // Random bytes almost never get past the magics and the checksums;
        // these do: a valid head, bounds block and tail around a random
        // records region and index, so they reach the index decoder.
        let index_offset = HEAD_BYTES + split.index(body.len() + 1);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&body);
        let bounds_offset = bytes.len();
        put_len_prefixed(&mut bytes, &bounds.0);
        put_len_prefixed(&mut bytes, &bounds.1);
        let tail = Tail {
            seq: SEQ,
            records,
            index_offset_bytes: index_offset as u64,
            bounds_offset_bytes: bounds_offset as u64,
            index_crc: 0,
            bounds_crc: 0,
        };
        bytes.extend_from_slice(&tail.encode());
        reseal(&mut bytes);
        match open_bytes(bytes) {
            Ok(seg) => read_everything(&seg, &probes),
            Err(e) => prop_assert!(e.is_corrupt(), "{}", e),
        }
    }
}
