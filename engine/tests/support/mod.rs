//! Test support shared by the store's integration tests.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use engine::store::Command;
use engine::vfs::{read_whole, Interpose, LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile};
use engine::Phase;

/// Parse a command from words.
pub fn cmd(words: &[&str]) -> Command {
    Command::parse(&words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>()).expect("test command parses")
}

/// Every file in `dir` by name with its bytes, read with `std::fs` (not
/// through a `Vfs`, so a wrapper under test cannot hide a change).
pub fn os_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        files.insert(entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path()).unwrap());
    }
    files
}

/// Every file in `dir` by name with its bytes, read through `vfs`.
pub fn vfs_files(vfs: &dyn Vfs, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let names = vfs.list_dir(dir).unwrap();
    names
        .into_iter()
        .map(|name| {
            let bytes = read_whole(vfs, &dir.join(&name)).unwrap();
            (name.into_string().expect("the tests' file names are UTF-8"), bytes)
        })
        .collect()
}

/// Write `bytes` as the whole file at `path` and fsync it.
pub fn put_synced(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) {
    let mut file = vfs.open(path, OpenMode::Truncate).unwrap();
    file.write_at(0, bytes).unwrap();
    file.sync().unwrap();
}

/// A process crash at a named phase: once the engine marks `target`,
/// every later file operation fails, so nothing more reaches the disk.
/// Over `OsVfs` what was written before stays (it is in the page cache),
/// which is exactly what a killed process leaves behind.
pub struct CrashAfter {
    inner: Arc<dyn Vfs>,
    target: Phase,
    crashed: Arc<AtomicBool>,
}

impl CrashAfter {
    pub fn new(inner: Arc<dyn Vfs>, target: Phase) -> Self {
        Self { inner, target, crashed: Arc::new(AtomicBool::new(false)) }
    }

    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    fn check(&self) -> io::Result<()> {
        if self.crashed() {
            Err(io::Error::other("simulated crash: the process is gone"))
        } else {
            Ok(())
        }
    }
}

struct CrashFile {
    inner: Box<dyn VfsFile>,
    crashed: Arc<AtomicBool>,
}

impl CrashFile {
    fn check(&self) -> io::Result<()> {
        if self.crashed.load(Ordering::SeqCst) {
            Err(io::Error::other("simulated crash: the process is gone"))
        } else {
            Ok(())
        }
    }
}

impl Vfs for CrashAfter {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        self.check()?;
        let inner = self.inner.open(path, mode)?;
        Ok(Box::new(CrashFile { inner, crashed: self.crashed.clone() }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check()?;
        self.inner.rename(from, to)
    }
    fn unlink(&self, path: &Path) -> io::Result<()> {
        self.check()?;
        self.inner.unlink(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        self.check()?;
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.check()?;
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.check()?;
        self.inner.sync_dir(dir)
    }
    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        self.check()?;
        self.inner.map_readonly(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.check()?;
        self.inner.exists(path)
    }
    fn lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        self.check()?;
        self.inner.lock(dir, mode)
    }
    fn mark(&self, phase: &'static str) {
        if phase == self.target.as_str() {
            self.crashed.store(true, Ordering::SeqCst);
        }
    }
}

impl VfsFile for CrashFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.check()?;
        self.inner.read_at(offset_bytes, buf)
    }
    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        self.check()?;
        self.inner.write_at(offset_bytes, data)
    }
    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        self.check()?;
        self.inner.set_len(len_bytes)
    }
    fn len(&self) -> io::Result<u64> {
        self.check()?;
        self.inner.len()
    }
    fn sync(&mut self) -> io::Result<()> {
        self.check()?;
        self.inner.sync()
    }
}

/// Injected failures, switched on and off by the test: the next file
/// sync fails, or the next write writes half its bytes and then fails.
#[derive(Default)]
pub struct Faults {
    pub fail_next_sync: AtomicBool,
    pub fail_next_write_short: AtomicBool,
    pub fail_writes_no_space: AtomicBool,
}

/// A Vfs that injects [`Faults`] into file syncs and writes.
#[derive(Clone)]
pub struct Faulty {
    inner: Arc<dyn Vfs>,
    pub faults: Arc<Faults>,
}

impl Faulty {
    pub fn new(inner: Arc<dyn Vfs>) -> Self {
        Self { inner, faults: Arc::new(Faults::default()) }
    }
}

impl Interpose for Faulty {
    fn inner(&self) -> &dyn Vfs {
        self.inner.as_ref()
    }
    fn on_write_at(&self, file: &mut dyn VfsFile, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        if self.faults.fail_writes_no_space.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "injected ENOSPC"));
        }
        if self.faults.fail_next_write_short.swap(false, Ordering::SeqCst) {
            file.write_at(offset_bytes, &data[..data.len() / 2])?;
            return Err(io::Error::other("injected EIO after a short write"));
        }
        file.write_at(offset_bytes, data)
    }
    fn on_sync(&self, file: &mut dyn VfsFile) -> io::Result<()> {
        if self.faults.fail_next_sync.swap(false, Ordering::SeqCst) {
            return Err(io::Error::other("injected fsync EIO"));
        }
        file.sync()
    }
}

/// A planted bug: a Vfs whose `lock` always succeeds and holds nothing,
/// as a file system that cannot lock would if it pretended to. Tests use
/// it to show what the lock prevents (two writers losing an acknowledged
/// write), so the checks that the lock passes are checks that can fail.
#[derive(Clone)]
pub struct NoLock {
    inner: Arc<dyn Vfs>,
}

impl NoLock {
    pub fn new(inner: Arc<dyn Vfs>) -> Self {
        Self { inner }
    }
}

impl Interpose for NoLock {
    fn inner(&self) -> &dyn Vfs {
        self.inner.as_ref()
    }
    fn on_lock(&self, dir: &Path, mode: LockMode) -> io::Result<LockGuard> {
        Ok(LockGuard::new(dir, mode, ()))
    }
}

/// Where the frame at `at` of the AOF `log` is bound (`engine/src/frame.rs`):
/// the header to generation 0, every later frame to the header's.
pub fn aof_place(log: &[u8], at: usize) -> engine::frame::Place {
    engine::aof::frame_place(log, at)
}
