//! The command line every target shares, as building blocks a binary
//! assembles (`sim`, a kit user's own): the run flags and their parsing
//! (`args.rs`), the runs they ask for — one seed, a range, a soak, shards,
//! `--jobs`, `--json`, `--trace`, `--check-determinism`, `--shrink`,
//! `--replay`, `merge` (`run.rs`) — each seed in a child process of its
//! own (`isolate.rs`) or children that serve seed after seed
//! (`isolate_reuse.rs`), `explore`'s flags (`explore_flags.rs`) and one
//! exploration run and printed (`explored.rs`), and saved `.ops` files
//! replayed (`replay.rs`).
//!
//! Exit status everywhere: 0 no failure, 1 a failure found, 2 bad usage.

pub mod args;
pub mod explore_flags;
pub mod explored;
pub mod isolate;
pub mod isolate_reuse;
pub mod replay;
pub mod run;
