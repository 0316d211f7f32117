//! The run a thread is serving: which simulated disk answers its calls
//! under [`ROOT`], which fake file descriptors are its own, and what the
//! layer refused.
//!
//! A session belongs to one thread at a time: it lives in a thread-local,
//! so runs of different seeds on different threads (`--jobs 2`, cargo's
//! parallel tests) each see their own disk; an engine that starts threads
//! passes it between them with the scheduler's baton (`crate::sched`). Its fake
//! file descriptors are numbered `FAKE_FD_BASE + slot * SLOT_FDS + n`, `n`
//! going on from where the slot's previous session stopped (so a stale
//! descriptor of an ended run is bad in the next one, never its file):
//! above any descriptor the kernel hands out here (checked when a session
//! starts), and naming the session's slot, so a call on one from another
//! thread is recognised and refused instead of reaching the kernel or a
//! neighbour's disk. A refusal is a `-1` with its `errno` for the caller,
//! a line on stderr, and an entry the session's owner collects
//! ([`SessionGuard::refusals`]), so a run that hit one fails.
//!
//! A refusal on a thread serving no run (an orphan: a thread the engine
//! started, a stale descriptor of an ended run) is never dropped
//! ([`refuse`]): when exactly one run is live in the process it is the
//! only run the call could belong to, and fails that run; otherwise it
//! fails the sweep ([`orphan_refusals`], which `crate::main` checks after
//! its runs).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

use simkit::vfs::Vfs;

use crate::attrs::AttrTable;
use crate::dirstream::Stream;
use crate::entropy::Entropy;
use crate::errno::Errno;
use crate::files::FdTable;
use crate::plant::LayerPlant;

/// The reserved root: a path under it is the simulated disk's path with
/// the root taken off (`/sim-db/db/log` is the disk's `/db/log`).
pub const ROOT: &str = "/sim-db";
/// The first fake file descriptor.
pub const FAKE_FD_BASE: i32 = 1 << 30;
/// Fake descriptors per session slot.
pub const SLOT_FDS: i32 = 1 << 20;
/// Sessions that can be open at once (threads serving a run).
pub const SLOTS: usize = 512;

const _: () = assert!(FAKE_FD_BASE as i64 + SLOTS as i64 * SLOT_FDS as i64 <= i32::MAX as i64);

/// One thread's run: its disk, its directories, its open files.
pub struct Session {
    pub vfs: Arc<dyn Vfs>,
    pub slot: usize,
    /// The disk's directories (disk paths): the disk lists files only, so
    /// the layer keeps the directories it knows of (the disk's root, the
    /// ones named at install, the ones the program made).
    pub dirs: BTreeSet<PathBuf>,
    pub fds: FdTable,
    /// Open directory streams, by their descriptor.
    pub streams: BTreeMap<i32, Stream>,
    /// The random bytes and the time this thread's calls are served.
    pub entropy: Entropy,
    /// Modes and times the program set or caused, by disk path.
    pub attrs: AttrTable,
    /// The run's working directory (a disk path), once a served `chdir`
    /// set one: relative paths from `AT_FDCWD` are then the layer's.
    pub cwd: Option<PathBuf>,
    /// The mistake planted in the layer for this run, if any (`--plant`).
    pub plant: Option<LayerPlant>,
    /// Set once the program is taken for one that loops forever
    /// ([`declare_livelock`]): what was seen. From then on every served
    /// call of this thread fails without touching the disk.
    pub livelock: Option<String>,
}

