//! Every random stream a seed derives, named in one place.
//!
//! One `u64` seed decides a whole run, through several independent
//! streams. They are independent on purpose: shrinking deletes workload
//! operations and must not reshuffle the faults of the others, so faults
//! are drawn from a stream keyed by the seed *and the operation's index*,
//! never from one stream consumed in order. Keeping every derivation here
//! makes two streams that accidentally coincide, or a stream re-derived
//! differently in two files, visible at a glance.
//!
//! The constants are part of every seed's meaning: changing one changes
//! every trace hash.

/// Salt of the configuration stream ([`config`]).
const CONFIG_SALT: u64 = 0x5357_4152_4d00_0001;
/// Salt of the workload stream ([`workload`]).
const WORKLOAD_SALT: u64 = 0x574f_524b_4c4f_4144;
/// Mixed into an operation's fault seed for its crash choices ([`crash`]).
const CRASH_SALT: u64 = 0xC4A5_0000;
/// Added to an operation's fault seed, plus the attempt, for each open
/// attempt of a recovery ([`open_attempt`]).
const OPEN_ATTEMPT_SALT: u64 = 0xA77E_0000;
/// Mixed into an operation's fault seed for aiming a crash at manifest
/// compaction ([`compaction_aim`]).
const COMPACTION_AIM_SALT: u64 = 0xC0_3BAC_0000;
/// Mixed into an operation's fault seed for the coins of a kill inside it
/// ([`kill_in_op`], [`power_after_kill`]).
const KILL_SALT: u64 = 0x4B11_1000_0000;
/// Mixed into the seed for a crash inside the store's creation
/// ([`crash_in_creation`]).
const CREATION_SALT: u64 = 0xC4EA_7E00_0000;

/// The ChaCha seed of the swarm configuration (`config.rs`).
pub fn config(seed: u64) -> u64 {
    seed ^ CONFIG_SALT
}

/// The ChaCha seed of the operation list (`workload.rs`).
pub fn workload(seed: u64) -> u64 {
    seed ^ WORKLOAD_SALT
}

/// The fault stream of operation `index` (the disk reseeds with it when
/// the operation begins).
pub fn faults(seed: u64, index: u64) -> u64 {
    splitmix64(splitmix64(seed) ^ index)
}

/// The fault stream of the run's first open, before any operation.
pub fn initial_open(seed: u64) -> u64 {
    faults(seed, u64::MAX)
}

/// The stream a power loss during operation `index` draws what survives
/// from.
pub fn crash(seed: u64, index: u64) -> u64 {
    splitmix64(faults(seed, index) ^ CRASH_SALT)
}

/// The fault stream of open attempt `attempt` of a recovery during
/// operation `index`.
pub fn open_attempt(seed: u64, index: u64, attempt: u64) -> u64 {
    faults(seed, index) ^ (OPEN_ATTEMPT_SALT + attempt)
}

/// The stream that decides whether operation `index`, a rewrite or FLUSHALL
/// that drew no crash from the workload stream, is aimed at one of manifest
/// compaction's phases (`workload.rs`). A stream of its own, so that the
/// workload stream, and with it every operation list, is what it was before
/// compaction existed.
pub fn compaction_aim(seed: u64, index: u64) -> u64 {
    splitmix64(faults(seed, index) ^ COMPACTION_AIM_SALT)
}

/// Whether the crash point reached inside operation `index` is a process
/// kill (memory lost, the page cache kept) rather than a power loss: one
/// time in four, from a stream of its own, so a seed whose crash points
/// stay power losses runs exactly as before kills existed.
pub fn kill_in_op(seed: u64, index: u64) -> bool {
    splitmix64(faults(seed, index) ^ KILL_SALT).is_multiple_of(4)
}

/// Whether, once the store killed inside operation `index` is reopened
/// and checked, the power goes too (half the time): what the recovery
/// built on bytes the dead process never synced must survive it.
pub fn power_after_kill(seed: u64, index: u64) -> bool {
    splitmix64(faults(seed, index) ^ KILL_SALT ^ 1) & 1 == 0
}

/// Whether the recovery during operation `index` is preceded by a
/// read-only inspection of the crashed directory (one in four), from a
/// stream of its own.
pub fn inspect_read_only(seed: u64, index: u64) -> bool {
    splitmix64(faults(seed, index) ^ KILL_SALT ^ 2).is_multiple_of(4)
}

/// Where the run's first open (the store's creation) crashes, if it does:
/// one seed in eight, after one of its first 24 I/Os, from a stream of
/// its own (the other seeds run exactly as before).
pub fn crash_in_creation(seed: u64) -> Option<crate::disk::CrashPoint> {
    let coin = splitmix64(seed ^ CREATION_SALT);
    coin.is_multiple_of(8).then_some(crate::disk::CrashPoint::AfterIos((coin >> 8) % 24))
}

/// Whether a store poisoned during operation `index` is restarted by a
/// power loss (else by a process restart, page cache kept): a coin from
/// the operation's fault stream.
pub fn poisoned_by_power_loss(seed: u64, index: u64) -> bool {
    faults(seed, index) & 1 == 0
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_fixed_and_distinct() {
        // Pinned: a change here changes every seed's run.
        assert_eq!(faults(0, 0), splitmix64(splitmix64(0)));
        assert_eq!(config(1), 1 ^ 0x5357_4152_4d00_0001);
        let seed = 42;
        let streams = [
            config(seed),
            workload(seed),
            faults(seed, 0),
            faults(seed, 1),
            initial_open(seed),
            crash(seed, 0),
            open_attempt(seed, 0, 0),
            open_attempt(seed, 0, 1),
            compaction_aim(seed, 0),
            compaction_aim(seed, 1),
        ];
        let mut sorted = streams.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), streams.len(), "two streams coincide: {streams:x?}");
    }
}
