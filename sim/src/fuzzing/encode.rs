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

use super::plan::{Field, FuzzCrash, FuzzCrashMode, FuzzFsync, FuzzOp, FuzzPlan, FuzzStep, Key, KeySpace, Token};

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

    fn fields(&mut self, first: &Field, more: &[Field]) {
        self.field(first);
        self.list(more, Self::field);
    }

    fn op(&mut self, op: &FuzzOp) {
        const VARIANTS: u32 = 19;
        match op {
            FuzzOp::Set { key, value } => {
                self.variant(0, VARIANTS);
                self.key(key);
                self.token(value);
            }
            FuzzOp::Get { key } => {
                self.variant(1, VARIANTS);
                self.key(key);
            }
            FuzzOp::Del { first, more } => {
                self.variant(2, VARIANTS);
                self.key(first);
                self.list(more, Self::key);
            }
            FuzzOp::HSet { key, ts, pairs } => {
                self.variant(3, VARIANTS);
                self.key(key);
                self.option(ts.as_ref(), |e, ts| e.i16(*ts));
                self.list(pairs, |e, (field, value)| {
                    e.field(field);
                    e.token(value);
                });
            }
            FuzzOp::HGet { key, field } => {
                self.variant(4, VARIANTS);
                self.key(key);
                self.field(field);
            }
            FuzzOp::HDel { key, first, more } => {
                self.variant(5, VARIANTS);
                self.key(key);
                self.fields(first, more);
            }
            FuzzOp::HGetAll { key } => {
                self.variant(6, VARIANTS);
                self.key(key);
            }
            FuzzOp::PExpireAt { key, in_ms } => {
                self.variant(7, VARIANTS);
                self.key(key);
                self.i16(*in_ms);
            }
            FuzzOp::Persist { key } => {
                self.variant(8, VARIANTS);
                self.key(key);
            }
            FuzzOp::HPExpireAt { key, in_ms, first, more } => {
                self.variant(9, VARIANTS);
                self.key(key);
                self.i16(*in_ms);
                self.fields(first, more);
            }
            FuzzOp::FlushAll => self.variant(10, VARIANTS),
            FuzzOp::Evict => self.variant(11, VARIANTS),
            FuzzOp::Rewrite => self.variant(12, VARIANTS),
            FuzzOp::Sync => self.variant(13, VARIANTS),
            FuzzOp::Advance { ms } => {
                self.variant(14, VARIANTS);
                self.u16(*ms);
            }
            FuzzOp::Crash => self.variant(15, VARIANTS),
            FuzzOp::Restart => self.variant(16, VARIANTS),
            FuzzOp::SecondOpen => self.variant(17, VARIANTS),
            FuzzOp::Kill => self.variant(18, VARIANTS),
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

impl FuzzPlan {
    /// The bytes that [`FuzzPlan::from_bytes`] decodes to this plan.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u64(self.seed);
        e.option(self.fsync.as_ref(), |e, fsync| {
            let index = match fsync {
                FuzzFsync::Always => 0,
                FuzzFsync::EverySec => 1,
                FuzzFsync::No => 2,
            };
            e.variant(index, 3);
        });
        e.option(self.crash_mode.as_ref(), |e, mode| {
            let index = match mode {
                FuzzCrashMode::Strict => 0,
                FuzzCrashMode::Prefix => 1,
                FuzzCrashMode::Reorder => 2,
            };
            e.variant(index, 3);
        });
        e.list(&self.steps, Encoder::step);
        e.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
            FuzzOp::PExpireAt { key, in_ms: i16::MIN },
            FuzzOp::Persist { key },
            FuzzOp::HPExpireAt { key, in_ms: i16::MAX, first: Field::F(0), more: vec![] },
            FuzzOp::FlushAll,
            FuzzOp::Evict,
            FuzzOp::Rewrite,
            FuzzOp::Sync,
            FuzzOp::Advance { ms: u16::MAX },
            FuzzOp::Crash,
            FuzzOp::Restart,
        ];
        let crashes = [None, Some(FuzzCrash::AtMark(4)), Some(FuzzCrash::AfterIos(250))];
        let steps =
            ops.into_iter().enumerate().map(|(i, op)| FuzzStep { op, crash: crashes[i % crashes.len()] }).collect();
        for (fsync, crash_mode) in [(None, None), (Some(FuzzFsync::No), Some(FuzzCrashMode::Reorder))] {
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
