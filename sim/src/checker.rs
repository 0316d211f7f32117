//! The durability checker: the reference model plus the rule that says
//! which recovered states are allowed.
//!
//! The model is updated only by acknowledged writes. After a crash the
//! recovered logical content must equal the model after some prefix `p` of
//! the writes acknowledged since the last recovery, with `D <= p <= A`:
//! `A` is every acknowledged write, `D` those known durable under the
//! fsync policy (`always`: all; `everysec`: those acknowledged at least a
//! simulated second before a later successful store call; `no`: those
//! before the last successful sync, rewrite or clean close). One more state
//! is allowed: all `A` plus the single write whose outcome is unknown (in
//! flight when the power went, or failed in a way that may still have
//! reached the disk). No holes, no resurrected deletes, no reverted values.
//! The model is then reset to the recovered prefix and the run goes on.

use std::collections::BTreeMap;

use engine::aof::FsyncPolicy;
use engine::model::Model;
use engine::store::{Command, LogicalEntry, LogicalValue, Reply};

/// `everysec`: a write is due on disk this long after it was acknowledged.
pub const EVERYSEC_DUE_MS: u64 = 1_000;

/// The model and the durability bookkeeping of one run.
#[derive(Clone, Debug)]
pub struct Checker {
    fsync: FsyncPolicy,
    /// The state at the last recovery (or the start).
    base: Model,
    /// Acknowledged writes since `base`, with the clock at each.
    history: Vec<(u64, Command)>,
    /// `history[..durable]` is known durable.
    durable: usize,
    /// A write whose outcome is unknown (at most one: after it the store
    /// is either gone or poisoned).
    uncertain: Option<(u64, Command)>,
    /// `base` + `history`: what reads must see now.
    current: Model,
}

/// The recovered state matched nothing allowed.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// Which rule failed and how, for a person.
    pub detail: String,
}

impl Checker {
    /// A checker for a store that starts empty.
    pub fn new(fsync: FsyncPolicy) -> Self {
        Checker { fsync, base: Model::new(), history: Vec::new(), durable: 0, uncertain: None, current: Model::new() }
    }

    /// What the model answers for a read (it does not change the model).
    pub fn read(&mut self, command: &Command, now_ms: u64) -> engine::Result<Reply> {
        debug_assert!(!command.is_write());
        self.current.execute(command, now_ms)
    }

    /// The store acknowledged `command`: apply it to the model and return
    /// the model's reply (which the store's must equal).
    pub fn acknowledged(&mut self, command: &Command, now_ms: u64) -> engine::Result<Reply> {
        let reply = self.current.execute(command, now_ms)?;
        self.history.push((now_ms, command.clone()));
        if self.fsync == FsyncPolicy::Always {
            self.durable = self.history.len();
        }
        Ok(reply)
    }

    /// The store refused a write the model accepts or vice versa is a
    /// failure the caller reports; this asks the model alone.
    pub fn model_would_refuse(&self, command: &Command, now_ms: u64) -> bool {
        let mut probe = self.current.clone();
        probe.execute(command, now_ms).is_err()
    }

    /// `command` may or may not have reached the disk.
    pub fn uncertain(&mut self, command: &Command, now_ms: u64) {
        self.uncertain = Some((now_ms, command.clone()));
    }

    /// Everything acknowledged so far is durable (a successful sync,
    /// rewrite or clean close).
    pub fn all_durable(&mut self) {
        self.durable = self.history.len();
    }

    /// A store call succeeded at `now_ms`: under `everysec`, writes a
    /// second older are now due on disk.
    pub fn call_succeeded(&mut self, now_ms: u64) {
        if self.fsync != FsyncPolicy::EverySec {
            return;
        }
        while self.durable < self.history.len() && self.history[self.durable].0 + EVERYSEC_DUE_MS <= now_ms {
            self.durable += 1;
        }
    }

    /// Writes acknowledged since the last recovery, and how many are
    /// known durable.
    pub fn counts(&self) -> (usize, usize) {
        (self.history.len(), self.durable)
    }

    /// The model's content at `now_ms`.
    pub fn expected(&self, now_ms: u64) -> BTreeMap<Vec<u8>, LogicalEntry> {
        self.current.dump(now_ms)
    }

