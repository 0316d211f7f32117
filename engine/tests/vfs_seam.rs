//! The VFS seam is sacred: no engine source may name `std::fs`, `File`,
//! `memmap2`, `SystemTime`, `Instant` or `std::time`, and in the seam's own
//! crate (`vfs/`) only `os.rs` (the real file system) and `clock.rs` (the
//! real clock) may. If either broke, the simulator would no longer see
//! every byte and every instant the engine depends on, and a crash test
//! could pass while proving nothing. The engine's manifest may not depend
//! on `memmap2` either: the real disk is reached through `vfs` alone.
//!
//! This is a text scan, so it is deliberately blunt: comments are skipped,
//! everything else (tests included) counts.

use std::path::{Path, PathBuf};

/// Files of the seam's crate allowed to touch the OS, relative to `vfs/src`.
const ALLOWED_IN_SEAM: &[&str] = &["os.rs", "clock.rs"];

/// Forbidden tokens, matched as whole words (so `VfsFile` is fine).
const FORBIDDEN: &[&str] = &["std::fs", "File", "memmap2", "SystemTime", "Instant", "std::time"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read engine/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The (line number, token) of each forbidden use in `source`.
fn violations(source: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (index, line) in source.lines().enumerate() {
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        for token in FORBIDDEN {
            let mut from = 0;
            while let Some(at) = code[from..].find(token) {
                let start = from + at;
                let end = start + token.len();
                let before_ok = start == 0 || !is_word_byte(code.as_bytes()[start - 1]);
                let after_ok = end == code.len() || !is_word_byte(code.as_bytes()[end]);
                if before_ok && after_ok {
                    found.push((index + 1, *token));
                }
                from = end;
            }
        }
    }
    found
}

/// Every forbidden use under `crate_dir/src` outside `allowed`, one line each.
fn scan(crate_dir: &str, allowed: &[&str]) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(crate_dir).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 3, "expected {crate_dir}'s sources under {}", src.display());
    let mut report = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if allowed.contains(&relative.as_str()) {
            continue;
        }
        let source = std::fs::read_to_string(file).expect("read source");
        for (line, token) in violations(&source) {
            report.push(format!("{crate_dir}/src/{relative}:{line}: `{token}` outside the Vfs/Clock seam"));
        }
    }
    report
}

#[test]
fn engine_touches_files_and_time_only_through_the_seams() {
    let mut report = scan("engine", &[]);
    report.extend(scan("vfs", ALLOWED_IN_SEAM));
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    if manifest.lines().any(|line| line.trim_start().starts_with("memmap2")) {
        report.push("engine/Cargo.toml depends on memmap2: the real disk is reached through vfs alone".into());
    }
    assert!(report.is_empty(), "the VFS seam is broken:\n{}", report.join("\n"));
}

#[test]
fn the_scan_catches_what_it_claims_to() {
    // Canary for the check itself: each forbidden form must be seen.
    let bad = "use std::fs;\nlet f = File::open(p);\nlet m = memmap2::Mmap::map(&f);\n\
               let t = SystemTime::now();\nlet i = std::time::Instant::now();";
    let found: Vec<&str> = violations(bad).into_iter().map(|(_, t)| t).collect();
    for token in FORBIDDEN {
        assert!(found.contains(token), "scan missed `{token}`");
    }
    // And what is allowed stays allowed.
    assert!(violations("let f: Box<dyn VfsFile>; // File in a comment").is_empty());
    assert!(violations("struct FileName; let instant_ms = 3;").is_empty());
}
