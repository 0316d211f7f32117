//! The faults a live run injects (`--faults`, `--fault-rate`,
//! `--fault-at`, `--capacity`): probabilities of the simulated disk's own
//! fault kinds (`simulator::disk::DiskConfig`), drawn per disk call from
//! the seed's stream, and faults armed at one I/O index (a repro's, or a
//! shrunk failure's). What each does is the disk's model, per profile
//! (FILESYSTEMS.md): a failed fsync or fdatasync drops the file's dirty
//! data and the next one succeeds (fsyncgate); a failed write may leave a
//! sector-aligned prefix (a short write); a failed directory fsync shuts
//! the file system down on ext4, XFS and btrfs.

use simulator::disk::{ArmedFault, DiskConfig};

/// Kinds `--faults` names.
pub const KINDS: [&str; 4] = ["fsync", "write", "short-write", "meta"];

/// The faults of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultSpec {
    /// Each kind named, with its probability per eligible disk call.
    pub rates: Vec<(String, f64)>,
    /// Faults at fixed I/O indices.
    pub armed: Vec<(u64, ArmedFault)>,
    /// The disk's capacity (growth past it: ENOSPC), if limited.
    pub capacity_bytes: Option<u64>,
}

impl FaultSpec {
    /// `kinds` (comma-separated, from [`KINDS`]) each at `rate`.
    pub fn parse(kinds: &str, rate: f64) -> Result<FaultSpec, String> {
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!("--fault-rate {rate}: a probability"));
        }
        let mut rates = Vec::new();
        for kind in kinds.split(',').filter(|k| !k.is_empty()) {
            if !KINDS.contains(&kind) {
                return Err(format!("--faults {kind:?}: expected some of {}", KINDS.join(",")));
            }
            rates.push((kind.to_string(), rate));
        }
        Ok(FaultSpec { rates, ..FaultSpec::default() })
    }

    /// The probabilities into the disk's configuration.
    pub fn apply(&self, config: &mut DiskConfig) {
        for (kind, rate) in &self.rates {
            match kind.as_str() {
                "fsync" => config.p_fsync_eio = *rate,
                "write" => config.p_write_eio = *rate,
                "short-write" => {
                    config.p_write_eio = config.p_write_eio.max(*rate);
                    config.p_short_write = 1.0;
                }
                "meta" => config.p_meta_eio = *rate,
                other => unreachable!("parsed kinds only: {other}"),
            }
        }
        if let Some(bytes) = self.capacity_bytes {
            config.capacity_bytes = bytes;
        }
    }

    /// The flags that give this spec again (for a repro line).
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some((_, rate)) = self.rates.first() {
            let kinds: Vec<&str> = self.rates.iter().map(|(k, _)| k.as_str()).collect();
            flags.extend(["--faults".to_string(), kinds.join(","), "--fault-rate".to_string(), rate.to_string()]);
        }
        for (index, kind) in &self.armed {
            flags.extend(["--fault-at".to_string(), format!("{index}:{}", kind.name())]);
        }
        if let Some(bytes) = self.capacity_bytes {
            flags.extend(["--capacity".to_string(), bytes.to_string()]);
        }
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator::disk::CrashMode;

    #[test]
    fn kinds_set_the_disks_probabilities_and_unknown_ones_are_refused() {
        let spec = FaultSpec::parse("fsync,short-write", 0.25).unwrap();
        let mut config = DiskConfig::fault_free(CrashMode::Prefix, 4096);
        spec.apply(&mut config);
        assert_eq!((config.p_fsync_eio, config.p_write_eio, config.p_short_write), (0.25, 0.25, 1.0));
        assert_eq!(config.p_meta_eio, 0.0);
        assert!(FaultSpec::parse("fsync,bitflip", 0.1).unwrap_err().contains("bitflip"));
        assert!(FaultSpec::parse("fsync", 1.5).is_err());
        assert_eq!(spec.flags(), ["--faults", "fsync,short-write", "--fault-rate", "0.25"]);
    }
}
