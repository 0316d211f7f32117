//! The counters of a run, written once: one seed's outcome holds them
//! (`outcome.rs`) and the summary of many seeds sums them (`summary.rs`)
//! with [`Counters::add`]. A new counter is one entry of `counters!`
//! below, its doc and its name: its field, its sum and its name in the
//! JSON summary (read back too) all come from that entry.
//!
//! Keys of the maps are `Cow<'static, str>`: a run counts under names
//! known when it is compiled (no allocation per crash), a summary read
//! back from JSON under the names it found.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::trace::FaultKind;

/// Declares [`Counters`] with its plain `u64` counters, each with its doc,
/// and the list of their names ([`Counters::NAMES`], the JSON summary's
/// field names) and values in declaration order.
macro_rules! counters {
    ($($(#[doc = $doc:literal])+ $name:ident,)+) => {
        /// What a run counts: one seed's counters, or the sums of many.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct Counters {
            $($(#[doc = $doc])+ pub $name: u64,)+
            /// Faults injected, by kind.
            pub faults: BTreeMap<FaultKind, u64>,
            /// Crashes by where they landed (`seal`, `frame`, `commit`,
            /// `rewrite`, `flushall`, `compact`, `boundary`, `in_op`,
            /// `kill_in_op`, `recovery`, `remount`, ...).
            pub crash_gaps: BTreeMap<Cow<'static, str>, u64>,
            /// Recoveries after damage the disk announced (and the engine
            /// promises to detect), by what came of them: `as-allowed`
            /// (content the rule allows without the damage: it missed
            /// everything in use), `refused`, `rolled-back` (an older
            /// commit, not past a durable one), `silent-rollback` (past a
            /// durable one). A kit target's breakdown.
            pub after_damage: BTreeMap<Cow<'static, str>, u64>,
        }

        impl Counters {
            /// The plain counters' names, in declaration order: the JSON
            /// summary's field names.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),+];

            /// The plain counters' values, in the order of [`Counters::NAMES`].
            pub fn values(&self) -> impl Iterator<Item = u64> {
                [$(self.$name),+].into_iter()
            }

            /// The plain counter called `name`, if there is one.
            pub fn named_mut(&mut self, name: &str) -> Option<&mut u64> {
                match name {
                    $(stringify!($name) => Some(&mut self.$name),)+
                    _ => None,
                }
            }

            /// Add `other`'s plain counters to ours.
            fn add_values(&mut self, other: &Counters) {
                $(self.$name += other.$name;)+
            }
        }
    };
}

counters! {
    /// Workload operations run.
    ops,
    /// Power losses.
    crashes,
    /// Store reopens (after crashes and clean restarts), all causes.
    restarts,
    /// Of them, after a process kill (memory lost, page cache kept).
    kills,
    /// Of them, after a clean close (a restart operation).
    clean_restarts,
    /// Of them, after an error left the store poisoned or the engine
    /// failed under an injected fault (a process restart).
    error_reopens,
    /// Recoveries whose refusal was expected (media corruption) and
    /// accepted.
    refusals_accepted,
    /// Bad input the store refused as the model predicted (wrong arity, a
    /// misspelled integer, unreadable `SET` options, a `WINDOW` that
    /// declares nothing, the wrong type, an oversized write), changing
    /// nothing.
    bad_inputs_refused,
    /// Recoveries accepted after announced damage that went back past a
    /// durable commit: acknowledged durable data silently lost (a kit
    /// engine that detects damage and falls back to an older commit, as
    /// redb's one-phase commit may).
    silent_rollbacks,
    /// Recoveries (or refusals) no promise covered, after a commit at a
    /// level that promises nothing: measured, never failed.
    unpromised,
    /// Writes (segsim) or commits (kit) whose outcome was left in doubt:
    /// an error returned, or a crash or a kill cut them short
    /// (ARCHITECTURE.md, "Outcomes in doubt"). Counted, never failed.
    in_doubt,
    /// Of those, the ones a later recovery showed applied after an earlier
    /// recovery had not: allowed while in doubt, counted apart.
    came_back,
    /// Writer operations of a kit engine whose writer waits for readers
    /// (`Readers::writer_waits`) refused as busy: the readers were ended
    /// and the operation retried. Counted, never failed.
    busy_waits,
    /// Readers' begins that engine refused as busy while its writer held
    /// its write lock (the reader stayed closed). Counted, never failed.
    readers_refused,
    /// Readers' steps run while the writer's operation was suspended at
    /// one of its I/Os (`--interleave`), each judged.
    interleaved_steps,
    /// Of them, a reader's attempt to write (granted with the writer idle,
    /// or refused as busy).
    write_attempts,
    /// Transactions of a second writer (`--clients N`, a seed that draws
    /// one: `second_writer.rs`) that committed, between the writer's
    /// operations or inside one.
    second_writer_commits,
    /// Of its transactions, the ones the engine refused as busy (at their
    /// begin or their commit), where its spec says it may.
    second_writer_refused,
    /// WAL checkpoints (`PRAGMA wal_checkpoint`) run by a client other
    /// than the writer, between the writer's operations or inside one.
    client_checkpoints,
    /// Connections of readers closed while others stay open (the pool
    /// closing one), between the writer's operations or inside one.
    client_closes,
    /// Persistence hazards a kit target's engine left that it documents
    /// (`Spec::hazards`: reported, not failed; an undeclared one fails the
    /// run, as every one does for the segsim target, check `hazard`).
    hazards,
    /// Operations of a kit engine refused as poisoned by a fault injected
    /// earlier, in an operation that returned `Ok` (work of its own no
    /// caller heard): accepted where its spec documents it
    /// (`Spec::poisoned_after_fault`), and the engine reopened.
    poisoned,
    /// Read-only inspections of crashed directories (segsim's random
    /// mode: a quarter of its recoveries).
    inspections,
}

impl Counters {
    /// Add `other`'s counts to ours (a seed into a summary, or two
    /// summaries' totals).
    pub fn add(&mut self, other: &Counters) {
        self.add_values(other);
        for (kind, count) in &other.faults {
            *self.faults.entry(*kind).or_default() += count;
        }
        for (gap, count) in &other.crash_gaps {
            *self.crash_gaps.entry(gap.clone()).or_default() += count;
        }
        for (outcome, count) in &other.after_damage {
            *self.after_damage.entry(outcome.clone()).or_default() += count;
        }
    }

    /// Count a crash that landed in `gap`.
    pub fn count_crash_gap(&mut self, gap: &'static str) {
        *self.crash_gaps.entry(Cow::Borrowed(gap)).or_default() += 1;
    }

    /// Count a recovery after announced damage that came to `outcome`.
    pub fn count_after_damage(&mut self, outcome: &'static str) {
        *self.after_damage.entry(Cow::Borrowed(outcome)).or_default() += 1;
    }

    /// Whether every reopen had exactly one cause: a power loss, a process
    /// kill, a clean restart or an error. Holds for every run that passed,
    /// of every target (and so for their sums): the summary's "restarts by
    /// cause" adds up.
    pub fn reopens_add_up(&self) -> bool {
        self.restarts == self.crashes + self.kills + self.clean_restarts + self.error_reopens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plain_counter_has_a_name_and_adds_up() {
        let mut one = Counters::default();
        for (at, name) in Counters::NAMES.iter().enumerate() {
            *one.named_mut(name).expect("a declared name") = at as u64 + 1;
        }
        assert_eq!(one.named_mut("seeds"), None);
        let mut sum = one.clone();
        sum.add(&one);
        let doubled: Vec<u64> = one.values().map(|n| 2 * n).collect();
        assert_eq!(sum.values().collect::<Vec<_>>(), doubled);
        assert_eq!(Counters::NAMES.len(), one.values().count());
    }

    #[test]
    fn maps_add_by_key() {
        let mut one = Counters::default();
        one.count_crash_gap("seal");
        one.count_crash_gap("seal");
        one.count_after_damage("refused");
        one.faults.insert(FaultKind::ALL[0], 3);
        let mut sum = Counters::default();
        sum.crash_gaps.insert(Cow::Owned("seal".to_string()), 1);
        sum.add(&one);
        assert_eq!(sum.crash_gaps.get("seal"), Some(&3));
        assert_eq!(sum.after_damage.get("refused"), Some(&1));
        assert_eq!(sum.faults.get(&FaultKind::ALL[0]), Some(&3));
    }
}
