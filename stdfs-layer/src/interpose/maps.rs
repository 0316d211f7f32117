//! The memory maps the layer serves (`mmap` of a simulated descriptor,
//! `crate::serve_map`): each is anonymous memory of the layer's own that
//! holds the file's bytes as a read would return them (the page cache's
//! view), kept read-only, and rewritten by the layer whenever the process
//! changes the file through the layer ([`after_change`], from
//! `crate::watch`), so that it stays coherent with the process's own
//! writes as a kernel's shared page cache would.
//!
//! The registry is process-wide, not a session's: an engine may unmap
//! (drop its `memmap2::Mmap`) on any thread. It is keyed by address, and
//! an address never leaves this module except as the caller's return
//! value: nothing here draws from the clock, and no map's address reaches
//! a trace or a message.
//!
//! What a kernel does that the layer approximates:
//! - pages wholly past the end of the file are `PROT_NONE`, so touching
//!   one raises `SIGSEGV` where a kernel raises `SIGBUS`; the bytes past
//!   the end within the last page read as zeros, as a kernel's do;
//! - a session's end ([`end_session`]: the engine's crash, restart or
//!   close) replaces its maps with inaccessible reservations: a stale
//!   pointer faults (`SIGSEGV`) instead of reading another run's memory,
//!   and the engine's later `munmap` of it releases the reservation;
//! - bytes the layer cannot know (a failed write whose read-back failed
//!   too) make their map inaccessible for good, as a kernel's page that
//!   failed to read raises `SIGBUS`.
//!
//! A private writable map (`MAP_PRIVATE` with `PROT_WRITE`) is served as
//! a private copy taken at `mmap`: never written back, and not updated by
//! later writes of the file (POSIX leaves that unspecified; Linux would
//! show them on pages the process has not written yet).
//!
//! A writable shared map of a file declared volatile (`crate::volatile`)
//! is served from a `memfd` of the layer's, one per file and session, so
//! that every map of the file in the run shares its stores, as a kernel's
//! shared pages would. The `memfd` starts as the file's bytes and follows
//! the process's writes through the layer; its stores never reach the
//! simulated disk, and the session's end closes it (no crash keeps it).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::real;
use crate::errno::Errno;

/// Which file (inode) a map shows: the layer's own number for it
/// (`crate::watch`), never shown.
pub type FileId = u64;

/// The page size of x86-64 Linux, which `mmap` rounds to.
pub const PAGE_BYTES: usize = 4096;

/// One served map.
pub struct MapRecord {
    /// Page-rounded.
    pub len_bytes: usize,
    pub file: FileId,
    /// The file offset of the map's first byte (page-aligned).
    pub offset_bytes: u64,
    /// `false`: a private writable copy, never updated ([`after_change`]
    /// passes it by) and never read-only.
    pub coherent: bool,
    /// Inaccessible for good: bytes the layer could not know.
    pub poisoned: bool,
    /// A writable shared map of a volatile file: the session's `memfd`
    /// for the file, never written back (never `coherent` either).
    pub volatile: bool,
    /// The session (slot) that made it: its end ends the map.
    pub slot: usize,
    /// The disk path it was made from, for refusals.
    pub path: PathBuf,
}

struct Registry {
    maps: BTreeMap<usize, MapRecord>,
    /// The file's length as the layer last saw it, for each file with a
    /// coherent map: which pages are past its end.
    file_len_bytes: BTreeMap<FileId, u64>,
    /// The memory behind a volatile file's writable shared maps, per
    /// (session slot, file): a `memfd` and how far it reaches (bytes, in
    /// the file's offsets).
    shared: BTreeMap<(usize, FileId), Shared>,
}

struct Shared {
    memfd: i32,
    len_bytes: u64,
}

static REGISTRY: Mutex<Registry> =
    Mutex::new(Registry { maps: BTreeMap::new(), file_len_bytes: BTreeMap::new(), shared: BTreeMap::new() });
