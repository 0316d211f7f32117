//! `SET` with Redis's options (`NX`, `XX`, `GET`, `EX`, `PX`, `EXAT`,
//! `PXAT`, `KEEPTTL`): what the live store decides, and what it logs.
//!
//! Every option is decided here, on the live path, at the clock — and
//! none of them reaches the log. A relative TTL becomes an absolute
//! deadline, `KEEPTTL` becomes the deadline the key had, a condition or
//! `GET` is answered from the state the purge left; what is logged is the
//! plain write they came to: `SET key value`, `SET key value PXAT ms` with
//! the deadline after the clock, a `DEL` (a deadline already due, which
//! leaves no key, as `PEXPIREAT`'s does), or nothing. So replay, which
//! never reads the clock, lands where the live store did, and `check`
//! refuses any other `SET` with options in a log.

use super::apply::wrong_type;
use super::command::{is_logged_set, Command, Reply, SetCondition, SetOptions, SetTtl, INVALID_EXPIRE};
use super::value::Value;
use super::Store;
use crate::{Error, Result};

/// The deadline `ttl` names at `now_ms` (Unix ms), or `None` for
/// `KEEPTTL`; a relative one that overflows is refused with Redis's text.
fn deadline_ms(ttl: SetTtl, now_ms: u64) -> Result<Option<i64>> {
    let now_ms = i64::try_from(now_ms).map_err(|_| Error::Invalid(INVALID_EXPIRE.into()))?;
    match ttl {
        SetTtl::AfterMs(ms) => Ok(Some(now_ms.checked_add(ms).ok_or_else(|| Error::Invalid(INVALID_EXPIRE.into()))?)),
        SetTtl::AtMs(at_ms) => Ok(Some(at_ms)),
        SetTtl::Keep => Ok(None),
    }
}

impl Store {
    /// `SET key value options` at `now_ms` (see the module doc). Refusals
    /// — an overflowing TTL, `GET` on a hash — change nothing.
    pub(super) fn execute_set(&mut self, command: &Command, now_ms: u64) -> Result<Reply> {
        let Command::SetWith { key, value, options } = command else { unreachable!("only SET with options") };
        let deadline = options.ttl.map(|ttl| deadline_ms(ttl, now_ms)).transpose()?.flatten();
        self.purge_expired(command, now_ms)?;
        // What the key held, as the options see it: absent, a string, or
        // another type (a hash, hot or cold) — which `GET` refuses.
        let (found, old_value) = match self.map.get(&key[..]).map(|e| &e.value) {
            None => (false, None),
            Some(Value::Str(old)) => (true, Some(old.clone())),
            Some(_) if options.get => return Err(wrong_type(key, "string")),
            Some(_) => (true, None),
        };
        let set_reply = if options.get { old_value.map_or(Reply::Nil, Reply::Bulk) } else { Reply::Ok };
        let refused = match options.condition {
            Some(SetCondition::Nx) => found,
            Some(SetCondition::Xx) => !found,
            None => false,
        };
        if refused {
            // Not set: `GET` still answers the old value, else nil.
            return Ok(if options.get { set_reply } else { Reply::Nil });
        }
        let kept = self.map.get(&key[..]).and_then(|e| e.expire_at_ms);
        let write = match (options.ttl, deadline) {
            (Some(SetTtl::Keep), _) => logged_set(key, value, kept.map(|at| i64::try_from(at).unwrap_or(i64::MAX))),
            (_, Some(at_ms)) if i128::from(at_ms) <= i128::from(now_ms) => {
                found.then(|| Command::Del { keys: vec![key.clone()] })
            }
            (_, at_ms) => logged_set(key, value, at_ms),
        };
        let Some(write) = write else { return Ok(set_reply) };
        assert!(self.check(&write)?, "a SET or a DEL of a present key changes something");
        self.log_command(&write, now_ms)?;
        let applied = self.apply(&write);
        debug_assert!(applied.is_ok(), "apply after a passing check cannot fail: {applied:?}");
        applied.map(|_| set_reply)
    }
}

/// The logged form of a `SET` of `value` at `key` with `deadline_ms`
/// (`None`: no TTL), which is after the clock.
fn logged_set(key: &[u8], value: &[u8], deadline_ms: Option<i64>) -> Option<Command> {
    let (key, value) = (key.to_vec(), value.to_vec());
    Some(match deadline_ms {
        None => Command::Set { key, value },
        Some(at_ms) => {
            let options = SetOptions { ttl: Some(SetTtl::AtMs(at_ms)), ..SetOptions::default() };
            assert!(is_logged_set(&options), "a kept or future deadline is above zero");
            Command::SetWith { key, value, options }
        }
    })
}
