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
/// Added to an operation's fault seed, plus the attempt and the depth, for
/// each open attempt of a recovery ([`open_attempt`]).
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

/// Mixed into an operation's fault seed for the power loss that stands
/// for the remount of a shut-down file system ([`remount`]).
const REMOUNT_SALT: u64 = 0x4E3_0000_7E30;
/// Salt of a kit target's operation list ([`kit_workload`]).
const KIT_WORKLOAD_SALT: u64 = 0x4b49_5457_4f52_4b00;
/// Salt of a kit seed's clients ([`kit_clients`]): "CLIENTS".
const KIT_CLIENTS_SALT: u64 = 0x434c_4945_4e54_5300;
/// Mixed into an operation's fault seed for its power losses ([`crash`]).
/// (The kit's salt when the kit's loop became the one loop: its targets'
/// seeds kept their meaning.)
const CRASH_SALT: u64 = 0x4b49_5443_c4a5_0000;
/// Added to an operation's crash stream, plus the depth, for the coin of a
/// power loss inside its recovery ([`crash_in_recovery`]).
const RECOVERY_CRASH_SALT: u64 = 0x7EC0;
/// Salt of `crash-os`'s kill schedule on the real disk ([`crash_os_kills`]).
const CRASH_OS_KILL_SALT: u64 = 0x4b49_4c4c_0050_0000;
/// Mixed into the seed, with the chunk's number, for each chunk of
/// `crash-os`'s endless workload after the first ([`crash_os_chunk`]).
const CRASH_OS_CHUNK_SALT: u64 = 0x4348_554e_4b00_0000;

/// The ChaCha seed of the swarm configuration (`config.rs`).
pub fn config(seed: u64) -> u64 {
    seed ^ CONFIG_SALT
}

/// The ChaCha seed of the operation list (segsim-target's `workload/`).
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

/// The stream a power loss during operation `index`, `depth` power losses
/// into its recovery, draws what survives from.
pub fn crash(seed: u64, index: u64, depth: u64) -> u64 {
    faults(seed, index) ^ CRASH_SALT ^ depth
}

/// The fault stream of open attempt `attempt` of the recovery `depth`
/// power losses into operation `index`'s recovery.
pub fn open_attempt(seed: u64, index: u64, attempt: u64, depth: u64) -> u64 {
    faults(seed, index) ^ (OPEN_ATTEMPT_SALT + attempt + (depth << 8))
}

/// The stream that decides whether operation `index`, a rewrite or FLUSHALL
/// that drew no crash from the workload stream, is aimed at one of manifest
/// compaction's phases (segsim-target's `workload/generator.rs`). A
/// stream of its own, so that the workload stream, and with it every
/// operation list, is what it was before compaction existed.
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

/// After how many I/Os the run's first open (the store's creation)
/// crashes, if it does: one seed in eight, after one of its first 24 I/Os,
/// from a stream of its own (the other seeds run exactly as before).
pub fn crash_in_creation(seed: u64) -> Option<u64> {
    let coin = splitmix64(seed ^ CREATION_SALT);
    coin.is_multiple_of(8).then_some((coin >> 8) % 24)
}

/// Whether a store poisoned during operation `index` is restarted by a
/// power loss (else by a process restart, page cache kept): a coin from
/// the operation's fault stream.
pub fn poisoned_by_power_loss(seed: u64, index: u64) -> bool {
    faults(seed, index) & 1 == 0
}

/// The power loss a remount stands for: a file system that shut itself
/// down (ext4, xfs, btrfs after a failed directory fsync) comes back only
/// by a remount, at I/O `io_index`, while the disk's operation stream was
/// `op_seed` (`disk/ops.rs`, `process_restart`).
pub fn remount(op_seed: u64, io_index: u64) -> u64 {
    splitmix64(op_seed ^ REMOUNT_SALT ^ io_index.rotate_left(32))
}

/// The ChaCha seed of a kit target's swarm configuration (`kit/config.rs`):
/// salted by the target's name (FNV-1a), so two engines' seeds differ.
pub fn kit_config(seed: u64, target_name: &str) -> u64 {
    let salt =
        target_name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    seed ^ salt
}

