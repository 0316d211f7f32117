//! [`Kit`]: an [`Adapter`] with its run settings, as a simulator
//! [`Target`] — so the random mode, the shrinker, `.ops` replay and the
//! one explorer run any kit engine exactly as they run segsim.

use rand::SeedableRng;

use super::adapter::check_capabilities;
use super::config::{Harsh, KitConfig};
use super::damage;
use super::explore::{self, KitRecovered, Recovery};
use super::model::Model;
use super::run::run_ops;
use super::spec::{check_plants, plant_named};
use super::workload::{generate, Grammar, PlannedKitOp};
use super::{Adapter, Plant, Spec};
use simulator::disk::{ArmedFault, CrashMode, Damage, DiskImage, FsProfile};
use simulator::failure::Check;
use simulator::outcome::SeedOutcome;
use simulator::seam::{
    DamageSite, DamageVerdict, DamageWays, Declared, DeclaredKind, ExploreDamage, ExploreDepth2, ExploreFaults,
    FaultedRecovery, FaultedRun, Recording, RecoveryRecording, Target,
};

/// How a kit target runs, beyond its seed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KitSettings {
    /// `--ops`: operations per seed (default: the adapter's).
    pub ops: Option<u64>,
    /// `--crash-mode`: force the disk's crash mode.
    pub crash_mode: Option<CrashMode>,
    /// `--fs`: the file-system profile the disk follows (default `posix`).
    pub fs: FsProfile,
    /// `--plant`: a bug planted under the engine (one of the adapter's).
    pub plant: Option<&'static str>,
    /// `--torn-garbage`, `--read-bitflips`: faults the adapter does not
    /// tolerate by default, asked for.
    pub harsh: Harsh,
    /// The command that runs this binary, for repro lines: `cargo run
    /// --release -p sim --` for the built-in targets, the user's own
    /// binary for theirs.
    pub program: String,
    /// The flag that picks the target on that command line (` --target
    /// redb`), empty for a binary that tests one engine.
    pub target_flag: String,
    /// `--set KEY=VALUE`: options forcing parts of the engine's
    /// configuration, in the order given (see [`Adapter::configure_with`];
    /// add them with [`Kit::set_option`], which checks them).
    pub options: Vec<(String, String)>,
    /// `--clients N`: each seed draws 1 to `N` clients, the writer and
    /// readers beside it (`None`: the writer alone). Set it with
    /// [`Kit::set_clients`], which checks the engine has the readers.
    pub clients: Option<usize>,
    /// `--interleave`: readers also step inside the writer's operations,
    /// between two of its I/Os, where the seed draws (needs `--clients`
    /// and an adapter whose readers step apart from its `Db`,
    /// [`crate::ReadTransactions::beside`]).
    pub interleave: bool,
}

/// An adapter and its settings: a [`Target`].
#[derive(Debug)]
pub struct Kit<A> {
    /// The engine's adapter.
    pub adapter: A,
    /// How it runs.
    pub settings: KitSettings,
    /// The spec of a reference configuration (the one a fixed draw
    /// makes): the names every configuration's spec shares.
    spec: Spec,
}

impl<A: Adapter> Kit<A> {
    /// `adapter` with `settings`. Asserts that the adapter's spec and
    /// plants are well formed ([`Spec::check`]) and that its capabilities
    /// (maintenance, readers) are the ones its spec declares: a malformed
    /// one is the adapter's mistake, found before any seed runs.
    pub fn new(adapter: A, settings: KitSettings) -> Self {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let spec = adapter.spec(&adapter.configure(&mut rng));
        spec.check();
        check_capabilities(&adapter, &spec);
        check_plants::<A::Plant>();
        if let Some(name) = settings.plant {
            assert!(
                plant_named::<A::Plant>(adapter.name(), name).is_ok(),
                "settings plant {name:?}, not one of the adapter's"
            );
        }
        Kit { adapter, settings, spec }
    }

    /// The names every configuration's spec shares (tables, levels,
    /// maintenance, phases), its tolerances and default operation count.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The plant the settings name, typed.
    pub(crate) fn plant(&self) -> Option<A::Plant> {
        let name = self.settings.plant?;
        Some(plant_named::<A::Plant>(self.adapter.name(), name).expect("settings hold only the adapter's plants"))
    }

