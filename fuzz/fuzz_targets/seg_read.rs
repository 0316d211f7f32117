//! `cargo fuzz run seg_read`: see `engine::fuzzing::seg_read` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| engine::fuzzing::seg_read(data));
