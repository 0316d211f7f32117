//! [`FuzzPlan::to_bytes`]: the inverse of `arbitrary`'s decoding, so the
//! corpus generator can write real operation lists as `store_ops` inputs.
//!
//! It writes what `arbitrary` 1.x reads, field by field in declaration
//! order: integers little-endian; a `bool` as one byte; an `Option` as a
//! `bool` then the value; a `Vec` as a `true` byte before each element and
//! a `false` byte after the last; an enum as a `u32` that the derive scales
//! onto its variants (`(u32 × variants) >> 32`). Nothing checks that by
//! construction, so the tests below decode what this writes and demand the
//! same plan back, and the corpus generator asserts it for every input it
//! writes: a change in `arbitrary`'s format fails loudly, not silently.

use super::plan::{Deadline, Field, FuzzCrash, FuzzOp, FuzzPlan, FuzzStep, Key, KeySpace, Token};
use crate::workload::Misspelling;

/// Bytes in the order `arbitrary` reads them.
#[derive(Default)]
struct Encoder {
    out: Vec<u8>,
}

impl Encoder {
    fn u8(&mut self, value: u8) {
        self.out.push(value);
    }

    fn u16(&mut self, value: u16) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    fn i16(&mut self, value: i16) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    fn u64(&mut self, value: u64) {
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    fn bool(&mut self, value: bool) {
        self.u8(u8::from(value));
    }

    /// The smallest `u32` the derive maps to variant `index` of `count`.
    fn variant(&mut self, index: u32, count: u32) {
        assert!(index < count);
        let scaled = (u64::from(index) << 32).div_ceil(u64::from(count));
        let scaled = u32::try_from(scaled).expect("below 2^32 for index < count");
        assert_eq!((u64::from(scaled) * u64::from(count)) >> 32, u64::from(index));
        self.out.extend_from_slice(&scaled.to_le_bytes());
    }

    fn option<T>(&mut self, value: Option<&T>, mut some: impl FnMut(&mut Self, &T)) {
        self.bool(value.is_some());
        if let Some(value) = value {
            some(self, value);
        }
    }

    fn list<T>(&mut self, items: &[T], mut each: impl FnMut(&mut Self, &T)) {
        for item in items {
            self.bool(true);
            each(self, item);
        }
        self.bool(false);
    }

    fn key(&mut self, key: &Key) {
        match key.space {
            KeySpace::Row(table) => {
                self.variant(0, 3);
                self.u8(table);
            }
            KeySpace::Hash => self.variant(1, 3),
            KeySpace::Plain => self.variant(2, 3),
        }
        self.u8(key.id);
    }

    fn field(&mut self, field: &Field) {
        match field {
            Field::Ts => self.variant(0, 2),
            Field::F(n) => {
                self.variant(1, 2);
                self.u8(*n);
            }
        }
    }

    fn token(&mut self, token: &Token) {
        self.list(&token.0, |e, byte| e.u8(*byte));
    }

    fn deadline(&mut self, at: &Deadline, spelling: Option<&Misspelling>) {
        match at {
            Deadline::In(n) => {
                self.variant(0, 2);
                self.i16(*n);
            }
            Deadline::Negative(n) => {
                self.variant(1, 2);
                self.u16(*n);
            }
        }
        let count = Misspelling::ALL.len() as u32;
        // Fieldless, no explicit discriminants: `as` is the declaration index.
        self.option(spelling, |e, how| e.variant(*how as u32, count));
    }

    fn fields(&mut self, first: &Field, more: &[Field]) {
        self.field(first);
        self.list(more, Self::field);
    }

    /// An operation as the derive reads it: the variant, then its fields
    /// in declaration order.
    fn op(&mut self, op: &FuzzOp) {
        self.variant(op_variant(op), FUZZ_OP_VARIANTS);
        match op {
            FuzzOp::Set { key, value } => {
                self.key(key);
                self.token(value);
            }
            FuzzOp::Get { key } | FuzzOp::HGetAll { key } | FuzzOp::Persist { key } => self.key(key),
            FuzzOp::Del { first, more } => {
                self.key(first);
                self.list(more, Self::key);
            }
            FuzzOp::HSet { key, ts, pairs } => {
                self.key(key);
                self.option(ts.as_ref(), |e, ts| e.i16(*ts));
                self.list(pairs, |e, (field, value)| {
                    e.field(field);
                    e.token(value);
                });
            }
            FuzzOp::HGet { key, field } => {
                self.key(key);
                self.field(field);
            }
            FuzzOp::HDel { key, first, more } => {
                self.key(key);
                self.fields(first, more);
            }
            FuzzOp::PExpireAt { key, at, spelling } => {
                self.key(key);
                self.deadline(at, spelling.as_ref());
            }
            FuzzOp::HPExpireAt { key, at, spelling, first, more } => {
                self.key(key);
                self.deadline(at, spelling.as_ref());
                self.fields(first, more);
            }
            FuzzOp::Advance { ms } => self.u16(*ms),
            FuzzOp::Exists { .. }
            | FuzzOp::PTtl { .. }
            | FuzzOp::HMGet { .. }
            | FuzzOp::HLen { .. }
            | FuzzOp::HExists { .. }
            | FuzzOp::HIncrBy { .. }
            | FuzzOp::HSetNx { .. } => self.hash_op(op),
            FuzzOp::FlushAll
            | FuzzOp::Evict
            | FuzzOp::Rewrite
            | FuzzOp::Sync
            | FuzzOp::Crash
            | FuzzOp::Restart
            | FuzzOp::SecondOpen
            | FuzzOp::Kill => {}
        }
    }

    /// The fields of the operations issue 22 added.
    fn hash_op(&mut self, op: &FuzzOp) {
        match op {
            FuzzOp::Exists { first, more } => {
                self.key(first);
                self.list(more, Self::key);
            }
            FuzzOp::PTtl { key } | FuzzOp::HLen { key } => self.key(key),
            FuzzOp::HMGet { key, first, more } => {
                self.key(key);
                self.fields(first, more);
            }
            FuzzOp::HExists { key, field } => {
                self.key(key);
                self.field(field);
            }
            FuzzOp::HIncrBy { key, field, by, spelling } => {
                self.key(key);
                self.field(field);
                self.out.extend_from_slice(&by.to_le_bytes());
                let count = Misspelling::ALL.len() as u32;
                self.option(spelling.as_ref(), |e, how| e.variant(*how as u32, count));
            }
            FuzzOp::HSetNx { key, field, value } => {
                self.key(key);
                self.field(field);
                self.token(value);
            }
            _ => unreachable!("op() encodes every other operation"),
        }
    }

    fn step(&mut self, step: &FuzzStep) {
        self.op(&step.op);
        self.option(step.crash.as_ref(), |e, crash| match crash {
            FuzzCrash::AtMark(n) => {
                e.variant(0, 2);
                e.u8(*n);
            }
            FuzzCrash::AfterIos(n) => {
                e.variant(1, 2);
                e.u8(*n);
            }
        });
    }
}

/// How many variants [`FuzzOp`] has (what the derive scales onto).
const FUZZ_OP_VARIANTS: u32 = 26;

/// `op`'s variant index: its place in [`FuzzOp`]'s declaration, which is
/// how the derive numbers them.
fn op_variant(op: &FuzzOp) -> u32 {
    match op {
        FuzzOp::Set { .. } => 0,
        FuzzOp::Get { .. } => 1,
        FuzzOp::Del { .. } => 2,
        FuzzOp::HSet { .. } => 3,
        FuzzOp::HGet { .. } => 4,
        FuzzOp::HDel { .. } => 5,
        FuzzOp::HGetAll { .. } => 6,
        FuzzOp::PExpireAt { .. } => 7,
        FuzzOp::Persist { .. } => 8,
        FuzzOp::HPExpireAt { .. } => 9,
        FuzzOp::FlushAll => 10,
        FuzzOp::Evict => 11,
        FuzzOp::Rewrite => 12,
        FuzzOp::Sync => 13,
        FuzzOp::Advance { .. } => 14,
        FuzzOp::Crash => 15,
        FuzzOp::Restart => 16,
        FuzzOp::SecondOpen => 17,
        FuzzOp::Kill => 18,
        FuzzOp::Exists { .. } => 19,
        FuzzOp::PTtl { .. } => 20,
        FuzzOp::HMGet { .. } => 21,
        FuzzOp::HLen { .. } => 22,
        FuzzOp::HExists { .. } => 23,
        FuzzOp::HIncrBy { .. } => 24,
        FuzzOp::HSetNx { .. } => 25,
    }
}

impl FuzzPlan {
    /// The bytes that [`FuzzPlan::from_bytes`] decodes to this plan.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u64(self.seed);
        // Both enums are fieldless with no explicit discriminants, so `as`
        // gives the declaration index, which is how the derive numbers them.
        e.option(self.fsync.as_ref(), |e, fsync| e.variant(*fsync as u32, 3));
        e.option(self.crash_mode.as_ref(), |e, mode| e.variant(*mode as u32, 3));
        e.list(&self.steps, Encoder::step);
        e.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzzing::plan::{FuzzCrashMode, FuzzFsync};
    use proptest::prelude::*;

