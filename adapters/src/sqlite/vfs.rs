//! A `sqlite3_vfs` written in Rust: every file operation SQLite makes goes
//! through one connection's [`Vfs`] (the simulated disk), with its whole
//! fault model, and nothing reaches the real file system.
//!
//! # One VFS per connection
//! SQLite finds a VFS by name in a process-wide list, but each seed's run
//! has its own simulated disk. So every connection gets its own
//! `sqlite3_vfs` ([`RegisteredVfs`]), registered under a unique name with
//! `sqlite3_vfs_register(.., 0)` (never the default) and named to
//! `sqlite3_open_v2`; its `pAppData` points at the connection's
//! [`VfsContext`]. Routing is then by pointer, not by a lookup, and the
//! unique name is never observable (it reaches no trace and no file).
//!
//! # What it mirrors of `os_unix.c` (SQLite 3.50), call by call
//! - `xOpen`: a named file opens on the disk (created only with
//!   `SQLITE_OPEN_CREATE`); a file SQLite opens with no name or with
//!   `DELETEONCLOSE` (temporary databases, statement journals, sorter
//!   files) lives in memory: os_unix puts those in `/tmp` and unlinks them
//!   at once, so they never matter after a crash. As in `unixOpen`, a
//!   main journal, super-journal or WAL opened with `SQLITE_OPEN_CREATE`
//!   is marked for a **directory fsync on its first `xSync`** (os_unix's
//!   `UNIXFILE_DIRSYNC`), so that the new name is durable before SQLite
//!   relies on the file; as in `unixSync`, an error of that directory
//!   fsync is ignored. The main database file gets no directory fsync
//!   (os_unix gives it none either: the application's setup makes its
//!   name durable).
//! - `xDelete`: unlink, then, when `syncDir` is set (SQLite passes it for
//!   a rollback journal under `synchronous=EXTRA`), fsync the parent
//!   directory, failing with `SQLITE_IOERR_DIR_FSYNC` as `unixDelete`
//!   does. A missing file is `SQLITE_IOERR_DELETE_NOENT`.
//! - `xSync`: `unixSync` calls `full_fsync`, which on Linux calls
//!   `fdatasync` whatever the flags (`SQLITE_SYNC_DATAONLY` is ignored:
//!   "we always use fdatasync() if it is available") — and `fdatasync` is
//!   `#define`d to `fsync` unless SQLite is built with `HAVE_FDATASYNC`,
//!   which libsqlite3-sys's bundled build is not. So: one `fsync` of the
//!   file (`VfsFile::sync`), or with `fdatasync` (`--set fdatasync=on`, a
//!   build with `HAVE_FDATASYNC`, as distributions make) `sync_data`,
//!   which on ext4 does not make a new name durable (FILESYSTEMS.md).
//! - `xRead`: a short read zero-fills the rest and returns
//!   `SQLITE_IOERR_SHORT_READ`, as SQLite requires.
//! - `xLock`/`xUnlock`/`xCheckReservedLock`: the connections of one
//!   process (a writer and its readers) share each file's locks as
//!   os_unix's `unixInodeInfo` makes them share: a reader's `SHARED` lock
//!   makes a writer's `EXCLUSIVE` wait (`SQLITE_BUSY`), and
//!   `xCheckReservedLock` sees any connection's `RESERVED` ([`Shared`]).
//!   Files that live in memory lock alone.
//! - `xShmMap`/`xShmLock`/`xShmBarrier`/`xShmUnmap`: the wal-index, in
//!   memory, one per database for every connection of the process, with
//!   os_unix's eight lock slots ([`Shared`]: why no `-shm` file is made).
//! - `xSectorSize` and `xDeviceCharacteristics`: os_unix's defaults on
//!   Linux (4096 bytes; `SQLITE_IOCAP_POWERSAFE_OVERWRITE` alone), unless
//!   the adapter asks for the disk's sector size (`sector=disk`) or no
//!   claim (`powersafe=off`: our disk writes nothing atomically or in
//!   order, and a torn sector may hold garbage), so both can be measured.
//! - `xFileControl`: `SQLITE_NOTFOUND` for every opcode.
//! - `xRandomness`, `xSleep`, `xCurrentTime(Int64)`: from the context's
//!   seeded stream and simulated clock (a sleep advances it), so a seed
//!   replays bit for bit.
//!
//! # Panics
//! No panic may unwind into C. Every callback runs its body under
//! `catch_unwind`; a panic returns `SQLITE_IOERR` (or an empty answer) to
//! SQLite and is kept in the context, and the adapter raises it again on
//! the Rust side once SQLite has returned ([`VfsContext::take_panic`]).
//!
//! # Planted bugs ([`VfsPlant`])
//! Realistic porting mistakes, each switched on by `--plant`: an `xSync`
//! that syncs nothing, an `xDelete` that ignores `syncDir`, an
//! `xTruncate` whose new length reaches the file only after the next
//! `xSync` (so that sync does not make it durable), and an `xShmLock`
//! whose exclusive lock ignores other connections' shared ones (a
//! checkpoint then copies into the database, or resets the WAL under,
//! pages a reader's snapshot still reads), and an `xLock` on POSIX
//! advisory locks as they are, which never conflict within one process (a
//! rollback-journal writer then overwrites the pages readers read), and an
//! `xUnlock` that keeps the writer's `PENDING` lock (readers then refused
//! as busy after every commit: a lock kept too long), and an
//! `xCheckReservedLock` that answers only for the calling handle (readers
//! take the writer's live journal for a hot one, and are refused at
//! `RESERVED`), an `xLock` that grants `SHARED` over another's `PENDING`,
//! and an `xShmLock` unlock that releases every slot the connection holds
//! (the WAL writer loses its write lock). The last two need readers that
//! step inside the writer's operations (`--interleave`).
//!
//! # Where each part lives
//! This file is the VFS itself: its registration, the connection's
//! context, and the calls that take no file (`xDelete`, `xAccess`,
//! `xFullPathname`, `xRandomness`, `xSleep`, the clock). An open file —
//! `xOpen` and every `sqlite3_io_methods` call — is `vfs/file.rs`'s; the
//! locks and the wal-index's shared memory `vfs/locking.rs`'s.