thread_local! {
    /// Never dropped by the thread's end (`ManuallyDrop`: no destructor is
    /// registered): a session is taken out by its guard ([`SessionGuard`]),
    /// and a preloaded program's, which lives as long as the process, must
    /// still serve the `atexit` handlers glibc's `exit` runs after the
    /// thread-local destructors (git removing its lock files at exit).
    static CURRENT: ManuallyDrop<RefCell<Option<Session>>> = const { ManuallyDrop::new(RefCell::new(None)) };
    /// This thread's slot while it holds a run's session: readable while
    /// the session is borrowed (a refusal made inside a served call); it
    /// travels with the session between a run's threads ([`take_current`],
    /// [`put_current`]).
    static MY_SLOT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// What [`hang`] and [`end_run`] call before the thread parks: it tells
/// the thread that waits for the engine's answer that none will come,
/// with the whole message the waiter raises. Kept by slot, not by thread:
/// a run's session travels between its threads with the scheduler's baton
/// (`crate::sched`), and any of them may be the one to hang.
pub type HangHook = Box<dyn FnOnce(String) + Send>;

/// Who to tell, per slot, if the run must end with its thread parked.
static ON_HANG: Mutex<Vec<Option<HangHook>>> = Mutex::new(Vec::new());

/// Which thread owns each slot.
static OWNERS: Mutex<[Option<ThreadId>; SLOTS]> = Mutex::new([None; SLOTS]);
/// Where each slot's next session starts numbering its descriptors:
/// where the last one stopped, so a descriptor an ended run left behind
/// (a file dropped after its session, a thread that outlived it) is
/// `EBADF` in the next run of the slot, never one of its files.
static NEXT_FD_IN_SLOT: Mutex<[i32; SLOTS]> = Mutex::new([0; SLOTS]);

/// Everything refused, with the slot it concerned (`None`: the sweep's,
/// an orphan no one run could be blamed for).
static REFUSALS: Mutex<Vec<(Option<usize>, String)>> = Mutex::new(Vec::new());

/// The current thread's session while it lives; dropping it ends its
/// memory maps (`interpose::maps::end_session`), closes every fake
/// descriptor still open (dropping their files) and frees the slot.
pub struct SessionGuard {
    slot: usize,
}

/// Serve `vfs` to this thread under [`ROOT`] (`crate::install`, which
/// first links the interposed calls, says what each argument is).
pub(crate) fn install(vfs: Arc<dyn Vfs>, dirs: &[&Path], entropy_seed: u64, plant: Option<LayerPlant>) -> SessionGuard {
    assert!(!has_session(), "this thread already serves a simulated run");
    let me = thread::current().id();
    let slot = {
        let mut owners = OWNERS.lock().unwrap_or_else(|p| p.into_inner());
        let slot = owners.iter().position(Option::is_none).expect("more simulated runs at once than SLOTS");
        owners[slot] = Some(me);
        slot
    };
    let mut known: BTreeSet<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    known.insert(PathBuf::from("/"));
    let start = NEXT_FD_IN_SLOT.lock().unwrap_or_else(|p| p.into_inner())[slot];
    let fds = FdTable::new(FAKE_FD_BASE + slot as i32 * SLOT_FDS, SLOT_FDS, start);
    MY_SLOT.set(Some(slot));
    // The installing thread is the run's thread 0 (`crate::sched`).
    vfs.act_as(0);
    CURRENT.with(|c| {
        *c.borrow_mut() = Some(Session {
            vfs: crate::watch::watch(vfs),
            slot,
            dirs: known,
            fds,
            streams: BTreeMap::new(),
            entropy: Entropy::new(entropy_seed),
            attrs: AttrTable::default(),
            cwd: None,
            plant,
            livelock: None,
        })
    });
    // System calls the engine makes without libc, from now on the run's.
    crate::interpose::raw_trap::arm_thread();
    SessionGuard { slot }
}

impl SessionGuard {
    /// What the layer refused for this session so far, taken.
    pub fn refusals(&self) -> Vec<String> {
        let mut all = REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
        let (mine, rest) = all.drain(..).partition(|(slot, _)| *slot == Some(self.slot));
        *all = rest;
        mine.into_iter().map(|(_, what)| what).collect()
    }

    /// The livelock this session's program was taken for, if any
    /// (`declare_livelock`, when the program is taken for one that loops
    /// forever).
    pub fn livelock(&self) -> Option<String> {
        CURRENT.with(|c| c.borrow().as_ref().and_then(|s| s.livelock.clone()))
    }
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        crate::interpose::raw_trap::disarm_thread();
        crate::interpose::maps::end_session(self.slot);
        let session = CURRENT.with(|c| c.borrow_mut().take());
        assert!(session.as_ref().is_none_or(|s| s.slot == self.slot));
        if let Some(s) = &session {
            NEXT_FD_IN_SLOT.lock().unwrap_or_else(|p| p.into_inner())[self.slot] = s.fds.next_start();
        }
        drop(session);
        MY_SLOT.set(None);
        drop(take_hook(self.slot));
        // Refusals its owner did not take (an orphan that came after the
        // run's last look, a test that panicked first) are not the next
        // session's in this slot, and not nothing: the sweep's. The slot is
        // freed under the same lock, so no orphan is blamed on it after.
        let mut all = REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
        OWNERS.lock().unwrap_or_else(|p| p.into_inner())[self.slot] = None;
        for (slot, what) in all.iter_mut().filter(|(slot, _)| *slot == Some(self.slot)) {
            *slot = None;
            what.push_str(" (left untaken by its run)");
        }
    }
}

