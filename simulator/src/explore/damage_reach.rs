//! What `sim explore --damage` reached: for each kind of record the
//! target declares ([`ExploreDamage::damage_ways`]) and each way it
//! damages one, how many sites of the recording's durable images it
//! damaged so, and in how many images.
//!
//! Every way is a rule of its own: a bit flip tests the checksum, a lost
//! write tests what history may vouch for, a misdirected write tests that
//! a record's checksum covers its place. A way that found no record to
//! apply to (a log with no later frame of a frame's size to misdirect
//! onto it, a file never written twice) tested nothing at that seed, and
//! a clean report would hide it. So the report lists the counts and warns,
//! like the phase warnings, for each declared way that never applied:
//! more `--ops`, or another seed, reaches it.
//!
//! [`ExploreDamage::damage_ways`]: crate::seam::ExploreDamage::damage_ways

use serde_json::{json, Value};

use crate::disk::DamageKind;
use crate::seam::{DamageSite, DamageWays};

/// One declared (record kind, way): what it damaged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamageReach {
    /// The kind of record.
    pub record_kind: &'static str,
    /// The way.
    pub way: DamageKind,
    /// Sites damaged this way (before `--max-damage-states`).
    pub sites: u64,
    /// Durable images with at least one such site.
    pub images: u64,
}

/// The reach of `declared` over the sites of each durable image, in the
/// declared order.
pub(super) fn reach<'a>(declared: &[DamageWays], images: impl Iterator<Item = &'a [DamageSite]>) -> Vec<DamageReach> {
    let mut reached: Vec<DamageReach> = declared
        .iter()
        .flat_map(|kind| {
            kind.ways.iter().map(|&way| DamageReach { record_kind: kind.record_kind, way, sites: 0, images: 0 })
        })
        .collect();
    for sites in images {
        let mut seen_in_image = vec![false; reached.len()];
        for site in sites {
            let at = reached.iter().position(|r| r.record_kind == site.record_kind && r.way == site.kind);
            let at = at.unwrap_or_else(|| {
                panic!(
                    "a damage site of an undeclared kind or way: {} by {:?} ({})",
                    site.record_kind, site.kind, site.what
                )
            });
            reached[at].sites += 1;
            seen_in_image[at] = true;
        }
        for (reach, seen) in reached.iter_mut().zip(seen_in_image) {
            reach.images += u64::from(seen);
        }
    }
    reached
}

/// The way, as the report's lines name it.
fn way_words(way: DamageKind) -> &'static str {
    match way {
        DamageKind::Media => "media damage",
        DamageKind::LostWrite => "a lost write",
        DamageKind::MisdirectedWrite => "a misdirected write",
        DamageKind::FileLost => "the file lost",
        DamageKind::FileTruncated => "the file truncated",
        DamageKind::JunkPrepended => "junk prepended",
        DamageKind::StrayFile => "a stray file",
    }
}

impl DamageReach {
    /// The report's line.
    pub(super) fn text(&self) -> String {
        format!(
            "    {} by {}: {} sites in {} durable images\n",
            self.record_kind,
            way_words(self.way),
            self.sites,
            self.images
        )
    }

    /// The warning if this way damaged nothing in `ops` operations.
    pub(super) fn warning(&self, ops: u64) -> Option<String> {
        (self.sites == 0).then(|| {
            format!(
                "WARNING: --damage never damaged a {} by {} in {ops} ops (no durable image held a record it applies \
                 to), so that rule was not tested; try more --ops or another seed",
                self.record_kind,
                way_words(self.way)
            )
        })
    }

    /// The machine report's object.
    pub(super) fn to_json(&self) -> Value {
        json!({
            "record_kind": self.record_kind,
            "way": way_words(self.way),
            "sites": self.sites,
            "images": self.images,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    const LOG_WAYS: DamageWays =
        DamageWays { record_kind: "log frame", ways: &[DamageKind::Media, DamageKind::MisdirectedWrite] };

    fn site(kind: DamageKind) -> DamageSite {
        DamageSite {
            path: PathBuf::from("/db/log"),
            offset_bytes: 0,
            bytes: vec![1],
            kind,
            what: "frame 0".to_string(),
            record_kind: "log frame",
        }
    }

    #[test]
    fn counts_sites_and_images_per_way_and_warns_for_a_way_that_never_applied() {
        let first = vec![site(DamageKind::Media), site(DamageKind::Media)];
        let second = vec![site(DamageKind::Media)];
        let reached = reach(&[LOG_WAYS], [first.as_slice(), second.as_slice()].into_iter());
        assert_eq!(reached.len(), 2);
        assert_eq!((reached[0].sites, reached[0].images), (3, 2));
        assert_eq!((reached[1].sites, reached[1].images), (0, 0));
        assert!(reached[0].warning(100).is_none());
        let warning = reached[1].warning(100).expect("a way that never applied is warned about");
        assert!(warning.contains("log frame by a misdirected write in 100 ops"), "{warning}");
    }

    #[test]
    #[should_panic(expected = "undeclared")]
    fn a_site_of_an_undeclared_way_is_a_programmer_error() {
        let sites = vec![site(DamageKind::LostWrite)];
        reach(&[LOG_WAYS], [sites.as_slice()].into_iter());
    }
}
