//! The docs cannot drift: every file path, `Type::item`, `make` target and
//! command-line flag that README.md, ARCHITECTURE.md and
//! TESTING-YOUR-ENGINE.md name in backticks exists in this checkout, and
//! every line count they quote for a file is that file's (issue 46: an
//! outside review found 8 of 13 concrete claims stale). A name is checked
//! as text against the tree — no compiler — so the rules are simple and
//! each is shown to fail on a made-up document below.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The documents held to their names.
const DOCS: [&str; 3] = ["README.md", "ARCHITECTURE.md", "TESTING-YOUR-ENGINE.md"];

/// Paths a run makes, never in a clone: named as where to look.
const MADE_BY_A_RUN: [&str; 5] =
    ["target/", "target/ci-artifacts/reports/", "target/soak-deep/", "corpus/logkv/", "summary.json"];

/// Types the docs name that live outside this repository.
const EXTERNAL_TYPES: [&str; 7] = ["File", "Vec", "Option", "Result", "String", "Arc", "Durability"];

/// The checkout: every file and directory, as paths relative to its root.
struct Tree {
    root: PathBuf,
    paths: BTreeSet<String>,
    rust: Vec<(String, String)>,
}

impl Tree {
    fn of(root: &Path) -> Tree {
        let mut tree = Tree { root: root.to_path_buf(), paths: BTreeSet::new(), rust: Vec::new() };
        tree.walk(root);
        tree
    }

    fn walk(&mut self, dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git" | "node_modules") {
                continue;
            }
            let relative = path.strip_prefix(&self.root).unwrap().to_string_lossy().replace('\\', "/");
            if path.is_dir() {
                self.paths.insert(format!("{relative}/"));
                self.walk(&path);
            } else {
                if relative.ends_with(".rs") {
                    self.rust.push((relative.clone(), std::fs::read_to_string(&path).unwrap_or_default()));
                }
                self.paths.insert(relative);
            }
        }
    }

    /// Whether `name` is a path of the tree, or the tail of one (docs name
    /// a file inside the folder their table is about).
    fn has_path(&self, name: &str) -> bool {
        let name = name.trim_start_matches("./");
        self.paths.iter().any(|path| path == name || path.ends_with(&format!("/{name}")))
    }

    /// Whether some Rust file defines `ty` and, in a file that defines or
    /// implements it, `item` (a function, a variant, a field or a const).
    fn has_item(&self, ty: &str, item: &str) -> bool {
        let defines = |text: &str| {
            ["struct", "enum", "trait", "type", "union"].iter().any(|kw| contains_word(text, &format!("{kw} {ty}")))
        };
        let implements = |text: &str| text.contains(&format!("impl {ty}")) || text.contains(&format!(" for {ty}"));
        let has = |text: &str| {
            contains_word(text, &format!("fn {item}"))
                || contains_word(text, &format!("{item}:"))
                || contains_word(text, &format!("const {item}"))
                || (item.starts_with(char::is_uppercase) && contains_word(text, item))
        };
        self.rust.iter().any(|(_, text)| (defines(text) || implements(text)) && has(text))
    }

    fn defines_type(&self, ty: &str) -> bool {
        self.rust.iter().any(|(_, text)| {
            ["struct", "enum", "trait", "type"].iter().any(|kw| contains_word(text, &format!("{kw} {ty}")))
        })
    }

    /// The line counts of every file `name` may mean (itself, or a file
    /// it is the tail of).
    fn file_lines(&self, name: &str) -> Vec<usize> {
        self.paths
            .iter()
            .filter(|path| *path == name || path.ends_with(&format!("/{name}")))
            .filter_map(|path| Some(std::fs::read_to_string(self.root.join(path)).ok()?.lines().count()))
            .collect()
    }
}

/// Whether `needle` occurs in `text` not followed by an identifier's
/// character (so `fn open` is not found in `fn open_read_only`).
fn contains_word(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(at, _)| {
        let next = text[at + needle.len()..].chars().next();
        !next.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The inline code spans of a Markdown text, fenced blocks left out.
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push(span.to_string());
        }
    }
    spans
}

fn looks_like_path(span: &str) -> bool {
    const EXTENSIONS: [&str; 10] = [".rs", ".md", ".sh", ".py", ".toml", ".yml", ".yaml", ".ops", ".json", ".c"];
    let charset = span.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
    // `.ops`, `.rs`: an extension, not a file.
    let extension_alone = span.starts_with('.') && !span.contains('/');
    charset
        && !extension_alone
        && !span.starts_with('-')
        && (EXTENSIONS.iter().any(|ext| span.ends_with(ext)) || (span.contains('/') && span.ends_with('/')))
}

/// `Type::item`: a type of this code and one of its items.
fn as_item(span: &str) -> Option<(&str, &str)> {
    let (ty, item) = span.split_once("::")?;
    let ident = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    (ty.starts_with(char::is_uppercase) && ident(ty) && ident(item)).then_some((ty, item))
}

