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
//! a clean report would hide it. So the report lists, per record kind,
//! whether the recording held one at all and which ways damaged it, and
//! warns, like the phase warnings, for each declared way that never
//! applied to a kind the recording held (the target's choice of damage
//! should make that never happen: issue 51), and for each kind the
//! recording never held: more `--ops`, or another seed, reaches it. A kind
//! is held by an image when the image has any site of that kind (every
//! record is at least bit-flipped).
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
    /// Durable images holding a record of this kind (a site of any way).
    pub present: u64,
}

/// The reach of `declared` over the sites of each durable image (those of
/// the writes in flight at any of its crash indices among them), in the
/// declared order.
pub(super) fn reach<'a, S>(declared: &[DamageWays], images: impl Iterator<Item = S>) -> Vec<DamageReach>
where
    S: IntoIterator<Item = &'a DamageSite> + Clone,
{
    let mut reached: Vec<DamageReach> = declared
        .iter()
        .flat_map(|kind| {
            kind.ways.iter().map(|&way| DamageReach {
                record_kind: kind.record_kind,
                way,
                sites: 0,
                images: 0,
                present: 0,
            })
        })
        .collect();
    for sites in images {
        let mut seen_in_image = vec![false; reached.len()];
        for site in sites.clone() {
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
        for (reach, &seen) in reached.iter().zip(&seen_in_image) {
            debug_assert!(!seen || sites.clone().into_iter().any(|site| site.record_kind == reach.record_kind));
        }
        let held: Vec<bool> = reached
            .iter()
            .map(|reach| sites.clone().into_iter().any(|site| site.record_kind == reach.record_kind))
            .collect();
        for ((reach, seen), held) in reached.iter_mut().zip(seen_in_image).zip(held) {
            reach.images += u64::from(seen);
            reach.present += u64::from(held);
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
            "    {} by {}: {} sites in {} durable images (of {} holding one)\n",
            self.record_kind,
            way_words(self.way),
            self.sites,
            self.images,
            self.present
        )
    }

    /// The warning if this way damaged nothing in `ops` operations: a
    /// record the recording held but this way never reached, or (said once
    /// per kind, at its first way) a kind the recording never held.
    pub(super) fn warning(&self, ops: u64, first_way_of_kind: bool) -> Option<String> {
        if self.sites > 0 {
            return None;
        }
        if self.present > 0 {
            return Some(format!(
                "WARNING: --damage never damaged a {} by {} in {ops} ops, though {} durable images held one, so that \
                 rule was not tested; try more --ops or another seed",
                self.record_kind,
                way_words(self.way),
                self.present
            ));
        }
        first_way_of_kind.then(|| {
            format!(
                "WARNING: no durable image held a {} in {ops} ops, so --damage damaged none; try more --ops or \
                 another seed",
                self.record_kind
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
            "present_in_images": self.present,
        })
    }
}

/// The per-kind summary: for each declared kind, in order, whether the
/// recording held one and which ways damaged it, which never did.
pub(super) fn kinds_text(reach: &[DamageReach]) -> String {
    let mut out = String::from("  damage reached, by record kind:\n");
    let mut at = 0;
    while at < reach.len() {
        let kind = reach[at].record_kind;
        let ways: Vec<&DamageReach> = reach[at..].iter().take_while(|r| r.record_kind == kind).collect();
        at += ways.len();
        let present = ways.iter().map(|r| r.present).max().unwrap_or(0);
        if present == 0 {
            out.push_str(&format!("    {kind}: not in any durable image\n"));
            continue;
        }
        let named = |damaged: bool| -> Vec<&str> {
            ways.iter().filter(|r| (r.sites > 0) == damaged).map(|r| way_words(r.way)).collect()
        };
        let (damaged, never) = (named(true), named(false));
        let damaged = if damaged.is_empty() { "nothing".to_string() } else { damaged.join(", ") };
        let never = if never.is_empty() {
            " (every declared way)".to_string()
        } else {
            format!("; NEVER damaged by {}", never.join(", "))
        };
        out.push_str(&format!("    {kind} (in {present} durable images): damaged by {damaged}{never}\n"));
    }
    out
}

/// The warnings of every declared way (see [`DamageReach::warning`]).
pub(super) fn warnings(reach: &[DamageReach], ops: u64) -> Vec<String> {
    let firsts = reach.iter().enumerate().map(|(at, r)| at == 0 || reach[at - 1].record_kind != r.record_kind);
    reach.iter().zip(firsts).filter_map(|(r, first)| r.warning(ops, first)).collect()
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
        assert_eq!((reached[0].sites, reached[0].images, reached[0].present), (3, 2, 2));
        assert_eq!((reached[1].sites, reached[1].images, reached[1].present), (0, 0, 2));
        let warned = warnings(&reached, 100);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("log frame by a misdirected write in 100 ops, though 2 durable"), "{warned:?}");
        let kinds = kinds_text(&reached);
        assert!(
            kinds.contains("log frame (in 2 durable images): damaged by media damage; NEVER damaged by a misdirected"),
            "{kinds}"
        );
    }

    #[test]
    fn a_kind_no_image_held_is_said_once_and_warned_once() {
        const MANIFEST: DamageWays =
            DamageWays { record_kind: "manifest record", ways: &[DamageKind::Media, DamageKind::LostWrite] };
        let sites = vec![site(DamageKind::Media), site(DamageKind::MisdirectedWrite)];
        let reached = reach(&[LOG_WAYS, MANIFEST], [sites.as_slice()].into_iter());
        assert_eq!(
            warnings(&reached, 30),
            vec![
            "WARNING: no durable image held a manifest record in 30 ops, so --damage damaged none; try more --ops or \
             another seed"
                .to_string()
        ]
        );
        let kinds = kinds_text(&reached);
        assert!(
            kinds.contains(
                "log frame (in 1 durable images): damaged by media damage, a misdirected write (every \
             declared way)"
            ),
            "{kinds}"
        );
        assert!(kinds.contains("manifest record: not in any durable image"), "{kinds}");
    }

    #[test]
    #[should_panic(expected = "undeclared")]
    fn a_site_of_an_undeclared_way_is_a_programmer_error() {
        let sites = vec![site(DamageKind::LostWrite)];
        reach(&[LOG_WAYS], [sites.as_slice()].into_iter());
    }
}
