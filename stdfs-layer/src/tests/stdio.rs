//! stdio's `FILE`s, `mkstemp`'s names, the seed's wall clock and
//! `F_SETFL` on the layer's files, in a session of this process (the
//! preloaded program's uses of them are `make live`'s: LIVE.md).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::path::Path;

use crate::demo::strict_disk;
use crate::session;

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

#[test]
fn fopen_makes_a_stream_on_the_disk_whose_fileno_is_served() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    // SAFETY: valid C strings; the stream is used and closed here only.
    unsafe {
        let f = libc::fopen(c("/sim-db/db/conf").as_ptr(), c("w").as_ptr());
        assert!(!f.is_null(), "fopen for writing under the root");
        let fd = libc::fileno(f);
        assert!(session::is_fake_fd(fd), "fileno answers the layer's descriptor: {fd}");
        assert_eq!(libc::fputs(c("key = value\n").as_ptr(), f), 1);
        assert_eq!(libc::fflush(f), 0);
        assert_eq!(libc::fsync(fd), 0, "fsync(fileno(f)) is served");
        assert_eq!(libc::fclose(f), 0);
    }
    assert_eq!(disk.files(Path::new("/db"))["conf"], b"key = value\n");
    // SAFETY: as above.
    unsafe {
        let f = libc::fopen(c("/sim-db/db/conf").as_ptr(), c("r").as_ptr());
        assert!(!f.is_null());
        let mut line = [0 as libc::c_char; 64];
        assert!(!libc::fgets(line.as_mut_ptr(), 64, f).is_null());
        assert_eq!(CStr::from_ptr(line.as_ptr()).to_bytes(), b"key = value\n");
        assert!(libc::fgets(line.as_mut_ptr(), 64, f).is_null(), "then the end");
        assert_eq!(libc::fseek(f, 6, libc::SEEK_SET), 0);
        assert_eq!(libc::fgetc(f), i32::from(b'v'), "a seek is served");
        assert_eq!(libc::fclose(f), 0);
        let missing = libc::fopen(c("/sim-db/db/none").as_ptr(), c("r").as_ptr());
        assert!(missing.is_null() && *libc::__errno_location() == libc::ENOENT);
    }
    assert!(guard.refusals().is_empty(), "{:?}", guard.refusals());
}

#[test]
fn mkstemp_under_the_root_names_the_file_from_the_seed() {
    let names: Vec<String> = (0..2)
        .map(|_| {
            let disk = strict_disk();
            let guard = session::install(disk.clone(), &[Path::new("/db")], 7, None);
            let mut template = *b"/sim-db/db/tmp_XXXXXX\0";
            // SAFETY: a writable NUL-terminated template.
            let fd = unsafe { libc::mkstemp(template.as_mut_ptr().cast()) };
            assert!(session::is_fake_fd(fd), "a simulated descriptor: {fd}");
            // SAFETY: the descriptor just opened.
            assert_eq!(unsafe { libc::close(fd) }, 0);
            let name = String::from_utf8(template[..template.len() - 1].to_vec()).unwrap();
            assert!(!name.ends_with("XXXXXX"), "{name}");
            let file = name.strip_prefix("/sim-db/db/").unwrap();
            assert!(disk.files(Path::new("/db")).contains_key(file), "the disk holds {file}");
            assert!(guard.refusals().is_empty());
            name
        })
        .collect();
    assert_eq!(names[0], names[1], "one seed, one name");
}

#[test]
fn gettimeofday_and_time_read_the_seeds_clock() {
    let disk = strict_disk();
    let guard = session::install(disk, &[Path::new("/db")], 0, None);
    let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
    // SAFETY: a valid `timeval`, no time zone.
    assert_eq!(unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) }, 0);
    // SAFETY: a null `time_t` pointer is allowed.
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    let start = crate::entropy::CLOCK_START_S as libc::time_t;
    assert_eq!(tv.tv_sec, start, "the virtual clock, not the wall's");
    assert_eq!(now, start);
    assert!(guard.refusals().is_empty());
}

#[test]
fn f_setfl_sets_o_append_and_refuses_o_direct() {
    let disk = strict_disk();
    let guard = session::install(disk.clone(), &[Path::new("/db")], 0, None);
    // SAFETY: a valid C string and plain flags; the descriptor is closed here.
    unsafe {
        let fd = libc::open(c("/sim-db/db/log").as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK, 0o644);
        assert!(fd >= 0);
        assert_eq!(libc::write(fd, b"ab".as_ptr().cast(), 2), 2);
        assert_eq!(libc::lseek(fd, 0, libc::SEEK_SET), 0);
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_APPEND), 0);
        assert_eq!(libc::fcntl(fd, libc::F_GETFL) & libc::O_APPEND, libc::O_APPEND);
        assert_eq!(libc::write(fd, b"c".as_ptr().cast(), 1), 1, "lands at the end, not at 0");
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, libc::O_DIRECT), -1, "O_DIRECT is not served");
        assert_eq!(libc::close(fd), 0);
    }
    assert_eq!(disk.files(Path::new("/db"))["log"], b"abc");
    assert_eq!(guard.refusals().len(), 1, "the O_DIRECT request: {:?}", guard.refusals());
}