    #[test]
    fn every_variant_round_trips() {
        let key = Key { space: KeySpace::Row(2), id: 9 };
        let ops = vec![
            FuzzOp::Set { key, value: Token(vec![0, 35, 200]) },
            FuzzOp::Get { key: Key { space: KeySpace::Hash, id: 1 } },
            FuzzOp::Del { first: key, more: vec![Key { space: KeySpace::Plain, id: 255 }] },
            FuzzOp::HSet { key, ts: Some(-3), pairs: vec![(Field::Ts, Token(vec![1])), (Field::F(7), Token(vec![]))] },
            FuzzOp::HGet { key, field: Field::F(1) },
            FuzzOp::HDel { key, first: Field::Ts, more: vec![Field::F(2)] },
            FuzzOp::HGetAll { key },
            FuzzOp::PExpireAt { key, at: Deadline::In(i16::MIN), spelling: None },
            FuzzOp::PExpireAt { key, at: Deadline::Negative(u16::MAX), spelling: Some(Misspelling::Plus) },
            FuzzOp::PExpireAt { key, at: Deadline::In(0), spelling: Some(Misspelling::MinusZero) },
            FuzzOp::Persist { key },
            FuzzOp::HPExpireAt { key, at: Deadline::In(i16::MAX), spelling: None, first: Field::F(0), more: vec![] },
            FuzzOp::HPExpireAt {
                key,
                at: Deadline::Negative(0),
                spelling: Some(Misspelling::ZeroZero),
                first: Field::Ts,
                more: vec![Field::F(1)],
            },
            FuzzOp::HPExpireAt {
                key,
                at: Deadline::In(-1),
                spelling: Some(Misspelling::Zero),
                first: Field::Ts,
                more: vec![],
            },
            FuzzOp::FlushAll,
            FuzzOp::Evict,
            FuzzOp::Rewrite,
            FuzzOp::Sync,
            FuzzOp::Advance { ms: u16::MAX },
            FuzzOp::Crash,
            FuzzOp::Restart,
            FuzzOp::SecondOpen,
            FuzzOp::Kill,
            FuzzOp::Exists { first: key, more: vec![Key { space: KeySpace::Hash, id: 3 }] },
            FuzzOp::PTtl { key },
            FuzzOp::HMGet { key, first: Field::Ts, more: vec![Field::F(3)] },
            FuzzOp::HLen { key },
            FuzzOp::HExists { key, field: Field::F(2) },
            FuzzOp::HIncrBy { key, field: Field::F(1), by: i64::MIN, spelling: None },
            FuzzOp::HIncrBy { key, field: Field::Ts, by: -7, spelling: Some(Misspelling::ZeroZero) },
            FuzzOp::HSetNx { key, field: Field::F(0), value: Token(vec![9, 255]) },
        ];
        let crashes = [None, Some(FuzzCrash::AtMark(4)), Some(FuzzCrash::AfterIos(250))];
        let steps =
            ops.into_iter().enumerate().map(|(i, op)| FuzzStep { op, crash: crashes[i % crashes.len()] }).collect();
        let settings = [
            (None, None),
            (Some(FuzzFsync::Always), Some(FuzzCrashMode::Strict)),
            (Some(FuzzFsync::EverySec), Some(FuzzCrashMode::Prefix)),
            (Some(FuzzFsync::No), Some(FuzzCrashMode::Reorder)),
        ];
        for (fsync, crash_mode) in settings {
            let plan = FuzzPlan { seed: u64::MAX - 1, fsync, crash_mode, steps: Vec::clone(&steps) };
            assert_eq!(FuzzPlan::from_bytes(&plan.to_bytes()), plan);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_decoded_plan_encodes_back_to_itself(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let plan = FuzzPlan::from_bytes(&data);
            prop_assert_eq!(FuzzPlan::from_bytes(&plan.to_bytes()), plan);
        }
    }
}
