//! `cargo fuzz run seg_read`: see `testkit::fuzzing::seg_read` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzzing::seg_read(data));
