//! One open file of the VFS: where its bytes live (on the simulated disk,
//! or in memory for the files os_unix would unlink at once), `xOpen`, which
//! makes one, and the `sqlite3_io_methods` SQLite calls on it — read,
//! write, truncate, sync (os_unix's directory fsync at a new journal's
//! first sync included), size, sector size, device characteristics,
//! close. The module doc of `vfs.rs` says what each mirrors of
//! `os_unix.c`; the lock and shared-memory methods are `locking.rs`'s.
//! Apart from the VFS itself (`vfs.rs`: registration, the connection's
//! context, the calls that take no file) because this is the part SQLite
//! reaches through a file handle.

// SQLite calls these through C pointers, as the rest of the VFS
// (`vfs.rs` says why the crate allows `unsafe` here).
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::io;
use std::path::PathBuf;
use std::ptr;

use libsqlite3_sys as ffi;
use vfs::{OpenMode, VfsFile};

use super::locking;
use super::{guarded, parent, path_of, vfs_context, with_file, VfsContext, VfsPlant};

/// The file methods SQLite calls on an open [`SimFile`] (version 2:
/// shared memory; no memory mapping).
static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(locking::x_lock),
    xUnlock: Some(locking::x_unlock),
    xCheckReservedLock: Some(locking::x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(locking::x_shm_map),
    xShmLock: Some(locking::x_shm_lock),
    xShmBarrier: Some(locking::x_shm_barrier),
    xShmUnmap: Some(locking::x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

/// What SQLite allocates `szOsFile` bytes for: the base struct first, as
/// SQLite requires, then a pointer to the state Rust owns.
#[repr(C)]
pub(super) struct SimFile {
    base: ffi::sqlite3_file,
    pub(super) state: *mut FileState,
}

/// Where an open file's bytes live.
enum Bytes {
    Disk(Box<dyn VfsFile>),
    Memory(Vec<u8>),
}

/// One open file.
pub(super) struct FileState {
    bytes: Bytes,
    pub(super) path: PathBuf,
    pub(super) context: *const VfsContext,
    /// The id its locks are held under in the process's [`Shared`].
    pub(super) handle: u64,
    /// The lock level SQLite holds (`SQLITE_LOCK_*`) on a file in memory
    /// (a file on disk holds its locks in [`Shared`]).
    pub(super) lock: c_int,
    /// os_unix's `UNIXFILE_DIRSYNC`: fsync the directory at the first sync.
    dir_sync_pending: bool,
    /// `VfsPlant::LateTruncate`: a length applied after the next sync.
    late_truncate: Option<u64>,
}

impl FileState {
    /// Whether the file lives on the disk (not in memory).
    pub(super) fn on_disk(&self) -> bool {
        matches!(self.bytes, Bytes::Disk(_))
    }

    pub(super) fn context(&self) -> &VfsContext {
        // SAFETY: the context outlives every file of its connection (the
        // adapter closes the connection before dropping the VFS).
        unsafe { &*self.context }
    }

    fn len(&self) -> io::Result<u64> {
        let len = match &self.bytes {
            Bytes::Disk(file) => file.len()?,
            Bytes::Memory(bytes) => bytes.len() as u64,
        };
        Ok(self.late_truncate.map_or(len, |cut| len.min(cut)))
    }

    /// Read into `out` at `offset`: how many bytes there were.
    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<usize> {
        let limit = self.len()?.saturating_sub(offset).min(out.len() as u64) as usize;
        match &self.bytes {
            Bytes::Disk(file) => {
                let mut done = 0;
                while done < limit {
                    let n = file.read_at(offset + done as u64, &mut out[done..limit])?;
                    if n == 0 {
                        break;
                    }
                    done += n;
                }
                Ok(done)
            }
            Bytes::Memory(bytes) => {
                let start = offset as usize;
                out[..limit].copy_from_slice(&bytes[start..start + limit]);
                Ok(limit)
            }
        }
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.apply_late_truncate_in_memory()?;
        match &mut self.bytes {
            Bytes::Disk(file) => file.write_at(offset, data),
            Bytes::Memory(bytes) => {
                let end = offset as usize + data.len();
                if bytes.len() < end {
                    bytes.resize(end, 0);
                }
                bytes[offset as usize..end].copy_from_slice(data);
                Ok(())
            }
        }
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        match &mut self.bytes {
            Bytes::Disk(file) => file.set_len(len),
            Bytes::Memory(bytes) => {
                bytes.resize(len as usize, 0);
                Ok(())
            }
        }
    }

    /// A write after a held-back truncate: the truncate must land first,
    /// or the write would extend the old length (still unsynced: the plant
    /// only delays it past the next sync).
    fn apply_late_truncate_in_memory(&mut self) -> io::Result<()> {
        if let Some(len) = self.late_truncate.take() {
            self.set_len(len)?;
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let plant = self.context().options.plant;
        if plant == Some(VfsPlant::NoSync) {
            return Ok(());
        }
        let data_only = self.context().options.fdatasync;
        if let Bytes::Disk(file) = &mut self.bytes {
            if data_only {
                file.sync_data()?;
            } else {
                file.sync()?;
            }
        }
        // The plant: the truncate reaches the file only now, after the sync.
        self.apply_late_truncate_in_memory()?;
        if std::mem::take(&mut self.dir_sync_pending) {
            // As unixSync: the directory fsync's error is ignored.
            let _ = self.context().vfs.sync_dir(parent(&self.path));
        }
        Ok(())
    }
}

pub(super) unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite calls this on our VFS with `szOsFile` bytes at `file`.
    unsafe {
        let context = vfs_context(vfs);
        (*file).pMethods = ptr::null();
        guarded(Some(context), ffi::SQLITE_CANTOPEN, || {
            let path = path_of(name);
            let state = match open_state(context, path, flags) {
                Ok(state) => state,
                Err(_) => return ffi::SQLITE_CANTOPEN,
            };
            (*(file as *mut SimFile)).state = Box::into_raw(Box::new(state));
            (*file).pMethods = &IO_METHODS;
            if !out_flags.is_null() {
                *out_flags = flags;
            }
            ffi::SQLITE_OK
        })
    }
}

/// Open the file SQLite asks for (see the module doc: `xOpen`).
fn open_state(context: &VfsContext, path: Option<PathBuf>, flags: c_int) -> io::Result<FileState> {
    let create = flags & ffi::SQLITE_OPEN_CREATE != 0;
    let kind = flags & 0x0FFF_FF00;
    let journal = [ffi::SQLITE_OPEN_MAIN_JOURNAL, ffi::SQLITE_OPEN_SUPER_JOURNAL, ffi::SQLITE_OPEN_WAL];
    let in_memory = path.is_none() || flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0;
    let bytes = match &path {
        Some(path) if !in_memory => {
            let mode = if flags & ffi::SQLITE_OPEN_READONLY != 0 {
                OpenMode::Read
            } else if create {
                OpenMode::Create
            } else {
                OpenMode::Write
            };
            Bytes::Disk(context.vfs.open(path, mode)?)
        }
        _ => Bytes::Memory(Vec::new()),
    };
    Ok(FileState {
        bytes,
        path: path.unwrap_or_default(),
        context,
        handle: context.shared.new_handle(),
        lock: ffi::SQLITE_LOCK_NONE,
        dir_sync_pending: create && !in_memory && journal.iter().any(|j| kind & j != 0),
        late_truncate: None,
    })
}

pub(super) unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file `x_open` opened, once; the state pointer
    // came from `Box::into_raw` there.
    unsafe {
        let sim = file as *mut SimFile;
        let state = std::mem::replace(&mut (*sim).state, ptr::null_mut());
        (*file).pMethods = ptr::null();
        if state.is_null() {
            return ffi::SQLITE_OK;
        }
        let state = Box::from_raw(state);
        let context = state.context;
        // Dropping the handle is the close (the disk forgets it); its
        // locks and its wal-index mapping go with it.
        guarded(Some(&*context), ffi::SQLITE_IOERR_CLOSE, || {
            if state.on_disk() {
                (*context).shared.closed(&state.path, state.handle);
            }
            drop(state);
            ffi::SQLITE_OK
        })
    }
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, out: *mut c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: SQLite gives `amount` writable bytes at `out`.
    unsafe {
        let out = std::slice::from_raw_parts_mut(out as *mut u8, amount.max(0) as usize);
        with_file(file, ffi::SQLITE_IOERR_READ, |state| match state.read(offset as u64, out) {
            Ok(n) if n == out.len() => ffi::SQLITE_OK,
            Ok(n) => {
                out[n..].fill(0);
                ffi::SQLITE_IOERR_SHORT_READ
            }
            Err(_) => ffi::SQLITE_IOERR_READ,
        })
    }
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, data: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: SQLite gives `amount` readable bytes at `data`.
    unsafe {
        let data = std::slice::from_raw_parts(data as *const u8, amount.max(0) as usize);
        with_file(file, ffi::SQLITE_IOERR_WRITE, |state| match state.write(offset as u64, data) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) if e.kind() == io::ErrorKind::StorageFull => ffi::SQLITE_FULL,
            Err(_) => ffi::SQLITE_IOERR_WRITE,
        })
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(file, ffi::SQLITE_IOERR_TRUNCATE, |state| {
            let size = size.max(0) as u64;
            if state.context().options.plant == Some(VfsPlant::LateTruncate) && matches!(state.bytes, Bytes::Disk(_)) {
                state.late_truncate = Some(size);
                return ffi::SQLITE_OK;
            }
            match state.set_len(size) {
                Ok(()) => ffi::SQLITE_OK,
                Err(e) if e.kind() == io::ErrorKind::StorageFull => ffi::SQLITE_FULL,
                Err(_) => ffi::SQLITE_IOERR_TRUNCATE,
            }
        })
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(file, ffi::SQLITE_IOERR_FSYNC, |state| match state.sync() {
            Ok(()) => ffi::SQLITE_OK,
            Err(_) => ffi::SQLITE_IOERR_FSYNC,
        })
    }
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, out: *mut i64) -> c_int {
    // SAFETY: as `file_state`, with an out pointer.
    unsafe {
        *out = 0;
        with_file(file, ffi::SQLITE_IOERR_FSTAT, |state| match state.len() {
            Ok(len) => {
                *out = len as i64;
                ffi::SQLITE_OK
            }
            Err(_) => ffi::SQLITE_IOERR_FSTAT,
        })
    }
}

/// Nothing to catch: it answers every opcode with `SQLITE_NOTFOUND`.
unsafe extern "C" fn x_file_control(_file: *mut ffi::sqlite3_file, _op: c_int, _arg: *mut c_void) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `file_state`.
    unsafe { with_file(file, 512, |state| state.context().options.sector_bytes as c_int) }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `file_state`.
    unsafe {
        with_file(
            file,
            0,
            |state| {
                if state.context().options.powersafe {
                    ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
                } else {
                    0
                }
            },
        )
    }
}
