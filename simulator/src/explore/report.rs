//! What an exploration found, for a person (`to_text`) and for a machine
//! (`to_json`), and the command line that repeats one crash state.
//!
//! Everything but the timings is a function of the target's settings, the
//! seed and the options, so two reports of the same exploration compare
//! equal once their timings are cleared ([`ExploreReport::without_timings`])
//! — the determinism tests and `--jobs` rely on it.

use serde_json::{json, Value};

use super::coverage::CoverageTotals;
use super::damage_reach::DamageReach;
use super::reach::Reached;
use super::{ExploreOptions, DEFAULT_COMPLETE_UP_TO, DEFAULT_MAX_DIR_SUBSETS};
use crate::disk::ArmedFault;
use crate::failure::Check;
use crate::seam::Target;

/// Failures kept in full in a report; the rest are only counted (a planted
/// bug fails thousands of states, and the first ones say it all).
pub const MAX_FAILURES_KEPT: usize = 100;

/// One crash state that failed its check.
#[derive(Clone, Debug, PartialEq)]
pub struct ExploreFailure {
    /// The crash index (power lost just before this I/O); `None` if the
    /// recording run itself failed.
    pub io_index: Option<u64>,
    /// The crash state's number at that index.
    pub state: Option<usize>,
    /// Depth 2: the crash index inside that state's recovery (and probe)
    /// where the power went again, and the crash state's number there.
    pub then: Option<(u64, usize)>,
    /// `--faults`: the I/O index of that state's recovery (and probe)
    /// whose I/O failed (any kind).
    pub fault_io: Option<u64>,
    /// `--faults`: how that I/O failed.
    pub fault_kind: Option<ArmedFault>,
    /// `--damage`: the damage site of the durable image at `io_index`
    /// (`state` is then `None`).
    pub damage_site: Option<usize>,
    /// The workload operation under way at the crash.
    pub op: String,
    /// Which writes and directory changes survived, which were torn.
    pub description: String,
    /// The check that failed (segsim: `open`, `dump`, `durability`,
    /// `audit`, `probe` or `panic`; for the recording, the check of the
    /// run that failed).
    pub check: Check,
    /// The mismatch, with a diff against the model.
    pub detail: String,
    /// The command that recovers exactly this state again.
    pub repro: String,
}

impl ExploreFailure {
    /// Where it failed, for a person: the crash state, and what followed.
    fn where_text(&self) -> String {
        match (self.io_index, self.state, self.then) {
            (Some(io), Some(state), None) if self.fault_io.is_some() => {
                let fault_io = self.fault_io.expect("matched");
                format!("crash index {io}, state {state}, then I/O {fault_io} of its recovery failed")
            }
            (Some(io), Some(state), None) => format!("crash index {io}, state {state}"),
            (Some(io), None, None) if self.damage_site.is_some() => {
                let site = self.damage_site.expect("matched");
                format!("durable image at crash index {io}, damage site {site}")
            }
            (Some(io), Some(state), Some((then_io, then_state))) => {
                format!("crash index {io}, state {state}, then recovery crash index {then_io}, state {then_state}")
            }
            (None, None, None) if self.fault_io.is_some() => {
                let fault_io = self.fault_io.expect("matched");
                format!("the workload's own I/O {fault_io} failed")
            }
            _ => "recording".to_string(),
        }
    }
}

/// Seconds spent in each phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseSeconds {
    /// The recording run.
    pub record: f64,
    /// Enumerating, building and hashing crash states.
    pub enumerate: f64,
    /// Recovering and checking the distinct ones.
    pub check: f64,
}

/// What one depth of exploration enumerated, recovered and judged, and
/// how long it took: the workload's crashes (depth 1), or the second
/// crashes inside their recoveries (depth 2).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Crash indices explored (depth 2: inside the recovery recordings).
    pub io_indices: u64,
    /// Crash states enumerated, byte-identical ones included: each got a
    /// verdict, directly or through its twin.
    pub states: u64,
    /// Distinct (disk image, recovery key) pairs recovered (depth 2: that
    /// no earlier state had recovered already).
    pub distinct_states: u64,
    /// Distinct (disk image, context) pairs judged (depth 2: new ones).
    pub checks: u64,
    /// `--max-states` (depth 2: `--max-depth2-states`) stopped the
    /// enumeration early.
    pub capped: bool,
    /// With `--only-state` (depth 2: `--then-state`): the description of
    /// the one state examined.
    pub examined: Option<String>,
    /// Per crash index, the model's states and the enumerated ones:
    /// complete or sampled (`coverage.rs`).
    pub coverage: CoverageTotals,
    /// Wall-clock seconds, all phases.
    pub elapsed_sec: f64,
    /// Per phase (depth 2's record phase records the recoveries).
    pub phase_sec: PhaseSeconds,
}