    /// `seed`'s configuration under these settings (`ops` forced if given).
    pub fn config(&self, seed: u64, ops: Option<u64>) -> KitConfig<A::Config> {
        let ops = ops.or(self.settings.ops);
        let KitSettings { crash_mode, harsh, options, fs, .. } = &self.settings;
        let mut config = KitConfig::from_seed(&self.adapter, &self.spec, seed, ops, *crash_mode, *harsh, options);
        // The profile draws nothing: the seed's configuration is the same
        // under every profile, only the disk's rules differ.
        config.disk.fs = *fs;
        config.draw_clients(self.settings.clients.unwrap_or(1));
        config.interleave = self.settings.interleave;
        config.draw_second_writer();
        config
    }

    /// `--clients N`: each seed draws 1 to `clients` clients, if the
    /// engine declares readers enough ([`Spec::readers`]).
    pub fn set_clients(&mut self, clients: usize) -> Result<(), String> {
        let readers = self.spec.max_readers();
        if clients == 0 || clients > readers + 1 {
            let name = self.adapter.name();
            return Err(match readers {
                0 => format!("--clients {clients}: {name} declares no readers beside its writer (Spec::readers), so it runs one client"),
                _ => format!("--clients {clients}: {name} runs 1 to {} clients (a writer and up to {readers} readers)", readers + 1),
            });
        }
        self.settings.clients = (clients > 1).then_some(clients);
        Ok(())
    }

    /// `--interleave`: readers step inside the writer's operations too;
    /// only with readers (`--clients`).
    pub fn set_interleave(&mut self, on: bool) -> Result<(), String> {
        if on && self.settings.clients.is_none() {
            return Err("--interleave steps readers inside the writer's operations: pass --clients N too".into());
        }
        self.settings.interleave = on;
        Ok(())
    }

    /// Add `--set KEY=VALUE` (`option` is `KEY=VALUE`), if the adapter
    /// takes it.
    pub fn set_option(&mut self, option: &str) -> Result<(), String> {
        let (key, value) = option.split_once('=').ok_or_else(|| format!("--set takes KEY=VALUE, not {option:?}"))?;
        let mut options = self.settings.options.clone();
        options.push((key.to_string(), value.to_string()));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        self.adapter.configure_with(&mut rng, &options)?;
        self.settings.options = options;
        Ok(())
    }

    /// The name of the adapter's plant called `name`, or a message that
    /// lists them.
    pub fn plant_named(&self, name: &str) -> Result<&'static str, String> {
        plant_named::<A::Plant>(self.adapter.name(), name).map(Plant::name)
    }

    /// `--plant NAME`, each `--set KEY=VALUE` and `--clients N` from a
    /// command line.
    pub fn apply_args(
        &mut self,
        plant: Option<&str>,
        options: &[String],
        clients: Option<usize>,
    ) -> Result<(), String> {
        if let Some(name) = plant {
            self.settings.plant = Some(self.plant_named(name)?);
        }
        options.iter().try_for_each(|option| self.set_option(option))?;
        clients.map_or(Ok(()), |clients| self.set_clients(clients))
    }

    /// The flags that pin these settings, but the op count.
    fn flags(&self) -> String {
        let mut out = String::new();
        for (key, value) in self.settings() {
            out.push_str(&format!(" --{key}"));
            if value != "on" {
                out.push_str(&format!(" {value}"));
            }
        }
        out
    }

    fn recovery<'a>(&'a self, config: &'a KitConfig<A::Config>, image: &DiskImage) -> Recovery<'a, A> {
        Recovery::new(&self.adapter, config, self.plant(), image)
    }
}

impl<A: Adapter> Target for Kit<A> {
    type Op = PlannedKitOp;
    type Context = Model;
    type Recovered = KitRecovered;

