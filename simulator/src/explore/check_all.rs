//! The one parallel check of a plan, for whatever is explored (a
//! [`CrashCheck`]): each distinct image recovered once, on `--jobs`
//! threads, judged in each context it appeared in, and the results merged
//! in plan order so they do not depend on the thread count. `sim explore`
//! and `sim trace explore` both check through it.

use crate::failure::Check;
use crate::seam::RecordedContext;

use super::check::{CheckAt, CrashCheck};
use super::parallel::map_in_order;
use super::plan::Plan;
use super::ExploreOptions;

/// One recovery of the plan, checked: what `failed` made of each check
/// that failed (in plan order), and what it recovered if `keep` asked.
pub struct Checked<F, R> {
    /// The failed checks, as the caller's `failed` turned them.
    pub failures: Vec<F>,
    /// What the recovery returned (with `keep`).
    pub recovered: Option<R>,
}

/// Recover every distinct image of `plan` on `options.jobs` threads and
/// judge each in its contexts (`contexts`, the recording's, by number):
/// per recovery, in plan order, `failed(at, context, verdict)` of every
/// check that failed, and (with `keep`) what it recovered. `failed` runs on
/// the worker threads too.
pub fn check_all<X: CrashCheck, F: Send>(
    explored: &X,
    contexts: &[RecordedContext<X::Context>],
    plan: &Plan,
    options: &ExploreOptions,
    keep: bool,
    failed: impl Fn(&CheckAt, &RecordedContext<X::Context>, (Check, String)) -> F + Sync,
) -> Vec<Checked<F, X::Recovered>> {
    let progress = options.progress.then_some("recovering distinct crash states");
    map_in_order(&plan.recoveries, options.jobs, progress, |recovery| {
        debug_assert!(!recovery.checks.is_empty(), "a recovery's first occurrence is its first check");
        let image = recovery.snapshot.image(&recovery.crash_state);
        let recovered = explored.recover(&image, recovery.key, &recovery.checks[0]);
        let mut failures = Vec::new();
        for at in &recovery.checks {
            let context = &contexts[at.context];
            if let Err(verdict) = explored.judge(&recovered, &context.context) {
                failures.push(failed(at, context, verdict));
            }
        }
        Checked { failures, recovered: keep.then_some(recovered) }
    })
}