// SQLite calls these functions through C pointers: FFI that cannot be safe
// Rust, each `unsafe` block with its argument (the crate denies
// `unsafe_code` everywhere else).
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use libsqlite3_sys as ffi;
use vfs::Vfs;

use super::shared::Shared;
use file::{x_open, FileState, SimFile};

mod file;
mod locking;

/// A bug planted in the VFS, to prove the sqlite target's checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VfsPlant {
    /// `xSync` returns `SQLITE_OK` and syncs nothing.
    NoSync,
    /// `xDelete` never syncs the directory, whatever `syncDir` says.
    DeleteNoDirSync,
    /// `xTruncate` is applied only after the next `xSync` has synced.
    LateTruncate,
    /// `xShmLock` grants an exclusive lock over other connections' shared
    /// locks of the same slots (a checkpoint ignores readers' marks).
    ShmExclusiveLies,
    /// `xLock` takes POSIX advisory locks as they are: the connections of
    /// one process never conflict (a writer's `EXCLUSIVE` ignores readers'
    /// `SHARED`), the trap os_unix's `unixInodeInfo` exists to avoid.
    LocksPerProcess,
    /// `xUnlock` lowers a lock but keeps the `PENDING` lock taken on the
    /// way to `EXCLUSIVE` (os_unix's `unixUnlock` releases the pending
    /// byte explicitly): from the writer's first commit on, no other
    /// connection can take `SHARED`, so every reader's begin is refused.
    UnlockKeepsPending,
    /// `xCheckReservedLock` answers for the calling handle alone, not for
    /// every connection of the process (os_unix asks the inode): a reader
    /// that finds the writer's journal takes it for a hot one while the
    /// writer holds `RESERVED`, and is refused as busy where SQLite lets
    /// it begin.
    ReservedOwnOnly,
    /// `xLock` grants `SHARED` while another connection holds `PENDING`
    /// (only `EXCLUSIVE` refuses it): a writer waiting for its readers to
    /// clear can wait forever, and a reader begins where SQLite refuses it.
    SharedOverPending,
    /// `xShmUnlock` of some wal-index slots releases every slot the
    /// connection holds: the writer loses its `WAL_WRITE_LOCK` when it
    /// releases the read marks it locked to restart the WAL, and a second
    /// connection may then write.
    ShmUnlockReleasesAll,
    /// `xShmUnmap` with its delete flag discards the wal-index's regions
    /// although other connections still map them (os_unix unlinks the
    /// `-shm` file only when the process's last reference goes): the
    /// connections open keep their old regions, a connection that maps
    /// afresh gets new zeroed ones, and the two no longer see each other's
    /// commits.
    ShmUnmapDiscardsShared,
}

