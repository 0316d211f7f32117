//! The harness must stay able to fail. With the `canaries` feature, each
//! planted engine bug is hunted from seed 0 exactly as `sim canaries`
//! hunts it, and must be caught at exactly the seed the table in
//! CANARIES.md gives (a hunt is deterministic); the catching seed must
//! pass with no canary, so the catch is the bug's and not the harness's.
//! A change to the workload, the fault model or the checker that weakens
//! them shows up here as a canary that survives its cap (about four times
//! its seeds); one that moves them, as a table to write down again.
//!
//! Without the feature, the command line must refuse canaries with a hint
//! on how to build them.
//!
//! `cargo test --release -p sim --features canaries --test canaries` (or
//! `make test-canaries`).

use std::process::Command;

fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sim"))
}

#[cfg(not(feature = "canaries"))]
#[test]
fn without_the_feature_canaries_are_refused_with_a_build_hint() {
    for args in [&["canaries"][..], &["--seed", "1", "--canary", "seg-no-fsync"][..]] {
        let output = sim().args(args).output().expect("run sim");
        assert_eq!(output.status.code(), Some(2), "sim {args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--features canaries"), "sim {args:?}: {stderr}");
    }
}

#[cfg(feature = "canaries")]
mod planted {
    use super::sim;
    use sim::canary::Canary;
    use sim::config::Overrides;
    use sim::run::run_seed;

    /// Seeds each hunt may take before the test calls the canary a
    /// survivor: four times the seeds it took for the CANARIES.md table,
    /// and never fewer than 16 (a cap is raised when a rerun of the table
    /// needs it, never lowered: a later change of the draws may move the
    /// catching seed back).
    const CAPS: [(&str, u64); 38] = [
        ("seg-no-fsync", 16),
        ("seal-no-dir-sync", 16),
        ("frame-before-register", 16),
        ("ghost-stubs", 40),
        ("append-after-torn-tail", 44),
        ("replay-past-invalid", 16),
        ("fsync-retry", 16),
        ("rewrite-no-fsync", 16),
        ("rewrite-no-dir-sync", 16),
        ("promote-not-dead", 16),
        ("seg-no-checksum", 4372),
        ("rewrite-drops-ttl", 16),
        ("everysec-no-fsync", 44),
        ("stitch-absent-only", 16),
        ("sweep-named-segment", 20),
        ("flushall-retire-early", 44),
        ("manifest-tail-kept", 3096),
        ("single-read-recovery", 16),
        ("ack-failed-append", 36),
        ("read-error-empty-log", 44),
        ("cut-vouched-damage", 44),
        ("missing-log-is-empty", 296),
        ("sweep-after-damage", 524),
        ("rewrite-drops-hwm", 944),
        ("recovery-no-fsync", 48),
        ("seq-from-live-set", 16),
        ("cut-no-fsync", 33280),
        ("compact-rename-before-fsync", 5612),
        ("hlen-stub-weight", 16),
        ("dir-sync-error-ignored", 44),
        ("rename-error-ignored", 296),
        ("recovery-no-dir-sync", 16),
        ("read-only-cuts-tail", 48),
        ("quarantine-no-dir-sync", 20),
        ("aof-place-ignored", 17672),
        ("unfinished-rewrite-read", 740),
        ("expire-at-now-kept", 16),
        ("manifest-place-ignored", 62780),
    ];

    /// The seeds CANARIES.md's table says the hunt for `name` ran, the
    /// catching one included (its third column).
    fn table_seeds(name: &str) -> u64 {
        let row = format!("| `{name}` | yes | ");
        let table = include_str!("../../CANARIES.md");
        let line = table.lines().find(|line| line.starts_with(&row));
        let seeds = line.and_then(|line| line[row.len()..].split(' ').next()).and_then(|seeds| seeds.parse().ok());
        seeds.unwrap_or_else(|| panic!("CANARIES.md's table has no row `{row}<seeds> |`"))
    }

    /// A hunt is deterministic, so it must catch `name` at exactly the
    /// seed of CANARIES.md's table: a change that moves the seeds fails
    /// here until the table is run again and written down (`make
    /// canaries`), and the table cannot drift from what the harness does.
    fn caught_within_its_cap(name: &str) {
        let canary = Canary::parse(name).unwrap_or_else(|| panic!("no canary {name}"));
        let cap = CAPS.iter().find(|(n, _)| *n == name).map(|(_, cap)| *cap).expect("every canary has a cap");
        let planted = Overrides { canary: Some(canary), ..Overrides::default() };
        for seed in 0..cap {
            let Some(failure) = run_seed(seed, planted, false).failure else { continue };
            let clean = run_seed(seed, Overrides::default(), false);
            assert!(clean.failure.is_none(), "{name}: seed {seed} fails without the canary too: {:?}", clean.failure);
            assert!(failure.repro.contains(&format!("--canary {name}")), "{}", failure.repro);
            assert!(failure.repro.contains("--features canaries"), "{}", failure.repro);
            eprintln!("{name}: caught by seed {seed} (check '{}')", failure.check);
            let seeds = table_seeds(name);
            assert_eq!(
                seed + 1,
                seeds,
                "{name}: caught after {} seeds, CANARIES.md's table says {seeds}: the seeds moved; run `make \
                 canaries`, write the table down again and say why they moved",
                seed + 1
            );
            return;
        }
        panic!("canary {name} survived {cap} seeds: the harness has lost the power to catch it");
    }

