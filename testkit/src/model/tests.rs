//! The model's tests: its semantics on a few hand-written cases, and the
//! machinery beside them held to the plain operations it stands for —
//! in-place writes to copying ones (`execute_by_copy`, the model as it
//! was first written), undos to copies of every earlier state, and every
//! comparison to comparing dumps — over deterministic command streams.

use super::*;

fn cmd(words: &[&str]) -> Command {
    Command::parse(&words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn expiry_hides_keys_and_fields() {
    let mut m = Model::new();
    m.execute(&cmd(&["HSET", "h", "a", "1", "b", "2"]), 0).unwrap();
    m.execute(&cmd(&["HPEXPIREAT", "h", "100", "a"]), 0).unwrap();
    assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), 99).unwrap(), Reply::Bulk(b"1".to_vec()));
    // Alive at its deadline (Redis: expired only when now > deadline).
    assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), 100).unwrap(), Reply::Bulk(b"1".to_vec()));
    assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), 101).unwrap(), Reply::Nil);
    m.execute(&cmd(&["PEXPIREAT", "h", "200"]), 101).unwrap();
    assert_eq!(m.dump(150).len(), 1);
    assert_eq!(m.dump(200).len(), 1);
    assert!(m.dump(201).is_empty());
    // A write after expiry starts a fresh key with no TTL.
    assert_eq!(m.execute(&cmd(&["HSET", "h", "c", "3"]), 300).unwrap(), Reply::Int(1));
    assert_eq!(m.dump(10_000).get(b"h".as_slice()).unwrap().expire_at_ms, None);
}

#[test]
fn integers_are_spelled_as_redis_spells_them() {
    for (text, want) in [
        ("0", Some(0)),
        ("-5", Some(-5)),
        ("9223372036854775807", Some(i64::MAX)),
        ("-9223372036854775808", Some(i64::MIN)),
        ("9223372036854775808", None),
        ("99999999999999999999999", None),
        ("+5", None),
        ("007", None),
        ("-0", None),
        ("-", None),
        ("", None),
    ] {
        assert_eq!(redis_integer(text.as_bytes()), want, "{text:?}");
    }
    let args = |words: &[&str]| words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
    assert!(refuses_integer_in(&args(&["pexpireat", "k", "+5"])));
    assert!(refuses_integer_in(&args(&["HPEXPIREAT", "k", "01", "f"])));
    assert!(!refuses_integer_in(&args(&["PEXPIREAT", "k", "-1"])));
    assert!(!refuses_integer_in(&args(&["SET", "k", "+5"])));
}

