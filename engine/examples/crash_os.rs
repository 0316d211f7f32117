//! `crash_os`: the engine on the real file system, killed for real.
//!
//! The parent runs the engine in a child process (this same binary with
//! `--child`) that executes a deterministic command stream with fsync
//! `always`, evicting and rewriting as it goes, and prints `ack N` after
//! each acknowledged command. At a moment drawn from the seed the parent
//! SIGKILLs it, reopens the store itself, and checks that every
//! acknowledged command survived (the one in flight may or may not have),
//! that `audit()` is clean, and that nothing else changed. Then it starts
//! the next child from where the recovered state ends.
//!
//! ```text
//! cargo run --release -p engine --example crash_os -- --cycles 200 --seed 1
//! ```
//!
//! Kill moments are seeded, but what the child has done by then depends on
//! the machine: unlike the simulator this test is not reproducible bit for
//! bit. It exists to show the engine's fsync discipline holds on a real
//! kernel and file system, not just on the simulated disk.

mod cli;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, ExitCode, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::clock::{ManualClock, SystemClock};
use engine::store::{Command, FsyncPolicy, Options, Store};
use engine::vfs::OsVfs;
use testkit::model::Model;

const USAGE: &str = "usage: crash_os [--cycles N] [--seed S] [--max-kill-ms MS] [--dir PATH] [--plant-early-ack]

  --plant-early-ack  plant a bug: the child acknowledges each command before
                     executing it (proves the check can fail)";

/// The command with sequence number `n`: a windowed table whose rows slide
/// out of window, plus plain strings and deletes. No TTLs (the child's
/// clock is the wall clock; the parent's model has none).
fn op(n: u64) -> Command {
    let words: Vec<String> = match n {
        0 => vec!["WINDOW".into(), "t".into(), "ts".into(), "30".into()],
        _ if n % 10 == 3 => vec!["SET".into(), format!("k{}", n % 50), format!("v{n}")],
        _ if n % 10 == 7 => vec!["DEL".into(), format!("k{}", (n * 7) % 50), format!("t:{}", (n * 13) % 200)],
        _ => {
            vec!["HSET".into(), format!("t:{}", n % 200), "ts".into(), (n / 3).to_string(), "v".into(), format!("{n}")]
        }
    };
    let args: Vec<Vec<u8>> = words.into_iter().map(String::into_bytes).collect();
    Command::parse(&args).expect("crash_os generates valid commands")
}

fn open(dir: &Path) -> Result<Store, String> {
    Store::open(
        Arc::new(OsVfs),
        Arc::new(SystemClock),
        dir,
        Options { fsync: FsyncPolicy::Always, ..Options::default() },
    )
    .map(|(store, _)| store)
    .map_err(|e| format!("open {}: {e}", dir.display()))
}

