//! The summary of many seeds: counters summed, failures kept in seed
//! order, rendered for a person or as one JSON object.
//!
//! Sums do not depend on the order seeds finish in, and failures are
//! sorted by seed, so `--jobs 4` prints what `--jobs 1` prints (bar the
//! timing figures).

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::counters::Counters;
use crate::disk::FsProfile;
use crate::failure::{Check, Failure};
use crate::outcome::SeedOutcome;
use crate::trace::FaultKind;

/// Totals over every seed run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// The seeds' counters, summed (`counters.rs`).
    pub counters: Counters,
    /// Failures, in seed order.
    pub failures: Vec<Failure>,
    /// The trace hash, when exactly one seed ran.
    pub trace_hash: Option<u64>,
    /// What the seed drew (`SeedOutcome::drew`), when exactly one seed ran.
    pub drew: Option<String>,
    /// Wall-clock seconds the run took (the only wall-clock figure).
    pub elapsed_sec: f64,
    /// The file-system profile the verdict holds under (`FsProfile::name`),
    /// once the run says; summaries of different profiles never merge.
    pub fs: Option<String>,
}

/// The counters every summary has held since the first: a summary read
/// back without one of them is refused. Any other counter absent from a
/// summary (one written before it was counted) reads as zero.
const COUNTERS_ALWAYS_WRITTEN: [&str; 4] = ["ops", "crashes", "restarts", "refusals_accepted"];

impl Summary {
    /// Fold one seed's outcome in.
    pub fn add(&mut self, outcome: &SeedOutcome) {
        self.add_seed(&Summary::of(outcome));
    }

    /// Fold in the summary of one seed (its [`Summary::of`], or what a
    /// child process run with `--isolate` printed of it): the same totals
    /// whichever process ran the seed.
    pub fn add_seed(&mut self, one: &Summary) {
        assert_eq!(one.seeds, 1, "the summary of exactly one seed");
        let first = self.seeds == 0;
        self.merge(one);
        // A trace hash and a draw mean something for one seed only.
        self.trace_hash = if first { one.trace_hash } else { None };
        self.drew = if first { one.drew.clone() } else { None };
    }

    /// The summary of one seed.
    pub fn of(outcome: &SeedOutcome) -> Summary {
        Summary {
            seeds: 1,
            counters: outcome.counters.clone(),
            failures: outcome.failure.iter().cloned().collect(),
            trace_hash: Some(outcome.trace_hash),
            drew: outcome.drew.clone(),
            elapsed_sec: 0.0,
            fs: None,
        }
    }

    /// The summary of one seed whose run left nothing but `failure`: a
    /// child process that died under `--isolate` (its counters died with
    /// it).
    pub fn of_failure(failure: Failure) -> Summary {
        Summary { seeds: 1, failures: vec![failure], ..Summary::default() }
    }

    /// Workload operations per wall-clock second.
    pub fn ops_per_sec(&self) -> f64 {
        if self.elapsed_sec > 0.0 {
            self.counters.ops as f64 / self.elapsed_sec
        } else {
            0.0
        }
    }

