//! One live run: the program started with the layer preloaded
//! (`stdfs-preload`) on a fresh simulated disk of the seed, the seed's
//! faults injected as it runs, its power cut at an I/O index (or after it
//! exits), and the disk the crash left written out for the checker, which
//! runs the program's own recovery there and judges it (as `sim trace`'s
//! checkers do, `$1` the directory and `$2` what was printed).
//!
//! Deterministic where the program is: every disk call of every process
//! is answered by one disk in this process, in the order the processes
//! make them (a workload whose processes run one after another, as a
//! shell script's do, makes them in one order); each process's time and
//! randomness come from the seed (`crate::serve::entropy_seed`).

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use simulator::check_server::ServerPool;
use simulator::disk::{ArmedFault, CrashMode, CrashPoint, DiskConfig, FsProfile, SimVfs};
use simulator::trace::{Event, FaultKind, Trace};
use vfs::Vfs;

use crate::check::{check_state, Checked};
use crate::faults::FaultSpec;
use crate::serve::{entropy_seed, Server};

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The directory the program is told, absolute: its files there are
    /// the simulated disk's.
    pub root: PathBuf,
    pub seed: u64,
    pub fs: FsProfile,
    pub crash_mode: CrashMode,
    pub faults: FaultSpec,
    /// Cut the power when the disk reaches this I/O index (0-based: the
    /// call with this index is not made); `None`: after the program exits.
    pub crash_at: Option<u64>,
    pub command: Vec<String>,
    pub check: Option<String>,
    /// `--check-server`: `check` is a server that judges many states, kept
    /// up across the runs of a sweep (`crate::check`).
    pub servers: Option<Arc<ServerPool>>,
    /// `libstdfs_preload.so`.
    pub preload: PathBuf,
    /// Pass the program's stdout through to ours as it prints.
    pub echo: bool,
    pub scratch: PathBuf,
    pub timeout: Duration,
    pub sector_bytes: u64,
    /// Print each disk call with its I/O index (`--show-ios`).
    pub show_ios: bool,
}

/// What one run did and what its checker said.
#[derive(Debug)]
pub struct RunOutcome {
    /// Disk calls made (the crash's index when crashed).
    pub io_count: u64,
    pub crashed: bool,
    /// How the program ended: `exit N`, `killed by signal N`, or
    /// `killed at the crash`.
    pub ended: String,
    pub printed: Vec<u8>,
    pub refusals: Vec<String>,
    pub processes: usize,
    /// Faults the disk injected, by kind.
    pub faults: Vec<(String, u64)>,
    /// The trace hash of the disk's calls (same seed, same hash).
    pub trace_hash: u64,
    /// Each fault the disk injected that an armed one can give again
    /// (`crate::shrink`): its I/O index and kind.
    pub injected: Vec<(u64, ArmedFault)>,
    /// Files the crash left (path, bytes).
    pub files: Vec<(String, usize)>,
    /// The checker's verdict.
    pub check: Option<Checked>,
    pub seconds: f64,
}

impl RunOutcome {
    /// Whether the run fails: a refusal, or the checker said no.
    pub fn failed(&self) -> bool {
        !self.refusals.is_empty() || self.check.as_ref().is_some_and(|checked| !checked.passed)
    }
}

fn disk(options: &RunOptions) -> Arc<SimVfs> {
    let mut config = DiskConfig::fault_free(options.crash_mode, options.sector_bytes);
    config.fs = options.fs;
    options.faults.apply(&mut config);
    config.assert_valid();
    // Every event kept: the injected faults' indices, for shrinking (the
    // hash is the same either way).
    let vfs = Arc::new(SimVfs::new(config, Trace::new(true)));
    // The directory the program is told is the disk's root: made before
    // the run (I/O index 0), durable as every directory the disk makes.
    vfs.create_dir_all(Path::new("/")).expect("a fresh disk makes its root");
    for (index, kind) in &options.faults.armed {
        vfs.arm_fault_at(*index, *kind);
    }
    // The program's failed directory fsync is its file system's: on ext4,
    // XFS and btrfs every later fsync then fails (FILESYSTEMS.md).
    vfs.set_armed_fault_shuts_down(true);
    let crash = options.crash_at.map(CrashPoint::AtIo);
    vfs.begin_op_armed(entropy_seed(options.seed, u64::MAX - 1), crash, |_| {});
    vfs
}

