//! `mmap` of a simulated descriptor: a read-only map (`PROT_READ`, shared
//! or private) is served as memory holding the file's bytes as a read
//! returns them, kept coherent with the process's later writes through
//! the layer (`interpose::maps`, `crate::watch`). A private writable map
//! is served as a private copy (never written back, not updated). A
//! writable shared map is refused: the layer cannot see a store to
//! memory, so it would never reach the simulated disk; unless the file
//! is declared volatile (`crate::volatile`: a lock file), when it is
//! served as memory every map of the file shares and no crash keeps
//! (`interpose::maps::create_shared`). So is what no
//! engine needs and the layer could not serve faithfully (`PROT_EXEC`,
//! huge pages, locked or stack maps).
//!
//! The map's bytes are read from the disk when it is made (one `len` and
//! one read of the disk, traced like any other): a read that fails fails
//! the `mmap` with the read's error, where a kernel would map and raise
//! `SIGBUS` at the first touch of the page it could not read.

use simkit::vfs::VfsFile;

use crate::errno::Errno;
use crate::files::Target;
use crate::interpose::maps::{self, page_up, MapRecord, PAGE_BYTES};
use crate::session::{refuse, with_fd};
use crate::watch;

/// An `mmap` call's arguments (the descriptor aside).
pub struct Request {
    /// The address asked for (a hint, or the place with `MAP_FIXED`).
    pub hint: usize,
    pub len_bytes: usize,
    pub prot: i32,
    pub flags: i32,
    pub offset_bytes: i64,
}

/// The `mmap` flags served beside the map's type: where it goes, and
/// hints that change nothing a program can read.
const SERVED_FLAGS: i32 = libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE | libc::MAP_POPULATE | libc::MAP_NORESERVE;
/// The map's type (`MAP_SHARED`, `MAP_PRIVATE`, `MAP_SHARED_VALIDATE`).
const MAP_TYPE: i32 = 0x0f;

/// `mmap(hint, len, prot, flags, fd, offset)`: the map's address.
pub fn mmap(fd: i32, request: &Request) -> Result<usize, Errno> {
    with_fd(fd, "mmap", |s| {
        let slot = s.slot;
        let d = s.fds.get(fd)?;
        let path = d.disk_path.clone();
        let shared = match request.flags & MAP_TYPE {
            libc::MAP_SHARED | libc::MAP_SHARED_VALIDATE => true,
            libc::MAP_PRIVATE => false,
            _ => return Err(Errno::EINVAL),
        };
        let offset_bytes = u64::try_from(request.offset_bytes).map_err(|_| Errno::EINVAL)?;
        if request.len_bytes == 0 || offset_bytes % PAGE_BYTES as u64 != 0 {
            return Err(Errno::EINVAL);
        }
        let writes = request.prot & libc::PROT_WRITE != 0;
        let volatile = shared && writes && crate::volatile::is_volatile(&path);
        if let Some(why) = unserved(request, shared, volatile) {
            let what = format!("mmap of {} (simulated fd {fd}): {why}", path.display());
            return Err(refuse(Some(slot), Errno::ENODEV, what));
        }
        if !d.access.read || (shared && request.prot & libc::PROT_WRITE != 0 && !d.access.write) {
            return Err(Errno(libc::EACCES));
        }
        let Target::File(file) = &mut d.target else { return Err(Errno::ENODEV) };
        let Some(file_id) = watch::file_of(file.as_ref()) else {
            let what = format!("mmap of {} (simulated fd {fd}): the layer does not know its file", path.display());
            return Err(refuse(Some(slot), Errno::EIO, what));
        };
        let file_len_bytes = file.len()?;
        let len_bytes = usize::try_from(page_up(request.len_bytes as u64)).map_err(|_| Errno(libc::ENOMEM))?;
        let coherent = !writes;
        let record =
            MapRecord { len_bytes, file: file_id, offset_bytes, coherent, poisoned: false, volatile, slot, path };
        let fixed = request.flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE);
        let file: &dyn VfsFile = file.as_ref();
        if volatile {
            return maps::create_shared(request.hint, fixed, record, file_len_bytes, |from, memory| {
                fill(file, from, file_len_bytes, memory)
            });
        }
        maps::create(request.hint, fixed, record, file_len_bytes, |memory| {
            fill(file, offset_bytes, file_len_bytes, memory)
        })
    })
}

/// Why the layer does not serve `request`, if it does not.
fn unserved(request: &Request, shared: bool, volatile: bool) -> Option<String> {
    let other_flags = request.flags & !(MAP_TYPE | SERVED_FLAGS);
    if other_flags != 0 {
        return Some(format!("flags {other_flags:#x} (huge pages, locked, stack or sync maps) are not served"));
    }
    let prot = request.prot;
    if prot & libc::PROT_READ == 0 || prot & !(libc::PROT_READ | libc::PROT_WRITE) != 0 {
        return Some(format!(
            "protection {prot:#x}: only PROT_READ, and PROT_READ|PROT_WRITE on a private map, are served"
        ));
    }
    if shared && prot & libc::PROT_WRITE != 0 && !volatile {
        return Some(
            "a writable shared map: the layer sees no store to memory, so none would reach the simulated disk \
             (a lock file whose stores no crash need keep can be declared volatile: stdfs_layer::declare_volatile)"
                .to_string(),
        );
    }
    None
}

/// The file's bytes from `offset_bytes` into `memory`, as far as the file
/// reaches; the rest stays zeros.
fn fill(file: &dyn VfsFile, offset_bytes: u64, file_len_bytes: u64, memory: &mut [u8]) -> Result<(), Errno> {
    let want = file_len_bytes.saturating_sub(offset_bytes).min(memory.len() as u64) as usize;
    let mut done = 0;
    while done < want {
        match file.read_at(offset_bytes + done as u64, &mut memory[done..want])? {
            0 => break,
            n => done += n,
        }
    }
    Ok(())
}
