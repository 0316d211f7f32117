//! A `SET` over the log's frame limit, held in an operation list as its
//! recipe ([`Op::OversizedSet`]: a key, a length, one repeated byte) and
//! made into a command only while it runs.
//!
//! Why not hold the command: its value is 64 MiB. Made when drawn, every
//! such write was a fresh allocation, which the allocator serves from a
//! fresh mapping: ~16,400 minor page faults and a 64 MiB fill per write,
//! paid again by each one, and unmapped when the list is dropped. In a
//! sweep of 2000 seeds that was 393k of 403k page faults, ~0.9 s of system
//! time and 66 MB of peak RSS, and in `sim bench` most of generation's time
//! (issue 51). Made while it runs, from one buffer the process keeps and
//! refills only when the length or byte changes, the mapping is faulted in
//! once, and generating one costs what drawing a key costs. One buffer for
//! the process, not one a thread: a sweep of N jobs keeps 64 MiB, not N
//! times that (two jobs running one at the same moment make a second,
//! dropped after, as before).
//!
//! The generator draws the value as zeros ([`DRAWN_BYTE`]), and a zero
//! value is not filled at all: it is a fresh zeroed allocation, which the
//! allocator serves as an untouched mapping. The store refuses the write
//! from its length alone, so no page of it is ever touched: no fill, no
//! faults, and no 64 MiB of resident memory (the sweep's peak RSS was
//! ~77 MB against ~11 MB before oversized writes were drawn). The value's
//! bytes decide nothing (the store must refuse whatever they are); a line
//! saved with another byte (`@repeat:<count>:x`) is still made that way.

use std::sync::Mutex;

use engine::store::Command;

/// The byte the generator draws an oversized value of: zero, which costs
/// no memory (module doc).
pub const DRAWN_BYTE: u8 = 0;

/// The value of the last oversized `SET` run of a nonzero byte, and its byte: every byte of
/// the buffer is that byte (only [`with_oversized_command`] fills it, and
/// lends it out read-only). Empty while a run holds it.
static SPARE: Mutex<(u8, Vec<u8>)> = Mutex::new((0, Vec::new()));

fn spare() -> std::sync::MutexGuard<'static, (u8, Vec<u8>)> {
    // The buffer is only moved in or out under the lock: a panic elsewhere
    // leaves it whole or empty, either of which is a spare.
    SPARE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The bytes of the log record of `SET key value`, with a `value_bytes`
/// value: the argument count, then each argument's length and bytes.
pub fn set_record_bytes(key_bytes: usize, value_bytes: usize) -> u64 {
    (4 + (4 + 3) + (4 + key_bytes) + (4 + value_bytes)) as u64
}

/// Whether `SET key value` of these lengths is over the frame limit the
/// engine declares (`engine::frame::MAX_FRAME_PAYLOAD_BYTES`): the store
/// must refuse it and change nothing.
pub fn is_oversized(key_bytes: usize, value_bytes: usize) -> bool {
    set_record_bytes(key_bytes, value_bytes) > engine::frame::MAX_FRAME_PAYLOAD_BYTES as u64
}

/// The length of the value that makes `SET key value`'s record one byte
/// over the frame limit.
pub fn one_over_value_bytes(key_bytes: usize) -> usize {
    let value_bytes = engine::frame::MAX_FRAME_PAYLOAD_BYTES + 1 - set_record_bytes(key_bytes, 0) as usize;
    debug_assert!(is_oversized(key_bytes, value_bytes) && !is_oversized(key_bytes, value_bytes - 1));
    value_bytes
}

/// Call `run` with the command `SET key <byte repeated value_bytes times>`:
/// for a zero byte a fresh zeroed value, else the kept buffer (refilled
/// only if the length or the byte differs from the last one's; a new one
/// if another run holds it).
pub fn with_oversized_command<R>(key: &[u8], value_bytes: usize, byte: u8, run: impl FnOnce(&Command) -> R) -> R {
    if byte == 0 {
        // Zeroed, never written: the mapping's pages stay untouched.
        return run(&Command::Set { key: key.to_vec(), value: vec![0u8; value_bytes] });
    }
    let (kept_byte, mut value) = std::mem::take(&mut *spare());
    if kept_byte != byte || value.len() != value_bytes {
        value.clear();
        value.resize(value_bytes, byte);
    }
    debug_assert!(value.first() == Some(&byte) && value.last() == Some(&byte));
    let command = Command::Set { key: key.to_vec(), value };
    let result = run(&command);
    let Command::Set { value, .. } = command else { unreachable!("made as a SET above") };
    let mut kept = spare();
    if kept.1.is_empty() {
        *kept = (byte, value);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_the_set_it_stands_for_each_time() {
        let value_bytes = one_over_value_bytes(2);
        assert!(is_oversized(2, value_bytes) && !is_oversized(2, value_bytes - 1));
        for (byte, key) in [(b'x', &b"k0"[..]), (b'x', b"k1"), (0, b"k1"), (b'y', b"k0"), (0, b"k0")] {
            with_oversized_command(key, value_bytes, byte, |command| {
                let Command::Set { key: got_key, value } = command else { panic!("{command:?}") };
                assert_eq!((got_key.as_slice(), value.len()), (key, value_bytes));
                assert!(value.iter().all(|b| *b == byte));
            });
        }
        with_oversized_command(b"k0", 100, b'y', |command| {
            assert_eq!(command, &Command::Set { key: b"k0".to_vec(), value: vec![b'y'; 100] });
        });
    }
}
