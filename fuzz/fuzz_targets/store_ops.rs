//! `cargo fuzz run store_ops`: see `sim::fuzzing::store_ops` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sim::fuzzing::store_ops(data));
