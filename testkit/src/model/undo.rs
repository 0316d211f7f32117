//! Writes that can be taken back: [`Model::execute_undoable`] returns,
//! with the reply, an [`Undo`] holding the entries the write displaced,
//! and [`Model::undo`] puts them back.
//!
//! It exists for the checker's speed: a checker keeps one undo per
//! acknowledged write and walks back from the current model to any
//! earlier state, instead of keeping a copy of the model at its last
//! recovery and replaying writes onto it. What a write means is still
//! [`Model::execute`]'s alone; this file only remembers what it replaced,
//! and [`Model::keys_of`] is the promise that makes that enough.

use std::collections::BTreeMap;

use super::Model;
use engine::store::{Command, LogicalEntry, Reply};
use engine::Result;

/// What takes one write back ([`Model::execute_undoable`],
/// [`Model::undo`]): checkers keep one per acknowledged write, so any
/// earlier state is reachable without a copy of the whole model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo {
    /// Each key the write named, in the command's order, with the entry
    /// it held just before the write changed it (`None`: absent). Put back
    /// in reverse order, they restore the state before the write — a key
    /// named twice (`DEL a a`) gets its older entry back last.
    Keys(Vec<(Vec<u8>, Option<LogicalEntry>)>),
    /// FLUSHALL: the whole map before it.
    All(BTreeMap<Vec<u8>, LogicalEntry>),
}

impl Model {
    /// The keys `command` may read or change: every command names its
    /// keys, except FLUSHALL (all of them, `None`) and WINDOW (none).
    /// [`Model::execute`] looks at no other entry — what lets an [`Undo`]
    /// hold just these.
    pub fn keys_of(command: &Command) -> Option<&[Vec<u8>]> {
        Some(match command {
            Command::Set { key, .. }
            | Command::SetWith { key, .. }
            | Command::Get { key }
            | Command::HSet { key, .. }
            | Command::HGet { key, .. }
            | Command::HDel { key, .. }
            | Command::HGetAll { key }
            | Command::PExpireAt { key, .. }
            | Command::Persist { key }
            | Command::HPExpireAt { key, .. }
            | Command::PTtl { key }
            | Command::HMGet { key, .. }
            | Command::HLen { key }
            | Command::HExists { key, .. }
            | Command::HIncrBy { key, .. }
            | Command::HSetNx { key, .. } => std::slice::from_ref(key),
            Command::Del { keys } | Command::Exists { keys } => keys.as_slice(),
            Command::Window { .. } => &[],
            Command::FlushAll => return None,
        })
    }

    /// [`Model::execute`], also returning what takes the write back
    /// exactly ([`Model::undo`]): the stored entries of its keys as they
    /// were. A refused command changes nothing and returns no undo.
    pub fn execute_undoable(&mut self, command: &Command, now_ms: u64) -> Result<(Reply, Undo)> {
        // Writes that replace or remove whole entries: what they displace
        // is the undo, moved rather than copied.
        match command {
            Command::FlushAll => {
                let before = std::mem::take(&mut self.map);
                let reply = self.execute(command, now_ms)?;
                return Ok((reply, Undo::All(before)));
            }
            Command::Set { key, value } => {
                let before = self.set(key, value);
                return Ok((Reply::Ok, Undo::Keys(vec![(key.clone(), before)])));
            }
            Command::Del { keys } => {
                let mut before = Vec::with_capacity(keys.len());
                let visible = self.del(keys, now_ms, |key, entry| before.push((key.clone(), entry)));
                return Ok((Reply::Int(visible), Undo::Keys(before)));
            }
            _ => {}
        }
        let keys = Self::keys_of(command).expect("only FLUSHALL names every key");
        let before = keys.iter().map(|key| (key.clone(), self.map.get(key).cloned())).collect();
        let reply = self.execute(command, now_ms)?;
        Ok((reply, Undo::Keys(before)))
    }

    /// Take back the write `undo` was made for, which must be the last
    /// one not yet taken back: the map is then exactly as it was before it.
    pub fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::All(before) => self.map = before,
            // Reverse order: a key named twice gets its older entry back
            // last (see `Undo::Keys`).
            Undo::Keys(before) => {
                for (key, entry) in before.into_iter().rev() {
                    match entry {
                        Some(entry) => {
                            self.map.insert(key, entry);
                        }
                        None => {
                            self.map.remove(&key);
                        }
                    }
                }
            }
        }
    }
}