/// Whether this thread serves a run.
pub fn has_session() -> bool {
    CURRENT.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

/// The sweep's refusals, taken: calls from a thread serving no run while
/// no run or several were live (so no one run could be blamed), and a
/// run's refusals it never took. Non-empty fails the sweep: `crate::main`
/// checks after its runs; a test that installs sessions itself asks.
pub fn orphan_refusals() -> Vec<String> {
    let mut all = REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
    let (orphans, rest) = all.drain(..).partition(|(slot, _)| slot.is_none());
    *all = rest;
    orphans.into_iter().map(|(_, what)| what).collect()
}

/// Refuse loudly: say so on stderr, record it for `slot`'s owner (`None`:
/// this thread's run, if it serves one, else [`blame_orphan`]), and fail
/// the call with `errno`.
pub fn refuse(slot: Option<usize>, errno: Errno, what: String) -> Errno {
    // Held while an orphan is blamed, so the run blamed cannot end first
    // (a session frees its slot under this lock).
    let mut all = REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
    let (slot, what) = match slot.or_else(current_slot) {
        Some(slot) => (Some(slot), what),
        None => blame_orphan(what),
    };
    all.push((slot, what.clone()));
    drop(all);
    eprintln!("stdfs: refused: {what}");
    errno
}

/// The slot of the run whose session this thread holds, if any.
pub fn current_slot() -> Option<usize> {
    MY_SLOT.try_with(Cell::get).ok().flatten()
}

/// Whom an orphan's refusal (from a thread serving no run) fails: the one
/// run live in the process, the only one it could belong to; with none or
/// several live, the sweep (`None`), since blaming every live run would
/// make an innocent seed's verdict hang on the scheduler.
fn blame_orphan(what: String) -> (Option<usize>, String) {
    let live: Vec<usize> = {
        let owners = OWNERS.lock().unwrap_or_else(|p| p.into_inner());
        owners.iter().enumerate().filter(|(_, owner)| owner.is_some()).map(|(slot, _)| slot).collect()
    };
    match live.as_slice() {
        [only] => (Some(*only), format!("{what} (from a thread serving no run: failing the one run live)")),
        _ => (None, format!("{what} (from a thread serving no run, {} runs live: failing the sweep)", live.len())),
    }
}

/// On a thread serving a run, refuse a change to the real file system (a
/// path outside [`ROOT`] opened for writing or created, renamed, removed,
/// made): the engine under test would touch the real disk, outside the
/// seed's, and its run would no longer be the seed's alone (issue 36: fail
/// loudly, never pass through). Reading outside the root passes (std
/// reads `/proc` and the executable for a panic's backtrace). `None` on a
/// thread serving no run (the harness's own files are its business), and
/// while the session is busy serving a call: that is the layer's own disk
/// at work (`crash-os` serves the root from a real directory).
pub fn refuse_real_change(op: &str, path: &[u8]) -> Option<Errno> {
    if crate::live::is_live() {
        return None; // a preloaded program's own business (`crate::live`)
    }
    let slot = CURRENT.try_with(|c| c.try_borrow().ok().and_then(|s| s.as_ref().map(|s| s.slot))).ok().flatten()?;
    let shown = String::from_utf8_lossy(path);
    let what = format!("{op} {shown}: a change outside {ROOT} from a thread serving a simulated run (the real disk)");
    Some(refuse(Some(slot), Errno::EPERM, what))
}

/// Take this thread's program for one that loops forever (a count of the
/// layer's, `interpose::count_outcome`): say so on stderr and remember
/// `what` for the session's owner. From now on [`livelocked`] holds, and
/// the layer fails every call of this thread without serving it: a loop
/// that stops at an error (persy's free-list walk, STDFS.md finding 3)
/// then returns, and its thread ends as any other. `false` when the
/// thread serves no run (or its session is busy), for the caller to end
/// the process instead.
pub fn declare_livelock(what: String) -> bool {
    CURRENT.with(|c| match c.try_borrow_mut().ok().as_deref_mut().and_then(Option::as_mut) {
        Some(session) => {
            eprintln!("stdfs: livelock: {what}");
            session.livelock.get_or_insert(what);
            true
        }
        None => false,
    })
}

/// Name who to tell if this thread's run must hang for good ([`hang`],
/// [`end_run`]): the engine thread's waiter, for the call under way.
/// (As [`SessionGuard::livelock`], for the engine threads only.)
pub fn on_hang(hook: HangHook) {
    let Some(slot) = current_slot() else { return };
    let mut hooks = ON_HANG.lock().unwrap_or_else(|p| p.into_inner());
    if hooks.len() < SLOTS {
        hooks.resize_with(SLOTS, || None);
    }
    hooks[slot] = Some(hook);
}

fn take_hook(slot: usize) -> Option<HangHook> {
    ON_HANG.lock().unwrap_or_else(|p| p.into_inner()).get_mut(slot).and_then(Option::take)
}

/// A program that loops on after every call failed ([`declare_livelock`]
/// did not end it) can never be made to return: no error ends its loop
/// and nothing can unwind out of the C function it is in. With a hook
/// ([`on_hang`]), the run ends ([`end_run`]) and the thread parks
/// forever: the thread and what it holds are leaked, the run goes on.
/// Without one, returns, for the caller to end the process.
pub fn hang(what: String) {
    let Some(slot) = current_slot() else { return };
    let message = format!("livelock: the engine never returned ({what}): its thread is parked for good");
    if end_run(slot, message) {
        loop {
            thread::park();
        }
    }
}

/// End the run of `slot` for good: free the slot, and tell its hook
/// `message` (with anything refused for the slot meanwhile), which the
/// engine call's waiter raises as the engine's panic. The caller then
/// parks its thread forever. `false` when no one waits (no hook): the
/// caller ends the process instead.
pub fn end_run(slot: usize, message: String) -> bool {
    let Some(hook) = take_hook(slot) else { return false };
    let mut message = message;
    let mut all = REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
    let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|(s, _)| *s == Some(slot));
    *all = rest;
    mine.into_iter().for_each(|(_, refused)| message.push_str(&format!("; refused meanwhile: {refused}")));
    // A crash ends the process's maps: the run's end ends its maps.
    crate::interpose::maps::end_session(slot);
    // Freed under the refusals' lock (REFUSALS, then OWNERS, as
    // [`refuse`]): no orphan is blamed on a run that has ended.
    OWNERS.lock().unwrap_or_else(|p| p.into_inner())[slot] = None;
    drop(all);
    hook(message);
    true
}