#[test]
fn the_hash_commands_a_redis_user_reaches_for() {
    let mut m = Model::new();
    let run = |m: &mut Model, words: &[&str], now: u64| m.execute(&cmd(words), now);
    run(&mut m, &["HSET", "h", "a", "1", "b", "x"], 10).unwrap();
    run(&mut m, &["HPEXPIREAT", "h", "20", "a"], 10).unwrap();
    run(&mut m, &["SET", "s", "v"], 10).unwrap();
    assert_eq!(run(&mut m, &["EXISTS", "h", "s", "h", "nope"], 10).unwrap(), Reply::Int(3));
    assert_eq!(run(&mut m, &["PTTL", "h"], 10).unwrap(), Reply::Int(-1));
    assert_eq!(run(&mut m, &["PTTL", "nope"], 10).unwrap(), Reply::Int(-2));
    run(&mut m, &["PEXPIREAT", "s", "15"], 10).unwrap();
    assert_eq!(run(&mut m, &["PTTL", "s"], 15).unwrap(), Reply::Int(0));
    assert_eq!(run(&mut m, &["PTTL", "s"], 16).unwrap(), Reply::Int(-2));
    assert_eq!(
        run(&mut m, &["HMGET", "h", "a", "zz", "b"], 10).unwrap(),
        Reply::Array(vec![Some(b"1".to_vec()), None, Some(b"x".to_vec())])
    );
    assert_eq!(run(&mut m, &["HLEN", "h"], 20).unwrap(), Reply::Int(2));
    assert_eq!(run(&mut m, &["HLEN", "h"], 21).unwrap(), Reply::Int(1));
    assert_eq!(run(&mut m, &["HEXISTS", "h", "a"], 21).unwrap(), Reply::Int(0));
    // HINCRBY keeps the field's TTL; refuses a non-integer and overflow.
    assert_eq!(run(&mut m, &["HINCRBY", "h", "a", "-5"], 10).unwrap(), Reply::Int(-4));
    assert_eq!(run(&mut m, &["HGET", "h", "a"], 21).unwrap(), Reply::Nil);
    let refused = run(&mut m, &["HINCRBY", "h", "b", "1"], 10).unwrap_err().to_string();
    assert!(refused.contains("hash value is not an integer"), "{refused}");
    run(&mut m, &["HSET", "h", "n", "9223372036854775806"], 10).unwrap();
    let refused = run(&mut m, &["HINCRBY", "h", "n", "2"], 10).unwrap_err().to_string();
    assert!(refused.contains("increment or decrement would overflow"), "{refused}");
    assert_eq!(run(&mut m, &["HINCRBY", "new", "c", "7"], 10).unwrap(), Reply::Int(7));
    assert_eq!(run(&mut m, &["HSETNX", "new", "c", "x"], 10).unwrap(), Reply::Int(0));
    assert_eq!(run(&mut m, &["HSETNX", "new", "d", "x"], 10).unwrap(), Reply::Int(1));
    assert!(run(&mut m, &["HLEN", "s"], 10).is_err(), "WRONGTYPE");
}

#[test]
fn a_passed_deadline_deletes_as_redis_does() {
    let mut m = Model::new();
    m.execute(&cmd(&["SET", "s", "v"]), 10).unwrap();
    assert_eq!(m.execute(&cmd(&["PEXPIREAT", "s", "-1"]), 10).unwrap(), Reply::Int(1));
    assert!(m.stored(b"s").is_none());
    assert_eq!(m.execute(&cmd(&["PEXPIREAT", "s", "-1"]), 10).unwrap(), Reply::Int(0));
    m.execute(&cmd(&["SET", "s", "v"]), 10).unwrap();
    // A deadline equal to the clock is already due: deleted, as Redis's
    // `checkAlreadyExpired` (`when <= now`) does.
    assert_eq!(m.execute(&cmd(&["PEXPIREAT", "s", "10"]), 10).unwrap(), Reply::Int(1));
    assert!(m.stored(b"s").is_none());
    m.execute(&cmd(&["SET", "s", "v"]), 10).unwrap();
    assert_eq!(m.execute(&cmd(&["PEXPIREAT", "s", "9"]), 10).unwrap(), Reply::Int(1));
    assert!(m.dump(0).is_empty());
    m.execute(&cmd(&["HSET", "h", "a", "1", "b", "2"]), 10).unwrap();
    assert_eq!(m.execute(&cmd(&["HPEXPIREAT", "h", "0", "a", "zz"]), 10).unwrap(), Reply::Int(1));
    assert_eq!(
        m.dump(0).get(b"h".as_slice()).unwrap().value,
        LogicalValue::Hash([(b"b".to_vec(), (b"2".to_vec(), None))].into_iter().collect())
    );
    assert_eq!(m.execute(&cmd(&["HPEXPIREAT", "h", "-5", "b"]), 10).unwrap(), Reply::Int(1));
    assert!(m.stored(b"h").is_none());
}