    #[test]
    fn every_canary_has_a_cap_and_a_test() {
        let names: Vec<&str> = CAPS.iter().map(|(name, _)| *name).collect();
        let all: Vec<&str> = Canary::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, all, "CAPS lists every canary, in table order");
        let source = include_str!("canaries.rs");
        for name in all {
            let test = format!("fn {}()", name.replace('-', "_"));
            assert!(source.contains(&test), "no test `{test}` for canary {name}");
        }
    }

    /// README.md counts the canaries; the count must be this build's.
    #[test]
    fn the_readme_counts_every_canary() {
        let claim = format!("The engine carries {} planted bugs", Canary::ALL.len());
        assert!(include_str!("../../README.md").contains(&claim), "README.md must say `{claim}`");
    }

    #[test]
    fn an_unknown_canary_is_refused_with_the_list() {
        let output = sim().args(["--seed", "1", "--canary", "no-such-bug"]).output().expect("run sim");
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        for canary in Canary::ALL {
            assert!(stderr.contains(canary.name()), "{stderr}");
        }
    }

    #[test]
    fn the_table_reports_a_catch_and_exits_zero() {
        let output =
            sim().args(["canaries", "--budget", "30", "--json", "--only", "promote-not-dead"]).output().expect("run");
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
        assert_eq!(json["caught"], 1);
        assert_eq!(json["survived"], 0);
        assert_eq!(json["canaries"][0]["name"], "promote-not-dead");
        // Seed 0's rewrite trips the engine's own assertion (a retired
        // segment still has stubs) before any audit runs.
        assert_eq!(json["canaries"][0]["check"], "panic");
    }

    #[test]
    fn seg_no_fsync() {
        caught_within_its_cap("seg-no-fsync");
    }

    #[test]
    fn seal_no_dir_sync() {
        caught_within_its_cap("seal-no-dir-sync");
    }

    #[test]
    fn frame_before_register() {
        caught_within_its_cap("frame-before-register");
    }

    #[test]
    fn ghost_stubs() {
        caught_within_its_cap("ghost-stubs");
    }

    #[test]
    fn append_after_torn_tail() {
        caught_within_its_cap("append-after-torn-tail");
    }

    #[test]
    fn replay_past_invalid() {
        caught_within_its_cap("replay-past-invalid");
    }

    #[test]
    fn fsync_retry() {
        caught_within_its_cap("fsync-retry");
    }

    #[test]
    fn rewrite_no_fsync() {
        caught_within_its_cap("rewrite-no-fsync");
    }

    #[test]
    fn rewrite_no_dir_sync() {
        caught_within_its_cap("rewrite-no-dir-sync");
    }

    #[test]
    fn promote_not_dead() {
        caught_within_its_cap("promote-not-dead");
    }

    #[test]
    fn seg_no_checksum() {
        caught_within_its_cap("seg-no-checksum");
    }

    #[test]
    fn rewrite_drops_ttl() {
        caught_within_its_cap("rewrite-drops-ttl");
    }

    #[test]
    fn everysec_no_fsync() {
        caught_within_its_cap("everysec-no-fsync");
    }

    #[test]
    fn stitch_absent_only() {
        caught_within_its_cap("stitch-absent-only");
    }

    #[test]
    fn sweep_named_segment() {
        caught_within_its_cap("sweep-named-segment");
    }

    #[test]
    fn flushall_retire_early() {
        caught_within_its_cap("flushall-retire-early");
    }

    #[test]
    fn manifest_tail_kept() {
        caught_within_its_cap("manifest-tail-kept");
    }

    #[test]
    fn single_read_recovery() {
        caught_within_its_cap("single-read-recovery");
    }

    #[test]
    fn ack_failed_append() {
        caught_within_its_cap("ack-failed-append");
    }

    #[test]
    fn read_error_empty_log() {
        caught_within_its_cap("read-error-empty-log");
    }

    #[test]
    fn cut_vouched_damage() {
        caught_within_its_cap("cut-vouched-damage");
    }

    #[test]
    fn missing_log_is_empty() {
        caught_within_its_cap("missing-log-is-empty");
    }

    #[test]
    fn sweep_after_damage() {
        caught_within_its_cap("sweep-after-damage");
    }

    #[test]
    fn rewrite_drops_hwm() {
        caught_within_its_cap("rewrite-drops-hwm");
    }

    #[test]
    fn recovery_no_fsync() {
        caught_within_its_cap("recovery-no-fsync");
    }

    #[test]
    fn seq_from_live_set() {
        caught_within_its_cap("seq-from-live-set");
    }

    #[test]
    fn cut_no_fsync() {
        caught_within_its_cap("cut-no-fsync");
    }

    #[test]
    fn compact_rename_before_fsync() {
        caught_within_its_cap("compact-rename-before-fsync");
    }

    #[test]
    fn hlen_stub_weight() {
        caught_within_its_cap("hlen-stub-weight");
    }

    #[test]
    fn dir_sync_error_ignored() {
        caught_within_its_cap("dir-sync-error-ignored");
    }

    #[test]
    fn rename_error_ignored() {
        caught_within_its_cap("rename-error-ignored");
    }

    #[test]
    fn recovery_no_dir_sync() {
        caught_within_its_cap("recovery-no-dir-sync");
    }

    #[test]
    fn read_only_cuts_tail() {
        caught_within_its_cap("read-only-cuts-tail");
    }

    #[test]
    fn quarantine_no_dir_sync() {
        caught_within_its_cap("quarantine-no-dir-sync");
    }

    #[test]
    fn aof_place_ignored() {
        caught_within_its_cap("aof-place-ignored");
    }

    #[test]
    fn expire_at_now_kept() {
        caught_within_its_cap("expire-at-now-kept");
    }

    #[test]
    fn unfinished_rewrite_read() {
        caught_within_its_cap("unfinished-rewrite-read");
    }

    #[test]
    fn manifest_place_ignored() {
        caught_within_its_cap("manifest-place-ignored");
    }
}
