//! The commands a Redis hash user reaches for first (issue 22): `EXISTS`,
//! `PTTL`, `HMGET`, `HLEN`, `HEXISTS`, `HINCRBY`, `HSETNX`, each on a cold
//! (evicted, stubbed) row exactly as on a hot one — reads resolve the stub
//! without promoting it, writes promote it as `HSET` does — and each held
//! to the reference model, through a rewrite and a reopen.

mod support;

use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Reply, Store};
use engine::vfs::{MemVfs, Vfs};
use support::cmd;
use testkit::model::Model;

const T0_MS: u64 = 1_700_000_000_000;

struct Both {
    store: Store,
    model: Model,
    now_ms: u64,
}

impl Both {
    fn run(&mut self, words: &[&str]) -> Reply {
        let command = cmd(words);
        let got = self.store.execute(&command).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        let want = self.model.execute(&command, self.now_ms).unwrap_or_else(|e| panic!("{words:?}: model: {e}"));
        assert_eq!(got, want, "{words:?}");
        got
    }

    fn refused(&mut self, words: &[&str], why: &str) {
        let command = cmd(words);
        let err = self.store.execute(&command).expect_err("refused").to_string();
        assert!(err.contains(why), "{words:?}: {err}");
        assert!(self.model.execute(&command, self.now_ms).is_err(), "{words:?}: the model agrees");
        assert_eq!(self.store.logical_dump().unwrap(), self.model.dump(self.now_ms), "a refusal changed nothing");
    }
}

fn open(vfs: &Arc<dyn Vfs>) -> Store {
    let clock = Arc::new(ManualClock::new(T0_MS));
    Store::open(vfs.clone(), clock, Path::new("/db"), Options::default()).expect("open").0
}

/// `t:0` .. `t:3` out of the window and evicted (cold); `t:top` hot.
fn cold_rows() -> (Arc<dyn Vfs>, Both) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let mut both = Both { store: open(&vfs), model: Model::new(), now_ms: T0_MS };
    both.run(&["WINDOW", "t", "ts", "5"]);
    for i in 0..4 {
        let (key, ts) = (format!("t:{i}"), i.to_string());
        both.run(&["HSET", &key, "ts", &ts, "n", "41", "s", "text"]);
    }
    both.run(&["HSET", "t:top", "ts", "100", "n", "1"]);
    let report = both.store.evict().unwrap();
    assert_eq!(report.rows_evicted, 4);
    assert!(both.store.eviction_candidates().is_empty());
    (vfs, both)
}

#[test]
fn reads_on_cold_rows_resolve_the_stub_and_promote_nothing() {
    let (_vfs, mut both) = cold_rows();
    let used = both.store.used_memory();
    assert_eq!(both.run(&["EXISTS", "t:0", "t:1", "t:0", "t:9", "t:top"]), Reply::Int(4));
    assert_eq!(both.run(&["PTTL", "t:0"]), Reply::Int(-1));
    assert_eq!(both.run(&["PTTL", "t:9"]), Reply::Int(-2));
    assert_eq!(
        both.run(&["HMGET", "t:1", "n", "nope", "s"]),
        Reply::Array(vec![Some(b"41".to_vec()), None, Some(b"text".to_vec())])
    );
    assert_eq!(both.run(&["HLEN", "t:2"]), Reply::Int(3));
    assert_eq!(both.run(&["HEXISTS", "t:3", "s"]), Reply::Int(1));
    assert_eq!(both.run(&["HEXISTS", "t:3", "nope"]), Reply::Int(0));
    assert_eq!(both.store.used_memory(), used, "a read promoted a cold row");
    assert!(both.store.audit().is_empty(), "{:?}", both.store.audit());
}

#[test]
fn writes_on_cold_rows_promote_them_as_hset_does() {
    let (vfs, mut both) = cold_rows();
    let used = both.store.used_memory();
    // HSETNX of a field the cold row has changes nothing, and promotes nothing.
    assert_eq!(both.run(&["HSETNX", "t:0", "n", "x"]), Reply::Int(0));
    assert_eq!(both.store.used_memory(), used);
    assert_eq!(both.run(&["HSETNX", "t:0", "new", "x"]), Reply::Int(1));
    assert!(both.store.used_memory() > used, "HSETNX promoted the row");
    assert_eq!(both.run(&["HINCRBY", "t:1", "n", "1"]), Reply::Int(42));
    assert_eq!(both.run(&["HINCRBY", "t:1", "fresh", "-3"]), Reply::Int(-3));
    both.refused(&["HINCRBY", "t:2", "s", "1"], "hash value is not an integer");
    both.refused(&["HINCRBY", "t:2", "n", "9223372036854775807"], "increment or decrement would overflow");
    both.run(&["SET", "plain", "v"]);
    both.refused(&["HLEN", "plain"], "WRONGTYPE");
    both.refused(&["HSETNX", "plain", "f", "v"], "WRONGTYPE");
    assert!(both.store.audit().is_empty(), "{:?}", both.store.audit());
    // A rewrite and a reopen land on the same content.
    both.store.rewrite().unwrap();
    let Both { store, model, now_ms } = both;
    store.close().unwrap();
    let mut both = Both { store: open(&vfs), model, now_ms };
    assert_eq!(both.store.logical_dump().unwrap(), both.model.dump(now_ms));
    assert_eq!(
        both.run(&["HMGET", "t:1", "n", "fresh"]),
        Reply::Array(vec![Some(b"42".to_vec()), Some(b"-3".to_vec())])
    );
    assert!(both.store.audit().is_empty(), "{:?}", both.store.audit());
}