/// The boundary of "already due", key and field: a deadline one before
/// the clock or equal to it deletes at once; one after it is kept, and
/// its key lives through that millisecond and no longer.
#[test]
fn a_deadline_at_the_clock_deletes_and_one_after_it_lives_through_it() {
    let now = 1_000;
    for (at, deleted) in [(now - 1, true), (now, true), (now + 1, false)] {
        let mut m = Model::new();
        m.execute(&cmd(&["SET", "s", "v"]), now).unwrap();
        m.execute(&cmd(&["HSET", "h", "a", "1", "b", "2"]), now).unwrap();
        let at_text = at.to_string();
        assert_eq!(m.execute(&cmd(&["PEXPIREAT", "s", &at_text]), now).unwrap(), Reply::Int(1), "{at}");
        assert_eq!(m.execute(&cmd(&["HPEXPIREAT", "h", &at_text, "a"]), now).unwrap(), Reply::Int(1), "{at}");
        assert_eq!(m.stored(b"s").is_none(), deleted, "PEXPIREAT at {at}, now {now}");
        let field_stored =
            matches!(&m.stored(b"h").unwrap().value, LogicalValue::Hash(f) if f.contains_key(b"a".as_slice()));
        assert_eq!(field_stored, !deleted, "HPEXPIREAT at {at}, now {now}");
        if !deleted {
            assert_eq!(m.execute(&cmd(&["GET", "s"]), at).unwrap(), Reply::Bulk(b"v".to_vec()));
            assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), at).unwrap(), Reply::Bulk(b"1".to_vec()));
            assert_eq!(m.execute(&cmd(&["GET", "s"]), at + 1).unwrap(), Reply::Nil);
            assert_eq!(m.execute(&cmd(&["HGET", "h", "a"]), at + 1).unwrap(), Reply::Nil);
        }
    }
}

#[test]
fn same_as_agrees_with_comparing_dumps() {
    let mut m = Model::new();
    m.execute(&cmd(&["HSET", "h", "a", "1", "b", "2"]), 0).unwrap();
    m.execute(&cmd(&["HPEXPIREAT", "h", "100", "a"]), 0).unwrap();
    m.execute(&cmd(&["SET", "s", "v"]), 0).unwrap();
    m.execute(&cmd(&["HSET", "gone", "x", "1"]), 0).unwrap();
    m.execute(&cmd(&["HPEXPIREAT", "gone", "50", "x"]), 0).unwrap();
    for now in [0, 50, 100, 200] {
        assert!(m.same_as(&m.dump(now), now));
        let mut other = m.clone();
        other.execute(&cmd(&["SET", "s", "w"]), now).unwrap();
        assert!(!m.same_as(&other.dump(now), now));
        assert!(!other.same_as(&m.dump(now), now));
        let mut fewer = m.dump(now);
        fewer.remove(b"s".as_slice());
        assert!(!m.same_as(&fewer, now));
    }
}

/// A small deterministic stream of commands over few keys and fields,
/// with TTLs near the clock, so types clash and things expire.
struct Commands(u64);

impl Commands {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn word(&mut self, prefix: &str, n: u64) -> String {
        format!("{prefix}{}", self.below(n))
    }

    fn next(&mut self, now_ms: u64) -> Command {
        let key = self.word("k", 5);
        let field = self.word("f", 3);
        // Near the clock (equal to it included), and now and then negative.
        let at = match self.below(8) {
            0 => format!("-{}", self.below(3)),
            _ => (now_ms + self.below(40)).saturating_sub(10).to_string(),
        };
        let at = if at == "-0" { "0".to_string() } else { at };
        let by = match self.below(6) {
            0 => i64::MAX.to_string(),
            1 => i64::MIN.to_string(),
            n => (n as i64 - 3).to_string(),
        };
        let words: Vec<String> = match self.below(21) {
            14 => vec!["EXISTS".into(), key, self.word("k", 5)],
            15 => vec!["PTTL".into(), key],
            16 => vec!["HMGET".into(), key, field, self.word("f", 3)],
            17 => vec!["HLEN".into(), key],
            18 => vec!["HEXISTS".into(), key, field],
            19 => vec!["HINCRBY".into(), key, field, by],
            20 => vec!["HSETNX".into(), key, field, self.word("v", 3)],
            0 | 1 => vec!["SET".into(), key, self.word("v", 3)],
            2 => vec!["GET".into(), key],
            3 => vec!["DEL".into(), key, self.word("k", 5), self.word("k", 5)],
            4..=6 => vec!["HSET".into(), key, field, self.word("v", 3), self.word("f", 3), "w".into()],
            7 => vec!["HGET".into(), key, field],
            8 => vec!["HDEL".into(), key, field, self.word("f", 3)],
            9 => vec!["HGETALL".into(), key],
            10 => vec!["PEXPIREAT".into(), key, at],
            11 => vec!["PERSIST".into(), key],
            12 => vec!["HPEXPIREAT".into(), key, at, field],
            _ if self.below(4) == 0 => vec!["FLUSHALL".into()],
            _ => vec!["WINDOW".into(), "t".into(), "ts".into(), "10".into()],
        };
        Command::parse(&words).unwrap()
    }
}