    /// The JSON summary object: every counter under its own name
    /// ([`Counters::NAMES`]), beside the run's figures and failures.
    pub fn to_json(&self) -> Value {
        let faults: serde_json::Map<String, Value> = FaultKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), json!(self.counters.faults.get(k).copied().unwrap_or(0))))
            .collect();
        let failures: Vec<Value> = self
            .failures
            .iter()
            .map(|f| {
                json!({
                    "seed": f.seed,
                    "check": f.check.as_str(),
                    "op_index": f.op_index,
                    "detail": f.detail,
                    "recent": f.recent,
                    "repro": f.repro,
                    "drew": f.drew,
                })
            })
            .collect();
        let mut out = json!({
            "seeds": self.seeds,
            "ops_per_sec": (self.ops_per_sec() * 10.0).round() / 10.0,
            "elapsed_sec": (self.elapsed_sec * 1000.0).round() / 1000.0,
            "after_damage": self.counters.after_damage,
            "faults": faults,
            "crash_gaps": self.counters.crash_gaps,
            "failures": failures,
        });
        for (name, count) in Counters::NAMES.iter().zip(self.counters.values()) {
            out[*name] = json!(count);
        }
        if let Some(hash) = self.trace_hash {
            out["trace_hash"] = json!(format!("{hash:016x}"));
        }
        if let Some(fs) = &self.fs {
            out["fs"] = json!(fs);
        }
        if let Some(drew) = &self.drew {
            out["drew"] = json!(drew);
        }
        out
    }

    /// [`Summary::merge`], refused if the two verdicts hold under different
    /// file-system profiles (a sweep under ext4 and one under posix are
    /// not one sweep).
    pub fn merge_same_fs(&mut self, other: &Summary) -> Result<(), String> {
        if let (Some(ours), Some(theirs)) = (&self.fs, &other.fs) {
            if ours != theirs {
                return Err(format!(
                    "a summary under file-system profile {theirs:?} cannot merge with ones under {ours:?}"
                ));
            }
        }
        self.merge(other);
        Ok(())
    }

    /// Add another summary's totals (shards of one sweep, run apart).
    /// Failures stay in seed order; elapsed time is the longest shard's.
    pub fn merge(&mut self, other: &Summary) {
        self.seeds += other.seeds;
        self.counters.add(&other.counters);
        for failure in &other.failures {
            let at = self.failures.partition_point(|f| f.seed <= failure.seed);
            self.failures.insert(at, failure.clone());
        }
        self.trace_hash = None;
        self.drew = None;
        self.elapsed_sec = self.elapsed_sec.max(other.elapsed_sec);
        if self.fs.is_none() {
            self.fs.clone_from(&other.fs);
        }
    }

    /// Read back a summary printed by [`Summary::to_json`]; errors name
    /// the missing or mistyped field.
    pub fn from_json(value: &Value) -> Result<Summary, String> {
        let number = |name: &str| value.get(name).and_then(Value::as_u64).ok_or(format!("no number `{name}`"));
        let mut summary = Summary { seeds: number("seeds")?, ..Summary::default() };
        for name in Counters::NAMES {
            let count = match COUNTERS_ALWAYS_WRITTEN.contains(name) {
                true => number(name)?,
                false => value.get(*name).and_then(Value::as_u64).unwrap_or(0),
            };
            *summary.counters.named_mut(name).expect("a counter's own name") = count;
        }
        summary.elapsed_sec = value.get("elapsed_sec").and_then(Value::as_f64).ok_or("no number `elapsed_sec`")?;
        // Absent from summaries written before profiles: all were posix.
        summary.fs = Some(value.get("fs").and_then(Value::as_str).unwrap_or(FsProfile::POSIX.name).to_string());
        read_counted_maps(value, &mut summary.counters)?;
        summary.failures = failures_from_json(value)?;
        summary.failures.sort_by_key(|f| f.seed);
        // Absent from summaries of targets that draw no configuration.
        summary.drew = value.get("drew").and_then(Value::as_str).map(str::to_string);
        summary.trace_hash = match value.get("trace_hash").and_then(Value::as_str) {
            Some(hex) => Some(u64::from_str_radix(hex, 16).map_err(|_| format!("bad trace_hash {hex:?}"))?),
            None => None,
        };
        Ok(summary)
    }

    /// The report for a person.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} seeds, {} ops in {:.3} s ({:.0} ops/s), {} crashes, {} restarts, {} expected refusals{}",
            self.seeds,
            self.counters.ops,
            self.elapsed_sec,
            self.ops_per_sec(),
            self.counters.crashes,
            self.counters.restarts,
            self.counters.refusals_accepted,
            // Only the segsim workload draws bad input: a kit target's
            // line stays as it was.
            if self.counters.bad_inputs_refused > 0 {
                format!(", {} bad inputs refused", self.counters.bad_inputs_refused)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "restarts by cause: {} power losses, {} process kills, {} clean restarts, {} reopens after an error",
            self.counters.crashes, self.counters.kills, self.counters.clean_restarts, self.counters.error_reopens
        );
        if let Some(fs) = &self.fs {
            let title = FsProfile::parse(fs).map_or(fs.as_str(), |profile| profile.title);
            let _ = writeln!(out, "file-system profile: {title}");
        }
        if let Some(drew) = &self.drew {
            let _ = writeln!(out, "drew: {drew}");
        }
        self.write_counted_outcomes(&mut out);
        let faults: Vec<String> = FaultKind::ALL
            .iter()
            .map(|k| format!("{}={}", k.name(), self.counters.faults.get(k).copied().unwrap_or(0)))
            .collect();
        let _ = writeln!(out, "faults injected: {}", faults.join(" "));
        let gaps: Vec<String> = self.counters.crash_gaps.iter().map(|(g, n)| format!("{g}={n}")).collect();
        let _ = writeln!(out, "crashes by gap: {}", if gaps.is_empty() { "none".to_string() } else { gaps.join(" ") });
        if let Some(hash) = self.trace_hash {
            let _ = writeln!(out, "trace hash: {hash:016x}");
        }
        if self.failures.is_empty() {
            let _ = writeln!(out, "no failures");
            return out;
        }
        self.write_failures(&mut out);
        out
    }

    /// The outcomes counted apart, each on its own line when it happened
    /// at all: silent rollbacks, unpromised recoveries, writes in doubt,
    /// inspections, documented hazards, recoveries after damage.
    fn write_counted_outcomes(&self, out: &mut String) {
        if self.counters.silent_rollbacks > 0 {
            let _ = writeln!(
                out,
                "{} SILENT ROLLBACKS: recoveries after announced damage that went back past a durable commit \
                 (acknowledged durable data lost without an error)",
                self.counters.silent_rollbacks
            );
        }
        if self.counters.unpromised > 0 {
            let _ = writeln!(
                out,
                "{} recoveries no promise covered (after commits at a level that promises nothing; measured, not \
                 failed)",
                self.counters.unpromised
            );
        }
        if self.counters.in_doubt > 0 {
            let _ = writeln!(
                out,
                "{} writes or commits left in doubt (an error or a crash cut them short: either outcome allowed, \
                 never half), {} of them came back after a recovery that had not shown them",
                self.counters.in_doubt, self.counters.came_back
            );
        }
        self.write_client_outcomes(out);
        if self.counters.poisoned > 0 {
            let _ = writeln!(
                out,
                "{} operations refused as poisoned by a fault no caller heard (accepted as the engine documents; reopened)",
                self.counters.poisoned
            );
        }
        if self.counters.inspections > 0 {
            let _ = writeln!(out, "{} crashed directories inspected read-only first", self.counters.inspections);
        }
        if self.counters.hazards > 0 {
            let _ = writeln!(
                out,
                "{} persistence hazards the engine documents (data fsynced under a name not yet durable, then relied \
                 on or acknowledged; declared in Spec::hazards: reported, not failed)",
                self.counters.hazards
            );
        }
        if !self.counters.after_damage.is_empty() {
            let parts: Vec<String> = self.counters.after_damage.iter().map(|(k, n)| format!("{k}={n}")).collect();
            let total: u64 = self.counters.after_damage.values().sum();
            let _ = writeln!(out, "{total} recoveries after announced damage: {}", parts.join(" "));
        }
    }

    /// What the clients beside the writer did (`--clients`): waits and
    /// refusals, steps inside the writer's operations, a second writer's
    /// commits, other clients' checkpoints and closes; each line only
    /// when it happened.
    fn write_client_outcomes(&self, out: &mut String) {
        if self.counters.busy_waits + self.counters.readers_refused > 0 {
            let _ = writeln!(
                out,
                "{} writer operations waited for readers (refused as busy: the readers ended, the operation \
                 retried), {} reader begins refused while the writer held its lock",
                self.counters.busy_waits, self.counters.readers_refused
            );
        }
        if self.counters.interleaved_steps > 0 {
            let _ = writeln!(
                out,
                "{} reader steps ran inside a writer's operation, between two of its I/Os (--interleave), {} of \
                 them attempts to write",
                self.counters.interleaved_steps, self.counters.write_attempts
            );
        }
        if self.counters.second_writer_commits + self.counters.second_writer_refused > 0 {
            let _ = writeln!(
                out,
                "{} transactions of a second writer committed, {} refused as busy where the engine documents it",
                self.counters.second_writer_commits, self.counters.second_writer_refused
            );
        }
        if self.counters.client_checkpoints + self.counters.client_closes > 0 {
            let _ = writeln!(
                out,
                "{} checkpoints by a client other than the writer, {} readers' connections closed beside others",
                self.counters.client_checkpoints, self.counters.client_closes
            );
        }
    }

    /// Each failure: its seed, check and detail, the last events, the repro.
    fn write_failures(&self, out: &mut String) {
        debug_assert!(!self.failures.is_empty(), "called only when a seed failed");
        let _ = writeln!(out, "{} FAILED SEEDS", self.failures.len());
        for failure in &self.failures {
            // A child that died (`--isolate`) left no op index behind.
            let at = match failure.check {
                Check::Died => String::new(),
                _ => format!(" at op #{}", failure.op_index),
            };
            let _ = writeln!(out, "\nseed {} failed check '{}'{at}:", failure.seed, failure.check);
            if let Some(drew) = &failure.drew {
                let _ = writeln!(out, "  drew: {drew}");
            }
            for line in failure.detail.lines() {
                let _ = writeln!(out, "  {line}");
            }
            // A died child's report has no trace to show (its detail holds
            // its stderr's last lines instead).
            if !failure.recent.is_empty() {
                let _ = writeln!(out, "  last events:");
            }
            for line in &failure.recent {
                let _ = writeln!(out, "    {line}");
            }
            let _ = writeln!(out, "  repro: {}", failure.repro);
        }
    }
}

