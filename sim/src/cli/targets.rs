//! The registry of the `sim` binary's targets: which systems `--target`
//! can name, what each is, and how each is built from the flags.
//!
//! This is the one place that names the built-in targets. Everything
//! below it is generic over [`Target`] (`crate::seam`); here each target
//! is erased behind [`Runnable`], so the command line's three entry
//! points — a run (`sim`), an exploration (`sim explore`) and an `.ops`
//! file's replay — look a target up by name and call it, with no `match`
//! over a closed list. A new built-in target is one row of [`TARGETS`].

use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use engine::aof::FsyncPolicy;

use super::args::{usage_error, RunArgs};
#[cfg(any(feature = "redb", feature = "sqlite"))]
use super::crash_os::run as run_crash_os;
use super::crash_os::CrashOsArgs;
use super::explored::{run as explore_and_report, ExploreRequest};
use super::replay::replay_as;
use super::run::{run_target, Hooks};
use crate::canary::Canary;
use crate::config::Overrides;
use crate::disk::{CrashMode, FsProfile};
#[cfg(any(feature = "redb", feature = "sqlite"))]
use crate::kit::{Adapter, Harsh, Kit, KitSettings};
use crate::seam::{Replayed, Target};
use crate::shrink::ops_file_name;
#[cfg(any(feature = "redb", feature = "sqlite"))]
use crate::systems::built_in;
#[cfg(feature = "redb")]
use crate::systems::redb::RedbAdapter;
use crate::systems::segsim::SegsimTarget;
#[cfg(feature = "sqlite")]
use crate::systems::sqlite::SqliteAdapter;
use crate::systems::SEGSIM;

/// One target `--target` can name.
pub struct Registered {
    /// The name on the command line and in `.ops` files.
    pub name: &'static str,
    /// What it is, for `--help` and the error that lists the targets.
    pub about: &'static str,
    /// The bugs `--plant` can plant under it: name and what it does.
    pub plants: fn() -> Vec<(&'static str, &'static str)>,
    /// The target with these flags, or why they do not apply to it.
    build: fn(&TargetFlags) -> Result<Box<dyn Runnable>, String>,
    /// `sim crash-os --target NAME` (a kit target's; segsim refuses it:
    /// its own is `make crash-os`).
    crash_os: fn(&CrashOsArgs) -> ExitCode,
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl Registered {
    /// This target with `flags`, or what in them does not apply to it.
    pub fn build(&self, flags: &TargetFlags) -> Result<Box<dyn Runnable>, String> {
        (self.build)(flags)
    }

    /// `sim crash-os` on this target with `args`.
    pub fn crash_os(&self, args: &CrashOsArgs) -> ExitCode {
        (self.crash_os)(args)
    }

    /// Whether commands and `.ops` files need not name it.
    pub fn is_default(&self) -> bool {
        std::ptr::eq(self, &TARGETS[0])
    }
}

/// Every built-in target, the default first (redb and SQLite only in a
/// build with their features, the default).
pub static TARGETS: &[Registered] = &[
    Registered {
        name: SEGSIM,
        about: "the segsim store (engine/), the default",
        plants: Vec::new,
        build: segsim,
        crash_os: |_| {
            usage_error(
                "sim crash-os",
                "crash-os runs a kit target (--target redb); the segsim store's real-disk crash test is `make \
                 crash-os` (engine/examples/crash_os.rs)",
            )
        },
    },
    #[cfg(feature = "redb")]
    Registered {
        name: "redb",
        about: "redb (crates.io redb 4) through its StorageBackend, on the kit (REDB.md)",
        plants: plants_of::<RedbAdapter>,
        build: |flags| kit(RedbAdapter, flags),
        crash_os: |args| run_crash_os(built_in(RedbAdapter, KitSettings::default()), args),
    },
    #[cfg(feature = "sqlite")]
    Registered {
        name: "sqlite",
        about: "SQLite (the bundled amalgamation) through its own VFS, on the kit (SQLITE.md)",
        plants: plants_of::<SqliteAdapter>,
        build: |flags| kit(SqliteAdapter, flags),
        crash_os: |args| run_crash_os(built_in(SqliteAdapter, KitSettings::default()), args),
    },
];

/// The plants of `A`'s adapter: name and what it does.
#[cfg(any(feature = "redb", feature = "sqlite"))]
fn plants_of<A: Adapter>() -> Vec<(&'static str, &'static str)> {
    use crate::kit::Plant;
    A::Plant::ALL.iter().map(|plant| (plant.name(), plant.what())).collect()
}

/// `--plant`'s long help: every built-in target's plants, from their
/// adapters (so it cannot drift from them).
pub fn plant_help() -> String {
    let mut help = String::from(
        "With a kit target: plant one of its adapter's bugs under the engine (proves the checks can fail):",
    );
    for target in TARGETS {
        for (name, what) in (target.plants)() {
            help.push_str(&format!("\n  {name} ({}): {what}", target.name));
        }
    }
    help
}

/// The command line with `--plant`'s long help listing every target's
/// plants.
pub fn plants_listed(command: clap::Command) -> clap::Command {
    command.mut_arg("plant", |arg| arg.long_help(plant_help()))
}

/// The target called `name` (a `--target` value parser).
pub fn lookup(name: &str) -> Result<&'static Registered, String> {
    TARGETS.iter().find(|target| target.name == name).ok_or_else(|| {
        let names: Vec<&str> = TARGETS.iter().map(|target| target.name).collect();
        format!("no target is called {name:?}; the targets are: {}", names.join(", "))
    })
}

