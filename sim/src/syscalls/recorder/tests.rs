//! The recorder on hand-written strace lines: each call kind lands as the
//! operation it means, and every call it cannot record is refused by name.

use super::*;
use crate::syscalls::strace::Joiner;

/// Hex-escape `text` as `strace -xx` does.
fn x(text: &str) -> String {
    text.bytes().map(|b| format!("\\x{b:02x}")).collect()
}

/// Feed `lines` (with `{name}` already expanded by the caller) to a
/// recorder of `/t/db`, started in `/t`, stdout `pipe:[9]`.
fn record(lines: &[String]) -> Result<Vec<Op>, RecordError> {
    let mut recorder = Recorder::new(b"/t/db".to_vec(), b"pipe:[9]".to_vec(), b"/t".to_vec(), []);
    let mut joiner = Joiner::default();
    for (index, line) in lines.iter().enumerate() {
        if let Some(call) = joiner.line(index + 1, line).expect("readable") {
            recorder.call(&call, joiner.pending_clone())?;
        }
    }
    Ok(recorder.finish())
}

fn fd(n: u32, path: &str) -> String {
    format!("{n}<{}>", x(path))
}

#[test]
fn a_write_temp_then_rename_run_records_every_step_with_offsets() {
    let lines = vec![
        format!(r#"1 openat(-100<{}>, "{}", 0x241, 0666) = {}"#, x("/t"), x("db/f.tmp"), fd(3, "/t/db/f.tmp")),
        format!(r#"1 write({}, "{}", 3) = 3"#, fd(3, "/t/db/f.tmp"), x("new")),
        format!(r#"1 write({}, "{}", 2) = 2"#, fd(3, "/t/db/f.tmp"), x("er")),
        format!(r#"1 close({}) = 0"#, fd(3, "/t/db/f.tmp")),
        format!(r#"1 rename("{}", "{}") = 0"#, x("db/f.tmp"), x("/t/db/f")),
        format!(r#"1 write({}, "{}", 3) = 3"#, fd(1, "pipe:[9]"), x("ok\n")),
        format!(r#"1 write({}, "{}", 3) = 3"#, fd(2, "pipe:[7]"), x("no\n")),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    assert_eq!(
        lines,
        [
            "open 1 f.tmp create,trunc",
            "write 1 0 6e6577",
            "write 1 3 6572",
            "close 1",
            "rename f.tmp f",
            "print 6f6b0a"
        ]
    );
}

#[test]
fn dup_fork_and_lseek_follow_one_description() {
    let f = fd(3, "/t/db/log");
    let lines = vec![
        format!(r#"1 openat(-100<{}>, "{}", 0x442) = {f}"#, x("/t"), x("db/log")),
        format!(r#"1 lseek({f}, 10, 0) = 10"#),
        format!(r#"1 dup2({f}, 1) = {}"#, fd(1, "/t/db/log")),
        "1 clone(child_stack=NULL, flags=0x1200000|17 <unfinished ...>".to_string(),
        format!(r#"2 write({}, "{}", 1) = 1"#, fd(1, "/t/db/log"), x("a")),
        "1 <... clone resumed>) = 2".to_string(),
        format!(r#"1 fsync({f}) = 0"#),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    assert_eq!(lines, ["open 1 log create,append", "write 1 append 61", "fsync 1", "close 1"]);
}

#[test]
fn calls_the_disk_cannot_replay_are_refused_by_name_and_line() {
    let refused = |line: String, why: &str| {
        let error = record(&[line]).expect_err("refused");
        assert!(error.reason.contains(why), "{error}");
        assert_eq!(error.line, 1);
    };
    refused(format!(r#"1 link("{}", "{}") = 0"#, x("/t/db/a"), x("/t/db/b")), "links");
    refused(format!(r#"1 rmdir("{}") = 0"#, x("/t/db/sub")), "removing the directory");
    refused(format!(r#"1 rename("{}", "{}") = 0"#, x("/t/elsewhere"), x("/t/db/a")), "edge");
    refused(format!(r#"1 mmap(NULL, 4096, 0x3, 0x1, {}, 0) = 0x7f00"#, fd(5, "/t/db/m")), "not opened");
    refused(
        format!(r#"1 copy_file_range({}, NULL, {}, NULL, 5, 0) = 5"#, fd(5, "/tmp/x"), fd(6, "/t/db/y")),
        "unrecognised",
    );
    refused(format!(r#"1 openat(-100<{}>, "{}", 0x410002) = {}"#, x("/t"), x("db"), fd(3, "/t/db/#1")), "O_TMPFILE");
    refused("1 io_uring_setup(8, 0x7ffe) = 3".to_string(), "asynchronous I/O");
}

#[test]
fn a_shared_writable_map_of_a_recorded_file_is_refused_and_calls_elsewhere_are_ignored() {
    let f = fd(3, "/t/db/m");
    let lines = vec![
        format!(r#"1 openat(-100<{}>, "{}", 0x2) = {f}"#, x("/t"), x("db/m")),
        format!(r#"1 mmap(NULL, 4096, 0x3, 0x1, {f}, 0) = 0x7f00"#),
    ];
    let error = record(&lines).expect_err("refused");
    assert!(error.reason.contains("shared writable map of m"), "{error}");
    let elsewhere = vec![
        format!(r#"1 openat(-100<{}>, "{}", 0x241) = {}"#, x("/t"), x("other"), fd(3, "/t/other")),
        format!(r#"1 write({}, "{}", 1) = 1"#, fd(3, "/t/other"), x("z")),
        format!(r#"1 copy_file_range({}, NULL, {}, NULL, 5, 0) = 5"#, fd(3, "/t/other"), fd(4, "/t/x")),
    ];
    assert_eq!(record(&elsewhere).expect("nothing under the directory"), Vec::<Op>::new());
}