/// How many maps (and volatile memfds, which follow their file's writes
/// until their session ends) are live: 0 lets every memory call of the
/// allocator pass without the lock.
static LIVE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set while this thread holds the registry: the allocator's own
    /// `munmap`/`mprotect`/`madvise` under it pass through unexamined
    /// (they cannot be of a served map, and examining them would wait on
    /// the lock this thread holds).
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Whether a memory call may concern a served map (else it passes
/// through at the cost of one atomic load).
pub fn may_concern() -> bool {
    LIVE.load(Ordering::Acquire) != 0 && !INSIDE.try_with(Cell::get).unwrap_or(true)
}

struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.set(false);
    }
}

fn with_registry<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    INSIDE.set(true);
    let _inside = Inside;
    let mut registry = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
    let out = f(&mut registry);
    LIVE.store(registry.maps.len() + registry.shared.len(), Ordering::Release);
    out
}

pub fn page_up(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_BYTES as u64) * PAGE_BYTES as u64
}

/// Set `prot` on `[at, at + len)` of a map's memory (page-aligned).
fn protect(at: usize, len_bytes: usize, prot: i32) {
    if len_bytes == 0 {
        return;
    }
    debug_assert!(at.is_multiple_of(PAGE_BYTES) && len_bytes.is_multiple_of(PAGE_BYTES));
    // SAFETY: the range is the layer's own anonymous memory (a live map).
    let done = unsafe { real::mprotect(at as *mut c_void, len_bytes, prot) };
    assert_eq!(done, 0, "mprotect of the layer's own map failed");
}

/// The map's pages readable as far as the file reaches (`file_len_bytes`),
/// inaccessible past it (or all of them, poisoned).
fn settle(at: usize, record: &MapRecord, file_len_bytes: u64) {
    let reach = file_len_bytes.saturating_sub(record.offset_bytes);
    let readable = if record.poisoned { 0 } else { page_up(reach).min(record.len_bytes as u64) as usize };
    debug_assert!(!(record.coherent && record.volatile), "a volatile map is writable");
    let prot = if record.coherent { libc::PROT_READ } else { libc::PROT_READ | libc::PROT_WRITE };
    protect(at, readable, prot);
    protect(at + readable, record.len_bytes - readable, libc::PROT_NONE);
}

/// A new map: `len_bytes` (page-rounded) of fresh memory, at `hint` with
/// `fixed_flags` (`MAP_FIXED`/`MAP_FIXED_NOREPLACE`, else anywhere),
/// filled by `fill` (the file's bytes from the map's offset; the rest
/// zeros), then protected and registered. `Err` from `fill` unmaps it.
pub fn create(
    hint: usize,
    fixed_flags: i32,
    record: MapRecord,
    file_len_bytes: u64,
    fill: impl FnOnce(&mut [u8]) -> Result<(), Errno>,
) -> Result<usize, Errno> {
    debug_assert!(record.len_bytes.is_multiple_of(PAGE_BYTES) && record.len_bytes > 0);
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | fixed_flags;
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: an anonymous map; with MAP_FIXED the caller asked for the
    // very replacement the kernel would make for a file map.
    let at = unsafe { real::mmap64(hint as *mut c_void, record.len_bytes, rw, flags, -1, 0) };
    if at == libc::MAP_FAILED {
        return Err(Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM)));
    }
    let at = at as usize;
    // SAFETY: the fresh map, `len_bytes` long, readable and writable.
    let memory = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, record.len_bytes) };
    if let Err(errno) = fill(memory) {
        // SAFETY: the fresh map, no one else's yet.
        unsafe { real::munmap(at as *mut c_void, record.len_bytes) };
        return Err(errno);
    }
    settle(at, &record, file_len_bytes);
    with_registry(|r| {
        forget_locked(r, at, record.len_bytes);
        if record.coherent {
            r.file_len_bytes.insert(record.file, file_len_bytes);
        }
        r.maps.insert(at, record);
    });
    Ok(at)
}