/// The model as it was before writes changed entries in place: every
/// write copies the visible entry, changes the copy, puts it back.
fn execute_by_copy(map: &mut BTreeMap<Vec<u8>, LogicalEntry>, command: &Command, now_ms: u64) -> Result<Reply> {
    let model = Model { map: map.clone() };
    let hash = |key: &[u8]| match model.visible(key, now_ms).map(|e| e.value) {
        None => Ok(None),
        Some(LogicalValue::Hash(fields)) => Ok(Some(fields)),
        Some(LogicalValue::Str(_)) => Err(wrong_type()),
    };
    let put_hash = |map: &mut BTreeMap<Vec<u8>, LogicalEntry>, key: &[u8], fields: LogicalFields| {
        if fields.is_empty() {
            map.remove(key);
        } else {
            let expire_at_ms = model.visible(key, now_ms).and_then(|e| e.expire_at_ms);
            map.insert(key.to_vec(), LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms });
        }
    };
    Ok(match command {
        Command::Get { key } => match model.visible(key, now_ms).map(|e| e.value) {
            None => Reply::Nil,
            Some(LogicalValue::Str(v)) => Reply::Bulk(v),
            Some(LogicalValue::Hash(_)) => return Err(wrong_type()),
        },
        Command::HGet { key, field } => match hash(key)? {
            None => Reply::Nil,
            Some(fields) => fields.get(field).map_or(Reply::Nil, |(v, _)| Reply::Bulk(v.clone())),
        },
        Command::HGetAll { key } => {
            Reply::Pairs(hash(key)?.map(|f| f.into_iter().map(|(f, (v, _))| (f, v)).collect()).unwrap_or_default())
        }
        Command::Set { key, value } => {
            map.insert(key.clone(), LogicalEntry { value: LogicalValue::Str(value.clone()), expire_at_ms: None });
            Reply::Ok
        }
        Command::Del { keys } => {
            let mut removed = 0;
            for key in keys {
                if (Model { map: map.clone() }).visible(key, now_ms).is_some() {
                    removed += 1;
                }
                map.remove(key);
            }
            Reply::Int(removed)
        }
        Command::HSet { key, pairs } => {
            let (mut fields, expire_at_ms) = match model.visible(key, now_ms) {
                None => (BTreeMap::new(), None),
                Some(LogicalEntry { value: LogicalValue::Hash(f), expire_at_ms }) => (f, expire_at_ms),
                Some(_) => return Err(wrong_type()),
            };
            let mut added = 0;
            for (field, value) in pairs {
                if fields.insert(field.clone(), (value.clone(), None)).is_none() {
                    added += 1;
                }
            }
            map.insert(key.clone(), LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms });
            Reply::Int(added)
        }
        Command::HDel { key, fields } => {
            let Some(mut live) = hash(key)? else { return Ok(Reply::Int(0)) };
            let removed = fields.iter().filter(|f| live.remove(*f).is_some()).count();
            put_hash(map, key, live);
            Reply::Int(removed as i64)
        }
        Command::HPExpireAt { key, at_ms, fields } => {
            let Some(mut live) = hash(key)? else { return Ok(Reply::Int(0)) };
            let mut set = 0;
            let deadline = future_deadline(*at_ms, now_ms);
            for field in fields {
                if deadline.is_none() && live.remove(field).is_some() {
                    set += 1;
                } else if let Some(slot) = live.get_mut(field) {
                    slot.1 = deadline;
                    set += 1;
                }
            }
            put_hash(map, key, live);
            Reply::Int(set)
        }
        Command::PExpireAt { key, at_ms } => match model.visible(key, now_ms) {
            None => Reply::Int(0),
            Some(mut entry) => {
                match future_deadline(*at_ms, now_ms) {
                    Some(at) => {
                        entry.expire_at_ms = Some(at);
                        map.insert(key.clone(), entry);
                    }
                    None => {
                        map.remove(key);
                    }
                }
                Reply::Int(1)
            }
        },
        Command::Persist { key } => match model.visible(key, now_ms) {
            Some(mut entry) if entry.expire_at_ms.is_some() => {
                entry.expire_at_ms = None;
                map.insert(key.clone(), entry);
                Reply::Int(1)
            }
            _ => Reply::Int(0),
        },
        Command::FlushAll => {
            map.clear();
            Reply::Ok
        }
        Command::Window { .. } => Reply::Ok,
        Command::HIncrBy { key, field, by } => {
            let (mut fields, expire_at_ms) = match model.visible(key, now_ms) {
                None => (BTreeMap::new(), None),
                Some(LogicalEntry { value: LogicalValue::Hash(f), expire_at_ms }) => (f, expire_at_ms),
                Some(_) => return Err(wrong_type()),
            };
            let (current, ttl) = match fields.get(field) {
                None => (0, None),
                Some((v, at)) => (redis_integer(v).ok_or_else(|| Error::Invalid("not an integer".into()))?, *at),
            };
            let sum = current.checked_add(*by).ok_or_else(|| Error::Invalid("overflow".into()))?;
            fields.insert(field.clone(), (sum.to_string().into_bytes(), ttl));
            map.insert(key.clone(), LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms });
            Reply::Int(sum)
        }
        Command::HSetNx { key, field, value } => {
            let (mut fields, expire_at_ms) = match model.visible(key, now_ms) {
                None => (BTreeMap::new(), None),
                Some(LogicalEntry { value: LogicalValue::Hash(f), expire_at_ms }) => (f, expire_at_ms),
                Some(_) => return Err(wrong_type()),
            };
            if fields.contains_key(field) {
                return Ok(Reply::Int(0));
            }
            fields.insert(field.clone(), (value.clone(), None));
            map.insert(key.clone(), LogicalEntry { value: LogicalValue::Hash(fields), expire_at_ms });
            Reply::Int(1)
        }
        // Reads change nothing: what they answer is `execute`'s alone.
        read => Model { map: map.clone() }.execute(read, now_ms)?,
    })
}

