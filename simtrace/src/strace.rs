//! Reading `strace`'s output: one [`Call`] per completed system call.
//!
//! The recorder runs strace with `-f -qq -X raw -xx -y -s <large>` (see
//! `record.rs`), so every line has one shape: `PID NAME(ARGS) = RET`,
//! strings and the paths `-y` shows after a descriptor (`3</tmp/db/f>`)
//! all hex-escaped (`\x2f`), flags as plain numbers. That makes the text
//! unambiguous to split without knowing any call's argument types: no raw
//! quote, comma, bracket or `) = ` can appear inside an escaped string.
//! A call another process interrupted is printed in two halves
//! (`<unfinished ...>`, then `<... NAME resumed>`); [`Joiner`] glues them
//! back by process id. Signals and exits (`---`, `+++`) are skipped.
//!
//! Only the split happens here; what a call means is `recorder.rs`'s.

use std::collections::BTreeMap;

/// One completed system call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The strace output line it completed on (1-based), for errors.
    pub line: usize,
    /// The calling process (or thread).
    pub pid: u32,
    /// The system call's name.
    pub name: String,
    /// The arguments as strace printed them, split at top-level commas.
    pub args: Vec<String>,
    /// What it returned.
    pub ret: Ret,
}

/// A call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ret {
    /// Success: the value, and the path `-y` shows when it is a descriptor.
    Value(i64, Option<Vec<u8>>),
    /// Failure with this errno name: the call changed nothing.
    Error(String),
    /// `?`: the call did not return (an `exit`, an `execve` replaced).
    Unknown,
}

/// A line strace printed that this reader cannot split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StraceError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for StraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "strace output line {}: {}", self.line, self.reason)
    }
}

/// Glues interrupted calls back together, per process id.
#[derive(Debug, Default)]
pub struct Joiner {
    unfinished: BTreeMap<u32, String>,
}

impl Joiner {
    /// The next output line: `Some(call)` when it completes one.
    pub fn line(&mut self, number: usize, text: &str) -> Result<Option<Call>, StraceError> {
        let error = |reason: String| StraceError { line: number, reason };
        let (pid, rest) = text.split_once(' ').ok_or_else(|| error("no process id".into()))?;
        let pid: u32 = pid.parse().map_err(|_| error(format!("{pid:?} is not a process id")))?;
        let rest = rest.trim_start();
        if rest.starts_with("---") || rest.starts_with("+++") {
            return Ok(None);
        }
        if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            self.unfinished.insert(pid, head.to_string());
            return Ok(None);
        }
        let whole = match rest.strip_prefix("<... ") {
            Some(resumed) => {
                let (_, tail) = resumed.split_once(" resumed>").ok_or_else(|| error("a resumed call's name".into()))?;
                let head = self.unfinished.remove(&pid).ok_or_else(|| error("resumed, never begun".into()))?;
                format!("{head}{tail}")
            }
            None => rest.to_string(),
        };
        parse_call(number, pid, &whole).map(Some)
    }

    /// A clone-like call begun and not yet returned, as (parent, flags):
    /// a process strace shows before its parent's clone returns is its
    /// child. The lowest parent id if several are pending.
    pub fn pending_clone(&self) -> Option<(u32, u64)> {
        self.unfinished.iter().find_map(|(pid, head)| {
            let (name, args) = head.split_once('(')?;
            matches!(name, "clone" | "clone3" | "fork" | "vfork").then(|| (*pid, clone_flags(name, &split_top(args))))
        })
    }
}

fn parse_call(line: usize, pid: u32, text: &str) -> Result<Call, StraceError> {
    let error = |reason: String| StraceError { line, reason };
    let open = text.find('(').ok_or_else(|| error("no argument list".into()))?;
    let name = text[..open].to_string();
    // strace pads short calls before ` = ` (raw calls: `)  = 0x340`).
    let equals = text.rfind(" = ").ok_or_else(|| error(format!("{name}: no result")))?;
    let head = text[..equals].trim_end();
    let inside = head.strip_suffix(')').filter(|h| h.len() > open).ok_or_else(|| error(format!("{name}: no `)`")))?;
    let args = split_top(&inside[open + 1..]);
    let ret = parse_ret(text[equals + 3..].trim()).ok_or_else(|| error(format!("{name}: unreadable result")))?;
    Ok(Call { line, pid, name, args, ret })
}

