//! The summary of many seeds (`simulator::summary`), summed over real
//! segsim runs: every reopen has one cause, shards merge to the whole
//! sweep, every check and the profile survive JSON.

use crate::config::Overrides;
use crate::run::run_seed;
use serde_json::json;

use simulator::disk::FsProfile;
use simulator::failure::{Check, Failure};
use simulator::outcome::SeedOutcome;
use simulator::summary::*;

#[test]
fn every_reopen_has_one_cause() {
    let mut causes = [0u64; 3];
    for seed in 0..30 {
        let o = run_seed(seed, Overrides::default(), false);
        assert_eq!(
            o.counters.restarts,
            o.counters.crashes + o.counters.kills + o.counters.clean_restarts + o.counters.error_reopens,
            "seed {seed}: {o:?}"
        );
        causes[0] += o.counters.kills;
        causes[1] += o.counters.clean_restarts;
        causes[2] += o.counters.error_reopens;
    }
    assert!(causes.iter().all(|n| *n > 0), "every cause is met in 30 seeds: {causes:?}");
    let mut summary = Summary::default();
    summary.add(&run_seed(1, Overrides::default(), false));
    let back = Summary::from_json(&summary.to_json()).expect("reads back");
    assert_eq!(
        (back.counters.kills, back.counters.clean_restarts, back.counters.error_reopens),
        (summary.counters.kills, summary.counters.clean_restarts, summary.counters.error_reopens)
    );
    assert!(summary.to_text().contains(&format!("{} process kills", summary.counters.kills)));
}

#[test]
fn shards_merge_to_the_whole_sweep() {
    let outcomes: Vec<SeedOutcome> = (0..12).map(|seed| run_seed(seed, Overrides::default(), false)).collect();
    let mut whole = Summary::default();
    let mut shards = vec![Summary::default(), Summary::default(), Summary::default()];
    for outcome in &outcomes {
        whole.add(outcome);
        shards[(outcome.seed % 3) as usize].add(outcome);
    }
    let mut merged = Summary::default();
    for shard in &shards {
        // Through JSON, as `sim merge` reads shard files.
        merged.merge(&Summary::from_json(&shard.to_json()).unwrap());
    }
    whole.trace_hash = None;
    // A summary that names no profile was written under posix.
    whole.fs = Some(FsProfile::POSIX.name.to_string());
    assert_eq!(merged.to_json(), whole.to_json());
}

/// A shard that found a failure of any check merges: `sim merge` knows
/// every check the simulator can report.
#[test]
fn a_summary_holding_every_check_merges_back() {
    let mut shard = Summary::default();
    for (seed, check) in Check::ALL.into_iter().enumerate() {
        let failure = Failure {
            seed: seed as u64,
            op_index: 7,
            check,
            detail: format!("{check} failed"),
            recent: vec!["op 7 set".to_string()],
            repro: format!("sim --seed {seed}"),
            drew: (seed % 2 == 0).then(|| format!("journal_mode=wal; clients {seed}")),
        };
        shard.add(&SeedOutcome { seed: seed as u64, failure: Some(failure), ..SeedOutcome::default() });
    }
    let mut merged = Summary::default();
    merged.merge(&Summary::from_json(&shard.to_json()).unwrap());
    let checks: Vec<Check> = merged.failures.iter().map(|f| f.check).collect();
    assert_eq!(checks, Check::ALL);
    assert_eq!(merged.to_json()["failures"], shard.to_json()["failures"]);
}

#[test]
fn the_profile_is_said_and_summaries_of_different_profiles_do_not_merge() {
    let mut ext4 = Summary { seeds: 1, fs: Some("ext4".to_string()), ..Summary::default() };
    assert!(ext4.to_text().contains("file-system profile: ext4 (data=ordered, auto_da_alloc)\n"), "{}", ext4.to_text());
    let back = Summary::from_json(&ext4.to_json()).unwrap();
    assert_eq!(back.fs.as_deref(), Some("ext4"));
    let mut old = ext4.to_json();
    old.as_object_mut().unwrap().remove("fs");
    let posix = Summary::from_json(&old).unwrap();
    assert_eq!(posix.fs.as_deref(), Some("posix"), "a summary from before profiles was posix");
    let refused = ext4.merge_same_fs(&posix).unwrap_err();
    assert!(refused.contains("\"posix\"") && refused.contains("\"ext4\""), "{refused}");
    assert_eq!(ext4.seeds, 1, "a refused merge adds nothing");
    ext4.merge_same_fs(&back).unwrap();
    assert_eq!((ext4.seeds, ext4.fs.as_deref()), (2, Some("ext4")));
}

#[test]
fn from_json_names_what_is_missing() {
    let err = Summary::from_json(&json!({"seeds": 1})).unwrap_err();
    assert!(err.contains("`ops`"), "{err}");
}
