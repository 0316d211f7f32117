//! The demonstration program: plain `std::fs` code that knows nothing of
//! the layer (create, write, fsync, rename, directory fsync, listing,
//! stat, unlink), run on a simulated disk under the root, then a power
//! loss, then the program's own reads of what survived.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use simulator::disk::{CrashMode, DiskConfig, SimVfs};
use simulator::trace::Trace;

use crate::session::{self, ROOT};

/// The store directory the program works in, as the program names it.
pub const DB: &str = "/sim-db/db";

/// A fault-free disk (power loss keeps nothing unsynced) with `/db` on it.
pub fn strict_disk() -> Arc<SimVfs> {
    let disk = Arc::new(SimVfs::new(DiskConfig::fault_free(CrashMode::Strict, 512), Trace::new(false)));
    simkit::vfs::Vfs::create_dir_all(disk.as_ref(), Path::new("/db")).expect("a fault-free disk makes /db");
    disk
}

/// The program: `kept` written, fsynced, renamed in and its directory
/// fsynced; `unsynced` written and never synced; `gone` made and
/// unlinked; a listing and a stat along the way. Returns the listing.
pub fn program(db: &Path) -> io::Result<Vec<String>> {
    let mut file = File::create(db.join("kept.tmp"))?;
    file.write_all(b"durable bytes")?;
    file.sync_all()?;
    drop(file);
    fs::rename(db.join("kept.tmp"), db.join("kept"))?;
    File::open(db)?.sync_all()?;
    fs::write(db.join("unsynced"), b"volatile bytes")?;
    fs::write(db.join("gone"), b"x")?;
    fs::remove_file(db.join("gone"))?;
    fs::create_dir(db.join("sub"))?;
    let len_bytes = fs::metadata(db.join("kept"))?.len();
    assert_eq!(len_bytes, 13, "stat serves the length");
    let mut names = Vec::new();
    for entry in fs::read_dir(db)? {
        let entry = entry?;
        let kind = if entry.file_type()?.is_dir() { "/" } else { "" };
        names.push(format!("{}{kind} ({} bytes)", entry.file_name().to_string_lossy(), entry.metadata()?.len()));
    }
    Ok(names)
}

/// What the program reads back after the power loss: each name it wrote,
/// with its content or the error.
pub fn read_back(db: &Path) -> Vec<String> {
    ["kept", "unsynced", "kept.tmp"]
        .iter()
        .map(|name| match fs::read(db.join(name)) {
            Ok(bytes) => format!("{name}: {:?}", String::from_utf8_lossy(&bytes)),
            Err(e) => format!("{name}: {e}"),
        })
        .collect()
}

/// Run the program on a strict disk, cut the power, read back: a report.
pub fn run_and_cut_power() -> Result<String, String> {
    let disk = strict_disk();
    let guard = crate::install(disk.clone(), &[Path::new("/db")], 0, None);
    let listing = program(Path::new(DB)).map_err(|e| format!("the program failed: {e}"))?;
    disk.power_loss(1);
    let after = read_back(Path::new(DB));
    let mut refusals = guard.refusals();
    refusals.extend(session::orphan_refusals());
    let mut report = format!("{ROOT}: the program listed {DB} as {listing:?}\nafter a power loss:\n");
    for line in after {
        report.push_str(&format!("  {line}\n"));
    }
    if !refusals.is_empty() {
        return Err(format!("the layer refused: {refusals:?}"));
    }
    Ok(report)
}