impl Counts {
    /// Crash states per second of wall-clock time, all phases counted.
    pub fn states_per_sec(&self) -> f64 {
        self.states as f64 / self.elapsed_sec.max(1e-9)
    }

    /// Distinct states recovered per second of the check phase.
    pub fn recoveries_per_sec(&self) -> f64 {
        self.distinct_states as f64 / self.phase_sec.check.max(1e-9)
    }

    /// The time and rates, as a report line starting with `lead`.
    fn rate_line(&self, lead: &str) -> String {
        let PhaseSeconds { record, enumerate, check } = self.phase_sec;
        format!(
            "{lead}{:.2} s: {:.0} states/s, {:.0} recoveries/s (record {record:.2} s, enumerate {enumerate:.2} s, \
             check {check:.2} s)\n",
            self.elapsed_sec,
            self.states_per_sec(),
            self.recoveries_per_sec(),
        )
    }

    /// The counts as JSON fields.
    fn to_json(&self) -> Value {
        json!({
            "io_indices": self.io_indices,
            "states": self.states,
            "distinct_states": self.distinct_states,
            "checks": self.checks,
            "capped": self.capped,
            "examined": self.examined,
            "coverage": self.coverage.to_json(),
            "states_per_sec": self.states_per_sec(),
            "recoveries_per_sec": self.recoveries_per_sec(),
            "elapsed_sec": self.elapsed_sec,
            "phase_sec": {
                "record": self.phase_sec.record,
                "enumerate": self.phase_sec.enumerate,
                "check": self.phase_sec.check,
            },
        })
    }

    /// The same counts with every timing zeroed, for comparisons.
    fn without_timings(&self) -> Counts {
        Counts { elapsed_sec: 0.0, phase_sec: PhaseSeconds::default(), ..self.clone() }
    }
}

/// What depth 2 added (`sim explore --depth 2`): second crashes inside
/// the recovery and probe of every distinct recovered state that passed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Depth2Report {
    /// Distinct depth-1 recoveries recorded and crashed again.
    pub recoveries_recorded: u64,
    /// The second crashes.
    pub counts: Counts,
}

/// What `--faults` added: every distinct recovered state that passed,
/// recovered again once per I/O index of its recovery and probe with that
/// I/O failing (`faults.rs`).
/// What `sim explore --damage` did: durable images damaged at every site
/// the target names, each recovered the default way and at a point in
/// time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DamageReport {
    /// Distinct durable images of the recording.
    pub images: u64,
    /// Damage sites over all of them.
    pub sites: u64,
    /// Damaged images recovered (two per site that changes a byte).
    pub recoveries: u64,
    /// Of those that passed, the ones that refused the damage ...
    pub refused: u64,
    /// ... and the ones that opened (cut at it, or held everything).
    pub opened: u64,
    /// `--max-damage-states` stopped before every site was recovered.
    pub capped: bool,
    /// Each declared record kind and way: what it damaged.
    pub reach: Vec<DamageReach>,
    /// Wall-clock seconds.
    pub elapsed_sec: f64,
}

impl DamageReport {
    /// Damaged recoveries per second.
    pub fn recoveries_per_sec(&self) -> f64 {
        self.recoveries as f64 / self.elapsed_sec.max(1e-9)
    }

    /// The report's line.
    fn text(&self, out: &mut String) {
        out.push_str(&format!(
            "  damage: {} durable images, {} sites, {} damaged recoveries ({} refused, {} opened), {:.2} s: {:.0} \
             recoveries/s{}\n",
            self.images,
            self.sites,
            self.recoveries,
            self.refused,
            self.opened,
            self.elapsed_sec,
            self.recoveries_per_sec(),
            if self.capped { " (capped by --max-damage-states)" } else { "" }
        ));
        for reach in &self.reach {
            out.push_str(&reach.text());
        }
        out.push_str(&super::damage_reach::kinds_text(&self.reach));
    }
}

/// What `--faults` did to the recorded workload itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadFaults {
    /// Runs of the workload, each with one of its I/Os failing: one per
    /// I/O of the recording (EIO), two more per write.
    pub runs: u64,
    /// Of them, the runs whose armed fault fired: all, the run being
    /// deterministic up to it.
    pub injected: u64,
    /// `--max-fault-runs` stopped it early.
    pub capped: bool,
    /// Wall-clock seconds.
    pub elapsed_sec: f64,
}