#[test]
fn in_place_writes_leave_what_copying_writes_left() {
    for seed in 1..=200u64 {
        let mut commands = Commands(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut model = Model::new();
        let mut reference = BTreeMap::new();
        let mut now_ms = 0;
        for _ in 0..300 {
            now_ms += commands.below(4);
            let command = commands.next(now_ms);
            let want = execute_by_copy(&mut reference, &command, now_ms);
            let refused = model.refuses(&command, now_ms);
            let got = model.execute(&command, now_ms);
            assert_eq!(got.as_ref().ok(), want.as_ref().ok(), "seed {seed}: {command:?}");
            assert_eq!(refused, want.is_err(), "seed {seed}: {command:?}");
            assert_eq!(model.map, reference, "seed {seed}: the maps differ after {command:?}");
        }
    }
}

#[test]
fn undo_takes_a_write_back_exactly() {
    for seed in 1..=200u64 {
        let mut commands = Commands(seed.wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1);
        let mut model = Model::new();
        let mut now_ms = 0;
        let mut states = vec![model.clone()];
        let mut undos = Vec::new();
        for _ in 0..200 {
            now_ms += commands.below(4);
            let command = commands.next(now_ms);
            let mut plain = model.clone();
            let want = plain.execute(&command, now_ms);
            match model.execute_undoable(&command, now_ms) {
                Ok((reply, undo)) => {
                    assert_eq!(Some(&reply), want.as_ref().ok(), "seed {seed}: {command:?}");
                    states.push(model.clone());
                    undos.push(undo);
                }
                Err(_) => assert!(want.is_err(), "seed {seed}: {command:?}"),
            }
            assert_eq!(model, plain, "seed {seed}: {command:?}");
        }
        while let Some(undo) = undos.pop() {
            states.pop();
            model.undo(undo);
            assert_eq!(&model, states.last().unwrap(), "seed {seed}: undo {}", undos.len());
        }
    }
}

#[test]
fn every_comparison_agrees_with_comparing_dumps() {
    for seed in 1..=100u64 {
        let mut commands = Commands(seed.wrapping_mul(0x94d0_49bb_1331_11eb) | 1);
        let (mut ours, mut theirs) = (Model::new(), Model::new());
        let mut now_ms = 0;
        for step in 0..200 {
            now_ms += commands.below(4);
            // Mostly the same writes, now and then one side alone.
            let command = commands.next(now_ms);
            match commands.below(8) {
                0 => drop(ours.execute(&command, now_ms)),
                1 => drop(theirs.execute(&command, now_ms)),
                _ => {
                    let _ = ours.execute(&command, now_ms);
                    let _ = theirs.execute(&command, now_ms);
                }
            }
            let look_ms = now_ms + commands.below(20);
            let (mine, dump) = (ours.dump(look_ms), theirs.dump(look_ms));
            let differing = mine.keys().chain(dump.keys()).collect::<std::collections::BTreeSet<_>>();
            let differing = differing.into_iter().filter(|k| mine.get(*k) != dump.get(*k)).count();
            assert_eq!(Model::count_differing(&ours.map, &dump, look_ms, usize::MAX), differing, "{seed}/{step}");
            assert_eq!(ours.same_as(&dump, look_ms), mine == dump, "{seed}/{step}");
            let mut in_order = ours.shows_in_order(look_ms);
            let mut counting = ours.count_in_order(look_ms);
            for (key, entry) in &dump {
                in_order.next(key, entry.view());
                counting.next(key, entry.view());
                assert_eq!(entry.view().to_entry(), *entry);
            }
            assert_eq!(in_order.finish(), mine == dump, "{seed}/{step}");
            assert_eq!(counting.finish(), differing, "{seed}/{step}");
        }
    }
}

#[test]
fn wrong_type_changes_nothing() {
    let mut m = Model::new();
    m.execute(&cmd(&["SET", "s", "v"]), 0).unwrap();
    let before = m.clone();
    assert!(m.execute(&cmd(&["HSET", "s", "f", "v"]), 0).is_err());
    assert_eq!(m, before);
}

/// The model's oversized bound is the log record's size (the argument
/// count, then each argument's length and bytes) of the command's own
/// argument list, at the limit and one byte either side of it.
#[test]
fn a_write_is_oversized_exactly_when_its_record_is_over_the_frame_limit() {
    let limit = engine::frame::MAX_FRAME_PAYLOAD_BYTES as u64;
    let record_bytes = |command: &Command| 4 + command.to_args().iter().map(|arg| 4 + arg.len() as u64).sum::<u64>();
    let set = |value_bytes: usize| Command::Set { key: b"k0".to_vec(), value: vec![0; value_bytes] };
    let hset = |value_bytes: usize| Command::HSet {
        key: b"h".to_vec(),
        pairs: vec![(b"f1".to_vec(), b"v".to_vec()), (b"f2".to_vec(), vec![0; value_bytes])],
    };
    let at_limit = [set(0), hset(0)].map(|command| (limit - record_bytes(&command)) as usize);
    for (index, make) in [&set as &dyn Fn(usize) -> Command, &hset].into_iter().enumerate() {
        for value_bytes in [at_limit[index] - 1, at_limit[index], at_limit[index] + 1] {
            let command = make(value_bytes);
            let expected = (record_bytes(&command) > limit).then(|| record_bytes(&command));
            assert_eq!(super::oversized_write(&command), expected, "{index} {value_bytes}");
        }
    }
    assert_eq!(super::oversized_write(&Command::Del { keys: vec![b"k".to_vec()] }), None);
}
