//! Explorations added up: what `sim merge` makes of the `--json` reports
//! of many `sim explore` runs (a fleet's shards each explore a range of
//! seeds at night), beside the random mode's summaries in the same merge.
//!
//! Sums are order-independent and failures are kept by (target, seed), so
//! merging the same files in any order prints the same report.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::disk::FsProfile;

/// One exploration's failure, as a merged report lists it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MergedFailure {
    /// The target explored.
    pub target: String,
    /// The seed explored.
    pub seed: u64,
    /// The failed check.
    pub check: String,
    /// The command that explores exactly that state again.
    pub repro: String,
}

/// Totals over many exploration reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExploreTotals {
    /// Explorations (seeds) per target.
    pub seeds: BTreeMap<String, u64>,
    /// Crash states enumerated at depth 1, over every report.
    pub states: u64,
    /// Distinct recoveries at depth 1.
    pub distinct_states: u64,
    /// Crash states at depth 2, where a report explored there.
    pub depth2_states: u64,
    /// Recoveries rerun with one I/O failing (`--faults`).
    pub fault_runs: u64,
    /// Damaged durable images recovered (`--damage`).
    pub damage_recoveries: u64,
    /// Crash indices explored at depth 1, and of those the ones sampled
    /// (the model allowed more than `--complete-up-to` states there), over
    /// every report (a report from before coverage counts none).
    pub indices: u64,
    /// See `indices`.
    pub sampled_indices: u64,
    /// Failing states, summed.
    pub failures_total: u64,
    /// The first failure of each failing exploration.
    pub failures: Vec<MergedFailure>,
    /// The file-system profile every report explored under (a report
    /// without `fs` explored under `posix`); reports of different profiles
    /// do not merge.
    pub fs: Option<String>,
}

/// Whether `value` is an exploration report (not a random-mode summary).
pub fn is_explore_report(value: &Value) -> bool {
    value.get("states").is_some() && value.get("recorded_ios").is_some()
}

fn number(value: &Value, path: &[&str]) -> u64 {
    path.iter().try_fold(value, |v, key| v.get(key)).and_then(Value::as_u64).unwrap_or(0)
}

impl ExploreTotals {
    /// Add one report (as `sim explore --json` prints it); errors name the
    /// missing field.
    pub fn add(&mut self, report: &Value) -> Result<(), String> {
        let target = report.get("target").and_then(Value::as_str).ok_or("no string `target`")?;
        let seed = report.get("seed").and_then(Value::as_u64).ok_or("no number `seed`")?;
        let fs = report.get("fs").and_then(Value::as_str).unwrap_or(FsProfile::POSIX.name);
        match &self.fs {
            Some(ours) if ours != fs => {
                return Err(format!(
                    "an exploration under file-system profile {fs:?} cannot merge with ones under {ours:?}"
                ))
            }
            _ => self.fs = Some(fs.to_string()),
        }
        *self.seeds.entry(target.to_string()).or_default() += 1;
        self.states += number(report, &["states"]);
        self.distinct_states += number(report, &["distinct_states"]);
        self.depth2_states += number(report, &["depth2", "states"]);
        self.fault_runs += number(report, &["faults", "runs"]);
        self.damage_recoveries += number(report, &["damage", "recoveries"]);
        let indices = number(report, &["coverage", "indices"]);
        self.indices += indices;
        self.sampled_indices += indices - number(report, &["coverage", "complete_indices"]).min(indices);
        let failures = number(report, &["failures_total"]);
        self.failures_total += failures;
        if let Some(first) = report.get("failures").and_then(Value::as_array).and_then(|f| f.first()) {
            let text = |key: &str| first.get(key).and_then(Value::as_str).unwrap_or("").to_string();
            self.failures.push(MergedFailure {
                target: target.to_string(),
                seed,
                check: text("check"),
                repro: text("repro"),
            });
            self.failures.sort();
        } else if failures > 0 {
            return Err(format!("{failures} failures but no `failures` list"));
        }
        Ok(())
    }

