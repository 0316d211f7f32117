//! What persy promises, as the kit's [`Spec`], each declaration with
//! where persy says it (persy 1.8.1's source as published on crates.io,
//! which is also what docs.rs renders: file and line).
//!
//! - Both commit levels are [`Promise::Durable`]: "It guarantee the
//!   persistence of data even in case of crash through a in file write
//!   ahead log" (`src/lib.rs` lines 3–4, the crate doc). Without the
//!   `background_ops` feature (off here) a commit syncs the file before it
//!   returns: `transaction_sync` (`src/persy.rs` line 1011) calls
//!   `device_sync` unconditionally.
//! - `commit` is `Transaction::commit`, "Prepare and Commit a
//!   transaction" (`src/transaction.rs` line 613); `prepare-commit` is
//!   `Transaction::prepare` ("when this method return all the validation
//!   checks are done and is guaranteed that the transaction can be
//!   committed successfully", line 539) then `TransactionFinalize::commit`
//!   ("Finalize the commit result of a prepared commit", line 685).
//! - A failed commit is in doubt (the kit's default): persy documents no
//!   rollback of a commit that returned an error. `Persy::open` recovers
//!   with `|_| true` (`src/lib.rs` line 164): a transaction prepared in
//!   the journal before a crash is committed by the next open, so a commit
//!   that failed after its prepare may well come back.
//! - No damage detection is declared: persy documents none (its checksums
//!   guard its root pages' double buffer, `src/flush_checksum.rs`, and no
//!   API reports a damaged record). So the disk damages no durable byte.
//! - Neither torn garbage nor read bit flips: persy documents neither as
//!   something it tolerates. The disk still tears unsynced writes at
//!   sector granularity (each sector old or new).
//! - No maintenance: persy has no compaction call (it reuses free pages
//!   itself); no documented persistence hazard (one file, made durable by
//!   the application's setup); a clean close has nothing to make durable
//!   (every commit already is).

use simkit::{KeyKind, Level, Promise, Spec, TableSpec, Tolerances};

/// `t0`: persy index `t0` of `u64` keys; `t1`: index `t1` of byte keys
/// (`ByteVec`); both `ByteVec` values, `ValueMode::Replace`.
pub const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

/// Level 0: `Transaction::commit`.
pub const COMMIT: usize = 0;
/// Level 1: `Transaction::prepare` then `TransactionFinalize::commit`.
pub const PREPARE_COMMIT: usize = 1;

/// The spec of every configuration (the cache size changes no promise).
pub fn spec() -> Spec {
    let levels = vec![Level::new("commit", Promise::Durable), Level::new("prepare-commit", Promise::Durable)];
    assert_eq!(levels[COMMIT].name, "commit");
    assert_eq!(levels[PREPARE_COMMIT].name, "prepare-commit");
    Spec { tables: TABLES, tolerates: Tolerances { torn_garbage: false, read_bitflips: false }, ..Spec::new(levels) }
}