/// Records of maps overlapping `[at, at + len)`: their start addresses.
fn overlapping(r: &Registry, at: usize, len_bytes: usize) -> Vec<usize> {
    let end = at.saturating_add(len_bytes);
    r.maps.range(..end).filter(|(start, m)| **start + m.len_bytes > at).map(|(start, _)| *start).collect()
}

/// What the layer's records say about `[at, at + len)`: the first served
/// map overlapping it (whether it is coherent, its slot, its path).
pub fn overlap(at: usize, len_bytes: usize) -> Option<(bool, usize, PathBuf)> {
    with_registry(|r| {
        let first = *overlapping(r, at, len_bytes).first()?;
        let m = &r.maps[&first];
        Some((m.coherent, m.slot, m.path.clone()))
    })
}

/// Run `change` (a `munmap`, or a `MAP_FIXED` map, of `[at, at + len)`)
/// and, if `done` says it took effect, forget the served maps there, all
/// while holding the registry: the kernel may hand the freed pages to
/// another thread's `mmap` the moment `change` returns, and that thread's
/// `mprotect` or `madvise` of them must not find them still recorded as
/// a simulated file's map (it was refused: std's new thread then panics
/// setting up its signal stack's guard page).
pub fn replace<T>(at: usize, len_bytes: usize, done: impl FnOnce(&T) -> bool, change: impl FnOnce() -> T) -> T {
    with_registry(|r| {
        let out = change();
        if done(&out) {
            forget_locked(r, at, len_bytes);
        }
        out
    })
}

fn forget_locked(r: &mut Registry, at: usize, len_bytes: usize) {
    // The kernel unmaps (or maps over) whole pages: a length rounded up.
    let end = at.saturating_add(len_bytes).saturating_add(PAGE_BYTES - 1) & !(PAGE_BYTES - 1);
    let at = at & !(PAGE_BYTES - 1);
    let len_bytes = end - at;
    for start in overlapping(r, at, len_bytes) {
        let m = r.maps.remove(&start).expect("listed just now");
        let m_end = start + m.len_bytes;
        if start < at {
            let left = MapRecord { len_bytes: at - start, path: m.path.clone(), ..m };
            r.maps.insert(start, left);
        }
        if m_end > end {
            let skipped = (end - start) as u64;
            let right = MapRecord { len_bytes: m_end - end, offset_bytes: m.offset_bytes + skipped, ..m };
            r.maps.insert(end, right);
        }
    }
    retain_mapped(r);
}

/// Forget the length of every file with no map left, and no volatile
/// memfd (which follows the file's writes until its session ends).
fn retain_mapped(r: &mut Registry) {
    let mut files: std::collections::BTreeSet<FileId> = r.maps.values().map(|m| m.file).collect();
    files.extend(r.shared.keys().map(|(_, file)| *file));
    r.file_len_bytes.retain(|file, _| files.contains(file));
}

/// Whether `file` has a coherent map (a change to it must reach one).
pub fn file_is_mapped(file: FileId) -> bool {
    LIVE.load(Ordering::Acquire) != 0 && with_registry(|r| r.file_len_bytes.contains_key(&file))
}

/// A change the process made to a file through the layer.
pub enum Change<'a> {
    /// `bytes` are now at `at` (a write, or the read-back of a failed
    /// one); the file's length is `len_after`, or (`None`) what it was
    /// extended to cover them.
    Bytes { at: u64, bytes: &'a [u8], len_after: Option<u64> },
    /// The file's length is now `len_after` (a truncation or extension:
    /// bytes past the old end read as zeros).
    Len { len_after: u64 },
    /// The file's bytes are unknown (a failed write that could not be
    /// read back): its maps become inaccessible for good.
    Unknown,
}