    /// Whether `dump` is the model's content at `now_ms`.
    pub fn matches(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> bool {
        self.current.same_as(dump, now_ms)
    }

    /// Whether a recovered `dump` (taken at `now_ms`) is allowed, leaving
    /// the checker as it is: the prefix length it matched, or why not.
    /// [`Checker::recovered`] is this plus the reset; exhaustive
    /// exploration asks it of many dumps in one context.
    pub fn allows(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Result<usize, Mismatch> {
        self.find_prefix(dump, now_ms).map(|(p, _)| p)
    }

    /// The rule itself (see the module doc): the first allowed prefix `p`
    /// whose model equals `dump`, and that model.
    fn find_prefix(&self, dump: &BTreeMap<Vec<u8>, LogicalEntry>, now_ms: u64) -> Result<(usize, Model), Mismatch> {
        let lowest = self.durable;
        let mut state = self.base.clone();
        let mut matched = None;
        for p in 0..=self.history.len() {
            if p >= lowest && state.same_as(dump, now_ms) {
                matched = Some(p);
                break;
            }
            if let Some((at_ms, command)) = self.history.get(p) {
                state.execute(command, *at_ms).expect("an acknowledged write applies to the model");
            }
        }
        if matched.is_none() {
            if let Some((at_ms, command)) = &self.uncertain {
                let mut with_uncertain = state.clone();
                if with_uncertain.execute(command, *at_ms).is_ok() && with_uncertain.same_as(dump, now_ms) {
                    state = with_uncertain;
                    matched = Some(self.history.len() + 1);
                }
            }
        }
        let Some(p) = matched else {
            let (acked, durable) = self.counts();
            let detail = format!(
                "recovered state equals no allowed prefix: {acked} writes acknowledged, {durable} known durable \
                 (fsync {}), in-flight write: {}\n{}",
                self.fsync.name(),
                self.uncertain.as_ref().map_or("none".to_string(), |(_, c)| format!("{c:?}")),
                diff(&self.current.dump(now_ms), dump)
            );
            return Err(Mismatch { detail });
        };
        Ok((p, state))
    }

    /// Check a recovered `dump` (taken at `now_ms`) and, if it is allowed,
    /// reset the model to it; returns the prefix length it matched.
    ///
    /// After a power loss what came back is what the disk held, so it
    /// becomes the new durable base. After a process restart the page
    /// cache survived: the store may have read back writes that were never
    /// fsynced, and they are no more durable for having been read — the
    /// history is cut to the matched prefix but keeps its durable mark.
    pub fn recovered(
        &mut self,
        dump: &BTreeMap<Vec<u8>, LogicalEntry>,
        now_ms: u64,
        power_lost: bool,
    ) -> Result<usize, Mismatch> {
        let (p, state) = self.find_prefix(dump, now_ms)?;
        // The search stopped at p, so `state` is the model after p writes.
        debug_assert_eq!(state.dump(now_ms), *dump);
        if power_lost {
            self.base = state.clone();
            self.history.clear();
            self.durable = 0;
        } else {
            if p > self.history.len() {
                let uncertain = self.uncertain.clone().expect("p past the history means the uncertain write");
                self.history.push(uncertain);
            }
            self.history.truncate(p);
            self.durable = self.durable.min(p);
        }
        self.current = state;
        self.uncertain = None;
        Ok(p)
    }

    /// Continue from `dump` as the new truth (a loss the store reported).
    pub fn rebase(&mut self, dump: BTreeMap<Vec<u8>, LogicalEntry>) {
        let fsync = self.fsync;
        *self = Checker::new(fsync);
        self.base = Model::from_dump(dump);
        self.current = self.base.clone();
    }

    /// Forget everything: the store was wiped (after an accepted refusal).
    pub fn reset_empty(&mut self) {
        *self = Checker::new(self.fsync);
    }
}

fn show_entry(entry: Option<&LogicalEntry>) -> String {
    let Some(entry) = entry else { return "(absent)".to_string() };
    let ttl = entry.expire_at_ms.map_or(String::new(), |at| format!(" ttl@{at}"));
    match &entry.value {
        LogicalValue::Str(v) => format!("{:?}{ttl}", String::from_utf8_lossy(v)),
        LogicalValue::Hash(fields) => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(f, (v, at))| {
                    let field_ttl = at.map_or(String::new(), |at| format!(" ttl@{at}"));
                    format!("{}={:?}{field_ttl}", String::from_utf8_lossy(f), String::from_utf8_lossy(v))
                })
                .collect();
            format!("{{{}}}{ttl}", inner.join(", "))
        }
    }
}

