//! Sector geometry: where a write may be cut, and which sector a byte is in.
//!
//! A disk persists whole sectors, so a write interrupted by power loss or
//! cut short by an error ends at a sector boundary — or before its first
//! byte. Both the short-write fault and the `prefix` crash mode cut writes,
//! and they must agree on where a cut may fall; this file is that agreement.

use std::ops::Range;

/// The cut points strictly inside a write that fall on a sector boundary:
/// `count` points `first_bytes, first_bytes + sector_bytes, ...`. A cut at
/// `c` keeps the bytes from the write's start up to `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct InnerCuts {
    pub first_bytes: u64,
    pub sector_bytes: u64,
    pub count: u64,
}

/// Where a write covering `range` may be cut strictly inside itself.
pub(super) fn inner_cuts(range: Range<u64>, sector_bytes: u64) -> InnerCuts {
    assert!(sector_bytes.is_power_of_two());
    assert!(range.start <= range.end);
    let first_bytes = (range.start / sector_bytes + 1) * sector_bytes;
    if first_bytes >= range.end {
        return InnerCuts { first_bytes, sector_bytes, count: 0 };
    }
    // The last boundary strictly before the end.
    let last_bytes = (range.end - 1) / sector_bytes * sector_bytes;
    assert!(last_bytes >= first_bytes);
    InnerCuts { first_bytes, sector_bytes, count: (last_bytes - first_bytes) / sector_bytes + 1 }
}

impl InnerCuts {
    /// The `index`-th cut point (`index < count`).
    pub fn at(self, index: u64) -> u64 {
        assert!(index < self.count);
        self.first_bytes + index * self.sector_bytes
    }
}

/// The end of the sector that holds byte `offset_bytes`.
pub(super) fn sector_end(offset_bytes: u64, sector_bytes: u64) -> u64 {
    assert!(sector_bytes.is_power_of_two());
    (offset_bytes / sector_bytes + 1) * sector_bytes
}

/// How many sectors `len_bytes` bytes span.
pub(super) fn sectors_spanned(len_bytes: u64, sector_bytes: u64) -> u64 {
    assert!(sector_bytes.is_power_of_two());
    len_bytes.div_ceil(sector_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_boundaries_strictly_inside_the_write() {
        assert_eq!(inner_cuts(0..512, 512).count, 0);
        assert_eq!(inner_cuts(0..513, 512), InnerCuts { first_bytes: 512, sector_bytes: 512, count: 1 });
        assert_eq!(inner_cuts(100..150, 512).count, 0);
        let cuts = inner_cuts(100..2000, 512);
        assert_eq!(cuts.count, 3);
        assert_eq!((cuts.at(0), cuts.at(1), cuts.at(2)), (512, 1024, 1536));
        assert_eq!(inner_cuts(4096..4096, 4096).count, 0);
        assert_eq!(inner_cuts(4096..8193, 4096).count, 1);
    }

    #[test]
    fn the_step_is_the_sector_size_even_when_the_first_cut_is_a_bigger_power_of_two() {
        let cuts = inner_cuts(5000..20000, 4096);
        assert_eq!(cuts.first_bytes, 8192);
        assert_eq!(cuts.count, 3);
        assert_eq!((cuts.at(0), cuts.at(1), cuts.at(2)), (8192, 12288, 16384));
    }

    #[test]
    fn sector_arithmetic() {
        assert_eq!(sector_end(0, 512), 512);
        assert_eq!(sector_end(511, 512), 512);
        assert_eq!(sector_end(512, 512), 1024);
        assert_eq!(sectors_spanned(0, 4096), 0);
        assert_eq!(sectors_spanned(1, 4096), 1);
        assert_eq!(sectors_spanned(8192, 4096), 2);
    }
}
