//! Damage in exploration (`sim explore --damage`): every record of every
//! durable image damaged, one at a time, and recovered (twice where the
//! target also opens at a point in time).
//!
//! Exploration's crash states never damage a durable byte, so every rule
//! about damage — refuse it, changing nothing; cut at it and quarantine
//! the rest when an operator asks for a point in time; never sweep after
//! it — was only sampled by the random mode's media corruption, one random
//! sector now and then. Here the recording's durable images (the disk a
//! power loss leaves keeping nothing unsynced, at each crash index; each
//! distinct image once, at the first index it appears) are each damaged
//! at every site the target names ([`ExploreDamage::damage_sites`]: for segsim,
//! each record of the log, the manifest and every segment, three ways,
//! each frame of the logs misdirected onto, a fourth, and the write that
//! put each record in place lost, alone or with the rest of its fsync, a
//! fifth: the disk's durable history says what those places held before),
//! the damage announced as the disk announces media corruption (or a lost
//! or misdirected write), with
//! whether a later durable write could have vouched for the bytes
//! (`DiskSnapshot::damaged`). Each damaged image is recovered the default
//! way and at a point in time ([`ExploreDamage::recover_damaged`]) and judged by
//! the random mode's rule after damage, in the context of the crash index
//! the image was first seen at. The damage is the only thing that differs
//! from a state depth 1 already passed, so a failure here is the damage's.
//!
//! A durable image holds nothing of the writes in flight at its crash
//! index, yet a drive may still write one back after the crash caught it,
//! and put it elsewhere: the fault model's misdirected write. So at every
//! crash index with writes in flight the target names where those would
//! land ([`ExploreDamage::in_flight_damage_sites`]: for segsim, the next
//! frame of either log onto its last durable frame), and each site not
//! already planned on the same durable image is recovered in that index's
//! context — which is why one durable image may be damaged at several
//! crash indices. The report counts it once.
//!
//! What each declared way of each record kind reached, and the ways that
//! never applied, go in the report (`damage_reach.rs`).
//!
//! The recoveries run in the order image, site, mode, are merged in that
//! order (the report is the same for every `--jobs`), and
//! `--max-damage-states` cuts that order at a fixed point.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use super::damage_reach;
use super::parallel::map_in_order;
use super::report::{DamageReport, ExploreFailure};
use super::ExploreOptions;
use crate::disk::{DiskImage, DiskSnapshot};
use crate::seam::{DamageSite, DamageVerdict, ExploreDamage, Recording, Target};

/// One durable image and where to damage it, at one crash index.
struct Image {
    io_index: u64,
    context: usize,
    snapshot: Arc<DiskSnapshot>,
    image: DiskImage,
    sites: Vec<DamageSite>,
    /// Which distinct durable image this is (the reach report counts
    /// those), numbered in order of first appearance.
    durable: usize,
    /// `None` where the image is first seen: `sites` are its own, then
    /// those of the writes in flight here. For an image seen at an earlier
    /// index, here again for new writes in flight only: each site's number
    /// among this index's in-flight sites (`--damage-site` numbers it
    /// after the image's own sites, counted again for a repro).
    in_flight_numbers: Option<Vec<usize>>,
}

/// What makes an in-flight site the same as one already planned on the
/// same durable image: the same bytes at the same place.
type SiteKey = (std::path::PathBuf, u64, Vec<u8>);

/// One damaged recovery: an image's site, opened one way.
#[derive(Clone, Copy)]
struct Run {
    image: usize,
    site: usize,
    point_in_time: bool,
}

/// Explore `--damage` over `recording`'s durable images: the counts and
/// the failures in merge order. `Err` if `--damage-site` names no site of
/// the `--only-io` image.
pub(super) fn explore<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    recording: &Recording<T::Context>,
    options: &ExploreOptions,
) -> Result<(DamageReport, Vec<ExploreFailure>), String> {
    let started = Instant::now();
    let damaging = target.damage().expect("checked by the caller");
    let images = durable_images(damaging, seed, recording, options);
    let ways: &[bool] = if damaging.opens_at_a_point_in_time() { &[false, true] } else { &[false] };
    let (runs, capped) = plan_runs(&images, ways, options)?;
    let progress = options.progress.then_some("recovering damaged durable images");
    let verdicts = map_in_order(&runs, options.jobs, progress, |run| {
        let image = &images[run.image];
        let site = &image.sites[run.site];
        let (damaged, damage) = image
            .snapshot
            .damaged(&image.image, &site.path, site.offset_bytes, &site.bytes, site.kind)
            .expect("a site that changes nothing was planned out");
        let context = &recording.contexts[image.context].context;
        damaging.recover_damaged(seed, &damaged, &damage, run.point_in_time, context)
    });
    let distinct = images.iter().map(|image| image.durable + 1).max().unwrap_or(0);
    let mut members = vec![Vec::new(); distinct];
    for image in &images {
        members[image.durable].push(image);
    }
    let per_durable = members.iter().map(|of| of.iter().flat_map(|image| image.sites.iter()));
    let reach = damage_reach::reach(damaging.damage_ways(), per_durable);
    let mut report = DamageReport {
        reach,
        images: distinct as u64,
        sites: images.iter().map(|image| image.sites.len() as u64).sum(),
        recoveries: runs.len() as u64,
        capped,
        ..DamageReport::default()
    };
    let mut failures = Vec::new();
    for (run, verdict) in runs.iter().zip(verdicts) {
        match verdict {
            Ok(DamageVerdict::Refused) => report.refused += 1,
            Ok(DamageVerdict::Opened) => report.opened += 1,
            Err(failed) => failures.push(failure(target, seed, ops, recording, &images, run, failed)),
        }
    }
    report.elapsed_sec = started.elapsed().as_secs_f64();
    Ok((report, failures))
}

