//! What an engine is and promises, in one value: the [`Spec`] an adapter
//! returns for a configuration, and the declarations it is made of —
//! tables, commit levels with their promises, maintenance, phases,
//! documented hazards, the faults it tolerates — plus the typed bugs an
//! adapter can plant ([`Plant`]).
//!
//! One value, so that what a level is called and what it promises cannot
//! be said in two places that disagree; checked once by assertions
//! ([`Spec::check`]), since a malformed spec is the adapter author's
//! mistake, not bad input to refuse.

use std::fmt;

use simulator::disk::Hazard;

/// What a durability level promises about a commit that returned `Ok`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Promise {
    /// It survives any power loss (and so does every commit before it).
    Durable,
    /// A power loss may roll it back, never half-apply it: the recovered
    /// content is some committed state between the last durable commit
    /// and the last acknowledged one.
    Eventual,
    /// It lives in memory until a later durable commit or a clean close
    /// persists it: a power loss before then returns to the last durable
    /// commit, and the commit never survives on its own. (redb's
    /// `Durability::None`.)
    Volatile,
    /// Nothing: after a power loss the content may be anything, even a
    /// half-applied commit, and the engine may refuse to open. Measured
    /// and counted (`unpromised` in the summary), never failed. (SQLite
    /// with `synchronous=OFF`.)
    Nothing,
}

impl Promise {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Promise::Durable => "durable",
            Promise::Eventual => "eventual",
            Promise::Volatile => "volatile",
            Promise::Nothing => "nothing",
        }
    }
}

/// One way to commit, as the engine names it, and what it promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// Printed in operation lines (`COMMIT <name>`): letters, digits and
    /// `-`, no spaces.
    pub name: &'static str,
    /// What a commit at this level that returned `Ok` promises.
    pub promise: Promise,
    /// Whether the engine documents that a commit at this level which
    /// returned an error has been rolled back. `false` (what
    /// [`Level::new`] says): a failed commit is *in doubt* — it may or may
    /// not have taken effect, never half — until a power loss's recovery,
    /// a recovery that shows it or the next acknowledged commit that
    /// changes the content settles it (the kit's model, "Outcomes in
    /// doubt"). Declare `true` only with the place the engine documents
    /// it: then the failed commit's state appearing at any later recovery
    /// fails the run.
    pub failed_commit_rolls_back: bool,
    /// Whether a commit at this level has reached the operating system
    /// (written, maybe not synced) when it returns `Ok`, so that a process
    /// kill — the page cache survives it — cannot take it: after a kill
    /// the newest such commit must come back. [`Level::new`] says `true`
    /// for `Durable` and `Eventual`, `false` for `Volatile` (it lives in
    /// the engine's memory) and `Nothing`. Declare `false` for an engine
    /// that acknowledges commits it holds in its own memory (a group-commit
    /// buffer): they are then held, at a kill, only to the power-loss rule.
    pub survives_process_kill: bool,
}

impl Level {
    /// A level called `name` promising `promise`, whose failed commits are
    /// in doubt, and whose commits survive a process kill unless they
    /// promise less than `Eventual`.
    pub const fn new(name: &'static str, promise: Promise) -> Level {
        let survives_process_kill = matches!(promise, Promise::Durable | Promise::Eventual);
        Level { name, promise, failed_commit_rolls_back: false, survives_process_kill }
    }
}

/// How a table's keys are drawn and printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Printable tokens (`k17`), handed over as their bytes.
    Bytes,
    /// Numbers spread over the whole `u64` range, handed over as 8
    /// big-endian bytes (so byte order is numeric order) and printed in
    /// decimal.
    U64,
}

/// One table of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableSpec {
    /// Its name in operation lines.
    pub name: &'static str,
    /// Its keys.
    pub keys: KeyKind,
}

/// The one table of a spec that declares none of its own ([`Spec::new`]).
pub const ONE_TABLE: &[TableSpec] = &[TableSpec { name: "t0", keys: KeyKind::Bytes }];

/// A maintenance operation the engine offers (compaction, checkpoint),
/// run by [`super::Maintain::maintain`] (the adapter's
/// [`super::Adapter::maintenance`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maintenance {
    /// Printed in operation lines (upper-cased): `COMPACT`.
    pub name: &'static str,
    /// `true`: the kit aborts the open write transaction before calling
    /// it, and when it returns `Ok` everything committed is durable
    /// (redb's `compact()` persists every earlier commit). `false`: it
    /// runs inside whatever transaction is open and must change no
    /// content and promise nothing.
    pub makes_durable: bool,
}

