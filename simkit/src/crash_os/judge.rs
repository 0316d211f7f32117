//! The parent's side of the check: the kit's model (`model.rs`) fed with
//! what the child acknowledged, each answer held to it, the operation in
//! flight at the kill marked as what it may have published, and the
//! content the parent reopened held to the rule for a process kill.
//!
//! Each acknowledged operation moves the model exactly as the kit's run
//! loop moves it (`run.rs`: `check_reply`, `commit_concluded`, `maintain`,
//! `restart`), so the same declarations mean the same thing on the real
//! disk as on the simulated one.

use std::sync::Arc;

use super::super::config::KitConfig;
use super::super::model::{diff, show_value, Accepted, Model, Pending, State};
use super::super::readers::OpenReaders;
use super::super::workload::{KitOp, PlannedKitOp, ReaderStep};
use super::super::{Adapter, Promise};
use super::line::Answer;
use super::report::Counts;
use super::KillRule;
use simulator::failure::Check;

/// A check that failed: which, and what happened.
pub(super) type Verdict = Result<(), (Check, String)>;

/// The model and the counts of one run.
pub(super) struct Judge<'a, A: Adapter> {
    config: &'a KitConfig<A::Config>,
    model: Model,
    /// The commit in flight at the kill, if one was: the state it would
    /// publish and whether that changes the content.
    in_flight_commit: Option<(Arc<State>, bool)>,
    /// The child's readers with a transaction open (`--clients`), each
    /// with the state it must see; a kill ends them all.
    readers: OpenReaders,
    /// What was counted.
    pub counts: Counts,
}

impl<'a, A: Adapter> Judge<'a, A> {
    /// A fresh database's judge.
    pub fn new(config: &'a KitConfig<A::Config>) -> Self {
        let commits = config.spec.levels.iter().map(|level| (level.name, 0)).collect();
        Judge {
            config,
            model: Model::new(config.spec.tables.len()),
            in_flight_commit: None,
            readers: OpenReaders::default(),
            counts: Counts { commits, ..Counts::default() },
        }
    }

    /// An engine that promises nothing at any level may write unsynced
    /// before any commit returns (as the kit's loop has it).
    fn note_writes(&mut self, op: &KitOp) {
        if op.may_write() && self.config.spec.promises_nothing() {
            self.model.unpromise();
        }
    }

    /// The child acknowledged `planned` with `answer`: hold the answer to
    /// the model and move the model on.
    pub fn acknowledged(&mut self, planned: &PlannedKitOp, answer: &Answer) -> Verdict {
        self.counts.acknowledged += 1;
        self.note_writes(&planned.op);
        match &planned.op {
            KitOp::Put { table, key, value } => {
                let replaced = self.model.put(table.index, key, value);
                self.expect_value(planned, "the value it replaced", replaced, answer, true)
            }
            KitOp::Delete { table, key } => {
                let removed = self.model.remove(table.index, key);
                self.expect_value(planned, "the value it removed", removed, answer, true)
            }
            KitOp::Get { table, key } => {
                let read = self.model.get(table.index, key).cloned();
                self.expect_value(planned, "the value read", read, answer, false)
            }
            KitOp::Scan { table } => self.expect_rows(planned, table.index, answer),
            KitOp::Commit { level, .. } => {
                if !self.model.changes_nothing() {
                    self.readers.writer_committed(planned.index);
                }
                self.commit_acknowledged(*level);
                expect_done(planned, answer)
            }
            KitOp::Abort => {
                self.model.abort();
                expect_done(planned, answer)
            }
            KitOp::Maintain(maintenance) => {
                if !self.config.spec.readers.is_some_and(|readers| readers.across_maintenance) {
                    self.readers.clear();
                }
                if maintenance.makes_durable {
                    self.model.abort();
                    self.model.all_durable();
                }
                expect_done(planned, answer)
            }
            KitOp::Restart => self.restart_acknowledged(planned, answer),
            KitOp::Reader { reader, step } => self.reader_acknowledged(planned, *reader, step, answer),
            KitOp::Crash => unreachable!("crash-os skips {} (workload.rs)", planned.op.tag()),
        }
    }

