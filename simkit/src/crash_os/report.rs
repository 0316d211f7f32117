//! What a `crash-os` run counted and how it ended, and the text it prints:
//! cycles, operations acknowledged, commits by level, kills by moment,
//! commits in flight at a kill resolved each way, and the failure with its
//! seed, cycle and rerun line.

use std::fmt;
use std::path::PathBuf;

use super::KillRule;
use simulator::failure::Check;

/// What the run counted (all measured, none required).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Operations the child acknowledged and the parent checked.
    pub acknowledged: u64,
    /// Acknowledged commits per level, in the adapter's level order.
    pub commits: Vec<(&'static str, u64)>,
    /// Acknowledged clean close-and-reopens (`RESTART`), each checked whole.
    pub restarts: u64,
    /// Replies held to the model (gets, scans, and the values puts and
    /// deletes replaced where the engine says).
    pub replies_checked: u64,
    /// Kills after the engine opened.
    pub kills_in_workload: u64,
    /// Kills before the child said it had opened the engine (while the
    /// process started, or the engine opened and recovered).
    pub kills_before_ready: u64,
    /// Commits in flight at a kill that changed the content and showed
    /// after it: they landed.
    pub in_flight_landed: u64,
    /// Commits in flight at a kill that changed the content and did not
    /// show: they did not land (yet; they stay in doubt until settled).
    pub in_flight_lost: u64,
    /// Commits in flight at a kill that would have changed nothing.
    pub in_flight_unchanged: u64,
    /// Recoveries that showed a commit in doubt an earlier one had not.
    pub came_back: u64,
    /// Recoveries held to no rule: a commit at a level that promises
    /// nothing, so configured, had been acknowledged (or the engine was
    /// so configured at every level), as SQLite with `synchronous=OFF`.
    pub unpromised: u64,
}

/// How a run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashOsFailure {
    /// The cycle it failed in (`None`: before the first).
    pub cycle: Option<u64>,
    /// The check that failed; `None` for a harness error (the child could
    /// not be started, or said something unreadable).
    pub check: Option<Check>,
    /// What happened, with the kill's moment.
    pub detail: String,
}

/// A whole run.
#[derive(Clone, Debug)]
pub struct CrashOsReport {
    /// The engine's name.
    pub target: &'static str,
    /// The seed.
    pub seed: u64,
    /// Cycles asked for.
    pub cycles: u64,
    /// Cycles whose recovery passed.
    pub cycles_passed: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The directory the engine lived in.
    pub dir: PathBuf,
    /// Whether the directory is left behind (a failure's, or one given by `--dir`).
    pub dir_kept: bool,
    /// The rule a kill's recovery was held to.
    pub kill_rule: KillRule,
    /// The counts.
    pub counts: Counts,
    /// The failure, if any.
    pub failure: Option<CrashOsFailure>,
    /// The command line that reruns this schedule.
    pub rerun: String,
}

impl CrashOsReport {
    /// Whether the run failed.
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }
}

impl fmt::Display for CrashOsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(
            f,
            "crash-os {}: seed {}, {} of {} kill/restart cycles passed on the real file system in {:.1} s ({})",
            self.target,
            self.seed,
            self.cycles_passed,
            self.cycles,
            self.seconds,
            self.dir.display()
        )?;
        let levels: Vec<String> = c.commits.iter().map(|(name, n)| format!("{name} {n}")).collect();
        let commits: u64 = c.commits.iter().map(|(_, n)| n).sum();
        writeln!(
            f,
            "  operations acknowledged: {}; commits: {commits} ({}); clean close/reopens: {}; replies checked: {}",
            c.acknowledged,
            levels.join(", "),
            c.restarts,
            c.replies_checked
        )?;
        writeln!(
            f,
            "  kills: {} in the workload, {} before the engine had opened",
            c.kills_in_workload, c.kills_before_ready
        )?;
        writeln!(
            f,
            "  commits in flight at a kill: {} landed, {} did not, {} would have changed nothing; came back later: {}",
            c.in_flight_landed, c.in_flight_lost, c.in_flight_unchanged, c.came_back
        )?;
        if c.unpromised > 0 {
            writeln!(
                f,
                "  recoveries held to no rule: {} (a level that promises nothing, so configured, had been used)",
                c.unpromised
            )?;
        }
        writeln!(f, "  kill rule: {}", self.kill_rule.describe())?;
        self.fmt_verdict(f)
    }
}

impl CrashOsReport {
    fn fmt_verdict(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            None => writeln!(f, "  no failure")?,
            Some(failure) => {
                let at =
                    failure.cycle.map_or_else(|| "before the first cycle".to_string(), |c| format!("at cycle {c}"));
                match failure.check {
                    Some(check) => {
                        writeln!(f, "  FAILED {at} (seed {}): check '{check}': {}", self.seed, failure.detail)?
                    }
                    None => writeln!(f, "  HARNESS ERROR {at} (seed {}): {}", self.seed, failure.detail)?,
                }
                writeln!(f, "  rerun: {}", self.rerun)?;
            }
        }
        if self.dir_kept {
            writeln!(f, "  the engine's directory is left for inspection: {}", self.dir.display())?;
        }
        writeln!(
            f,
            "  (kill moments come from the seed; what the child had done by each depends on the machine: not \
             reproducible bit for bit)"
        )
    }
}