/// The child: run commands from `start` until killed. With `early_ack`
/// (the planted bug) it acknowledges a command before executing it.
fn child(dir: &Path, start: u64, early_ack: bool) -> ExitCode {
    let mut store = match open(dir) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("crash_os child: {e}");
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    for n in start.. {
        if early_ack && writeln!(stdout, "ack {n}").and_then(|()| stdout.flush()).is_err() {
            return ExitCode::from(1);
        }
        if let Err(e) = store.execute(&op(n)) {
            eprintln!("crash_os child: command {n} failed: {e}");
            return ExitCode::from(1);
        }
        if !early_ack && writeln!(stdout, "ack {n}").and_then(|()| stdout.flush()).is_err() {
            return ExitCode::from(1);
        }
        let admin = if n % 40 == 39 {
            store.evict().map(|_| ())
        } else if n % 150 == 149 {
            store.rewrite()
        } else {
            Ok(())
        };
        if let Err(e) = admin {
            eprintln!("crash_os child: admin after {n} failed: {e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

/// splitmix64: the kill schedule's only randomness.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Args {
    cycles: u64,
    seed: u64,
    max_kill_ms: u64,
    dir: Option<PathBuf>,
    child_start: Option<u64>,
    early_ack: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { cycles: 200, seed: 1, max_kill_ms: 60, dir: None, child_start: None, early_ack: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let number = |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name}: {v:?} is not a number"));
        match flag.as_str() {
            "--cycles" => args.cycles = number("--cycles", value("--cycles")?)?,
            "--seed" => args.seed = number("--seed", value("--seed")?)?,
            "--max-kill-ms" => args.max_kill_ms = number("--max-kill-ms", value("--max-kill-ms")?)?.max(1),
            "--dir" => args.dir = Some(PathBuf::from(value("--dir")?)),
            "--child" => args.child_start = Some(number("--child", value("--child")?)?),
            "--plant-early-ack" => args.early_ack = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// Start a child at `start` and a thread forwarding its acks.
fn spawn(dir: &Path, start: u64, early_ack: bool) -> Result<(Child, mpsc::Receiver<u64>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut process = Process::new(exe);
    if early_ack {
        process.arg("--plant-early-ack");
    }
    let mut child = process
        .arg("--child")
        .arg(start.to_string())
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn child: {e}"))?;
    let stdout = child.stdout.take().expect("piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(n) = line.strip_prefix("ack ").and_then(|n| n.parse().ok()) {
                if sender.send(n).is_err() {
                    break;
                }
            }
        }
    });
    Ok((child, receiver))
}

/// Reopen after a kill and check: the state must be the model after every
/// acknowledged command, or after one more (the one in flight). Returns
/// the number of commands the state holds.
fn verify(dir: &Path, model: &mut Model, next: u64, acked_through: Option<u64>) -> Result<u64, String> {
    let store = open(dir)?;
    let violations = store.audit();
    if !violations.is_empty() {
        return Err(format!("audit after reopen: {violations:?}"));
    }
    let dump = store.logical_dump().map_err(|e| format!("logical_dump: {e}"))?;
    let clock = ManualClock::new(0);
    let now_ms = engine::clock::Clock::now_ms(&clock);
    let acked_end = acked_through.map_or(next, |n| n + 1);
    for n in next..acked_end {
        model.execute(&op(n), now_ms).map_err(|e| format!("model refused command {n}: {e}"))?;
    }
    if model.same_as(&dump, now_ms) {
        store.close().map_err(|e| format!("close: {e}"))?;
        return Ok(acked_end);
    }
    let mut with_in_flight = model.clone();
    with_in_flight.execute(&op(acked_end), now_ms).map_err(|e| format!("model: {e}"))?;
    if with_in_flight.same_as(&dump, now_ms) {
        *model = with_in_flight;
        store.close().map_err(|e| format!("close: {e}"))?;
        return Ok(acked_end + 1);
    }
    Err(format!(
        "recovered state is neither the {acked_end} acknowledged commands nor those plus the one in flight \
         ({} keys recovered, {} expected)",
        dump.len(),
        model.dump(now_ms).len()
    ))
}

fn parent(args: &Args) -> Result<String, String> {
    let made_dir;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => {
            made_dir = std::env::temp_dir().join(format!("segsim-crash-os-{}-{}", std::process::id(), args.seed));
            made_dir.clone()
        }
    };
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let started = Instant::now();
    let mut random = args.seed;
    let mut model = Model::new();
    let mut next = 0u64;
    let mut in_flight_survived = 0u64;
    for cycle in 0..args.cycles {
        let (mut child, acks) = spawn(&dir, next, args.early_ack)?;
        let kill_after = Duration::from_micros(next_random(&mut random) % (args.max_kill_ms * 1000) + 200);
        std::thread::sleep(kill_after);
        let _ = child.kill();
        let status = child.wait().map_err(|e| format!("wait: {e}"))?;
        if status.success() {
            return Err(format!("cycle {cycle}: the child exited before it was killed"));
        }
        // The forwarding thread ends when the pipe closes: drain it.
        let acked_through = acks.iter().last();
        let recovered = verify(&dir, &mut model, next, acked_through)
            .map_err(|e| format!("cycle {cycle} (killed after {kill_after:?}, start {next}): {e}"))?;
        if recovered > acked_through.map_or(next, |n| n + 1) {
            in_flight_survived += 1;
        }
        if cycle % 25 == 24 {
            eprintln!("crash_os: {} cycles, {recovered} commands acknowledged and recovered", cycle + 1);
        }
        next = recovered;
    }
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(format!(
        "crash_os: {} kill/restart cycles, {next} commands acknowledged, 0 lost, {in_flight_survived} in-flight \
         commands survived their kill, audit clean every cycle, {:.1} s",
        args.cycles,
        started.elapsed().as_secs_f64()
    ))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(why) => return cli::usage_error("crash_os", USAGE, &why),
    };
    if let Some(start) = args.child_start {
        let Some(dir) = &args.dir else {
            eprintln!("crash_os: --child needs --dir");
            return ExitCode::from(2);
        };
        return child(dir, start, args.early_ack);
    }
    match parent(&args) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("crash_os: FAILED: {failure}");
            ExitCode::from(1)
        }
    }
}