/// What `--faults` did to the recoveries: each distinct depth-1 recovery
/// rerun once per I/O, with that I/O failing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultsReport {
    /// Distinct depth-1 recoveries faulted.
    pub recoveries: u64,
    /// Recoveries run with one I/O armed to fail: one per I/O of each
    /// fault-free recovery (EIO), two more per write (a short write,
    /// ENOSPC).
    pub runs: u64,
    /// `runs` by how the I/O failed (`eio`, `short-write`, `enospc`).
    pub runs_by_kind: std::collections::BTreeMap<&'static str, u64>,
    /// Of them, the runs whose armed fault fired: all, a recovery being
    /// deterministic.
    pub injected: u64,
    /// `--max-fault-runs` stopped it early.
    pub capped: bool,
    /// Wall-clock seconds, counting and faulted runs together.
    pub elapsed_sec: f64,
    /// The faults in the recorded workload's own I/Os.
    pub workload: WorkloadFaults,
}

impl FaultsReport {
    /// The report's lines: the recoveries' faults, then the workload's.
    fn text(&self, out: &mut String) {
        let by_kind: Vec<String> = self.runs_by_kind.iter().map(|(kind, n)| format!("{kind} {n}")).collect();
        out.push_str(&format!(
            "  faults: {} recoveries rerun once per I/O and fault: {} runs ({}), {} faults fired, {:.2} s{}\n",
            self.recoveries,
            self.runs,
            by_kind.join(", "),
            self.injected,
            self.elapsed_sec,
            if self.capped { " (capped by --max-fault-runs)" } else { "" }
        ));
        let workload = &self.workload;
        out.push_str(&format!(
            "  faults in the workload itself: {} runs, one I/O failing in each, {} faults fired, {:.2} s{}\n",
            workload.runs,
            workload.injected,
            workload.elapsed_sec,
            if workload.capped { " (capped by --max-fault-runs)" } else { "" }
        ));
    }
}

/// The outcome of one exploration.
#[derive(Clone, Debug, PartialEq)]
pub struct ExploreReport {
    /// The target explored.
    pub target: &'static str,
    /// The seed.
    pub seed: u64,
    /// Workload operations drawn (segsim's window declarations come on top).
    pub ops: u64,
    /// What the target states about the run (segsim: its fsync policy),
    /// as `key value`.
    pub facts: Vec<(&'static str, String)>,
    /// The simulated disk's sector size.
    pub sector_bytes: u64,
    /// I/O operations in the recording run.
    pub recorded_ios: u64,
    /// The workload's crashes (depth 1).
    pub counts: Counts,
    /// How many states failed (first occurrences of each image in each
    /// context).
    pub failures_total: u64,
    /// The first [`MAX_FAILURES_KEPT`] of them, in crash-index order.
    pub failures: Vec<ExploreFailure>,
    /// With `--depth 2`: what the second crashes added.
    pub depth2: Option<Depth2Report>,
    /// With `--faults`: what the faulted recoveries added.
    pub faults: Option<FaultsReport>,
    /// `--damage`: what it damaged and recovered.
    pub damage: Option<DamageReport>,
    /// What the workload reached of each phase and operation the target
    /// declares (`reach.rs`), in the target's order.
    pub reached: Vec<Reached>,
    /// One line for each of them never reached (or reached with nothing
    /// to crash at), saying what to change; not failures.
    pub warnings: Vec<String>,
    /// The `--complete-up-to` in force (`u64::MAX`: `--exhaustive`).
    pub complete_up_to: u64,
}

/// The command that explores exactly `(io_index, state)` of `target`'s
/// `seed` again (or, with neither, the whole seed).
pub(super) fn repro<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    options: &ExploreOptions,
    io_index: Option<u64>,
    state: Option<usize>,
    then: Option<(u64, usize)>,
) -> String {
    let mut extra = String::new();
    // The state numbering depends on the subset bound, and past families
    // 1 to 4 on the completeness bound.
    if options.max_dir_subsets != DEFAULT_MAX_DIR_SUBSETS {
        extra.push_str(&format!(" --max-dir-subsets {}", options.max_dir_subsets));
    }
    match options.complete_up_to {
        DEFAULT_COMPLETE_UP_TO => {}
        u64::MAX => extra.push_str(" --exhaustive"),
        bound => extra.push_str(&format!(" --complete-up-to {bound}")),
    }
    if let Some(io_index) = io_index {
        extra.push_str(&format!(" --only-io {io_index}"));
    }
    if let Some(state) = state {
        extra.push_str(&format!(" --only-state {state}"));
    }
    // `--then-io` implies depth 2.
    if let Some((then_io, then_state)) = then {
        extra.push_str(&format!(" --then-io {then_io} --then-state {then_state}"));
    }
    target.explore_repro(seed, ops, &extra)
}