/// What the engine promises to readers beside its one writer
/// ([`Spec::readers`]): read-only transactions on connections of their
/// own, each seeing one committed state — the one committed when it began
/// (snapshot isolation, as MVCC engines give) — however many commits,
/// aborts and write transactions of the writer happen while it is open.
/// A crash, a clean close or a reopen ends every reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Readers {
    /// How many readers may be open at once beside the writer (at least
    /// 1): `--clients N` runs up to `N - 1` of them, no more than this.
    pub max: usize,
    /// Whether a reader may stay open across the engine's maintenance
    /// operation. `false`: the kit ends every reader before it (redb's
    /// `compact()` refuses to run while a read transaction is live).
    pub across_maintenance: bool,
    /// Whether the writer's commit waits for open readers: the engine
    /// refuses it with [`ErrorKind::Busy`](super::ErrorKind::Busy) while
    /// any reader is open, and refuses a reader's begin (`Busy`) while the
    /// writer holds its write lock (SQLite's rollback journal: a writer's
    /// `EXCLUSIVE` lock waits for every reader's `SHARED` one). The kit then
    /// ends every reader and retries the commit once, as an application's
    /// busy handler would; a reader refused at its begin stays closed.
    /// `false` (MVCC engines, SQLite's WAL): a `Busy` is a failure.
    pub writer_waits: bool,
    /// The writer's locks, by the engine's own names, at which a reader's
    /// begin may be refused (`Busy`), for an engine whose writer waits
    /// ([`Readers::writer_waits`]) and whose adapter reports the lock its
    /// writer holds ([`super::ReadTransactions::writer_lock`]): SQLite's
    /// rollback journal refuses a new `SHARED` lock only while another
    /// connection holds `PENDING` or `EXCLUSIVE` (`lockingv3.html`), never
    /// at `RESERVED`. A refusal at any other lock fails the run. Empty, or
    /// an adapter that reports no lock: any refusal inside a write
    /// transaction is accepted.
    pub refused_at: &'static [&'static str],
    /// The locks, by the engine's own names as the adapter reports them
    /// ([`super::ReadTransactions::writer_lock`]), at which a second
    /// writer's begin may be refused as busy
    /// ([`super::ReadTransactions::write_commit`]), besides a writer in
    /// a write transaction by the engine's own account: SQLite refuses
    /// `BEGIN IMMEDIATE` while another connection holds `RESERVED` or
    /// above (`lockingv3.html`: "only a single RESERVED lock may be active
    /// at one time"), or, in WAL mode, the WAL's write lock (`wal.html`:
    /// "there can only be one writer at a time"). Empty for an engine with
    /// one writer.
    pub second_writer_refused_at: &'static [&'static str],
    /// Where the engine documents its readers' isolation, for reports.
    pub documented: &'static str,
}

/// Faults the engine documents that the disk does not do, left out unless
/// a run asks for them (`--torn-garbage`, `--read-bitflips`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tolerances {
    /// A torn sector may hold garbage (not only old or new bytes).
    pub torn_garbage: bool,
    /// A read may return one flipped bit (transient: a re-read is right).
    /// An engine that tolerates it must re-read before it acts on a bad
    /// checksum — repairs, truncates, refuses.
    pub read_bitflips: bool,
}

/// A persistence hazard the engine documents ([`Spec::hazards`]): it
/// fsyncs data in a file whose name is not durable yet (created or renamed
/// with no directory fsync since) and then relies on it, or acknowledges,
/// and says so in its documentation — a durability level that does not
/// sync a journal's directory entry, say. The simulated disk flags every
/// such moment; a declared one is reported (counted in `hazards`), an
/// undeclared one fails the run (check `hazard`).
///
/// A declaration matches the file by identity: by any name the file bore
/// from its unsafe fsync to the hazard ([`Hazard::names`]), so a journal
/// renamed away or replaced by a rename before the operation ended is
/// still the journal (one created and unlinked, both pending, is no
/// hazard at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentedHazard {
    /// The files it concerns: names ending with this (`-journal`).
    pub file_suffix: &'static str,
    /// Where the engine documents it, for the report.
    pub documented: &'static str,
}

