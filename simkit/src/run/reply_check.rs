//! Every reply of the writer's own operations held to the model: the
//! value a put replaced or a delete removed, a read, a scan of a whole
//! table, and "done" for the rest. Apart from `run.rs` because it is the
//! one place a reply is judged, and reads best whole.

use std::fmt;

use super::super::client::Reply;
use super::super::model::{diff, show_value, State};
use super::super::workload::KitOp;
use super::super::Adapter;
use super::KvRun;
use simulator::failure::Check;
use simulator::harness::{Harness, Step};

impl<A: Adapter> KvRun<'_, A> {
    /// Hold `reply` to the model, and apply the operation to it. `line`
    /// (the operation's line) is formatted only into a failure.
    pub(super) fn check_reply(&mut self, h: &Harness, op: &KitOp, line: &dyn fmt::Display, reply: Reply) -> Step {
        let (what, want) = match op {
            KitOp::Put { table, key, value } => ("the value it replaced", self.model.put(table.index, key, value)),
            KitOp::Delete { table, key } => ("the value it removed", self.model.remove(table.index, key)),
            KitOp::Get { table, key } => ("the value read", self.model.get(table.index, key).cloned()),
            KitOp::Scan { table } => return self.check_scan(h, table.index, line, reply),
            KitOp::Abort => {
                self.model.abort();
                return expect_done(h, line, reply);
            }
            _ => return expect_done(h, line, reply),
        };
        match reply {
            Reply::Done if !matches!(op, KitOp::Get { .. }) => Ok(()),
            Reply::Value(got) if got == want => Ok(()),
            Reply::Value(got) => Err(h.fail(
                Check::Reply,
                format!(
                    "{line}: {what}\n    expected {}\n    got      {}",
                    show_value(want.as_ref()),
                    show_value(got.as_ref())
                ),
            )),
            other => Err(h.fail(Check::Reply, format!("{line}: the adapter answered {other:?}, not a value"))),
        }
    }

    fn check_scan(&mut self, h: &Harness, table: usize, line: &dyn fmt::Display, reply: Reply) -> Step {
        let Reply::Rows(got) = reply else {
            return Err(h.fail(Check::Reply, format!("{line}: the adapter answered {reply:?}, not rows")));
        };
        let want = &self.model.visible().tables[table];
        if got == *want {
            return Ok(());
        }
        let where_ = if self.model.in_transaction() { "in the write transaction" } else { "committed" };
        let mut expected = State::empty(self.config.spec.tables.len());
        expected.tables[table] = want.clone();
        let mut seen = State::empty(self.config.spec.tables.len());
        seen.tables[table] = got;
        Err(h.fail(
            Check::Reply,
            format!("{line}: the table read differs from the model ({where_}):\n{}", diff(&expected, &seen)),
        ))
    }
}

fn expect_done(h: &Harness, line: &dyn fmt::Display, reply: Reply) -> Step {
    match reply {
        Reply::Done => Ok(()),
        other => Err(h.fail(Check::Reply, format!("{line}: the adapter answered {other:?}, expected nothing"))),
    }
}
