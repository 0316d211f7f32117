//! `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`
//! (issue 32): each option as Redis means it, on hot keys and on a cold
//! row, held to the reference model; refusals change nothing; and the
//! options are decided live, so a reopen at another clock (replay never
//! reads it) lands on the same content.

mod support;

use std::path::Path;
use std::sync::Arc;

use engine::clock::{Clock, ManualClock};
use engine::store::{Options, Reply, Store, INVALID_EXPIRE};
use engine::vfs::{MemVfs, Vfs};
use support::cmd;
use testkit::model::Model;

const T0_MS: u64 = 1_700_000_000_000;

struct Both {
    store: Store,
    model: Model,
    clock: Arc<ManualClock>,
}

impl Both {
    fn run(&mut self, words: &[&str]) -> Reply {
        let command = cmd(words);
        let got = self.store.execute(&command).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        let want = self.model.execute(&command, self.clock.now_ms()).unwrap_or_else(|e| panic!("{words:?}: {e}"));
        assert_eq!(got, want, "{words:?}");
        assert_eq!(self.store.logical_dump().unwrap(), self.model.dump(self.clock.now_ms()), "{words:?}");
        got
    }

    fn refused(&mut self, words: &[&str], why: &str) {
        let command = cmd(words);
        let err = self.store.execute(&command).expect_err("refused").to_string();
        assert!(err.contains(why), "{words:?}: {err}");
        assert!(self.model.execute(&command, self.clock.now_ms()).is_err(), "{words:?}: the model agrees");
        assert_eq!(self.store.logical_dump().unwrap(), self.model.dump(self.clock.now_ms()), "refusal changed nothing");
    }
}

fn open(vfs: &Arc<dyn Vfs>, clock: &Arc<ManualClock>) -> Store {
    Store::open(vfs.clone(), clock.clone(), Path::new("/db"), Options::default()).expect("open").0
}

#[test]
fn set_options_mean_what_redis_means_and_replay_lands_on_them() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(T0_MS));
    let mut both = Both { store: open(&vfs, &clock), model: Model::new(), clock: clock.clone() };
    let (at, due, next) = ((T0_MS + 5_000).to_string(), T0_MS.to_string(), (T0_MS + 1).to_string());
    // NX and XX look at the key; GET answers the old value, set or not.
    assert_eq!(both.run(&["SET", "a", "1", "XX"]), Reply::Nil);
    assert_eq!(both.run(&["SET", "a", "1", "NX", "GET"]), Reply::Nil);
    assert_eq!(both.run(&["SET", "a", "2", "NX"]), Reply::Nil);
    assert_eq!(both.run(&["SET", "a", "2", "NX", "GET"]), Reply::Bulk(b"1".to_vec()));
    assert_eq!(both.run(&["SET", "a", "3", "XX", "GET"]), Reply::Bulk(b"1".to_vec()));
    // TTLs: relative, absolute, kept, and one due at once (no key left).
    assert_eq!(both.run(&["SET", "a", "4", "PX", "5000"]), Reply::Ok);
    assert_eq!(both.run(&["PTTL", "a"]), Reply::Int(5_000));
    assert_eq!(both.run(&["SET", "a", "5", "KEEPTTL", "GET"]), Reply::Bulk(b"4".to_vec()));
    assert_eq!(both.run(&["PTTL", "a"]), Reply::Int(5_000));
    assert_eq!(both.run(&["SET", "b", "1", "EXAT", &(T0_MS / 1_000 + 7).to_string()]), Reply::Ok);
    assert_eq!(both.run(&["SET", "c", "1", "PXAT", &at]), Reply::Ok);
    assert_eq!(both.run(&["SET", "d", "1", "PXAT", &next]), Reply::Ok);
    assert_eq!(both.run(&["SET", "c", "2", "PXAT", &due, "GET"]), Reply::Bulk(b"1".to_vec()));
    assert_eq!(both.run(&["EXISTS", "c"]), Reply::Int(0), "a deadline at the clock leaves no key");
    assert_eq!(both.run(&["SET", "e", "1", "EX", "1"]), Reply::Ok);
    // A hash: NX sees it, XX replaces it, GET refuses it (WRONGTYPE).
    both.run(&["HSET", "h", "f", "v"]);
    both.refused(&["SET", "h", "x", "GET"], "WRONGTYPE");
    assert_eq!(both.run(&["SET", "h", "x", "NX"]), Reply::Nil);
    assert_eq!(both.run(&["SET", "h", "x", "XX"]), Reply::Ok);
    // A deadline that overflows is refused with Redis's text.
    both.refused(&["SET", "a", "x", "PX", "9223372036854775807"], INVALID_EXPIRE);
    // Time passes: `d` lives through its millisecond, then goes; `e` too.
    clock.advance(1);
    assert_eq!(both.run(&["GET", "d"]), Reply::Bulk(b"1".to_vec()));
    clock.advance(1);
    assert_eq!(both.run(&["GET", "d"]), Reply::Nil);
    // An expired key is absent to NX, and a KEEPTTL of it keeps nothing.
    clock.advance(1_000);
    assert_eq!(both.run(&["SET", "e", "2", "NX", "KEEPTTL"]), Reply::Ok);
    assert_eq!(both.run(&["PTTL", "e"]), Reply::Int(-1));
    let want = both.store.logical_dump().unwrap();
    both.store.close().unwrap();
    // Replay at a clock before every deadline lands on the same content.
    let early = Arc::new(ManualClock::new(T0_MS + 1_002));
    let mut reopened = open(&vfs, &early);
    assert_eq!(reopened.logical_dump().unwrap(), want);
    reopened.rewrite().unwrap();
    reopened.close().unwrap();
    assert_eq!(open(&vfs, &early).logical_dump().unwrap(), want, "after a rewrite");
}