/// The command-line flags that pick the target and the kit targets' own
/// settings, shared by `sim` and `sim explore` (each adds the rest).
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// The system under test: segsim (the default), redb (see REDB.md) or
    /// sqlite (SQLITE.md).
    #[arg(long, value_name = "NAME", value_parser = lookup, default_value = SEGSIM)]
    pub target: &'static Registered,

    /// With a kit target: plant one of its adapter's bugs under the engine
    /// (--help lists them).
    #[arg(long, value_name = "NAME")]
    pub plant: Option<String>,

    /// With a kit target: torn sectors may hold garbage (and `sim explore`
    /// explores those crash states too) even if the engine documents that
    /// they do not; redb relies on its header sector being written
    /// atomically (REDB.md).
    #[arg(long)]
    pub torn_garbage: bool,

    /// With a kit target: force part of the engine's configuration
    /// (repeatable; the adapter names its options).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub options: Vec<String>,

    /// With a kit target whose engine has readers (redb, up to 5 clients;
    /// sqlite, up to 4): each seed draws 1 to N clients, the writer and
    /// readers beside it, each reader's read-only transaction held to the
    /// one committed state it began on (check `isolation`); where the
    /// writer's commit waits for readers (sqlite's rollback journals:
    /// SQLITE_BUSY), the readers end and the commit is retried. Default 1.
    #[arg(long, value_name = "N")]
    pub clients: Option<usize>,

    /// With --clients on sqlite: readers also step inside the writer's
    /// operations, between two of its I/Os (a commit's WAL frames and its
    /// commit frame, a checkpoint's copy and its truncate), where the seed
    /// draws; overlapping histories, each reader held to any state
    /// committed while it began.
    #[arg(long)]
    pub interleave: bool,
}

/// Every flag some target takes, gathered from whichever command line
/// parsed them; each target's builder refuses the ones it does not take.
#[derive(Clone, Debug, Default)]
pub struct TargetFlags {
    /// Segsim: plant an engine canary.
    pub canary: Option<Canary>,
    /// Segsim: force the fsync policy.
    pub fsync: Option<FsyncPolicy>,
    /// Segsim: point-in-time recovery in every seed.
    pub point_in_time: bool,
    /// Kit: plant an adapter's bug.
    pub plant: Option<String>,
    /// Kit: torn sectors may hold garbage.
    pub torn_garbage: bool,
    /// Kit: reads may flip a bit.
    pub read_bitflips: bool,
    /// Kit: forced configuration, `KEY=VALUE`.
    pub options: Vec<String>,
    /// Kit: up to this many clients per seed.
    pub clients: Option<usize>,
    /// Kit: readers step inside the writer's operations.
    pub interleave: bool,
    /// Operations per seed.
    pub ops: Option<u64>,
    /// A forced crash mode.
    pub crash_mode: Option<CrashMode>,
    /// The file-system profile.
    pub fs: FsProfile,
}

impl TargetFlags {
    /// The flags of `args` (the rest left as they are).
    pub fn with_target_args(self, args: &TargetArgs) -> TargetFlags {
        TargetFlags {
            plant: args.plant.clone(),
            torn_garbage: args.torn_garbage,
            options: args.options.clone(),
            clients: args.clients,
            interleave: args.interleave,
            ..self
        }
    }
}

/// A target behind the registry: what the command line does with it.
pub trait Runnable {
    /// `sim [RUN FLAGS]`: the random mode (one seed, a sweep, a soak, a
    /// replay, a shrink).
    fn run(self: Box<Self>, run: &RunArgs, hooks: &Hooks<'_>) -> ExitCode;

    /// `sim explore`: explore one seed and print the report.
    fn explore(&self, request: &ExploreRequest) -> ExitCode;

    /// Replay an `.ops` file's `text` (`--report`: draw its page there).
    fn replay(self: Box<Self>, text: &str, report: Option<&Path>) -> Result<Replayed, String>;

    /// The command line that reruns `seed` with this target's settings:
    /// what the flags built, for a person (and the tests).
    fn repro(&self, seed: u64) -> String;
}

impl<T: Target + 'static> Runnable for T {
    fn run(self: Box<Self>, run: &RunArgs, hooks: &Hooks<'_>) -> ExitCode {
        run_target(run, *self, hooks)
    }

