//! The kit's optional capabilities against the spec (`adapter.rs`'s
//! `check_capabilities`): a declared maintenance the adapter has runs, and
//! a spec and an adapter that disagree are refused before any seed runs.

use super::test_engine::Buffered;
use super::workload::KitOp;
use super::{Kit, KitSettings};
use simulator::seam::{assert_seeds_pass_and_replay, Target};

#[test]
fn a_declared_maintenance_the_adapter_has_is_drawn_and_passes() {
    let kit = Kit::new(Buffered { declares_flush: true, flushes: true, ..Buffered::HONEST }, KitSettings::default());
    let flushes: usize =
        (0..20).map(|seed| kit.generate(seed).iter().filter(|p| matches!(p.op, KitOp::Maintain(_))).count()).sum();
    assert!(flushes > 0, "twenty seeds draw no flush");
    assert_seeds_pass_and_replay(&kit, 0..20);
}

#[test]
#[should_panic(expected = "the spec's maintenance and Adapter::maintenance disagree")]
fn a_declared_maintenance_the_adapter_lacks_is_refused() {
    Kit::new(Buffered { declares_flush: true, ..Buffered::HONEST }, KitSettings::default());
}

#[test]
#[should_panic(expected = "the spec's maintenance and Adapter::maintenance disagree")]
fn a_maintenance_the_spec_does_not_declare_is_refused() {
    Kit::new(Buffered { flushes: true, ..Buffered::HONEST }, KitSettings::default());
}

#[test]
#[should_panic(expected = "the spec's readers and Adapter::readers disagree")]
fn declared_readers_the_adapter_lacks_are_refused() {
    Kit::new(Buffered { declares_readers: true, ..Buffered::HONEST }, KitSettings::default());
}