impl ExploreReport {
    /// An empty report of `target`'s `seed`, `ops` operations.
    pub(super) fn new<T: Target>(target: &T, seed: u64, ops: u64) -> Self {
        ExploreReport {
            target: target.name(),
            seed,
            ops,
            facts: target.explore_facts(seed),
            sector_bytes: target.sector_bytes(seed),
            recorded_ios: 0,
            counts: Counts::default(),
            failures_total: 0,
            failures: Vec::new(),
            depth2: None,
            faults: None,
            damage: None,
            reached: Vec::new(),
            warnings: Vec::new(),
            complete_up_to: super::DEFAULT_COMPLETE_UP_TO,
        }
    }

    pub(super) fn add_failures(&mut self, failures: Vec<ExploreFailure>) {
        self.failures_total += failures.len() as u64;
        let room = MAX_FAILURES_KEPT.saturating_sub(self.failures.len());
        self.failures.extend(failures.into_iter().take(room));
    }

    /// The same report with every timing zeroed, for comparisons.
    pub fn without_timings(&self) -> Self {
        let depth2 = self
            .depth2
            .as_ref()
            .map(|depth2| Depth2Report { counts: depth2.counts.without_timings(), ..depth2.clone() });
        let faults = self.faults.as_ref().map(|faults| FaultsReport {
            elapsed_sec: 0.0,
            workload: WorkloadFaults { elapsed_sec: 0.0, ..faults.workload.clone() },
            ..faults.clone()
        });
        let damage = self.damage.as_ref().map(|damage| DamageReport { elapsed_sec: 0.0, ..damage.clone() });
        ExploreReport { counts: self.counts.without_timings(), depth2, faults, damage, ..self.clone() }
    }

    /// The human report.
    pub fn to_text(&self) -> String {
        let facts: String = self.facts.iter().map(|(key, value)| format!(", {key} {value}")).collect();
        let mut out = format!(
            "explore {}: seed {} ({} ops{facts}, {}-byte sectors): {} I/Os recorded; {}\n",
            self.target,
            self.seed,
            self.ops,
            self.sector_bytes,
            self.recorded_ios,
            self.coverage_words()
        );
        self.depths_text(&mut out);
        if let Some(faults) = &self.faults {
            faults.text(&mut out);
        }
        if let Some(damage) = &self.damage {
            damage.text(&mut out);
        }
        self.reached_text(&mut out);
        if self.failures_total == 0 {
            out.push_str("  no failure\n");
            return out;
        }
        out.push_str(&format!("  {} FAILURES", self.failures_total));
        if self.failures_total > self.failures.len() as u64 {
            out.push_str(&format!(" (the first {} shown)", self.failures.len()));
        }
        out.push('\n');
        // The first failure of each check in full, the next few a line
        // each: one lead per kind of failure is what a person reads.
        let mut shown_in_full = Vec::new();
        for (n, failure) in self.failures.iter().enumerate() {
            let at = failure.where_text();
            if !shown_in_full.contains(&failure.check) {
                shown_in_full.push(failure.check);
                out.push_str(&format!(
                    "  [{at}] check '{}' during `{}`\n    state: {}\n    {}\n    repro: {}\n",
                    failure.check,
                    failure.op,
                    failure.description,
                    failure.detail.trim_end().replace('\n', "\n    "),
                    failure.repro
                ));
            } else if n < 10 {
                out.push_str(&format!("  [{at}] check '{}': {}\n", failure.check, failure.description));
            }
        }
        out
    }

    /// What the workload reached of what the target declares (nothing for
    /// a target that declares none), and the warnings: the workload's
    /// (`reach.rs`) and `--damage`'s (`damage_reach.rs`).
    fn reached_text(&self, out: &mut String) {
        if !self.reached.is_empty() {
            out.push_str("  the workload reached (declared phases and operations; crash states at depth 1):\n");
        }
        for reached in &self.reached {
            out.push_str(&reached.text());
        }
        for warning in &self.warnings {
            out.push_str(&format!("  {warning}\n"));
        }
    }

    /// Complete or sampled, and how much, at depth 1 and depth 2 (the
    /// first line's end).
    fn coverage_words(&self) -> String {
        let mut words = self.counts.coverage.line(self.complete_up_to);
        if let Some(depth2) = self.depth2.as_ref().filter(|d| !d.counts.coverage.is_complete()) {
            let c = &depth2.counts.coverage;
            words.push_str(&format!(
                "; depth 2 SAMPLED at {} of {} crash indices ({} of {}{} states there)",
                c.indices - c.complete_indices,
                c.indices,
                c.sampled_enumerated,
                if c.sampled_exact { "" } else { "at most " },
                c.sampled_allowed
            ));
        }
        words
    }

