//! Metadata on the simulated disk: `chmod`/`fchmod` and
//! `utimensat`/`futimens` served into the session's record, times from
//! the seed's clock (never 1970, never the wall clock), the same in every
//! run; the same calls on real names from a run thread refused and the
//! real names untouched.

use std::fs::{self, File, FileTimes, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::demo::strict_disk;
use crate::entropy::CLOCK_START_S;
use crate::session;

/// What a program sees of `/sim-db/db/f` after writing it, changing its
/// modes and times, on a fresh thread of seed `seed`.
fn metadata_on_a_fresh_run(seed: u64) -> Vec<(u32, SystemTime, SystemTime)> {
    std::thread::spawn(move || {
        let guard = session::install(strict_disk(), &[Path::new("/db")], seed, None);
        let path = "/sim-db/db/f";
        let seen = |p: &str| {
            let m = fs::metadata(p).unwrap();
            (m.permissions().mode() & 0o7777, m.modified().unwrap(), m.accessed().unwrap())
        };
        fs::write(path, b"bytes").unwrap();
        let mut all = vec![seen(path)];
        let _ = std::time::Instant::now(); // the program reads its clock
        fs::set_permissions(path, Permissions::from_mode(0o600)).unwrap();
        all.push(seen(path));
        let file = File::options().write(true).open(path).unwrap();
        file.set_permissions(Permissions::from_mode(0o640)).unwrap();
        let set = UNIX_EPOCH + Duration::from_secs(1_234_567_890);
        file.set_times(FileTimes::new().set_modified(set).set_accessed(set + Duration::from_secs(1))).unwrap();
        all.push(seen(path));
        fs::create_dir("/sim-db/db/sub").unwrap();
        fs::set_permissions("/sim-db/db/sub", Permissions::from_mode(0o700)).unwrap();
        all.push(seen("/sim-db/db/sub"));
        fs::rename(path, "/sim-db/db/g").unwrap();
        all.push(seen("/sim-db/db/g"));
        assert!(guard.refusals().is_empty());
        all
    })
    .join()
    .unwrap()
}

#[test]
fn modes_and_times_are_served_from_the_seed_and_kept_for_the_session() {
    let start = UNIX_EPOCH + Duration::from_secs(CLOCK_START_S);
    let seen = metadata_on_a_fresh_run(3);
    assert_eq!(seen[0].0, 0o644, "a new file's default mode");
    assert!(seen[0].1 >= start, "a write's time is the seed clock's, not 1970: {:?}", seen[0].1);
    assert_eq!(seen[1].0, 0o600, "chmod of a path is kept");
    assert_eq!(seen[2].0, 0o640, "fchmod of a descriptor is kept");
    let set = UNIX_EPOCH + Duration::from_secs(1_234_567_890);
    assert_eq!((seen[2].1, seen[2].2), (set, set + Duration::from_secs(1)), "futimens' times are kept");
    assert_eq!(seen[3].0, 0o700, "a directory's mode is kept");
    assert_eq!(seen[4], seen[2], "a rename carries the name's metadata");
    assert_eq!(seen, metadata_on_a_fresh_run(3), "the same seed reports the same modes and times");
    assert!(seen[0].1 < SystemTime::now() - Duration::from_secs(86_400 * 365), "not the wall clock");
}

#[allow(unsafe_code)]
fn utimensat_now(path: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; null times mean "now".
    let done = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), std::ptr::null(), 0) };
    if done != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[test]
fn mode_and_time_changes_of_real_names_fail_loudly_on_a_run_thread() {
    let real = tempfile::tempdir().unwrap();
    let path = real.path().join("real-file");
    fs::write(&path, b"real").unwrap();
    fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    let before = fs::metadata(&path).unwrap();
    let opened = File::open(&path).unwrap();
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    let refused = [
        fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap_err(),
        opened.set_permissions(Permissions::from_mode(0o600)).unwrap_err(),
        opened.set_modified(UNIX_EPOCH).unwrap_err(),
        utimensat_now(&path).unwrap_err(),
    ];
    for err in &refused {
        assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{err}");
    }
    let refusals = guard.refusals();
    assert_eq!(refusals.len(), refused.len(), "{refusals:?}");
    assert!(refusals.iter().all(|r| r.contains("a change outside /sim-db")), "{refusals:?}");
    drop(guard);
    let after = fs::metadata(&path).unwrap();
    assert_eq!(after.permissions().mode(), before.permissions().mode(), "the real mode is untouched");
    assert_eq!(after.modified().unwrap(), before.modified().unwrap(), "the real times are untouched");
}

#[allow(unsafe_code)]
#[test]
fn the_older_utimes_and_futimes_are_served_too() {
    let guard = session::install(strict_disk(), &[Path::new("/db")], 0, None);
    fs::write("/sim-db/db/f", b"f").unwrap();
    let path = std::ffi::CString::new("/sim-db/db/f").unwrap();
    let times = [libc::timeval { tv_sec: 1, tv_usec: 0 }, libc::timeval { tv_sec: 2, tv_usec: 500 }];
    // SAFETY: a valid C string and two `timeval`s.
    assert_eq!(unsafe { libc::utimes(path.as_ptr(), times.as_ptr()) }, 0);
    let m = fs::metadata("/sim-db/db/f").unwrap();
    assert_eq!(m.accessed().unwrap(), UNIX_EPOCH + Duration::from_secs(1));
    assert_eq!(m.modified().unwrap(), UNIX_EPOCH + Duration::from_micros(2_000_500));
    let file = File::open("/sim-db/db/f").unwrap();
    // SAFETY: a valid descriptor; null times mean "now", the seed's clock.
    assert_eq!(unsafe { libc::futimes(std::os::unix::io::AsRawFd::as_raw_fd(&file), std::ptr::null()) }, 0);
    assert!(file.metadata().unwrap().modified().unwrap() >= UNIX_EPOCH + Duration::from_secs(CLOCK_START_S));
    assert!(guard.refusals().is_empty());
}