/// The recording's distinct durable images, each at the first crash index
/// it appears (with `--only-io`, that index's alone), with their sites and
/// those of the writes in flight there; and again at each later index
/// where writes in flight damage one in a way not yet planned.
fn durable_images<C>(
    damaging: &dyn ExploreDamage<C>,
    seed: u64,
    recording: &Recording<C>,
    options: &ExploreOptions,
) -> Vec<Image> {
    // Each distinct image's hash: its number, and the in-flight sites
    // planned on it so far.
    let mut seen: BTreeMap<u64, (usize, BTreeSet<SiteKey>)> = BTreeMap::new();
    let mut images = Vec::new();
    let mut previous: Option<&Arc<DiskSnapshot>> = None;
    for io_index in recording.disk.io_indices() {
        let snapshot = recording.disk.before_io(io_index).expect("an index of the recording");
        // Runs of I/Os that change nothing share one snapshot.
        let same_as_previous = previous.is_some_and(|p| Arc::ptr_eq(p, snapshot));
        previous = Some(snapshot);
        if options.only_io.is_some_and(|only| only != io_index) || (same_as_previous && options.only_io.is_none()) {
            continue;
        }
        let image = snapshot.durable_image();
        let in_flight = snapshot.in_flight_writes(&image);
        let in_flight_sites =
            if in_flight.is_empty() { Vec::new() } else { damaging.in_flight_damage_sites(seed, &image, &in_flight) };
        let next_number = seen.len();
        let (durable, planned) = seen.entry(image.hash()).or_insert_with(|| (next_number, BTreeSet::new()));
        let first_seen = *durable == next_number || options.only_io.is_some();
        let mut new_sites = Vec::new();
        let mut in_flight_numbers = Vec::new();
        for (number, site) in in_flight_sites.into_iter().enumerate() {
            if planned.insert((site.path.clone(), site.offset_bytes, site.bytes.clone())) || first_seen {
                in_flight_numbers.push(number);
                new_sites.push(site);
            }
        }
        let (context, durable) = (recording.context_at(io_index), *durable);
        let snapshot = snapshot.clone();
        if first_seen {
            let mut sites = damaging.damage_sites(seed, &image);
            sites.extend(new_sites);
            images.push(Image { io_index, context, snapshot, image, sites, durable, in_flight_numbers: None });
        } else if !new_sites.is_empty() {
            let in_flight_numbers = Some(in_flight_numbers);
            images.push(Image { io_index, context, snapshot, image, sites: new_sites, durable, in_flight_numbers });
        }
    }
    images
}

/// Every run in merge order (image, site, default then point-in-time
/// where the target opens both `ways`),
/// sites that change no byte left out, cut at `--max-damage-states`; and
/// whether the cut took any.
fn plan_runs(images: &[Image], ways: &[bool], options: &ExploreOptions) -> Result<(Vec<Run>, bool), String> {
    if let (Some(site), Some(image)) = (options.damage_site, images.first()) {
        if site >= image.sites.len() {
            return Err(format!(
                "--damage-site {site}: the durable image at crash index {} has {} damage sites",
                image.io_index,
                image.sites.len()
            ));
        }
    }
    let mut runs = Vec::new();
    for (index, image) in images.iter().enumerate() {
        for (site_index, site) in image.sites.iter().enumerate() {
            if options.damage_site.is_some_and(|only| only != site_index) {
                continue;
            }
            if image.snapshot.damage(&image.image, &site.path, site.offset_bytes, &site.bytes).is_none() {
                continue;
            }
            for &point_in_time in ways {
                if options.max_damage_states.is_some_and(|max| runs.len() as u64 >= max) {
                    return Ok((runs, true));
                }
                runs.push(Run { image: index, site: site_index, point_in_time });
            }
        }
    }
    Ok((runs, false))
}

/// The failure `(check, detail)` of `run`, with the command that
/// recovers that damaged image again (both ways).
fn failure<T: Target>(
    target: &T,
    seed: u64,
    ops: u64,
    recording: &Recording<T::Context>,
    images: &[Image],
    run: &Run,
    (check, detail): (crate::failure::Check, String),
) -> ExploreFailure {
    let image = &images[run.image];
    let site = &image.sites[run.site];
    let how = if run.point_in_time { "opened at a point in time" } else { "opened the default way" };
    // The site's number as `--only-io` numbers that image's sites: its own
    // first, then those of the writes in flight there.
    let number = match &image.in_flight_numbers {
        None => run.site,
        Some(numbers) => {
            let damaging = target.damage().expect("exploring damage");
            damaging.damage_sites(seed, &image.image).len() + numbers[run.site]
        }
    };
    let extra = format!(" --damage --only-io {} --damage-site {number}", image.io_index);
    ExploreFailure {
        io_index: Some(image.io_index),
        state: None,
        then: None,
        fault_io: None,
        fault_kind: None,
        damage_site: Some(number),
        op: recording.contexts[image.context].what.clone(),
        description: format!("the durable image, damaged: {}; {how}", site.what),
        check,
        detail,
        repro: target.explore_repro(seed, ops, &extra),
    }
}
