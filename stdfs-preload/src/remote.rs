//! The layer's disk in a preloaded program: [`RemoteVfs`], whose every
//! call is one request to `sim live` over a Unix socket
//! (`simlive::protocol`), answered by the seed's simulated disk there.
//!
//! One connection per process, opened at load (`crate::init`) and again
//! by a forked child at its first call (the parent's socket is the
//! parent's: two processes writing frames into one stream would interleave
//! them). The socket's reads and writes are `send`/`recv`, which the layer
//! does not define, so a request never re-enters the layer. A process is
//! single-threaded as far as the layer serves it (calls on a simulated
//! descriptor from another thread are refused by the layer itself), and
//! the one mutex below only guards the connection's bytes.

use std::ffi::{CString, OsString};
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use simlive::protocol::{self, Answer, Request, Value};
use vfs::{LockGuard, LockMode, Mapping, OpenMode, Vfs, VfsFile};

struct Conn {
    socket: Option<PathBuf>,
    program: Vec<u8>,
    /// The connected socket, -1 while none (before `hello`, after a fork).
    fd: i32,
    /// The pids `sim live` answered this process's hello with (its own,
    /// its parent's); `None` until it has connected.
    sim_pids: Option<(u32, u32)>,
}

static CONN: Mutex<Conn> = Mutex::new(Conn { socket: None, program: Vec::new(), fd: -1, sim_pids: None });

fn conn() -> std::sync::MutexGuard<'static, Conn> {
    CONN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where `sim live` listens, and what this process runs (for its messages).
pub fn configure(socket: &Path, program: Vec<u8>) {
    let mut c = conn();
    c.socket = Some(socket.to_path_buf());
    c.program = program;
}

/// Connect and greet: the seed of this process's randomness and clock.
pub fn hello() -> io::Result<u64> {
    let mut c = conn();
    connect(&mut c)
}

/// In a forked child: the parent's connection is not this process's.
pub fn forget_connection_after_fork() {
    let mut c = conn();
    if c.fd >= 0 {
        // SAFETY: closes this process's copy of the socket only.
        unsafe { libc::close(c.fd) };
        c.fd = -1;
    }
    c.sim_pids = None;
}

/// glibc's `fork`.
/// glibc's `getpid` or `getppid` (this object defines both), as a `u32`.
pub fn real_pid(name: &std::ffi::CStr) -> u32 {
    // SAFETY: a symbol glibc defines, of type `pid_t (void)`.
    let pid = unsafe {
        let at = libc::dlsym(libc::RTLD_NEXT, name.as_ptr());
        assert!(!at.is_null(), "glibc has {name:?}");
        let f: extern "C" fn() -> libc::pid_t = std::mem::transmute(at);
        f()
    };
    u32::try_from(pid).expect("a process's pid is positive")
}

/// This process's simulated pid and its parent's, connecting first if
/// it has not (a forked child before its first call); `None` if `sim
/// live` cannot be reached.
pub fn sim_pids() -> Option<(u32, u32)> {
    let mut c = conn();
    if c.fd < 0 {
        connect(&mut c).ok()?;
    }
    c.sim_pids
}

pub fn real_fork() -> libc::pid_t {
    // SAFETY: RTLD_NEXT and a NUL-terminated name; the symbol is glibc's
    // `fork`, whose signature is the one transmuted to.
    unsafe {
        let at = libc::dlsym(libc::RTLD_NEXT, c"fork".as_ptr());
        assert!(!at.is_null(), "glibc has fork");
        let f: extern "C" fn() -> libc::pid_t = std::mem::transmute(at);
        f()
    }
}

/// Tell `sim live` of a refusal; the run fails for it.
pub fn report_refusal(what: &str) {
    let _ = call(Request::Refused { what: what.as_bytes().to_vec() });
}

fn connect(c: &mut Conn) -> io::Result<u64> {
    let path = c.socket.clone().ok_or_else(|| io::Error::other("sim live's socket is not configured"))?;
    let fd = unix_connect(&path)?;
    c.fd = fd;
    // SAFETY: no preconditions.
    let (pid, ppid) = (real_pid(c"getpid"), real_pid(c"getppid"));
    match exchange(fd, &Request::Hello { pid, ppid, program: c.program.clone() })? {
        Ok(Value::Hello { entropy_seed, pid, ppid, .. }) => {
            c.sim_pids = Some((pid, ppid));
            Ok(entropy_seed)
        }
        other => Err(io::Error::other(format!("sim live answered hello with {other:?}"))),
    }
}