/// What the VFS of one connection claims and does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VfsOptions {
    /// `xSectorSize`.
    pub sector_bytes: u32,
    /// `xDeviceCharacteristics` claims `SQLITE_IOCAP_POWERSAFE_OVERWRITE`.
    pub powersafe: bool,
    /// `xSync` is an `fdatasync` (a build with `HAVE_FDATASYNC`), else an
    /// `fsync` (the bundled build's).
    pub fdatasync: bool,
    /// A planted bug, if any.
    pub plant: Option<VfsPlant>,
}

/// A fixed start for the simulated clock: 2026-01-01 00:00:00 UTC, in
/// milliseconds since the Julian epoch (what `xCurrentTimeInt64` counts).
const EPOCH_JULIAN_MS: i64 = 210_866_760_000_000 + 1_767_225_600_000;

/// One connection's disk, options, clock and random stream, and what it
/// shares with the process's other connections (see the module doc).
/// Shared with SQLite through `pAppData`.
pub struct VfsContext {
    vfs: Arc<dyn Vfs>,
    options: VfsOptions,
    /// File locks and wal-indexes, shared by the process's connections.
    shared: Arc<Shared>,
    /// Microseconds slept so far (`xSleep` advances the clock).
    slept_us: AtomicU64,
    /// The `xRandomness` stream's state (splitmix64).
    random: AtomicU64,
    /// `xSleep` is a point where the kit may run a reader's step
    /// (`--interleave`): set on the writer's connection, whose busy
    /// handler then waits for readers the kit steps meanwhile. It tells
    /// the disk through `Vfs::mark(BUSY_WAIT)`, which the kit's pausing
    /// disk takes as a pause point and does not pass on.
    pause_on_sleep: AtomicBool,
    /// The first panic a callback caught, to raise again on the Rust side.
    panic: Mutex<Option<String>>,
}

impl VfsContext {
    /// A context over `vfs`, its random stream seeded with `seed`, its
    /// locks and wal-indexes shared through `shared` with the other
    /// connections of the same process.
    pub fn new(vfs: Arc<dyn Vfs>, options: VfsOptions, seed: u64, shared: Arc<Shared>) -> VfsContext {
        VfsContext {
            vfs,
            options,
            shared,
            slept_us: AtomicU64::new(0),
            random: AtomicU64::new(seed),
            pause_on_sleep: AtomicBool::new(false),
            panic: Mutex::new(None),
        }
    }

    /// From now on, each `xSleep` is a pause point (see `pause_on_sleep`).
    pub fn pause_on_sleep(&self) {
        self.pause_on_sleep.store(true, Ordering::Relaxed);
    }

    /// The message of a panic a callback caught since the last call, if any.
    pub fn take_panic(&self) -> Option<String> {
        self.panic.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    fn note_panic(&self, message: String) {
        let mut slot = self.panic.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(message);
    }

    fn next_random(&self) -> u64 {
        let state = self.random.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed).wrapping_add(0x9E37_79B9_7F4A_7C15);
        simulator::seeds::mix64(state)
    }
}

/// A connection's `sqlite3_vfs`, registered under a unique name until
/// dropped. Drop it only after the connection that uses it is closed.
pub struct RegisteredVfs {
    raw: Box<ffi::sqlite3_vfs>,
    name: CString,
    context: Arc<VfsContext>,
}

/// Unique names for registered VFSes (never observable: see the module doc).
static NEXT_VFS: AtomicU64 = AtomicU64::new(0);

