//! Where Redis defines the meaning, the store means the same (issue 22):
//! a key or field lives while the clock is at or before its deadline; a
//! deadline given at or before the clock (negative included) deletes, replying as Redis
//! does, and the delete survives a reopen and a rewrite; integers are
//! spelled as Redis spells them, and a refused one changes nothing.

mod support;

use std::path::Path;
use std::sync::Arc;

use engine::clock::ManualClock;
use engine::store::{Options, Reply, Store};
use engine::vfs::{MemVfs, Vfs};
use engine::Error;
use support::cmd;

const T0_MS: u64 = 1_700_000_000_000;

fn open(vfs: &Arc<dyn Vfs>, clock: &Arc<ManualClock>) -> Store {
    Store::open(vfs.clone(), clock.clone(), Path::new("/db"), Options::default()).expect("open").0
}

fn run(store: &mut Store, words: &[&str]) -> Reply {
    store.execute(&cmd(words)).unwrap_or_else(|e| panic!("{words:?}: {e}"))
}

fn fresh() -> (Arc<dyn Vfs>, Arc<ManualClock>, Store) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let clock = Arc::new(ManualClock::new(T0_MS));
    let store = open(&vfs, &clock);
    (vfs, clock, store)
}

#[test]
fn a_key_and_a_field_live_through_their_deadline() {
    let (vfs, clock, mut store) = fresh();
    let at = (T0_MS + 100).to_string();
    run(&mut store, &["SET", "s", "v"]);
    run(&mut store, &["PEXPIREAT", "s", &at]);
    run(&mut store, &["HSET", "h", "a", "1", "b", "2"]);
    run(&mut store, &["HPEXPIREAT", "h", &at, "a"]);
    clock.advance(100);
    assert_eq!(run(&mut store, &["GET", "s"]), Reply::Bulk(b"v".to_vec()), "alive at now == deadline");
    assert_eq!(run(&mut store, &["HGET", "h", "a"]), Reply::Bulk(b"1".to_vec()));
    assert_eq!(store.logical_dump().unwrap().len(), 2);
    // A write at the deadline purges nothing; a reopen and a rewrite keep it.
    run(&mut store, &["HSET", "h", "c", "3"]);
    store.rewrite().unwrap();
    store.close().unwrap();
    let mut store = open(&vfs, &clock);
    assert_eq!(run(&mut store, &["HGET", "h", "a"]), Reply::Bulk(b"1".to_vec()));
    clock.advance(1);
    assert_eq!(run(&mut store, &["GET", "s"]), Reply::Nil, "expired once now > deadline");
    assert_eq!(run(&mut store, &["HGET", "h", "a"]), Reply::Nil);
    assert!(store.audit().is_empty());
}

#[test]
fn a_deadline_in_the_past_deletes_and_replies_as_redis() {
    let (vfs, _clock, mut store) = fresh();
    run(&mut store, &["SET", "s", "v"]);
    assert_eq!(run(&mut store, &["PEXPIREAT", "s", "-1"]), Reply::Int(1));
    assert_eq!(run(&mut store, &["GET", "s"]), Reply::Nil);
    assert_eq!(run(&mut store, &["PEXPIREAT", "s", "-1"]), Reply::Int(0), "no key: 0");
    run(&mut store, &["SET", "s", "v"]);
    let just_past = (T0_MS - 1).to_string();
    assert_eq!(run(&mut store, &["PEXPIREAT", "s", &just_past]), Reply::Int(1));
    run(&mut store, &["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(run(&mut store, &["HPEXPIREAT", "h", "-9223372036854775808", "a", "nope"]), Reply::Int(1));
    assert_eq!(run(&mut store, &["HGETALL", "h"]), Reply::Pairs(vec![(b"b".to_vec(), b"2".to_vec())]));
    assert_eq!(run(&mut store, &["HPEXPIREAT", "h", "0", "b"]), Reply::Int(1));
    assert!(store.logical_dump().unwrap().is_empty());
    // The deletes were logged as deletes: a reopen at any time (here one
    // whose clock stands at zero) finds them gone.
    drop(store);
    let store = open(&vfs, &Arc::new(ManualClock::new(0)));
    assert!(store.logical_dump().unwrap().is_empty());
    assert!(store.audit().is_empty());
}

#[test]
fn integers_spelled_otherwise_than_redis_spells_them_are_refused() {
    let (_vfs, _clock, mut store) = fresh();
    run(&mut store, &["HSET", "h", "a", "1"]);
    let before = store.logical_dump().unwrap();
    let at = (T0_MS + 5_000).to_string();
    for args in [
        vec!["PEXPIREAT".to_string(), "h".into(), format!("+{at}")],
        vec!["PEXPIREAT".to_string(), "h".into(), format!("0{at}")],
        vec!["PEXPIREAT".to_string(), "h".into(), "-0".into()],
        vec!["HPEXPIREAT".to_string(), "h".into(), format!("00{at}"), "a".into()],
        vec!["HPEXPIREAT".to_string(), "h".into(), "+5".into(), "a".into()],
        vec!["PEXPIREAT".to_string(), "h".into(), "9223372036854775808".into()],
        vec!["WINDOW".to_string(), "t".into(), "ts".into(), "+5".into()],
        vec!["WINDOW".to_string(), "t".into(), "ts".into(), "007".into()],
    ] {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        match store.execute_args(&args) {
            Err(Error::Invalid(why)) => assert_eq!(why, "value is not an integer or out of range", "{args:?}"),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(&args.concat())),
        }
        assert_eq!(store.logical_dump().unwrap(), before);
    }
    // "0" and a plain negative are integers.
    assert_eq!(run(&mut store, &["PEXPIREAT", "h", &at]), Reply::Int(1));
    assert_eq!(run(&mut store, &["PERSIST", "h"]), Reply::Int(1));
    assert_eq!(run(&mut store, &["WINDOW", "t", "ts", "0"]), Reply::Ok);
}
