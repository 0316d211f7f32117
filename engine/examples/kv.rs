//! `kv`: a tiny shell over the engine on the real file system, so a person
//! can try it and watch a restart recover.
//!
//! ```text
//! cargo run -p engine --example kv -- --dir /tmp/kvdemo [--fsync always|everysec|no] [--read-only | --point-in-time]
//! ```
//!
//! A damaged store (bit rot in the log, a missing log, junk before its
//! header) is refused by default, and nothing on disk changes; kv says so
//! and exits 1. `--point-in-time` opens it anyway as of the last frame
//! before the damage: everything after moves to a quarantine file, no
//! segment is removed in that open, and kv prints what was cut.
//!
//! The store directory has one owner: while one `kv` (or any program) has
//! it open, another is refused with "store directory is in use by another
//! process" and exit status 1. `--read-only` opens it for inspection: it
//! shares the directory with other read-only openers (never a writer),
//! changes no byte of it even when damaged, and refuses every write.
//!
//! Reads one command per line from stdin (`SET k v`, `HSET k f v ...`,
//! `HGETALL k`, `WINDOW t ts 10`, ..., plus `EVICT`, `SYNC`, `REWRITE`,
//! `AUDIT`, `STATS`), prints one reply per line. Arguments are split on
//! whitespace; wrap an argument in double quotes to keep spaces in it.
//! The recovery report is printed first, as a `#` comment line.

mod cli;

use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use engine::clock::SystemClock;
use engine::store::{FsyncPolicy, Options, RecoveryReport, Reply, Store};
use engine::vfs::OsVfs;
use engine::Error;

const USAGE: &str = "usage: kv --dir PATH [--fsync always|everysec|no] [--read-only | --point-in-time]";

/// What the command line asks for.
struct Args {
    dir: PathBuf,
    fsync: FsyncPolicy,
    read_only: bool,
    point_in_time: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut dir = None;
    let mut fsync = FsyncPolicy::Always;
    let mut read_only = false;
    let mut point_in_time = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = Some(PathBuf::from(args.next().ok_or("--dir needs a path")?)),
            "--fsync" => {
                let name = args.next().ok_or("--fsync needs a policy")?;
                fsync = FsyncPolicy::parse(&name).ok_or(format!("unknown fsync policy {name:?}"))?;
            }
            "--read-only" => read_only = true,
            "--point-in-time" => point_in_time = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if read_only && point_in_time {
        return Err("--read-only and --point-in-time exclude each other (a read-only open never cuts)".to_string());
    }
    Ok(Args { dir: dir.ok_or("--dir is required")?, fsync, read_only, point_in_time })
}

fn open(args: &Args) -> engine::Result<(Store, RecoveryReport)> {
    let (vfs, clock) = (Arc::new(OsVfs), Arc::new(SystemClock));
    if args.read_only {
        Store::open_read_only(vfs, clock, &args.dir)
    } else {
        Store::open(vfs, clock, &args.dir, Options { fsync: args.fsync, point_in_time: args.point_in_time })
    }
}

