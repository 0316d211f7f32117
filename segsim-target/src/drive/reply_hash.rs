//! The hash of a segsim store reply, written by hand: the driver hashes
//! every reply, and the formatting machinery (a virtual call per byte of a
//! value) cost more than the hashing. The trace folds a reply's hash as
//! the hash of its `Debug` text (`simulator::trace::hash_debug`); the
//! tests hold [`hash_reply`] to exactly that.

use engine::store::Reply;

use simulator::trace::StreamHasher;

/// `hash_debug(reply)`, bit for bit, writing the derived `Debug` text of
/// [`Reply`] by hand: the driver hashes every reply, and the formatting
/// machinery (a virtual call per byte of a value) cost more than the
/// hashing. `hash_reply_matches_the_debug_text` holds it to `hash_debug`.
pub fn hash_reply(reply: &Reply) -> u64 {
    let mut hasher = StreamHasher::new();
    match reply {
        Reply::Ok => hasher.put(b"Ok"),
        Reply::Nil => hasher.put(b"Nil"),
        Reply::Int(n) => {
            hasher.put(b"Int(");
            hasher.put_decimal(n.unsigned_abs(), *n < 0);
            hasher.put(b")");
        }
        Reply::Bulk(bytes) => {
            hasher.put(b"Bulk(");
            hasher.put_byte_list(bytes);
            hasher.put(b")");
        }
        Reply::Pairs(pairs) => {
            hasher.put(b"Pairs([");
            for (i, (field, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    hasher.put(b", ");
                }
                hasher.put(b"(");
                hasher.put_byte_list(field);
                hasher.put(b", ");
                hasher.put_byte_list(value);
                hasher.put(b")");
            }
            hasher.put(b"])");
        }
        Reply::Array(values) => {
            hasher.put(b"Array([");
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    hasher.put(b", ");
                }
                match value {
                    None => hasher.put(b"None"),
                    Some(bytes) => {
                        hasher.put(b"Some(");
                        hasher.put_byte_list(bytes);
                        hasher.put(b")");
                    }
                }
            }
            hasher.put(b"])");
        }
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator::trace::{hash_bytes, hash_debug};

    #[test]
    fn hash_debug_of_a_reply_is_hash_bytes_of_its_debug_text() {
        let replies = [
            Reply::Ok,
            Reply::Nil,
            Reply::Int(-42),
            Reply::Bulk(b"value".to_vec()),
            Reply::Pairs(vec![(b"f".to_vec(), b"v".to_vec()), (b"field2".to_vec(), vec![0, 255])]),
        ];
        for reply in &replies {
            assert_eq!(hash_debug(reply), hash_bytes(format!("{reply:?}").as_bytes()), "{reply:?}");
        }
    }

    #[test]
    fn hash_reply_matches_the_debug_text() {
        let mut replies = vec![
            Reply::Ok,
            Reply::Nil,
            Reply::Int(0),
            Reply::Int(i64::MIN),
            Reply::Int(i64::MAX),
            Reply::Bulk(vec![]),
            Reply::Pairs(vec![]),
            Reply::Array(vec![]),
            Reply::Array(vec![None]),
        ];
        // Every byte value and lengths around the 8-byte word, in both
        // byte-carrying variants.
        let mut seed = 0x5eed_u64;
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    (seed >> 56) as u8
                })
                .collect();
            replies.push(Reply::Int(seed as i64 >> (len % 64)));
            replies.push(Reply::Bulk(bytes.clone()));
            let pairs = (0..len % 5).map(|i| (bytes[..i].to_vec(), bytes[i..].to_vec())).collect();
            replies.push(Reply::Pairs(pairs));
            let values = (0..len % 4).map(|i| (i % 2 == 0).then(|| bytes[i..].to_vec())).collect();
            replies.push(Reply::Array(values));
        }
        replies.push(Reply::Bulk((0..=255).collect()));
        // Long enough to be hashed in many staged runs.
        replies.push(Reply::Bulk((0..5_000u32).map(|i| (i * 7 % 256) as u8).collect()));
        for reply in &replies {
            assert_eq!(hash_reply(reply), hash_debug(reply), "{reply:?}");
        }
    }
}