    /// Whether any exploration was added.
    pub fn is_empty(&self) -> bool {
        self.seeds.is_empty()
    }

    /// The human report.
    pub fn to_text(&self) -> String {
        let seeds: Vec<String> = self.seeds.iter().map(|(t, n)| format!("{t}={n}")).collect();
        let mut out = format!(
            "explored seeds: {}; {} crash states, {} distinct recovered, {} at depth 2, {} faulted recoveries, {} \
             damaged recoveries\n",
            seeds.join(" "),
            self.states,
            self.distinct_states,
            self.depth2_states,
            self.fault_runs,
            self.damage_recoveries
        );
        if let Some(fs) = self.fs.as_deref().filter(|fs| *fs != FsProfile::POSIX.name) {
            let _ = writeln!(out, "file-system profile: {fs}");
        }
        match self.sampled_indices {
            0 => {
                let _ = writeln!(
                    out,
                    "complete: every crash state the model allows, at all {} crash indices",
                    self.indices
                );
            }
            sampled => {
                let _ = writeln!(out, "SAMPLED at {sampled} of {} crash indices (--complete-up-to)", self.indices);
            }
        }
        if self.failures.is_empty() {
            out.push_str("no exploration failed\n");
        }
        for failure in &self.failures {
            let _ = writeln!(out, "EXPLORE FAILED: {} seed {} check '{}'", failure.target, failure.seed, failure.check);
            let _ = writeln!(out, "  repro: {}", failure.repro);
        }
        out
    }

    /// The JSON object (the `explore` field of a merged report).
    pub fn to_json(&self) -> Value {
        let failures: Vec<Value> = self
            .failures
            .iter()
            .map(|f| json!({"target": f.target, "seed": f.seed, "check": f.check, "repro": f.repro}))
            .collect();
        let mut out = json!({
            "seeds": self.seeds,
            "states": self.states,
            "distinct_states": self.distinct_states,
            "depth2_states": self.depth2_states,
            "fault_runs": self.fault_runs,
            "damage_recoveries": self.damage_recoveries,
            "indices": self.indices,
            "sampled_indices": self.sampled_indices,
            "failures_total": self.failures_total,
            "failures": failures,
        });
        if let Some(fs) = &self.fs {
            out["fs"] = json!(fs);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_add_up_whatever_the_order() {
        let clean = json!({"target": "segsim", "seed": 1, "states": 10, "distinct_states": 4, "recorded_ios": 9,
            "failures_total": 0, "failures": [], "depth2": {"states": 7}, "faults": {"runs": 3},
            "damage": {"recoveries": 11}, "coverage": {"indices": 9, "complete_indices": 7}});
        let failed = json!({"target": "redb", "seed": 2, "states": 5, "distinct_states": 2, "recorded_ios": 3,
            "failures_total": 2, "failures": [{"check": "durability", "repro": "sim explore --target redb --seed 2"}]});
        assert!(is_explore_report(&clean) && !is_explore_report(&json!({"seeds": 3, "ops": 9})));
        let (mut a, mut b) = (ExploreTotals::default(), ExploreTotals::default());
        a.add(&clean).unwrap();
        a.add(&failed).unwrap();
        b.add(&failed).unwrap();
        b.add(&clean).unwrap();
        assert_eq!(a, b);
        assert_eq!((a.states, a.depth2_states, a.fault_runs, a.failures_total), (15, 7, 3, 2));
        assert_eq!(a.damage_recoveries, 11);
        assert_eq!((a.indices, a.sampled_indices), (9, 2), "a report without coverage counts none");
        assert!(a.to_text().contains("SAMPLED at 2 of 9 crash indices"), "{}", a.to_text());
        assert!(a.to_text().contains("EXPLORE FAILED: redb seed 2 check 'durability'"), "{}", a.to_text());
        assert!(ExploreTotals::default().add(&json!({"seed": 1})).unwrap_err().contains("target"));
    }
}
