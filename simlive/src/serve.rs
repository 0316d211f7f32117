//! The seed's simulated disk served to every process of a live run: a
//! Unix socket that each preloaded process connects to (`stdfs-preload`),
//! one thread per connection answering its requests
//! (`crate::protocol`) on the one [`SimVfs`] all of them share, as every
//! process of a machine shares its page cache.
//!
//! The crash: when the disk's armed crash point is reached (an I/O index,
//! `SimVfs::arm_crash`), the request that reached it is not answered, nor
//! is any later one of any process: the connection is parked (kept open, so
//! no process sees an error it could act on, print after, or report) and
//! the run is told ([`Shared::wait_for`]), which kills the process group before
//! anything else happens. What was printed before is what the program had
//! acknowledged.

use std::collections::BTreeMap;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use simulator::disk::SimVfs;
use vfs::{Vfs, VfsFile};

use crate::protocol::{self, Answer, Request, Value, MODES};

/// What the connections and the run share.
pub struct Shared {
    pub vfs: Arc<SimVfs>,
    seed: u64,
    /// Print each disk call with its I/O index on stderr (`--show-ios`).
    show_ios: bool,
    next_ordinal: AtomicU64,
    stop: AtomicBool,
    state: Mutex<RunState>,
    changed: Condvar,
}

/// The run as the server sees it.
#[derive(Default)]
pub struct RunState {
    /// The crash point was reached.
    pub crashed: bool,
    /// The program's direct child ended (set by the run's waiter).
    pub exited: bool,
    /// What the layer refused in any process, and protocol errors.
    pub refusals: Vec<String>,
    /// Processes that connected: (ordinal, pid, program).
    pub processes: Vec<(u64, u32, String)>,
    /// Connections held open, unanswered, since the crash.
    parked: Vec<UnixStream>,
    /// Each process's simulated pid, by its real one.
    sim_pid_of: BTreeMap<u32, u32>,
}

/// The simulated pid of process number 0; process N's is this plus N.
pub const FIRST_SIM_PID: u32 = 1_000;
/// The simulated parent of a process whose parent is not the program's
/// (the first one's: `sim live` itself).
pub const OUTSIDE_SIM_PID: u32 = 1;

impl RunState {
    /// The pids process number `ordinal` (real pid `pid`, its parent's
    /// `ppid`) is told, from the order the processes connect: a process
    /// that `exec`s connects again and keeps its pid, as in the kernel.
    fn sim_pids(&mut self, pid: u32, ppid: u32, ordinal: u64) -> (u32, u32) {
        let fresh = FIRST_SIM_PID + u32::try_from(ordinal).expect("a run starts fewer than 2^32 processes");
        let sim_pid = *self.sim_pid_of.entry(pid).or_insert(fresh);
        let sim_ppid = self.sim_pid_of.get(&ppid).copied().unwrap_or(OUTSIDE_SIM_PID);
        assert!(sim_pid >= FIRST_SIM_PID && sim_pid != sim_ppid);
        (sim_pid, sim_ppid)
    }
}

impl Shared {
    /// Block until the crash point is reached or the program exited, or
    /// `timeout` passed.
    pub fn wait_for(&self, timeout: std::time::Duration) {
        let state = self.lock();
        drop(self.changed.wait_timeout_while(state, timeout, |s| !s.crashed && !s.exited));
    }

