//! The recorder on hand-written strace lines: each call kind lands as the
//! operation it means, and every call it cannot record is refused by name.

use super::*;
use crate::strace::Joiner;

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
        format!(r#"1 fdatasync({f}) = 0"#),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    assert_eq!(lines, ["open 1 log create,append", "write 1 append 61", "fsync 1", "fdatasync 1", "close 1"]);
}

#[test]
fn calls_the_disk_cannot_replay_are_refused_by_name_and_line() {
    let refused = |line: String, why: &str| {
        let error = record(&[line]).expect_err("refused");
        assert!(error.reason.contains(why), "{error}");
        assert_eq!(error.line, 1);
    };
    refused(format!(r#"1 link("{}", "{}") = 0"#, x("/t/db/a"), x("/t/db/b")), "links");
    refused(format!(r#"1 rmdir("{}") = 0"#, x("/t/db")), "the watched directory itself");
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

#[test]
fn a_thread_made_by_clone3_shares_the_table_and_a_forked_child_copies_it() {
    let (f, g) = (fd(3, "/t/db/log"), fd(3, "/t/db/log2"));
    let thread = "0x3d0f00, child_tid=0x7f40, parent_tid=0x7f40, exit_signal=0, stack=0x7f00, stack_size=0x7fff80";
    let lines = vec![
        format!(r#"1 openat(-100<{}>, "{}", 0x41) = {f}"#, x("/t"), x("db/log")),
        format!("1 clone3({{flags={thread}}} => {{parent_tid=[2]}}, 88) = 2"),
        format!(r#"2 write({f}, "{}", 1) = 1"#, x("a")),
        // The thread closes the shared descriptor: the parent's is gone too.
        format!("2 close({f}) = 0"),
        "1 clone(child_stack=NULL, flags=0x1200000|17) = 3".to_string(),
        format!(r#"1 openat(-100<{}>, "{}", 0x41) = {g}"#, x("/t"), x("db/log2")),
        "1 clone(child_stack=NULL, flags=0x1200000|17) = 4".to_string(),
        format!("4 close({g}) = 0"),
        format!(r#"1 write({g}, "{}", 1) = 1"#, x("b")),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    assert_eq!(
        lines,
        ["open 1 log create", "write 1 0 61", "close 1", "open 2 log2 create", "write 2 0 62", "close 2"],
        "the forked child's close leaves the parent's descriptor open"
    );
}

#[test]
fn a_write_through_an_o_sync_descriptor_is_followed_by_its_fsync_and_o_dsync_by_its_fdatasync() {
    let (s, d, p) = (fd(3, "/t/db/s"), fd(4, "/t/db/d"), fd(5, "/t/db/p"));
    let lines = vec![
        format!(r#"1 openat(-100<{}>, "{}", 0x101041) = {s}"#, x("/t"), x("db/s")),
        format!(r#"1 openat(-100<{}>, "{}", 0x1041) = {d}"#, x("/t"), x("db/d")),
        format!(r#"1 openat(-100<{}>, "{}", 0x41) = {p}"#, x("/t"), x("db/p")),
        format!(r#"1 write({s}, "{}", 1) = 1"#, x("a")),
        format!(r#"1 pwrite64({d}, "{}", 1, 7) = 1"#, x("b")),
        format!(r#"1 write({p}, "{}", 1) = 1"#, x("c")),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    let expected = [
        "open 1 s create",
        "open 2 d create",
        "open 3 p create",
        "write 1 0 61",
        "fsync 1",
        "write 2 7 62",
        "fdatasync 2",
        "write 3 0 63",
        "close 1",
        "close 2",
        "close 3",
    ];
    assert_eq!(lines, expected);
}

#[test]
fn rmdir_and_unlinkat_removedir_are_kept() {
    let lines = vec![
        format!(r#"1 mkdir("{}", 0755) = 0"#, x("/t/db/a")),
        format!(r#"1 mkdir("{}", 0755) = 0"#, x("/t/db/b")),
        format!(r#"1 rmdir("{}") = 0"#, x("db/a")),
        format!(r#"1 unlinkat(-100<{}>, "{}", 0x200) = 0"#, x("/t"), x("db/b")),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    assert_eq!(lines, ["mkdir a", "mkdir b", "rmdir a", "rmdir b"]);
}

#[test]
fn a_directorys_rename_is_kept_and_carries_the_directories_under_it() {
    let lines = vec![
        format!(r#"1 mkdir("{}", 0755) = 0"#, x("/t/db/tmp")),
        format!(r#"1 mkdir("{}", 0755) = 0"#, x("/t/db/tmp/sub")),
        format!(r#"1 rename("{}", "{}") = 0"#, x("/t/db/tmp"), x("/t/db/snap")),
        format!(r#"1 rmdir("{}") = 0"#, x("/t/db/snap/sub")),
    ];
    let ops = record(&lines).expect("recorded");
    let lines: Vec<String> = ops.iter().map(Op::to_line).collect();
    assert_eq!(lines, ["mkdir tmp", "mkdir tmp/sub", "rename tmp snap", "rmdir snap/sub"]);
}
