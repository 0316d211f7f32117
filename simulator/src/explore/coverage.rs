//! Complete or sampled: per crash index, how many crash states the model
//! allows there ([`crate::disk::Coverage`]) and how many an exploration
//! enumerated, and the one line a report opens with to say which it was.
//!
//! Both explorers (`sim explore`, `sim trace explore`) keep an
//! [`IndexCoverage`] per crash index they visit and fold them into a
//! [`CoverageTotals`]: at every index where the model allows at most the
//! bound (`--complete-up-to`), every allowed state is enumerated
//! (crash-state family 6); above it, the families' sample is, and the
//! totals say at how many indices, how many of how many states.

use serde_json::{json, Value};

use crate::disk::Coverage;

/// One crash index: what the model allows and what was enumerated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexCoverage {
    /// The crash index (power lost just before this I/O).
    pub io_index: u64,
    /// The model's count there.
    pub coverage: Coverage,
    /// Distinct states of the model enumerated and explored there
    /// (allowed by the profile, and without garbage unless asked for):
    /// each judged, directly or through a byte-identical twin. (The
    /// report's count of crash states counts a state two families both
    /// hold twice.)
    pub enumerated: u64,
}

impl IndexCoverage {
    /// The index as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "io_index": self.io_index,
            "allowed": self.coverage.allowed.to_string(),
            "allowed_exact": self.coverage.exact,
            "enumerated": self.enumerated,
            "complete": self.coverage.complete,
        })
    }
}

/// What an exploration covered, over its crash indices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoverageTotals {
    /// Crash indices visited.
    pub indices: u64,
    /// Of those, where every allowed state was enumerated.
    pub complete_indices: u64,
    /// At the others: the states the model allows (saturating) ...
    pub sampled_allowed: u128,
    /// ... whether that count is exact (else an upper bound) ...
    pub sampled_exact: bool,
    /// ... and how many of them were enumerated.
    pub sampled_enumerated: u64,
    /// Over every index: states allowed (saturating) and enumerated.
    pub allowed: u128,
    /// Over every index: states enumerated.
    pub enumerated: u64,
    /// The sampled indices, in order (the first [`SAMPLED_KEPT`]).
    pub sampled: Vec<IndexCoverage>,
}

/// Sampled indices a report lists one by one; the rest are only counted.
pub const SAMPLED_KEPT: usize = 20;

impl CoverageTotals {
    /// Fold one more crash index in.
    pub fn add(&mut self, index: IndexCoverage) {
        if self.indices == 0 {
            self.sampled_exact = true;
        }
        self.indices += 1;
        self.allowed = self.allowed.saturating_add(index.coverage.allowed);
        self.enumerated += index.enumerated;
        if index.coverage.complete {
            self.complete_indices += 1;
            return;
        }
        self.sampled_allowed = self.sampled_allowed.saturating_add(index.coverage.allowed);
        self.sampled_exact &= index.coverage.exact;
        self.sampled_enumerated += index.enumerated;
        if self.sampled.len() < SAMPLED_KEPT {
            self.sampled.push(index);
        }
    }

    /// Whether every visited index was enumerated in full (none visited,
    /// as with `--only-state`: no claim, and no sample either).
    pub fn is_complete(&self) -> bool {
        self.complete_indices == self.indices
    }

    /// The report's opening words: complete, or sampled and how much.
    /// `bound` is the `--complete-up-to` in force (`u64::MAX`: exhaustive).
    pub fn line(&self, bound: u64) -> String {
        if self.indices == 0 {
            return "one crash state examined (--only-state): no claim of complete or sampled".to_string();
        }
        if self.is_complete() {
            return format!(
                "complete: all {} crash states the model allows at the {} crash indices were enumerated",
                self.enumerated, self.indices
            );
        }
        // A count that saturated says only that the true one is at least
        // that large (a git recording's directory subsets pass it).
        let allowed = match (self.sampled_allowed, self.sampled_exact) {
            (u128::MAX, _) => "at least 2^128 - 1 (more than a count holds)".to_string(),
            (allowed, true) => allowed.to_string(),
            (allowed, false) => format!("at most {allowed}"),
        };
        format!(
            "SAMPLED: at {} of {} crash indices the model allows more than {bound} crash states (--complete-up-to); \
             there {} of {allowed} were enumerated ({}); the other {} indices are complete; --exhaustive \
             enumerates them all",
            self.indices - self.complete_indices,
            self.indices,
            self.sampled_enumerated,
            percent(self.sampled_enumerated, self.sampled_allowed),
            self.complete_indices,
        )
    }

    /// The sampled indices, a line each (the first [`SAMPLED_KEPT`]).
    pub fn sampled_text(&self) -> String {
        let mut out = String::new();
        for index in &self.sampled {
            let at_most = if index.coverage.exact { "" } else { "at most " };
            out.push_str(&format!(
                "    sampled crash index {}: {} of {at_most}{} states enumerated\n",
                index.io_index, index.enumerated, index.coverage.allowed
            ));
        }
        let unlisted = (self.indices - self.complete_indices).saturating_sub(self.sampled.len() as u64);
        if unlisted > 0 {
            out.push_str(&format!("    and {unlisted} more sampled crash indices\n"));
        }
        out
    }

    /// The totals as JSON (counts past 2^53 as strings: u128).
    pub fn to_json(&self) -> Value {
        json!({
            "complete": self.is_complete(),
            "indices": self.indices,
            "complete_indices": self.complete_indices,
            "allowed": self.allowed.to_string(),
            "enumerated": self.enumerated,
            "sampled_allowed": self.sampled_allowed.to_string(),
            "sampled_allowed_exact": self.sampled_exact,
            "sampled_enumerated": self.sampled_enumerated,
            "sampled": self.sampled.iter().map(IndexCoverage::to_json).collect::<Vec<_>>(),
        })
    }
}

/// `part` of `whole` as a percentage for a person ("0.02%", "<0.01%").
fn percent(part: u64, whole: u128) -> String {
    if whole == 0 {
        return "100%".to_string();
    }
    let share = part as f64 / whole as f64 * 100.0;
    if share > 0.0 && share < 0.01 {
        "<0.01%".to_string()
    } else {
        format!("{share:.2}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(io_index: u64, allowed: u128, enumerated: u64, complete: bool) -> IndexCoverage {
        IndexCoverage { io_index, coverage: Coverage { allowed, exact: true, complete }, enumerated }
    }

    #[test]
    fn complete_only_when_every_index_is_and_the_line_says_how_much_was_sampled() {
        let mut totals = CoverageTotals::default();
        totals.add(at(0, 4, 4, true));
        totals.add(at(1, 8, 8, true));
        assert!(totals.is_complete());
        assert!(totals.line(1024).starts_with("complete: all 12 crash states"), "{}", totals.line(1024));
        totals.add(at(2, 5000, 60, false));
        assert!(!totals.is_complete());
        let line = totals.line(1024);
        assert!(line.starts_with("SAMPLED: at 1 of 3 crash indices"), "{line}");
        assert!(line.contains("60 of 5000 were enumerated (1.20%)"), "{line}");
        assert_eq!(totals.enumerated, 72);
        assert!(totals.sampled_text().contains("crash index 2: 60 of 5000"));
    }
}
