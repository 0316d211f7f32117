//! `--check-determinism` sees bytes, not only the trace: an engine that
//! writes what it left in memory (JAMMDB.md finding 4: uninitialised
//! padding) writes the same lengths at the same places, so two runs have
//! the same trace hash, and only the written bytes' hash tells them apart.
//! Proven both ways on the kit's tiny test engine (`test_engine.rs`).

use super::test_engine::Buffered;
use super::{Kit, KitSettings};
use simulator::failure::Check;
use simulator::seam::{run_checked, run_seed};

#[test]
fn bytes_that_differ_run_to_run_fail_determinism_though_the_trace_is_the_same() {
    let honest = Kit::new(Buffered::HONEST, KitSettings::default());
    let padded = Kit::new(Buffered { pads_from_memory: true, ..Buffered::HONEST }, KitSettings::default());
    for seed in 0..5 {
        let checked = run_checked(seed, &honest, true);
        assert!(checked.failure.is_none(), "seed {seed}: {:?}", checked.failure);
        let (first, again) = (run_seed(&padded, seed, false), run_seed(&padded, seed, false));
        assert!(first.failure.is_none(), "seed {seed}: the padded engine is correct: {:?}", first.failure);
        assert_eq!(first.trace_hash, again.trace_hash, "seed {seed}: same places, same lengths");
        assert_ne!(first.written_hash, again.written_hash, "seed {seed}: other bytes");
        let failure = run_checked(seed, &padded, true).failure.expect("the padded engine is not deterministic");
        assert_eq!(failure.check, Check::Determinism);
        assert!(failure.detail.contains("written bytes' hash"), "{}", failure.detail);
    }
}