    /// A reader's step completed (the child carries it out as the kit's
    /// loop does, `on_disk.rs`): a read is held to the state committed
    /// when the reader began (check `isolation`), as on the simulated disk.
    fn reader_acknowledged(
        &mut self,
        planned: &PlannedKitOp,
        reader: usize,
        step: &ReaderStep,
        answer: &Answer,
    ) -> Verdict {
        let open = self.readers.is_open(reader);
        if open && matches!(step, ReaderStep::Begin | ReaderStep::End) {
            self.readers.ended(reader);
        }
        if !matches!(step, ReaderStep::End) && !self.readers.is_open(reader) {
            self.readers.begun(reader, &self.model, planned.index);
        }
        let checked = match (step, answer) {
            (ReaderStep::Begin | ReaderStep::End, Answer::Done) => return Ok(()),
            (ReaderStep::Get { table, key }, Answer::Value(got)) => {
                self.readers.check_get(reader, table.index, key, got.as_ref(), &self.model)
            }
            (ReaderStep::Scan { table }, Answer::Rows { .. }) => {
                let agrees = |rows: &super::super::Rows| Answer::of_rows(rows) == *answer;
                self.readers.check_scan_answer(reader, table.index, agrees, &answer.to_string())
            }
            (_, other) => return Err((Check::Reply, format!("{planned}: the adapter answered {other}"))),
        };
        self.counts.replies_checked += 1;
        checked.map_err(|why| (Check::Isolation, format!("{planned}: {why}")))
    }

    /// A commit at `level` returned `Ok`: the same rule as the kit's loop
    /// (`Runner::commit_concluded`): an empty durable commit of an engine
    /// that syncs nothing for one promises only `Eventual`.
    fn commit_acknowledged(&mut self, level: usize) {
        let (promise, survives_kill) = self.config.acknowledged(level, self.model.changes_nothing());
        self.model.commit_with(promise, survives_kill);
        self.counts.commits[level].1 += 1;
    }

    /// A clean close and reopen completed: the reopened content must be
    /// everything committed, exactly (the kit's audit after a restart).
    fn restart_acknowledged(&mut self, planned: &PlannedKitOp, answer: &Answer) -> Verdict {
        self.readers.clear();
        self.model.abort();
        if self.config.spec.close_makes_durable {
            self.model.all_durable();
        }
        self.counts.restarts += 1;
        let want = Answer::of_reopened(self.model.committed());
        if *answer == want {
            return Ok(());
        }
        Err((
            Check::Content,
            format!("{planned}: the engine reopened to other content than it committed ({answer}, expected {want})"),
        ))
    }

    fn expect_value(
        &mut self,
        planned: &PlannedKitOp,
        what: &str,
        want: Option<Vec<u8>>,
        answer: &Answer,
        done_allowed: bool,
    ) -> Verdict {
        match answer {
            Answer::Done if done_allowed => Ok(()),
            Answer::Value(got) if *got == want => {
                self.counts.replies_checked += 1;
                Ok(())
            }
            Answer::Value(got) => Err((
                Check::Reply,
                format!(
                    "{planned}: {what}\n    expected {}\n    got      {}",
                    show_value(want.as_ref()),
                    show_value(got.as_ref())
                ),
            )),
            other => Err((Check::Reply, format!("{planned}: the adapter answered {other}, not a value"))),
        }
    }

    fn expect_rows(&mut self, planned: &PlannedKitOp, table: usize, answer: &Answer) -> Verdict {
        let want = Answer::of_rows(&self.model.visible().tables[table]);
        if *answer == want {
            self.counts.replies_checked += 1;
            return Ok(());
        }
        let mut expected = State::empty(self.config.spec.tables.len());
        expected.tables[table] = self.model.visible().tables[table].clone();
        Err((
            Check::Reply,
            format!(
                "{planned}: the table read differs from the model ({answer}, expected {want}); the model's rows:\n{}",
                diff(&State::empty(expected.tables.len()), &expected)
            ),
        ))
    }