    fn name(&self) -> &'static str {
        self.adapter.name()
    }

    fn settings(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(mode) = self.settings.crash_mode {
            out.push(("crash-mode", mode.name().to_string()));
        }
        if !self.settings.fs.is_posix() {
            out.push(("fs", self.settings.fs.name.to_string()));
        }
        if let Some(plant) = self.settings.plant {
            out.push(("plant", plant.to_string()));
        }
        if self.settings.harsh.torn_garbage {
            out.push(("torn-garbage", "on".to_string()));
        }
        if self.settings.harsh.read_bitflips {
            out.push(("read-bitflips", "on".to_string()));
        }
        for (key, value) in &self.settings.options {
            out.push(("set", format!("{key}={value}")));
        }
        if let Some(clients) = self.settings.clients {
            out.push(("clients", clients.to_string()));
        }
        if self.settings.interleave {
            out.push(("interleave", "on".to_string()));
        }
        out
    }

    fn with_setting(mut self, key: &str, value: &str) -> Result<Self, String> {
        match key {
            "crash-mode" => {
                let mode = CrashMode::parse(value).ok_or_else(|| format!("bad crash mode {value:?}"))?;
                self.settings.crash_mode = Some(mode);
            }
            "fs" => self.settings.fs = FsProfile::parse_or_list(value)?,
            "plant" => self.settings.plant = Some(self.plant_named(value)?),
            "torn-garbage" if value == "on" => self.settings.harsh.torn_garbage = true,
            "read-bitflips" if value == "on" => self.settings.harsh.read_bitflips = true,
            "set" => self.set_option(value)?,
            "clients" => {
                let clients = value.parse().map_err(|_| format!("bad --clients {value:?}: a number"))?;
                self.set_clients(clients)?;
            }
            "interleave" if value == "on" => self.settings.interleave = true,
            _ => return Err(format!("the {} target has no setting {key:?}", self.adapter.name())),
        }
        Ok(self)
    }

    fn generate(&self, seed: u64) -> Vec<PlannedKitOp> {
        generate(&self.config(seed, None))
    }

    fn parse_op(&self, line: &str) -> Result<PlannedKitOp, String> {
        Grammar::of(&self.spec).parse(line)
    }

    fn run(&self, seed: u64, ops: &[PlannedKitOp], keep_trace: bool) -> SeedOutcome {
        let config = self.config(seed, None);
        let mut outcome = run_ops(&self.adapter, &config, self.plant(), self.repro(seed, ""), ops, keep_trace);
        outcome.name_draw(config.drew(&self.adapter.describe_config(&config.engine)));
        outcome
    }

    fn drew(&self, seed: u64) -> Option<String> {
        let config = self.config(seed, None);
        Some(config.drew(&self.adapter.describe_config(&config.engine)))
    }

    fn unchecked(&self) -> Option<String> {
        let readers = self.spec.max_readers();
        (readers > 0 && self.settings.clients.is_none()).then(|| {
            format!(
                "{} declares up to {readers} readers beside its writer (Spec::readers), and this run checks none of \
                 them: pass --clients {} to run them",
                self.adapter.name(),
                readers + 1
            )
        })
    }

    fn repro(&self, seed: u64, extra: &str) -> String {
        let ops = self.settings.ops.map_or(String::new(), |ops| format!(" --ops {ops}"));
        let KitSettings { program, target_flag, .. } = &self.settings;
        format!("{program}{target_flag} --seed {seed}{ops}{}{extra}", self.flags())
    }

    fn fs_profile(&self) -> FsProfile {
        self.settings.fs
    }

    fn explore_facts(&self, _seed: u64) -> Vec<(&'static str, String)> {
        if self.settings.fs.is_posix() {
            return Vec::new();
        }
        vec![("fs", self.settings.fs.name.to_string())]
    }

    fn explore_declared(&self, seed: u64) -> Vec<Declared> {
        // The names every configuration's spec shares.
        let Spec { phases, maintenance, .. } = &self.spec;
        let phase = |name: &&str| Declared { kind: DeclaredKind::Phase, name: name.to_string(), drawable: true };
        let mut declared: Vec<Declared> = phases.iter().map(phase).collect();
        if let Some(maintenance) = *maintenance {
            declared.push(Declared {
                kind: DeclaredKind::Operation,
                name: maintenance.name.to_uppercase(),
                drawable: self.config(seed, None).draws_maintenance(),
            });
        }
        declared
    }

    fn explore_workload(&self, seed: u64, ops: u64) -> Vec<PlannedKitOp> {
        let mut workload = generate(&self.config(seed, Some(ops)));
        for planned in &mut workload {
            planned.crash = None;
        }
        workload
    }

    fn explore_repro(&self, seed: u64, ops: u64, extra: &str) -> String {
        let KitSettings { program, target_flag, .. } = &self.settings;
        format!("{program} explore{target_flag} --seed {seed} --ops {ops}{}{extra}", self.flags())
    }

    fn sector_bytes(&self, seed: u64) -> u64 {
        self.config(seed, None).disk.sector_bytes
    }

    fn explores_reorderings(&self) -> bool {
        true
    }

    fn torn_garbage(&self) -> bool {
        self.spec.tolerates.torn_garbage || self.settings.harsh.torn_garbage
    }

    fn record(&self, seed: u64, workload: &[PlannedKitOp]) -> Recording<Model> {
        explore::record(&self.adapter, &self.config(seed, None), self.plant(), workload)
    }

    fn recovery_key(&self, _context: &Model) -> u64 {
        // The kit's engines read no clock: a recovery depends on the image alone.
        0
    }

    fn recover(&self, seed: u64, image: &DiskImage, _key: u64) -> KitRecovered {
        let config = explore::recording_config(&self.config(seed, None));
        self.recovery(&config, image).run(&mut |_, _, _| {})
    }

    fn judge(&self, recovered: &KitRecovered, context: &Model) -> Result<(), (Check, String)> {
        explore::judge(recovered, context)
    }

    fn damage(&self) -> Option<&dyn ExploreDamage<Model>> {
        // Damage is explored where the adapter describes its records.
        self.spec.describes_records.then_some(self as &dyn ExploreDamage<Model>)
    }

    fn depth2(&self) -> Option<&dyn ExploreDepth2<Model>> {
        Some(self)
    }

    fn faults(&self) -> Option<&dyn ExploreFaults<PlannedKitOp, KitRecovered>> {
        Some(self)
    }
}

