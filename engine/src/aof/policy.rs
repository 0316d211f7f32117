//! [`FsyncPolicy`]: when an appended frame is made durable.
//!
//! The policy is the store's trade between latency and how much an
//! acknowledged write can lose at power loss: nothing (`always`), about a
//! second (`everysec`), or everything since the last explicit barrier
//! (`no`). The names are Redis's, so an operator's intuition carries over.

/// When the log fsyncs an append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Every append is fsynced before it is acknowledged.
    Always,
    /// An append or a clock tick fsyncs once a second has passed since
    /// the last fsync.
    EverySec,
    /// Only explicit barriers fsync (`sync()`, rewrite, clean close).
    No,
}

impl FsyncPolicy {
    /// Every policy, for tests and option parsing.
    pub const ALL: [FsyncPolicy; 3] = [FsyncPolicy::Always, FsyncPolicy::EverySec, FsyncPolicy::No];

    /// The policy named `s` (`"always"`, `"everysec"`, `"no"`; ASCII case
    /// ignored, as in a Redis config), or `None`.
    pub fn parse(s: &str) -> Option<Self> {
        FsyncPolicy::ALL.into_iter().find(|policy| policy.name().eq_ignore_ascii_case(s))
    }

    /// The policy's name, as [`FsyncPolicy::parse`] accepts it.
    pub fn name(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_refused() {
        for policy in FsyncPolicy::ALL {
            assert_eq!(FsyncPolicy::parse(policy.name()), Some(policy));
            assert_eq!(FsyncPolicy::parse(&policy.name().to_uppercase()), Some(policy));
        }
        assert_eq!(FsyncPolicy::parse("everysec"), Some(FsyncPolicy::EverySec));
        for stranger in ["", "never", "every sec", "alwayss", "n"] {
            assert_eq!(FsyncPolicy::parse(stranger), None, "{stranger:?} parsed");
        }
    }
}
