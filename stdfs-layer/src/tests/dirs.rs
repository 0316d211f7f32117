//! Directories removed and renamed: `fs::remove_dir`, `fs::remove_dir_all`
//! (std's `openat`/`fdopendir`/`unlinkat` walk) and `fs::rename` of a
//! directory served on the simulated disk, durable at the parent's fsync
//! and not before; the kernel's errors answered; a move into another
//! directory (libc's `rename` and `renameat2`, rustix's raw `renameat`)
//! served, durable at either parent's fsync; the same calls on a real
//! directory from a run thread refused, the real directory untouched.

use std::fs::{self, File};
use std::path::Path;
use std::sync::Arc;

use simulator::disk::SimVfs;

use crate::demo::strict_disk;
use crate::session;

/// `/sim-db/db/tmp` holding `a` and `sub/b`, every name and byte durable.
fn durable_tree() {
    fs::create_dir_all("/sim-db/db/tmp/sub").unwrap();
    for (path, bytes) in [("/sim-db/db/tmp/a", b"A"), ("/sim-db/db/tmp/sub/b", b"B")] {
        let file = File::create(path).unwrap();
        std::io::Write::write_all(&mut &file, bytes).unwrap();
        file.sync_all().unwrap();
        File::open(Path::new(path).parent().unwrap()).unwrap().sync_all().unwrap();
    }
}

/// Power loss, then the engine's next open: a fresh session, as the
/// layer's worker starts one per open (the session's directory names
/// are learnt anew; a crash may have brought a removed one back).
fn crash(disk: &Arc<SimVfs>, guard: session::SessionGuard, seed: u64) -> session::SessionGuard {
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
    drop(guard);
    disk.power_loss(seed);
    session::install(disk.clone(), &[Path::new("/db")], 0, None)
}

fn sync_dir(path: &str) {
    File::open(path).unwrap().sync_all().unwrap();
}

