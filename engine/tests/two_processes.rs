//! One store, one owner, across real processes (issue 14's scenario): A
//! opens a store directory on the real file system and writes `SET a 1`;
//! B, another process, opens the same directory and is refused with the
//! clear message, changing nothing; A writes `SET c 3`; a later open sees
//! `a` and `c`, and no acknowledged write of any process is lost.
//!
//! The processes are this test binary run again (`current_exe`) with
//! [`ROLE_ENV`] naming the part to play in [`child_role`], which is a test
//! that does nothing without it. Children talk on stdout in lines starting
//! with [`SAID`]; everything else there is the test harness's own.
//!
//! The same scenario with a planted lock that holds nothing (the `NoLock`
//! Vfs, in both children) must lose B's acknowledged write: that is the
//! proof that the check here can fail.

mod support;

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use engine::clock::SystemClock;
use engine::store::{Options, Reply, Store};
use engine::vfs::{OsVfs, Vfs};
use support::{os_files, NoLock};

/// The part a child process plays: `holder` or `intruder`.
const ROLE_ENV: &str = "ENGINE_TWO_PROCESSES_ROLE";
/// The store directory the child opens.
const DIR_ENV: &str = "ENGINE_TWO_PROCESSES_DIR";
/// Set to plant the lock that holds nothing.
const UNLOCKED_ENV: &str = "ENGINE_TWO_PROCESSES_UNLOCKED";
/// How a child's own lines on stdout begin.
const SAID: &str = "child says: ";

fn child_vfs() -> Arc<dyn Vfs> {
    if std::env::var_os(UNLOCKED_ENV).is_some() {
        Arc::new(NoLock::new(Arc::new(OsVfs)))
    } else {
        Arc::new(OsVfs)
    }
}

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{SAID}{line}").unwrap();
    stdout.flush().unwrap();
}

fn execute(store: &mut Store, line: &str) -> String {
    let args: Vec<Vec<u8>> = line.split_whitespace().map(|word| word.as_bytes().to_vec()).collect();
    match store.execute_args(&args) {
        Ok(reply) => format!("reply {reply:?}"),
        Err(e) => format!("error {e}"),
    }
}

/// A child's part (see the module doc); nothing unless [`ROLE_ENV`] is set.
///
/// - `holder`: open the store, say `opened`, then run each line of stdin
///   as a command and say its reply; at `QUIT` or the end of stdin, close
///   and say `closed`.
/// - `intruder`: open the store; refused, say `refused <error>`; let in,
///   run `SET b 2`, say its reply, close and say `closed`.
#[test]
fn child_role() {
    let Ok(role) = std::env::var(ROLE_ENV) else { return };
    let dir = PathBuf::from(std::env::var_os(DIR_ENV).expect("the parent names the directory"));
    let opened = Store::open(child_vfs(), Arc::new(SystemClock), &dir, Options::default());
    match role.as_str() {
        "holder" => {
            let (mut store, _) = opened.expect("the holder opens first");
            say("opened");
            for line in std::io::stdin().lock().lines() {
                let line = line.unwrap();
                if line == "QUIT" {
                    break;
                }
                say(&execute(&mut store, &line));
            }
            store.close().unwrap();
            say("closed");
        }
        "intruder" => match opened {
            Err(e) => say(&format!("refused {e}")),
            Ok((mut store, _)) => {
                say(&execute(&mut store, "SET b 2"));
                store.close().unwrap();
                say("closed");
            }
        },
        other => panic!("unknown role {other:?}"),
    }
}

fn spawn(role: &str, dir: &Path, unlocked: bool) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["child_role", "--exact", "--nocapture", "--test-threads=1", "-q"]);
    command.env(ROLE_ENV, role).env(DIR_ENV, dir);
    if unlocked {
        command.env(UNLOCKED_ENV, "1");
    } else {
        command.env_remove(UNLOCKED_ENV);
    }
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap()
}

/// The next thing a child said, or `None` once its stdout is closed.
fn next_said(lines: &mut Lines<BufReader<ChildStdout>>) -> Option<String> {
    for line in lines {
        let line = line.unwrap();
        // With --nocapture the harness may print "test child_role ... "
        // on the same line, before the child's own words.
        if let Some(at) = line.find(SAID) {
            return Some(line[at + SAID.len()..].to_string());
        }
    }
    None
}

/// Process A: a store held open in a child, driven line by line.
struct Holder {
    child: Child,
    stdin: ChildStdin,
    said: Lines<BufReader<ChildStdout>>,
}

impl Holder {
    fn start(dir: &Path, unlocked: bool) -> Holder {
        let mut child = spawn("holder", dir, unlocked);
        let stdin = child.stdin.take().unwrap();
        let mut said = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(next_said(&mut said).as_deref(), Some("opened"));
        Holder { child, stdin, said }
    }

    fn run(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        next_said(&mut self.said).unwrap_or_else(|| panic!("the holder died running {command:?}"))
    }

