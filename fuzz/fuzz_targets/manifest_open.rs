//! `cargo fuzz run manifest_open`: see `testkit::fuzzing::manifest_open` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzzing::manifest_open(data));