    /// The kill came while `planned` ran (it had begun, or was about to):
    /// mark what it may have published, as the kit's loop does.
    pub fn in_flight(&mut self, planned: &PlannedKitOp) {
        self.readers.clear();
        self.note_writes(&planned.op);
        self.in_flight_commit = None;
        match &planned.op {
            KitOp::Commit { level, .. } if self.config.promise(*level) != Promise::Volatile => {
                let target = self.model.commit_target();
                let changes = *target != *self.model.committed();
                self.in_flight_commit = Some((target.clone(), changes));
                self.model.set_pending(Pending::Commit(target));
            }
            KitOp::Restart => {
                self.model.abort();
                self.model.set_pending(Pending::PublishAll);
            }
            KitOp::Maintain(maintenance) if maintenance.makes_durable => {
                self.model.abort();
                self.model.set_pending(Pending::PublishAll);
            }
            _ => {}
        }
    }

    /// The parent reopened the killed engine to `state`: hold it to
    /// `rule`, then move the model on from it (a process restart: nothing
    /// more is durable than before).
    pub fn recovered(&mut self, state: &State, rule: KillRule) -> Verdict {
        if self.model.unpromised() {
            self.counts.unpromised += 1;
        }
        if rule == KillRule::PageCache {
            self.model.allows_after_kill(state).map_err(|why| (Check::Durability, why))?;
        }
        let accepted = self.model.recovered(state, false, false).map_err(|why| (Check::Durability, why))?;
        if accepted == Accepted::CameBack {
            self.counts.came_back += 1;
        }
        match self.in_flight_commit.take() {
            Some((_, false)) => self.counts.in_flight_unchanged += 1,
            Some((target, true)) if *target == *state => self.counts.in_flight_landed += 1,
            Some((_, true)) => self.counts.in_flight_lost += 1,
            None => {}
        }
        Ok(())
    }

    /// The engine refused to open after a kill, as an engine that promised
    /// nothing may: it starts over on a fresh database (the caller made it).
    pub fn started_over(&mut self) {
        self.counts.unpromised += 1;
        self.in_flight_commit = None;
        self.model = Model::new(self.config.spec.tables.len());
    }

    /// Whether a refusal to open is allowed: only where nothing was promised.
    pub fn refusal_allowed(&self) -> bool {
        self.model.unpromised()
    }

    /// The parent closed the engine cleanly after its check.
    pub fn closed(&mut self) {
        if self.config.spec.close_makes_durable {
            self.model.all_durable();
        }
    }
}

