//! A persistence hazard names its file by identity (`hazards.rs`): the
//! names the file bore when it was fsynced under a name not durable stay
//! with the hazard when a later rename moves the file away, or puts
//! another file in its place, before the hazard is found.

use vfs::{OpenMode, Vfs};

use super::{dir, disk, path};
use crate::disk::{CrashMode, Hazard, HazardHow, SimVfs};

/// A fresh disk where `name` was created, written and fsynced with no
/// directory fsync: a file whose data is durable under a name that is not.
fn fsynced_under_a_new_name(name: &str) -> SimVfs {
    let vfs = disk(CrashMode::Strict, 512);
    vfs.begin_op(1);
    let mut file = vfs.open(&path(name), OpenMode::Create).unwrap();
    file.write_at(0, b"undo").unwrap();
    file.sync().unwrap();
    vfs
}

/// The one hazard the operation ended with.
fn the_hazard(vfs: &SimVfs) -> Hazard {
    let hazards = vfs.end_op_hazards();
    assert_eq!(hazards.len(), 1, "{hazards:?}");
    hazards.into_iter().next().expect("one")
}

#[test]
fn a_file_renamed_away_is_named_by_both_names() {
    let vfs = fsynced_under_a_new_name("t-journal");
    vfs.rename(&path("t-journal"), &path("t-old")).unwrap();
    let hazard = the_hazard(&vfs);
    assert_eq!(hazard.how, HazardHow::Acknowledged);
    assert_eq!(hazard.file, "/db/t-old", "its name now");
    assert_eq!(hazard.names, ["/db/t-journal", "/db/t-old"], "the name it was fsynced under first");
    assert!(hazard.describe().starts_with("/db/t-old (earlier /db/t-journal): fsynced"), "{}", hazard.describe());
}

#[test]
fn a_file_another_rename_replaced_keeps_the_name_it_lost() {
    let vfs = fsynced_under_a_new_name("t-journal");
    let mut other = vfs.open(&path("t-next"), OpenMode::Create).unwrap();
    other.write_at(0, b"new").unwrap();
    vfs.rename(&path("t-next"), &path("t-journal")).unwrap();
    let hazards = vfs.end_op_hazards();
    let replaced: Vec<&Hazard> = hazards.iter().filter(|h| h.how == HazardHow::Acknowledged).collect();
    assert_eq!(replaced.len(), 1, "{hazards:?}");
    assert!(replaced[0].file.starts_with("inode "), "nothing names it now: {:?}", replaced[0]);
    assert_eq!(replaced[0].names, ["/db/t-journal"]);
    let renamed = hazards.iter().find(|h| h.how == HazardHow::RenamedAcknowledged).expect("the pending rename");
    assert_eq!(renamed.file, "/db/t-journal");
    assert_eq!(renamed.names, ["/db/t-journal", "/db/t-next"], "the rename's both names");
}

#[test]
fn a_directory_fsync_before_the_end_leaves_no_hazard_to_name() {
    let vfs = fsynced_under_a_new_name("t-journal");
    vfs.rename(&path("t-journal"), &path("t-old")).unwrap();
    vfs.sync_dir(dir()).unwrap();
    assert!(vfs.end_op_hazards().is_empty());
}

/// FJALL.md, finding 4 (seed 835): a temp file written and fsynced, its
/// rename into place failed, and unlinked: the program threw it away, so
/// no name of it is waited for, and the operation's end is no hazard. The
/// same file left in place is one. (Until that finding, a file created
/// and unlinked, both pending, stayed a hazard at the operation's end.)
#[test]
fn a_file_created_then_unlinked_both_pending_is_no_hazard() {
    let vfs = fsynced_under_a_new_name(".tmpAbc123");
    vfs.unlink(&path(".tmpAbc123")).unwrap();
    assert_eq!(vfs.end_op_hazards(), Vec::new());
    let kept = fsynced_under_a_new_name(".tmpAbc123");
    assert_eq!(the_hazard(&kept).how, HazardHow::Acknowledged);
}
