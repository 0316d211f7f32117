//! `make corpus`: rewrite the fuzz seed corpus, `corpus/<target>/`, from
//! what the engine writes (see `sim::fuzzing::corpus`).
//!
//! ```sh
//! cargo run -p sim --example fuzz_corpus -- [CORPUS_DIR]   # default: corpus
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".to_string()));
    let inputs = match sim::fuzzing::corpus::write_corpus(&root) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("fuzz_corpus: writing {}: {e}", root.display());
            return ExitCode::FAILURE;
        }
    };
    for target in sim::fuzzing::TARGETS {
        let mine: Vec<_> = inputs.iter().filter(|input| input.target == target.name).collect();
        let bytes: usize = mine.iter().map(|input| input.bytes.len()).sum();
        println!("{}/{}: {} inputs, {bytes} bytes", root.display(), target.name, mine.len());
    }
    ExitCode::SUCCESS
}
