//! Random command sequences with evictions, rewrites, clock jumps and
//! reopens in between, run on the real file system against the reference
//! model: every reply must agree, and after every step the logical dump
//! must equal the model and the audit must be clean.

use std::sync::Arc;

use engine::aof::FsyncPolicy;
use engine::clock::{Clock, ManualClock};
use engine::store::{Command, Options, SetCondition, SetOptions, SetTtl, Store};
use engine::vfs::{OsVfs, Vfs};
use proptest::prelude::*;
use testkit::model::Model;

const T0_MS: u64 = 1_700_000_000_000;

#[derive(Clone, Debug)]
enum Step {
    Run(Command),
    Evict,
    Rewrite,
    Advance(u64),
    /// Reopen; `clean` closes first, otherwise the store is just dropped.
    Reopen {
        clean: bool,
    },
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => (0u8..24).prop_map(|i| format!("t:{i:02}").into_bytes()),
        1 => (0u8..4).prop_map(|i| format!("s{i}").into_bytes()),
    ]
}

/// A field and a value for it: the window column mostly gets numbers, so
/// rows slide out of window and get evicted.
fn pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    prop_oneof![
        2 => (0u8..60).prop_map(|n| (b"ts".to_vec(), n.to_string().into_bytes())),
        1 => (field(), value()),
    ]
}

fn field() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![Just(b"ts".to_vec()), Just(b"a".to_vec()), Just(b"b".to_vec())]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![(0u8..60).prop_map(|n| n.to_string().into_bytes()), proptest::collection::vec(any::<u8>(), 0..6)]
}

fn at_ms() -> impl Strategy<Value = i64> {
    // From already-expired (negative included) to a few seconds ahead of
    // the clock's start, with the edges drawn on purpose: a deadline at
    // the clock's start, one just before it, and -1.
    let t0 = T0_MS as i64;
    prop_oneof![
        8 => (t0 - 1_000)..(t0 + 8_000),
        1 => Just(t0),
        1 => Just(t0 - 1),
        1 => Just(-1i64),
    ]
}

/// `SET`'s options (issue 32), never none of them.
fn set_options() -> impl Strategy<Value = SetOptions> {
    let condition = prop_oneof![Just(None), Just(Some(SetCondition::Nx)), Just(Some(SetCondition::Xx))];
    let ttl = prop_oneof![
        Just(None),
        Just(Some(SetTtl::Keep)),
        (1i64..5_000).prop_map(|ms| Some(SetTtl::AfterMs(ms))),
        at_ms().prop_map(|at| Some(SetTtl::AtMs(at.max(1)))),
    ];
    (condition, ttl, any::<bool>()).prop_map(|(condition, ttl, get)| {
        let options = SetOptions { condition, ttl, get };
        if options == SetOptions::default() {
            SetOptions { get: true, ..options }
        } else {
            options
        }
    })
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        4 => (key(), proptest::collection::vec(pair(), 1..4))
            .prop_map(|(key, pairs)| Command::HSet { key, pairs }),
        1 => (key(), value()).prop_map(|(key, value)| Command::Set { key, value }),
        1 => (key(), value(), set_options()).prop_map(|(key, value, options)| Command::SetWith { key, value, options }),
        1 => (key(), field()).prop_map(|(key, field)| Command::HGet { key, field }),
        1 => key().prop_map(|key| Command::HGetAll { key }),
        1 => key().prop_map(|key| Command::Get { key }),
        1 => proptest::collection::vec(key(), 1..3).prop_map(|keys| Command::Del { keys }),
        1 => (key(), proptest::collection::vec(field(), 1..3)).prop_map(|(key, fields)| Command::HDel { key, fields }),
        1 => (key(), at_ms()).prop_map(|(key, at_ms)| Command::PExpireAt { key, at_ms }),
        1 => key().prop_map(|key| Command::Persist { key }),
        1 => (key(), at_ms(), proptest::collection::vec(field(), 1..3))
            .prop_map(|(key, at_ms, fields)| Command::HPExpireAt { key, at_ms, fields }),
        1 => (0i64..20).prop_map(|span| Command::Window { table: b"t".to_vec(), column: b"ts".to_vec(), span }),
        2 => hash_command(),
    ]
}

/// The commands issue 22 added, on keys that are often cold rows.
fn hash_command() -> impl Strategy<Value = Command> {
    let by = prop_oneof![8 => -5i64..5, 1 => Just(i64::MAX), 1 => Just(i64::MIN)];
    prop_oneof![
        proptest::collection::vec(key(), 1..3).prop_map(|keys| Command::Exists { keys }),
        key().prop_map(|key| Command::PTtl { key }),
        (key(), proptest::collection::vec(field(), 1..3)).prop_map(|(key, fields)| Command::HMGet { key, fields }),
        key().prop_map(|key| Command::HLen { key }),
        (key(), field()).prop_map(|(key, field)| Command::HExists { key, field }),
        (key(), field(), by).prop_map(|(key, field, by)| Command::HIncrBy { key, field, by }),
        (key(), field(), value()).prop_map(|(key, field, value)| Command::HSetNx { key, field, value }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => command().prop_map(Step::Run),
        1 => Just(Step::Run(Command::FlushAll)),
        4 => Just(Step::Evict),
        1 => Just(Step::Rewrite),
        2 => (0u64..2_500).prop_map(Step::Advance),
        1 => any::<bool>().prop_map(|clean| Step::Reopen { clean }),
    ]
}

fn run(steps: &[Step], fsync: FsyncPolicy) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    let clock = Arc::new(ManualClock::new(T0_MS));
    let options = Options { fsync, ..Options::default() };
    let open = || Store::open(vfs.clone(), clock.clone(), dir.path(), options).map(|(s, _)| s);
    let mut store = open().unwrap();
    let mut model = Model::new();
    let window = Command::Window { table: b"t".to_vec(), column: b"ts".to_vec(), span: 5 };
    store.execute(&window).unwrap();
    for (index, step) in steps.iter().enumerate() {
        match step {
            Step::Run(command) => {
                let got = store.execute(command);
                let want = model.execute(command, clock.now_ms());
                match (&got, &want) {
                    (Ok(g), Ok(w)) => prop_assert_eq!(g, w, "step {}: {:?}", index, command),
                    (Err(_), Err(_)) => {}
                    _ => prop_assert!(false, "step {index}: {command:?}: store {got:?}, model {want:?}"),
                }
            }
            Step::Evict => {
                store.evict().unwrap();
            }
            Step::Rewrite => store.rewrite().unwrap(),
            Step::Advance(ms) => {
                clock.advance(*ms);
                store.tick().unwrap();
            }
            Step::Reopen { clean } => {
                if *clean {
                    store.close().unwrap();
                } else {
                    // Over OsVfs a dropped store's writes are in the page
                    // cache: a process crash, which loses nothing written.
                    drop(store);
                }
                store = open().unwrap();
            }
        }
        let dump = store.logical_dump().unwrap();
        prop_assert_eq!(&dump, &model.dump(clock.now_ms()), "step {}: {:?}", index, step);
        let violations = store.audit();
        prop_assert!(violations.is_empty(), "step {index}: {step:?}: {violations:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn store_matches_model_with_fsync_no(steps in proptest::collection::vec(step(), 1..120)) {
        run(&steps, FsyncPolicy::No)?;
    }

    #[test]
    fn store_matches_model_with_fsync_everysec(steps in proptest::collection::vec(step(), 1..60)) {
        run(&steps, FsyncPolicy::EverySec)?;
    }
}
