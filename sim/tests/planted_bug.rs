//! The checker must be able to fail. Plant a bug under the engine — a Vfs
//! whose file fsync silently does nothing — and the simulator must report a
//! failure, with a repro command, within a few hundred seeds.

use std::io;
use std::path::Path;
use std::sync::Arc;

use engine::aof::FsyncPolicy;
use engine::vfs::{Mapping, OpenMode, Vfs, VfsFile};
use sim::config::{Config, Overrides};
use sim::run::run_ops_with;
use sim::shrink::shrink_with;
use sim::workload::generate;

/// Every file fsync returns success without syncing anything.
struct SkipFsync(Arc<dyn Vfs>);
struct SkipFsyncFile(Box<dyn VfsFile>);

impl Vfs for SkipFsync {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(SkipFsyncFile(self.0.open(path, mode)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.0.unlink(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.sync_dir(dir)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        self.0.map_readonly(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.0.exists(path)
    }
    fn mark(&self, label: &'static str) {
        self.0.mark(label)
    }
}

impl VfsFile for SkipFsyncFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(offset_bytes, buf)
    }
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_at(offset_bytes, data)
    }
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        self.0.set_len(len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_vfs_that_skips_fsync_is_caught_with_a_repro() {
    let overrides = Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() };
    let mut caught = None;
    for seed in 0..300 {
        let config = Config::from_seed(seed, overrides);
        let ops = generate(&config);
        let outcome = run_ops_with(&config, overrides, &ops, false, &|disk| Arc::new(SkipFsync(disk)));
        if let Some(failure) = outcome.failure {
            caught = Some((seed, failure));
            break;
        }
    }
    let (seed, failure) = caught.expect("300 seeds never noticed that fsync does nothing");
    assert!(failure.repro.contains(&format!("--seed {seed}")), "{}", failure.repro);
    assert!(failure.repro.contains("--fsync always"), "{}", failure.repro);
    assert!(!failure.detail.is_empty());
    eprintln!("caught at seed {seed}: check '{}'", failure.check);

    // The shrinker keeps the failure while cutting the list down.
    let config = Config::from_seed(seed, overrides);
    let ops = generate(&config);
    let planted = |disk| -> Arc<dyn Vfs> { Arc::new(SkipFsync(disk)) };
    let (minimal, runs) = shrink_with(&config, overrides, ops.clone(), failure.check, &planted);
    assert!(minimal.len() < ops.len() / 4, "shrunk only from {} to {} ops", ops.len(), minimal.len());
    let again = run_ops_with(&config, overrides, &minimal, false, &planted);
    assert_eq!(again.failure.map(|f| f.check), Some(failure.check));
    eprintln!("shrunk {} ops to {} in {runs} runs", ops.len(), minimal.len());
}

#[test]
fn the_same_seeds_pass_on_the_honest_disk() {
    let overrides = Overrides { fsync: Some(FsyncPolicy::Always), ..Overrides::default() };
    for seed in 0..20 {
        let outcome = sim::run::run_seed(seed, overrides, false);
        assert!(outcome.failure.is_none(), "seed {seed}: {:?}", outcome.failure);
    }
}