    fn quit(mut self) {
        writeln!(self.stdin, "QUIT").unwrap();
        self.stdin.flush().unwrap();
        assert_eq!(next_said(&mut self.said).as_deref(), Some("closed"));
        assert!(self.child.wait().unwrap().success());
    }
}

/// Process B, run to its end: everything it said.
fn intrude(dir: &Path, unlocked: bool) -> Vec<String> {
    let mut child = spawn("intruder", dir, unlocked);
    drop(child.stdin.take());
    let mut said_lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    while let Some(line) = next_said(&mut said_lines) {
        said.push(line);
    }
    assert!(child.wait().unwrap().success(), "the intruder failed: {said:?}");
    said
}

/// What one run of the scenario saw.
struct Outcome {
    /// What B said.
    intruder_said: Vec<String>,
    /// Whether the directory was byte-for-byte the same before and after B.
    intruder_changed_nothing: bool,
    /// Acknowledged writes (key, value) that a later open does not hold.
    lost: Vec<(&'static str, &'static str)>,
    /// What a later open holds for `a`, `b` and `c`.
    recovered: Vec<Reply>,
}

const OK: &str = "reply Ok";

/// Whether the scenario deletes `LOCK` after A opened, as an operator or a
/// cleanup script may.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LockFile {
    Kept,
    Deleted,
}

fn scenario(unlocked: bool) -> Outcome {
    scenario_with(unlocked, LockFile::Kept)
}

fn scenario_with(unlocked: bool, lock_file: LockFile) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut acknowledged = Vec::new();

    let mut a = Holder::start(dir, unlocked);
    assert_eq!(a.run("SET a 1"), OK);
    acknowledged.push(("a", "1"));
    if lock_file == LockFile::Deleted {
        std::fs::remove_file(dir.join(engine::vfs::LOCK_FILE)).unwrap();
    }

    let before = os_files(dir);
    let intruder_said = intrude(dir, unlocked);
    let intruder_changed_nothing = os_files(dir) == before;
    if intruder_said.iter().any(|line| line == OK) {
        acknowledged.push(("b", "2"));
    }

    assert_eq!(a.run("SET c 3"), OK);
    acknowledged.push(("c", "3"));
    a.quit();

    let (mut store, _) = Store::open(Arc::new(OsVfs), Arc::new(SystemClock), dir, Options::default()).unwrap();
    let mut get = |key: &str| store.execute_args(&[b"GET".to_vec(), key.as_bytes().to_vec()]).unwrap();
    let lost = acknowledged.iter().filter(|(key, value)| get(key) != Reply::Bulk(value.as_bytes().to_vec())).copied();
    let lost = lost.collect();
    let recovered = ["a", "b", "c"].iter().map(|key| get(key)).collect();
    assert!(store.audit().is_empty(), "{:?}", store.audit());
    Outcome { intruder_said, intruder_changed_nothing, lost, recovered }
}

#[test]
fn a_second_process_is_refused_with_a_clear_message_and_no_acknowledged_write_is_lost() {
    let outcome = scenario(false);
    let [said] = outcome.intruder_said.as_slice() else { panic!("the intruder said {:?}", outcome.intruder_said) };
    assert!(said.starts_with("refused ") && said.contains("store directory is in use by another process"), "{said}");
    assert!(outcome.intruder_changed_nothing, "the refused process changed the directory");
    assert_eq!(outcome.lost, [], "acknowledged writes lost");
    let bulk = |v: &str| Reply::Bulk(v.as_bytes().to_vec());
    assert_eq!(outcome.recovered, [bulk("1"), Reply::Nil, bulk("3")]);
}

/// Issue 22: `rm LOCK` under a running store. A's lock is on what cannot
/// be deleted or swapped (the directory itself), so B is refused all the
/// same, and A's writes all survive.
#[test]
fn deleting_lock_under_a_running_store_admits_no_second_writer() {
    let outcome = scenario_with(false, LockFile::Deleted);
    let [said] = outcome.intruder_said.as_slice() else { panic!("the intruder said {:?}", outcome.intruder_said) };
    assert!(said.starts_with("refused ") && said.contains("store directory is in use by another process"), "{said}");
    assert!(outcome.intruder_changed_nothing, "the refused process changed the directory");
    assert_eq!(outcome.lost, [], "acknowledged writes lost");
    let bulk = |v: &str| Reply::Bulk(v.as_bytes().to_vec());
    assert_eq!(outcome.recovered, [bulk("1"), Reply::Nil, bulk("3")]);
}

/// The check above can fail: with a lock that holds nothing, B gets in,
/// its `SET b 2` is acknowledged, and A's next append lands on top of it.
#[test]
fn with_a_lock_that_holds_nothing_the_same_scenario_loses_the_second_process_write() {
    let outcome = scenario(true);
    assert_eq!(outcome.intruder_said, [OK, "closed"]);
    assert!(!outcome.intruder_changed_nothing);
    assert_eq!(outcome.lost, [("b", "2")]);
}
