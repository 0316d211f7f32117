//! `sim`: the simulator's command line. The harness itself is not built
//! yet; the binary says so and exits 2 rather than pretending to test.

fn main() {
    eprintln!("sim: the simulator is not built yet (see README.md); nothing was tested");
    std::process::exit(2);
}