/// Tell the session's disk that thread `tid` of the run makes the calls
/// from now on (`Vfs::act_as`: the hazard watch's reliance is per thread).
pub fn act_as(tid: usize) {
    CURRENT.with(|c| {
        if let Some(session) = c.borrow().as_ref() {
            session.vfs.act_as(u32::try_from(tid).expect("a run has fewer than 2^32 threads"));
        }
    });
}

/// The mistake planted in this thread's run, if it holds a session and
/// the run plants one.
pub fn plant() -> Option<LayerPlant> {
    CURRENT.with(|c| c.try_borrow().ok().and_then(|current| current.as_ref().and_then(|s| s.plant)))
}

/// Take this thread's session away, to hand it to another thread of the
/// same run with the scheduler's baton (`crate::sched`): the baton's
/// holder alone runs the engine, and it holds the session.
pub fn take_current() -> Session {
    let session = CURRENT.with(|c| c.borrow_mut().take()).expect("the baton's holder holds the run's session");
    MY_SLOT.set(None);
    session
}

/// Hold `session` on this thread (the baton came here): its descriptors
/// are this thread's now ([`with_fd`] asks who holds the session; asking
/// for this thread's id here would set std's thread handle before std
/// does, in a thread's start).
pub fn put_current(session: Session) {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        assert!(current.is_none(), "a thread holds one session at a time");
        MY_SLOT.set(Some(session.slot));
        *current = Some(session);
    });
}

/// Whether this thread's program was taken for one that loops forever.
pub fn livelocked() -> bool {
    CURRENT
        .try_with(|c| c.try_borrow().is_ok_and(|s| s.as_ref().is_some_and(|s| s.livelock.is_some())))
        .unwrap_or(false)
}