fn parse_ret(text: &str) -> Option<Ret> {
    if text.starts_with('?') {
        return Some(Ret::Unknown);
    }
    if let Some(rest) = text.strip_prefix("-1 ") {
        let errno = rest.split(' ').next().unwrap_or("");
        return Some(Ret::Error(errno.to_string()));
    }
    let word = text.split(' ').next().unwrap_or("");
    let (value, path) = number_and_path(word)?;
    Some(Ret::Value(value, path))
}

/// Split at commas outside brackets, braces, parentheses and `<…>`.
/// The `=>` strace prints between an in/out argument's value on entry and
/// on return (`clone3({flags=…} => {parent_tid=[7]}, 88)`) closes nothing:
/// its `>` is not a bracket.
fn split_top(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    let mut previous = ' ';
    for ch in text.chars() {
        let arrow = ch == '>' && previous == '=';
        previous = ch;
        match ch {
            '(' | '[' | '{' | '<' => depth += 1,
            '>' if arrow => {}
            ')' | ']' | '}' | '>' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    if !current.trim().is_empty() || !args.is_empty() {
        args.push(current.trim().to_string());
    }
    args
}

/// A number strace printed (decimal, `0x` hex, negative), optionally
/// followed by `<path>` (`-y`), or a raw `-100` for `AT_FDCWD`.
pub fn number_and_path(text: &str) -> Option<(i64, Option<Vec<u8>>)> {
    let end = text.find('<').unwrap_or(text.len());
    let value = parse_number(&text[..end])?;
    if end == text.len() {
        return Some((value, None));
    }
    let inner = text[end + 1..].strip_suffix('>')?;
    Some((value, Some(unescape(inner))))
}

/// A number as strace prints one: decimal, `0x` hex, or negative decimal.
pub fn parse_number(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok().map(|v| v as i64);
    }
    text.parse().ok()
}

/// A flags word as `-X raw` prints it: a number, or numbers joined by `|`.
pub fn parse_flags(text: &str) -> Option<u64> {
    text.split('|').map(|part| parse_number(part).map(|v| v as u64)).try_fold(0u64, |acc, v| Some(acc | v?))
}

/// A quoted, hex-escaped string argument; `None` if it is not one, or if
/// strace cut it short (`"..."...`): a recording never guesses bytes.
pub fn string_arg(text: &str) -> Option<Vec<u8>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    Some(unescape(inner))
}

/// `\xHH` escapes to bytes; anything else as it is.
fn unescape(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 4 + 1);
    let mut at = 0;
    while at < bytes.len() {
        let escaped = bytes[at] == b'\\' && bytes.get(at + 1) == Some(&b'x') && at + 4 <= bytes.len();
        let value = escaped.then(|| std::str::from_utf8(&bytes[at + 2..at + 4]).ok()).flatten();
        match value.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    out
}

/// The `iov_base` strings of a `writev`-style array, concatenated.
pub fn iovec_bytes(text: &str) -> Option<Vec<u8>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    let mut out = Vec::new();
    for element in split_top(inner) {
        let element = element.strip_prefix('{')?.strip_suffix('}')?;
        let base =
            split_top(element).into_iter().find_map(|field| field.strip_prefix("iov_base=").map(str::to_string))?;
        out.extend(string_arg(&base)?);
    }
    Some(out)
}

/// The value of `name=` inside a `{…}` argument (`clone3`'s flags). An
/// in/out argument (`{…} => {…}`) is read as it went in.
pub fn struct_field(text: &str, name: &str) -> Option<String> {
    let entry = text.split_once(" => ").map_or(text, |(entry, _)| entry);
    let inner = entry.trim().strip_prefix('{')?.strip_suffix('}')?;
    split_top(inner).into_iter().find_map(|field| field.strip_prefix(&format!("{name}=")).map(str::to_string))
}