/// Bring every coherent map of `file` up to date with `change`.
pub fn after_change(file: FileId, change: Change<'_>) {
    with_registry(|r| {
        let Some(len_before) = r.file_len_bytes.get(&file).copied() else { return };
        let len_after = match change {
            Change::Bytes { at, bytes, len_after } => {
                len_after.unwrap_or_else(|| len_before.max(at + bytes.len() as u64))
            }
            Change::Len { len_after } => len_after,
            Change::Unknown => len_before,
        };
        r.file_len_bytes.insert(file, len_after);
        for (&start, m) in r.maps.iter_mut().filter(|(_, m)| m.file == file && m.coherent && !m.poisoned) {
            m.poisoned = matches!(change, Change::Unknown);
            update(start, m, &change, len_before, len_after);
        }
        for (_, shared) in r.shared.iter().filter(|((_, f), _)| *f == file) {
            update_shared(shared, &change, len_before, len_after);
        }
        for (&start, m) in r.maps.iter().filter(|(_, m)| m.file == file && m.volatile) {
            settle(start, m, len_after);
        }
    });
}

/// One map's memory after `change`: writable for the update, then
/// settled again. Bytes past the file's end stay zeros (what a shrink
/// cut is zeroed), so that growing the file again shows zeros there.
fn update(start: usize, m: &MapRecord, change: &Change<'_>, len_before: u64, len_after: u64) {
    let map_from = m.offset_bytes;
    let map_to = m.offset_bytes + m.len_bytes as u64;
    protect(start, m.len_bytes, libc::PROT_READ | libc::PROT_WRITE);
    // SAFETY: the map's own memory, made writable just now.
    let memory = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, m.len_bytes) };
    if let Change::Bytes { at, bytes, .. } = change {
        let from = (*at).max(map_from);
        let to = (*at + bytes.len() as u64).min(map_to).min(len_after);
        if from < to {
            let src = &bytes[(from - at) as usize..(to - at) as usize];
            memory[(from - map_from) as usize..(to - map_from) as usize].copy_from_slice(src);
        }
    }
    if len_after < len_before {
        let from = len_after.max(map_from);
        let to = len_before.min(map_to);
        if from < to {
            memory[(from - map_from) as usize..(to - map_from) as usize].fill(0);
        }
    }
    settle(start, m, len_after);
}

/// A session ends (its engine crashed, restarted or closed): each of its
/// maps becomes an inaccessible reservation (a stale pointer faults) and
/// leaves the registry, and its volatile files' memfds are closed.
pub fn end_session(slot: usize) {
    if LIVE.load(Ordering::Acquire) == 0 {
        return;
    }
    with_registry(|r| {
        let ended: Vec<usize> = r.maps.iter().filter(|(_, m)| m.slot == slot).map(|(start, _)| *start).collect();
        for start in ended {
            let m = r.maps.remove(&start).expect("listed just now");
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE;
            // SAFETY: the layer's own map, replaced in place by memory no
            // access may touch; the engine's pointers into it now fault.
            let at = unsafe { real::mmap64(start as *mut c_void, m.len_bytes, libc::PROT_NONE, flags, -1, 0) };
            assert_eq!(at as usize, start, "a map's reservation replaces it in place");
        }
        let ended: Vec<(usize, FileId)> = r.shared.keys().filter(|(s, _)| *s == slot).copied().collect();
        for key in ended {
            let shared = r.shared.remove(&key).expect("listed just now");
            // SAFETY: the layer's own memfd; its maps were replaced above.
            unsafe { real::close(shared.memfd) };
        }
        retain_mapped(r);
    });
}