impl DocumentedHazard {
    /// Whether `hazard` is this one: some name its file bore ends with
    /// [`DocumentedHazard::file_suffix`].
    pub fn covers(&self, hazard: &Hazard) -> bool {
        hazard.names.iter().any(|name| self.covers_name(name))
    }

    /// Whether a file named `name` (a path) is one this declaration
    /// concerns.
    pub fn covers_name(&self, name: &str) -> bool {
        name.ends_with(self.file_suffix)
    }
}

/// A bug an adapter can plant under its engine, to prove the checks can
/// fail (`--plant NAME`): a type of the adapter's own, usually an enum,
/// so that the adapter matches on it instead of on strings.
///
/// ```
/// # use simkit::Plant;
/// #[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// enum Planted {
///     LazyFsync,
/// }
///
/// impl Plant for Planted {
///     const ALL: &'static [Planted] = &[Planted::LazyFsync];
///     fn name(self) -> &'static str {
///         "lazy-fsync"
///     }
///     fn what(self) -> &'static str {
///         "commit returns before the log is fsynced"
///     }
/// }
/// ```
pub trait Plant: Copy + Eq + fmt::Debug + Send + Sync + 'static {
    /// Every plant, in the order `--help` lists them.
    const ALL: &'static [Self];
    /// The command-line name: letters, digits and `-`.
    fn name(self) -> &'static str;
    /// What it does, for `--help` and reports.
    fn what(self) -> &'static str;
}

/// The plants of an adapter that has none (`type Plant = NoPlant;`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPlant {}

impl Plant for NoPlant {
    const ALL: &'static [NoPlant] = &[];
    fn name(self) -> &'static str {
        match self {}
    }
    fn what(self) -> &'static str {
        match self {}
    }
}

/// The plant of `P` called `name`, or a message listing the ones there are.
pub fn plant_named<P: Plant>(target: &str, name: &str) -> Result<P, String> {
    P::ALL.iter().copied().find(|plant| plant.name() == name).ok_or_else(|| {
        let names: Vec<&str> = P::ALL.iter().map(|plant| plant.name()).collect();
        let known = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        format!("no planted bug is called {name:?}; {target}'s are: {known}")
    })
}

/// `--plant`'s long help: every plant of `P` and what it does, one per
/// line (from the adapter's own declarations, so `--help` cannot drift
/// from them).
pub fn plants_help<P: Plant>(lead: &str) -> String {
    let mut help = lead.to_string();
    if P::ALL.is_empty() {
        help.push_str(" (this engine's adapter plants none)");
    }
    for plant in P::ALL {
        help.push_str(&format!("\n  {}: {}", plant.name(), plant.what()));
    }
    help
}