impl<A: Adapter> ExploreDepth2<Model> for Kit<A> {
    fn record_recovery(&self, seed: u64, image: &DiskImage, _key: u64) -> RecoveryRecording<Model> {
        let config = explore::recording_config(&self.config(seed, None));
        explore::record_recovery(self.recovery(&config, image))
    }
}

impl<A: Adapter> ExploreFaults<PlannedKitOp, KitRecovered> for Kit<A> {
    fn recover_with_fault(
        &self,
        seed: u64,
        image: &DiskImage,
        _key: u64,
        fault: Option<(u64, ArmedFault)>,
    ) -> FaultedRecovery<KitRecovered> {
        let config = explore::recording_config(&self.config(seed, None));
        explore::recover_with_fault(self.recovery(&config, image), fault)
    }

    fn run_with_fault(&self, seed: u64, workload: &[PlannedKitOp], fault: (u64, ArmedFault)) -> FaultedRun {
        explore::run_with_fault(&self.adapter, &self.config(seed, None), self.plant(), workload, fault)
    }

    fn same_recovery(&self, faulted: &KitRecovered, plain: &KitRecovered) -> Result<(), (Check, String)> {
        explore::same_recovery(faulted, plain)
    }
}

impl<A: Adapter> ExploreDamage<Model> for Kit<A> {
    fn damage_sites(&self, seed: u64, image: &DiskImage) -> Vec<DamageSite> {
        // An engine that promises nothing about damage, so configured, is
        // held to nothing after it: no site to explore.
        if !self.config(seed, None).spec.detects_damage {
            return Vec::new();
        }
        damage::sites(&self.adapter, image)
    }

    fn damage_ways(&self) -> &'static [DamageWays] {
        damage::DAMAGE_WAYS
    }

    fn opens_at_a_point_in_time(&self) -> bool {
        false
    }

    fn recover_damaged(
        &self,
        seed: u64,
        image: &DiskImage,
        _damage: &Damage,
        point_in_time: bool,
        context: &Model,
    ) -> Result<DamageVerdict, (Check, String)> {
        assert!(!point_in_time, "the kit opens a damaged image the default way only");
        let config = explore::recording_config(&self.config(seed, None));
        damage::recover(self.recovery(&config, image), context)
    }
}