/// Every stale name in `text` (a document called `doc`).
fn stale_names(tree: &Tree, doc: &str, text: &str, makefile: &str, cli: &str) -> Vec<String> {
    let mut stale = Vec::new();
    for span in code_spans(text) {
        if looks_like_path(&span) {
            if !tree.has_path(&span) && !MADE_BY_A_RUN.contains(&span.as_str()) {
                stale.push(format!("{doc}: `{span}` is no file or folder of this checkout"));
            }
        } else if let Some((ty, item)) = as_item(&span) {
            if EXTERNAL_TYPES.contains(&ty) {
                continue;
            }
            if !tree.defines_type(ty) {
                stale.push(format!("{doc}: `{span}`: no type {ty} is defined here"));
            } else if !tree.has_item(ty, item) {
                stale.push(format!("{doc}: `{span}`: {ty} has no {item}"));
            }
        } else if let Some(target) = span.strip_prefix("make ").and_then(|rest| rest.split_whitespace().next()) {
            if !makefile.lines().any(|line| line.starts_with(&format!("{target}:"))) {
                stale.push(format!("{doc}: `{span}`: the Makefile has no target {target}"));
            }
        } else if let Some(flag) = span.strip_prefix("--").and_then(|rest| rest.split([' ', '=']).next()) {
            let field = flag.replace('-', "_");
            let known = cli.contains(&format!("--{flag}")) || contains_word(cli, &format!("{field}:"));
            if !flag.is_empty() && flag.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !known {
                stale.push(format!("{doc}: `{span}`: no command line here takes --{flag}"));
            }
        }
    }
    stale.extend(wrong_line_counts(tree, doc, text));
    stale
}

/// A file named in backticks and then, within the same sentence, "N lines":
/// N must be the file's line count.
fn wrong_line_counts(tree: &Tree, doc: &str, text: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for (at, _) in text.match_indices(" lines") {
        let before = &text[at.saturating_sub(80)..at];
        let Some(count) = before.rsplit(|c: char| !c.is_ascii_digit() && c != ',').next() else { continue };
        let Ok(quoted) = count.replace(',', "").parse::<usize>() else { continue };
        let Some(span) = before.rsplit('`').nth(1).filter(|span| looks_like_path(span)) else { continue };
        let actual = tree.file_lines(span);
        if !actual.is_empty() && !actual.contains(&quoted) {
            wrong.push(format!("{doc}: `{span}` is quoted as {quoted} lines; it has {actual:?}"));
        }
    }
    wrong
}

/// Every flag any command line of this repository declares, as text: the
/// sources of the command lines and the scripts that pass flags on.
fn cli_text(tree: &Tree) -> String {
    let mut text = String::new();
    for (path, source) in &tree.rust {
        if path.contains("/cli")
            || path.contains("examples/")
            || path.starts_with("simkit/")
            || path.starts_with("simtrace/")
        {
            text.push_str(source);
        }
    }
    for script in tree.paths.iter().filter(|p| p.ends_with(".sh") || p.as_str() == "Makefile") {
        text.push_str(&std::fs::read_to_string(tree.root.join(script)).unwrap_or_default());
    }
    text
}

#[test]
fn every_name_the_docs_give_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tree = Tree::of(root);
    let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
    let cli = cli_text(&tree);
    let mut stale = Vec::new();
    for doc in DOCS {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        stale.extend(stale_names(&tree, doc, &text, &makefile, &cli));
    }
    assert!(stale.is_empty(), "{} stale names in the docs:\n{}", stale.len(), stale.join("\n"));
}

/// The check can fail: a made-up document naming a file, an item, a make
/// target, a flag and a line count that are not there.
#[test]
fn a_name_that_is_not_there_is_reported() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tree = Tree::of(root);
    let makefile = "test:\n\tcargo test\n";
    let cli = "#[arg(long)] fs: String";
    let doc = "See `sim/src/main.rs` and `sim/src/nothing_here.rs`, `Loop::power_loss` and `Driver::power_loss`, \
               `make test` and `make nothing`, `--fs` and `--no-such-flag`; `engine/src/phase.rs` (3 lines).";
    let stale = stale_names(&tree, "made-up", doc, makefile, cli);
    let expected = [
        "`sim/src/nothing_here.rs` is no file",
        "`Driver::power_loss`: Driver has no power_loss",
        "no target nothing",
        "--no-such-flag",
        "`engine/src/phase.rs` is quoted as 3 lines",
    ];
    for needle in expected {
        assert!(stale.iter().any(|s| s.contains(needle)), "not reported: {needle}\n{stale:#?}");
    }
    assert_eq!(stale.len(), expected.len(), "{stale:#?}");
}