fn expect_done(planned: &PlannedKitOp, answer: &Answer) -> Verdict {
    match answer {
        Answer::Done => Ok(()),
        other => Err((Check::Reply, format!("{planned}: the adapter answered {other}, expected nothing"))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::workload::TableRef;
    use super::*;
    use crate::test_engine::Buffered;
    use crate::{Kit, KitSettings, Level, Rows};

    fn at(index: u64, op: KitOp) -> PlannedKitOp {
        PlannedKitOp { index, op, crash: None }
    }

    fn commit(index: u64, level: Level) -> PlannedKitOp {
        at(index, KitOp::Commit { level: 0, name: level.name })
    }

    /// Every kind of answer is held to the model, and a wrong one fails
    /// the check it belongs to.
    #[test]
    fn every_answer_is_held_to_the_model() {
        let kit = Kit::new(Buffered::HONEST, KitSettings::default());
        let config = kit.config(5, None);
        let mut judge = Judge::<Buffered>::new(&config);
        let table = TableRef { index: 0, spec: config.spec.tables[0] };
        let put = |index, value: &[u8]| at(index, KitOp::Put { table, key: b"k".to_vec(), value: value.to_vec() });
        assert_eq!(judge.acknowledged(&put(0, b"1"), &Answer::Value(None)), Ok(()));
        let wrong = judge.acknowledged(&put(1, b"2"), &Answer::Value(None)).unwrap_err();
        assert_eq!(wrong.0, Check::Reply, "{}", wrong.1);
        let get = at(2, KitOp::Get { table, key: b"k".to_vec() });
        assert_eq!(judge.acknowledged(&get, &Answer::Value(Some(b"2".to_vec()))), Ok(()));
        assert_eq!(judge.acknowledged(&get, &Answer::Done).unwrap_err().0, Check::Reply, "a get must answer");
        let scan = at(3, KitOp::Scan { table });
        assert_eq!(judge.acknowledged(&scan, &Answer::of_rows(&Rows::new())).unwrap_err().0, Check::Reply);
        assert_eq!(judge.acknowledged(&commit(4, config.spec.levels[0]), &Answer::Done), Ok(()));
        let restart = at(5, KitOp::Restart);
        let empty = Answer::of_reopened(&State::empty(1));
        assert_eq!(judge.acknowledged(&restart, &empty).unwrap_err().0, Check::Content, "it reopened without k");
        let committed = Answer::of_reopened(judge.model.committed());
        assert_eq!(judge.acknowledged(&restart, &committed), Ok(()));
        assert_eq!(judge.counts.commits[0], ("sync", 1));
        assert_eq!(judge.counts.restarts, 2);
    }

    /// A reader's read is held to the state committed when it began: a
    /// commit after it is refused (check `isolation`), the same read after
    /// a fresh `BEGIN` is fine, and a kill ends every reader.
    #[test]
    fn a_readers_answers_are_held_to_its_snapshot() {
        let kit = Kit::new(Buffered::HONEST, KitSettings::default());
        let config = kit.config(5, None);
        let mut judge = Judge::<Buffered>::new(&config);
        let table = TableRef { index: 0, spec: config.spec.tables[0] };
        let reader = |index, step| at(index, KitOp::Reader { reader: 1, step });
        let get = || ReaderStep::Get { table, key: b"k".to_vec() };
        assert_eq!(judge.acknowledged(&reader(0, get()), &Answer::Value(None)), Ok(()));
        let put = at(1, KitOp::Put { table, key: b"k".to_vec(), value: b"v".to_vec() });
        judge.acknowledged(&put, &Answer::Value(None)).unwrap();
        judge.acknowledged(&commit(2, config.spec.levels[0]), &Answer::Done).unwrap();
        let stale = judge.acknowledged(&reader(3, get()), &Answer::Value(Some(b"v".to_vec()))).unwrap_err();
        assert_eq!(stale.0, Check::Isolation, "{}", stale.1);
        assert!(stale.1.contains("began at op #0"), "{}", stale.1);
        assert_eq!(judge.acknowledged(&reader(4, ReaderStep::Begin), &Answer::Done), Ok(()));
        assert_eq!(judge.acknowledged(&reader(5, get()), &Answer::Value(Some(b"v".to_vec()))), Ok(()));
        let rows: Rows = [(b"k".to_vec(), b"v".to_vec())].into_iter().collect();
        let scan = reader(6, ReaderStep::Scan { table });
        assert_eq!(judge.acknowledged(&scan, &Answer::of_rows(&rows)), Ok(()));
        assert_eq!(judge.acknowledged(&scan, &Answer::of_rows(&Rows::new())).unwrap_err().0, Check::Isolation);
        judge.in_flight(&reader(7, get()));
        assert!(!judge.readers.is_open(1), "a kill ends every reader");
    }

    /// A commit in flight at the kill may land or not, and is counted
    /// either way; once it did not, the next kill may not bring back less
    /// than what was acknowledged.
    #[test]
    fn a_commit_in_flight_may_land_or_not() {
        let kit = Kit::new(Buffered::HONEST, KitSettings::default());
        let config = kit.config(5, None);
        let mut judge = Judge::<Buffered>::new(&config);
        let table = TableRef { index: 0, spec: config.spec.tables[0] };
        let put = at(0, KitOp::Put { table, key: b"k".to_vec(), value: b"v".to_vec() });
        judge.acknowledged(&put, &Answer::Value(None)).unwrap();
        judge.in_flight(&commit(1, config.spec.levels[0]));
        let mut landed = State::empty(1);
        landed.tables[0].insert(b"k".to_vec(), b"v".to_vec());
        assert_eq!(judge.recovered(&landed, KillRule::PageCache), Ok(()));
        assert_eq!((judge.counts.in_flight_landed, judge.counts.in_flight_lost), (1, 0));
        let lost = judge.recovered(&State::empty(1), KillRule::PageCache).unwrap_err();
        assert_eq!(lost.0, Check::Durability, "{}", lost.1);
    }
}