impl RegisteredVfs {
    /// Register a VFS for `context` under a fresh name.
    pub fn register(context: Arc<VfsContext>) -> RegisteredVfs {
        let name = CString::new(format!("segsim-sim-{}", NEXT_VFS.fetch_add(1, Ordering::Relaxed)))
            .expect("no NUL in a formatted number");
        let mut raw = Box::new(raw_vfs(&name, Arc::as_ptr(&context)));
        // SAFETY: `raw` is a fully initialised `sqlite3_vfs` whose name and
        // context pointers stay valid while `self` lives (the CString's and
        // the Arc's heap data do not move); it is unregistered in `drop`
        // before either is freed.
        let rc = unsafe { ffi::sqlite3_vfs_register(&mut *raw, 0) };
        assert_eq!(rc, ffi::SQLITE_OK, "sqlite3_vfs_register failed");
        RegisteredVfs { raw, name, context }
    }

    /// The name to pass to `sqlite3_open_v2`.
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// The context the VFS routes to.
    pub fn context(&self) -> &Arc<VfsContext> {
        &self.context
    }
}

impl Drop for RegisteredVfs {
    fn drop(&mut self) {
        // SAFETY: the pointer is the one registered in `register`;
        // unregistering an unknown VFS is a no-op in SQLite.
        unsafe { ffi::sqlite3_vfs_unregister(&mut *self.raw) };
    }
}

fn raw_vfs(name: &CStr, context: *const VfsContext) -> ffi::sqlite3_vfs {
    ffi::sqlite3_vfs {
        iVersion: 2,
        szOsFile: std::mem::size_of::<SimFile>() as c_int,
        mxPathname: 512,
        pNext: ptr::null_mut(),
        zName: name.as_ptr(),
        pAppData: context as *mut c_void,
        xOpen: Some(x_open),
        xDelete: Some(x_delete),
        xAccess: Some(x_access),
        xFullPathname: Some(x_full_pathname),
        xDlOpen: None,
        xDlError: None,
        xDlSym: None,
        xDlClose: None,
        xRandomness: Some(x_randomness),
        xSleep: Some(x_sleep),
        xCurrentTime: Some(x_current_time),
        xGetLastError: Some(x_get_last_error),
        xCurrentTimeInt64: Some(x_current_time_int64),
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    }
}

/// The directory holding `path` (`/` for a name at the root).
fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("/"))
}

/// The state of an open file.
///
/// # Safety
/// `file` must be a [`SimFile`] that `x_open` opened and `x_close` has not
/// closed (SQLite calls the methods only then).
unsafe fn file_state<'a>(file: *mut ffi::sqlite3_file) -> &'a mut FileState {
    // SAFETY: the caller keeps the contract above.
    unsafe { &mut *(*(file as *mut SimFile)).state }
}

/// Run a file method's body with the file's state.
///
/// # Safety
/// As [`file_state`].
unsafe fn with_file(
    file: *mut ffi::sqlite3_file,
    on_panic: c_int,
    body: impl FnOnce(&mut FileState) -> c_int,
) -> c_int {
    // SAFETY: the caller keeps `file_state`'s contract, and the state's
    // context outlives its files.
    unsafe {
        let state = file_state(file);
        let context = state.context;
        guarded(Some(&*context), on_panic, || body(state))
    }
}

/// Run a callback body: a panic becomes `on_panic`, noted in `context`.
fn guarded<T>(context: Option<&VfsContext>, on_panic: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = simulator::failure::panic_message(payload.as_ref());
            if let Some(context) = context {
                context.note_panic(message);
            }
            on_panic
        }
    }
}

/// The context of a VFS registered by [`RegisteredVfs`].
///
/// # Safety
/// `vfs` must be a VFS registered by [`RegisteredVfs::register`] that is
/// still alive (SQLite passes back the pointer it was given).
unsafe fn vfs_context<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a VfsContext {
    // SAFETY: the caller keeps the contract above.
    unsafe { &*((*vfs).pAppData as *const VfsContext) }
}

/// A file name from SQLite as a path; `None` for a null name.
///
/// # Safety
/// `name` must be null or a NUL-terminated string.
unsafe fn path_of(name: *const c_char) -> Option<PathBuf> {
    // SAFETY: the caller keeps the contract above.
    unsafe { (!name.is_null()).then(|| PathBuf::from(CStr::from_ptr(name).to_string_lossy().into_owned())) }
}

unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    // SAFETY: SQLite calls this on our VFS with a NUL-terminated name.
    unsafe {
        let context = vfs_context(vfs);
        guarded(Some(context), ffi::SQLITE_IOERR_DELETE, || {
            let Some(path) = path_of(name) else { return ffi::SQLITE_IOERR_DELETE };
            delete(context, &path, sync_dir & 1 != 0)
        })
    }
}

/// `xDelete` (see the module doc).
fn delete(context: &VfsContext, path: &Path, sync_dir: bool) -> c_int {
    if let Err(e) = context.vfs.unlink(path) {
        return if e.kind() == io::ErrorKind::NotFound {
            ffi::SQLITE_IOERR_DELETE_NOENT
        } else {
            ffi::SQLITE_IOERR_DELETE
        };
    }
    let honour = sync_dir && context.options.plant != Some(VfsPlant::DeleteNoDirSync);
    if honour && context.vfs.sync_dir(parent(path)).is_err() {
        return ffi::SQLITE_IOERR_DIR_FSYNC;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    _flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: SQLite calls this on our VFS with a name and an out pointer.
    unsafe {
        let context = vfs_context(vfs);
        *out = 0;
        guarded(Some(context), ffi::SQLITE_IOERR_ACCESS, || {
            let Some(path) = path_of(name) else { return ffi::SQLITE_OK };
            match context.vfs.exists(&path) {
                Ok(exists) => {
                    *out = c_int::from(exists);
                    ffi::SQLITE_OK
                }
                Err(_) => ffi::SQLITE_IOERR_ACCESS,
            }
        })
    }
}

unsafe extern "C" fn x_full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: SQLite gives `n_out` writable bytes at `out` and a name.
    unsafe {
        let context = vfs_context(vfs);
        guarded(Some(context), ffi::SQLITE_CANTOPEN, || {
            let name = CStr::from_ptr(name).to_bytes();
            let mut full = if name.starts_with(b"/") { Vec::new() } else { b"/".to_vec() };
            full.extend_from_slice(name);
            if full.len() + 1 > n_out as usize {
                return ffi::SQLITE_CANTOPEN;
            }
            ptr::copy_nonoverlapping(full.as_ptr() as *const c_char, out, full.len());
            *out.add(full.len()) = 0;
            ffi::SQLITE_OK
        })
    }
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    // SAFETY: SQLite gives `n` writable bytes at `out`.
    unsafe {
        let context = vfs_context(vfs);
        guarded(Some(context), 0, || {
            let out = std::slice::from_raw_parts_mut(out as *mut u8, n.max(0) as usize);
            for chunk in out.chunks_mut(8) {
                let word = context.next_random().to_le_bytes();
                chunk.copy_from_slice(&word[..chunk.len()]);
            }
            n
        })
    }
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    // SAFETY: SQLite calls this on our VFS.
    unsafe {
        let context = vfs_context(vfs);
        guarded(Some(context), 0, || {
            context.slept_us.fetch_add(micros.max(0) as u64, Ordering::Relaxed);
            if context.pause_on_sleep.load(Ordering::Relaxed) {
                context.vfs.mark(simkit::BUSY_WAIT);
            }
            micros
        })
    }
}

unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut ffi::sqlite3_int64) -> c_int {
    // SAFETY: SQLite calls this on our VFS with an out pointer.
    unsafe {
        let context = vfs_context(vfs);
        guarded(Some(context), ffi::SQLITE_ERROR, || {
            *out = EPOCH_JULIAN_MS + (context.slept_us.load(Ordering::Relaxed) / 1000) as i64;
            ffi::SQLITE_OK
        })
    }
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    unsafe {
        let mut ms: ffi::sqlite3_int64 = 0;
        // SAFETY: forwarded from SQLite's call on our VFS (which catches panics).
        let rc = x_current_time_int64(vfs, &mut ms);
        *out = ms as f64 / 86_400_000.0;
        rc
    }
}