/// Everything the kit needs to know about an engine, so configured,
/// besides how to call it ([`super::Adapter::spec`]). Start from
/// [`Spec::new`] and set what differs:
///
/// ```
/// # use simkit::*;
/// let spec = Spec {
///     maintenance: Some(Maintenance { name: "compact", makes_durable: true }),
///     ..Spec::new(vec![Level::new("sync", Promise::Durable), Level::new("lazy", Promise::Eventual)])
/// };
/// spec.check();
/// ```
///
/// The names — tables, levels, maintenance, phases — and the tolerances,
/// records, default operation count and how many readers may be open must
/// be the same for every configuration (operation lines are read before
/// any seed is); the promises, hazards, damage detection and how readers
/// behave (across maintenance, whether the writer waits for them) may
/// depend on it. The kit asserts both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The commit levels, at least one. Each seed draws how often each is used.
    pub levels: Vec<Level>,
    /// The tables, at least one (default [`ONE_TABLE`]).
    pub tables: &'static [TableSpec],
    /// The engine's maintenance operation, if it has one (default none).
    pub maintenance: Option<Maintenance>,
    /// The phases the engine names through `Vfs::mark` (say, "log
    /// appended", "synced"): the kit aims some crashes at them
    /// (`@mark=NAME` in an operation line), and traces them. Names are
    /// letters, digits and `-`. Default none.
    pub phases: &'static [&'static str],
    /// The persistence hazards the engine documents: reported, not
    /// failed. Default none, so every hazard the disk flags fails the run.
    pub hazards: &'static [DocumentedHazard],
    /// Faults the engine documents that the disk does not do by default.
    /// Default: both tolerated.
    pub tolerates: Tolerances,
    /// Whether the engine promises to detect damage to its bytes (verify
    /// checksums): only then does the disk damage durable bytes at power
    /// losses, and a `Corrupt` refusal or a rollback to an older commit is
    /// accepted after it. Default `false`.
    pub detects_damage: bool,
    /// Whether [`super::Adapter::records`] describes the engine's files,
    /// so that `sim explore --damage` can run. Default `false`.
    pub describes_records: bool,
    /// Whether a clean close that returned `Ok` has made every commit
    /// durable. Default `true`.
    pub close_makes_durable: bool,
    /// Whether a `Durable` commit of a transaction that changed nothing —
    /// it wrote nothing, or its writes left the content as it was (a
    /// delete of an absent key) — makes every earlier commit durable, as
    /// one that changed something does. Default `true` (redb documents
    /// that a later `Durability::Immediate` commit persists the
    /// `Durability::None` ones before it). Declare `false` for an engine
    /// that syncs nothing for a transaction that changed nothing: the kit
    /// then holds such a commit to `Eventual`, and takes it to keep nothing
    /// through a process kill either (it wrote nothing: an earlier commit
    /// still in the engine's buffer stays there).
    pub empty_commit_makes_durable: bool,
    /// Workload operations per seed by default (200).
    pub default_ops: u64,
    /// Readers beside the writer, if the engine has them (default none:
    /// one client). With them, `--clients N` draws readers' read-only
    /// transactions into the workload ([`super::ReadTransactions::begin_read`],
    /// the adapter's [`super::Adapter::readers`]).
    pub readers: Option<Readers>,
    /// Where the engine documents that an I/O error met by work no caller
    /// waits on (a background flush or compaction) poisons it: later
    /// operations fail with [`ErrorKind::Poisoned`](super::ErrorKind::Poisoned)
    /// until it is reopened. The kit accepts such an error only after a
    /// fault was injected, since the open, in an operation that returned
    /// `Ok`. Default `None`: an error with no fault in its own operation
    /// fails the run (check `reply`).
    pub poisoned_after_fault: Option<&'static str>,
}

impl Spec {
    /// A spec with these commit levels and every other field its default.
    pub fn new(levels: Vec<Level>) -> Spec {
        Spec {
            levels,
            tables: ONE_TABLE,
            maintenance: None,
            phases: &[],
            hazards: &[],
            tolerates: Tolerances { torn_garbage: true, read_bitflips: true },
            detects_damage: false,
            describes_records: false,
            close_makes_durable: true,
            empty_commit_makes_durable: true,
            default_ops: 200,
            readers: None,
            poisoned_after_fault: None,
        }
    }

    /// Assert that the spec is well formed: at least one level and one
    /// table; names that read back from an operation line, none twice;
    /// hazard suffixes distinct and not empty; operations to run.
    pub fn check(&self) {
        assert!(!self.levels.is_empty(), "a spec declares at least one commit level");
        assert!(!self.tables.is_empty(), "a spec declares at least one table");
        assert!(self.default_ops > 0, "a spec's default_ops is at least 1");
        distinct_names("commit level", self.levels.iter().map(|level| level.name));
        for level in &self.levels {
            let volatile = level.promise == Promise::Volatile;
            assert!(
                !(volatile && level.survives_process_kill),
                "volatile level {:?} cannot survive a kill",
                level.name
            );
        }
        distinct_names("table", self.tables.iter().map(|table| table.name));
        distinct_names("phase", self.phases.iter().copied());
        if let Some(maintenance) = self.maintenance {
            assert!(well_formed(maintenance.name), "maintenance name {:?} is not a word", maintenance.name);
        }
        for (i, hazard) in self.hazards.iter().enumerate() {
            assert!(!hazard.file_suffix.is_empty(), "a documented hazard names its files' suffix");
            assert!(!hazard.documented.is_empty(), "a documented hazard says where it is documented");
            let twice = self.hazards[..i].iter().any(|h| h.file_suffix == hazard.file_suffix);
            assert!(!twice, "hazard suffix {:?} is declared twice", hazard.file_suffix);
        }
        if let Some(readers) = self.readers {
            assert!(readers.max >= 1, "a spec that declares readers allows at least one");
            assert!(!readers.documented.is_empty(), "a spec's readers say where they are documented");
        }
    }