/// The ChaCha seed of a kit target's operation list (`kit/workload.rs`).
pub fn kit_workload(seed: u64) -> u64 {
    seed ^ KIT_WORKLOAD_SALT
}

/// The ChaCha seed of a kit seed's clients (`kit/config.rs`): how many
/// connections it runs (with `--clients`).
/// Its own stream, so a run with one client draws exactly what it drew
/// before readers existed.
pub fn kit_clients(seed: u64) -> u64 {
    seed ^ KIT_CLIENTS_SALT
}

/// The ChaCha seed of the coin (and the I/O) of a power loss inside the
/// recovery `depth` power losses into operation `index`.
pub fn crash_in_recovery(seed: u64, index: u64, depth: u64) -> u64 {
    crash(seed, index, 0) ^ (RECOVERY_CRASH_SALT + depth)
}

/// The ChaCha seed of `crash-os`'s kill schedule (`kit/crash_os/`): when
/// each cycle's child is killed, from a stream of its own.
pub fn crash_os_kills(seed: u64) -> u64 {
    splitmix64(seed ^ CRASH_OS_KILL_SALT)
}

/// The seed whose kit workload is chunk `chunk` (at least 1) of
/// `crash-os`'s endless workload; chunk 0 is the seed's own workload.
pub fn crash_os_chunk(seed: u64, chunk: u64) -> u64 {
    debug_assert!(chunk > 0, "chunk 0 is the seed's own workload");
    splitmix64(seed ^ CRASH_OS_CHUNK_SALT ^ chunk.rotate_left(32))
}

/// SplitMix64: one step of Steele, Lea and Flood's generator, the mixer
/// every derived stream goes through.
pub fn splitmix64(x: u64) -> u64 {
    mix64(x.wrapping_add(0x9e37_79b9_7f4a_7c15))
}

/// SplitMix64's finaliser alone: a bijection of `u64` that spreads every
/// input bit over the output. For a caller with its own counter (the
/// SQLite VFS's randomness) or its own increment.
pub fn mix64(mut x: u64) -> u64 {
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
            crash(seed, 0, 0),
            crash(seed, 1, 0),
            crash(seed, 0, 1),
            open_attempt(seed, 0, 0, 0),
            open_attempt(seed, 0, 1, 0),
            open_attempt(seed, 0, 0, 1),
            compaction_aim(seed, 0),
            compaction_aim(seed, 1),
            kit_config(seed, "redb"),
            kit_config(seed, "sqlite"),
            kit_workload(seed),
            kit_clients(seed),
            crash_in_recovery(seed, 0, 0),
            crash_in_recovery(seed, 0, 1),
            remount(faults(seed, 0), 0),
            crash_os_kills(seed),
            crash_os_chunk(seed, 1),
            crash_os_chunk(seed, 2),
        ];
        let mut sorted = streams.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), streams.len(), "two streams coincide: {streams:x?}");
        // The kit's streams, pinned to the values they had when they lived
        // in `kit/` (moving them here, and making the kit's loop the one
        // loop, moved no kit target's trace hash).
        assert_eq!(kit_config(7, "redb"), 7 ^ 0x4cf0_831f_bfe6_7c1a);
        assert_eq!(kit_workload(1), 1 ^ 0x4b49_5457_4f52_4b00);
        assert_eq!(crash(seed, 5, 0), faults(seed, 5) ^ 0x4b49_5443_c4a5_0000);
        assert_eq!(open_attempt(seed, 3, 2, 1), faults(seed, 3) ^ (0xA77E_0000 + 2 + 256));
        // The loop's coins, from the same operation's stream: a seed's
        // coins differ from operation to operation.
        let coins =
            |index| [kill_in_op(seed, index), power_after_kill(seed, index), poisoned_by_power_loss(seed, index)];
        assert!((0..64).any(|index| coins(index) != coins(0)), "the loop's coins never change");
        assert_eq!(splitmix64(5), mix64(5u64.wrapping_add(0x9e37_79b9_7f4a_7c15)));
    }
}
