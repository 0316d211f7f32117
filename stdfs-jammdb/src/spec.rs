//! What jammdb promises, as the kit's [`Spec`], each declaration with
//! where jammdb says it (jammdb 0.11.0 as published on crates.io, which is
//! also what docs.rs renders: file and line of the crate's source).
//!
//! - **One level: a commit is durable.** jammdb "offers ACID compliance"
//!   (`src/lib.rs` line 10, README line 21) and its examples commit "so
//!   they are saved to disk" (`src/lib.rs` line 44, README line 68). It
//!   has no setting that weakens this (no `NoSync`, unlike BoltDB):
//!   `Tx::commit` writes the changed pages and the meta page and then
//!   calls `File::sync_all` before it returns (`TxInner::write_data`,
//!   `src/tx.rs` lines 281–357). [`Promise::Durable`].
//! - **A failed commit is in doubt** (the kit's default): `Tx::commit`
//!   documents only that it "will return an IOError … if there are any io
//!   errors while writing to disk" (`src/tx.rs` lines 253–258), not what
//!   is left; its meta page may have been written before the sync failed.
//! - **An empty commit makes earlier commits durable**: every commit
//!   writes a new meta page and syncs, whatever changed (`write_data`),
//!   so `empty_commit_makes_durable` keeps the kit's default, `true`.
//! - **A clean close**: jammdb has none (dropping the `DB` closes the
//!   file); every commit was synced when it returned, so the kit's
//!   default (`close_makes_durable`) holds by the level alone.
//! - **Faults**: the meta pages carry a hash (FNV-1a over their fields,
//!   `Meta::hash_self`, `src/meta.rs` lines 21–40) and the newer valid
//!   one wins (`DBInner::meta`, `src/db.rs` lines 284–345), so torn
//!   garbage in a meta page written but not synced is tolerated; data
//!   pages carry no checksum, so read bit flips are not, and no damage
//!   detection is declared.

use stdfs_layer::kit::{KeyKind, Level, Promise, Spec, TableSpec, Tolerances};

/// `t0`: bucket `t0` of `u64` keys (big-endian, so byte order is numeric
/// order); `t1`: bucket `t1` of byte keys.
pub const TABLES: &[TableSpec] =
    &[TableSpec { name: "t0", keys: KeyKind::U64 }, TableSpec { name: "t1", keys: KeyKind::Bytes }];

/// The spec of every configuration (page size, initial size, strict mode
/// and `MAP_POPULATE` change no promise).
pub fn spec() -> Spec {
    Spec {
        tables: TABLES,
        tolerates: Tolerances { torn_garbage: true, read_bitflips: false },
        ..Spec::new(vec![Level::new("commit", Promise::Durable)])
    }
}
