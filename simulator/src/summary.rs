//! The summary of many seeds: counters summed, failures kept in seed
//! order, rendered for a person or as one JSON object.
//!
//! Sums do not depend on the order seeds finish in, and failures are
//! sorted by seed, so `--jobs 4` prints what `--jobs 1` prints (bar the
//! timing figures).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::disk::FsProfile;
use crate::failure::{Check, Failure};
use crate::outcome::SeedOutcome;
use crate::trace::FaultKind;

/// Totals over every seed run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Workload operations run.
    pub ops: u64,
    /// Power losses.
    pub crashes: u64,
    /// Reopens, all causes.
    pub restarts: u64,
    /// Reopens after a process kill.
    pub kills: u64,
    /// Reopens after a clean close.
    pub clean_restarts: u64,
    /// Reopens (without a power loss) after an error: a poisoned store, a
    /// kit engine failed under an injected fault.
    pub error_reopens: u64,
    /// Expected refusals after media corruption.
    pub refusals_accepted: u64,
    /// Bad input refused as the model predicted (see
    /// `SeedOutcome::bad_inputs_refused`).
    pub bad_inputs_refused: u64,
    /// Recoveries after announced damage that silently went back past a
    /// durable commit (see `SeedOutcome::silent_rollbacks`).
    pub silent_rollbacks: u64,
    /// Recoveries no promise covered (see `SeedOutcome::unpromised`).
    pub unpromised: u64,
    /// Writes or commits left in doubt (see `SeedOutcome::in_doubt`).
    pub in_doubt: u64,
    /// In-doubt ones that came back later (see `SeedOutcome::came_back`).
    pub came_back: u64,
    /// Writer operations that waited for readers (see `SeedOutcome::busy_waits`).
    pub busy_waits: u64,
    /// Readers refused at their begin (see `SeedOutcome::readers_refused`).
    pub readers_refused: u64,
    /// Persistence hazards reported (see `SeedOutcome::hazards`).
    pub hazards: u64,
    /// Read-only inspections of crashed directories.
    pub inspections: u64,
    /// Recoveries after announced damage, by outcome (see
    /// `SeedOutcome::after_damage`).
    pub after_damage: BTreeMap<String, u64>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<FaultKind, u64>,
    /// Crashes by gap.
    pub crash_gaps: BTreeMap<String, u64>,
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
            ops: outcome.ops,
            crashes: outcome.crashes,
            restarts: outcome.restarts,
            kills: outcome.kills,
            clean_restarts: outcome.clean_restarts,
            error_reopens: outcome.error_reopens,
            refusals_accepted: outcome.refusals_accepted,
            bad_inputs_refused: outcome.bad_inputs_refused,
            silent_rollbacks: outcome.silent_rollbacks,
            unpromised: outcome.unpromised,
            in_doubt: outcome.in_doubt,
            came_back: outcome.came_back,
            busy_waits: outcome.busy_waits,
            readers_refused: outcome.readers_refused,
            hazards: outcome.hazards,
            inspections: outcome.inspections,
            after_damage: outcome.after_damage.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            faults: outcome.faults.clone(),
            crash_gaps: outcome.crash_gaps.iter().map(|(gap, count)| (gap.to_string(), *count)).collect(),
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
            self.ops as f64 / self.elapsed_sec
        } else {
            0.0
        }
    }

    /// The JSON summary object.
    pub fn to_json(&self) -> Value {
        let faults: serde_json::Map<String, Value> = FaultKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), json!(self.faults.get(k).copied().unwrap_or(0))))
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
            "ops": self.ops,
            "ops_per_sec": (self.ops_per_sec() * 10.0).round() / 10.0,
            "elapsed_sec": (self.elapsed_sec * 1000.0).round() / 1000.0,
            "crashes": self.crashes,
            "restarts": self.restarts,
            "kills": self.kills,
            "clean_restarts": self.clean_restarts,
            "error_reopens": self.error_reopens,
            "refusals_accepted": self.refusals_accepted,
            "bad_inputs_refused": self.bad_inputs_refused,
            "silent_rollbacks": self.silent_rollbacks,
            "unpromised": self.unpromised,
            "in_doubt": self.in_doubt,
            "came_back": self.came_back,
            "busy_waits": self.busy_waits,
            "readers_refused": self.readers_refused,
            "hazards": self.hazards,
            "inspections": self.inspections,
            "after_damage": self.after_damage,
            "faults": faults,
            "crash_gaps": self.crash_gaps,
            "failures": failures,
        });
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
        self.ops += other.ops;
        self.crashes += other.crashes;
        self.restarts += other.restarts;
        self.kills += other.kills;
        self.clean_restarts += other.clean_restarts;
        self.error_reopens += other.error_reopens;
        self.refusals_accepted += other.refusals_accepted;
        self.bad_inputs_refused += other.bad_inputs_refused;
        self.silent_rollbacks += other.silent_rollbacks;
        self.unpromised += other.unpromised;
        self.in_doubt += other.in_doubt;
        self.came_back += other.came_back;
        self.busy_waits += other.busy_waits;
        self.readers_refused += other.readers_refused;
        self.hazards += other.hazards;
        self.inspections += other.inspections;
        for (outcome, count) in &other.after_damage {
            *self.after_damage.entry(outcome.clone()).or_default() += count;
        }
        for (kind, count) in &other.faults {
            *self.faults.entry(*kind).or_default() += count;
        }
        for (gap, count) in &other.crash_gaps {
            *self.crash_gaps.entry(gap.clone()).or_default() += count;
        }
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
        let mut summary = Summary {
            seeds: number("seeds")?,
            ops: number("ops")?,
            crashes: number("crashes")?,
            restarts: number("restarts")?,
            // Absent from summaries written before reopens were told apart.
            kills: value.get("kills").and_then(Value::as_u64).unwrap_or(0),
            clean_restarts: value.get("clean_restarts").and_then(Value::as_u64).unwrap_or(0),
            error_reopens: value.get("error_reopens").and_then(Value::as_u64).unwrap_or(0),
            refusals_accepted: number("refusals_accepted")?,
            // Absent from summaries written before bad input was counted.
            bad_inputs_refused: value.get("bad_inputs_refused").and_then(Value::as_u64).unwrap_or(0),
            // Absent from summaries written before the kit counted it.
            silent_rollbacks: value.get("silent_rollbacks").and_then(Value::as_u64).unwrap_or(0),
            unpromised: value.get("unpromised").and_then(Value::as_u64).unwrap_or(0),
            // Absent from summaries written before outcomes in doubt.
            in_doubt: value.get("in_doubt").and_then(Value::as_u64).unwrap_or(0),
            came_back: value.get("came_back").and_then(Value::as_u64).unwrap_or(0),
            // Absent from summaries written before readers could wait.
            busy_waits: value.get("busy_waits").and_then(Value::as_u64).unwrap_or(0),
            readers_refused: value.get("readers_refused").and_then(Value::as_u64).unwrap_or(0),
            hazards: value.get("hazards").and_then(Value::as_u64).unwrap_or(0),
            inspections: value.get("inspections").and_then(Value::as_u64).unwrap_or(0),
            elapsed_sec: value.get("elapsed_sec").and_then(Value::as_f64).ok_or("no number `elapsed_sec`")?,
            // Absent from summaries written before profiles: all were posix.
            fs: Some(value.get("fs").and_then(Value::as_str).unwrap_or(FsProfile::POSIX.name).to_string()),
            ..Summary::default()
        };
        let faults = value.get("faults").and_then(Value::as_object).ok_or("no object `faults`")?;
        for (name, count) in faults {
            let kind =
                FaultKind::ALL.iter().find(|k| k.name() == name).ok_or(format!("unknown fault kind {name:?}"))?;
            summary.faults.insert(*kind, count.as_u64().ok_or(format!("fault count {name:?} is not a number"))?);
        }
        let gaps = value.get("crash_gaps").and_then(Value::as_object).ok_or("no object `crash_gaps`")?;
        for (gap, count) in gaps {
            summary.crash_gaps.insert(gap.clone(), count.as_u64().ok_or(format!("gap count {gap:?} is not a number"))?);
        }
        // Absent from summaries written before the kit counted it.
        if let Some(outcomes) = value.get("after_damage").and_then(Value::as_object) {
            for (outcome, count) in outcomes {
                let count = count.as_u64().ok_or(format!("after_damage {outcome:?} is not a number"))?;
                summary.after_damage.insert(outcome.clone(), count);
            }
        }
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
            self.ops,
            self.elapsed_sec,
            self.ops_per_sec(),
            self.crashes,
            self.restarts,
            self.refusals_accepted,
            // Only the segsim workload draws bad input: a kit target's
            // line stays as it was.
            if self.bad_inputs_refused > 0 {
                format!(", {} bad inputs refused", self.bad_inputs_refused)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "restarts by cause: {} power losses, {} process kills, {} clean restarts, {} reopens after an error",
            self.crashes, self.kills, self.clean_restarts, self.error_reopens
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
            .map(|k| format!("{}={}", k.name(), self.faults.get(k).copied().unwrap_or(0)))
            .collect();
        let _ = writeln!(out, "faults injected: {}", faults.join(" "));
        let gaps: Vec<String> = self.crash_gaps.iter().map(|(g, n)| format!("{g}={n}")).collect();
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
        if self.silent_rollbacks > 0 {
            let _ = writeln!(
                out,
                "{} SILENT ROLLBACKS: recoveries after announced damage that went back past a durable commit \
                 (acknowledged durable data lost without an error)",
                self.silent_rollbacks
            );
        }
        if self.unpromised > 0 {
            let _ = writeln!(
                out,
                "{} recoveries no promise covered (after commits at a level that promises nothing; measured, not \
                 failed)",
                self.unpromised
            );
        }
        if self.in_doubt > 0 {
            let _ = writeln!(
                out,
                "{} writes or commits left in doubt (an error or a crash cut them short: either outcome allowed, \
                 never half), {} of them came back after a recovery that had not shown them",
                self.in_doubt, self.came_back
            );
        }
        if self.busy_waits + self.readers_refused > 0 {
            let _ = writeln!(
                out,
                "{} writer operations waited for readers (refused as busy: the readers ended, the operation \
                 retried), {} reader begins refused while the writer held its lock",
                self.busy_waits, self.readers_refused
            );
        }
        if self.inspections > 0 {
            let _ = writeln!(out, "{} crashed directories inspected read-only first", self.inspections);
        }
        if self.hazards > 0 {
            let _ = writeln!(
                out,
                "{} persistence hazards the engine documents (data fsynced under a name not yet durable, then relied \
                 on or acknowledged; declared in Spec::hazards: reported, not failed)",
                self.hazards
            );
        }
        if !self.after_damage.is_empty() {
            let parts: Vec<String> = self.after_damage.iter().map(|(k, n)| format!("{k}={n}")).collect();
            let total: u64 = self.after_damage.values().sum();
            let _ = writeln!(out, "{total} recoveries after announced damage: {}", parts.join(" "));
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
