//! `cargo test` replays the fuzz corpus on stable: every input in
//! `corpus/<target>/` and every fuzz crasher in `corpus/regressions/`
//! through the same function its cargo-fuzz target runs
//! (`sim::fuzzing::TARGETS`), each under `catch_unwind`, failing once with
//! every input that panicked named. The second test proves the replay can
//! fail: a deliberately broken target fed a known-bad input.

use std::fs;
use std::path::Path;

use sim::fuzzing::replay::{replay_corpus, REGRESSIONS_DIR};
use sim::fuzzing::{Target, TARGETS};

#[test]
fn every_corpus_input_and_fuzz_crasher_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let replay = replay_corpus(&root, &TARGETS).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    for (target, inputs) in &replay.inputs {
        assert!(*inputs > 0, "corpus/{target}/ is empty: run `make corpus`");
    }
    assert!(replay.failures.is_empty(), "fuzz inputs failing:\n{}", replay.report());
    eprintln!("replayed {} fuzz inputs: {:?}", replay.total_inputs(), replay.inputs);
}

/// A segment-length parser with the bug every parser here is written to
/// avoid: it slices by a length read from the bytes, unchecked.
fn broken_parser(data: &[u8]) {
    let Some(len) = data.first() else { return };
    let body = &data[1..1 + usize::from(*len)];
    assert!(body.len() <= 255);
}

#[test]
fn the_replay_fails_naming_every_input_that_panics() {
    let root = tempfile::tempdir().unwrap();
    let corpus = root.path();
    let broken = Target { name: "broken", run: broken_parser };
    fs::create_dir_all(corpus.join("broken")).unwrap();
    fs::create_dir_all(corpus.join(REGRESSIONS_DIR)).unwrap();
    fs::write(corpus.join("broken/fits"), [3, b'a', b'b', b'c']).unwrap();
    fs::write(corpus.join("broken/lies"), [200, b'a']).unwrap();
    fs::write(corpus.join(REGRESSIONS_DIR).join("broken-5f3a"), [9]).unwrap();
    fs::write(corpus.join(REGRESSIONS_DIR).join("broken-fixed"), [0]).unwrap();
    fs::write(corpus.join(REGRESSIONS_DIR).join("brokne-typo"), [0]).unwrap();
    fs::write(corpus.join(REGRESSIONS_DIR).join("seed-7.ops"), "not for this replay").unwrap();
    fs::write(corpus.join(REGRESSIONS_DIR).join("README.md"), "docs").unwrap();

    let replay = replay_corpus(corpus, &[broken]).unwrap();
    assert_eq!(replay.inputs, [("broken", 4)]);
    let failed: Vec<String> =
        replay.failures.iter().map(|f| f.path.strip_prefix(corpus).unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(failed, ["regressions/brokne-typo", "broken/lies", "regressions/broken-5f3a"], "{}", replay.report());
    assert!(replay.failures[1].message.contains("target broken") && replay.failures[1].message.contains("range"));
    assert!(replay.failures[0].message.contains("no fuzz target named \"brokne\""));

    // The same inputs through a correct parser: nothing fails.
    let fixed = Target {
        name: "broken",
        run: |data| {
            let _ = data.get(1..1 + usize::from(data[0]));
        },
    };
    let fixed_replay = replay_corpus(corpus, &[fixed]).unwrap();
    assert_eq!(fixed_replay.failures.len(), 1, "{}", fixed_replay.report());
}
