//! The random draws both targets make the same way: the swarm's dials
//! ([`maybe`], [`swarm_weights`]) when a seed's configuration is drawn,
//! and the workload's [`Weighted`] pick of an operation kind and its
//! printable [`token`]s when its operation list is generated.
//!
//! Each function makes exactly the generator calls, in exactly the order,
//! that the code it replaced made: every seed's configuration, workload
//! and trace hash depend on that order, so a change here is a change of
//! every seed, never a refactoring.

use rand::Rng;

/// A probability that is zero half the time (swarm), else in `lo..hi`.
pub fn maybe(rng: &mut impl Rng, lo: f64, hi: f64) -> f64 {
    assert!(0.0 <= lo && lo < hi && hi <= 1.0, "a probability range: {lo}..{hi}");
    if rng.gen_bool(0.5) {
        0.0
    } else {
        rng.gen_range(lo..hi)
    }
}

/// `base` with each kind switched off (weight 0) one time in five, but
/// the `essential` ones: the swarm's choice of which operation kinds a
/// seed's workload has at all. One draw per kind that is not essential.
pub fn swarm_weights<K: Copy>(rng: &mut impl Rng, base: &[(K, u32)], essential: impl Fn(K) -> bool) -> Vec<(K, u32)> {
    base.iter()
        .map(|&(kind, weight)| {
            let off = !essential(kind) && rng.gen_bool(0.2);
            (kind, if off { 0 } else { weight })
        })
        .collect()
}

/// Operation kinds with weights: a pick is kind `k` with probability
/// `weight(k) / total_weight`, from one draw.
#[derive(Clone, Debug)]
pub struct Weighted<'a, K> {
    weights: &'a [(K, u32)],
    total_weight: u32,
}

impl<'a, K: Copy> Weighted<'a, K> {
    /// Picks from `weights`, of which at least one must be above zero.
    pub fn new(weights: &'a [(K, u32)]) -> Self {
        let total_weight = weights.iter().map(|(_, weight)| *weight).sum();
        assert!(total_weight > 0, "the swarm always keeps some operation kinds");
        Weighted { weights, total_weight }
    }

    /// One kind, drawn by its weight.
    pub fn pick(&self, rng: &mut impl Rng) -> K {
        let mut roll = rng.gen_range(0..self.total_weight);
        for &(kind, weight) in self.weights {
            if roll < weight {
                return kind;
            }
            roll -= weight;
        }
        unreachable!("roll is below the total weight")
    }
}

/// A printable token of 1..=max_len bytes: lowercase letters and digits,
/// never a space, so an operation holding it prints as one line and parses
/// back. The bytes come from one bulk draw, a byte each, mapped onto the
/// alphabet: a 4 KiB value costs 4 KiB of the generator's stream, not
/// thousands of rejection-sampled draws (which made generating a workload
/// cost as much as running it). The slight bias of `% 36` does not matter
/// here.
pub fn token(rng: &mut impl Rng, max_len: usize) -> Vec<u8> {
    let len = rng.gen_range(1..=max_len.max(1));
    let mut token = vec![0u8; len];
    rng.fill_bytes(&mut token);
    for byte in &mut token {
        *byte = TOKEN_BYTE[usize::from(*byte)];
    }
    token
}

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Each drawn byte's letter, `ALPHABET[byte % 36]`, looked up rather than
/// divided: a 4 KiB value maps 4 KiB of them.
const TOKEN_BYTE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < table.len() {
        table[byte] = ALPHABET[byte % ALPHABET.len()];
        byte += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn a_pick_follows_the_weights_and_never_a_switched_off_kind() {
        let weights = [('a', 3), ('b', 0), ('c', 1)];
        let kinds = Weighted::new(&weights);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let picks: Vec<char> = (0..4000).map(|_| kinds.pick(&mut rng)).collect();
        let count = |kind| picks.iter().filter(|&&k| k == kind).count();
        assert_eq!(count('b'), 0);
        assert!((2700..3300).contains(&count('a')), "{} of 4000 picks were 'a', not about 3000", count('a'));
        assert_eq!(count('a') + count('c'), picks.len());
    }

    #[test]
    #[should_panic(expected = "the swarm always keeps some operation kinds")]
    fn weights_that_are_all_off_are_refused() {
        Weighted::new(&[('a', 0)]);
    }

    #[test]
    fn swarm_weights_keep_the_essential_kinds_and_switch_some_others_off() {
        let base = [('e', 5), ('x', 2), ('y', 2)];
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let drawn: Vec<Vec<(char, u32)>> = (0..64).map(|_| swarm_weights(&mut rng, &base, |k| k == 'e')).collect();
        assert!(drawn.iter().all(|weights| weights[0] == ('e', 5)));
        assert!(drawn.iter().any(|weights| weights[1].1 == 0) && drawn.iter().any(|weights| weights[1].1 == 2));
    }

    #[test]
    fn tokens_are_printable_and_within_their_length() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for max_len in [0, 1, 24, 4096] {
            let token = token(&mut rng, max_len);
            assert!(!token.is_empty() && token.len() <= max_len.max(1), "{} bytes for {max_len}", token.len());
            assert!(token.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
        }
    }

    #[test]
    fn maybe_is_off_or_in_its_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let draws: Vec<f64> = (0..200).map(|_| maybe(&mut rng, 0.001, 0.02)).collect();
        assert!(draws.iter().all(|&p| p == 0.0 || (0.001..0.02).contains(&p)));
        assert!(draws.contains(&0.0) && draws.iter().any(|&p| p > 0.0));
    }
}
