//! `--report`: the picture of a run must not change the run. A trace that
//! keeps every event (and the side record a report draws from) must hash
//! exactly as the sweep's trace does, for every target; and the page
//! drawn from it must hold what it promises (the crash marker, a lane per
//! file, the diff of a failure), with every text escaped.
//!
//! The browser half — the page rendered by headless Chromium, no script
//! error, the same elements present — is `scripts/report-check.sh`
//! (`make report-check`, run by `.ci/run`).

use engine::aof::FsyncPolicy;
use sim::config::Overrides;
use sim::kit::KitSettings;
use sim::planted::skip_fsync;
use sim::report::Report;
use sim::seam::{run_seed, Target};
use sim::systems::segsim::SegsimTarget;
use sim::systems::{redb_target, sqlite_target};

/// Each seed's trace hash with and without the whole trace kept.
fn same_hash_with_and_without_recording<T: Target>(target: &T, seeds: std::ops::Range<u64>) -> u64 {
    let mut crashes = 0;
    for seed in seeds {
        let plain = run_seed(target, seed, false);
        let kept = run_seed(target, seed, true);
        assert_eq!(plain.trace_hash, kept.trace_hash, "{} seed {seed}: recording changed the trace", target.name());
        assert_eq!(plain.failure.map(|f| f.check), kept.failure.as_ref().map(|f| f.check), "seed {seed}");
        let trace = kept.trace.expect("kept");
        assert!(!trace.detail().io.is_empty(), "{} seed {seed}: no I/O detail recorded", target.name());
        assert_eq!(
            trace.detail().crashes.len() as u64,
            kept.counters.crashes,
            "{} seed {seed}: one picture per crash",
            target.name()
        );
        crashes += kept.counters.crashes;
    }
    crashes
}

#[test]
fn recording_for_a_report_changes_no_trace_hash_segsim() {
    let crashes = same_hash_with_and_without_recording(&SegsimTarget::default(), 0..12);
    assert!(crashes > 0, "the seeds crashed nowhere: the pictures went untested");
}

#[test]
fn recording_for_a_report_changes_no_trace_hash_kit_targets() {
    assert!(same_hash_with_and_without_recording(&redb_target(KitSettings::default()), 0..4) > 0);
    same_hash_with_and_without_recording(&sqlite_target(KitSettings::default()), 0..2);
    // Seed 22 cuts a file below a write it made (set_len after write):
    // its picture once panicked, and so changed the run.
    same_hash_with_and_without_recording(&sqlite_target(KitSettings::default()), 22..23);
}

/// A failing run's page: the planted fsync that does nothing.
fn failing_page() -> (String, sim::outcome::SeedOutcome) {
    let always = SegsimTarget::new(Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() });
    let target = SegsimTarget { wrap: skip_fsync, ..always };
    let seed = (0..40).find(|seed| run_seed(&target, *seed, false).failure.is_some()).expect("skip_fsync caught");
    let ops = target.generate(seed);
    let outcome = target.run(seed, &ops, true);
    let label = |i: u64| ops.get(i as usize).map(|op| op.to_string());
    (Report::of_run(target.name(), &outcome, &label).to_html(), outcome)
}

#[test]
fn a_failure_page_holds_the_crash_the_lanes_the_diff_and_the_repro() {
    let (html, outcome) = failing_page();
    let failure = outcome.failure.expect("it failed");
    assert!(html.contains(r#"class="crash-marker""#), "no crash marker");
    assert!(html.contains(r#"class="lane-label file""#), "no file lane");
    assert!(html.contains("appendonly.aof"), "the log has no lane");
    assert!(html.contains(r#"<pre id="diff">"#), "no diff");
    // The diff in the text report's words (escaped as HTML).
    let first_line = failure.detail.lines().next().expect("a detail");
    assert!(html.contains(&sim::report::esc(first_line)), "the diff's first line is missing: {first_line}");
    assert!(html.contains(&sim::report::esc(&failure.repro)), "no repro");
    assert!(html.contains("What the disk kept") || html.contains("what the disk kept"), "no crash table");
    // Self-contained: nothing fetched.
    for external in ["http://", "https://", "src=", "@import", "url("] {
        let outside_svg_ns = html.replace("http://www.w3.org/2000/svg", "");
        assert!(!outside_svg_ns.contains(external), "the page fetches something: {external}");
    }
}

#[test]
fn a_long_run_opens_on_the_window_around_its_failure() {
    // Seed 42's long run, with a failure placed at its operation 200
    // (the planted bugs here all fail early).
    let target = SegsimTarget::default();
    let ops = target.generate(42);
    let outcome = target.run(42, &ops, true);
    let label = |i: u64| ops.get(i as usize).map(|op| op.to_string());
    let mut report = Report::of_run(target.name(), &outcome, &label);
    assert!(report.failure.is_none() && report.story.slots > 1000, "{} slots", report.story.slots);
    report.failure = Some(sim::report::Verdict {
        seed: 42,
        check: "durability".into(),
        op_index: 200,
        op_line: label(200),
        detail: "key \"k\": expected \"v\", got (absent)".into(),
        recent: Vec::new(),
        repro: "sim --seed 42".into(),
    });
    let window = report.window();
    let span = report.story.ops.iter().find(|op| op.index == 200).expect("op 200 is on the axis");
    assert!(window.start <= span.start && span.end <= window.end, "{window:?} misses the failing op {span:?}");
    assert!(window.start > 0 && window.end < report.story.slots / 2, "{window:?} of {}", report.story.slots);
    let html = report.to_html();
    assert!(html.contains(r#"id="view-window""#) && html.contains(r#"id="view-whole""#), "both views are drawn");
}