/// The counters kept by key (faults, crash gaps, recoveries after damage)
/// of a summary printed by [`Summary::to_json`], into `counters`.
fn read_counted_maps(value: &Value, counters: &mut Counters) -> Result<(), String> {
    let faults = value.get("faults").and_then(Value::as_object).ok_or("no object `faults`")?;
    for (name, count) in faults {
        let kind = FaultKind::ALL.iter().find(|k| k.name() == name).ok_or(format!("unknown fault kind {name:?}"))?;
        counters.faults.insert(*kind, count.as_u64().ok_or(format!("fault count {name:?} is not a number"))?);
    }
    let gaps = value.get("crash_gaps").and_then(Value::as_object).ok_or("no object `crash_gaps`")?;
    for (gap, count) in gaps {
        let count = count.as_u64().ok_or(format!("gap count {gap:?} is not a number"))?;
        counters.crash_gaps.insert(Cow::Owned(gap.clone()), count);
    }
    // Absent from summaries written before the kit counted it.
    if let Some(outcomes) = value.get("after_damage").and_then(Value::as_object) {
        for (outcome, count) in outcomes {
            let count = count.as_u64().ok_or(format!("after_damage {outcome:?} is not a number"))?;
            counters.after_damage.insert(Cow::Owned(outcome.clone()), count);
        }
    }
    Ok(())
}

/// The `failures` array of a summary printed by [`Summary::to_json`].
fn failures_from_json(value: &Value) -> Result<Vec<Failure>, String> {
    let mut out = Vec::new();
    let failures = value.get("failures").and_then(Value::as_array).ok_or("no array `failures`")?;
    for failure in failures {
        let text = |name: &str| {
            failure.get(name).and_then(Value::as_str).map(str::to_string).ok_or(format!("failure without `{name}`"))
        };
        let check = text("check")?;
        out.push(Failure {
            seed: failure.get("seed").and_then(Value::as_u64).ok_or("failure without `seed`")?,
            op_index: failure.get("op_index").and_then(Value::as_u64).unwrap_or(0),
            check: Check::parse(&check).ok_or(format!("unknown check {check:?}"))?,
            detail: text("detail")?,
            recent: failure
                .get("recent")
                .and_then(Value::as_array)
                .map(|lines| lines.iter().filter_map(|l| l.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            repro: text("repro")?,
            // Absent from summaries written before draws were named.
            drew: failure.get("drew").and_then(Value::as_str).map(str::to_string),
        });
    }
    Ok(out)
}