    /// Assert that `self` (one configuration's spec) has the shape of
    /// `reference` (the kit's): the same names, tolerances, records,
    /// default operation count and maximum of readers.
    pub fn check_shape(&self, reference: &Spec) {
        let names = |spec: &Spec| spec.levels.iter().map(|level| level.name).collect::<Vec<_>>();
        assert_eq!(names(self), names(reference), "commit level names depend on the configuration");
        assert_eq!(self.tables, reference.tables, "tables depend on the configuration");
        assert_eq!(self.maintenance, reference.maintenance, "maintenance depends on the configuration");
        assert_eq!(self.phases, reference.phases, "phases depend on the configuration");
        assert_eq!(self.tolerates, reference.tolerates, "tolerances depend on the configuration");
        assert_eq!(
            self.describes_records, reference.describes_records,
            "describes_records depends on the configuration"
        );
        assert_eq!(self.default_ops, reference.default_ops, "default_ops depends on the configuration");
        assert_eq!(self.max_readers(), reference.max_readers(), "how many readers depends on the configuration");
    }

    /// How many readers may be open beside the writer (0: none, one client).
    pub fn max_readers(&self) -> usize {
        self.readers.map_or(0, |readers| readers.max)
    }

    /// Whether every commit level promises nothing: then the engine may
    /// write unsynced before any commit returns, and in its own recovery,
    /// and nothing it writes is promised.
    pub fn promises_nothing(&self) -> bool {
        self.levels.iter().all(|level| level.promise == Promise::Nothing)
    }
}

/// Assert that every plant of `P` is well formed and named once.
pub fn check_plants<P: Plant>() {
    distinct_names("plant", P::ALL.iter().map(|plant| plant.name()));
    for plant in P::ALL {
        assert!(!plant.what().is_empty(), "plant {:?} says what it does", plant.name());
    }
}

/// Letters, digits and `-`, not empty: what an operation line reads back.
fn well_formed(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn distinct_names<'a>(what: &str, names: impl Iterator<Item = &'a str>) {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        assert!(well_formed(name), "{what} name {name:?} is not letters, digits and '-'");
        assert!(!seen.contains(&name), "{what} name {name:?} is declared twice");
        seen.push(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec::new(vec![Level::new("sync", Promise::Durable)])
    }

    #[test]
    fn a_well_formed_spec_passes() {
        spec().check();
        spec().check_shape(&spec());
    }

    #[test]
    #[should_panic(expected = "at least one commit level")]
    fn a_spec_without_levels_is_refused() {
        Spec::new(Vec::new()).check();
    }

    #[test]
    #[should_panic(expected = "is not letters")]
    fn a_phase_with_a_space_is_refused() {
        Spec { phases: &["log appended"], ..spec() }.check();
    }

    #[test]
    #[should_panic(expected = "declared twice")]
    fn a_hazard_declared_twice_is_refused() {
        let hazard = DocumentedHazard { file_suffix: "-journal", documented: "here" };
        let hazards: &'static [DocumentedHazard] = Box::leak(vec![hazard, hazard].into_boxed_slice());
        Spec { hazards, ..spec() }.check();
    }

    #[test]
    #[should_panic(expected = "names depend on the configuration")]
    fn a_level_renamed_by_a_configuration_is_refused() {
        spec().check_shape(&Spec::new(vec![Level::new("fsync", Promise::Durable)]));
    }

    #[test]
    fn a_promise_may_depend_on_the_configuration() {
        spec().check_shape(&Spec::new(vec![Level::new("sync", Promise::Nothing)]));
    }

    #[test]
    #[should_panic(expected = "at least one")]
    fn readers_that_allow_none_are_refused() {
        Spec {
            readers: Some(Readers {
                max: 0,
                across_maintenance: true,
                writer_waits: false,
                refused_at: &[],
                second_writer_refused_at: &[],
                documented: "here",
            }),
            ..spec()
        }
        .check();
    }

    #[test]
    fn plants_are_found_by_name_or_listed() {
        assert_eq!(plant_named::<NoPlant>("t", "x").unwrap_err(), "no planted bug is called \"x\"; t's are: none");
        check_plants::<NoPlant>();
    }
}
