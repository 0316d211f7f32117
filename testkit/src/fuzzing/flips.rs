//! Byte flips for the fuzz bodies' property tests: a strategy for a few
//! (position, new byte) pairs, and a file with them applied. Each target's
//! test flips its fixture file and demands that the body still holds every
//! property (the bodies assert them), as a fuzzer's mutation would.

use proptest::prelude::*;
use proptest::sample::Index;

/// One to three flips, each a position (scaled onto the file's length
/// when applied) and the byte to put there.
pub fn byte_flips() -> impl Strategy<Value = Vec<(Index, u8)>> {
    proptest::collection::vec((any::<Index>(), any::<u8>()), 1..4)
}

/// `bytes` with `flips` applied in order (a later flip at the same
/// position wins). `bytes` must not be empty.
pub fn flipped(mut bytes: Vec<u8>, flips: &[(Index, u8)]) -> Vec<u8> {
    assert!(!bytes.is_empty(), "a flip needs a byte to land on");
    for (at, value) in flips {
        let at = at.index(bytes.len());
        bytes[at] = *value;
    }
    bytes
}