    /// The counts of depth 1 and, if explored, depth 2.
    fn depths_text(&self, out: &mut String) {
        let c = &self.counts;
        out.push_str(&format!(
            "  {} crash indices, {} crash states, {} distinct recovered, {} checks{}\n",
            c.io_indices,
            c.states,
            c.distinct_states,
            c.checks,
            if c.capped { " (capped by --max-states)" } else { "" }
        ));
        out.push_str(&c.rate_line("  "));
        out.push_str(&c.coverage.sampled_text());
        if let Some(examined) = &c.examined {
            out.push_str(&format!("  state examined: {examined}\n"));
        }
        let Some(depth2) = &self.depth2 else { return };
        let c = &depth2.counts;
        out.push_str(&format!(
            "  depth 2: {} recoveries crashed again: {} crash indices, {} crash states, {} newly recovered, {} new \
             checks{}\n",
            depth2.recoveries_recorded,
            c.io_indices,
            c.states,
            c.distinct_states,
            c.checks,
            if c.capped { " (capped by --max-depth2-states)" } else { "" }
        ));
        out.push_str(&c.rate_line("  depth 2: "));
        if let Some(examined) = &c.examined {
            out.push_str(&format!("  depth-2 state examined: {examined}\n"));
        }
    }

    /// The machine report: the counts, the timings, the target and its
    /// facts (segsim: `fsync`), and the failures kept.
    pub fn to_json(&self) -> Value {
        let failures: Vec<Value> = self.failures.iter().map(ExploreFailure::to_json).collect();
        let mut value = self.counts.to_json();
        let fields = json!({
            "target": self.target,
            "seed": self.seed,
            "ops": self.ops,
            "sector_bytes": self.sector_bytes,
            "recorded_ios": self.recorded_ios,
            "failures_total": self.failures_total,
            "failures": failures,
            "depth": if self.depth2.is_some() { 2 } else { 1 },
            "complete_up_to": self.complete_up_to,
        });
        for (key, field) in fields.as_object().expect("an object").clone() {
            value[key] = field;
        }
        if let Some(depth2) = &self.depth2 {
            let mut counts = depth2.counts.to_json();
            counts["recoveries_recorded"] = json!(depth2.recoveries_recorded);
            value["depth2"] = counts;
        }
        if let Some(faults) = &self.faults {
            value["faults"] = faults.to_json();
        }
        if let Some(damage) = &self.damage {
            value["damage"] = damage.to_json();
        }
        value["reached"] = self.reached.iter().map(Reached::to_json).collect();
        value["warnings"] = json!(self.warnings);
        for (key, fact) in &self.facts {
            value[*key] = Value::from(fact.as_str());
        }
        value
    }
}

impl ExploreFailure {
    /// One failure in the machine report.
    fn to_json(&self) -> Value {
        json!({
            "io_index": self.io_index,
            "state": self.state,
            "then_io": self.then.map(|(io, _)| io),
            "then_state": self.then.map(|(_, state)| state),
            "fault_io": self.fault_io,
            "fault_kind": self.fault_kind.map(ArmedFault::name),
            "damage_site": self.damage_site,
            "op": self.op,
            "description": self.description,
            "check": self.check.as_str(),
            "detail": self.detail,
            "repro": self.repro,
        })
    }
}

impl FaultsReport {
    /// The machine report's `faults` object.
    fn to_json(&self) -> Value {
        json!({
            "recoveries": self.recoveries,
            "runs": self.runs,
            "runs_by_kind": self.runs_by_kind,
            "workload": {
                "runs": self.workload.runs,
                "injected": self.workload.injected,
                "capped": self.workload.capped,
                "elapsed_sec": self.workload.elapsed_sec,
            },
            "injected": self.injected,
            "capped": self.capped,
            "elapsed_sec": self.elapsed_sec,
        })
    }
}

impl DamageReport {
    /// The machine report's `damage` object.
    fn to_json(&self) -> Value {
        json!({
            "images": self.images,
            "sites": self.sites,
            "recoveries": self.recoveries,
            "refused": self.refused,
            "opened": self.opened,
            "capped": self.capped,
            "reach": self.reach.iter().map(DamageReach::to_json).collect::<Vec<_>>(),
            "recoveries_per_sec": self.recoveries_per_sec(),
            "elapsed_sec": self.elapsed_sec,
        })
    }
}
