//! The one place the kit calls an adapter's operations: a workload
//! operation ([`KitOp`]) dispatched to its typed method, and the typed
//! reply folded into one [`Reply`] — what the run loop checks against the
//! model and what the trace hashes and shows.
//!
//! The fold is fixed: a reply's hash is part of every kit seed's trace, so
//! changing how a reply folds moves every kit target's trace hashes.

use super::adapter::{maintenance_of, Adapter, KitError, Previous, Rows};
use super::workload::KitOp;

/// An operation's reply, whatever its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Nothing to check: a commit, an abort, maintenance, or a put or a
    /// delete whose engine does not say what it replaced.
    Done,
    /// A get's value, or what a put replaced or a delete removed.
    Value(Option<Vec<u8>>),
    /// A scan's rows.
    Rows(Rows),
    /// A reader's step the engine refused because the writer holds its
    /// write lock ([`super::Readers::writer_waits`]): the reader did not
    /// begin, and nothing was read.
    Busy,
}

impl From<Previous> for Reply {
    fn from(previous: Previous) -> Reply {
        match previous {
            Previous::NotSaid => Reply::Done,
            Previous::Was(value) => Reply::Value(value),
        }
    }
}

/// Run `op` (one of the engine's own: not `RESTART` or `CRASH`, which the
/// kit carries out itself, nor a reader's step, `readers.rs`) on `db`.
pub(super) fn call<A: Adapter>(adapter: &A, db: &mut A::Db, op: &KitOp) -> Result<Reply, KitError> {
    match op {
        KitOp::Put { table, key, value } => adapter.put(db, table.index, key, value).map(Reply::from),
        KitOp::Delete { table, key } => adapter.delete(db, table.index, key).map(Reply::from),
        KitOp::Get { table, key } => adapter.get(db, table.index, key).map(Reply::Value),
        KitOp::Scan { table } => adapter.scan(db, table.index).map(Reply::Rows),
        KitOp::Commit { level, .. } => adapter.commit(db, *level).map(|()| Reply::Done),
        KitOp::Abort => adapter.abort(db).map(|()| Reply::Done),
        KitOp::Maintain(_) => maintenance_of(adapter).maintain(db).map(|()| Reply::Done),
        KitOp::Restart | KitOp::Crash | KitOp::Reader { .. } => unreachable!("the kit carries out {op:?} itself"),
    }
}