#[test]
fn hincrby_keeps_a_field_ttl_and_raises_the_window_mark() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let mut both = Both { store: open(&vfs), model: Model::new(), now_ms: T0_MS };
    both.run(&["WINDOW", "t", "ts", "5"]);
    both.run(&["HSET", "t:a", "ts", "1", "n", "5"]);
    let at = (T0_MS + 50).to_string();
    both.run(&["HPEXPIREAT", "t:a", &at, "n"]);
    assert_eq!(both.run(&["HINCRBY", "t:a", "n", "2"]), Reply::Int(7));
    assert_eq!(both.store.logical_dump().unwrap(), both.model.dump(T0_MS));
    both.run(&["HSET", "t:b", "ts", "2"]);
    // ts of t:c climbs to 100 through HINCRBY: t:b falls out of the window.
    both.run(&["HSET", "t:c", "ts", "3"]);
    assert!(both.store.eviction_candidates().is_empty());
    both.run(&["HINCRBY", "t:c", "ts", "97"]);
    assert_eq!(both.store.eviction_candidates(), vec![b"t:b".to_vec()]);
}

#[test]
fn misspelled_increments_are_refused_with_redis_text() {
    let (_vfs, mut both) = cold_rows();
    for by in ["+1", "01", "-0", "1.5", ""] {
        let args: Vec<Vec<u8>> = ["HINCRBY", "t:0", "n", by].iter().map(|a| a.as_bytes().to_vec()).collect();
        let err = both.store.execute_args(&args).expect_err(by).to_string();
        assert!(err.contains("value is not an integer or out of range"), "{by:?}: {err}");
    }
    assert_eq!(both.store.logical_dump().unwrap(), both.model.dump(T0_MS));
}

/// Redis's "already expired" (issue 32): `PEXPIREAT`/`HPEXPIREAT` with a
/// deadline at or before the clock delete, on a hot row and on a cold one
/// (whose `HDEL` promotes it first), and the model agrees; one after the
/// clock is kept, and its key lives through that millisecond. The store
/// logs the deletes as deletes: a reopen whose clock stands at zero (where
/// every deadline here is ahead) finds the same content. The old rule
/// (`at < now`) would keep the key at `now` and fail the reply checks below.
#[test]
fn a_deadline_at_the_clock_deletes_hot_and_cold_rows_alike() {
    for (delta_ms, deleted) in [(-1i64, true), (0, true), (1, false)] {
        let (vfs, mut both) = cold_rows();
        let at = (T0_MS as i64 + delta_ms).to_string();
        both.run(&["SET", "s", "v"]);
        both.run(&["HSET", "h", "a", "1", "b", "2"]);
        assert_eq!(both.run(&["PEXPIREAT", "s", &at]), Reply::Int(1));
        assert_eq!(both.run(&["HPEXPIREAT", "h", &at, "a"]), Reply::Int(1));
        // Cold: a key TTL on t:0, a field TTL on t:1 (both promote).
        assert_eq!(both.run(&["PEXPIREAT", "t:0", &at]), Reply::Int(1));
        assert_eq!(both.run(&["HPEXPIREAT", "t:1", &at, "n"]), Reply::Int(1));
        let exists = Reply::Int(i64::from(!deleted));
        assert_eq!(both.run(&["EXISTS", "s"]), exists, "at {at}");
        assert_eq!(both.run(&["HEXISTS", "h", "a"]), exists, "at {at}");
        assert_eq!(both.run(&["EXISTS", "t:0"]), exists, "at {at}");
        assert_eq!(both.run(&["HEXISTS", "t:1", "n"]), exists, "at {at}");
        assert_eq!(both.store.key_count() - both.store.cold_count(), if deleted { 3 } else { 5 }, "at {at}");
        assert_eq!(both.store.logical_dump().unwrap(), both.model.dump(T0_MS));
        let want = both.model.dump(T0_MS);
        both.store.close().unwrap();
        let early = Arc::new(ManualClock::new(0));
        let reopened = Store::open(vfs.clone(), early, Path::new("/db"), Options::default()).expect("reopen").0;
        assert_eq!(reopened.logical_dump().unwrap(), want, "replay at another clock, deadline {at}");
        assert!(reopened.audit().is_empty(), "{:?}", reopened.audit());
    }
}