/// A readable difference between the expected (all acknowledged) and the
/// recovered content: at most 12 keys.
pub fn diff(expected: &BTreeMap<Vec<u8>, LogicalEntry>, got: &BTreeMap<Vec<u8>, LogicalEntry>) -> String {
    let mut keys: Vec<&Vec<u8>> = expected.keys().chain(got.keys()).collect();
    keys.sort();
    keys.dedup();
    let differing: Vec<&Vec<u8>> = keys.into_iter().filter(|k| expected.get(*k) != got.get(*k)).collect();
    let mut out = format!("  {} keys differ from the state after every acknowledged write:\n", differing.len());
    for key in differing.iter().take(12) {
        out.push_str(&format!(
            "    key {:?}: expected {}, got {}\n",
            String::from_utf8_lossy(key),
            show_entry(expected.get(*key)),
            show_entry(got.get(*key))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(k: &str, v: &str) -> Command {
        Command::Set { key: k.as_bytes().to_vec(), value: v.as_bytes().to_vec() }
    }

    fn dump_of(commands: &[Command]) -> BTreeMap<Vec<u8>, LogicalEntry> {
        let mut m = Model::new();
        for c in commands {
            m.execute(c, 0).unwrap();
        }
        m.dump(0)
    }

    #[test]
    fn under_no_any_prefix_is_allowed_but_not_a_hole() {
        let mut checker = Checker::new(FsyncPolicy::No);
        let writes = [set("a", "1"), set("b", "2"), set("a", "3")];
        for w in &writes {
            checker.acknowledged(w, 0).unwrap();
        }
        let mut probe = checker.clone();
        assert_eq!(probe.recovered(&dump_of(&writes[..1]), 0, true).unwrap(), 1);
        // a=3 without b=2 is a hole: never allowed.
        let hole = dump_of(&[set("a", "3")]);
        assert!(checker.clone().recovered(&hole, 0, true).is_err());
        // A reverted value after a sync is not allowed either.
        checker.all_durable();
        let err = checker.clone().recovered(&dump_of(&writes[..2]), 0, true).unwrap_err();
        assert!(err.detail.contains("key \"a\""), "{}", err.detail);
    }

    #[test]
    fn the_uncertain_write_may_or_may_not_be_there() {
        let mut checker = Checker::new(FsyncPolicy::Always);
        checker.acknowledged(&set("a", "1"), 0).unwrap();
        checker.uncertain(&set("b", "2"), 0);
        assert!(checker.clone().recovered(&dump_of(&[set("a", "1")]), 0, true).is_ok());
        assert!(checker.clone().recovered(&dump_of(&[set("a", "1"), set("b", "2")]), 0, true).is_ok());
        assert!(checker.clone().recovered(&dump_of(&[]), 0, true).is_err(), "an acknowledged write under always");
    }

    #[test]
    fn allows_is_the_rule_of_recovered_without_the_reset() {
        let mut checker = Checker::new(FsyncPolicy::No);
        let writes = [set("a", "1"), set("b", "2")];
        for w in &writes {
            checker.acknowledged(w, 0).unwrap();
        }
        checker.all_durable();
        checker.uncertain(&set("c", "3"), 0);
        let before = format!("{checker:?}");
        let with_c = dump_of(&[set("a", "1"), set("b", "2"), set("c", "3")]);
        for dump in [dump_of(&writes[..1]), dump_of(&writes), with_c] {
            let allowed = checker.allows(&dump, 0).map_err(|m| m.detail);
            assert_eq!(allowed, checker.clone().recovered(&dump, 0, true).map_err(|m| m.detail));
            assert_eq!(format!("{checker:?}"), before, "allows changes nothing");
        }
        assert_eq!(checker.allows(&dump_of(&writes), 0).unwrap(), 2);
        assert!(checker.allows(&dump_of(&writes[..1]), 0).is_err(), "b was synced");
    }

    #[test]
    fn everysec_makes_writes_due_a_second_later() {
        let mut checker = Checker::new(FsyncPolicy::EverySec);
        checker.acknowledged(&set("a", "1"), 100).unwrap();
        checker.acknowledged(&set("b", "2"), 900).unwrap();
        checker.call_succeeded(1_099);
        assert_eq!(checker.counts(), (2, 0));
        checker.call_succeeded(1_100);
        assert_eq!(checker.counts(), (2, 1));
        assert!(checker.clone().recovered(&dump_of(&[]), 2_000, true).is_err());
    }
}
