//! The README's example output cannot drift: its seed-42 block is the
//! text report of a fresh run of seed 42, timings aside.
//!
//! When the simulator changes on purpose (a new draw, a new counter), the
//! block moves with it: rewrite it from a fresh run with
//! `make readme-example` (`SIM_README_UPDATE=1 cargo test -p sim --test
//! readme`), read the diff, and commit it.

use std::path::PathBuf;

use sim::seam::{run_seed, Target};
use sim::summary::Summary;
use sim::systems::segsim::SegsimTarget;

/// The command the README shows, and the seed it runs.
const COMMAND: &str = "cargo run --release -p sim -- --seed 42";
const SEED: u64 = 42;

fn readme_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md")
}

/// Seed 42's text report, as `sim --seed 42` prints it (timed here).
fn fresh_report() -> String {
    let started = std::time::Instant::now();
    let target = SegsimTarget::default();
    // As `sim` fills it in (`cli/run.rs`): the verdict names its profile.
    let mut summary = Summary { fs: Some(target.fs_profile().name.to_string()), ..Summary::default() };
    summary.add(&run_seed(&target, SEED, false));
    summary.elapsed_sec = started.elapsed().as_secs_f64();
    summary.to_text()
}

/// `text` with the wall-clock figures of its first line (`in 0.020 s
/// (20050 ops/s)`) blanked: they are the machine's, not the run's.
fn without_timings(text: &str) -> String {
    text.lines()
        .map(|line| match (line.find(" ops in "), line.find(" ops/s)")) {
            (Some(start), Some(end)) if start < end => {
                format!("{} ops in <time>{}", &line[..start], &line[end + " ops/s)".len()..])
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ` ops in ... ops/s)` figure of `line`, if any, as a byte range.
fn timing(line: &str) -> Option<std::ops::Range<usize>> {
    let start = line.find(" ops in ")?;
    let end = line.find(" ops/s)")? + " ops/s)".len();
    (start < end).then_some(start..end)
}

/// `fresh` with the timing figure of `old`'s first line in its first line.
fn with_timing_of(fresh: &str, old: &str) -> String {
    let (first, rest) = fresh.split_once('\n').unwrap_or((fresh, ""));
    let old_first = old.lines().next().unwrap_or("");
    match (timing(first), timing(old_first)) {
        (Some(new), Some(was)) => format!("{}{}{}\n{rest}", &first[..new.start], &old_first[was], &first[new.end..]),
        _ => fresh.to_string(),
    }
}

/// The byte range of the `text` block that follows the command's `sh`
/// block in `readme`, its fences excluded.
fn example_block(readme: &str) -> std::ops::Range<usize> {
    let command = readme.find(&format!("```sh\n{COMMAND}\n```")).expect("the README shows the seed-42 command");
    let open = "```text\n";
    let start = command + readme[command..].find(open).expect("an output block after the command") + open.len();
    let end = start + readme[start..].find("```").expect("the output block ends");
    start..end
}

#[test]
fn the_readme_seed_42_example_is_a_fresh_run() {
    let readme = std::fs::read_to_string(readme_path()).expect("README.md");
    let block = example_block(&readme);
    let fresh = fresh_report();
    if std::env::var_os("SIM_README_UPDATE").is_some() {
        // The README keeps its release-build timing: only the run's figures move.
        let fresh = with_timing_of(&fresh, &readme[block.clone()]);
        let updated = format!("{}{}{}", &readme[..block.start], fresh, &readme[block.end..]);
        std::fs::write(readme_path(), updated).expect("README.md written");
        eprintln!("README.md: the seed-42 example rewritten from a fresh run; review and commit the diff");
        return;
    }
    assert_eq!(
        without_timings(&readme[block.clone()]),
        without_timings(&fresh),
        "README.md's seed-42 example is stale: run `make readme-example` (SIM_README_UPDATE=1 cargo test -p sim \
         --test readme), review the diff and commit it"
    );
}

#[test]
fn a_changed_figure_is_seen_and_timings_are_not() {
    let fresh = fresh_report();
    let other_machine = fresh.replacen(" s (", "9 s (1", 1);
    assert_ne!(fresh, other_machine, "the timing was edited");
    assert_eq!(without_timings(&fresh), without_timings(&other_machine));
    let drifted = fresh.replacen("trace hash: ", "trace hash: 0", 1);
    assert_ne!(without_timings(&fresh), without_timings(&drifted), "a drifted hash must fail the check");
}