#[test]
fn remove_dir_is_served_and_durable_at_the_parents_fsync() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::create_dir("/sim-db/db/gone").unwrap();
    fs::create_dir("/sim-db/db/kept").unwrap();
    fs::remove_dir("/sim-db/db/gone").unwrap();
    assert_eq!(fs::metadata("/sim-db/db/gone").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    let guard = crash(&disk, guard, 1);
    assert!(fs::metadata("/sim-db/db/gone").unwrap().is_dir(), "no parent fsync: the removal is lost");
    fs::remove_dir("/sim-db/db/gone").unwrap();
    sync_dir("/sim-db/db");
    let guard = crash(&disk, guard, 2);
    assert_eq!(fs::metadata("/sim-db/db/gone").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    assert!(fs::metadata("/sim-db/db/kept").unwrap().is_dir());
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn remove_dir_answers_the_kernels_errors() {
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::create_dir("/sim-db/db/full").unwrap();
    fs::write("/sim-db/db/full/f", b"f").unwrap();
    fs::create_dir("/sim-db/db/parent").unwrap();
    fs::create_dir("/sim-db/db/parent/child").unwrap();
    let errno = |path: &str| fs::remove_dir(path).unwrap_err().raw_os_error();
    assert_eq!(errno("/sim-db/db/none"), Some(libc::ENOENT));
    assert_eq!(errno("/sim-db/db/full/f"), Some(libc::ENOTDIR));
    assert_eq!(errno("/sim-db/db/full"), Some(libc::ENOTEMPTY));
    assert_eq!(errno("/sim-db/db/parent"), Some(libc::ENOTEMPTY), "a subdirectory");
    assert!(guard.refusals().is_empty(), "the kernel's answers, not refusals: {:?}", guard.refusals());
}

#[test]
fn remove_dir_all_walks_and_removes_a_tree_on_the_simulated_disk() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    durable_tree();
    fs::create_dir("/sim-db/db/tmp/sub/deeper").unwrap();
    fs::write("/sim-db/db/tmp/sub/deeper/c", b"C").unwrap();
    fs::remove_dir_all("/sim-db/db/tmp").expect("served");
    assert_eq!(fs::metadata("/sim-db/db/tmp").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    assert!(fs::read_dir("/sim-db/db").unwrap().next().is_none(), "nothing left");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
    let guard = crash(&disk, guard, 3);
    assert_eq!(fs::read("/sim-db/db/tmp/sub/b").unwrap(), b"B", "nothing synced: the whole tree is back");
    fs::remove_dir_all("/sim-db/db/tmp").unwrap();
    sync_dir("/sim-db/db");
    let guard = crash(&disk, guard, 4);
    assert_eq!(fs::metadata("/sim-db/db/tmp").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn a_directory_renamed_moves_whole_and_is_durable_at_the_parents_fsync() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    durable_tree();
    fs::create_dir("/sim-db/db/snap").unwrap();
    fs::rename("/sim-db/db/tmp", "/sim-db/db/snap").expect("an empty target is replaced");
    assert_eq!(fs::read("/sim-db/db/snap/sub/b").unwrap(), b"B");
    assert!(fs::metadata("/sim-db/db/snap/sub").unwrap().is_dir());
    assert_eq!(fs::metadata("/sim-db/db/tmp").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    let guard = crash(&disk, guard, 5);
    assert_eq!(fs::read("/sim-db/db/tmp/sub/b").unwrap(), b"B", "no parent fsync: back at the old name");
    assert!(fs::read_dir("/sim-db/db/snap").unwrap().next().is_none(), "and the empty snap with it");
    fs::rename("/sim-db/db/tmp", "/sim-db/db/snap").unwrap();
    sync_dir("/sim-db/db");
    let guard = crash(&disk, guard, 6);
    assert_eq!(fs::read("/sim-db/db/snap/a").unwrap(), b"A");
    assert_eq!(fs::metadata("/sim-db/db/tmp").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn a_directory_rename_answers_the_kernels_errors_and_serves_a_move() {
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    durable_tree();
    fs::create_dir("/sim-db/db/full").unwrap();
    fs::write("/sim-db/db/full/f", b"f").unwrap();
    let errno = |from: &str, to: &str| fs::rename(from, to).unwrap_err().raw_os_error();
    assert_eq!(errno("/sim-db/db/tmp", "/sim-db/db/full"), Some(libc::ENOTEMPTY));
    assert_eq!(errno("/sim-db/db/tmp", "/sim-db/db/full/f"), Some(libc::ENOTDIR));
    assert_eq!(errno("/sim-db/db/full/f", "/sim-db/db/tmp"), Some(libc::EISDIR));
    assert_eq!(errno("/sim-db/db/tmp", "/sim-db/db/tmp/sub/x"), Some(libc::EINVAL));
    assert!(guard.refusals().is_empty(), "the kernel's answers: {:?}", guard.refusals());
    fs::rename("/sim-db/db/tmp/sub", "/sim-db/db/full/sub").unwrap();
    assert_eq!(fs::read("/sim-db/db/full/sub/b").unwrap(), b"B", "moved into another directory");
    assert_eq!(fs::metadata("/sim-db/db/tmp/sub").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn removing_or_renaming_a_real_directory_from_a_run_thread_is_refused() {
    let real = tempfile::tempdir().unwrap();
    let tree = real.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("sub/f"), b"real").unwrap();
    fs::create_dir(real.path().join("empty")).unwrap();
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let refused = [
        fs::remove_dir(real.path().join("empty")).unwrap_err(),
        fs::remove_dir_all(&tree).unwrap_err(),
        fs::rename(&tree, real.path().join("moved")).unwrap_err(),
    ];
    for err in &refused {
        assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
    }
    let refusals = guard.refusals();
    assert!(!refusals.is_empty() && refusals.iter().all(|r| r.contains("a change outside /sim-db")), "{refusals:?}");
    drop(guard);
    assert_eq!(fs::read(tree.join("sub/f")).unwrap(), b"real", "the real tree untouched");
    assert!(real.path().join("empty").is_dir());
    assert!(!real.path().join("moved").exists());
}

#[test]
fn raw_rmdir_and_a_raw_directory_rename_are_served_as_their_libc_forms() {
    use rustix::fs::{AtFlags, CWD};
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let trapped_before = crate::interpose::raw_trap::trapped_here();
    durable_tree();
    fs::create_dir("/sim-db/db/empty").unwrap();
    rustix::fs::unlinkat(CWD, "/sim-db/db/empty", AtFlags::REMOVEDIR).expect("a raw unlinkat(AT_REMOVEDIR)");
    rustix::fs::renameat(CWD, "/sim-db/db/tmp", CWD, "/sim-db/db/snap").expect("a raw renameat of a directory");
    assert_eq!(fs::read("/sim-db/db/snap/sub/b").unwrap(), b"B");
    let listed: Vec<_> = fs::read_dir("/sim-db/db").unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(listed, ["snap"]);
    assert!(crate::interpose::raw_trap::trapped_here() - trapped_before >= 2, "both raw calls trapped");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

/// A file and a directory moved into another directory through libc's
/// `rename`, `renameat2` (`RENAME_NOREPLACE`) and rustix's raw
/// `renameat` (trapped): served on the disk, lost by a crash before
/// either parent's fsync, durable after the destination's.
#[test]
#[allow(unsafe_code)]
fn moves_across_directories_are_served_and_durable_at_a_parents_fsync() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    durable_tree();
    fs::create_dir("/sim-db/db/dst").unwrap();
    sync_dir("/sim-db/db");
    let moves = |guard| {
        fs::rename("/sim-db/db/tmp/a", "/sim-db/db/dst/a").unwrap();
        let (from, to) = (c"/sim-db/db/tmp/sub", c"/sim-db/db/dst/sub");
        let noreplace = libc::RENAME_NOREPLACE;
        // SAFETY: two NUL-terminated paths that outlive the call.
        let done = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), noreplace) };
        assert_eq!(done, 0, "renameat2: {}", std::io::Error::last_os_error());
        rustix::fs::rename("/sim-db/db/dst/a", "/sim-db/db/tmp/back").expect("a raw renameat, trapped");
        rustix::fs::rename("/sim-db/db/tmp/back", "/sim-db/db/dst/a").expect("and back again");
        assert_eq!(fs::read("/sim-db/db/dst/a").unwrap(), b"A");
        assert_eq!(fs::read("/sim-db/db/dst/sub/b").unwrap(), b"B");
        guard
    };
    let guard = crash(&disk, moves(guard), 3);
    assert_eq!(fs::read("/sim-db/db/tmp/a").unwrap(), b"A", "no fsync: the move is lost whole");
    assert_eq!(fs::read("/sim-db/db/tmp/sub/b").unwrap(), b"B");
    assert_eq!(fs::metadata("/sim-db/db/dst/sub").unwrap_err().raw_os_error(), Some(libc::ENOENT));
    let guard = moves(guard);
    sync_dir("/sim-db/db/dst");
    let guard = crash(&disk, guard, 4);
    assert_eq!(fs::read("/sim-db/db/dst/a").unwrap(), b"A", "the destination's fsync: durable");
    assert_eq!(fs::read("/sim-db/db/dst/sub/b").unwrap(), b"B");
    let tmp: Vec<_> = fs::read_dir("/sim-db/db/tmp").unwrap().map(|entry| entry.unwrap().file_name()).collect();
    assert!(tmp.is_empty(), "and gone from the source: {tmp:?}");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}
