//! `--isolate`, through the `sim` binary as a person runs it: a sweep with
//! each seed in a child process totals exactly what the same sweep in
//! process does (segsim, and redb as a kit target); a seed that aborts its
//! process (redb's finding 3, REDB.md) is one failed seed, named with its
//! signal and its stderr, and the seeds after it still run; children that
//! serve seed after seed (`--reuse-children`) give the same verdicts;
//! `--shrink` says it cannot shrink it; flags that need this process are
//! refused.

use std::process::{Command, Output};

use serde_json::Value;

/// `sim` with `args`, run to its end.
fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim")).args(args).output().expect("the sim binary runs")
}

/// The JSON summary `args` (which hold `--json`) print, less the wall-clock
/// figures, and the exit status.
fn summary(args: &[&str]) -> (Value, Option<i32>) {
    let output = sim(args);
    let mut value: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: no JSON summary ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    let fields = value.as_object_mut().expect("an object");
    assert!(fields.remove("elapsed_sec").is_some() && fields.remove("ops_per_sec").is_some());
    (value, output.status.code())
}

/// The sweep `args` names, in process and isolated: the same summary.
fn isolated_equals_in_process(args: &[&str]) -> Value {
    let (in_process, status) = summary(args);
    let isolated_args: Vec<&str> = args.iter().copied().chain(["--isolate"]).collect();
    let (isolated, isolated_status) = summary(&isolated_args);
    assert_eq!(isolated, in_process, "{args:?}: isolated and in-process sweeps differ");
    assert_eq!(isolated_status, status);
    in_process
}

#[test]
fn an_isolated_segsim_sweep_totals_what_the_in_process_one_does() {
    let value = isolated_equals_in_process(&["--seeds", "0..24", "--jobs", "2", "--json"]);
    assert_eq!(value["seeds"], 24);
    assert!(value["crashes"].as_u64().unwrap() > 0 && value["ops"].as_u64().unwrap() > 0, "{value}");
    // One seed: its trace hash too; the shard and determinism flags go
    // through (the child runs the seed twice itself).
    let one = isolated_equals_in_process(&["--seed", "3", "--json"]);
    assert!(one["trace_hash"].is_string(), "{one}");
    let shard = isolated_equals_in_process(&["--seeds", "0..12", "--shard", "1/3", "--check-determinism", "--json"]);
    assert_eq!(shard["seeds"], 4);
}

#[cfg(feature = "redb")]
#[test]
fn an_isolated_kit_target_sweep_totals_what_the_in_process_one_does() {
    let value = isolated_equals_in_process(&["--target", "redb", "--seeds", "0..8", "--jobs", "2", "--json"]);
    assert_eq!((value["seeds"].as_u64(), value["fs"].as_str()), (Some(8), Some("posix")));
    // The target's own flags go through, and failures come back whole.
    let planted = ["--target", "redb", "--seeds", "110..112", "--plant", "redb-late-write", "--fs", "ext4", "--json"];
    let value = isolated_equals_in_process(&planted);
    assert_eq!(value["fs"], "ext4");
    assert!(!value["failures"].as_array().unwrap().is_empty(), "seeds 110 and 111 fail under the plant: {value}");
}

#[cfg(all(feature = "redb", unix))]
#[test]
fn a_seed_that_aborts_its_process_is_one_failed_seed_and_the_sweep_goes_on() {
    use std::os::unix::process::ExitStatusExt;
    // REDB.md's finding 3: in process, seed 114 under `redb-late-write`
    // still takes the whole process down.
    let in_process = sim(&["--target", "redb", "--seed", "114", "--plant", "redb-late-write"]);
    assert_eq!(in_process.status.signal(), Some(6), "seed 114 no longer aborts in process: update REDB.md");

    let sweep = ["--target", "redb", "--seeds", "110..116", "--plant", "redb-late-write", "--isolate", "--jobs", "2"];
    let output = sim(&[&sweep[..], &["--json"]].concat());
    assert_eq!(output.status.code(), Some(1));
    let value: Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
    assert_eq!(value["seeds"], 6, "every seed of the range ran, those after the abort too");
    let failures = value["failures"].as_array().unwrap();
    let died: Vec<&Value> = failures.iter().filter(|f| f["check"] == "died").collect();
    assert_eq!(died.len(), 1, "{failures:?}");
    assert_eq!(died[0]["seed"], 114);
    let detail = died[0]["detail"].as_str().unwrap();
    assert!(detail.contains("killed by signal 6 (SIGABRT"), "{detail}");
    assert!(detail.contains("panic in a destructor during cleanup"), "{detail}");
    assert!(detail.contains("thread caused non-unwinding panic. aborting."), "{detail}");
    let repro = died[0]["repro"].as_str().unwrap();
    assert!(repro.ends_with("--target redb --seed 114 --plant redb-late-write"), "{repro}");
    assert!(failures.iter().any(|f| f["seed"] == 115), "the seed after the abort ran and failed: {failures:?}");

    // The text report names it too.
    let text = String::from_utf8_lossy(&sim(&sweep).stdout).into_owned();
    assert!(text.contains("seed 114 failed check 'died':\n"), "{text}");
    assert!(text.contains("a shell shows exit status 134"), "{text}");
}