/// This thread's run's working directory, if a served `chdir` set one
/// (`None` too while the session serves a call: the layer's own work is
/// the real system's).
pub fn cwd() -> Option<PathBuf> {
    CURRENT.try_with(|c| c.try_borrow().ok().and_then(|s| s.as_ref().and_then(|s| s.cwd.clone()))).ok().flatten()
}

/// The simulated descriptors and directory streams this thread's run
/// holds open (0 on a thread serving none).
pub fn open_descriptor_count() -> usize {
    CURRENT
        .try_with(|c| c.try_borrow().ok().and_then(|s| s.as_ref().map(|s| s.fds.open_count() + s.streams.len())))
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// Every refusal recorded in this process, taken (a preloaded program's
/// one run reports them all: `crate::live`).
pub fn take_all_refusals() -> Vec<String> {
    let mut all = REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
    all.drain(..).map(|(_, what)| what).collect()
}

/// Low descriptors a preloaded program placed a simulated file at
/// (`dup2(fd, 1)`: [`place_low`]), one bit each; always 0 outside a live
/// process.
static LOW_PLACED: AtomicU64 = AtomicU64::new(0);
/// The descriptors [`place_low`] can place a simulated file at: `0..64`.
pub const LOW_FDS: i32 = 64;

/// Whether `fd` is one of the layer's (any session's), or a low number a
/// preloaded program placed one at.
pub fn is_fake_fd(fd: i32) -> bool {
    fd >= FAKE_FD_BASE || ((0..LOW_FDS).contains(&fd) && LOW_PLACED.load(Ordering::Acquire) & (1 << fd) != 0)
}

/// `dup2(fd, low)` in a preloaded program: `low` names `fd`'s description
/// from now on, on this thread's session (the caller keeps the kernel's
/// number `low` taken, so no real open lands there).
pub fn place_low(fd: i32, low: i32, cloexec: bool) -> Result<(), Errno> {
    assert!(crate::live::is_live(), "only a preloaded program places a simulated file at a low descriptor");
    if !(0..LOW_FDS).contains(&low) {
        return Err(refuse(
            None,
            Errno::EINVAL,
            format!("dup2 of simulated fd {fd} onto fd {low}: at most fd {}", LOW_FDS - 1),
        ));
    }
    with_fd(fd, "dup2", |s| s.fds.place(fd, low, cloexec))?;
    LOW_PLACED.fetch_or(1 << low, Ordering::AcqRel);
    Ok(())
}

/// `low` names no simulated file any more (closed, or a real file put
/// there by `dup2`).
pub fn forget_low(low: i32) {
    assert!((0..LOW_FDS).contains(&low));
    LOW_PLACED.fetch_and(!(1 << low), Ordering::AcqRel);
}

/// The simulated descriptors at low numbers without close-on-exec, which
/// an `exec` would hand the next program (it cannot: their descriptions
/// live in this process's memory).
pub fn low_placed_kept_on_exec() -> Vec<i32> {
    if !has_session() {
        return Vec::new();
    }
    let placed = LOW_PLACED.load(Ordering::Acquire);
    (0..LOW_FDS)
        .filter(|fd| placed & (1 << fd) != 0)
        .filter(|&fd| !with_session(|s| s.fds.cloexec(fd, None)).unwrap_or(true))
        .collect()
}

/// Run `serve` on the session owning fake descriptor `fd`, which must be
/// this thread's; a call from any other thread is refused.
pub fn with_fd<T>(fd: i32, op: &str, serve: impl FnOnce(&mut Session) -> Result<T, Errno>) -> Result<T, Errno> {
    assert!(is_fake_fd(fd));
    // A low number placed by `dup2` is the thread's own run's (a live
    // process serves one run, on its main thread).
    let slot = if fd < FAKE_FD_BASE {
        current_slot().unwrap_or(usize::MAX)
    } else {
        ((fd - FAKE_FD_BASE) / SLOT_FDS) as usize
    };
    // The thread holding the slot's session owns its descriptors: the
    // run's thread, or the thread of its run the scheduler's baton is on.
    if current_slot() != Some(slot) {
        let me = thread::current().id();
        let owner = OWNERS.lock().unwrap_or_else(|p| p.into_inner()).get(slot).copied().flatten();
        let whose = owner.map_or("no live run".to_string(), |t| format!("the run on thread {t:?}"));
        let what = format!("{op} on simulated fd {fd} from thread {me:?}: the fd is {whose}'s, and the layer serves each run on its own thread only");
        // A slot no run owns is not the next run's to answer for: this
        // thread's run, or an orphan's.
        return Err(refuse(owner.map(|_| slot), Errno::EBADF, what));
    }
    with_session(serve)
}

/// Run `serve` on this thread's session, for a call naming `path` under
/// the root; a thread with no session is refused.
pub fn with_path<T>(op: &str, path: &Path, serve: impl FnOnce(&mut Session) -> Result<T, Errno>) -> Result<T, Errno> {
    if !has_session() {
        let me = thread::current().id();
        let what =
            format!("{op} {}: a path under {ROOT} from thread {me:?}, which serves no simulated run", path.display());
        return Err(refuse(None, Errno::EPERM, what));
    }
    with_session(serve)
}

/// Run `serve` on this thread's randomness and clock. The caller checked
/// that the thread serves a run; a call made while the session is busy
/// (from inside the layer's own serving) is refused.
pub fn with_entropy<T>(serve: impl FnOnce(&mut Entropy) -> T) -> Result<T, Errno> {
    CURRENT.with(|c| match c.try_borrow_mut() {
        Ok(mut current) => {
            let session = current.as_mut().expect("checked by the caller: this thread serves a run");
            Ok(serve(&mut session.entropy))
        }
        Err(_) => {
            Err(refuse(None, Errno::EIO, "randomness or time asked for while the layer served a call".to_string()))
        }
    })
}

impl Session {
    /// `path`'s contents changed now (a write, a truncation, a creation).
    pub fn modified(&mut self, path: &Path) {
        self.attrs.modified(path, self.entropy.peek_ns());
    }

    /// Whether `path` is a directory: one the session knows, or one the
    /// disk has that an earlier session made (the disk lists files only,
    /// and a session starts knowing its root and the kit's directory), which
    /// it learns here. The disk is asked (one open, traced like any other)
    /// only for a name the session does not know as a directory, which the
    /// callers ask about only where the call would otherwise fail.
    /// `from` was renamed `to` on the disk: the directories the session
    /// knows under `from` (a directory's rename) are under `to` now, each
    /// name's metadata with them, and what `to` held is gone.
    pub fn renamed(&mut self, from: &Path, to: &Path) {
        let moved: Vec<PathBuf> = self.dirs.iter().filter(|d| d.starts_with(from)).cloned().collect();
        self.dirs.retain(|d| !d.starts_with(to) && !d.starts_with(from));
        for old in moved {
            let rest = old.strip_prefix(from).expect("listed by this prefix");
            self.dirs.insert(if rest.as_os_str().is_empty() { to.to_path_buf() } else { to.join(rest) });
        }
        self.attrs.renamed(from, to);
    }

    pub fn is_dir(&mut self, path: &Path) -> Result<bool, Errno> {
        if self.dirs.contains(path) {
            return Ok(true);
        }
        match self.vfs.open(path, simkit::vfs::OpenMode::Read) {
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                self.dirs.insert(path.to_path_buf());
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
            Ok(_) => Ok(false),
        }
    }

    /// The same, for the file fake descriptor `fd` is open on (no copy of
    /// its path: this is every write's).
    pub fn modified_fd(&mut self, fd: i32) -> Result<(), Errno> {
        let Session { fds, attrs, entropy, .. } = self;
        attrs.modified(&fds.get(fd)?.disk_path, entropy.peek_ns());
        Ok(())
    }
}

/// Run `serve` on this thread's session, which must exist (the preloaded
/// object's calls, made outside any served call).
pub fn with_current<T>(serve: impl FnOnce(&mut Session) -> Result<T, String>) -> Result<T, String> {
    CURRENT.with(|c| match c.try_borrow_mut().as_deref_mut() {
        Ok(Some(session)) => serve(session),
        Ok(None) => Err("no simulated run on this thread".to_string()),
        Err(_) => Err("the layer is serving a call".to_string()),
    })
}

fn with_session<T>(serve: impl FnOnce(&mut Session) -> Result<T, Errno>) -> Result<T, Errno> {
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        let session = current.as_mut().expect("checked by the caller: this thread serves a run");
        serve(session)
    })
}