/// Nothing to catch: it does nothing (no OS error is ever kept).
unsafe extern "C" fn x_get_last_error(_vfs: *mut ffi::sqlite3_vfs, _n: c_int, _out: *mut c_char) -> c_int {
    0
}

#[cfg(test)]
mod tests {
    use super::file::x_close;
    use super::*;
    use simulator::disk::{CrashMode, DiskConfig, SimVfs};
    use simulator::trace::Trace;
    use vfs::OpenMode;

    /// A disk that loses every unsynced change at a power loss, with `/db`
    /// durable, and a VFS over it.
    fn setup(plant: Option<VfsPlant>) -> (Arc<SimVfs>, RegisteredVfs) {
        let disk = Arc::new(SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false)));
        disk.create_dir_all(Path::new("/db")).unwrap();
        disk.sync_dir(Path::new("/")).unwrap();
        let options = VfsOptions { sector_bytes: 512, powersafe: false, fdatasync: false, plant };
        let vfs: Arc<dyn Vfs> = disk.clone();
        (disk, RegisteredVfs::register(Arc::new(VfsContext::new(vfs, options, 7, Arc::default()))))
    }

    /// A file of `szOsFile` bytes, opened by `x_open`.
    struct Opened {
        buf: Vec<u64>,
    }

    impl Opened {
        fn file(&mut self) -> *mut ffi::sqlite3_file {
            self.buf.as_mut_ptr().cast()
        }

        fn methods(&mut self) -> &'static ffi::sqlite3_io_methods {
            // SAFETY: opened by `x_open`, whose methods are `IO_METHODS`.
            unsafe { &*(*self.file()).pMethods }
        }
    }

    impl Drop for Opened {
        fn drop(&mut self) {
            // SAFETY: closing a file `x_open` opened, once.
            unsafe { x_close(self.file()) };
        }
    }

    fn raw(vfs: &RegisteredVfs) -> *mut ffi::sqlite3_vfs {
        &*vfs.raw as *const ffi::sqlite3_vfs as *mut ffi::sqlite3_vfs
    }

    fn open(vfs: &RegisteredVfs, name: &str, flags: c_int) -> Opened {
        let words = std::mem::size_of::<SimFile>().div_ceil(8);
        let mut opened = Opened { buf: vec![0; words] };
        let name = CString::new(name).unwrap();
        // SAFETY: `szOsFile` bytes, 8-aligned, and a NUL-terminated name.
        let rc = unsafe { x_open(raw(vfs), name.as_ptr(), opened.file(), flags, ptr::null_mut()) };
        assert_eq!(rc, ffi::SQLITE_OK);
        opened
    }

    const CREATE: c_int = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE;

    #[test]
    fn a_short_read_zero_fills_and_says_so() {
        let (_disk, vfs) = setup(None);
        let mut f = open(&vfs, "/db/a", CREATE | ffi::SQLITE_OPEN_MAIN_DB);
        let m = f.methods();
        let mut out = [0xAAu8; 8];
        // SAFETY: an open file and 8 bytes.
        unsafe {
            assert_eq!((m.xWrite.unwrap())(f.file(), b"abc".as_ptr().cast(), 3, 0), ffi::SQLITE_OK);
            assert_eq!((m.xRead.unwrap())(f.file(), out.as_mut_ptr().cast(), 8, 1), ffi::SQLITE_IOERR_SHORT_READ);
        }
        assert_eq!(&out, b"bc\0\0\0\0\0\0");
    }

    /// Delete a durable file with `syncDir`, lose the power: with the VFS
    /// honest the file stays deleted; with the plant it comes back.
    fn delete_survives_power_loss(plant: Option<VfsPlant>) -> bool {
        let (disk, vfs) = setup(plant);
        drop(open(&vfs, "/db/j", CREATE | ffi::SQLITE_OPEN_MAIN_JOURNAL));
        disk.sync_dir(Path::new("/db")).unwrap();
        let name = CString::new("/db/j").unwrap();
        // SAFETY: our VFS and a NUL-terminated name.
        assert_eq!(unsafe { x_delete(raw(&vfs), name.as_ptr(), 1) }, ffi::SQLITE_OK);
        disk.power_loss(1);
        !disk.exists(Path::new("/db/j")).unwrap()
    }

    #[test]
    fn delete_with_sync_dir_is_durable_unless_planted() {
        assert!(delete_survives_power_loss(None));
        assert!(!delete_survives_power_loss(Some(VfsPlant::DeleteNoDirSync)));
        let (_disk, vfs) = setup(None);
        let name = CString::new("/db/missing").unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { x_delete(raw(&vfs), name.as_ptr(), 0) }, ffi::SQLITE_IOERR_DELETE_NOENT);
    }

    /// A new journal's name is made durable by its first sync (os_unix's
    /// `UNIXFILE_DIRSYNC`).
    #[test]
    fn a_new_journal_syncs_its_directory_once() {
        let (disk, vfs) = setup(None);
        let mut f = open(&vfs, "/db/j", CREATE | ffi::SQLITE_OPEN_MAIN_JOURNAL);
        // SAFETY: an open file.
        unsafe { assert_eq!((f.methods().xSync.unwrap())(f.file(), ffi::SQLITE_SYNC_NORMAL), ffi::SQLITE_OK) };
        drop(f);
        disk.power_loss(1);
        assert!(disk.exists(Path::new("/db/j")).unwrap(), "the journal's name survived");
    }

    #[test]
    fn locks_are_tracked_per_file() {
        let (_disk, vfs) = setup(None);
        let mut f = open(&vfs, "/db/a", CREATE | ffi::SQLITE_OPEN_MAIN_DB);
        let m = f.methods();
        let mut reserved = -1;
        // SAFETY: an open file and an out pointer.
        unsafe {
            assert_eq!((m.xLock.unwrap())(f.file(), ffi::SQLITE_LOCK_SHARED), ffi::SQLITE_OK);
            (m.xCheckReservedLock.unwrap())(f.file(), &mut reserved);
            assert_eq!(reserved, 0);
            (m.xLock.unwrap())(f.file(), ffi::SQLITE_LOCK_RESERVED);
            (m.xCheckReservedLock.unwrap())(f.file(), &mut reserved);
            assert_eq!(reserved, 1);
            (m.xUnlock.unwrap())(f.file(), ffi::SQLITE_LOCK_SHARED);
            (m.xCheckReservedLock.unwrap())(f.file(), &mut reserved);
            assert_eq!(reserved, 0);
            assert_eq!((m.xFileControl.unwrap())(f.file(), 9999, ptr::null_mut()), ffi::SQLITE_NOTFOUND);
            assert_eq!((m.xSectorSize.unwrap())(f.file()), 512);
            assert_eq!((m.xDeviceCharacteristics.unwrap())(f.file()), 0);
        }
    }

    #[test]
    fn a_late_truncate_is_not_covered_by_the_next_sync() {
        for (plant, survives) in [(None, 4), (Some(VfsPlant::LateTruncate), 8)] {
            let (disk, vfs) = setup(plant);
            let mut f = open(&vfs, "/db/j", CREATE | ffi::SQLITE_OPEN_MAIN_JOURNAL);
            let m = f.methods();
            // SAFETY: an open file.
            unsafe {
                (m.xWrite.unwrap())(f.file(), b"12345678".as_ptr().cast(), 8, 0);
                (m.xSync.unwrap())(f.file(), ffi::SQLITE_SYNC_NORMAL);
                (m.xTruncate.unwrap())(f.file(), 4);
                (m.xSync.unwrap())(f.file(), ffi::SQLITE_SYNC_NORMAL);
            }
            drop(f);
            disk.power_loss(1);
            let len = disk.open(Path::new("/db/j"), OpenMode::Read).unwrap().len().unwrap();
            assert_eq!(len, survives, "{plant:?}");
        }
    }

    #[test]
    fn a_panic_in_a_callback_becomes_an_io_error_and_is_kept() {
        let (_disk, vfs) = setup(None);
        let rc = guarded(Some(vfs.context()), ffi::SQLITE_IOERR, || -> c_int { panic!("boom") });
        assert_eq!(rc, ffi::SQLITE_IOERR);
        assert_eq!(vfs.context().take_panic().as_deref(), Some("boom"));
        assert_eq!(vfs.context().take_panic(), None);
    }
}