    fn explore(&self, request: &ExploreRequest) -> ExitCode {
        explore_and_report(self, request)
    }

    fn replay(self: Box<Self>, text: &str, report: Option<&Path>) -> Result<Replayed, String> {
        replay_as(*self, text, report)
    }

    fn repro(&self, seed: u64) -> String {
        Target::repro(self, seed, "")
    }
}

/// The segsim store with `flags`.
fn segsim(flags: &TargetFlags) -> Result<Box<dyn Runnable>, String> {
    if flags.plant.is_some() || flags.torn_garbage || flags.read_bitflips || !flags.options.is_empty() {
        return Err("--plant, --torn-garbage, --read-bitflips and --set are the kit targets': add --target redb".into());
    }
    if flags.clients.is_some() {
        return Err("--clients runs readers beside a kit target's writer: add --target redb or --target sqlite".into());
    }
    Ok(Box::new(SegsimTarget::new(Overrides {
        ops: flags.ops,
        fsync: flags.fsync,
        crash_mode: flags.crash_mode,
        point_in_time: flags.point_in_time,
        fs: flags.fs,
        canary: flags.canary,
    })))
}

/// A built-in kit target of `adapter` with `flags`.
#[cfg(any(feature = "redb", feature = "sqlite"))]
fn kit<A: Adapter + 'static>(adapter: A, flags: &TargetFlags) -> Result<Box<dyn Runnable>, String> {
    let name = adapter.name();
    if flags.fsync.is_some() || flags.point_in_time {
        return Err(format!(
            "--fsync and --point-in-time are the segsim store's; {name}'s durability is its own (--set)"
        ));
    }
    if flags.canary.is_some() {
        return Err(format!("--canary plants a bug in the segsim engine; under {name} use --plant"));
    }
    let mut settings =
        KitSettings { ops: flags.ops, crash_mode: flags.crash_mode, fs: flags.fs, ..KitSettings::default() };
    settings.harsh = Harsh { torn_garbage: flags.torn_garbage, read_bitflips: flags.read_bitflips };
    let mut target: Kit<A> = built_in(adapter, settings);
    target.apply_args(flags.plant.as_deref(), &flags.options, flags.clients)?;
    target.set_interleave(flags.interleave)?;
    Ok(Box::new(target))
}

/// Replay an `.ops` file under the target its `target` line names (none:
/// the default), with `canary` planted where that target takes one.
/// Errors say what in the file is wrong. With `report`, the run's page is
/// written there (`crate::report`).
pub fn replay(text: &str, canary: Option<Canary>, report: Option<&Path>) -> Result<Replayed, String> {
    let target = match ops_file_name(text)? {
        Some(name) => lookup(&name)?,
        None => &TARGETS[0],
    };
    target.build(&TargetFlags { canary, ..TargetFlags::default() })?.replay(text, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_is_found_by_its_name_and_the_default_is_first() {
        for target in TARGETS {
            assert!(std::ptr::eq(lookup(target.name).unwrap(), target));
            assert!(target.build(&TargetFlags::default()).is_ok(), "{} builds with no flags", target.name);
        }
        assert!(TARGETS[0].is_default() && TARGETS[1..].iter().all(|target| !target.is_default()));
        assert_eq!(TARGETS[0].name, SEGSIM);
        let names: Vec<&str> = TARGETS.iter().map(|target| target.name).collect();
        assert!(lookup("sqlite3").unwrap_err().contains(&names.join(", ")));
    }

    #[test]
    fn help_lists_every_targets_plants_from_its_adapter() {
        let help = plant_help();
        for target in TARGETS {
            for (name, what) in (target.plants)() {
                assert!(help.contains(&format!("{name} ({}): {what}", target.name)), "{help}");
            }
        }
        #[cfg(feature = "redb")]
        assert!(help.contains("redb-no-sync (redb)"), "{help}");
    }

    #[test]
    fn a_flag_of_another_kind_of_target_is_refused() {
        let planted = TargetFlags { plant: Some("redb-no-sync".into()), ..TargetFlags::default() };
        assert!(lookup("segsim").unwrap().build(&planted).err().unwrap().contains("kit targets'"));
        #[cfg(feature = "redb")]
        {
            let fsync = TargetFlags { fsync: Some(FsyncPolicy::Always), ..TargetFlags::default() };
            assert!(lookup("redb").unwrap().build(&fsync).err().unwrap().contains("segsim store's"));
            assert!(lookup("redb").unwrap().build(&planted).is_ok());
        }
    }

    /// Without the third-party features, `sim` knows segsim alone (a kit
    /// user's build compiles neither redb nor SQLite).
    #[cfg(not(any(feature = "redb", feature = "sqlite")))]
    #[test]
    fn without_the_features_only_segsim_is_registered() {
        assert_eq!(TARGETS.len(), 1);
        assert!(lookup("redb").unwrap_err().contains("the targets are: segsim"));
    }
}