    /// Record that the direct child ended.
    pub fn note_exited(&self) {
        self.lock().exited = true;
        self.changed.notify_all();
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A listening server; dropping it stops the accepting thread.
pub struct Server {
    pub shared: Arc<Shared>,
    path: PathBuf,
    acceptor: Option<JoinHandle<()>>,
}

impl Server {
    /// Listen at `path` (which must not exist) for the processes of one run.
    pub fn start(path: &Path, vfs: Arc<SimVfs>, seed: u64, show_ios: bool) -> std::io::Result<Server> {
        let listener = UnixListener::bind(path)?;
        let shared = Arc::new(Shared {
            vfs,
            seed,
            show_ios,
            next_ordinal: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            state: Mutex::new(RunState::default()),
            changed: Condvar::new(),
        });
        let for_thread = shared.clone();
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if for_thread.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = stream {
                    let shared = for_thread.clone();
                    std::thread::spawn(move || serve_connection(&shared, stream));
                }
            }
        });
        Ok(Server { shared, path: path.to_path_buf(), acceptor: Some(acceptor) })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.path); // wakes the accepting thread
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        self.shared.lock().parked.clear();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The seed a process's randomness and clock are drawn from.
pub fn entropy_seed(seed: u64, ordinal: u64) -> u64 {
    let mut x = seed ^ ordinal.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn serve_connection(shared: &Shared, mut stream: UnixStream) {
    let mut handles: BTreeMap<u64, Box<dyn VfsFile>> = BTreeMap::new();
    let mut next_handle = 1u64;
    loop {
        let body = match protocol::read_frame(&mut stream) {
            Ok(Some(body)) => body,
            Ok(None) | Err(_) => return, // the process ended
        };
        if shared.lock().crashed {
            return shared.lock().parked.push(stream);
        }
        let answer = match Request::decode(&body) {
            Ok(request) => {
                if shared.show_ios {
                    eprintln!("sim live: io {}: {}", shared.vfs.io_count(), request.summary());
                }
                let summary = request.summary();
                let answer = answer(shared, request, &mut handles, &mut next_handle);
                refuse_unsupported(shared, &summary, &answer);
                answer
            }
            Err(bad) => {
                shared.lock().refusals.push(format!("sim live: {bad}"));
                Err((libc::EIO, bad.to_string()))
            }
        };
        if shared.vfs.crash_point_reached() {
            let mut state = shared.lock();
            state.crashed = true;
            state.parked.push(stream);
            shared.changed.notify_all();
            return;
        }
        if protocol::write_frame(&mut stream, &protocol::encode_answer(&answer)).is_err() {
            return;
        }
    }
}

/// A call the simulated disk cannot model (`Unsupported`) is answered
/// `ENOTSUP`, as before, and refused: the run fails naming it, instead of
/// the program going on down a path a real file system would not have
/// sent it (redis-server gave up at start when its base AOF could not be
/// renamed into `appendonlydir/`, before the disk modelled renames across
/// directories, LIVE.md).
fn refuse_unsupported(shared: &Shared, summary: &str, answer: &Answer) {
    if let Err((libc::ENOTSUP, message)) = answer {
        shared.lock().refusals.push(format!("the simulated disk cannot serve {summary}: {message}"));
    }
}

fn errno_of(error: std::io::Error) -> (i32, String) {
    let code = error.raw_os_error().unwrap_or(match error.kind() {
        std::io::ErrorKind::NotFound => libc::ENOENT,
        std::io::ErrorKind::AlreadyExists => libc::EEXIST,
        std::io::ErrorKind::PermissionDenied => libc::EBADF,
        std::io::ErrorKind::StorageFull => libc::ENOSPC,
        std::io::ErrorKind::IsADirectory => libc::EISDIR,
        std::io::ErrorKind::NotADirectory => libc::ENOTDIR,
        std::io::ErrorKind::InvalidInput => libc::EINVAL,
        std::io::ErrorKind::WouldBlock => libc::EWOULDBLOCK,
        std::io::ErrorKind::Unsupported => libc::ENOTSUP,
        std::io::ErrorKind::DirectoryNotEmpty => libc::ENOTEMPTY,
        std::io::ErrorKind::ResourceBusy => libc::EBUSY,
        _ => libc::EIO,
    });
    (code, error.to_string())
}

fn path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

fn answer(
    shared: &Shared,
    request: Request,
    handles: &mut BTreeMap<u64, Box<dyn VfsFile>>,
    next_handle: &mut u64,
) -> Answer {
    let vfs = &*shared.vfs;
    let unit = |r: std::io::Result<()>| r.map(|()| Value::Unit).map_err(errno_of);
    match request {
        Request::Hello { pid, ppid, program } => {
            let ordinal = shared.next_ordinal.fetch_add(1, Ordering::SeqCst);
            let mut state = shared.lock();
            state.processes.push((ordinal, pid, String::from_utf8_lossy(&program).into_owned()));
            let (sim_pid, sim_ppid) = state.sim_pids(pid, ppid, ordinal);
            Ok(Value::Hello { ordinal, entropy_seed: entropy_seed(shared.seed, ordinal), pid: sim_pid, ppid: sim_ppid })
        }
        Request::Open { path: p, mode } => {
            let mode = *MODES.get(usize::from(mode)).ok_or((libc::EINVAL, format!("open mode {mode}")))?;
            let file = vfs.open(&path(&p), mode).map_err(errno_of)?;
            let handle = *next_handle;
            *next_handle += 1;
            handles.insert(handle, file);
            Ok(Value::Handle(handle))
        }
        Request::Rename { from, to } => unit(vfs.rename(&path(&from), &path(&to))),
        Request::Unlink { path: p } => unit(vfs.unlink(&path(&p))),
        Request::ListDir { dir } => vfs
            .list_dir(&path(&dir))
            .map(|names| Value::Names(names.into_iter().map(|n| n.into_encoded_bytes()).collect()))
            .map_err(errno_of),
        Request::ListSubdirs { dir } => vfs
            .list_subdirs(&path(&dir))
            .map(|names| Value::Names(names.into_iter().map(|n| n.into_encoded_bytes()).collect()))
            .map_err(errno_of),
        Request::CreateDirAll { dir } => unit(vfs.create_dir_all(&path(&dir))),
        Request::SyncDir { dir } => unit(vfs.sync_dir(&path(&dir))),
        Request::RemoveDir { dir } => unit(vfs.remove_dir(&path(&dir))),
        Request::Exists { path: p } => vfs.exists(&path(&p)).map(Value::Bool).map_err(errno_of),
        Request::Refused { what } => {
            shared.lock().refusals.push(String::from_utf8_lossy(&what).into_owned());
            Ok(Value::Unit)
        }
        Request::Close { handle } => {
            handles.remove(&handle);
            Ok(Value::Unit)
        }
        file_call => answer_file(file_call, handles),
    }
}

fn answer_file(request: Request, handles: &mut BTreeMap<u64, Box<dyn VfsFile>>) -> Answer {
    let handle = match &request {
        Request::ReadAt { handle, .. }
        | Request::WriteAt { handle, .. }
        | Request::SetLen { handle, .. }
        | Request::Len { handle }
        | Request::Sync { handle }
        | Request::SyncData { handle } => *handle,
        other => unreachable!("not a file call: {other:?}"),
    };
    let file = handles.get_mut(&handle).ok_or((libc::EBADF, format!("handle {handle} is not open")))?;
    let unit = |r: std::io::Result<()>| r.map(|()| Value::Unit).map_err(errno_of);
    match request {
        Request::ReadAt { offset, len, .. } => {
            let mut buf = vec![0u8; len as usize];
            let got = file.read_at(offset, &mut buf).map_err(errno_of)?;
            buf.truncate(got);
            Ok(Value::Bytes(buf))
        }
        Request::WriteAt { offset, data, .. } => unit(file.write_at(offset, &data)),
        Request::SetLen { len, .. } => unit(file.set_len(len)),
        Request::Len { .. } => file.len().map(Value::U64).map_err(errno_of),
        Request::Sync { .. } => unit(file.sync()),
        Request::SyncData { .. } => unit(file.sync_data()),
        _ => unreachable!("matched above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_pids_follow_the_connection_order_and_survive_exec() {
        let mut state = RunState::default();
        assert_eq!(
            state.sim_pids(500, 400, 0),
            (FIRST_SIM_PID, OUTSIDE_SIM_PID),
            "the first process's parent is outside"
        );
        assert_eq!(state.sim_pids(501, 500, 1), (FIRST_SIM_PID + 1, FIRST_SIM_PID), "a child of the first");
        assert_eq!(state.sim_pids(501, 500, 2), (FIRST_SIM_PID + 1, FIRST_SIM_PID), "an exec keeps its pid");
        assert_eq!(state.sim_pids(502, 501, 3), (FIRST_SIM_PID + 3, FIRST_SIM_PID + 1), "a grandchild");
    }
}
