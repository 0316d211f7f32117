//! `cargo fuzz run manifest_open`: see `engine::fuzzing::manifest_open` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| engine::fuzzing::manifest_open(data));
