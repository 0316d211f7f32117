//! The trace's hashing: an FNV-1a fold over whole 64-bit words, byte
//! strings as padded words then their length, and the hash of a reply.
//!
//! Kept apart from the events because it is a promise of its own: a
//! reply's hash is the hash of its `Debug` text, bit for bit, yet the
//! driver hashes every reply and cannot afford to build that text. So the
//! text is streamed ([`hash_debug`]) or written by hand through a
//! [`StreamHasher`] (segsim's store replies: its driver's `reply_hash.rs`),
//! and tests hold both to hashing the real string. Any change here changes
//! every trace hash.

use std::fmt;

pub(super) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// One FNV-1a step over a whole 64-bit word: the trace's only mixing.
pub(super) fn fold_word(hash: u64, word: u64) -> u64 {
    (hash ^ word).wrapping_mul(FNV_PRIME)
}

/// `bytes` folded into `hash` as 8-byte little-endian words (the last one
/// zero-padded), then their length.
pub(super) fn fold_byte_string(mut hash: u64, bytes: &[u8]) -> u64 {
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = fold_word(hash, u64::from_le_bytes(word));
    }
    fold_word(hash, bytes.len() as u64)
}

/// Hash arbitrary bytes the way the trace folds them (for reply hashes).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    fold_byte_string(FNV_OFFSET, bytes)
}

/// `hash_bytes(format!("{value:?}").as_bytes())`, bit for bit, without
/// building the string: the driver hashes every reply, and the `String`
/// (grown by reallocation as `Debug` writes it) cost more than the engine
/// call it described.
pub fn hash_debug(value: &impl fmt::Debug) -> u64 {
    let mut hasher = StreamHasher::new();
    fmt::write(&mut hasher, format_args!("{value:?}")).expect("hashing never fails to write");
    hasher.finish()
}

/// Each byte's decimal text, left-aligned in three bytes (the rest
/// zero), and its length: a reply's byte list is hashed as that text, a
/// lookup per byte instead of a division per digit.
const BYTE_DECIMAL: [([u8; 3], u8); 256] = {
    let mut table = [([0u8; 3], 0u8); 256];
    let mut byte = 0;
    while byte < table.len() {
        let (hundreds, tens, ones) = ((byte / 100) as u8, (byte / 10 % 10) as u8, (byte % 10) as u8);
        table[byte] = if byte >= 100 {
            ([b'0' + hundreds, b'0' + tens, b'0' + ones], 3)
        } else if byte >= 10 {
            ([b'0' + tens, b'0' + ones, 0], 2)
        } else {
            ([b'0' + ones, 0, 0], 1)
        };
        byte += 1;
    }
    table
};

/// [`hash_bytes`]'s fold over text that arrives in pieces: whole 8-byte
/// words are folded as they fill, the zero-padded tail and the length at
/// the end, so piece boundaries never show in the hash. A target whose
/// replies are hashed on every operation writes their `Debug` text into
/// one by hand, which `hash_debug` of the same value must equal.
pub struct StreamHasher {
    hash: u64,
    /// The word being filled: `word[..word_len_bytes]` is pending.
    word: [u8; 8],
    word_len_bytes: usize,
    total_len_bytes: u64,
}

impl Default for StreamHasher {
    fn default() -> Self {
        StreamHasher::new()
    }
}

impl StreamHasher {
    /// A hasher that has seen no text: [`StreamHasher::finish`] now is
    /// `hash_bytes(b"")`.
    pub fn new() -> StreamHasher {
        StreamHasher { hash: FNV_OFFSET, word: [0; 8], word_len_bytes: 0, total_len_bytes: 0 }
    }

    /// The hash of all the text put so far, as [`hash_bytes`] of it whole.
    pub fn finish(mut self) -> u64 {
        debug_assert!(self.word_len_bytes < 8, "a full word is folded as soon as it fills");
        if self.word_len_bytes > 0 {
            self.word[self.word_len_bytes..].fill(0);
            self.hash = fold_word(self.hash, u64::from_le_bytes(self.word));
        }
        fold_word(self.hash, self.total_len_bytes)
    }
}

impl StreamHasher {
    /// `Debug` of a byte slice: `[1, 2, 3]`. Staged in a buffer and
    /// hashed a run at a time: a `put` per piece was most of the cost of a
    /// long value's reply (four text bytes per value byte).
    pub fn put_byte_list(&mut self, bytes: &[u8]) {
        /// The longest a byte's text gets: `, 255`.
        const MAX_ITEM_BYTES: usize = 5;
        let mut staged = [0u8; 256];
        staged[0] = b'[';
        let mut len = 1;
        for (i, &byte) in bytes.iter().enumerate() {
            if len > staged.len() - MAX_ITEM_BYTES - 1 {
                self.put(&staged[..len]);
                len = 0;
            }
            // The separator is always written, and kept after the first
            // byte only: one copy instead of a branch per byte.
            staged[len..len + 2].copy_from_slice(b", ");
            len += if i > 0 { 2 } else { 0 };
            let (text, text_bytes) = BYTE_DECIMAL[usize::from(byte)];
            staged[len..len + 3].copy_from_slice(&text);
            len += usize::from(text_bytes);
        }
        // The loop leaves room for this one byte.
        staged[len] = b']';
        self.put(&staged[..len + 1]);
    }

    /// `magnitude` in decimal, after a `-` if `negative`.
    pub fn put_decimal(&mut self, mut magnitude: u64, negative: bool) {
        // u64::MAX has 20 digits; the sign makes 21.
        let mut digits = [0u8; 21];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (magnitude % 10) as u8;
            magnitude /= 10;
            if magnitude == 0 {
                break;
            }
        }
        if negative {
            start -= 1;
            digits[start] = b'-';
        }
        self.put(&digits[start..]);
    }

    /// `bytes`, as the next piece of the text.
    pub fn put(&mut self, mut bytes: &[u8]) {
        self.total_len_bytes += bytes.len() as u64;
        // Top up a started word; then whole words straight from `bytes`;
        // the rest starts the next word.
        if self.word_len_bytes > 0 {
            let take = (8 - self.word_len_bytes).min(bytes.len());
            self.word[self.word_len_bytes..self.word_len_bytes + take].copy_from_slice(&bytes[..take]);
            self.word_len_bytes += take;
            bytes = &bytes[take..];
            if self.word_len_bytes < 8 {
                return;
            }
            self.hash = fold_word(self.hash, u64::from_le_bytes(self.word));
            self.word_len_bytes = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for word in words.by_ref() {
            self.hash = fold_word(self.hash, u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
        let rest = words.remainder();
        self.word[..rest.len()].copy_from_slice(rest);
        self.word_len_bytes = rest.len();
    }
}

impl fmt::Write for StreamHasher {
    fn write_str(&mut self, piece: &str) -> fmt::Result {
        self.put(piece.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_debug_is_hash_bytes_of_the_debug_text() {
        let values: Vec<Vec<Vec<u8>>> = vec![
            vec![],
            vec![vec![]],
            vec![b"a".to_vec()],
            vec![b"seven77".to_vec(), b"eight888".to_vec()],
            vec![(0..=255).collect(), vec![7; 33]],
        ];
        for value in &values {
            assert_eq!(hash_debug(value), hash_bytes(format!("{value:?}").as_bytes()), "{value:?}");
        }
        for text in ["", "1234567", "12345678", "123456789", "a string of some length, split in many pieces"] {
            assert_eq!(hash_debug(&text), hash_bytes(format!("{text:?}").as_bytes()));
        }
    }
}