#[test]
fn set_options_on_a_cold_row() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(T0_MS));
    let mut both = Both { store: open(&vfs, &clock), model: Model::new(), clock: clock.clone() };
    both.run(&["WINDOW", "t", "ts", "5"]);
    both.run(&["HSET", "t:0", "ts", "0", "n", "1"]);
    both.run(&["HSET", "t:1", "ts", "1", "n", "1"]);
    both.run(&["HSET", "t:top", "ts", "100"]);
    assert_eq!(both.store.evict().unwrap().rows_evicted, 2);
    both.refused(&["SET", "t:0", "x", "GET"], "WRONGTYPE");
    assert_eq!(both.run(&["SET", "t:0", "x", "NX"]), Reply::Nil);
    assert_eq!(both.run(&["SET", "t:0", "x", "XX", "PX", "100"]), Reply::Ok);
    assert_eq!(both.run(&["SET", "t:1", "x", "PXAT", &T0_MS.to_string()]), Reply::Ok);
    assert_eq!(both.store.cold_count(), 0);
    assert!(both.store.audit().is_empty(), "{:?}", both.store.audit());
}

/// The one limit the engine declares on a write: its log record must fit
/// a frame. One byte over, a `SET` is refused as the model predicts, and
/// nothing changes; at the limit it is taken.
#[test]
fn a_write_one_byte_over_the_frame_limit_is_refused_and_changes_nothing() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(T0_MS));
    let mut both = Both { store: open(&vfs, &clock), model: Model::new(), clock: clock.clone() };
    both.run(&["SET", "k", "v"]);
    // The record: the count, then each argument's length and bytes.
    let fits = engine::frame::MAX_FRAME_PAYLOAD_BYTES - (4 + (4 + 3) + (4 + 1) + 4);
    let set = |len: usize| engine::store::Command::Set { key: b"k".to_vec(), value: vec![b'x'; len] };
    let over = set(fits + 1);
    assert!(matches!(both.store.execute(&over), Err(engine::Error::Invalid(_))));
    assert!(both.model.execute(&over, T0_MS).is_err(), "the model predicts the refusal");
    assert_eq!(both.store.logical_dump().unwrap(), both.model.dump(T0_MS), "nothing changed");
    let at_limit = set(fits);
    assert_eq!(both.store.execute(&at_limit).unwrap(), Reply::Ok);
    assert_eq!(both.model.execute(&at_limit, T0_MS).unwrap(), Reply::Ok);
}