/// `--reuse-children`: one child serves seeds 110..114 and dies on 114,
/// a fresh one serves 115: the summary per-seed children give, and the
/// died seed's report holds its own stderr (the abort), not the seeds'
/// before it.
#[cfg(all(feature = "redb", unix))]
#[test]
fn reused_children_give_the_verdicts_per_seed_children_give_and_a_death_is_one_seed() {
    let sweep = ["--target", "redb", "--seeds", "110..116", "--plant", "redb-late-write", "--jobs", "1", "--json"];
    let (per_seed, status) = summary(&[&sweep[..], &["--isolate"]].concat());
    let (reused, reused_status) = summary(&[&sweep[..], &["--isolate", "--reuse-children"]].concat());
    // A panic message names the OS's thread id, which no two processes share.
    assert_eq!(without_thread_ids(&reused), without_thread_ids(&per_seed), "reused and per-seed children differ");
    assert_eq!((reused_status, status), (Some(1), Some(1)));
    let failures = reused["failures"].as_array().unwrap();
    let died: Vec<&Value> = failures.iter().filter(|f| f["check"] == "died").collect();
    assert_eq!((died.len(), &died[0]["seed"]), (1, &Value::from(114)), "{failures:?}");
    let detail = died[0]["detail"].as_str().unwrap();
    assert!(detail.contains("killed by signal 6 (SIGABRT"), "{detail}");
    assert!(detail.contains("thread caused non-unwinding panic. aborting."), "{detail}");
    assert!(!detail.contains("sim-isolated-seed-start"), "only seed 114's own stderr: {detail}");
    // A segsim sweep over two jobs, and determinism checked in the children.
    let segsim = ["--seeds", "0..16", "--jobs", "2", "--check-determinism", "--json"];
    let (per_seed, _) = summary(&[&segsim[..], &["--isolate"]].concat());
    let (reused, _) = summary(&[&segsim[..], &["--isolate", "--reuse-children"]].concat());
    assert_eq!(reused, per_seed);
}

/// `value` as text, the number in each panic message's `thread 'NAME'
/// (12345)` replaced by `ID`.
#[cfg(all(feature = "redb", unix))]
fn without_thread_ids(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("thread '") {
        let name_end = rest[at + 8..].find('\'').map(|n| at + 8 + n + 1);
        let Some(name_end) = name_end else { break };
        out.push_str(&rest[..name_end]);
        rest = &rest[name_end..];
        let digits = rest.strip_prefix(" (").map(|r| r.bytes().take_while(u8::is_ascii_digit).count());
        if let Some(n @ 1..) = digits {
            if rest[2 + n..].starts_with(')') {
                out.push_str(" (ID)");
                rest = &rest[3 + n..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(all(feature = "redb", unix))]
#[test]
fn shrink_says_it_cannot_shrink_a_seed_that_died() {
    let output =
        sim(&["--target", "redb", "--seeds", "112..115", "--plant", "redb-late-write", "--isolate", "--shrink"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--shrink: cannot shrink seed(s) 114 (check 'died')"), "{stderr}");
    assert!(stderr.contains("no other failure to shrink"), "{stderr}");
}

#[test]
fn flags_that_need_one_process_are_refused_with_isolate() {
    for flag in [&["--trace"][..], &["--report", "x.html"]] {
        let output = sim(&[&["--seed", "1", "--isolate"][..], flag].concat());
        assert_eq!(output.status.code(), Some(2), "{flag:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("'--isolate' cannot be used with"), "{stderr}");
    }
    // The child's own flag runs one seed and nothing else.
    let output = sim(&["--seeds", "0..2", "--isolated-child"]);
    assert_eq!(output.status.code(), Some(2));
    // A serving child takes its seeds on stdin, and reuse needs --isolate.
    assert_eq!(sim(&["--seeds", "0..2", "--isolated-server"]).status.code(), Some(2));
    let output = sim(&["--seeds", "0..2", "--reuse-children"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--isolate"), "names what it needs");
}

/// A serving child reads seeds from stdin and refuses a line that names none.
#[test]
fn a_serving_child_runs_the_seeds_on_its_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let run = |input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sim"))
            .arg("--isolated-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let output = run("3\n4\n");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let verdicts: Vec<&str> = stdout.lines().filter(|l| l.starts_with("sim-isolated-seed-summary ")).collect();
    assert_eq!(verdicts.len(), 2, "{stdout}");
    assert!(
        verdicts[0].starts_with("sim-isolated-seed-summary 3 {")
            && verdicts[1].starts_with("sim-isolated-seed-summary 4 {")
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("sim-isolated-seed-start 3\n") && stderr.contains("sim-isolated-seed-start 4\n"),
        "{stderr}"
    );
    let bad = run("3x\n");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("names no seed"));
}