/// Split a line into arguments: whitespace separates, double quotes group.
fn split(line: &str) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let mut current = Vec::new();
    let mut quoted = false;
    let mut started = false;
    for byte in line.bytes() {
        match byte {
            b'"' => {
                quoted = !quoted;
                started = true;
            }
            b' ' | b'\t' if !quoted => {
                if started {
                    args.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            _ => {
                current.push(byte);
                started = true;
            }
        }
    }
    if started {
        args.push(current);
    }
    args
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

fn render(reply: &Reply) -> String {
    match reply {
        Reply::Ok => "OK".into(),
        Reply::Nil => "(nil)".into(),
        Reply::Int(n) => format!("(integer) {n}"),
        Reply::Bulk(v) => show(v),
        Reply::Pairs(pairs) if pairs.is_empty() => "(empty hash)".into(),
        Reply::Pairs(pairs) => {
            pairs.iter().map(|(f, v)| format!("{}={}", show(f), show(v))).collect::<Vec<_>>().join(" ")
        }
        Reply::Array(values) => {
            values.iter().map(|v| v.as_deref().map_or_else(|| "(nil)".to_string(), show)).collect::<Vec<_>>().join(" ")
        }
    }
}

fn run_line(store: &mut Store, args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let result = match name.as_str() {
        "EVICT" => {
            store.evict().map(|r| format!("evicted {} rows into {} segments", r.rows_evicted, r.segments_sealed))
        }
        "SYNC" => store.sync().map(|()| "OK".to_string()),
        "REWRITE" => store.rewrite().map(|()| "OK".to_string()),
        "AUDIT" => {
            let violations = store.audit();
            Ok(if violations.is_empty() {
                "audit clean".to_string()
            } else {
                violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("; ")
            })
        }
        "STATS" => Ok(format!(
            "keys={} cold={} segments={} used_memory={}",
            store.key_count(),
            store.cold_count(),
            store.segment_count(),
            store.used_memory()
        )),
        _ => store.execute_args(args).map(|reply| render(&reply)),
    };
    result.unwrap_or_else(|e| format!("(error) {e}"))
}

/// Say plainly what recovery did not replay, and why.
fn print_cut(report: &RecoveryReport, read_only: bool) {
    let aof = &report.aof;
    if aof.dropped_bytes > 0 {
        let what = if aof.damage.is_some() { "DAMAGE to durable data" } else { "a torn tail (never durable)" };
        let done = match (&aof.quarantine_file, read_only) {
            (_, true) => "not replayed, left in place".to_string(),
            (Some(file), false) => format!("moved to {file}"),
            (None, false) => "cut".to_string(),
        };
        println!(
            "# the log ends at byte {}: {what}, {} bytes {done} ({})",
            aof.valid_len_bytes,
            aof.dropped_bytes,
            aof.reason.as_deref().unwrap_or("no reason given")
        );
        if let Some(why) = &aof.damage {
            println!("# damage: {why}");
        }
    }
    if aof.missing && report.segments_loaded > 0 {
        println!("# the log was MISSING beside {} registered segments: opened as empty", report.segments_loaded);
    }
    if report.sweep_skipped && !read_only {
        println!("# nothing was swept or removed in this open (point-in-time recovery); orphans wait for a rewrite");
    }
    for name in &report.foreign_files {
        // `Path::display` shows a name that is not UTF-8 with U+FFFD for its
        // bad bytes; `{:?}` shows the bytes themselves.
        println!("# left untouched, not the store's: {name:?}");
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(parsed) => parsed,
        Err(why) => return cli::usage_error("kv", USAGE, &why),
    };
    let dir = &args.dir;
    let (mut store, report) = match open(&args) {
        Ok(opened) => opened,
        Err(Error::Locked { .. }) => {
            eprintln!("kv: store directory is in use by another process: {}", dir.display());
            eprintln!("kv: (one writer at a time; --read-only openers share it with each other only)");
            return ExitCode::from(1);
        }
        Err(e @ Error::Corrupt { .. }) => {
            eprintln!("kv: cannot open {}: {e}", dir.display());
            eprintln!(
                "kv: the store is damaged and nothing on disk was changed. Look at it with --read-only, or open it"
            );
            eprintln!(
                "kv: with --point-in-time to recover up to the damage (what follows is moved to a quarantine file)."
            );
            return ExitCode::from(1);
        }
        Err(e) => {
            eprintln!("kv: cannot open {}: {e}", dir.display());
            return ExitCode::from(1);
        }
    };
    if args.read_only {
        println!(
            "# opened {} read-only: {} frames replayed, {} segments loaded, {} stubs stitched, {} stubs inserted, \
             {} bytes past the valid log not replayed (left in place), {} bytes of torn manifest tail; nothing \
             is written",
            dir.display(),
            report.frames_replayed,
            report.segments_loaded,
            report.stubs_stitched,
            report.stubs_inserted,
            report.aof.dropped_bytes,
            report.manifest_torn_bytes
        );
    } else {
        println!(
            "# recovered {}: {} frames replayed, {} segments loaded, {} stubs stitched, {} stubs inserted, \
             {} orphan segments swept, {} bytes quarantined",
            dir.display(),
            report.frames_replayed,
            report.segments_loaded,
            report.stubs_stitched,
            report.stubs_inserted,
            report.orphan_segments_swept,
            report.aof.dropped_bytes
        );
    }
    print_cut(&report, args.read_only);
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let args = split(&line);
        if args.is_empty() {
            continue;
        }
        if args[0].eq_ignore_ascii_case(b"QUIT") {
            break;
        }
        let _ = writeln!(stdout, "{}", run_line(&mut store, &args));
    }
    match store.close() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kv: close failed: {e}");
            ExitCode::from(1)
        }
    }
}