/// Run the program once under `options` and check what the crash left.
pub fn run(options: &RunOptions) -> Result<RunOutcome, String> {
    let started = Instant::now();
    let vfs = disk(options);
    let sockets = tempfile::Builder::new().prefix("sim-live-").tempdir().map_err(|e| format!("a socket dir: {e}"))?;
    let server = Server::start(&sockets.path().join("disk.sock"), vfs.clone(), options.seed, options.show_ios)
        .map_err(|e| format!("listening for the program: {e}"))?;
    let (ended, printed) = run_program(options, &server, &sockets.path().join("disk.sock"))?;
    let (crashed, refusals, processes) = {
        let state = server.shared.lock();
        (state.crashed, state.refusals.clone(), state.processes.len())
    };
    let io_count = vfs.io_count();
    drop(server);
    vfs.power_loss(entropy_seed(options.seed, u64::MAX));
    let image = vfs.snapshot().durable_image();
    let faults = vfs.fault_counts().into_iter().map(|(kind, n)| (format!("{kind:?}"), n)).collect();
    let trace_hash = vfs.with_trace(|t| t.hash());
    let injected = vfs.with_trace(|t| t.all().iter().filter_map(armable).collect());
    let files = image.files().into_iter().map(|(p, b)| (p.display().to_string(), b.len())).collect();
    let check = match &options.check {
        Some(check) => Some(check_state(options, &image, &printed, check)?),
        None => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    Ok(RunOutcome {
        io_count,
        crashed,
        ended,
        printed,
        refusals,
        processes,
        faults,
        trace_hash,
        injected,
        files,
        check,
        seconds,
    })
}

/// A fault the trace shows injected, as the armed fault that gives it
/// again (the crash's own torn sectors and the like are not faults to arm).
fn armable(event: &Event) -> Option<(u64, ArmedFault)> {
    let Event::Fault { index, kind } = event else { return None };
    let armed = match kind {
        FaultKind::WriteEio | FaultKind::FsyncEio | FaultKind::MetaEio | FaultKind::ReadEio => ArmedFault::Eio,
        FaultKind::ShortWrite => ArmedFault::ShortWrite,
        FaultKind::NoSpace => ArmedFault::NoSpace,
        _ => return None,
    };
    Some((*index, armed))
}

fn preload_value(preload: &Path) -> String {
    match std::env::var("LD_PRELOAD") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", preload.display()),
        _ => preload.display().to_string(),
    }
}

/// Start the program, wait for it to exit or reach the crash, kill its
/// process group, and return how it ended and everything it printed.
fn run_program(options: &RunOptions, server: &Server, socket: &Path) -> Result<(String, Vec<u8>), String> {
    let (program, args) = options.command.split_first().ok_or("no command to run")?;
    let mut child = Command::new(program)
        .args(args)
        .env("LD_PRELOAD", preload_value(&options.preload))
        .env("SIM_LIVE_ROOT", &options.root)
        .env("SIM_LIVE_SOCKET", socket)
        .env("SIM_LIVE_SEED", options.seed.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {program}: {e}"))?;
    let pid = child.id() as libc::pid_t;
    let printed = Arc::new(Mutex::new(Vec::new()));
    let reader = {
        let (mut out, printed, echo) = (child.stdout.take().expect("piped"), printed.clone(), options.echo);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = out.read(&mut chunk) {
                printed.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&chunk[..n]);
                if echo {
                    let _ = std::io::stdout().write_all(&chunk[..n]);
                    let _ = std::io::stdout().flush();
                }
            }
        })
    };
    let shared = server.shared.clone();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        shared.note_exited();
        status
    });
    let crashed = {
        let deadline = Instant::now() + options.timeout;
        wait_or_time_out(server, deadline)
    };
    // SAFETY: a signal to the process group the program leads (it was
    // started in a group of its own); stragglers die with it.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let status = waiter.join().map_err(|_| "the waiter panicked")?.map_err(|e| format!("waiting: {e}"))?;
    let _ = reader.join();
    let ended = match (crashed, status.code()) {
        (Some(true), _) => "killed at the crash".to_string(),
        (None, _) => format!("timed out after {} s (killed)", options.timeout.as_secs_f64()),
        (Some(false), Some(code)) => format!("exit {code}"),
        (Some(false), None) => format!("killed by a signal ({status})"),
    };
    let printed = std::mem::take(&mut *printed.lock().unwrap_or_else(|p| p.into_inner()));
    Ok((ended, printed))
}

/// `Some(crashed)` once the crash point is reached or the program exits;
/// `None` past `deadline`.
fn wait_or_time_out(server: &Server, deadline: Instant) -> Option<bool> {
    loop {
        {
            let state = server.shared.lock();
            if state.crashed || state.exited {
                return Some(state.crashed);
            }
        }
        if Instant::now() > deadline {
            return None;
        }
        server.shared.wait_for(Duration::from_millis(50));
    }
}

/// The armed faults' kinds, by name (`--fault-at IO:KIND`).
pub fn parse_armed(spec: &str) -> Result<(u64, ArmedFault), String> {
    let (index, kind) = spec.split_once(':').ok_or_else(|| format!("{spec:?}: expected IO:KIND, as 12:eio"))?;
    let index = index.parse().map_err(|_| format!("{index:?}: an I/O index"))?;
    Ok((index, ArmedFault::parse(kind)?))
}
