//! Names on the simulated disk: `canonicalize` (`realpath`), a working
//! directory per run (`chdir`, `getcwd`, relative paths, `..`),
//! `read_link` served; hard and symbolic links refused loudly; the same
//! calls on real names from a run thread refused, the real disk and the
//! process's working directory untouched.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::demo::strict_disk;
use crate::session;

/// The process's working directory as a thread serving no run sees it.
fn process_cwd() -> PathBuf {
    std::thread::spawn(|| std::env::current_dir().unwrap()).join().unwrap()
}

#[test]
fn canonicalize_and_a_working_directory_per_run_are_served() {
    let before = process_cwd();
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::create_dir("/sim-db/db/sub").unwrap();
    fs::write("/sim-db/db/f", b"f").unwrap();
    assert_eq!(fs::canonicalize("/sim-db/db/./sub/../f").unwrap(), Path::new("/sim-db/db/f"));
    assert_eq!(fs::canonicalize("/sim-db/db/sub/").unwrap(), Path::new("/sim-db/db/sub"));
    assert_eq!(fs::canonicalize("/sim-db/db/..").unwrap().as_os_str(), "/sim-db", "the root, no trailing `/`");
    assert_eq!(fs::canonicalize("/sim-db/db/missing").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(fs::canonicalize("/sim-db/db/f/..").unwrap_err().raw_os_error(), Some(libc::ENOTDIR));
    std::env::set_current_dir("/sim-db/db/sub").unwrap();
    assert_eq!(std::env::current_dir().unwrap(), Path::new("/sim-db/db/sub"));
    fs::write("rel", b"relative").unwrap();
    assert_eq!(fs::read("../f").unwrap(), b"f", "`..` from the run's directory");
    assert_eq!(fs::canonicalize("rel").unwrap(), Path::new("/sim-db/db/sub/rel"));
    let listed: Vec<_> = fs::read_dir(".").unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(listed, ["rel"]);
    assert_eq!(disk.files(Path::new("/db/sub"))["rel"], b"relative", "a relative write landed on the disk");
    assert_eq!(process_cwd(), before, "the process's directory did not move");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
    let climb = fs::canonicalize("/sim-db/..").unwrap_err();
    assert_eq!(climb.raw_os_error(), Some(libc::ENOTSUP));
    let refusals = guard.refusals();
    assert!(refusals.len() == 1 && refusals[0].contains("climbs out of /sim-db"), "{refusals:?}");
}

#[test]
fn links_under_the_root_fail_loudly_and_read_link_answers_as_the_kernel() {
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"f").unwrap();
    let hard = fs::hard_link("/sim-db/db/f", "/sim-db/db/g").unwrap_err();
    let soft = symlink("f", "/sim-db/db/s").unwrap_err();
    assert_eq!((hard.raw_os_error(), soft.raw_os_error()), (Some(libc::ENOTSUP), Some(libc::ENOTSUP)));
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals[0].contains("/sim-db/db/g") && refusals[0].contains("has no links"), "{refusals:?}");
    assert!(refusals[1].contains("/sim-db/db/s") && refusals[1].contains("has no symlinks"), "{refusals:?}");
    let not_a_link = fs::read_link("/sim-db/db/f").unwrap_err();
    assert_eq!(not_a_link.raw_os_error(), Some(libc::EINVAL), "the disk holds no symbolic link");
    assert_eq!(fs::read_link("/sim-db/db/none").unwrap_err().kind(), ErrorKind::NotFound);
    let across = fs::hard_link("/sim-db/db/f", std::env::temp_dir().join("stdfs-never")).unwrap_err();
    assert_eq!(across.raw_os_error(), Some(libc::EXDEV));
    assert!(guard.refusals().is_empty(), "answered as the kernel would, not refused");
}

#[test]
fn links_and_chdir_on_real_names_fail_loudly_on_a_run_thread() {
    let real = tempfile::tempdir().unwrap();
    let file = real.path().join("file");
    fs::write(&file, b"real").unwrap();
    let before = process_cwd();
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let refused = [
        fs::hard_link(&file, real.path().join("hard")).unwrap_err(),
        symlink(&file, real.path().join("soft")).unwrap_err(),
        std::env::set_current_dir(real.path()).unwrap_err(),
    ];
    for err in &refused {
        assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
    }
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), refused.len(), "{refusals:?}");
    assert_eq!(fs::canonicalize(&file).unwrap(), file.canonicalize().unwrap(), "a real path still resolves");
    drop(guard);
    assert_eq!(fs::read_dir(real.path()).unwrap().count(), 1, "no link reached the real disk");
    assert_eq!(process_cwd(), before);
}

#[test]
fn a_directory_an_earlier_run_made_is_learnt_where_a_call_names_it() {
    let disk = strict_disk();
    let earlier = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    fs::create_dir("/sim-db/db/sub").unwrap();
    fs::write("/sim-db/db/sub/f", b"f").unwrap();
    drop(earlier);
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    let parent: Vec<_> = fs::read_dir("/sim-db/db")
        .unwrap()
        .map(|e| e.map(|e| (e.file_name(), e.file_type().unwrap().is_dir())).unwrap())
        .collect();
    assert_eq!(parent, [("sub".into(), true)], "the earlier run's directory is in its parent's listing");
    assert!(fs::metadata("/sim-db/db/sub").unwrap().is_dir(), "stat, not EISDIR");
    let listed: Vec<_> = fs::read_dir("/sim-db/db/sub").unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(listed, ["f"], "opendir, not ENOTDIR");
    fs::create_dir("/sim-db/db/sub/deeper").unwrap();
    assert_eq!(fs::canonicalize("/sim-db/db/sub/deeper/..").unwrap(), Path::new("/sim-db/db/sub"));
    drop(guard);
    let guard = session::install(disk, &[Path::new("/db")], 0, None);
    fs::create_dir("/sim-db/db/sub/deeper/deepest").expect("mkdir under a directory of an earlier run");
    fs::rename("/sim-db/db/sub", "/sim-db/db/moved").expect("a directory of an earlier run renamed");
    assert!(fs::metadata("/sim-db/db/moved/deeper/deepest").unwrap().is_dir());
    fs::remove_dir("/sim-db/db/moved/deeper/deepest").expect("and removed under its new name");
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[allow(unsafe_code)]
#[test]
fn access_answers_for_existence() {
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"f").unwrap();
    let (there, missing) =
        (std::ffi::CString::new("/sim-db/db/f").unwrap(), std::ffi::CString::new("/sim-db/db/g").unwrap());
    // SAFETY: valid C strings.
    let (a, b) =
        unsafe { (libc::access(there.as_ptr(), libc::R_OK | libc::W_OK), libc::access(missing.as_ptr(), libc::F_OK)) };
    assert_eq!((a, b), (0, -1));
    assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOENT));
    assert!(guard.refusals().is_empty());
}
