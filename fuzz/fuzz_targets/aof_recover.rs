//! `cargo fuzz run aof_recover`: see `testkit::fuzzing::aof_recover` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| testkit::fuzzing::aof_recover(data));