fn unix_connect(path: &Path) -> io::Result<i32> {
    let name = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("a NUL in the socket path"))?;
    // SAFETY: plain socket calls on a fresh descriptor and a zeroed,
    // then filled, `sockaddr_un`.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut addr: libc::sockaddr_un = std::mem::zeroed();
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = name.as_bytes_with_nul();
        if bytes.len() > addr.sun_path.len() {
            libc::close(fd);
            return Err(io::Error::other("the socket path is too long"));
        }
        for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        if libc::connect(fd, (&raw const addr).cast(), len) != 0 {
            let e = io::Error::last_os_error();
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// The socket as a byte stream, through `send`/`recv`.
struct Socket(i32);

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::recv(self.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is readable for its length.
            let n = unsafe { libc::send(self.0, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn exchange(fd: i32, request: &Request) -> io::Result<Answer> {
    let mut socket = Socket(fd);
    protocol::write_frame(&mut socket, &request.encode())?;
    let body = protocol::read_frame(&mut socket)?.ok_or_else(|| io::Error::other("sim live closed the connection"))?;
    protocol::decode_answer(&body).map_err(|e| io::Error::other(e.to_string()))
}

/// One call of the disk: its value, or its error with the disk's errno.
fn call(request: Request) -> io::Result<Value> {
    let mut c = conn();
    if c.fd < 0 {
        connect(&mut c)?;
    }
    match exchange(c.fd, &request)? {
        Ok(value) => Ok(value),
        Err((errno, _message)) => Err(io::Error::from_raw_os_error(errno)),
    }
}

fn path_bytes(path: &Path) -> Vec<u8> {
    path.as_os_str().as_bytes().to_vec()
}

fn unexpected(value: Value) -> io::Error {
    io::Error::other(format!("sim live answered with {value:?}"))
}

/// The seed's simulated disk, held by `sim live`.
pub struct RemoteVfs;

impl Vfs for RemoteVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let mode = protocol::MODES.iter().position(|m| *m == mode).expect("every mode has a number") as u8;
        match call(Request::Open { path: path_bytes(path), mode })? {
            Value::Handle(handle) => Ok(Box::new(RemoteFile { handle })),
            other => Err(unexpected(other)),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        call(Request::Rename { from: path_bytes(from), to: path_bytes(to) }).map(drop)
    }

    fn unlink(&self, path: &Path) -> io::Result<()> {
        call(Request::Unlink { path: path_bytes(path) }).map(drop)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        match call(Request::ListDir { dir: path_bytes(dir) })? {
            Value::Names(names) => Ok(names.into_iter().map(OsString::from_vec).collect()),
            other => Err(unexpected(other)),
        }
    }

    fn list_subdirs(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        match call(Request::ListSubdirs { dir: path_bytes(dir) })? {
            Value::Names(names) => Ok(names.into_iter().map(OsString::from_vec).collect()),
            other => Err(unexpected(other)),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        call(Request::CreateDirAll { dir: path_bytes(dir) }).map(drop)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        call(Request::SyncDir { dir: path_bytes(dir) }).map(drop)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        call(Request::RemoveDir { dir: path_bytes(dir) }).map(drop)
    }

    fn map_readonly(&self, path: &Path) -> io::Result<Mapping> {
        let file = self.open(path, OpenMode::Read)?;
        let len = file.len()?;
        let mut bytes = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
        let got = file.read_at(0, &mut bytes)?;
        bytes.truncate(got);
        Ok(Mapping::from_vec(bytes))
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        match call(Request::Exists { path: path_bytes(path) })? {
            Value::Bool(b) => Ok(b),
            other => Err(unexpected(other)),
        }
    }

    fn lock(&self, _dir: &Path, _mode: LockMode) -> io::Result<LockGuard> {
        // The layer keeps `flock`s itself and never asks the disk to lock.
        Err(io::Error::new(io::ErrorKind::Unsupported, "sim live's disk takes no directory locks"))
    }
}

/// An open file of the remote disk, by the handle `sim live` gave it.
struct RemoteFile {
    handle: u64,
}

impl VfsFile for RemoteFile {
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<usize> {
        let len = u32::try_from(buf.len().min(protocol::MAX_FRAME_BYTES as usize / 2)).expect("clamped");
        match call(Request::ReadAt { handle: self.handle, offset: offset_bytes, len })? {
            Value::Bytes(bytes) if bytes.len() <= buf.len() => {
                buf[..bytes.len()].copy_from_slice(&bytes);
                Ok(bytes.len())
            }
            other => Err(unexpected(other)),
        }
    }

    fn write_at(&mut self, offset_bytes: u64, data: &[u8]) -> io::Result<()> {
        call(Request::WriteAt { handle: self.handle, offset: offset_bytes, data: data.to_vec() }).map(drop)
    }

    fn set_len(&mut self, len_bytes: u64) -> io::Result<()> {
        call(Request::SetLen { handle: self.handle, len: len_bytes }).map(drop)
    }

    fn len(&self) -> io::Result<u64> {
        match call(Request::Len { handle: self.handle })? {
            Value::U64(len) => Ok(len),
            other => Err(unexpected(other)),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        call(Request::Sync { handle: self.handle }).map(drop)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        call(Request::SyncData { handle: self.handle }).map(drop)
    }
}

impl Drop for RemoteFile {
    fn drop(&mut self) {
        let _ = call(Request::Close { handle: self.handle });
    }
}