/// A writable shared map of a volatile file (`record.volatile`): the
/// session's `memfd` for the file (made at its first map, grown and
/// filled by `fill(from, bytes)` with the file's bytes as far as a map
/// reaches), mapped shared at `hint` with `fixed_flags`.
pub fn create_shared(
    hint: usize,
    fixed_flags: i32,
    record: MapRecord,
    file_len_bytes: u64,
    fill: impl FnOnce(u64, &mut [u8]) -> Result<(), Errno>,
) -> Result<usize, Errno> {
    debug_assert!(record.volatile && !record.coherent && record.len_bytes.is_multiple_of(PAGE_BYTES));
    with_registry(|r| {
        let key = (record.slot, record.file);
        let end_bytes = record.offset_bytes + record.len_bytes as u64;
        let shared = match r.shared.entry(key) {
            std::collections::btree_map::Entry::Occupied(made) => made.into_mut(),
            std::collections::btree_map::Entry::Vacant(slot) => {
                // SAFETY: a NUL-terminated name; the flag is valid.
                let memfd = unsafe { libc::memfd_create(c"stdfs-volatile".as_ptr(), libc::MFD_CLOEXEC) };
                if memfd < 0 {
                    return Err(last_errno());
                }
                slot.insert(Shared { memfd, len_bytes: 0 })
            }
        };
        if end_bytes > shared.len_bytes {
            grow_shared(shared, end_bytes, fill)?;
        }
        let flags = libc::MAP_SHARED | fixed_flags;
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let offset = i64::try_from(record.offset_bytes).map_err(|_| Errno::EINVAL)?;
        // SAFETY: the layer's own memfd, as long as the map reaches.
        let at = unsafe { real::mmap64(hint as *mut c_void, record.len_bytes, rw, flags, shared.memfd, offset) };
        if at == libc::MAP_FAILED {
            return Err(last_errno());
        }
        let at = at as usize;
        settle(at, &record, file_len_bytes);
        forget_locked(r, at, record.len_bytes);
        r.file_len_bytes.insert(record.file, file_len_bytes);
        r.maps.insert(at, record);
        Ok(at)
    })
}

fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

/// Grow a volatile file's memfd to `end_bytes`, its new part the file's
/// bytes (`fill(from, bytes)`; zeros past the file's end).
fn grow_shared(
    shared: &mut Shared,
    end_bytes: u64,
    fill: impl FnOnce(u64, &mut [u8]) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let from = shared.len_bytes;
    let mut bytes = vec![0u8; usize::try_from(end_bytes - from).map_err(|_| Errno(libc::ENOMEM))?];
    fill(from, &mut bytes)?;
    let end = i64::try_from(end_bytes).map_err(|_| Errno::EINVAL)?;
    // SAFETY: the layer's own memfd.
    if unsafe { real::ftruncate64(shared.memfd, end) } != 0 {
        return Err(last_errno());
    }
    write_shared(shared.memfd, from, &bytes);
    shared.len_bytes = end_bytes;
    Ok(())
}

/// `bytes` at `at` of a memfd (which holds them: a memfd write fails only
/// for want of memory, which ends the run loudly).
fn write_shared(memfd: i32, at: u64, bytes: &[u8]) {
    let mut done = 0;
    while done < bytes.len() {
        let rest = &bytes[done..];
        // SAFETY: the layer's own memfd; `rest` is readable.
        let n = unsafe { real::pwrite64(memfd, rest.as_ptr().cast(), rest.len(), (at + done as u64) as i64) };
        assert!(n > 0, "writing the layer's memfd failed: {}", std::io::Error::last_os_error());
        done += n as usize;
    }
}

/// A volatile file's memfd after `change`, as [`update`] does a map's.
fn update_shared(shared: &Shared, change: &Change<'_>, len_before: u64, len_after: u64) {
    if let Change::Bytes { at, bytes, .. } = change {
        let to = (*at + bytes.len() as u64).min(shared.len_bytes).min(len_after);
        if *at < to {
            write_shared(shared.memfd, *at, &bytes[..(to - at) as usize]);
        }
    }
    if len_after < len_before {
        let to = len_before.min(shared.len_bytes);
        if len_after < to {
            write_shared(shared.memfd, len_after, &vec![0u8; (to - len_after) as usize]);
        }
    }
}
