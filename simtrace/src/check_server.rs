//! `sim trace explore --check-server`: one checker process per job that
//! judges many crash states, in place of one process per state.
//!
//! The protocol and the servers are `simulator::check_server`'s (shared
//! with `sim live`): for each state the harness writes
//! `DIR<TAB>PRINTED<TAB>CRASH_INDEX<TAB>STATE` on a server's standard
//! input and reads `pass` or `fail WHY` back. Here a state's answer
//! becomes its [`Verdict`], and a server's fault (an exit, no answer
//! within `--timeout`, any other line) a failing verdict that says so,
//! typed and naming the state (on standard error as it happens, and in the
//! report as a `CHECKER SERVER FAULT`, apart from the checker's `fail`
//! verdicts); the pool starts a fresh server for the next state. The
//! verdicts are the per-state checker's where the server judges each state
//! on its own, which the tests here and the programs' checkers
//! (`programs/*/check-server.*`, PROGRAMS.md) show for the recordings they
//! run on.

use std::time::Instant;

use super::explore::Verdict;
use super::replay::ROOT;
use simulator::check_server::{Answer, Faulted};
pub use simulator::check_server::{ServerFault, ServerPool};
use simulator::disk::DiskImage;
use simulator::written_state::write_state;

/// The name a trace server sees as `$0`.
pub const SERVER_NAME: &str = "sim-trace-check-server";

/// The verdict on `image` (crash index and state number `at`), with what
/// the program had `printed`, from a server of `pool`.
pub fn check(pool: &ServerPool, image: &DiskImage, printed: &[u8], at: (u64, usize)) -> Verdict {
    let started = Instant::now();
    let written = match write_state(image, ROOT.as_ref(), printed, pool.scratch(), "sim-trace-") {
        Ok(written) => written,
        Err(why) => {
            let seconds = started.elapsed().as_secs_f64();
            return Verdict { passed: false, ended: why, output_tail: String::new(), seconds, fault: None };
        }
    };
    let names = (at.0.to_string(), at.1.to_string());
    let answer = pool.judge(&written.dir, &written.printed, (&names.0, &names.1));
    let seconds = started.elapsed().as_secs_f64();
    match answer {
        Ok(Answer::Pass) => {
            Verdict { passed: true, ended: "pass".to_string(), output_tail: String::new(), seconds, fault: None }
        }
        Ok(Answer::Fail(why)) => {
            Verdict { passed: false, ended: "fail".to_string(), output_tail: why, seconds, fault: None }
        }
        Err(Faulted { fault, stderr_tail }) => {
            let ended = format!("CHECKER SERVER FAULT at crash index {}, state {}: {fault}", at.0, at.1);
            eprintln!("sim trace explore: {ended}");
            Verdict { passed: false, ended, output_tail: stderr_tail, seconds, fault: Some(fault) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator::disk::{CrashMode, DiskConfig, SimVfs};
    use simulator::trace::Trace;
    use std::path::Path;
    use std::time::Duration;

    /// A disk image holding `/db/x` (or an empty `/db`), all durable.
    fn image(with_x: bool) -> DiskImage {
        use vfs::{OpenMode, Vfs};
        let disk = SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false));
        let dir = Path::new(ROOT);
        disk.create_dir_all(dir).unwrap();
        if with_x {
            let mut file = disk.open(&dir.join("x"), OpenMode::Create).unwrap();
            file.write_at(0, b"x").unwrap();
            file.sync().unwrap();
        }
        disk.sync_dir(dir).unwrap();
        disk.snapshot().durable_image()
    }

    fn started(command: &str, timeout_ms: u64) -> (ServerPool, tempfile::TempDir) {
        let scratch = tempfile::tempdir().expect("a scratch directory");
        (ServerPool::new(command, SERVER_NAME, Duration::from_millis(timeout_ms), scratch.path()), scratch)
    }

    #[test]
    fn the_state_and_what_was_printed_reach_the_server_with_its_names() {
        let command = r#"while IFS="$(printf '\t')" read -r dir printed io state; do
            if grep -q '^ack 7$' "$printed" && [ "$(cat "$dir/x")" = x ]; then echo pass; else echo "fail at $io/$state"; fi
        done"#;
        let (pool, _scratch) = started(command, 10_000);
        assert!(check(&pool, &image(true), b"ack 7\n", (4, 2)).passed);
        let failed = check(&pool, &image(true), b"ack 6\n", (4, 3));
        assert_eq!((failed.passed, failed.ended.as_str(), failed.output_tail.as_str()), (false, "fail", "at 4/3"));
        let failed = check(&pool, &image(false), b"ack 7\n", (5, 0));
        assert_eq!((failed.passed, failed.output_tail.as_str()), (false, "at 5/0"));
        assert_eq!(pool.idle_count(), 1, "one job, one server, kept between states");
    }

    #[test]
    fn a_fault_fails_the_state_naming_it_and_a_fresh_server_takes_the_next() {
        let (pool, _scratch) = started("read -r line; echo dying >&2; exit 3", 10_000);
        let verdict = check(&pool, &image(true), b"", (7, 1));
        assert_eq!(verdict.fault, Some(ServerFault::Died("exited with 3".to_string())), "{verdict:?}");
        assert!(!verdict.passed && verdict.ended.contains("at crash index 7, state 1"), "{verdict:?}");
        assert!(verdict.output_tail.contains("dying"), "its standard error is the output: {verdict:?}");
        let again = check(&pool, &image(true), b"", (7, 2));
        assert!(again.fault.is_some() && again.ended.contains("state 2"), "a fresh server, as short-lived");
    }
}