/// The flags of a clone-like call (`fork` and `vfork` share nothing).
pub fn clone_flags(name: &str, args: &[String]) -> u64 {
    let field = match name {
        "clone3" => args.first().and_then(|arg| struct_field(arg, "flags")),
        "clone" => args.iter().find_map(|arg| arg.strip_prefix("flags=").map(str::to_string)),
        _ => None,
    };
    field.and_then(|f| parse_flags(&f)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Call {
        Joiner::default().line(1, text).expect("reads").expect("a whole call")
    }

    #[test]
    fn a_call_splits_into_name_arguments_and_result() {
        let call = one(r#"12 openat(-100<\x2f\x74>, "\x66", 0x241, 0666) = 3<\x2f\x74\x2f\x66>"#);
        assert_eq!(call.name, "openat");
        assert_eq!(call.args.len(), 4);
        assert_eq!(number_and_path(&call.args[0]), Some((-100, Some(b"/t".to_vec()))));
        assert_eq!(string_arg(&call.args[1]), Some(b"f".to_vec()));
        assert_eq!(parse_flags(&call.args[2]), Some(0x241));
        assert_eq!(call.ret, Ret::Value(3, Some(b"/t/f".to_vec())));
        let failed = one(r#"12 unlink("\x61") = -1 ENOENT (No such file or directory)"#);
        assert_eq!(failed.ret, Ret::Error("ENOENT".into()));
    }

    #[test]
    fn nested_decorations_and_arrays_stay_one_argument() {
        let call =
            one(r#"7 writev(3<\x2f\x61>, [{iov_base="\x61\x62", iov_len=2}, {iov_base="\x63", iov_len=1}], 2) = 3"#);
        assert_eq!(call.args.len(), 3);
        assert_eq!(iovec_bytes(&call.args[1]), Some(b"abc".to_vec()));
        let dev = one(r#"7 lseek(0<\x2f\x64<char 1:3>>, 0, 0x1) = 0"#);
        assert_eq!(dev.args.len(), 3);
        assert_eq!(parse_flags("0x1200000|17"), Some(0x1200011));
    }

    #[test]
    fn interrupted_calls_are_joined_by_process() {
        let mut joiner = Joiner::default();
        assert_eq!(joiner.line(1, "5 vfork( <unfinished ...>"), Ok(None));
        assert_eq!(joiner.line(2, "6 --- SIGCHLD {si_signo=17} ---"), Ok(None));
        let call = joiner.line(3, "5 <... vfork resumed>)              = 6").expect("reads").expect("whole");
        assert_eq!((call.name.as_str(), call.ret), ("vfork", Ret::Value(6, None)));
        let raw = joiner.line(5, "5 read(0x3, 0x7ffe, 0x340)  = 0x340").expect("reads").expect("whole");
        assert_eq!((raw.args.len(), raw.ret), (3, Ret::Value(0x340, None)));
        let orphan = joiner.line(4, "9 <... write resumed>) = 1").expect_err("never begun");
        assert_eq!(orphan.line, 4);
    }

    #[test]
    fn clone3_with_its_returned_struct_keeps_its_flags() {
        // strace 6.1 under -f, a glibc thread: the struct, then what the
        // kernel wrote back into it after `=>`.
        let text = "4103 clone3({flags=0x3d0f00, child_tid=0x7f40351c8990, parent_tid=0x7f40351c8990, \
                    exit_signal=0, stack=0x7f40349c8000, stack_size=0x7fff80, tls=0x7f40351c86c0} \
                    => {parent_tid=[4104]}, 88) = 4104";
        let call = one(text);
        assert_eq!(call.args.len(), 2, "{:?}", call.args);
        assert_eq!(call.args[1], "88");
        assert_eq!(call.ret, Ret::Value(4104, None));
        assert_eq!(clone_flags("clone3", &call.args), 0x3d0f00);
        let mut joiner = Joiner::default();
        let head = "5 clone3({flags=0x3d0f00, exit_signal=0} <unfinished ...>";
        assert_eq!(joiner.line(1, head), Ok(None));
        assert_eq!(joiner.pending_clone(), Some((5, 0x3d0f00)));
        let resumed = joiner.line(2, "5 <... clone3 resumed> => {parent_tid=[6]}, 88) = 6").expect("reads");
        let resumed = resumed.expect("whole");
        assert_eq!((clone_flags("clone3", &resumed.args), resumed.ret), (0x3d0f00, Ret::Value(6, None)));
    }

    #[test]
    fn a_cut_string_is_not_a_string() {
        assert_eq!(string_arg(r#""\x61"..."#), None);
    }
}
