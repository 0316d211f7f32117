//! Which planted engine bug a run switches on, in both kinds of build.
//!
//! The engine's planted bugs (`engine::canary`) exist only in a build with
//! the `canaries` feature. The simulator still wants one type for "which
//! canary, if any" in every build, so that `Overrides`, the command line
//! and the hunt (`hunt.rs`) compile the same way with the feature and
//! without it. With the feature this is the engine's own `Canary`;
//! without it, an enum with no values, so an `Option<Canary>` is always
//! `None` and every path that would switch a bug on is unreachable.
//!
//! Naming a canary, and `CanarySwitch`, are all this module does. A
//! canary is switched on per thread by whoever runs the engine — a seed
//! run (`run.rs`), the explore recording and each recovery on an explore
//! worker (`target/segsim/`) — once, through `CanarySwitch`; the workload,
//! the fault model, the driver and the checker never learn which bug, if
//! any, is planted.

#[cfg(feature = "canaries")]
pub use engine::canary::Canary;

/// Whether this build carries the engine's planted bugs.
pub const BUILT_WITH_CANARIES: bool = cfg!(feature = "canaries");

/// What to tell someone who asks for a canary in a build without them.
pub const HOW_TO_BUILD: &str = "this sim was built without the planted bugs; build it with the `canaries` \
     feature: cargo run --release -p sim --features canaries -- canaries (or `make canaries`)";

/// No canary exists without the `canaries` feature: this enum has no
/// values, and its methods are the engine `Canary`'s, answering for none.
#[cfg(not(feature = "canaries"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Canary {}

#[cfg(not(feature = "canaries"))]
impl Canary {
    /// Every canary: none in this build.
    pub const ALL: [Canary; 0] = [];

    /// The command-line name (unreachable: there is no value to name).
    pub fn name(self) -> &'static str {
        match self {}
    }

    /// The canary called `name`: never one in this build.
    pub fn parse(_name: &str) -> Option<Canary> {
        None
    }

    /// What the engine does wrong (unreachable).
    pub fn description(self) -> &'static str {
        match self {}
    }
}

/// Parse a `--canary` / `--only` argument: the canary, or a message that
/// lists every name (or says how to build with canaries at all).
pub fn parse_name(name: &str) -> Result<Canary, String> {
    if !BUILT_WITH_CANARIES {
        return Err(HOW_TO_BUILD.to_string());
    }
    Canary::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Canary::ALL.iter().map(|c| c.name()).collect();
        format!("no canary is called {name:?}; the canaries are: {}", names.join(", "))
    })
}

/// The planted bug switched on in the engine for this thread while it
/// lives, and off again when dropped (a panic included). The engine's
/// switch is per thread: a seed run (`run.rs`), the explore recording and
/// each recovery (`target/segsim/`) hold one. Nothing else in the simulator touches the
/// engine's switch, and nothing in the simulator reads it.
pub(crate) struct CanarySwitch;

impl CanarySwitch {
    /// Switch `canary` on (or every canary off) for this thread.
    pub(crate) fn on(canary: Option<Canary>) -> CanarySwitch {
        #[cfg(feature = "canaries")]
        engine::canary::set(canary);
        #[cfg(not(feature = "canaries"))]
        let None = canary;
        CanarySwitch
    }
}

impl Drop for CanarySwitch {
    fn drop(&mut self) {
        #[cfg(feature = "canaries")]
        engine::canary::set(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_name_is_refused_with_the_list_or_the_build_hint() {
        let message = parse_name("no-such-canary").unwrap_err();
        if BUILT_WITH_CANARIES {
            assert!(message.contains("no-such-canary"), "{message}");
            for canary in Canary::ALL {
                assert!(message.contains(canary.name()), "{message}");
                assert_eq!(parse_name(canary.name()), Ok(canary));
            }
        } else {
            assert!(message.contains("--features canaries"), "{message}");
            assert!(Canary::ALL.is_empty());
        }
    }
}
